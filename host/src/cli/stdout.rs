//! The host's standard output, kept for the host alone.
//!
//! A program reads what ctxhost prints on stdout: a `--json` report, a tool's answer, the `serve`
//! protocol's replies. A plugin that prints there too (a leftover `println!`, a C library's
//! `printf`) would corrupt it. So before any plugin is loaded, the host keeps a duplicate of its
//! stdout for itself and points file descriptor 1 at stderr: whatever else prints ends up beside
//! the logs, where a person still sees it.
//!
//! A reader that goes away early (`ctxhost run … | head -1`) is no failure of the run: what it
//! did not read it did not want. [`host_stdout`] drops what it can no longer deliver, so the
//! command ends as it would have (its outputs written, its own exit status), quietly. The
//! `serve` protocol is the exception: there a closed stdout means the client is gone, and
//! [`protocol_stdout`] says so.

use std::{
    fs::File,
    io::{self, IsTerminal, LineWriter, Write},
    os::fd::AsFd,
    sync::{Mutex, MutexGuard, OnceLock},
};

static KEPT: OnceLock<Mutex<LineWriter<File>>> = OnceLock::new();

/// Keeps stdout for the host (the first call does it; later ones do nothing). On an error stdout
/// stays as it was: the host works as before, unshielded.
pub fn keep_for_the_host() -> io::Result<()> {
    if KEPT.get().is_some() {
        return Ok(());
    }
    io::stdout().flush()?;
    let kept = io::stdout().as_fd().try_clone_to_owned()?;
    nix::unistd::dup2_stdout(io::stderr()).map_err(io::Error::from)?;
    // Only this thread runs before any plugin is loaded: nothing else can have set it.
    let _ = KEPT.set(Mutex::new(LineWriter::new(File::from(kept))));
    Ok(())
}

/// Where the host prints what a program reads: the stdout it started with. Once its reader has
/// gone, what is written is dropped.
pub fn host_stdout() -> HostStdout {
    HostStdout {
        closed_is_error: false,
    }
}

/// The host's stdout for a protocol, whose writes fail once the reader has gone.
pub fn protocol_stdout() -> HostStdout {
    HostStdout {
        closed_is_error: true,
    }
}

/// Whether the host's stdout is a terminal (for colour).
pub fn is_terminal() -> bool {
    match KEPT.get() {
        Some(kept) => lock(kept).get_ref().is_terminal(),
        None => io::stdout().is_terminal(),
    }
}

/// The stdout the host started with, as a writer ([`host_stdout`], [`protocol_stdout`]).
pub struct HostStdout {
    closed_is_error: bool,
}

impl HostStdout {
    /// `result`, or what stands for it once the reader has gone.
    fn unless_closed<T>(&self, result: io::Result<T>, dropped: T) -> io::Result<T> {
        match result {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe && !self.closed_is_error => Ok(dropped),
            result => result,
        }
    }
}

impl Write for HostStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = match KEPT.get() {
            Some(kept) => lock(kept).write(buf),
            None => io::stdout().write(buf),
        };
        self.unless_closed(written, buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let written = match KEPT.get() {
            Some(kept) => lock(kept).write_all(buf),
            None => io::stdout().write_all(buf),
        };
        self.unless_closed(written, ())
    }

    fn flush(&mut self) -> io::Result<()> {
        let flushed = match KEPT.get() {
            Some(kept) => lock(kept).flush(),
            None => io::stdout().flush(),
        };
        self.unless_closed(flushed, ())
    }
}

fn lock(kept: &Mutex<LineWriter<File>>) -> MutexGuard<'_, LineWriter<File>> {
    kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
