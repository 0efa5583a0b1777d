//! `lcm`: lossless context management, a context engine that never forgets a message.
//!
//! Every message goes, exactly as received, into an append-only SQLite store (one file, WAL,
//! FTS5). The context the model sees is rebuilt from the system message, one message holding
//! **summaries**, and the fresh tail of raw messages; every summary keeps its lineage, so the
//! agent can search the whole history (`lcm_grep`) and expand any summary back to the exact
//! originals (`lcm_expand`). It follows Voltropy's "Lossless Context Management" (2026), as
//! hermes-lcm and lossless-claw implement it.
//!
//! The main type is [`Lcm`], an [`Engine`]; [`LcmConfig`] is its `lcm:` block; [`Store`] is the
//! database. The plugin library is the separate `ctxhost-lcm-plugin` crate: the host never links
//! this engine, it loads it through the ABI like any third-party plugin. Not for sessions where
//! nothing needs to be recovered later: the built-in compressor is cheaper there.
//!
//! # How `compress` works
//!
//! 1. Ingest every message not stored yet ([`Lcm::ingest`]): the context is aligned with the
//!    session's stored messages by position and content (a hash of the exact JSON), never by ids
//!    the messages carry, so feeding the same prefix twice stores nothing new. After `/engine lcm`
//!    over a session lcm recorded as an observer, what the other engine wrote into the context
//!    (its summary, stand-ins) is kept in the context and never stored as the conversation's.
//! 2. Leaf passes over the oldest raw messages outside the fresh tail, until the context fits
//!    under the target or nothing is left ([`compact`]).
//! 3. Condensation passes while the summaries themselves take too much room.
//! 4. Assembly ([`assemble`]): the system message with a fixed note, one assistant message
//!    holding the summaries, then the tail.
//!
//! Every pass must make the context strictly smaller, or the sweep stops; at most
//! `max_summarizer_calls` calls and `max_sweep_seconds` per sweep. All of a sweep's summaries are
//! written in one transaction: a killed process leaves the state before or after it.
//!
//! # Example
//!
//! ```
//! use ctxhost_engine_abi::{CompressRequest, Engine, Host, Message, ModelInfo, SessionInfo};
//! use ctxhost_lcm::Lcm;
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let database = dir.path().join("lcm.sqlite");
//! let mut engine = Lcm::new(&json!({ "database": database, "fresh_tail": 2 }), Host::detached()).unwrap();
//! engine.update_model(&ModelInfo { context_length: 400, ..ModelInfo::default() });
//! engine.on_session_start("demo", &SessionInfo::default()).unwrap();
//! let mut messages = vec![Message::system("You are terse.")];
//! for i in 0..20 {
//!     messages.push(Message::user(format!("question {i}: {}", "words ".repeat(30))));
//!     messages.push(Message::assistant(format!("answer {i}")));
//! }
//! messages.push(Message::user("the last question"));
//! let compacted = engine.compress(messages, &CompressRequest::default()).unwrap();
//! assert!(compacted.len() < 10);
//! let found = engine.handle_tool_call("lcm_grep", &json!({ "pattern": "question 3:" }), None);
//! assert_eq!(found["matches"].as_array().unwrap().len(), 1);
//! ```
#![forbid(unsafe_code)]

pub mod assemble;
pub mod compact;
mod config;
mod observing;
mod positions;
pub mod raw;
pub mod raw_filter;
pub mod search;
pub mod store;
pub mod stored_text;
pub mod synthetic;
pub mod text;
pub mod time;
mod tools;
pub mod walk;
mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use std::time::Instant;

use ctxhost_engine_abi::{
    default_status, CompressRequest, Counters, Engine, EngineError, Fact, FactBody, FactKind, Host, Message,
    ModelInfo, RawFact, Role, SessionInfo, Usage,
};
use ctxhost_engine_kit::{
    pacing::{AntiThrash, Cooldown},
    sequence::REMOVED_RESULT_TEXT,
    tokens,
};
use serde_json::{json, Value};

pub use config::LcmConfig;
pub use store::Store;

use store::{NewMessage, StoredRef};

/// Engine extension: the account of the last compaction (`call_ext("last_compaction")`).
pub const EXT_LAST_COMPACTION: &str = "last_compaction";
/// Engine extension: lift the anti-thrash pause (the host calls it before a manual `/compress`).
pub const EXT_RESUME_AUTO_COMPACTION: &str = "resume_auto_compaction";

/// `SessionInfo::boundary_reason` of a session that continues another after a compaction.
const BOUNDARY_COMPRESSION: &str = "compression";

/// `SessionInfo::boundary_reason` when `/engine` hands lcm a context another engine made.
const BOUNDARY_ENGINE_SWAP: &str = "engine_swap";

/// The session used when the host never calls `on_session_start`.
const DEFAULT_SESSION: &str = "default";

/// The lossless context-management engine (`context.engine: lcm`).
pub struct Lcm {
    config: LcmConfig,
    host: Host,
    counters: Counters,
    database: PathBuf,
    store: Option<Store>,
    session: Session,
    /// `/reset`s in this session: each starts a session of its own in the store.
    resets: u32,
    last_compaction: Option<Value>,
    /// Set once the host delivers facts: another engine owns the context, and lcm's store is fed
    /// by what the session appends, never by a context it did not make.
    observing: bool,
    /// Appended messages waiting for one transaction (see [`observing`]).
    pending: writer::Batch,
    /// The thread writing appended messages while the host keeps lcm busy; it holds the store.
    writer: Option<writer::Writer>,
    /// Checkpoints the store behind the writer thread, once that has run (see [`writer::Checkpointer`]).
    checkpointer: Option<writer::Checkpointer>,
    /// Set once the host has said its queue ran dry: from then on, it will say so again.
    told_idle: bool,
    /// Pauses automatic compaction after two that changed nothing (compressor.md's anti-thrash
    /// rule): Hermes otherwise sent the whole context three times a turn for nothing.
    thrash: AntiThrash,
    /// Leaves the host's summarizer alone after a timeout or a failure; compactions truncate
    /// meanwhile (see [`compact`]).
    cooldown: Cooldown,
}

/// The session the engine is in, and what it knows of its stored messages.
#[derive(Debug, Default)]
struct Session {
    name: String,
    /// The row id, once the session exists in the store.
    id: Option<i64>,
    /// Its messages in ingestion order.
    refs: positions::Positions,
    loaded: bool,
    /// As an observer: how many of `refs` the session has appended so far.
    observed: usize,
    /// As an observer: where the first message this run observed stands in the session (0: the
    /// run replays the session from its start), and whether it recorded a compaction yet.
    first_observed_at: Option<usize>,
    compactions_recorded: bool,
    /// The time of the last message stored in this run that said when it was written.
    last_written: Option<i64>,
    /// lcm took over a session it holds (`/engine lcm` after observing it): the first context it
    /// is given is another engine's, and what in it the store lacks is that engine's writing.
    taking_over: bool,
    /// Hashes of the messages of another engine kept in the context (see [`Slot::Foreign`]).
    foreign: std::collections::HashSet<i64>,
    /// Positions of the messages this process stored in place of others (a live tool answer
    /// that differs from the recorded one): stored at the end, they stand where the one they
    /// replace stood, and finding one again must not take the expected position past the rest.
    variants: std::collections::HashSet<usize>,
}

impl Session {
    /// The time a message is stored with, and whether it is when it was written: when it says it
    /// was written; for one that does not say, the time of the last that did, so that a
    /// transcript's messages keep the session's own times; `now`, not a time it was written, in a
    /// session whose messages never said.
    fn time_of(&mut self, message: &Message, now: i64) -> (i64, bool) {
        if let Some(written) = time::message_time(&message.extra) {
            self.last_written = Some(written);
        }
        match self.last_written {
            Some(written) => (written, true),
            None => (now, false),
        }
    }
}

/// One message of a context, placed against the store.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The message as in the context.
    pub message: Message,
    /// What it is.
    pub slot: Slot,
}

/// What a context message is to the store.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// The system message (stored without the note); `id` is its row.
    System {
        /// Row id.
        id: i64,
    },
    /// The summary message, listing these summaries.
    Summaries(Vec<String>),
    /// A raw message.
    Raw {
        /// Row id.
        id: i64,
        /// Position in ingestion order.
        seq: i64,
        /// Rough tokens.
        tokens: u64,
    },
    /// Another engine's writing in a context lcm took over (a compressor's summary, a masked
    /// stand-in): kept in the context, never stored, since what it stands for is stored already
    /// as the messages lcm recorded while observing.
    Foreign {
        /// Rough tokens.
        tokens: u64,
    },
}

impl Lcm {
    /// The engine with checked settings and the database path already resolved.
    pub fn with_database(config: LcmConfig, database: PathBuf, host: Host) -> Result<Self, EngineError> {
        config.validate()?;
        Ok(Self {
            config,
            host,
            counters: Counters::default(),
            database,
            store: None,
            session: Session {
                name: DEFAULT_SESSION.to_owned(),
                ..Session::default()
            },
            resets: 0,
            last_compaction: None,
            observing: false,
            pending: writer::Batch::default(),
            writer: None,
            checkpointer: None,
            told_idle: false,
            thrash: AntiThrash::default(),
            cooldown: Cooldown::default(),
        })
    }

    /// The settings in force.
    pub fn config(&self) -> &LcmConfig {
        &self.config
    }

    /// The database file.
    pub fn database(&self) -> &Path {
        &self.database
    }

    /// The current session's name in the store.
    pub fn session_name(&self) -> &str {
        &self.session.name
    }

    /// Whether automatic compaction is paused by the anti-thrash rule.
    pub fn is_paused(&self) -> bool {
        self.thrash.is_paused()
    }

    /// Lifts the anti-thrash pause; returns whether it was paused.
    pub fn resume_auto_compaction(&mut self) -> bool {
        self.thrash.resume()
    }

    /// Ends the summarizer's cool-down now, as if its time had passed.
    #[cfg(test)]
    pub(crate) fn expire_cooldown_for_test(&mut self) {
        self.cooldown.expire();
    }

    fn store_error(&self, error: store::StoreError) -> EngineError {
        EngineError::other(format!("lcm store {}: {error}", self.database.display()))
    }

    /// The open store, opened on first use, once the writer thread has written what it holds.
    pub fn store(&mut self) -> Result<&mut Store, EngineError> {
        self.settle()?;
        if self.store.is_none() {
            let store =
                Store::open(&self.database).map_err(|error| EngineError::other(format!("lcm: {error}")))?;
            tracing::debug!("{}: store opened", self.database.display());
            self.store = Some(store);
        }
        Ok(self.store.as_mut().expect("opened above"))
    }

    /// Opens the store and loads the current session's messages, if not done yet.
    fn load_session(&mut self) -> Result<(), EngineError> {
        if self.session.loaded {
            return Ok(());
        }
        let name = self.session.name.clone();
        let store = self.store()?;
        let loaded = store
            .find_session(&name)
            .and_then(|id| Ok((id, id.map(|id| store.load_refs(id)).transpose()?)));
        let (id, refs) = loaded.map_err(|error| self.store_error(error))?;
        self.session.id = id;
        self.session.refs = positions::Positions::new(refs.unwrap_or_default());
        self.session.loaded = true;
        Ok(())
    }

    fn switch_session(&mut self, name: String) {
        self.session = Session {
            name,
            ..Session::default()
        };
    }

    /// Places every message of `messages` against the store, storing those it does not hold yet
    /// (one transaction), and returns the placed context.
    ///
    /// - The system message is stored without the engine's note.
    /// - The summary message moves the expected position past the last message its summaries
    ///   cover.
    /// - A raw message is the first stored one with the same exact JSON at or after the expected
    ///   position, however far on (the host or another engine dropped the messages between);
    ///   otherwise it is new. A new message before the end of what is stored (say a tool answer
    ///   replayed differently) is a variant: stored at the end, it does not move the expected
    ///   position, so that the messages after it are found where they are. The expected position
    ///   only moves forward.
    /// - In the first context after lcm took over a session it holds, a message the store lacks
    ///   that comes before the last one it holds is the other engine's writing: kept, not stored
    ///   ([`Slot::Foreign`]); the messages after the last one it holds are the conversation's.
    pub fn ingest(&mut self, messages: Vec<Message>) -> Result<Vec<Entry>, EngineError> {
        self.write_pending()?;
        self.load_session()?;
        let now = time::now_ms();
        let mut cursor = 0usize;
        let mut pending: Vec<(usize, NewMessage)> = Vec::new();
        let mut entries = Vec::with_capacity(messages.len());
        let mut next_seq = self.session.refs.len() as i64;
        let mut variants = Vec::new();
        let last_held = match std::mem::take(&mut self.session.taking_over) {
            true => self.last_held(&messages),
            false => None,
        };
        // The user message a summary message says it kept right after itself, out of order.
        let mut pinned: Option<i64> = None;
        for (index, message) in messages.into_iter().enumerate() {
            if let Some(ids) = assemble::parse_summary_message(&message) {
                pinned = assemble::parse_pinned(&message);
                let mut last_seq = None;
                for id in &ids {
                    let summary = self
                        .store()?
                        .summary(id)
                        .map_err(|error| self.store_error(error))?;
                    if let Some(summary) = summary {
                        last_seq = last_seq.max(Some(summary.last_seq));
                    }
                }
                if let Some(last_seq) = last_seq {
                    cursor = cursor.max(last_seq as usize + 1);
                }
                entries.push(Entry {
                    message,
                    slot: Slot::Summaries(ids),
                });
                continue;
            }
            let is_system = index == 0 && message.role == Role::System;
            let original = if is_system {
                assemble::without_note(&message)
            } else {
                message.clone()
            };
            let json = serde_json::to_string(&original).expect("a message serialises");
            let hash = store::hash_json(&json);
            let tokens = tokens::estimate_message_tokens(&original);
            if let Some(id) = pinned {
                let position = self.session.refs.binary_search_by_key(&id, |stored| stored.id);
                if let Some(position) = position.ok().filter(|&at| self.session.refs[at].hash == hash) {
                    pinned = None;
                    entries.push(Entry {
                        message,
                        slot: Slot::Raw {
                            id,
                            seq: position as i64,
                            tokens,
                        },
                    });
                    continue;
                }
            }
            let known = match self.session.refs.find_from(hash, cursor) {
                None if is_system && cursor == 0 => self.stored_system_under(&original)?,
                found => found,
            };
            // A stub result the pair repair wrote (lcm's own or another engine's) stands for an
            // output the store holds or never had: it is not the conversation's.
            let stub = message.role == Role::Tool && message.text() == REMOVED_RESULT_TEXT;
            let foreign = known.is_none()
                && !is_system
                && (stub
                    || self.session.foreign.contains(&hash)
                    || last_held.is_some_and(|last| index < last));
            if foreign {
                // Another engine's message between the summaries and the pinned one keeps the
                // pin: it is the pinned message that must be found, not stored again.
                self.session.foreign.insert(hash);
                entries.push(Entry {
                    message,
                    slot: Slot::Foreign { tokens },
                });
                continue;
            }
            pinned = None;
            // A variant says where the conversation is by the message before it, for the summaries
            // that cover it (their last position is where the next context resumes).
            let before = cursor as i64 - 1;
            let (id, seq) = match known {
                Some(at) if self.session.variants.contains(&at) => (self.session.refs[at].id, before),
                Some(at) => {
                    cursor = at + 1;
                    (self.session.refs[at].id, at as i64)
                }
                None => {
                    let seq = next_seq;
                    next_seq += 1;
                    let variant = cursor < self.session.refs.len();
                    if variant {
                        variants.push(seq as usize);
                    } else {
                        cursor += 1;
                    }
                    let (created_at, dated) = self.session.time_of(&original, now);
                    pending.push((
                        entries.len(),
                        NewMessage {
                            seq,
                            role: original.role.as_str(),
                            json,
                            tokens: tokens.min(u64::from(u32::MAX)) as u32,
                            hash,
                            created_at,
                            dated,
                        },
                    ));
                    (0, if variant { before } else { seq })
                }
            };
            let slot = if is_system {
                Slot::System { id }
            } else {
                Slot::Raw { id, seq, tokens }
            };
            entries.push(Entry { message, slot });
        }
        if pending.is_empty() {
            return Ok(entries);
        }
        let name = self.session.name.clone();
        let session = match self.session.id {
            Some(id) => id,
            None => {
                let id = self
                    .store()?
                    .ensure_session(&name, now)
                    .map_err(|error| self.store_error(error))?;
                self.session.id = Some(id);
                id
            }
        };
        let (positions, rows): (Vec<usize>, Vec<NewMessage>) = pending.into_iter().unzip();
        let ids = self
            .store()?
            .insert_messages(session, &rows)
            .map_err(|error| self.store_error(error))?;
        self.session.variants.extend(variants);
        for ((at, row), id) in positions.into_iter().zip(&rows).zip(ids) {
            self.session.refs.push(StoredRef {
                id,
                hash: row.hash,
                tokens: row.tokens,
            });
            match &mut entries[at].slot {
                Slot::System { id: slot } | Slot::Raw { id: slot, .. } => *slot = id,
                Slot::Summaries(_) | Slot::Foreign { .. } => unreachable!("only messages are pending"),
            }
        }
        tracing::debug!("{}: stored {} new messages", self.session.name, rows.len());
        Ok(entries)
    }

    /// The index in `messages` of the last one the session's store holds, anywhere.
    /// Position 0 when the stored session opens with a system message that `system` continues:
    /// another engine may append a note of its own to it (the compressor does), which
    /// [`assemble::without_note`] does not know to take off. It is the same system message.
    fn stored_system_under(&mut self, system: &Message) -> Result<Option<usize>, EngineError> {
        let Some(first) = self.session.refs.first().map(|stored| stored.id) else {
            return Ok(None);
        };
        let row = self
            .store()?
            .message(first)
            .map_err(|error| self.store_error(error))?;
        let Some(row) = row.filter(|row| row.role == Role::System.as_str()) else {
            return Ok(None);
        };
        let stored: Message = serde_json::from_str(&row.json)
            .map_err(|error| EngineError::other(format!("lcm: stored message {first}: {error}")))?;
        let (stored, given) = (stored.text(), system.text());
        Ok((!stored.is_empty() && given.starts_with(stored.as_ref())).then_some(0))
    }

    fn last_held(&self, messages: &[Message]) -> Option<usize> {
        messages.iter().enumerate().rev().find_map(|(index, message)| {
            let json = match index == 0 && message.role == Role::System {
                true => serde_json::to_string(&assemble::without_note(message)),
                false => serde_json::to_string(message),
            };
            let hash = store::hash_json(&json.expect("a message serialises"));
            self.session.refs.holds(hash).then_some(index)
        })
    }

    fn threshold(&self) -> u64 {
        self.counters.threshold_tokens
    }

    /// Whether `session_id` is the session lcm is in under a new name: Hermes, with
    /// `compression.in_place: false`, names the session anew after each compaction and says which
    /// one it continues. Any other boundary (`/new`) starts a conversation of its own.
    fn continues_after_compaction(&self, session_id: &str, info: &SessionInfo) -> bool {
        info.boundary_reason.as_deref() == Some(BOUNDARY_COMPRESSION)
            && info.old_session_id.as_deref() == Some(self.session.name.as_str())
            && session_id != self.session.name
    }

    /// Goes on with the current session's conversation under the name `name`, recorded in the
    /// store so that another process finds it too. The messages, summaries and positions stay
    /// those of the session: `lcm_grep` and the others see the whole history, and the compacted
    /// context the new name starts with is aligned with the stored messages, none stored twice.
    /// `false` (nothing changed) when `name` is already a session of its own in the store.
    fn continue_session(&mut self, name: &str) -> Result<bool, EngineError> {
        self.load_session()?;
        let now = time::now_ms();
        let old = self.session.name.clone();
        let id = match self.session.id {
            Some(id) => id,
            None => self
                .store()?
                .ensure_session(&old, now)
                .map_err(|error| self.store_error(error))?,
        };
        self.session.id = Some(id);
        let aliased = self
            .store()?
            .alias_session(name, id, now)
            .map_err(|error| self.store_error(error))?;
        if !aliased {
            tracing::warn!("{name}: already a session of its own in the store; it does not continue {old}");
            return Ok(false);
        }
        tracing::info!("{name}: continues session {old} after a compaction");
        self.session.name = name.to_owned();
        Ok(true)
    }

    fn automatic_allowed(&self) -> bool {
        !self.thrash.is_paused() && self.threshold() > 0
    }
}

impl Engine for Lcm {
    const NAME: &'static str = "lcm";

    fn new(config: &Value, host: Host) -> Result<Self, EngineError> {
        let config = LcmConfig::from_json(config)?;
        let database = resolve_database(&config, &host);
        Self::with_database(config, database, host)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn threshold_percent(&self) -> f64 {
        self.config.threshold
    }

    fn compress(
        &mut self,
        messages: Vec<Message>,
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        let entries = self.ingest(messages.clone())?;
        let (compacted, report) = match compact::compact(self, messages, entries, request) {
            Ok(compacted) => compacted,
            Err(error) => {
                // The host keeps the context: an attempt that changed nothing.
                self.thrash.on_ineffective();
                return Err(error);
            }
        };
        // A sweep that made nothing smaller hands the input back: not a compaction. Hermes warns
        // "Session compressed N times" from this count (explore-hermes FINDINGS.md, finding 3).
        if report["kept_input"] == true {
            self.thrash.on_ineffective();
            tracing::info!(
                "{}: nothing to compact (~{} tokens): the context is kept as it was",
                self.session.name,
                report["tokens_before"],
            );
        } else {
            self.counters.compression_count += 1;
            self.thrash.on_compacted();
            tracing::info!(
                "{}: compaction {}: {} new summaries, {} summarizer calls, ~{} -> ~{} tokens",
                self.session.name,
                self.counters.compression_count,
                report["new_summaries"],
                report["summarizer_calls"],
                report["tokens_before"],
                report["tokens_after"],
            );
        }
        self.last_compaction = Some(report);
        Ok(compacted)
    }

    fn update_from_response(&mut self, usage: &Usage) {
        self.thrash.on_usage(&mut self.counters, usage);
    }

    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> bool {
        let tokens = prompt_tokens.unwrap_or(self.counters.last_prompt_tokens);
        self.automatic_allowed() && tokens >= self.threshold()
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> bool {
        self.automatic_allowed() && tokens::estimate_reaches(messages, self.threshold())
    }

    fn update_model(&mut self, model: &ModelInfo) {
        self.counters.context_length = model.context_length;
        self.counters.threshold_tokens = (model.window() as f64 * self.config.threshold).floor() as u64;
        if self.thrash.resume() {
            tracing::info!("automatic compaction resumed: the model changed");
        }
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> bool {
        compact::has_content(&self.config, self.threshold(), messages)
    }

    fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> Result<(), EngineError> {
        self.write_pending()?;
        if self.continues_after_compaction(session_id, info) && self.continue_session(session_id)? {
            return Ok(());
        }
        self.resets = 0;
        if self.thrash.resume() {
            tracing::info!("automatic compaction resumed: a new session started");
        }
        self.switch_session(session_id.to_owned());
        self.load_session()?;
        self.session.taking_over =
            info.boundary_reason.as_deref() == Some(BOUNDARY_ENGINE_SWAP) && !self.session.refs.is_empty();
        if self.session.taking_over {
            tracing::info!(
                "{session_id}: taking over a session of {} stored messages; what the store lacks \
                 in the context handed over stays in the context, unstored",
                self.session.refs.len()
            );
        }
        Ok(())
    }

    fn on_session_end(&mut self, _session_id: &str, messages: &[Message]) -> Result<(), EngineError> {
        // Flush: whatever the context holds that no compaction saw is stored now (an observer has
        // stored every message as it was appended; the context is another engine's).
        self.write_pending()?;
        if !messages.is_empty() && !self.observing {
            self.ingest(messages.to_vec())?;
        }
        if let Some(store) = self.store.take() {
            store.make_durable().map_err(|error| self.store_error(error))?;
        }
        self.session.loaded = false;
        Ok(())
    }

    fn on_session_reset(&mut self) {
        // Kept for the next write when this one fails: the messages belong to the session before.
        if let Err(error) = self.write_pending() {
            tracing::warn!("{}", error.message);
        }
        self.counters = Counters {
            threshold_tokens: self.counters.threshold_tokens,
            context_length: self.counters.context_length,
            ..Counters::default()
        };
        // `/reset` starts a new session in the same store; `/new` names its own right after.
        self.resets += 1;
        let base = self
            .session
            .name
            .split("#reset-")
            .next()
            .unwrap_or_default()
            .to_owned();
        let resets = self.resets;
        self.switch_session(format!("{base}#reset-{resets}"));
        self.last_compaction = None;
        self.thrash.resume();
        self.cooldown = Cooldown::default();
    }

    fn get_tool_schemas(&self) -> Vec<Value> {
        tools::schemas()
    }

    fn handle_tool_call(&mut self, name: &str, arguments: &Value, messages: Option<&[Message]>) -> Value {
        if !tools::NAMES.contains(&name) {
            return json!({ "error": format!("Unknown context engine tool: {name}") });
        }
        if let Err(error) = self.write_pending() {
            return json!({ "error": error.message.as_str() });
        }
        // The live context may hold messages no compaction has stored yet.
        if let Some(messages) = messages.filter(|messages| !messages.is_empty()) {
            if let Err(error) = self.ingest(messages.to_vec()) {
                return json!({ "error": error.message.as_str() });
            }
        }
        match tools::handle(self, name, arguments) {
            Ok(answer) => answer,
            Err(error) => json!({ "error": error }),
        }
    }

    fn get_status(&self) -> Value {
        let mut status = default_status(&self.counters);
        if let Value::Object(fields) = &mut status {
            fields.insert("database".into(), self.database.display().to_string().into());
            fields.insert("session".into(), self.session.name.clone().into());
            fields.insert("stored_messages".into(), self.unsettled().into());
            let now = Instant::now();
            fields.insert("paused".into(), self.thrash.is_paused().into());
            fields.insert("ineffective_streak".into(), self.thrash.streak().into());
            fields.insert("cooldown_until".into(), self.cooldown.until_unix_secs(now).into());
            fields.insert(
                "cooldown_remaining_s".into(),
                self.cooldown.remaining_secs(now).into(),
            );
            fields.insert("last_summarizer_failure".into(), self.cooldown.reason().into());
        }
        status
    }

    fn interests(&self) -> Vec<FactKind> {
        vec![FactKind::MessagesAppended, FactKind::Compacted]
    }

    fn observe(&mut self, fact: &Fact) -> Result<(), EngineError> {
        self.observing = true;
        match &fact.body {
            FactBody::MessagesAppended { messages } => self.record_appended(messages),
            FactBody::Compacted {
                engine,
                tokens_before,
                tokens_after,
                inserted,
                ..
            } => self.record_compaction(engine, (*tokens_before, *tokens_after), inserted),
            _ => Ok(()),
        }
    }

    /// Appended messages are stored as the bytes the host sent; every other fact is read whole.
    fn observe_raw(&mut self, fact: &RawFact<'_>) -> Result<(), EngineError> {
        let view = fact.view()?;
        if view.kind != FactKind::MessagesAppended {
            return self.observe(&fact.to_fact()?);
        }
        self.observing = true;
        self.record_appended_raw(&view.messages)
    }

    fn observe_idle(&mut self) -> Result<(), EngineError> {
        self.idle()
    }

    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        match method {
            EXT_LAST_COMPACTION => Ok(self.last_compaction.clone().unwrap_or(Value::Null)),
            EXT_RESUME_AUTO_COMPACTION => {
                let was_paused = self.resume_auto_compaction();
                Ok(json!({ "paused": false, "was_paused": was_paused }))
            }
            other => Err(EngineError::unknown_method(other)),
        }
    }

    fn ext_methods(&self) -> Vec<&'static str> {
        vec![EXT_LAST_COMPACTION, EXT_RESUME_AUTO_COMPACTION]
    }
}

impl Drop for Lcm {
    /// Writes what waits: an engine dropped without `on_session_end` (a host shutting down
    /// early) still stores every message it was given.
    fn drop(&mut self) {
        if let Err(error) = self.write_pending() {
            tracing::error!("{}", error.message);
        }
    }
}

/// The database path: `lcm.database` resolved against the config file's directory, or
/// `<data_dir>/lcm.sqlite`; both directories come from the host's `paths` service. An older
/// host without it: the current directory, and `.ctxhost/` in it.
fn resolve_database(config: &LcmConfig, host: &Host) -> PathBuf {
    let paths = host.paths().unwrap_or_else(|error| {
        tracing::debug!("no host paths ({error}); resolving against the current directory");
        ctxhost_engine_abi::HostPaths::current_dir()
    });
    match &config.database {
        Some(path) if path.is_absolute() => path.clone(),
        Some(path) => paths.config_dir.join(path),
        None => paths.data_dir.join("lcm.sqlite"),
    }
}
