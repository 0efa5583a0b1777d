//! The index built late: rows stored without their search text, indexed just before something
//! searches, by whichever process does, each row once.

use std::path::Path;

use ctxhost_engine_abi::{Engine, Fact, FactBody, Message, RawFact, SessionInfo, ToolCall};
use pretty_assertions::assert_eq;
use rusqlite::Connection;
use serde_json::{json, Value};

use super::engine;
use crate::{
    store::{self, NewMessage, Store},
    synthetic, text,
};

/// Stores `rows` (made from `messages`) in session `session` as a build of schema version 4 or
/// older did: each row's search text indexed and its words added to `terms` as it was stored.
pub(super) fn insert_as_version_4_did(
    conn: &mut Connection,
    session: i64,
    messages: &[Message],
    rows: &[NewMessage],
) {
    let tx = conn.transaction().unwrap();
    let ids = insert_rows_as_version_4_did(&tx, session, rows);
    for (message, id) in messages.iter().zip(ids) {
        let search_text = text::search_text(message);
        tx.execute(
            "INSERT INTO messages_fts (rowid, text) VALUES (?1, ?2)",
            rusqlite::params![id, search_text],
        )
        .unwrap();
        for term in text::terms(&search_text) {
            tx.execute("INSERT OR IGNORE INTO terms (term) VALUES (?1)", [&*term])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Stores `rows` in the columns a build of schema version 6 or older had (`dated` came with
/// version 7); their row ids.
fn insert_rows_as_version_4_did(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    rows: &[NewMessage],
) -> Vec<i64> {
    rows.iter()
        .map(|row| {
            tx.execute(
                "INSERT INTO messages (session_id, seq, role, json, tokens, hash, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    session,
                    row.seq,
                    row.role,
                    row.json,
                    row.tokens,
                    row.hash,
                    row.created_at
                ],
            )
            .unwrap();
            tx.last_insert_rowid()
        })
        .collect()
}

fn rows_of(messages: &[Message], first_seq: i64) -> Vec<NewMessage> {
    messages
        .iter()
        .zip(first_seq..)
        .map(|(message, seq)| {
            let json = serde_json::to_string(message).unwrap();
            NewMessage {
                seq,
                role: message.role.as_str(),
                tokens: 1,
                hash: store::hash_json(&json),
                json,
                created_at: 0,
                dated: true,
            }
        })
        .collect()
}

/// How many stored messages the full-text index says hold `word`.
fn fts_matches(path: &Path, word: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
            [word],
            |row| row.get(0),
        )
        .unwrap()
}

fn indexed_through(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("SELECT indexed_through FROM message_index", [], |row| row.get(0))
        .unwrap()
}

fn grep(lcm: &mut crate::Lcm, arguments: Value) -> Vec<String> {
    let found = lcm.handle_tool_call("lcm_grep", &arguments, None);
    let matches = found["matches"].as_array().unwrap_or_else(|| panic!("{found}"));
    matches
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A session of `n` messages whose first user message holds `ZANZIBAR-4711`.
fn session_with_a_first_word(n: usize) -> Vec<Message> {
    let mut messages = synthetic::conversation(11, n, 400);
    let first_user = messages
        .iter()
        .position(|m| m.role == ctxhost_engine_abi::Role::User)
        .unwrap();
    messages[first_user] = Message::user("deploy ZANZIBAR-4711 to staging");
    messages
}

#[test]
fn a_grep_right_after_an_observed_replay_finds_its_first_messages_in_any_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let messages = session_with_a_first_word(600);
    let mut observer = engine(dir.path(), 100_000, json!({}));
    observer.on_session_start("s", &SessionInfo::default()).unwrap();
    observer.observe_idle().unwrap();
    for chunk in messages.chunks(50) {
        let fact = Fact {
            session_id: "s".into(),
            at_message: 0,
            body: FactBody::MessagesAppended {
                messages: chunk.to_vec(),
            },
        };
        let fact = serde_json::to_string(&fact).unwrap();
        observer.observe_raw(&RawFact::new(&fact)).unwrap();
        observer.observe_idle().unwrap();
    }
    observer.on_session_end("s", &[]).unwrap();
    drop(observer);
    // The replay stored every row and indexed none of them: that is what it no longer pays for.
    assert_eq!((fts_matches(&path, "zanzibar"), indexed_through(&path)), (0, 0));

    // A later process (`ctxhost tool … lcm_grep` after `ctxhost run`) finds the first message,
    // by a whole word and by part of one (looked up in `terms`).
    let mut later = engine(dir.path(), 100_000, json!({}));
    later.on_session_start("s", &SessionInfo::default()).unwrap();
    let first = grep(
        &mut later,
        json!({ "pattern": "ZANZIBAR-4711", "mode": "full_text" }),
    );
    assert_eq!(first.len(), 1);
    assert_eq!(grep(&mut later, json!({ "pattern": "ANZIBA" })), first);
    let stored = messages.len() as i64;
    assert_eq!(indexed_through(&path), stored);

    // A second store on the file searches the same index, and indexes nothing again.
    let other = Store::open(&path).unwrap();
    assert_eq!(other.index_backlog().unwrap(), 0);
    assert_eq!(fts_matches(&path, "zanzibar"), 1);
}

#[test]
fn the_active_engine_stores_rows_unindexed_and_its_next_grep_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let messages = session_with_a_first_word(40);
    lcm.ingest(messages.clone()).unwrap();
    assert_eq!(fts_matches(&path, "zanzibar"), 0);
    assert_eq!(
        grep(&mut lcm, json!({ "pattern": "zanzibar", "mode": "full_text" })).len(),
        1
    );
    // Messages stored after a search are indexed by the next one.
    let mut more = messages.clone();
    more.push(Message::user("and then ZANZIBAR-4712 to production"));
    lcm.ingest(more).unwrap();
    assert_eq!(
        grep(&mut lcm, json!({ "pattern": "zanzibar", "mode": "full_text" })).len(),
        2
    );
    assert_eq!(fts_matches(&path, "zanzibar"), 2);
}

#[test]
fn two_catch_ups_at_once_index_each_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let mut writer = Store::open(&path).unwrap();
    let session = writer.ensure_session("s", 0).unwrap();
    let batch = |from: usize| -> Vec<Message> {
        (from..from + 500)
            .map(|n| Message::user(format!("marker number {n}")))
            .collect()
    };
    writer.insert_messages(session, &rows_of(&batch(0), 0)).unwrap();
    // Two processes searching at once: each catches up in its own transaction.
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || Store::open(&path).unwrap().index_backlog().unwrap())
        })
        .collect();
    let indexed: u64 = racers.into_iter().map(|racer| racer.join().unwrap()).sum();
    assert_eq!(indexed, 500);
    assert_eq!(fts_matches(&path, "marker"), 500);
    // More rows, then two catch-ups in turn: the second finds nothing left.
    writer
        .insert_messages(session, &rows_of(&batch(500), 500))
        .unwrap();
    let reader = Store::open(&path).unwrap();
    assert_eq!(
        (reader.index_backlog().unwrap(), writer.index_backlog().unwrap()),
        (500, 0)
    );
    assert_eq!(fts_matches(&path, "marker"), 1_000);
    assert_eq!(fts_matches(&path, "\"number 742\""), 1);
    let terms: i64 = reader
        .connection()
        .query_row("SELECT count(*) FROM terms WHERE term = 'marker'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(terms, 1);
}

/// A backlog larger than one transaction's chunk is indexed whole, every row once, across the
/// chunks; a row written meanwhile by another connection is indexed once too, by whichever
/// catch-up finds it. (That no chunk holds the lock long is not observable here.)
#[test]
fn a_backlog_larger_than_a_chunk_is_indexed_whole_and_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let mut writer = Store::open(&path).unwrap();
    let session = writer.ensure_session("s", 0).unwrap();
    let messages: Vec<Message> = (0..4_500)
        .map(|n| Message::user(format!("marker number {n}")))
        .collect();
    writer.insert_messages(session, &rows_of(&messages, 0)).unwrap();
    let searcher = std::thread::spawn({
        let path = path.clone();
        move || Store::open(&path).unwrap().index_backlog().unwrap()
    });
    // A write while the catch-up may be running.
    let late = vec![Message::user("marker written meanwhile")];
    writer.insert_messages(session, &rows_of(&late, 4_500)).unwrap();
    let first = searcher.join().unwrap();
    let rest = writer.index_backlog().unwrap();
    assert_eq!(first + rest, 4_501);
    assert_eq!(fts_matches(&path, "marker"), 4_501);
    assert_eq!(indexed_through(&path), 4_501);
}

#[test]
fn a_catch_up_that_fails_half_way_leaves_the_index_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let mut store = Store::open(&path).unwrap();
    let session = store.ensure_session("s", 0).unwrap();
    let messages: Vec<Message> = (0..50).map(|n| Message::user(format!("marker {n}"))).collect();
    store.insert_messages(session, &rows_of(&messages, 0)).unwrap();
    // The last step, moving the watermark, fails after every row was added to the index (as a
    // process killed there would stop): nothing of it stays.
    store
        .connection()
        .execute_batch(
            "CREATE TEMP TRIGGER refuse BEFORE UPDATE ON main.message_index \
             BEGIN SELECT RAISE(ABORT, 'killed'); END;",
        )
        .unwrap();
    let error = store.index_backlog().unwrap_err();
    assert!(error.message.contains("killed"), "{error}");
    assert_eq!((fts_matches(&path, "marker"), indexed_through(&path)), (0, 0));
    store.connection().execute_batch("DROP TRIGGER refuse").unwrap();
    assert_eq!(store.index_backlog().unwrap(), 50);
    assert_eq!((fts_matches(&path, "marker"), indexed_through(&path)), (50, 50));
}

/// A file of version 4 or 5 indexed a call's arguments as JSON: a word after a `\n` escape was
/// `nword` to the index. Opened by this build, its index is emptied and built again by the next
/// search, each row once, with the arguments as they read.
#[test]
fn a_version_4_file_is_indexed_again_once_with_the_arguments_as_they_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let mut messages = session_with_a_first_word(80);
    messages.push(Message::assistant_calls(vec![ToolCall::new(
        "c1",
        "write_file",
        r#"{"path": "notes.md", "content": "line one\nBORNEO-12 in the second line"}"#,
    )]));
    {
        let mut conn = Connection::open(&path).unwrap();
        store::migrate_to(&mut conn, 0, 4).unwrap();
        conn.execute("INSERT INTO sessions (name, created_at) VALUES ('s', 0)", [])
            .unwrap();
        let (before, call) = messages.split_at(messages.len() - 1);
        insert_as_version_4_did(&mut conn, 1, before, &rows_of(before, 0));
        // The call as version 4 indexed it: its arguments' JSON, escapes and all.
        let tx = conn.transaction().unwrap();
        let ids = insert_rows_as_version_4_did(&tx, 1, &rows_of(call, before.len() as i64));
        tx.execute(
            "INSERT INTO messages_fts (rowid, text) VALUES (?1, ?2)",
            rusqlite::params![
                ids[0],
                r#"write_file {"content": "line one\nBORNEO-12 in the second line"}"#
            ],
        )
        .unwrap();
        tx.execute("INSERT OR IGNORE INTO terms (term) VALUES ('nborneo')", [])
            .unwrap();
        tx.commit().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let version: i64 = store
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, store::SCHEMA_VERSION);
    assert_eq!((indexed_through(&path), fts_matches(&path, "zanzibar")), (0, 0));
    assert!(all_terms(&path).is_empty());
    drop(store);
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    assert_eq!(
        grep(&mut lcm, json!({ "pattern": "BORNEO-12", "mode": "full_text" })).len(),
        1
    );
    assert_eq!(indexed_through(&path), messages.len() as i64);
    assert_eq!(fts_matches(&path, "zanzibar"), 1, "indexed once, not twice");
    let terms = all_terms(&path);
    assert!(terms.contains(&"borneo".to_owned()) && !terms.contains(&"nborneo".to_owned()));
    assert_eq!(grep(&mut lcm, json!({ "pattern": "ORNEO" })).len(), 1);
}

/// Every (word, row, position) the full-text index holds.
fn index_contents(path: &Path) -> Vec<(String, i64, i64)> {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, messages_fts, instance)")
        .unwrap();
    let mut statement = conn
        .prepare("SELECT term, doc, offset FROM temp.vocab ORDER BY doc, offset")
        .unwrap();
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn all_terms(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut statement = conn.prepare("SELECT term FROM terms ORDER BY term").unwrap();
    let rows = statement.query_map([], |row| row.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn the_index_built_later_is_the_one_built_as_rows_were_stored() {
    let mut messages = synthetic::conversation(5, 200, 600);
    let mut call = Message::assistant_calls(vec![ToolCall::new(
        "c7",
        "terminal",
        r#"{"command":"grep -R \"Größe\" src/"}"#,
    )]);
    call.extra
        .insert("reasoning".into(), json!({"summary": ["ÉTÉ-2024"]}));
    messages.push(call);
    messages.push(Message::tool(
        "c7",
        "src/a.rs:3: let größe = 1;\tÉTÉ-2024\n🦀 done",
    ));
    let (late, early) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Observed as the plugin is (the bytes the host sent), then indexed by a search.
    let mut lcm = engine(late.path(), 100_000, json!({}));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let fact = Fact {
        session_id: "s".into(),
        at_message: 0,
        body: FactBody::MessagesAppended {
            messages: messages.clone(),
        },
    };
    lcm.observe_raw(&RawFact::new(&serde_json::to_string(&fact).unwrap()))
        .unwrap();
    grep(&mut lcm, json!({ "pattern": "größe" }));
    drop(lcm);
    // As version 4 indexed them.
    {
        let mut conn = Connection::open(early.path().join("lcm.sqlite")).unwrap();
        store::migrate_to(&mut conn, 0, 4).unwrap();
        conn.execute("INSERT INTO sessions (name, created_at) VALUES ('s', 0)", [])
            .unwrap();
        insert_as_version_4_did(&mut conn, 1, &messages, &rows_of(&messages, 0));
    }
    let (late, early) = (late.path().join("lcm.sqlite"), early.path().join("lcm.sqlite"));
    let contents = index_contents(&late);
    assert!(contents.len() > 10_000, "{}", contents.len());
    assert!(contents == index_contents(&early), "the indexes differ");
    assert_eq!(all_terms(&late), all_terms(&early));
}
