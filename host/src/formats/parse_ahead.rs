//! Parsing the next batches of a long transcript on a helper thread while the reader assembles the
//! records of the batch before them.
//!
//! Parsing JSON is most of what reading a heavy transcript costs (two thirds of a Claude Code
//! log's `compress`), and a batch's records parse with nothing but the batch's bytes: the readers
//! ([`super::lines::JsonLines`], [`super::cursor::ArrayElements`]) still cut the file into
//! batches and assemble the records in order on their own thread, and hand the parsing of the
//! batches after the current one to [`ParseAhead`]. Results come back in the order the batches
//! were given, so records, errors and their lines are exactly what parsing in place gives. A file
//! of one batch (most sessions) starts no thread.
//!
//! The reader never waits for a batch nobody has started: when it needs one still queued, it
//! parses it itself, and while a helper is on the one it needs, it parses the newest queued (the
//! helper's last), so that both stay busy and the reader's share grows when its own work is
//! light (plain JSONL) or the helper's core is taken. On a shared machine the second core is
//! sometimes not there to be had, and a reader that only waited was then slower than one parsing
//! everything itself (39 against 36 ms for the heavy Claude Code log). A reader that took the
//! oldest queued while waiting kept the helper idle behind it (32.5 against 28.4 ms for waiting);
//! taking the newest, 24.7 against 37.5 ms for parsing in place.

use std::{
    any::Any,
    cell::Cell,
    collections::{HashMap, VecDeque},
    panic::{self, AssertUnwindSafe},
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
    thread::{self, JoinHandle},
};

/// Helpers at most: the reader's own work (assembling the records, then compacting) bounds what
/// more would gain. Two beside the reader on a two-core machine were no faster than one.
const MAX_HELPERS: usize = 2;

/// Jobs queued beyond one a helper: the newest of them is what the taker runs while a helper is on
/// the one it wants.
const STEAL_AHEAD: usize = 3;

thread_local! {
    static IN_PLACE: Cell<bool> = const { Cell::new(false) };
}

/// Transcripts read on this thread parse every batch on it from now on, and let their helpers go:
/// a stream read ahead of a replay ([`super::read_ahead`]) already has a core of its own, and a
/// helper would take the replay's (a heavy Claude Code log's replay was 6–13% slower with one).
pub(super) fn parse_in_place() {
    IN_PLACE.set(true);
}

type Job<O> = Box<dyn FnOnce() -> O + Send>;
type Outcome<O> = Result<O, Box<dyn Any + Send>>;

/// Jobs run on a helper thread (or by the taker, when it gets to them first), their results taken
/// in the order the jobs were given.
pub(super) struct ParseAhead<O> {
    shared: Arc<Shared<O>>,
    helpers: Vec<JoinHandle<()>>,
    /// The number of the next job given, and of the next result to take.
    given: u64,
    taken: u64,
}

struct Shared<O> {
    state: Mutex<State<O>>,
    /// A job was queued, a result stored, or the queue closed.
    changed: Condvar,
}

struct State<O> {
    queue: VecDeque<(u64, Job<O>)>,
    done: HashMap<u64, Outcome<O>>,
    closed: bool,
}

impl<O: Send + 'static> ParseAhead<O> {
    /// Helpers for a machine's spare cores, none on a thread that [`parse_in_place`] was called
    /// on.
    pub(super) fn new() -> Self {
        if IN_PLACE.get() {
            return Self::with_helpers(0);
        }
        let cores = thread::available_parallelism().map_or(1, usize::from);
        // One core is the reader's.
        Self::with_helpers(cores.saturating_sub(1).clamp(1, MAX_HELPERS))
    }

    fn with_helpers(count: usize) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                done: HashMap::new(),
                closed: false,
            }),
            changed: Condvar::new(),
        });
        // Without a thread (a machine out of them), the taker runs every job itself.
        let helpers = (0..count)
            .map_while(|_| {
                let helping = Arc::clone(&shared);
                thread::Builder::new()
                    .name("ctxhost-parse".to_owned())
                    .spawn(move || helping.help())
                    .ok()
            })
            .collect();
        Self {
            shared,
            helpers,
            given: 0,
            taken: 0,
        }
    }

    /// Whether another job may be given now: fewer are waiting to be taken than keep every
    /// helper busy with one more queued, so that none waits for the reader to cut the next.
    pub(super) fn wants_more(&self) -> bool {
        self.given - self.taken < (self.helpers.len() + STEAL_AHEAD) as u64
    }

    pub(super) fn give(&mut self, job: impl FnOnce() -> O + Send + 'static) {
        if IN_PLACE.get() && !self.helpers.is_empty() {
            // The stream was opened here and is read on a thread of its own now.
            self.release_helpers();
        }
        self.shared.lock().queue.push_back((self.given, Box::new(job)));
        self.given += 1;
        self.shared.changed.notify_all();
    }

    /// The result of the oldest job not taken; `None` when none is given. A job that panicked
    /// panics here, as it would have where it was given.
    pub(super) fn take(&mut self) -> Option<O> {
        if self.taken == self.given {
            return None;
        }
        let wanted = self.taken;
        self.taken += 1;
        let mut state = self.shared.lock();
        loop {
            if let Some(outcome) = state.done.remove(&wanted) {
                drop(state);
                return Some(outcome.unwrap_or_else(|payload| panic::resume_unwind(payload)));
            }
            // Not started yet: the helper is behind, and waiting for it would be waiting for
            // nothing.
            if state.queue.front().is_some_and(|(number, _)| *number == wanted) {
                let (_, job) = state.queue.pop_front().expect("the front job was just seen");
                drop(state);
                return Some(run(job).unwrap_or_else(|payload| panic::resume_unwind(payload)));
            }
            // A helper is on it: the newest job queued is the one a helper gets to last.
            if let Some((number, job)) = state.queue.pop_back() {
                drop(state);
                let outcome = run(job);
                state = self.shared.lock();
                state.done.insert(number, outcome);
                continue;
            }
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl<O> ParseAhead<O> {
    /// Ends the helpers once each has stored the job it is on: the jobs still queued are the
    /// taker's, which it runs when it wants them, as it does any not started.
    fn release_helpers(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        // Waiting for the helpers (at most the batch each is on) keeps a program that embeds the
        // host from holding threads past the transcript.
        for helper in self.helpers.drain(..) {
            let _ = helper.join();
        }
    }
}

impl<O> Drop for ParseAhead<O> {
    fn drop(&mut self) {
        self.release_helpers();
    }
}

impl<O> Shared<O> {
    fn lock(&self) -> MutexGuard<'_, State<O>> {
        // A job's panic is caught outside the lock: the state is never left half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The helper's loop: the oldest job queued, until the queue is closed.
    fn help(&self) {
        let mut state = self.lock();
        loop {
            if state.closed {
                return;
            }
            let Some((number, job)) = state.queue.pop_front() else {
                state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            drop(state);
            let outcome = run(job);
            state = self.lock();
            state.done.insert(number, outcome);
            self.changed.notify_all();
        }
    }
}

fn run<O>(job: Job<O>) -> Outcome<O> {
    panic::catch_unwind(AssertUnwindSafe(job))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_order_the_jobs_were_given() {
        let mut ahead = ParseAhead::new();
        let mut taken = Vec::new();
        for n in 0..50u64 {
            while !ahead.wants_more() {
                taken.push(ahead.take().unwrap());
            }
            // Later jobs finish first when earlier ones take longer.
            ahead.give(move || {
                thread::sleep(std::time::Duration::from_micros((50 - n) * 20));
                n
            });
        }
        while let Some(n) = ahead.take() {
            taken.push(n);
        }
        assert_eq!(taken, (0..50).collect::<Vec<_>>());
    }

    /// A helper that never gets to run (its core taken by other work, or no thread to be had)
    /// costs the taker nothing but doing the work itself: it never waits for a job not started.
    #[test]
    fn a_taker_whose_helper_never_runs_gets_every_result_in_order() {
        let mut ahead = ParseAhead::with_helpers(0);
        let mut taken = Vec::new();
        for n in 0..10 {
            if !ahead.wants_more() {
                taken.push(ahead.take().unwrap());
            }
            ahead.give(move || n);
        }
        while let Some(n) = ahead.take() {
            taken.push(n);
        }
        assert_eq!(taken, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_job_that_panics_panics_where_its_result_is_taken() {
        let mut ahead = ParseAhead::<u32>::new();
        ahead.give(|| panic!("bad batch"));
        ahead.give(|| 2);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| ahead.take()));
        let payload = caught.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad batch"));
        assert_eq!(ahead.take(), Some(2));
    }
}
