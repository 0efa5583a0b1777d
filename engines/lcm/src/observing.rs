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

use std::borrow::Cow;

use ctxhost_engine_abi::{EngineError, Message};
use ctxhost_engine_kit::tokens;
use serde_json::value::RawValue;

use crate::{
    raw,
    store::{self, NewMessage, ObservedCompaction, StoredRef},
    text, time, Lcm,
};

/// At most this many appended messages wait in memory for one transaction.
pub const MAX_PENDING: usize = 1024;

/// Appended messages not written yet, and the session row they belong to.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    session: i64,
    rows: Vec<NewMessage>,
}

impl Pending {
    /// How many messages wait.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
}

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

    /// The message as far as its search text and token estimate go.
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
    /// received, and only what its search text needs is read. The host writes a message exactly
    /// as `serde_json` writes a `Message`, so both paths store the same bytes, and a store
    /// filled by one is aligned with by the other.
    pub fn record_appended_raw(&mut self, messages: &[&RawValue]) -> Result<(), EngineError> {
        self.record(messages.iter().map(|raw| Appended::Raw(raw)))
    }

    fn record<'a>(&mut self, messages: impl Iterator<Item = Appended<'a>>) -> Result<(), EngineError> {
        self.load_session()?;
        let now = time::now_ms();
        let mut rows = Vec::new();
        for message in messages {
            let json = message.json();
            let hash = store::hash_json(&json);
            let at = self.session.observed;
            if self
                .session
                .refs
                .get(at)
                .is_some_and(|stored| stored.hash == hash)
            {
                self.session.observed += 1;
                continue;
            }
            // A new message, or another one at a position the store knew (the session went
            // differently this time): stored at the end, as a variant, like `ingest` does.
            let seq = (self.session.refs.len() + self.pending.rows.len() + rows.len()) as i64;
            let searchable = message.searchable()?;
            let role = searchable.role.as_str();
            let tokens = tokens::estimate_message_tokens(&searchable).min(u64::from(u32::MAX)) as u32;
            let search_text = match searchable {
                Cow::Borrowed(message) => text::search_text(message),
                Cow::Owned(message) => text::into_search_text(message),
            };
            rows.push(NewMessage {
                seq,
                role,
                search_text,
                tokens,
                json: json.into_owned(),
                hash,
                created_at: now,
            });
        }
        if rows.is_empty() {
            return Ok(());
        }
        let session = self.ensure_session_row(now)?;
        self.pending.session = session;
        self.pending.rows.append(&mut rows);
        self.session.observed = self.session.refs.len() + self.pending.rows.len();
        if !self.told_idle || self.pending.rows.len() >= MAX_PENDING {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the appended messages waiting in memory, in one transaction.
    pub(crate) fn write_pending(&mut self) -> Result<(), EngineError> {
        if self.pending.rows.is_empty() {
            return Ok(());
        }
        let Pending { session, rows } = std::mem::take(&mut self.pending);
        let written = self.store()?.insert_messages(session, &rows);
        let ids = match written {
            Ok(ids) => ids,
            Err(error) => {
                // Kept for the next attempt: a failed write loses nothing.
                self.pending = Pending { session, rows };
                return Err(self.store_error(error));
            }
        };
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

    /// The host's queue ran dry: what waits is written now.
    pub(crate) fn idle(&mut self) -> Result<(), EngineError> {
        self.told_idle = true;
        self.write_pending()
    }

    /// Records a compaction the active engine made.
    pub fn record_compaction(
        &mut self,
        engine: &str,
        (tokens_before, tokens_after): (u64, u64),
        inserted: &[Message],
    ) -> Result<(), EngineError> {
        self.write_pending()?;
        self.load_session()?;
        let now = time::now_ms();
        let session = self.ensure_session_row(now)?;
        let inserted_json = serde_json::to_string(inserted).expect("messages serialise");
        let compaction = ObservedCompaction {
            session,
            at_seq: self.session.observed as i64,
            engine,
            tokens_before,
            tokens_after,
            inserted_json: &inserted_json,
            created_at: now,
        };
        self.store()?
            .record_observed_compaction(&compaction)
            .map_err(|error| self.store_error(error))
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
