//! lcm as an observer (`context.observers: [lcm]`): another engine owns the context, and lcm
//! stores every message the session appends, exactly as appended, plus a record of each
//! compaction the active engine made. Its tools then answer from the whole history, which the
//! active engine may have summarised away.
//!
//! Storage is append-only and idempotent by position and content, as when lcm is active: the same
//! session replayed again into the same file stores nothing new.

use ctxhost_engine_abi::{EngineError, Message};
use ctxhost_engine_kit::tokens;

use crate::{
    store::{self, NewMessage, ObservedCompaction, StoredRef},
    text, time, Lcm,
};

impl Lcm {
    /// Stores the messages the session appended that the store does not hold at their position.
    pub fn record_appended(&mut self, messages: &[Message]) -> Result<(), EngineError> {
        self.load_session()?;
        let now = time::now_ms();
        let mut rows = Vec::new();
        for message in messages {
            let json = serde_json::to_string(message).expect("a message serialises");
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
            let seq = (self.session.refs.len() + rows.len()) as i64;
            rows.push(NewMessage {
                seq,
                role: message.role.as_str(),
                search_text: text::search_text(message),
                tokens: tokens::estimate_message_tokens(message).min(u64::from(u32::MAX)) as u32,
                json,
                hash,
                created_at: now,
            });
        }
        if rows.is_empty() {
            return Ok(());
        }
        let session = self.ensure_session_row(now)?;
        let ids = self
            .store()?
            .insert_messages(session, &rows)
            .map_err(|error| self.store_error(error))?;
        for (row, id) in rows.iter().zip(ids) {
            self.session.refs.push(StoredRef {
                id,
                hash: row.hash,
                tokens: row.tokens,
            });
        }
        self.session.observed = self.session.refs.len();
        Ok(())
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
