//! The store: one SQLite file holding every message ever ingested, the summaries and their
//! lineage.
//!
//! - `messages` keeps the original JSON exactly as received, append-only: compaction never
//!   updates or deletes a row. The plain text searched is derived from the JSON
//!   ([`crate::stored_text::search_text_into`], the same as [`crate::text::search_text`]) and
//!   indexed by `messages_fts`, a *contentless* FTS5 table: the text is in the index, never stored
//!   a second time, which keeps the file within 1.5× the JSON it holds (the Python plugin stores
//!   ~3.3×). `terms` holds every distinct word of that text, for regex searches.
//! - The index is built late: a message is stored without its search text (as an observer and as
//!   the engine in charge alike), and the rows stored
//!   since the last search are indexed (`messages_fts` and `terms`) just before the next one, by
//!   whichever process runs it ([`index_backlog`]). `message_index.indexed_through` is the
//!   watermark: the highest message row indexed, every row up to it indexed once, none above it.
//!   Storing a session's messages thus costs the rows and their log only; the first search after
//!   a session pays for indexing it (about 11 µs a message of ~1 KB of JSON, 110 ms after a
//!   10,000-message replay; benches/README.md, issue 9).
//! - `summaries` (+ `summaries_fts`, external content), `summary_messages` (a leaf's messages,
//!   ordered) and `summary_sources` (a condensed summary's sources, ordered), with foreign keys.
//! - `sessions` records, per session, what the context held after its last compaction;
//!   `session_aliases` names the sessions continued under another id (an agent that renames its
//!   session at each compaction).
//!
//! WAL mode. A compaction's writes (summaries, lineage, the context record) are one transaction,
//! so a process killed at any point leaves either the state before or the state after.
//! The schema version is `PRAGMA user_version`; [`migrate`] brings an older file up to date.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;

/// The schema this build writes.
pub const SCHEMA_VERSION: i64 = 7;

/// The log is copied into the file once it holds this many pages (16 KiB each, 64 MiB), not
/// SQLite's 1,000: a 10,000-message session writes about 18 MB of log, and each checkpoint waits
/// for two syncs (30 ms of a 10,000-message replay, on lcm's writer thread). Closing the store
/// copies what is left and removes the log.
pub const WAL_AUTOCHECKPOINT_PAGES: i64 = 4096;

/// Bytes the log's file keeps after a checkpoint has emptied it.
const WAL_SIZE_LIMIT: i64 = 64 << 20;

/// A store failure, with the database's path.
#[derive(Debug)]
pub struct StoreError {
    /// What failed.
    pub message: String,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self {
            message: format!("sqlite: {error}"),
        }
    }
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// What the engine remembers of one stored message, to align a context with the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredRef {
    /// The row id (`msg_<id>` to the tools).
    pub id: i64,
    /// A hash of the exact JSON.
    pub hash: i64,
    /// Rough tokens.
    pub tokens: u32,
}

/// A message about to be stored.
#[derive(Clone, Debug)]
pub struct NewMessage {
    /// Position in the session's ingestion order.
    pub seq: i64,
    /// `system`, `user`, `assistant`, `tool`.
    pub role: &'static str,
    /// The exact JSON.
    pub json: String,
    /// Rough tokens.
    pub tokens: u32,
    /// [`hash_json`] of `json`.
    pub hash: i64,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Whether `created_at` is when the message was written (its own `timestamp`, or an earlier
    /// message's in a transcript that has them), not when it was stored.
    pub dated: bool,
}

/// A summary about to be stored, with its lineage.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSummary {
    /// `sum_` + 16 hex.
    pub id: String,
    /// Leaf (depth 0) or condensed.
    pub kind: SummaryKind,
    /// 0 for a leaf; source depth + 1.
    pub depth: u32,
    /// `model:<name>`, `extractive`, or `truncation`.
    pub method: String,
    /// The text shown in the context.
    pub text: String,
    /// Rough tokens of the text.
    pub tokens: u64,
    /// Earliest and latest time covered, unix ms.
    pub earliest_at: i64,
    /// See `earliest_at`.
    pub latest_at: i64,
    /// Whether those are the times its messages were written: all of them were dated.
    pub dated: bool,
    /// Raw messages covered, transitively.
    pub descendant_count: u64,
    /// Tokens of those messages.
    pub descendant_tokens: u64,
    /// The highest ingestion position covered: the context resumes after it.
    pub last_seq: i64,
    /// For a leaf: message row ids in order. For a condensed summary: empty.
    pub messages: Vec<i64>,
    /// For a condensed summary: source summary ids in order. For a leaf: empty.
    pub sources: Vec<String>,
    /// Identifies the ordered sources, to reuse a summary of exactly this input.
    pub sources_key: String,
}

/// Which kind of summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    /// Over raw messages.
    Leaf,
    /// Over summaries.
    Condensed,
}

impl SummaryKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leaf => "leaf",
            Self::Condensed => "condensed",
        }
    }

    fn parse(text: &str) -> Self {
        if text == "leaf" {
            Self::Leaf
        } else {
            Self::Condensed
        }
    }
}

/// A stored summary, without its lineage.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// `sum_…`.
    pub id: String,
    /// Leaf or condensed.
    pub kind: SummaryKind,
    /// Depth.
    pub depth: u32,
    /// Who wrote it.
    pub method: String,
    /// The text.
    pub text: String,
    /// Rough tokens.
    pub tokens: u64,
    /// Unix ms.
    pub earliest_at: i64,
    /// Unix ms.
    pub latest_at: i64,
    /// Whether those are the times its messages were written, not when they were stored.
    pub dated: bool,
    /// Raw messages covered.
    pub descendant_count: u64,
    /// Their tokens.
    pub descendant_tokens: u64,
    /// The highest ingestion position covered.
    pub last_seq: i64,
}

/// A stored message.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRow {
    /// Row id.
    pub id: i64,
    /// The session's name.
    pub session: String,
    /// Position in ingestion order.
    pub seq: i64,
    /// Role.
    pub role: String,
    /// The exact JSON.
    pub json: String,
    /// Rough tokens.
    pub tokens: u64,
    /// Unix ms.
    pub created_at: i64,
    /// Whether `created_at` is when it was written, not when it was stored.
    pub dated: bool,
}

/// The open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// The words one catch-up of the index has met ([`index_backlog`]), so that each is written to the
/// `terms` table once, however many of the backlog's messages hold it.
#[derive(Clone, Debug, Default)]
pub struct Terms(HashSet<Box<str>, BuildWordHash>);

impl Terms {
    /// Pushes onto `new` each word of `text` ([`crate::text::for_each_term`]) not known yet, and
    /// knows it from then on.
    pub fn add(&mut self, text: &str, new: &mut Vec<Box<str>>) {
        crate::text::for_each_term(text, |term| {
            if !self.0.contains(term) {
                let term: Box<str> = term.into();
                new.push(term.clone());
                self.0.insert(term);
            }
        });
    }
}

/// A multiply-rotate hash taking 8 bytes at a step (as rustc's FxHash): every word of every stored
/// message is looked up, and SipHash's resistance to chosen keys buys nothing here (byte-at-a-time
/// FNV-1a was a tenth of lcm's reading thread).
#[derive(Clone, Copy, Debug, Default)]
struct BuildWordHash;

struct WordHash(u64);

const WORD_HASH_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::BuildHasher for BuildWordHash {
    type Hasher = WordHash;
    fn build_hasher(&self) -> WordHash {
        WordHash(0)
    }
}

impl WordHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(WORD_HASH_SEED);
    }
}

impl std::hash::Hasher for WordHash {
    fn finish(&self) -> u64 {
        // The low bits pick the bucket: after one multiplication they depend only on a word's
        // first bytes, the high bits on all of them.
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Byte by byte: most words are shorter than 8 bytes, and copying a length known only
            // at run time is a call to `memcpy`.
            let last = rest
                .iter()
                .rev()
                .fold(0u64, |word, &byte| (word << 8) | u64::from(byte));
            self.add(last);
        }
    }
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }
}

/// A compaction another engine made, as lcm records it while observing.
#[derive(Clone, Debug)]
pub struct ObservedCompaction {
    /// The session's row.
    pub session: i64,
    /// Messages of the session stored when it happened.
    pub at_seq: i64,
    /// The engine that made it.
    pub engine: String,
    /// Tokens before.
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// The messages its result added, as a JSON array.
    pub inserted_json: String,
    /// When it was recorded (ms since the epoch).
    pub created_at: i64,
    /// The first compaction of a run that observed the session from its first message: the
    /// compactions recorded before, by another run of the same session, are another history's,
    /// and this run's replace them.
    pub starts_history: bool,
}

const SCHEMA_V1: &str = r#"
CREATE TABLE sessions (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    -- what the context held after the last compaction: {"summaries": [...], "tail": [...]}
    context     TEXT NOT NULL DEFAULT '{}',
    compactions INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    json       TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    hash       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
-- Contentless: the search text is derived from `messages.json`, indexed here and stored nowhere.
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='');
CREATE TABLE summaries (
    num               INTEGER PRIMARY KEY,
    id                TEXT NOT NULL UNIQUE,
    session_id        INTEGER NOT NULL REFERENCES sessions(id),
    kind              TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth             INTEGER NOT NULL,
    method            TEXT NOT NULL,
    text              TEXT NOT NULL,
    tokens            INTEGER NOT NULL,
    earliest_at       INTEGER NOT NULL,
    latest_at         INTEGER NOT NULL,
    descendant_count  INTEGER NOT NULL,
    descendant_tokens INTEGER NOT NULL,
    last_seq          INTEGER NOT NULL,
    sources_key       TEXT NOT NULL,
    created_at        INTEGER NOT NULL
);
CREATE INDEX summaries_by_sources ON summaries (session_id, sources_key);
CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='summaries', content_rowid='num');
CREATE TABLE summary_messages (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    ord        INTEGER NOT NULL,
    message_id INTEGER NOT NULL REFERENCES messages(id),
    PRIMARY KEY (summary_id, ord)
) WITHOUT ROWID;
CREATE INDEX summary_messages_by_message ON summary_messages (message_id);
CREATE TABLE summary_sources (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    ord        INTEGER NOT NULL,
    source_id  TEXT NOT NULL REFERENCES summaries(id),
    PRIMARY KEY (summary_id, ord)
) WITHOUT ROWID;
CREATE INDEX summary_sources_by_source ON summary_sources (source_id);
-- Every distinct word of the indexed text, lowercased: a regex literal that is only part of a word
-- is looked up here, and the words containing it narrow the search through messages_fts.
CREATE TABLE terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
"#;

/// Version 2: the compactions another engine made while lcm observed the session.
const SCHEMA_V2: &str = r#"
CREATE TABLE observed_compactions (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES sessions(id),
    -- how many messages of the session lcm held when it happened
    at_seq        INTEGER NOT NULL,
    engine        TEXT NOT NULL,
    tokens_before INTEGER NOT NULL,
    tokens_after  INTEGER NOT NULL,
    -- the messages the engine's result added (its summaries, notes), as a JSON array
    inserted      TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    UNIQUE (session_id, at_seq, engine)
);
"#;

/// Version 3: the message index merges its segments 16 at a time instead of 4. Every
/// transaction adds a segment, and each merge rewrites what it merges: with 4, ingestion rewrote
/// the index about log4(transactions) times, more than it wrote the messages themselves. A search
/// reads a few more segments, still well under a millisecond at a million messages.
const SCHEMA_V3: &str = r#"
INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 16);
"#;

/// Version 4: other names of a session. Hermes with `compression.in_place: false` gives the
/// session a new id after every compaction; the new id continues the same conversation, so it
/// names the same row instead of starting a store session that holds only the compacted context
/// (explore-hermes FINDINGS.md, finding 4). A table of its own, so that no existing row changes.
const SCHEMA_V4: &str = r#"
CREATE TABLE session_aliases (
    name       TEXT PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Version 5: messages are stored without their search text, and indexed (`messages_fts`, `terms`)
/// only before something searches them ([`index_backlog`]). Building the index as each message was
/// stored was most of what lcm cost an observed replay. This row says how far the index goes:
/// every message up to `indexed_through` (row ids only grow: messages are never deleted) is in
/// both, none after it. A file of an older version indexed every message as it stored it.
const SCHEMA_V5: &str = r#"
CREATE TABLE message_index (
    one             INTEGER PRIMARY KEY CHECK (one = 1),
    indexed_through INTEGER NOT NULL
);
INSERT INTO message_index (one, indexed_through) SELECT 1, coalesce(max(id), 0) FROM messages;
"#;

/// Version 6: a tool call's arguments are indexed as their values read, strings unescaped
/// ([`crate::text::push_call`]); they were indexed as JSON, a word after a `\n` escape as
/// `nword`. The index is emptied, to be built again by the next search ([`index_backlog`]):
/// the messages are untouched, and the search text is derived from them.
const SCHEMA_V6: &str = r#"
INSERT INTO messages_fts (messages_fts) VALUES ('delete-all');
DELETE FROM terms;
UPDATE message_index SET indexed_through = 0;
"#;

/// Version 7: whether a message's time, and a summary's time range, are when its messages were
/// written (a transcript's timestamps) or when they were stored (a transcript without them,
/// replayed in a second): a summary of the latter said `2026-11-29T19:17:45Z to
/// 2026-11-29T19:17:45Z` for an incident of three hours. Rows of older files are taken as dated,
/// as they were shown.
const SCHEMA_V7: &str = r#"
ALTER TABLE messages ADD COLUMN dated INTEGER NOT NULL DEFAULT 1;
ALTER TABLE summaries ADD COLUMN dated INTEGER NOT NULL DEFAULT 1;
"#;

/// Brings the schema of `conn` up to [`SCHEMA_VERSION`], one version at a time, each step in a
/// transaction. A file from a newer build is refused rather than guessed at.
pub fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError {
            message: format!(
                "schema version {version} is newer than this lcm understands ({SCHEMA_VERSION})"
            ),
        });
    }
    migrate_to(conn, version, SCHEMA_VERSION)
}

/// Runs the steps from `version` up to `last`, each in a transaction.
///
/// Each step takes the write lock first and reads the version again under it: two processes
/// opening a new store at once (two replays started together) would otherwise both create the
/// tables, and the second fail with "table sessions already exists".
pub(crate) fn migrate_to(conn: &mut Connection, version: i64, last: i64) -> StoreResult<()> {
    let steps = [
        (1, SCHEMA_V1),
        (2, SCHEMA_V2),
        (3, SCHEMA_V3),
        (4, SCHEMA_V4),
        (5, SCHEMA_V5),
        (6, SCHEMA_V6),
        (7, SCHEMA_V7),
    ];
    for (target, step) in steps {
        if version < target && target <= last {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
            if now < target {
                tx.execute_batch(step)?;
                tx.pragma_update(None, "user_version", target)?;
            }
            tx.commit()?;
        }
    }
    Ok(())
}

/// How long opening a store waits for other processes, as every statement's busy timeout does.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Puts the store in WAL mode, waiting while another process switches it at the same moment.
///
/// SQLite's busy timeout does not cover this: switching reads the header, then asks for the
/// write lock, and a connection that holds a read lock is refused at once ("database is
/// locked") rather than left to wait on another reader that wants the same, which would be a
/// deadlock. Two replays started together on a new store were refused that way (one in 30 runs
/// of four at once). Each retry starts with no lock held; the pause varies so that two
/// processes retrying do not meet again.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut attempt: u32 = 0;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())) {
            Err(rusqlite::Error::SqliteFailure(error, _))
                if error.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                attempt += 1;
                let jitter = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.subsec_nanos() % 5);
                let pause = (attempt.min(10) + jitter) as u64;
                std::thread::sleep(std::time::Duration::from_millis(pause));
            }
            result => return result,
        }
    }
}

/// A stable 64-bit hash of a message's exact JSON (the first 8 bytes of its SHA-256).
pub fn hash_json(json: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(json.as_bytes());
    i64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

fn summary_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SummaryRow> {
    Ok(SummaryRow {
        id: row.get(0)?,
        kind: SummaryKind::parse(&row.get::<_, String>(1)?),
        depth: row.get(2)?,
        method: row.get(3)?,
        text: row.get(4)?,
        tokens: row.get::<_, i64>(5)? as u64,
        earliest_at: row.get(6)?,
        latest_at: row.get(7)?,
        descendant_count: row.get::<_, i64>(8)? as u64,
        descendant_tokens: row.get::<_, i64>(9)? as u64,
        last_seq: row.get(10)?,
        dated: row.get(11)?,
    })
}

const SUMMARY_COLUMNS: &str =
    "id, kind, depth, method, text, tokens, earliest_at, latest_at, descendant_count, descendant_tokens, last_seq, dated";

impl Store {
    /// Opens (or creates) the store at `path`, creating its folder, in WAL mode, migrated.
    pub fn open(path: &Path) -> StoreResult<Self> {
        // SQLite names the file in some of its errors ("unable to open database file: <path>"):
        // the path is said once.
        let wrap = |error: rusqlite::Error| {
            let (error, path) = (error.to_string(), path.display().to_string());
            StoreError {
                message: if error.contains(&path) {
                    error
                } else {
                    format!("{path}: {error}")
                },
            }
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|error| StoreError {
                message: format!("{}: cannot create the folder: {error}", dir.display()),
            })?;
        }
        let mut conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(wrap)?;
        // Rows of a kilobyte or two leave a fifth of a 4 KiB page empty; 16 KiB pages waste little.
        // Takes effect only on a new file, before WAL mode is set.
        conn.pragma_update(None, "page_size", 16_384).map_err(wrap)?;
        // 32 MiB of page cache: full-text index merges during ingestion stay in memory.
        conn.pragma_update(None, "cache_size", -32_768).map_err(wrap)?;
        // NORMAL in WAL mode: a power loss may drop the last transactions, never corrupt; a killed
        // process loses nothing committed. Set before WAL mode, so that creating a store does not
        // switch to WAL under the default (FULL): two fsyncs fewer (strace), a few milliseconds
        // when the disk is busy.
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(wrap)?;
        switch_to_wal(&conn).map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(wrap)?;
        // Closing still checkpoints (SQLite's default): once no process has the store open, it is
        // one self-contained file a user can copy, with no log beside it.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
            .map_err(wrap)?;
        // A checkpoint that emptied a log grown past this by one long session shrinks its file.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)
            .map_err(wrap)?;
        migrate(&mut conn).map_err(|error| StoreError {
            message: format!("{}: {}", path.display(), error.message),
        })?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw connection, for tests and the benchmarks' inspection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The row id of session `name`, if it exists: a session of that name, or the session that
    /// name continues (see [`Store::alias_session`]).
    pub fn find_session(&self, name: &str) -> StoreResult<Option<i64>> {
        let own = self
            .conn
            .prepare_cached("SELECT id FROM sessions WHERE name = ?1")?
            .query_row([name], |row| row.get(0))
            .optional()?;
        if own.is_some() {
            return Ok(own);
        }
        Ok(self
            .conn
            .prepare_cached("SELECT session_id FROM session_aliases WHERE name = ?1")?
            .query_row([name], |row| row.get(0))
            .optional()?)
    }

    /// Makes `name` another name of `session`, so that a later [`Store::find_session`] of it (in
    /// this process or another) finds the whole conversation. `false`, and nothing written, when
    /// `name` is already a session of its own or another session's name.
    pub fn alias_session(&self, name: &str, session: i64, now: i64) -> StoreResult<bool> {
        if let Some(existing) = self.find_session(name)? {
            return Ok(existing == session);
        }
        self.conn
            .prepare_cached(
                "INSERT INTO session_aliases (name, session_id, created_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (name) DO NOTHING",
            )?
            .execute(params![name, session, now])?;
        Ok(self.find_session(name)? == Some(session))
    }

    /// The row id of session `name`, created when missing (by this process or, at the same
    /// moment, another one writing the same session).
    pub fn ensure_session(&self, name: &str, now: i64) -> StoreResult<i64> {
        if let Some(id) = self.find_session(name)? {
            return Ok(id);
        }
        self.conn
            .prepare_cached(
                "INSERT INTO sessions (name, created_at) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
            )?
            .execute(params![name, now])?;
        self.find_session(name)?.ok_or_else(|| StoreError {
            message: format!("the session `{name}` was not created"),
        })
    }

    /// Every message of a session in ingestion order, as the engine aligns contexts with them.
    pub fn load_refs(&self, session: i64) -> StoreResult<Vec<StoredRef>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT id, hash, tokens FROM messages WHERE session_id = ?1 ORDER BY seq")?;
        let rows = statement.query_map([session], |row| {
            Ok(StoredRef {
                id: row.get(0)?,
                hash: row.get(1)?,
                tokens: row.get::<_, i64>(2)? as u32,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores `messages` in one transaction; returns their row ids. They are searchable once
    /// [`index_backlog`] has run.
    pub fn insert_messages(&mut self, session: i64, messages: &[NewMessage]) -> StoreResult<Vec<i64>> {
        self.insert_observed(session, messages, &[])
    }

    /// Stores `messages` and records `compactions`, in one transaction; returns the messages' row
    /// ids. A compaction recorded before (the same session replayed again) is kept once.
    pub fn insert_observed(
        &mut self,
        session: i64,
        messages: &[NewMessage],
        compactions: &[ObservedCompaction],
    ) -> StoreResult<Vec<i64>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ids = insert_messages_in(&tx, session, messages)?;
        for compaction in compactions {
            insert_compaction_in(&tx, compaction)?;
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Indexes the messages stored since the last catch-up (see [`index_backlog`]).
    pub fn index_backlog(&self) -> StoreResult<u64> {
        index_backlog(&self.conn)
    }

    /// How many compactions by other engines are recorded for `session` (every session: `None`).
    pub fn observed_compactions(&self, session: Option<i64>) -> StoreResult<u64> {
        let count: i64 = self.conn.query_row(
            "SELECT count(*) FROM observed_compactions WHERE ?1 IS NULL OR session_id = ?1",
            [session],
            |row| row.get(0),
        )?;
        Ok(count as u64)
    }

    /// The summary of exactly these ordered sources, if one was written before.
    pub fn find_summary_by_sources(
        &self,
        session: i64,
        sources_key: &str,
    ) -> StoreResult<Option<SummaryRow>> {
        let sql =
            format!("SELECT {SUMMARY_COLUMNS} FROM summaries WHERE session_id = ?1 AND sources_key = ?2");
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row(params![session, sources_key], summary_from_row)
            .optional()?)
    }

    /// Writes a compaction in one transaction: every new summary with its lineage, and what the
    /// context now holds. A summary whose id exists already is kept as it was. The compaction is
    /// counted in the session's `compactions` only when it stored a summary, or wrote none and
    /// `reused` none: one whose summaries all exist already is the same transcript replayed again.
    pub fn write_compaction(
        &mut self,
        session: i64,
        summaries: &[NewSummary],
        reused: usize,
        context: &Value,
    ) -> StoreResult<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = crate::time::now_ms();
        let mut new = summaries.is_empty() && reused == 0;
        for summary in summaries {
            if summary.messages.is_empty() && summary.sources.is_empty() {
                return Err(StoreError {
                    message: format!("summary {} has no source", summary.id),
                });
            }
            let inserted = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO summaries (id, session_id, kind, depth, method, text, tokens, \
                     earliest_at, latest_at, descendant_count, descendant_tokens, last_seq, sources_key, created_at, dated) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                )?
                .execute(params![
                    summary.id,
                    session,
                    summary.kind.as_str(),
                    summary.depth,
                    summary.method,
                    summary.text,
                    summary.tokens as i64,
                    summary.earliest_at,
                    summary.latest_at,
                    summary.descendant_count as i64,
                    summary.descendant_tokens as i64,
                    summary.last_seq,
                    summary.sources_key,
                    now,
                    summary.dated,
                ])?;
            if inserted == 0 {
                continue;
            }
            new = true;
            let num = tx.last_insert_rowid();
            tx.prepare_cached("INSERT INTO summaries_fts (rowid, text) VALUES (?1, ?2)")?
                .execute(params![num, summary.text])?;
            let mut lineage = tx.prepare_cached(
                "INSERT INTO summary_messages (summary_id, ord, message_id) VALUES (?1, ?2, ?3)",
            )?;
            for (ord, message) in summary.messages.iter().enumerate() {
                lineage.execute(params![summary.id, ord as i64, message])?;
            }
            let mut sources = tx.prepare_cached(
                "INSERT INTO summary_sources (summary_id, ord, source_id) VALUES (?1, ?2, ?3)",
            )?;
            for (ord, source) in summary.sources.iter().enumerate() {
                sources.execute(params![summary.id, ord as i64, source])?;
            }
        }
        tx.prepare_cached("UPDATE sessions SET context = ?2, compactions = compactions + ?3 WHERE id = ?1")?
            .execute(params![session, context.to_string(), i64::from(new)])?;
        tx.commit()?;
        Ok(())
    }

    /// The summary `id`.
    pub fn summary(&self, id: &str) -> StoreResult<Option<SummaryRow>> {
        let sql = format!("SELECT {SUMMARY_COLUMNS} FROM summaries WHERE id = ?1");
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], summary_from_row)
            .optional()?)
    }

    /// The number of the summary `id` (summaries are numbered in the order they were written).
    pub fn summary_num(&self, id: &str) -> StoreResult<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT num FROM summaries WHERE id = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?)
    }

    /// A leaf's message row ids, in order.
    pub fn summary_messages(&self, id: &str) -> StoreResult<Vec<i64>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT message_id FROM summary_messages WHERE summary_id = ?1 ORDER BY ord")?;
        let rows = statement.query_map([id], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A condensed summary's source ids, in order.
    pub fn summary_sources(&self, id: &str) -> StoreResult<Vec<String>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT source_id FROM summary_sources WHERE summary_id = ?1 ORDER BY ord")?;
        let rows = statement.query_map([id], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The summaries that have `id` among their sources.
    pub fn summary_parents(&self, id: &str) -> StoreResult<Vec<String>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT summary_id FROM summary_sources WHERE source_id = ?1 ORDER BY summary_id",
        )?;
        let rows = statement.query_map([id], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The leaf summaries covering message `message_id`.
    pub fn leaves_covering(&self, message_id: i64) -> StoreResult<Vec<String>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT summary_id FROM summary_messages WHERE message_id = ?1 ORDER BY summary_id",
        )?;
        let rows = statement.query_map([message_id], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The message with row id `id`.
    pub fn message(&self, id: i64) -> StoreResult<Option<MessageRow>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT m.id, s.name, m.seq, m.role, m.json, m.tokens, m.created_at, m.dated \
                 FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id = ?1",
            )?
            .query_row([id], message_from_row)
            .optional()?)
    }

    /// The context record of `session` (what the last compaction left).
    pub fn session_context(&self, session: i64) -> StoreResult<(Value, u64)> {
        let (text, compactions): (String, i64) = self
            .conn
            .prepare_cached("SELECT context, compactions FROM sessions WHERE id = ?1")?
            .query_row([session], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok((
            serde_json::from_str(&text).unwrap_or(Value::Null),
            compactions as u64,
        ))
    }

    /// Messages (count, tokens) of `session`, or of the whole store when `None`.
    pub fn message_totals(&self, session: Option<i64>) -> StoreResult<(u64, u64)> {
        let (count, tokens): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT count(*), coalesce(sum(tokens), 0) FROM messages \
                 WHERE ?1 IS NULL OR session_id = ?1",
            )?
            .query_row([session], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok((count as u64, tokens as u64))
    }

    /// The summaries of `session`'s current DAG per depth: (depth, count, tokens, descendant
    /// tokens). The current DAG is what the context held after the last compaction and every
    /// summary under it. A replay of the same conversation at another window writes summaries of
    /// its own over the same messages: counted with the current ones, they covered the messages
    /// twice ([`Self::summary_count`] counts them all).
    pub fn summaries_by_depth(&self, session: Option<i64>) -> StoreResult<Vec<(u32, u64, u64, u64)>> {
        let mut statement = self.conn.prepare_cached(
            "WITH RECURSIVE current(id) AS ( \
                 SELECT j.value FROM sessions s, json_each(s.context, '$.summaries') j \
                 WHERE ?1 IS NULL OR s.id = ?1 \
                 UNION \
                 SELECT src.source_id FROM summary_sources src JOIN current ON src.summary_id = current.id \
             ) \
             SELECT depth, count(*), sum(tokens), sum(descendant_tokens) FROM summaries \
             WHERE id IN (SELECT id FROM current) GROUP BY depth ORDER BY depth",
        )?;
        let rows = statement.query_map([session], |row| {
            Ok((
                row.get::<_, u32>(0)?,
                row.get::<_, i64>(1)? as u64,
                row.get::<_, i64>(2)? as u64,
                row.get::<_, i64>(3)? as u64,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Summaries of `session` (of every session for `None`), in its current DAG or not.
    pub fn summary_count(&self, session: Option<i64>) -> StoreResult<u64> {
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM summaries WHERE ?1 IS NULL OR session_id = ?1")?
            .query_row([session], |row| row.get(0))?;
        Ok(count as u64)
    }

    /// Bytes on disk: the database file plus its write-ahead log.
    pub fn bytes_on_disk(&self) -> u64 {
        let size = |path: &Path| std::fs::metadata(path).map_or(0, |meta| meta.len());
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        size(&self.path) + size(Path::new(&wal))
    }

    /// Sessions in the store: (name, messages, compactions).
    pub fn sessions(&self) -> StoreResult<Vec<(String, u64, u64)>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT s.name, (SELECT count(*) FROM messages m WHERE m.session_id = s.id), s.compactions \
             FROM sessions s ORDER BY s.id",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get::<_, i64>(1)? as u64,
                row.get::<_, i64>(2)? as u64,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Makes everything committed so far survive a power loss (at session end): one sync of the
    /// write-ahead log, which holds every transaction since the last checkpoint. Commits during a
    /// session do not sync (synchronous=NORMAL); a checkpoint here would have copied the log into
    /// the file and synced both (25-45 ms at the end of a 10,000-message session on this
    /// machine) while a live agent waits for its next turn. The copy is left to the automatic
    /// checkpoint, which bounds the log at about [`WAL_AUTOCHECKPOINT_PAGES`] pages plus one
    /// transaction's writes, and to closing the store.
    pub fn make_durable(&self) -> StoreResult<()> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let synced = match std::fs::File::open(&wal) {
            Ok(file) => file.sync_data(),
            // Nothing written since the last checkpoint, which synced the file itself.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(error),
        };
        synced.map_err(|error| StoreError {
            message: format!(
                "{}: cannot sync the write-ahead log: {error}",
                Path::new(&wal).display()
            ),
        })
    }
}

/// Inserts `messages` in `tx` (the rows only: [`index_backlog`] indexes them); returns their row
/// ids.
///
/// Another process may have written the same session since this one read it (the same
/// transcript replayed twice at once): a position it filled with the same message is that
/// message, already stored; one it filled with another message leaves this one stored at the
/// session's end, as a variant.
pub fn insert_messages_in(
    tx: &Transaction<'_>,
    session: i64,
    messages: &[NewMessage],
) -> StoreResult<Vec<i64>> {
    let mut ids = Vec::with_capacity(messages.len());
    let mut insert = tx.prepare_cached(
        "INSERT INTO messages (session_id, seq, role, json, tokens, hash, created_at, dated) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (session_id, seq) DO NOTHING",
    )?;
    for message in messages {
        let mut insert_at = |seq: i64| {
            insert.execute(params![
                session,
                seq,
                message.role,
                message.json,
                message.tokens,
                message.hash,
                message.created_at,
                message.dated,
            ])
        };
        let id = if insert_at(message.seq)? == 1 {
            tx.last_insert_rowid()
        } else {
            let (id, hash): (i64, i64) = tx
                .prepare_cached("SELECT id, hash FROM messages WHERE session_id = ?1 AND seq = ?2")?
                .query_row(params![session, message.seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
            if hash == message.hash {
                ids.push(id);
                continue;
            }
            let end: i64 = tx
                .prepare_cached("SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?1")?
                .query_row([session], |r| r.get(0))?;
            insert_at(end)?;
            tx.last_insert_rowid()
        };
        ids.push(id);
    }
    Ok(ids)
}

/// Adds the messages stored since the last catch-up to `messages_fts` and their words to `terms`,
/// in row order, and moves `message_index.indexed_through` past them; returns how many it indexed.
/// Everything that searches messages runs it first, in whichever process: rows are stored
/// without their search text, so that a session pays for the index only if something searches.
///
/// IMMEDIATE transactions of [`INDEX_CHUNK_ROWS`] rows each, which read the watermark again once
/// they hold the write lock: two processes catching up at once index each row once (the second
/// finds nothing left), and a process killed on the way leaves the index and its watermark
/// together, as the last chunk committed them. The text indexed is
/// [`crate::stored_text::search_text_into`] of the stored JSON: what the regex search reads of
/// each row, and what [`crate::text::search_text`] gave when rows were indexed as they were
/// stored.
pub fn index_backlog(conn: &Connection) -> StoreResult<u64> {
    let (mut seen, mut new) = (Terms::default(), Vec::new());
    let mut text = String::new();
    let mut indexed = 0;
    // Without the lock first: a search with nothing to catch up on (most of them) writes nothing.
    while index_state(conn)?.is_some() {
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        let Some(from) = index_state(&tx)? else {
            break;
        };
        let mut through = from;
        {
            let mut rows =
                tx.prepare_cached("SELECT id, json FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2")?;
            let mut index = tx.prepare_cached("INSERT INTO messages_fts (rowid, text) VALUES (?1, ?2)")?;
            let mut add_term = tx.prepare_cached("INSERT OR IGNORE INTO terms (term) VALUES (?1)")?;
            let mut cursor = rows.query(params![from, INDEX_CHUNK_ROWS])?;
            while let Some(row) = cursor.next()? {
                let id: i64 = row.get(0)?;
                let json = row.get_ref(1)?.as_bytes().map_err(|error| {
                    rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(error))
                })?;
                crate::stored_text::search_text_into(json, &mut text);
                index.execute(params![id, text])?;
                seen.add(&text, &mut new);
                for term in new.drain(..) {
                    add_term.execute([&*term])?;
                }
                (through, indexed) = (id, indexed + 1);
            }
        }
        tx.execute("UPDATE message_index SET indexed_through = ?1", [through])?;
        tx.commit()?;
    }
    Ok(indexed)
}

/// Rows indexed in one transaction of [`index_backlog`]: a backlog of a million messages (11 s of
/// indexing) holds the write lock a few tens of milliseconds at a time, not longer than another
/// process's busy timeout.
const INDEX_CHUNK_ROWS: i64 = 2_000;

/// The watermark, when some stored message is above it (`None`: the index holds every message).
fn index_state(conn: &Connection) -> StoreResult<Option<i64>> {
    let (through, last): (i64, i64) = conn
        .prepare_cached(
            "SELECT (SELECT indexed_through FROM message_index), \
             (SELECT coalesce(max(id), 0) FROM messages)",
        )?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok((through < last).then_some(through))
}

/// Records a compaction another engine made in `tx`; the same one recorded twice is kept once.
fn insert_compaction_in(tx: &Transaction<'_>, compaction: &ObservedCompaction) -> StoreResult<()> {
    if compaction.starts_history {
        tx.prepare_cached("DELETE FROM observed_compactions WHERE session_id = ?1")?
            .execute([compaction.session])?;
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO observed_compactions
         (session_id, at_seq, engine, tokens_before, tokens_after, inserted, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        compaction.session,
        compaction.at_seq,
        compaction.engine,
        compaction.tokens_before as i64,
        compaction.tokens_after as i64,
        compaction.inserted_json,
        compaction.created_at,
    ])?;
    Ok(())
}

pub(crate) fn message_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: row.get(0)?,
        session: row.get(1)?,
        seq: row.get(2)?,
        role: row.get(3)?,
        json: row.get(4)?,
        tokens: row.get::<_, i64>(5)? as u64,
        created_at: row.get(6)?,
        dated: row.get(7)?,
    })
}
