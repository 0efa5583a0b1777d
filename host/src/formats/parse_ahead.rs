//! Batches of records parsed on a thread of their own while the reader reads the next batch.
//!
//! Parsing JSON is about half of `ctxhost compress` on a heavy transcript, and the readers' own
//! work (turning records into messages) and the engine's are most of the rest. Reading a batch's
//! lines, or finding where an array's elements end, is a small part of it: so the reader thread
//! reads a batch, hands it to a parsing thread, and reads the next while that one is parsed,
//! taking the parsed batches back in the order they were read.
//!
//! A small transcript never starts the thread: the first [`INLINE_BATCHES`] batches are parsed
//! where they are read, and so is every batch on a machine with one core, or when the thread
//! cannot be started, or when the reader is itself on a thread of its own beside a replay
//! (`read_ahead`): the replay's thread, busy with the engine, is what a replay waits for, and a
//! third busy thread on two cores slowed it by 5%. A batch gives the same records, errors and
//! places either way.

use std::{
    cell::Cell,
    collections::VecDeque,
    sync::mpsc::{self, Receiver, SyncSender},
    thread::JoinHandle,
};

/// Batches parsed inline before a parsing thread is worth starting (a batch is about 256 KiB):
/// a transcript under a megabyte is read by one thread.
pub(super) const INLINE_BATCHES: usize = 4;

/// Batches handed to the parsing thread and not yet taken back: the one being parsed and the one
/// read meanwhile.
const QUEUED_BATCHES: usize = 2;

thread_local! {
    /// Set on a thread that reads a transcript beside a replay: its batches are parsed there.
    static BESIDE_A_REPLAY: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as one that reads a transcript beside a replay: the transcripts it
/// reads are parsed on it, never on a thread of their own.
pub(super) fn parse_on_this_thread() {
    BESIDE_A_REPLAY.with(|beside| beside.set(true));
}

type Job<B> = Box<dyn FnOnce() -> B + Send>;

/// A parsing thread's ends.
struct Worker<B> {
    jobs: SyncSender<Job<B>>,
    done: Receiver<B>,
    thread: Option<JoinHandle<()>>,
}

/// Batches parsed in the order they were submitted: inline for a small transcript, then on a
/// thread of its own.
pub(super) struct ParseAhead<B> {
    /// Batches to parse inline before starting the thread.
    inline_left: usize,
    /// Results parsed inline, before any from the thread.
    ready: VecDeque<B>,
    worker: Option<Worker<B>>,
    /// Batches the thread has not given back yet.
    on_thread: usize,
}

impl<B: Send + 'static> ParseAhead<B> {
    /// Parses the first `inline_batches` batches inline, and the rest on a thread where the
    /// machine has a second core.
    pub(super) fn new(inline_batches: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self::starting_after(if cores > 1 { inline_batches } else { usize::MAX })
    }

    /// Parses the first `inline_batches` batches inline and the rest on a thread, however many
    /// cores the machine has.
    pub(super) fn starting_after(inline_batches: usize) -> Self {
        Self {
            inline_left: inline_batches,
            ready: VecDeque::new(),
            worker: None,
            on_thread: 0,
        }
    }

    /// Batches worth reading before the next one is taken: one more than the thread holds, so
    /// that it always has one to parse.
    pub(super) fn wants_more(&self) -> bool {
        match self.worker {
            Some(_) => self.on_thread < QUEUED_BATCHES && self.ready.is_empty(),
            None => self.ready.is_empty(),
        }
    }

    /// Parses a batch: `parse` runs now, or on the parsing thread.
    pub(super) fn submit(&mut self, parse: impl FnOnce() -> B + Send + 'static) {
        if self.worker.is_none() {
            if self.inline_left > 0 {
                self.inline_left = self.inline_left.saturating_sub(1);
                self.ready.push_back(parse());
                return;
            }
            if !BESIDE_A_REPLAY.with(Cell::get) {
                self.worker = start();
            }
            if self.worker.is_none() {
                self.inline_left = usize::MAX;
                self.ready.push_back(parse());
                return;
            }
        }
        let worker = self.worker.as_ref().expect("started above");
        if worker.jobs.send(Box::new(parse)).is_err() {
            self.thread_died();
        }
        self.on_thread += 1;
    }

    /// The next batch parsed, in the order submitted; `None` when none is left.
    pub(super) fn next(&mut self) -> Option<B> {
        if let Some(batch) = self.ready.pop_front() {
            return Some(batch);
        }
        if self.on_thread == 0 {
            return None;
        }
        let worker = self.worker.as_ref().expect("batches on the thread have one");
        match worker.done.recv() {
            Ok(batch) => {
                self.on_thread -= 1;
                Some(batch)
            }
            Err(_) => self.thread_died(),
        }
    }

    /// The thread stopped with batches in hand: only a panic while parsing does that, and it is
    /// raised here, on the reader's thread, as if the batch had been parsed here.
    fn thread_died(&mut self) -> ! {
        let worker = self.worker.take().expect("a thread to have died");
        drop(worker.jobs);
        match worker.thread.map(JoinHandle::join) {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            _ => panic!("the transcript's parsing thread stopped with batches in hand"),
        }
    }
}

/// The parsing thread, or `None` when it cannot be started (the batches are then parsed inline).
fn start<B: Send + 'static>() -> Option<Worker<B>> {
    let (jobs, queued) = mpsc::sync_channel::<Job<B>>(QUEUED_BATCHES);
    let (finished, done) = mpsc::sync_channel(QUEUED_BATCHES);
    let thread = std::thread::Builder::new()
        .name("transcript-parser".into())
        .spawn(move || {
            for parse in queued {
                if finished.send(parse()).is_err() {
                    // The reader is gone: nobody wants the rest.
                    return;
                }
            }
        })
        .ok()?;
    Some(Worker {
        jobs,
        done,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(inline: usize, batches: usize) -> Vec<usize> {
        let mut parsing = ParseAhead::starting_after(inline);
        let mut got = Vec::new();
        let mut submitted = 0;
        loop {
            while submitted < batches && parsing.wants_more() {
                let n = submitted;
                parsing.submit(move || n * 10);
                submitted += 1;
            }
            match parsing.next() {
                Some(batch) => got.push(batch),
                None => break,
            }
        }
        got
    }

    #[test]
    fn batches_come_back_in_the_order_submitted_inline_and_on_the_thread() {
        let expected: Vec<usize> = (0..50).map(|n| n * 10).collect();
        assert_eq!(parse_all(usize::MAX, 50), expected);
        assert_eq!(parse_all(0, 50), expected);
        assert_eq!(parse_all(3, 50), expected);
    }

    #[test]
    fn a_panic_while_parsing_on_the_thread_reaches_the_reader() {
        let mut parsing = ParseAhead::<usize>::starting_after(0);
        parsing.submit(|| panic!("bad batch"));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parsing.next()));
        let panic = caught.expect_err("the batch's panic");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"bad batch"));
    }
}
