//! The engine in process, over real SQLite files in temporary directories.

mod grep_budget;
mod lazy_index;
mod observing;
mod pacing;
mod property;
mod rotation;
mod takeover;
mod tools;

use std::path::Path;

use ctxhost_engine_abi::{CompressRequest, Engine, Host, Message, ModelInfo, Role, SessionInfo, ToolCall};
use ctxhost_engine_kit::{sequence::find_sequence_problems, tokens::estimate_messages_tokens};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::{assemble, synthetic, Lcm};

/// An engine on the database `dir/lcm.sqlite` with `window` tokens and `config` merged in.
pub(crate) fn engine(dir: &Path, window: u64, config: Value) -> Lcm {
    let mut block = json!({ "database": dir.join("lcm.sqlite") });
    if let (Value::Object(block), Value::Object(extra)) = (&mut block, config) {
        block.extend(extra);
    }
    let mut engine = Lcm::new(&block, Host::detached()).expect("valid config");
    engine.update_model(&ModelInfo {
        context_length: window,
        ..ModelInfo::default()
    });
    engine
}

/// Checks what the host checks of a compaction, and that it did not grow the context.
pub(crate) fn assert_valid_compaction(input: &[Message], output: &[Message]) {
    let known: Vec<String> = find_sequence_problems(input)
        .iter()
        .map(|p| p.subject())
        .collect();
    let new: Vec<_> = find_sequence_problems(output)
        .into_iter()
        .filter(|p| !known.contains(&p.subject()))
        .collect();
    assert!(new.is_empty(), "invalid sequence: {new:?}");
    if let Some(system) = input.first().filter(|m| m.role == Role::System) {
        let original = assemble::without_note(system);
        assert_eq!(output[0].role, Role::System);
        assert!(output[0].text().starts_with(original.text().as_ref()));
    }
    if let Some(last_user) = input.iter().rev().find(|m| m.role == Role::User) {
        assert!(
            output.iter().any(|m| m == last_user),
            "the last user message was lost"
        );
    }
    assert!(
        estimate_messages_tokens(output) <= estimate_messages_tokens(input),
        "the context grew: {} -> {}",
        estimate_messages_tokens(input),
        estimate_messages_tokens(output)
    );
}

/// Feeds `messages` one at a time as an agent loop would, compacting (and checking the result)
/// whenever the preflight says so before an assistant message. Returns the final context and
/// how many compactions ran.
pub(crate) fn replay(engine: &mut Lcm, messages: &[Message]) -> (Vec<Message>, usize) {
    let mut context: Vec<Message> = Vec::new();
    let mut compactions = 0;
    for message in messages {
        if message.role == Role::Assistant && engine.should_compress_preflight(&context) {
            let compacted = engine
                .compress(context.clone(), &CompressRequest::default())
                .expect("compaction succeeds");
            assert_valid_compaction(&context, &compacted);
            context = compacted;
            compactions += 1;
        }
        context.push(message.clone());
    }
    (context, compactions)
}

fn stored_jsons(engine: &mut Lcm, session: &str) -> Vec<String> {
    let store = engine.store().unwrap();
    let mut statement = store
        .connection()
        .prepare("SELECT m.json FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.name = ?1 ORDER BY m.seq")
        .unwrap();
    let rows = statement.query_map([session], |row| row.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn jsons(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

#[test]
fn fts5_is_compiled_into_the_bundled_sqlite() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let enabled: i64 = conn
        .query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(enabled, 1);
}

#[test]
fn a_long_session_compacts_several_times_and_stores_every_message_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 6_000, json!({ "fresh_tail": 8 }));
    engine.on_session_start("s1", &SessionInfo::default()).unwrap();
    let messages = synthetic::conversation(7, 120, 1_500);
    let (context, compactions) = replay(&mut engine, &messages);
    assert!(compactions >= 3, "only {compactions} compactions");
    engine.on_session_end("s1", &context).unwrap();
    assert_eq!(stored_jsons(&mut engine, "s1"), jsons(&messages));
}

#[test]
fn the_same_session_replayed_again_is_not_counted_as_more_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let messages = synthetic::conversation(7, 120, 1_500);
    let mut counted = Vec::new();
    for _ in 0..3 {
        let mut engine = engine(dir.path(), 6_000, json!({ "fresh_tail": 8 }));
        engine.on_session_start("s1", &SessionInfo::default()).unwrap();
        let (context, compactions) = replay(&mut engine, &messages);
        engine.on_session_end("s1", &context).unwrap();
        let described = engine.handle_tool_call("lcm_describe", &json!({}), None);
        counted.push((compactions, described["compactions"].clone()));
    }
    let first = counted[0].0;
    assert!(first >= 3, "{counted:?}");
    assert!(
        counted
            .iter()
            .all(|(ran, said)| *ran == first && *said == json!(first)),
        "{counted:?}"
    );
}

#[test]
fn compaction_leaves_headroom_so_the_next_turn_does_not_fire_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 8_000, json!({ "fresh_tail": 16 }));
    engine.on_session_start("s", &SessionInfo::default()).unwrap();
    let messages = synthetic::conversation(3, 60, 1_200);
    let mut context = Vec::new();
    let mut fired_in_a_row = 0;
    let mut previous_fired = false;
    for message in &messages {
        let mut fired = false;
        if message.role == Role::Assistant && engine.should_compress_preflight(&context) {
            context = engine
                .compress(context.clone(), &CompressRequest::default())
                .unwrap();
            fired = true;
        }
        if fired && previous_fired {
            fired_in_a_row += 1;
        }
        previous_fired = fired;
        context.push(message.clone());
    }
    assert_eq!(fired_in_a_row, 0, "compaction fired on two model calls in a row");
}

#[test]
fn a_long_session_in_a_small_window_stays_under_the_threshold_at_its_defaults() {
    // Summaries of mixed depths, fewer than `fan_in` of each, once took the whole room: every
    // compaction then found nothing to condense and the context went over the window.
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 8_000, json!({}));
    engine.on_session_start("s", &SessionInfo::default()).unwrap();
    let messages = synthetic::conversation(5, 800, 2_000);
    let threshold = engine.threshold();
    let mut context: Vec<Message> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        if message.role == Role::Assistant && engine.should_compress_preflight(&context) {
            let compacted = engine
                .compress(context.clone(), &CompressRequest::default())
                .unwrap();
            assert_valid_compaction(&context, &compacted);
            let tokens = estimate_messages_tokens(&compacted);
            assert!(
                tokens < threshold,
                "before message {at}: {tokens} tokens after compaction, threshold {threshold}"
            );
            context = compacted;
        }
        context.push(message.clone());
    }
}

/// One request, then turns of two parallel calls whose first output (a log's tail) is larger
/// than the compaction's target: the tail kept with its whole tool groups cannot fit, so the
/// oldest groups, and the newest when it alone is that large, are summarised. Every compaction
/// changes the context and leaves it under the threshold; none gives it back as it was.
#[test]
fn tool_outputs_large_next_to_the_window_are_summarised_and_the_context_stays_bounded() {
    for (window, log_chars) in [
        (8_000, 21_000),
        (8_000, 42_000),
        (12_000, 42_000),
        (16_000, 42_000),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(dir.path(), window, json!({}));
        engine.on_session_start("s", &SessionInfo::default()).unwrap();
        let threshold = engine.threshold();
        let mut messages = vec![Message::user("The gateway times out under load: find why.")];
        for turn in 0..8 {
            let (log, conf) = (format!("log{turn}"), format!("conf{turn}"));
            messages.push(Message::assistant_calls(vec![
                ToolCall::new(
                    &log,
                    "terminal",
                    r#"{"command":"tail -n 220 /var/log/nginx/error.log"}"#,
                ),
                ToolCall::new(
                    &conf,
                    "read_file",
                    format!(r#"{{"path":"/etc/nginx/conf.d/api{turn}.conf"}}"#),
                ),
            ]));
            let line = format!("2026-11-21T09:0{turn}:00Z upstream timed out (110: Connection timed out) client: 10.0.7.{turn}\n");
            messages.push(Message::tool(&log, line.repeat(log_chars / line.len())));
            messages.push(Message::tool(
                &conf,
                format!("server {{ listen 80; proxy_read_timeout {turn}0s; }}\n").repeat(40),
            ));
        }
        messages.push(Message::assistant("The upstream read timeout is too short."));
        let mut context: Vec<Message> = Vec::new();
        let mut compactions = 0;
        for (at, message) in messages.iter().enumerate() {
            if message.role == Role::Assistant && engine.should_compress_preflight(&context) {
                let compacted = engine
                    .compress(context.clone(), &CompressRequest::default())
                    .unwrap();
                assert_valid_compaction(&context, &compacted);
                assert_ne!(
                    compacted, context,
                    "window {window}, before message {at}: nothing compacted"
                );
                let tokens = estimate_messages_tokens(&compacted);
                assert!(
                    tokens < threshold,
                    "window {window}, before message {at}: {tokens} tokens after compaction, threshold {threshold}"
                );
                context = compacted;
                compactions += 1;
            }
            context.push(message.clone());
        }
        assert!(compactions >= 4, "window {window}: {compactions} compactions");
        assert_eq!(engine.get_status()["paused"], false, "window {window}");
    }
}

#[test]
fn feeding_the_same_prefix_twice_stores_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let messages = synthetic::conversation(11, 50, 1_000);
    let mut first = engine(dir.path(), 5_000, json!({ "fresh_tail": 6 }));
    first.on_session_start("s", &SessionInfo::default()).unwrap();
    let (context, _) = replay(&mut first, &messages);
    first.on_session_end("s", &context).unwrap();
    let stored = stored_jsons(&mut first, "s");
    let summaries = count(&mut first, "summaries");

    // The same engine again, then a second process (a new engine on the same file).
    first.on_session_start("s", &SessionInfo::default()).unwrap();
    let (again, _) = replay(&mut first, &messages);
    first.on_session_end("s", &again).unwrap();
    let mut second = engine(dir.path(), 5_000, json!({ "fresh_tail": 6 }));
    second.on_session_start("s", &SessionInfo::default()).unwrap();
    let (third, _) = replay(&mut second, &messages[..30]);
    second.on_session_end("s", &third).unwrap();

    assert_eq!(stored_jsons(&mut second, "s"), stored);
    assert_eq!(
        count(&mut second, "summaries"),
        summaries,
        "a replay wrote summaries again"
    );
    assert_eq!(again, context);
}

pub(crate) fn count(engine: &mut Lcm, table: &str) -> i64 {
    let store = engine.store().unwrap();
    store
        .connection()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0))
        .unwrap()
}

#[test]
fn a_second_engine_sees_the_store_and_sessions_stay_separate() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = engine(dir.path(), 5_000, json!({}));
    first.on_session_start("alpha", &SessionInfo::default()).unwrap();
    let alpha = vec![
        Message::system("sys"),
        Message::user("alpha-only ZEBRA-17 request"),
    ];
    first.on_session_end("alpha", &alpha).unwrap();
    first.on_session_start("beta", &SessionInfo::default()).unwrap();
    first
        .on_session_end("beta", &[Message::system("sys"), Message::user("beta request")])
        .unwrap();

    let mut second = engine(dir.path(), 5_000, json!({}));
    second.on_session_start("alpha", &SessionInfo::default()).unwrap();
    let found = second.handle_tool_call("lcm_grep", &json!({ "pattern": "ZEBRA-17" }), None);
    assert_eq!(found["matches"].as_array().unwrap().len(), 1, "{found}");
    second.on_session_start("beta", &SessionInfo::default()).unwrap();
    let found = second.handle_tool_call("lcm_grep", &json!({ "pattern": "ZEBRA-17" }), None);
    assert_eq!(found["matches"].as_array().unwrap().len(), 0, "{found}");
    let everywhere = second.handle_tool_call(
        "lcm_grep",
        &json!({ "pattern": "ZEBRA-17", "all_sessions": true }),
        None,
    );
    assert_eq!(everywhere["matches"].as_array().unwrap().len(), 1, "{everywhere}");
}

#[test]
fn reset_starts_a_new_session_in_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 5_000, json!({}));
    engine.on_session_start("s", &SessionInfo::default()).unwrap();
    engine.handle_tool_call(
        "lcm_status",
        &json!({}),
        Some(&[Message::user("before the reset")]),
    );
    engine.on_session_reset();
    assert_eq!(engine.session_name(), "s#reset-1");
    let status = engine.handle_tool_call("lcm_status", &json!({}), Some(&[Message::user("after")]));
    assert_eq!(status["messages"], 1, "{status}");
    assert_eq!(status["messages_in_store"], 2, "{status}");
}

#[test]
fn nothing_to_compact_gives_the_context_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 100_000, json!({}));
    let messages = vec![
        Message::system("sys"),
        Message::user("hello"),
        Message::assistant("hi"),
    ];
    let compacted = engine
        .compress(messages.clone(), &CompressRequest::default())
        .unwrap();
    assert_eq!(compacted, messages);
}

#[test]
fn a_newer_schema_is_refused_with_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let error = crate::Store::open(&path).err().unwrap();
    assert!(error.message.contains("schema version 99 is newer"), "{error}");
}

#[test]
fn a_version_2_store_is_migrated_and_keeps_its_messages_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let messages = synthetic::conversation(3, 6, 400);
    let rows: Vec<_> = messages
        .iter()
        .enumerate()
        .map(|(seq, message)| {
            let json = serde_json::to_string(message).unwrap();
            crate::store::NewMessage {
                seq: seq as i64,
                role: message.role.as_str(),
                tokens: 1,
                hash: crate::store::hash_json(&json),
                json,
                created_at: 0,
                dated: true,
            }
        })
        .collect();
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        crate::store::migrate_to(&mut conn, 0, 2).unwrap();
        conn.execute("INSERT INTO sessions (name, created_at) VALUES ('old', 0)", [])
            .unwrap();
        lazy_index::insert_as_version_4_did(&mut conn, 1, &messages, &rows);
    }
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("old", &SessionInfo::default()).unwrap();
    let conn = lcm.store().unwrap().connection();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    let automerge: i64 = conn
        .query_row(
            "SELECT v FROM messages_fts_config WHERE k = 'automerge'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((version, automerge), (crate::store::SCHEMA_VERSION, 16));
    assert_eq!(stored_jsons(&mut lcm, "old"), jsons(&messages));
    let user = messages.iter().find(|m| m.role == Role::User).unwrap();
    let word = user.text().split_whitespace().last().unwrap().to_owned();
    let found = lcm.handle_tool_call("lcm_grep", &json!({ "pattern": word, "mode": "full_text" }), None);
    assert!(!found["matches"].as_array().unwrap().is_empty(), "{found}");
    // Ingesting the same messages again into the migrated file stores nothing new.
    lcm.ingest(messages.clone()).unwrap();
    assert_eq!(count(&mut lcm, "messages"), messages.len() as i64);
}

#[test]
fn the_store_is_in_wal_mode_at_the_current_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::Store::open(&dir.path().join("sub/lcm.sqlite")).unwrap();
    let mode: String = store
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    let version: i64 = store
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!((mode.as_str(), version), ("wal", crate::store::SCHEMA_VERSION));
}

#[test]
fn stores_opened_at_once_on_one_new_file_all_open_in_wal_mode() {
    // Two replays started together on a new store both switch it to WAL; SQLite refuses one
    // of them at once ("database is locked") instead of waiting, since each holds a read lock.
    for round in 0..30 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.sqlite");
        let start = std::sync::Barrier::new(4);
        let modes: Vec<Result<String, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        let store = crate::Store::open(&path).map_err(|e| e.message)?;
                        store
                            .connection()
                            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for mode in modes {
            assert_eq!(mode.as_deref(), Ok("wal"), "round {round}");
        }
    }
}

#[test]
fn a_version_1_store_is_migrated_keeping_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    let config = json!({ "database": path, "fresh_tail": 2 });
    let mut engine = Lcm::new(&config, Host::detached()).unwrap();
    engine.on_session_start("old", &SessionInfo::default()).unwrap();
    engine
        .record_appended(&[Message::system("s"), Message::user("kept across the upgrade")])
        .unwrap();
    engine.on_session_end("old", &[]).unwrap();
    drop(engine);
    // What a version-1 build left: its rows indexed as they were stored, no table for observed
    // compactions, for session names, nor for how far the index goes.
    crate::Store::open(&path).unwrap().index_backlog().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE observed_compactions; DROP TABLE session_aliases; DROP TABLE message_index; \
         ALTER TABLE messages DROP COLUMN dated; ALTER TABLE summaries DROP COLUMN dated; \
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);
    let store = crate::Store::open(&path).unwrap();
    let version: i64 = store
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, crate::store::SCHEMA_VERSION);
    assert_eq!(store.observed_compactions(None).unwrap(), 0);
    assert_eq!(store.message_totals(None).unwrap().0, 2);
    // Its rows were indexed with the arguments' JSON: the next search indexes both again, once.
    assert_eq!(store.index_backlog().unwrap(), 2);
    assert_eq!(store.index_backlog().unwrap(), 0);
    let indexed: i64 = store
        .connection()
        .query_row(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'upgrade'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 1);
}
