//! lcm as an observer (`context.observers: [lcm]`): another engine owns the context, and lcm
//! stores every message the session appends, exactly as appended, plus a record of each
//! compaction the active engine made. Its tools then answer from the whole history, which the
//! active engine may have summarised away.
//!
//! Storage is append-only and idempotent by position and content, as when lcm is active: the same
//! session replayed again into the same file stores nothing new.
//!
//! Writes are grouped: a session publishes a fact or two per turn, and a transaction per fact
//! spent most of its time committing (whole pages written to the log, a full-text segment
//! flushed and merged each time). Once the host has said it tells lcm when its queue runs dry
//! ([`Engine::observe_idle`](ctxhost_engine_abi::Engine::observe_idle)), appended messages wait
//! in memory while more facts are queued behind them, and are written in one transaction when
//! the queue runs dry, when [`MAX_PENDING`] of them wait, or before anything reads the store or
//! the session changes. A quiet session therefore has nothing waiting: the wait is never longer
//! than the host's own queue. Under an older host every fact is written at once, as before.
//!
//! Once the host tells lcm when its queue runs dry, those transactions run on lcm's writer thread
//! ([`crate::writer`]): a batch goes to it when the queue runs dry or [`MAX_PENDING`] messages
//! wait, and lcm reads the next facts while SQLite stores it. Anything that reads the store or
//! changes the session waits for the thread first; a write that failed is reported by the next
//! call.

use std::borrow::Cow;

use ctxhost_engine_abi::{EngineError, Message};
use ctxhost_engine_kit::tokens;
use serde_json::value::RawValue;

use crate::{
    raw,
    store::{self, NewMessage, ObservedCompaction, StoredRef},
    time,
    writer::{Batch, Checkpointer, Outcome, Settled, Writer},
    Lcm,
};

/// At most this many appended messages wait in memory for one transaction.
pub const MAX_PENDING: usize = 1024;

/// One appended message as lcm was given it.
enum Appended<'a> {
    /// Read by the SDK into a `Message` (a host that links lcm, or `observe` called directly).
    Parsed(&'a Message),
    /// The JSON text the host sent ([`Lcm::record_appended_raw`]).
    Raw(&'a RawValue),
}

impl Appended<'_> {
    /// The exact JSON stored: the bytes received, or the message written as the host writes it.
    fn json(&self) -> Cow<'_, str> {
        match self {
            Self::Parsed(message) => {
                Cow::Owned(serde_json::to_string(message).expect("a message serialises"))
            }
            Self::Raw(raw) => Cow::Borrowed(raw.get()),
        }
    }

    /// The message as far as its role, time and token estimate go (its search text is derived
    /// from the stored JSON later, when something searches: [`store::index_backlog`]).
    fn searchable(&self) -> Result<Cow<'_, Message>, EngineError> {
        match self {
            Self::Parsed(message) => Ok(Cow::Borrowed(*message)),
            Self::Raw(raw) => raw::read_searchable(raw.get())
                .map(Cow::Owned)
                .map_err(|error| EngineError::invalid_input(format!("fact: a message: {error}"))),
        }
    }
}

impl Lcm {
    /// Stores the messages the session appended that the store does not hold at their position
    /// (at once, or with the next write when the host tells lcm its queue runs dry).
    pub fn record_appended(&mut self, messages: &[Message]) -> Result<(), EngineError> {
        self.record(messages.iter().map(Appended::Parsed))
    }

    /// [`record_appended`](Lcm::record_appended) for messages as the host wrote them (the
    /// plugin's path, [`ctxhost_engine_abi::RawFact::view`]): each is stored as the bytes
    /// received, and only what its role, time and token estimate need is read. The host writes a message exactly
    /// as `serde_json` writes a `Message`, so both paths store the same bytes, and a store
    /// filled by one is aligned with by the other.
    pub fn record_appended_raw(&mut self, messages: &[&RawValue]) -> Result<(), EngineError> {
        self.record(messages.iter().map(|raw| Appended::Raw(raw)))
    }

    fn record<'a>(&mut self, messages: impl Iterator<Item = Appended<'a>>) -> Result<(), EngineError> {
        if self.writer.as_ref().is_some_and(Writer::failed) {
            self.settle()?;
        }
        self.load_session()?;
        let now = time::now_ms();
        let mut rows = Vec::new();
        for message in messages {
            let json = message.json();
            let hash = store::hash_json(&json);
            // Stored already, where expected or further on (a replay of what an engine in charge
            // stored before it went back to observing): found as `ingest` finds it.
            if let Some(found) = self.session.refs.find_from(hash, self.session.observed) {
                self.session.first_observed_at.get_or_insert(found);
                self.session.observed = found + 1;
                continue;
            }
            // A new message, or another one at a position the store knew (the session went
            // differently this time): stored at the end, as a variant, like `ingest` does.
            let seq = (self.unsettled() + rows.len()) as i64;
            self.session.first_observed_at.get_or_insert(seq as usize);
            let searchable = message.searchable()?;
            let (created_at, dated) = self.session.time_of(&searchable, now);
            let role = searchable.role.as_str();
            let tokens = tokens::estimate_message_tokens(&searchable).min(u64::from(u32::MAX)) as u32;
            rows.push(NewMessage {
                seq,
                role,
                tokens,
                json: json.into_owned(),
                hash,
                created_at,
                dated,
            });
        }
        if rows.is_empty() {
            return Ok(());
        }
        let session = self.ensure_session_row(now)?;
        self.pending.session = session;
        self.pending.rows.append(&mut rows);
        self.session.observed = self.unsettled();
        if !self.told_idle {
            self.write_pending()?;
        } else if self.pending.rows.len() >= MAX_PENDING {
            self.hand_over()?;
        }
        Ok(())
    }

    /// The session's messages lcm has stored, is storing or holds to store.
    pub(crate) fn unsettled(&self) -> usize {
        let writing = self.writer.as_ref().map_or(0, Writer::rows);
        self.session.refs.len() + writing + self.pending.rows.len()
    }

    /// Hands the appended messages waiting in memory to the writer thread, started with the
    /// store if it is not running, without waiting for them to be written.
    fn hand_over(&mut self) -> Result<(), EngineError> {
        if self.writer.as_ref().is_some_and(Writer::failed) {
            self.settle()?;
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.writer.is_none() {
            self.store()?;
            let store = self.store.take().expect("opened above");
            // The thread holds the store from here until `settle` takes it back.
            if self.checkpointer.is_none() {
                let checkpointer = Checkpointer::start(&self.database).map_err(|error| {
                    EngineError::other(format!("lcm: cannot start its checkpoint thread: {error}"))
                });
                self.checkpointer = Some(checkpointer?);
            }
            let started = Writer::start(store, self.checkpointer.as_ref().expect("started above"));
            self.writer = Some(started.map_err(|error| {
                EngineError::other(format!("lcm: cannot start its writer thread: {error}"))
            })?);
        }
        let batch = std::mem::take(&mut self.pending);
        let writer = self.writer.as_mut().expect("started above");
        if let Err(batch) = writer.send(batch) {
            // The thread is gone; `settle` says why, and the batch waits for the next attempt.
            self.pending = batch;
            return self.settle();
        }
        Ok(())
    }

    /// Waits for the writer thread, if it runs, and takes the store back: what it wrote is
    /// remembered, and what it could not write waits in memory again, in order, for the next
    /// attempt.
    pub(crate) fn settle(&mut self) -> Result<(), EngineError> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let Settled {
            store,
            outcomes,
            lost,
        } = writer.settle();
        self.store = store;
        if let Some(lost) = lost {
            // What the thread committed before it panicked is known only to the file: the
            // session's positions are read from it again.
            self.session.loaded = false;
            return Err(EngineError::other(format!(
                "lcm store {}: the writer thread panicked; {lost} messages were not stored",
                self.database.display()
            )));
        }
        let mut unwritten: Vec<Batch> = Vec::new();
        let mut failure = None;
        for outcome in outcomes {
            match outcome {
                Outcome::Written(session, refs) => {
                    // Rows of a session lcm has left since are stored; its positions are not kept.
                    if self.session.id == Some(session) {
                        self.session.refs.extend(refs);
                    }
                }
                Outcome::Unwritten(batch, error) => {
                    failure = failure.or(error);
                    unwritten.push(batch);
                }
            }
        }
        let Some(first) = unwritten.first() else {
            return Ok(());
        };
        // Every batch goes to the thread from the session lcm is in, and the session changes
        // only after settling: what waits is all one session's.
        let mut waiting = Batch {
            session: first.session,
            ..Batch::default()
        };
        for batch in unwritten.into_iter().chain([std::mem::take(&mut self.pending)]) {
            waiting.rows.extend(batch.rows);
            waiting.compactions.extend(batch.compactions);
        }
        self.pending = waiting;
        let error = failure.expect("the first batch not written is the one that failed");
        Err(self.store_error(error))
    }

    /// Writes the appended messages waiting in memory, in one transaction, after those the writer
    /// thread holds.
    pub(crate) fn write_pending(&mut self) -> Result<(), EngineError> {
        self.settle()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        let written = self
            .store()?
            .insert_observed(batch.session, &batch.rows, &batch.compactions);
        let ids = match written {
            Ok(ids) => ids,
            Err(error) => {
                // Kept for the next attempt: a failed write loses nothing.
                self.pending = batch;
                return Err(self.store_error(error));
            }
        };
        let Batch { session, rows, .. } = batch;
        // Rows of a session lcm has left since are stored; its positions are not kept.
        if self.session.id == Some(session) {
            for (row, id) in rows.iter().zip(ids) {
                self.session.refs.push(StoredRef {
                    id,
                    hash: row.hash,
                    tokens: row.tokens,
                });
            }
        }
        Ok(())
    }

    /// The host's queue ran dry: what waits goes to the writer thread now (waiting, if need be,
    /// only for the batch before it to be taken: there is nothing else to do).
    pub(crate) fn idle(&mut self) -> Result<(), EngineError> {
        self.told_idle = true;
        self.hand_over()
    }

    /// Records a compaction the active engine made.
    pub fn record_compaction(
        &mut self,
        engine: &str,
        (tokens_before, tokens_after): (u64, u64),
        inserted: &[Message],
    ) -> Result<(), EngineError> {
        self.load_session()?;
        let now = time::now_ms();
        let session = self.ensure_session_row(now)?;
        let compaction = ObservedCompaction {
            session,
            at_seq: self.session.observed as i64,
            engine: engine.to_owned(),
            tokens_before,
            tokens_after,
            inserted_json: serde_json::to_string(inserted).expect("messages serialise"),
            // In the session's own time, as its messages are.
            created_at: self.session.last_written.unwrap_or(now),
            starts_history: self.session.first_observed_at == Some(0)
                && !std::mem::replace(&mut self.session.compactions_recorded, true),
        };
        // With the messages appended around it, in their transaction: a compaction every few
        // hundred messages would otherwise cut every batch short.
        self.pending.session = session;
        self.pending.compactions.push(compaction);
        if !self.told_idle {
            self.write_pending()?;
        }
        Ok(())
    }

    fn ensure_session_row(&mut self, now: i64) -> Result<i64, EngineError> {
        if let Some(id) = self.session.id {
            return Ok(id);
        }
        let name = self.session.name.clone();
        let id = self
            .store()?
            .ensure_session(&name, now)
            .map_err(|error| self.store_error(error))?;
        self.session.id = Some(id);
        Ok(id)
    }
}
