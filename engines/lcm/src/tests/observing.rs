//! lcm observing: what the session appends is stored exactly, writes grouped only while the host
//! has more queued, and nothing left waiting when anything reads the store or the engine goes.

use std::path::Path;

use ctxhost_engine_abi::{Engine, Fact, FactBody, Message, RawFact, SessionInfo, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{engine, jsons};
use crate::{observing::MAX_PENDING, synthetic};

fn appended(messages: &[Message]) -> Fact {
    Fact {
        session_id: "s".into(),
        at_message: 0,
        body: FactBody::MessagesAppended {
            messages: messages.to_vec(),
        },
    }
}

/// The messages of session `name` as another connection to the file sees them.
fn on_disk(dir: &Path, name: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(dir.join("lcm.sqlite")).unwrap();
    let mut statement = conn
        .prepare("SELECT m.json FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.name = ?1 ORDER BY m.seq")
        .unwrap();
    let rows = statement.query_map([name], |row| row.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// lcm in session `session` of a fresh store, told by the host that its queue runs dry (so it
/// hands appends to its writer thread).
fn observing_from_idle(session: &str) -> (tempfile::TempDir, crate::Lcm) {
    let dir = tempfile::tempdir().unwrap();
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start(session, &SessionInfo::default()).unwrap();
    lcm.observe_idle().unwrap();
    (dir, lcm)
}

#[test]
fn appends_wait_only_while_the_host_has_more_queued() {
    let dir = tempfile::tempdir().unwrap();
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let messages = synthetic::conversation(7, 12, 300);
    // Before the host has said it tells lcm when its queue runs dry: every fact at once.
    lcm.observe(&appended(&messages[..3])).unwrap();
    assert_eq!(on_disk(dir.path(), "s"), jsons(&messages[..3]));
    lcm.observe_idle().unwrap();
    lcm.observe(&appended(&messages[3..5])).unwrap();
    lcm.observe(&appended(&messages[5..6])).unwrap();
    lcm.settle().unwrap();
    assert_eq!(
        on_disk(dir.path(), "s").len(),
        3,
        "written when the queue runs dry"
    );
    assert_eq!(lcm.get_status()["stored_messages"], 6);
    lcm.observe_idle().unwrap();
    // Handed to the writer thread, which has written them once lcm has waited for it.
    lcm.settle().unwrap();
    assert_eq!(on_disk(dir.path(), "s"), jsons(&messages[..6]));
    // A tool answers from everything observed, the waiting messages included.
    lcm.observe(&appended(&[Message::user("deploy KEYWORD-4711 now")]))
        .unwrap();
    let found = lcm.handle_tool_call("lcm_grep", &json!({ "pattern": "KEYWORD-\\d+" }), None);
    assert_eq!(found["matches"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(on_disk(dir.path(), "s").len(), 7);
    // The same messages observed again (the session replayed) store nothing new.
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    lcm.observe(&appended(&messages[..6])).unwrap();
    lcm.observe_idle().unwrap();
    assert_eq!(on_disk(dir.path(), "s").len(), 7);
}

#[test]
fn waiting_appends_are_written_when_too_many_the_session_changes_or_the_engine_goes() {
    let (dir, mut lcm) = observing_from_idle("first");
    let messages: Vec<Message> = (0..MAX_PENDING + 10)
        .map(|i| Message::user(format!("message {i}")))
        .collect();
    for message in &messages {
        lcm.observe(&appended(std::slice::from_ref(message))).unwrap();
    }
    // Waiting for the writer thread writes nothing that still waits in memory.
    lcm.settle().unwrap();
    assert_eq!(on_disk(dir.path(), "first"), jsons(&messages[..MAX_PENDING]));
    lcm.on_session_start("second", &SessionInfo::default()).unwrap();
    assert_eq!(on_disk(dir.path(), "first"), jsons(&messages));
    lcm.observe(&appended(&messages[..2])).unwrap();
    lcm.on_session_reset();
    assert_eq!(on_disk(dir.path(), "second"), jsons(&messages[..2]));
    lcm.observe(&appended(&messages[2..4])).unwrap();
    drop(lcm);
    assert_eq!(on_disk(dir.path(), "second#reset-1"), jsons(&messages[2..4]));
}

/// Once no process has the store open it is one file: copied alone (as a user backs it up), it
/// holds every message the session stored, with no write-ahead log left beside it.
#[test]
fn a_closed_store_is_one_file_that_holds_everything() {
    let (dir, mut lcm) = observing_from_idle("s");
    let messages = synthetic::conversation(11, 400, 300);
    for chunk in messages.chunks(50) {
        lcm.observe(&appended(chunk)).unwrap();
    }
    lcm.on_session_end("s", &messages).unwrap();
    drop(lcm);
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "lcm.sqlite")
        .collect();
    assert_eq!(leftovers, Vec::<String>::new(), "files beside the closed store");
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(dir.path().join("lcm.sqlite"), copy.path().join("lcm.sqlite")).unwrap();
    assert_eq!(on_disk(copy.path(), "s"), jsons(&messages));
}

/// The rows of session `name`, every column but the time, as another connection sees them.
fn rows_on_disk(dir: &Path, name: &str) -> Vec<(i64, String, String, i64, i64)> {
    let conn = rusqlite::Connection::open(dir.join("lcm.sqlite")).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT m.seq, m.role, m.json, m.tokens, m.hash FROM messages m JOIN sessions s \
             ON s.id = m.session_id WHERE s.name = ?1 ORDER BY m.seq",
        )
        .unwrap();
    let rows = statement
        .query_map([name], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn a_fact_read_raw_stores_and_finds_exactly_what_the_parsed_fact_does() {
    let mut messages = synthetic::conversation(3, 40, 400);
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
    // As the host sends it: the fact written by serde_json.
    let fact = serde_json::to_string(&appended(&messages)).unwrap();
    let (parsed_dir, raw_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut parsed = engine(parsed_dir.path(), 100_000, json!({}));
    let mut raw = engine(raw_dir.path(), 100_000, json!({}));
    for lcm in [&mut parsed, &mut raw] {
        lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    }
    parsed.observe(&serde_json::from_str(&fact).unwrap()).unwrap();
    raw.observe_raw(&RawFact::new(&fact)).unwrap();
    let stored = rows_on_disk(raw_dir.path(), "s");
    assert_eq!(stored, rows_on_disk(parsed_dir.path(), "s"));
    assert_eq!(
        stored.iter().map(|row| row.2.clone()).collect::<Vec<_>>(),
        jsons(&messages)
    );
    // Matches compared without their time (each store wrote its rows at its own moment).
    let matches = |lcm: &mut crate::Lcm, arguments: &serde_json::Value| -> Vec<serde_json::Value> {
        let found = lcm.handle_tool_call("lcm_grep", arguments, None);
        let mut matches = found["matches"].as_array().cloned().unwrap_or_default();
        for found in &mut matches {
            found.as_object_mut().unwrap().retain(|key, _| key != "time");
        }
        matches
    };
    for (pattern, mode) in [("ÉTÉ-2024", "full_text"), ("größe", "regex"), ("TÉ-20", "regex")] {
        let arguments = json!({ "pattern": pattern, "mode": mode });
        let found = matches(&mut raw, &arguments);
        assert_eq!(found, matches(&mut parsed, &arguments), "{pattern}");
        assert!(!found.is_empty(), "{pattern}");
    }
    // The same messages in the context of lcm as the active engine: aligned, nothing new stored.
    let context: Vec<Message> = messages.clone();
    raw.handle_tool_call("lcm_status", &json!({}), Some(&context));
    assert_eq!(rows_on_disk(raw_dir.path(), "s").len(), messages.len());
}

#[test]
fn a_raw_fact_whose_message_is_not_a_message_is_refused_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let fact = r#"{"session_id":"s","at_message":0,"kind":"messages_appended","messages":[{"role":"user","content":"fine"},{"content":"no role"}]}"#;
    let error = lcm.observe_raw(&RawFact::new(fact)).unwrap_err();
    assert_eq!(
        error.message.as_str(),
        "fact: a message: missing field `role` at line 1 column 21"
    );
    assert!(on_disk(dir.path(), "s").is_empty());
}

#[test]
fn a_write_refused_on_the_writer_thread_is_reported_and_loses_nothing() {
    let (dir, mut lcm) = observing_from_idle("s");
    lcm.observe(&appended(&[Message::user("before")])).unwrap();
    lcm.observe_idle().unwrap();
    lcm.settle().unwrap();
    // Another connection makes every insertion fail, as a full disk or a lost file would.
    let other = rusqlite::Connection::open(dir.path().join("lcm.sqlite")).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
    let mut accepted = vec![Message::user("before")];
    let mut error = None;
    for i in 0..3 * MAX_PENDING {
        let message = Message::user(format!("message {i}"));
        match lcm.observe(&appended(std::slice::from_ref(&message))) {
            Ok(()) => accepted.push(message),
            Err(refused) => {
                error = Some(refused);
                break;
            }
        }
        if i % 700 == 699 {
            // The queue ran dry now and then: those go to the thread too.
            lcm.observe_idle().unwrap_or_else(|refused| error = Some(refused));
        }
    }
    let error = error
        .or_else(|| lcm.settle().err())
        .expect("the refusal is reported");
    assert!(error.message.contains("refused by the test"), "{}", error.message);
    // The first batch went to the thread when the queue first ran dry, after 700 messages.
    assert!(
        accepted.len() > 700,
        "reported before any write: {}",
        accepted.len()
    );
    assert_eq!(
        on_disk(dir.path(), "s"),
        ["{\"role\":\"user\",\"content\":\"before\"}"]
    );
    assert_eq!(lcm.get_status()["stored_messages"], accepted.len());
    // Once writes succeed again, everything accepted is stored, in order, exactly once.
    other.execute_batch("DROP TRIGGER refuse").unwrap();
    lcm.observe_idle().unwrap();
    lcm.settle().unwrap();
    assert_eq!(on_disk(dir.path(), "s"), jsons(&accepted));
    let last = accepted.last().unwrap().text().into_owned();
    let found = lcm.handle_tool_call("lcm_grep", &json!({ "pattern": format!("{last}$") }), None);
    assert_eq!(found["matches"].as_array().map(Vec::len), Some(1), "{found}");
}

/// The compaction another engine made, as the host publishes it.
fn compacted(engine: &str) -> Fact {
    Fact {
        session_id: "s".into(),
        at_message: 0,
        body: FactBody::Compacted {
            engine: engine.into(),
            tokens_before: 1_000,
            tokens_after: 200,
            messages_before: 6,
            messages_after: 2,
            inserted: vec![Message::user("[summary]")],
        },
    }
}

/// The session replayed again from its first message, compacting elsewhere this time: the
/// compactions recorded are this history's, not both histories' added up. A run that picks the
/// session up where it stood adds to them.
#[test]
fn a_session_replayed_from_its_start_records_its_own_compactions_only() {
    let dir = tempfile::tempdir().unwrap();
    let messages = synthetic::conversation(3, 8, 200);
    let observe = |at: &[usize], from: usize| {
        let mut lcm = engine(dir.path(), 100_000, json!({}));
        lcm.on_session_start("s", &SessionInfo::default()).unwrap();
        let mut start = from;
        for &cut in at {
            lcm.observe(&appended(&messages[start..cut])).unwrap();
            lcm.observe(&compacted("compressor")).unwrap();
            start = cut;
        }
        lcm.observe(&appended(&messages[start..])).unwrap();
        let status = lcm.handle_tool_call("lcm_status", &json!({}), None);
        lcm.on_session_end("s", &[]).unwrap();
        status["observed_compactions"].clone()
    };
    assert_eq!(observe(&[4, 8], 0), 2);
    // The same history again: the same two.
    assert_eq!(observe(&[4, 8], 0), 2);
    // Another history (a swap made it compact elsewhere): its three replace them.
    assert_eq!(observe(&[3, 6, 9], 0), 3);
    // A run that resumes the session at message 10 adds its compaction.
    assert_eq!(observe(&[12], 10), 4);
}
