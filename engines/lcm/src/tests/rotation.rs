//! Hermes with `compression.in_place: false` names the session anew after each compaction
//! (`on_session_start(new, boundary_reason: "compression", old_session_id: old)`): the new name
//! continues the same conversation in the store (explore-hermes FINDINGS.md, finding 4).

use ctxhost_engine_abi::{CompressRequest, Engine, Message, SessionInfo};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{assert_valid_compaction, engine};
use crate::Lcm;

/// A system message, then `turns` user questions of about 100 tokens each with short answers,
/// numbered from `from`; the first question holds a sentinel.
fn chat(from: usize, turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are terse.")];
    for i in from..from + turns {
        let sentinel = if i == 0 { "issue #700 " } else { "" };
        messages.push(Message::user(format!(
            "{sentinel}question {i}: {}",
            "words ".repeat(65)
        )));
        messages.push(Message::assistant(format!("answer {i}")));
    }
    messages
}

fn after_compaction(old: &str) -> SessionInfo {
    SessionInfo {
        boundary_reason: Some("compression".to_owned()),
        old_session_id: Some(old.to_owned()),
        ..SessionInfo::default()
    }
}

fn grep(engine: &mut Lcm, pattern: &str) -> usize {
    let found = engine.handle_tool_call("lcm_grep", &json!({ "pattern": pattern }), None);
    found["matches"].as_array().map_or(0, Vec::len)
}

fn count_rows(engine: &mut Lcm, table: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table}");
    let store = engine.store().unwrap();
    store.connection().query_row(&sql, [], |row| row.get(0)).unwrap()
}

/// Two compactions, each followed by Hermes renaming the session; returns the final context and
/// every message the conversation had.
fn rotate_twice(engine: &mut Lcm) -> (Vec<Message>, Vec<Message>) {
    engine
        .on_session_start("hermes-0", &SessionInfo::default())
        .unwrap();
    let mut all = chat(0, 40);
    let mut context = all.clone();
    for (old, new, from) in [("hermes-0", "hermes-1", 40), ("hermes-1", "hermes-2", 80)] {
        let compacted = engine
            .compress(context.clone(), &CompressRequest::default())
            .unwrap();
        assert_valid_compaction(&context, &compacted);
        engine.on_session_start(new, &after_compaction(old)).unwrap();
        let more: Vec<Message> = chat(from, 40).into_iter().skip(1).collect();
        all.extend(more.iter().cloned());
        context = compacted;
        context.extend(more);
    }
    (context, all)
}

#[test]
fn a_session_renamed_at_each_compaction_keeps_its_whole_history_under_the_new_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    let (context, all) = rotate_twice(&mut engine);
    engine
        .compress(context.clone(), &CompressRequest::default())
        .unwrap();

    assert_eq!(engine.session_name(), "hermes-2");
    assert_eq!(
        grep(&mut engine, "issue #700"),
        1,
        "found from the first name's messages"
    );
    let overview = engine.handle_tool_call("lcm_describe", &json!({}), None);
    assert_eq!(overview["messages"], all.len() as u64);
    // One conversation in the store, each message once: the compacted contexts the new names
    // started with were aligned with what was stored.
    assert_eq!(count_rows(&mut engine, "sessions"), 1);
    assert_eq!(count_rows(&mut engine, "messages"), all.len() as i64);
}

#[test]
fn another_process_finds_the_whole_history_under_the_new_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    let (context, all) = rotate_twice(&mut first);
    first.on_session_end("hermes-2", &context).unwrap();
    drop(first);

    let mut second = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    second
        .on_session_start("hermes-2", &SessionInfo::default())
        .unwrap();
    assert_eq!(grep(&mut second, "issue #700"), 1);
    second.ingest(context).unwrap();
    assert_eq!(count_rows(&mut second, "messages"), all.len() as i64);
}

#[test]
fn a_new_session_that_is_not_a_compaction_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    rotate_twice(&mut engine);
    let new = SessionInfo {
        boundary_reason: Some("new_session".to_owned()),
        old_session_id: Some("hermes-2".to_owned()),
        ..SessionInfo::default()
    };
    engine.on_session_start("hermes-3", &new).unwrap();
    assert_eq!(grep(&mut engine, "issue #700"), 0);
    // A compaction boundary naming a session lcm is not in continues nothing either.
    engine
        .on_session_start("hermes-4", &after_compaction("somebody-else"))
        .unwrap();
    assert_eq!(grep(&mut engine, "issue #700"), 0);
    let everywhere = engine.handle_tool_call(
        "lcm_grep",
        &json!({ "pattern": "issue #700", "all_sessions": true }),
        None,
    );
    assert_eq!(everywhere["matches"].as_array().map(Vec::len), Some(1));
    assert_eq!(engine.get_status()["session"], Value::from("hermes-4"));
}

#[test]
fn a_version_3_store_gains_session_names_and_keeps_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.sqlite");
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        crate::store::migrate_to(&mut conn, 0, 3).unwrap();
        conn.execute("INSERT INTO sessions (name, created_at) VALUES ('old', 0)", [])
            .unwrap();
    }
    let store = crate::Store::open(&path).unwrap();
    let old = store.find_session("old").unwrap().unwrap();
    assert!(store.alias_session("new", old, 0).unwrap());
    assert_eq!(store.find_session("new").unwrap(), Some(old));
    assert!(
        !store.alias_session("old", old + 1, 0).unwrap(),
        "a session's own name is never another's"
    );
}
