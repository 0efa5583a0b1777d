//! The operating system's side: resource limits a child sets on itself, and signal names.
//!
//! The child sets its limits on itself at the start of `ctxhost serve`, before any plugin library
//! is opened, rather than the host setting them between fork and exec: the effect on the engine is
//! the same (the limits hold from before its first instruction), and it needs no `unsafe`
//! `pre_exec` hook in a crate that forbids unsafe code.

use nix::sys::{
    resource::{setrlimit, Resource},
    signal::Signal,
};

use crate::config::Limits;

/// Seconds between the soft CPU limit (SIGXCPU, which names the cause) and the hard one
/// (SIGKILL, for a process that ignores SIGXCPU).
const CPU_GRACE_SECONDS: u64 = 2;

/// Applies `limits` to this process. An error names the limit.
pub fn limit_this_process(limits: &Limits) -> Result<(), String> {
    if let Some(mb) = limits.address_space_mb {
        let bytes = mb.saturating_mul(1024 * 1024);
        setrlimit(Resource::RLIMIT_AS, bytes, bytes)
            .map_err(|error| format!("cannot limit the address space to {mb} MiB: {error}"))?;
    }
    if let Some(seconds) = limits.cpu_seconds {
        setrlimit(
            Resource::RLIMIT_CPU,
            seconds,
            seconds.saturating_add(CPU_GRACE_SECONDS),
        )
        .map_err(|error| format!("cannot limit the CPU time to {seconds} s: {error}"))?;
    }
    Ok(())
}

/// Has this process killed when the host that started it ends, however it ends (a host killed
/// with SIGKILL cannot end its children itself). Fails when that host is already gone.
pub fn end_with_parent(parent: u32) -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|error| format!("cannot tie this process to its host: {error}"))?;
    // The host may have ended before the line above: then this process is someone else's child.
    if nix::unistd::getppid().as_raw() != parent as i32 {
        return Err(format!("the host (process {parent}) is gone"));
    }
    Ok(())
}

/// `SIGSEGV` for 11; `signal 77` for a number this platform does not name.
pub fn signal_name(number: i32) -> String {
    match Signal::try_from(number) {
        Ok(signal) => signal.as_str().to_owned(),
        Err(_) => format!("signal {number}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_as_users_know_them() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(24), "SIGXCPU");
        assert_eq!(signal_name(77), "signal 77");
    }
}
