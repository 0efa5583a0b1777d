//! lcm observing: what the session appends is stored exactly, writes grouped only while the host
//! has more queued, and nothing left waiting when anything reads the store or the engine goes.

use std::path::Path;

use ctxhost_engine_abi::{Engine, Fact, FactBody, Message, SessionInfo};
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
    assert_eq!(
        on_disk(dir.path(), "s").len(),
        3,
        "written when the queue runs dry"
    );
    assert_eq!(lcm.get_status()["stored_messages"], 6);
    lcm.observe_idle().unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let mut lcm = engine(dir.path(), 100_000, json!({}));
    lcm.on_session_start("first", &SessionInfo::default()).unwrap();
    lcm.observe_idle().unwrap();
    let messages: Vec<Message> = (0..MAX_PENDING + 10)
        .map(|i| Message::user(format!("message {i}")))
        .collect();
    for message in &messages {
        lcm.observe(&appended(std::slice::from_ref(message))).unwrap();
    }
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
