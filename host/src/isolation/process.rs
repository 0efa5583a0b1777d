//! One running child: its pipes, the watchdog that enforces a call's deadline, and how it ended.
//!
//! - A call writes one request and reads one reply through the protocol's [`Client`]; the
//!   watchdog kills the child when the deadline passes, which ends a blocked read or write.
//! - The child's stderr is copied to the host's as it comes: its log lines as they are, any other
//!   line (an allocation failure, a panic message printed before an abort, a backtrace) after the
//!   name of the engine and the process, so that it does not read as the host's own. The first
//!   of those are kept as the child's last words for the report.
//! - A child is always reaped: after a failed call, and when it is finished or dropped.

use std::{
    collections::VecDeque,
    fmt,
    io::{self, BufRead, BufReader, Write},
    os::{fd::AsFd, unix::process::ExitStatusExt},
    process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio},
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use ctxhost_protocol::{Client, ClientError, RpcError};
use serde::{de::DeserializeOwned, Serialize};

use super::limits::signal_name;

/// How many of the child's last non-log lines are kept.
const LAST_WORDS: usize = 3;

/// The size asked for the pipes to and from a child (Linux's default `pipe-max-size`).
const PIPE_SIZE: i32 = 1 << 20;

/// How long a child that closed its output is given to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Why a child is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// Killed by a signal it did not get from the host.
    Signal(String),
    /// It exited on its own.
    Code(i32),
    /// The host killed it: the call passed its deadline.
    Deadline {
        /// The method.
        method: String,
        /// The deadline.
        after: Duration,
    },
}

/// How a child ended, with what it printed last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ending {
    /// Why.
    pub cause: ExitCause,
    /// Its last lines on stderr that were not log lines, joined.
    pub last_words: Option<String>,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            ExitCause::Signal(name) => write!(f, "its process was killed by {name}")?,
            ExitCause::Code(code) => write!(f, "its process exited with code {code}")?,
            ExitCause::Deadline { method, after } => {
                let key = crate::config::Deadlines::key_of(method);
                // The handshake and `session/open` are the protocol's; a user knows them as its start.
                let what = if key == "start" {
                    "for starting".to_owned()
                } else {
                    format!("of `{method}`")
                };
                write!(
                    f,
                    "its process passed the {} s deadline {what} (`isolation.deadlines.{key}`) and was killed",
                    after.as_secs_f64(),
                )?
            }
        }
        match &self.last_words {
            Some(words) => write!(f, " (its last words: {words})"),
            None => Ok(()),
        }
    }
}

/// What went wrong with one call.
#[derive(Debug)]
pub enum CallFailure {
    /// The child answered with an error: it is alive and well.
    Answered(RpcError),
    /// The child answered, alive, but its result is not what the method returns: what is wrong.
    Unexpected(String),
    /// The child is gone (it has been reaped).
    Lost(Ending),
}

/// The protocol's client end on a child's pipes.
type ChildClient = Client<BufReader<ChildStdout>, ChildStdin>;

/// A running `ctxhost serve` child.
pub struct LiveChild {
    child: Arc<Mutex<Child>>,
    pid: u32,
    client: Option<ChildClient>,
    watchdog: Watchdog,
    stderr: Option<JoinHandle<()>>,
    last_words: Arc<Mutex<VecDeque<String>>>,
}

impl LiveChild {
    /// Starts `command`, the child of engine `engine`, with piped stdin, stdout and stderr.
    pub fn spawn(mut command: Command, engine: &str) -> io::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        // A `compress` carries the whole context each way: through a pipe of the default 64 KiB
        // that is a wake-up of the other side for every 64 KiB. Where the system allows less,
        // the default stays (only the time differs).
        for pipe in [stdin.as_fd(), stdout.as_fd()] {
            let _ = nix::fcntl::fcntl(pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        }
        let stderr = child.stderr.take().expect("piped");
        let last_words = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = std::thread::Builder::new()
            .name(format!("child-{pid}-stderr"))
            .spawn({
                let last_words = Arc::clone(&last_words);
                let whose = format!("engine `{engine}` (process {pid})");
                // Its log lines are said as the host's own where it started the child: under
                // `serve`, in the session whose engine it runs.
                let span = tracing::Span::current();
                move || copy_stderr(BufReader::new(stderr), &whose, &last_words, &span)
            })?;
        let child = Arc::new(Mutex::new(child));
        let watchdog = Watchdog::start(Arc::clone(&child), pid)?;
        // Replies to `compress` carry the whole context: read them in large pieces.
        let reader = BufReader::with_capacity(1 << 20, stdout);
        Ok(Self {
            child,
            pid,
            client: Some(Client::new(reader, stdin)),
            watchdog,
            stderr: Some(stderr),
            last_words,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Calls `method` within `deadline`. When the child is lost, it has been reaped and `self`
    /// must not be called again.
    pub fn call<P: Serialize, T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
        deadline: Duration,
    ) -> Result<T, CallFailure> {
        self.call_with(method, deadline, |client| client.call(method, params))
    }

    /// [`Self::call`] of the wire method `wire`, named `method` when it passes its deadline: an
    /// extension method (`observe`) travels as `call_ext`, and the user knows it by its own name.
    pub fn call_as<P: Serialize, T: DeserializeOwned>(
        &mut self,
        method: &str,
        wire: &str,
        params: &P,
        deadline: Duration,
    ) -> Result<T, CallFailure> {
        self.call_with(method, deadline, |client| client.call(wire, params))
    }

    /// [`Self::call`] of the wire method `wire` with params already written as JSON text, in
    /// pieces ([`Client::call_json`]); `method` is the contract's, which a passed deadline names.
    pub fn call_json<T: DeserializeOwned>(
        &mut self,
        method: &str,
        wire: &str,
        params: &[&str],
        deadline: Duration,
    ) -> Result<T, CallFailure> {
        self.call_with(method, deadline, |client| client.call_json(wire, params))
    }

    fn call_with<T>(
        &mut self,
        method: &str,
        deadline: Duration,
        send: impl FnOnce(&mut ChildClient) -> Result<T, ClientError>,
    ) -> Result<T, CallFailure> {
        let client = self.client.as_mut().expect("a lost child is not called again");
        // Last words are this call's: what an earlier call printed is not why this one failed.
        lock(&self.last_words).clear();
        self.watchdog.arm(Instant::now() + deadline);
        let result = send(client);
        let fired = self.watchdog.disarm();
        match result {
            Ok(value) if !fired => Ok(value),
            Err(ClientError::Rpc { error, .. }) if !fired => Err(CallFailure::Answered(error)),
            Err(ClientError::UnexpectedResult { problem, .. }) if !fired => {
                Err(CallFailure::Unexpected(problem))
            }
            // A reply that came as the deadline passed is not trusted: the child was killed.
            _ if fired => Err(CallFailure::Lost(self.reap(Some(ExitCause::Deadline {
                method: method.to_owned(),
                after: deadline,
            })))),
            // Closed, a broken pipe, or a line that is not a reply: the child is gone or lost its
            // mind; either way it is ended and reaped.
            Err(error) => {
                tracing::debug!("child {}: `{method}`: {error}", self.pid);
                Err(CallFailure::Lost(self.reap(None)))
            }
            Ok(_) => unreachable!("handled above"),
        }
    }

    /// Ends the child: closes its input (so it ends its sessions as at the end of any input),
    /// gives it `grace` to exit, kills it otherwise, and reaps it.
    pub fn finish(mut self, grace: Duration) -> Option<Ending> {
        self.client = None;
        let status = wait_for_exit(&self.child, grace);
        let ending = self.reap(None);
        match status {
            Some(status) if status.success() => None,
            _ => Some(ending),
        }
    }

    /// Kills the child unless it has exited, reaps it, and says why it ended (`known`, when the
    /// host knows better than its exit status).
    fn reap(&mut self, known: Option<ExitCause>) -> Ending {
        self.client = None;
        let status = wait_for_exit(&self.child, EXIT_GRACE).unwrap_or_else(|| {
            let mut child = lock(&self.child);
            let _ = child.kill();
            child.wait().expect("a child of this process can be waited for")
        });
        self.watchdog.stop();
        if let Some(thread) = self.stderr.take() {
            // The stderr pipe closes when the child is gone; its last lines are in by then.
            let _ = thread.join();
        }
        let words: Vec<String> = lock(&self.last_words).drain(..).collect();
        Ending {
            cause: known.unwrap_or_else(|| cause_of(status)),
            last_words: (!words.is_empty()).then(|| words.join(" | ")),
        }
    }
}

impl Drop for LiveChild {
    fn drop(&mut self) {
        if self.stderr.is_some() {
            self.reap(None);
        }
    }
}

fn cause_of(status: ExitStatus) -> ExitCause {
    match (status.signal(), status.code()) {
        (Some(signal), _) => ExitCause::Signal(signal_name(signal)),
        (None, Some(code)) => ExitCause::Code(code),
        (None, None) => ExitCause::Code(-1),
    }
}

/// Waits up to `grace` for the child to exit on its own.
fn wait_for_exit(child: &Mutex<Child>, grace: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + grace;
    loop {
        if let Ok(Some(status)) = lock(child).try_wait() {
            return Some(status);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Copies the child's stderr to the host's, each line not a log line after `whose`, keeping its
/// last non-log lines. A log line is logged again in `span`: the child is a `serve` of its own,
/// whose session (`session s1: …`) is not one the user knows.
fn copy_stderr(
    reader: impl BufRead,
    whose: &str,
    last_words: &Mutex<VecDeque<String>>,
    span: &tracing::Span,
) {
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        let text = String::from_utf8_lossy(&line);
        if let Some((level, said)) = log_line(&text) {
            span.in_scope(|| match level {
                tracing::Level::ERROR => tracing::error!("{said}"),
                tracing::Level::WARN => tracing::warn!("{said}"),
                tracing::Level::INFO => tracing::info!("{said}"),
                tracing::Level::DEBUG => tracing::debug!("{said}"),
                _ => tracing::trace!("{said}"),
            });
        } else if text.trim().is_empty() {
            let _ = writeln!(io::stderr().lock(), "{text}");
        } else {
            let _ = writeln!(io::stderr().lock(), "{whose}: {text}");
        }
        if is_last_words(&text) {
            let mut words = lock(last_words);
            // The first lines say what happened; a backtrace or a second failure follows them.
            if words.len() < LAST_WORDS {
                words.push_back(clip(text.trim(), 300));
            }
        }
    }
}

/// A log line of the child (`warning: session s1: engine \`x\`: …`): its level, and what it
/// says after the child's own session.
fn log_line(line: &str) -> Option<(tracing::Level, &str)> {
    use tracing::Level;
    let (level, said) = [
        ("error: ", Level::ERROR),
        ("warning: ", Level::WARN),
        ("info: ", Level::INFO),
        ("debug: ", Level::DEBUG),
        ("trace: ", Level::TRACE),
    ]
    .into_iter()
    .find_map(|(prefix, level)| line.strip_prefix(prefix).map(|said| (level, said)))?;
    let without_session = said
        .strip_prefix("session s")
        .and_then(|rest| rest.split_once(": "))
        .filter(|(number, _)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        .map_or(said, |(_, rest)| rest);
    Some((level, without_session))
}

/// Whether a line of the child's stderr says why it is dying: not one of its log lines, nor part
/// of a backtrace.
fn is_last_words(line: &str) -> bool {
    let text = line.trim();
    let is_backtrace = text.starts_with("stack backtrace:")
        || text.starts_with("note: ")
        || text.starts_with("at ")
        || text.starts_with("skipping backtrace")
        || text
            .split_once(": ")
            .is_some_and(|(frame, _)| frame.bytes().all(|b| b.is_ascii_digit()));
    !is_log(line) && !is_backtrace && !text.is_empty()
}

/// Whether a line of the child's stderr is one of its log lines (`warning: …`).
fn is_log(line: &str) -> bool {
    ["error: ", "warning: ", "info: ", "debug: ", "trace: "]
        .iter()
        .any(|prefix| line.starts_with(prefix))
}

fn clip(text: &str, at_most: usize) -> String {
    match text.char_indices().nth(at_most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one still holds valid data.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills the child when an armed deadline passes.
///
/// The thread sleeps until the earliest deadline it knows of; arming a later deadline than the
/// one it sleeps towards does not wake it, so a call costs a lock and no thread switch.
struct Watchdog {
    shared: Arc<Watch>,
    thread: Option<JoinHandle<()>>,
}

struct Watch {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    armed: Option<Instant>,
    /// When the thread will look again on its own; `None`: it sleeps until woken.
    sleeping_until: Option<Instant>,
    fired: bool,
    stop: bool,
}

impl Watchdog {
    fn start(child: Arc<Mutex<Child>>, pid: u32) -> io::Result<Self> {
        let shared = Arc::new(Watch {
            state: Mutex::new(WatchState::default()),
            wake: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name(format!("child-{pid}-watchdog"))
            .spawn({
                let shared = Arc::clone(&shared);
                move || watch(&shared, &child)
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    fn arm(&self, deadline: Instant) {
        let mut state = lock(&self.shared.state);
        state.armed = Some(deadline);
        state.fired = false;
        if state.sleeping_until.is_none_or(|until| until > deadline) {
            self.shared.wake.notify_one();
        }
    }

    /// Disarms; whether the deadline passed (and the child was killed).
    fn disarm(&self) -> bool {
        let mut state = lock(&self.shared.state);
        state.armed = None;
        state.fired
    }

    fn stop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

fn watch(shared: &Watch, child: &Mutex<Child>) {
    let mut state = lock(&shared.state);
    loop {
        if state.stop {
            return;
        }
        let now = Instant::now();
        match state.armed {
            Some(deadline) if now >= deadline => {
                let _ = lock(child).kill();
                state.fired = true;
                state.armed = None;
            }
            Some(deadline) => {
                state.sleeping_until = Some(deadline);
                state = shared
                    .wake
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
            None => {
                state.sleeping_until = None;
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
    }
}
