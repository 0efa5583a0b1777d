//! lcm's writer thread: while observing a session that keeps the host's queue full, appended
//! messages are written to the store on a thread of lcm's own, so that reading the next facts
//! (the host writing them as JSON, lcm reading and hashing them) runs
//! beside SQLite's work instead of before it. On two cores, once the replay's thread is done, the
//! observer's thread alone used to do both halves while the other core idled.
//!
//! The store moves to the thread with the first batch and comes back when lcm settles
//! ([`Writer::settle`]), which it does before anything reads the store or writes anything else:
//! batches are written in the order they were handed over, one transaction each, and a batch that
//! fails comes back unwritten with every batch after it, so nothing is lost or reordered.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc::{self, Receiver, SyncSender},
        Arc,
    },
    thread::JoinHandle,
};

use crate::store::{NewMessage, ObservedCompaction, Store, StoreError, StoredRef};

/// Appended messages of one session, and the compactions recorded among them, written in one
/// transaction.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The session's row.
    pub session: i64,
    /// The messages, in order.
    pub rows: Vec<NewMessage>,
    /// The compactions, in order.
    pub compactions: Vec<ObservedCompaction>,
}

impl Batch {
    /// Whether it holds nothing to write.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.compactions.is_empty()
    }
}

/// What became of one batch.
pub(crate) enum Outcome {
    /// Stored: the session and what lcm remembers of each message, in order.
    Written(i64, Vec<StoredRef>),
    /// Not stored: the error for the batch that failed, none for those after it.
    Unwritten(Batch, Option<StoreError>),
}

/// The thread, while it holds the store.
pub(crate) struct Writer {
    batches: Option<SyncSender<Batch>>,
    thread: JoinHandle<(Store, Vec<Outcome>)>,
    /// Messages handed over.
    rows: usize,
    /// Set by the thread when a batch failed: lcm settles at its next call to report it.
    failed: Arc<AtomicBool>,
}

/// A thread that checkpoints the store behind the writer's commits, on a connection of its own,
/// while the writer goes on: each checkpoint syncs the write-ahead log (commits do not:
/// synchronous=NORMAL), copies it into the file and syncs that. So the session's end
/// ([`Store::make_durable`]) and closing the store, which copies what is left and removes the log
/// so that the file a user sees holds everything, wait only for what was written since the last
/// checkpoint here (20-25 ms for a 10,000-message session's 18 MB otherwise, all of it at the end).
pub(crate) struct Checkpointer {
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread for the store at `database`.
    pub fn start(database: &std::path::Path) -> std::io::Result<Self> {
        let database = database.to_owned();
        // One wake-up waiting at most: commits during a checkpoint are covered by the next one.
        let (wake, woken) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("lcm-checkpoint".into())
            .spawn(move || {
                // Errors are the session end's and the close's to report: theirs are the syncs
                // that count. A checkpoint never blocks the writer (PASSIVE), nor does it wait
                // for it.
                let Ok(conn) = rusqlite::Connection::open(&database) else {
                    return;
                };
                if conn.pragma_update(None, "synchronous", "NORMAL").is_err() {
                    return;
                }
                for () in woken {
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })?;
        Ok(Self {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// What wakes the thread.
    fn waker(&self) -> SyncSender<()> {
        self.wake.clone().expect("open until dropped")
    }
}

impl Drop for Checkpointer {
    /// Waits for the checkpoint under way: the thread runs the plugin's code, which must still be
    /// loaded.
    fn drop(&mut self) {
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What [`Writer::settle`] gives back.
pub(crate) struct Settled {
    /// The store, unless the thread panicked with it.
    pub store: Option<Store>,
    /// Every batch's outcome, in order (none when the thread panicked).
    pub outcomes: Vec<Outcome>,
    /// Set when the thread panicked: the messages it held are not stored.
    pub lost: Option<usize>,
}

impl Writer {
    /// Starts the thread with `store`. One batch waits while another is written: the caller
    /// prepares the next batch meanwhile, and waits when it gets further ahead than that.
    /// After each commit it wakes `checkpointer`.
    pub fn start(store: Store, checkpointer: &Checkpointer) -> std::io::Result<Self> {
        let (batches, received) = mpsc::sync_channel(1);
        let failed = Arc::new(AtomicBool::new(false));
        let wake = checkpointer.waker();
        let thread = std::thread::Builder::new().name("lcm-writer".into()).spawn({
            let failed = Arc::clone(&failed);
            move || write_all(store, received, &failed, &wake)
        })?;
        Ok(Self {
            batches: Some(batches),
            thread,
            rows: 0,
            failed,
        })
    }

    /// Whether a batch failed (or the thread panicked).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire) || self.thread.is_finished()
    }

    /// Messages handed over and not settled yet.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Hands `batch` over, waiting while the thread still has one waiting. A thread that is gone
    /// (it panicked) gives the batch back.
    pub fn send(&mut self, batch: Batch) -> Result<(), Batch> {
        let rows = batch.rows.len();
        let sender = self.batches.as_ref().expect("open until settled");
        sender.send(batch).map_err(|error| error.0)?;
        self.rows += rows;
        Ok(())
    }

    /// Waits until every batch handed over is written or refused, and takes the store back.
    pub fn settle(mut self) -> Settled {
        self.batches = None;
        match self.thread.join() {
            Ok((store, outcomes)) => Settled {
                store: Some(store),
                outcomes,
                lost: None,
            },
            Err(_) => Settled {
                store: None,
                outcomes: Vec::new(),
                lost: Some(self.rows),
            },
        }
    }
}

/// The thread: each batch in one transaction, in order; after a failure, the rest unwritten.
fn write_all(
    mut store: Store,
    batches: Receiver<Batch>,
    failed: &AtomicBool,
    wake: &SyncSender<()>,
) -> (Store, Vec<Outcome>) {
    let mut outcomes = Vec::new();
    for batch in batches {
        if failed.load(Ordering::Relaxed) {
            outcomes.push(Outcome::Unwritten(batch, None));
            continue;
        }
        match store.insert_observed(batch.session, &batch.rows, &batch.compactions) {
            Ok(ids) => {
                let refs = batch
                    .rows
                    .iter()
                    .zip(ids)
                    .map(|(row, id)| StoredRef {
                        id,
                        hash: row.hash,
                        tokens: row.tokens,
                    })
                    .collect();
                outcomes.push(Outcome::Written(batch.session, refs));
                // Full means a checkpoint is already due.
                let _ = wake.try_send(());
            }
            Err(error) => {
                failed.store(true, Ordering::Release);
                outcomes.push(Outcome::Unwritten(batch, Some(error)));
            }
        }
    }
    (store, outcomes)
}
