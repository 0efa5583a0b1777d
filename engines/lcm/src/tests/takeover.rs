//! `/engine lcm` over a session lcm recorded as an observer, and replays whose contexts are not a
//! prefix of what is stored: every message of the conversation stored once, whatever the context
//! lcm is handed looks like.

use ctxhost_engine_abi::{CompressRequest, Engine, Message, SessionInfo, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{assert_valid_compaction, engine, jsons, replay, stored_jsons};
use crate::Lcm;

const COMPACTION_NOTE: &str = "[CONTEXT COMPACTION] Earlier turns were compacted into this summary.";

/// `turns` turns, each a user request with its own marker (`MARK-<n>`), a tool call, its result
/// and an answer.
fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a warehouse migration agent.")];
    for turn in 0..turns {
        messages.push(Message::user(format!(
            "Day {turn}: migrate batch MARK-{turn:04} and report. {}",
            "details ".repeat(20)
        )));
        let call = format!("call_{turn}");
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            call.clone(),
            "terminal",
            json!({ "command": format!("migrate --batch {turn}") }).to_string(),
        )]));
        messages.push(Message::tool(
            call,
            format!("batch {turn}: {}", "row ok ".repeat(60)),
        ));
        messages.push(Message::assistant(format!("Batch {turn} migrated.")));
    }
    messages
}

fn swap() -> SessionInfo {
    SessionInfo {
        boundary_reason: Some("engine_swap".to_owned()),
        ..SessionInfo::default()
    }
}

fn grep(lcm: &mut Lcm, pattern: &str) -> usize {
    let found = lcm.handle_tool_call("lcm_grep", &json!({ "pattern": pattern }), None);
    found["matches"].as_array().expect("matches").len()
}

/// An observer records `observed`, then a new instance takes over with what a compressor left:
/// the system message, its summary in the user role, and the last `kept` messages.
fn take_over(dir: &std::path::Path, observed: &[Message], kept: usize) -> (Lcm, Vec<Message>) {
    let mut observer = engine(dir, 6_000, json!({ "fresh_tail": 6 }));
    observer.on_session_start("s", &SessionInfo::default()).unwrap();
    observer.record_appended(observed).unwrap();
    observer.on_session_end("s", &[]).unwrap();
    drop(observer);
    // The compressor appends a note of its own to the system message.
    let mut system = observed[0].clone();
    system.content = ctxhost_engine_abi::Content::Text(format!(
        "{}\n\n[Note: earlier turns were compacted.]",
        system.text()
    ));
    let mut context = vec![system, Message::user(COMPACTION_NOTE)];
    context.extend_from_slice(&observed[observed.len() - kept..]);
    let mut lcm = engine(dir, 6_000, json!({ "fresh_tail": 6 }));
    lcm.on_session_start("s", &swap()).unwrap();
    (lcm, context)
}

#[test]
fn taking_over_an_observed_session_stores_nothing_twice_and_not_the_other_engines_summary() {
    let dir = tempfile::tempdir().unwrap();
    let all = conversation(60);
    // The compressor kept far more than a few dozen messages back: beyond any fixed window.
    let observed = &all[..200];
    let (mut lcm, context) = take_over(dir.path(), observed, 90);
    let compacted = lcm
        .compress(context.clone(), &CompressRequest::default())
        .unwrap();
    assert_valid_compaction(&context, &compacted);
    assert_eq!(stored_jsons(&mut lcm, "s"), jsons(observed));
    assert!(
        compacted.iter().any(|m| m.text() == COMPACTION_NOTE),
        "the other engine's summary stays in the context: it alone says what came before the tail"
    );
    assert_eq!(grep(&mut lcm, "CONTEXT COMPACTION"), 0);
    for turn in [10, 35, 45] {
        assert_eq!(grep(&mut lcm, &format!("MARK-{turn:04}")), 1, "turn {turn}");
    }

    // The session goes on: what it appends is stored once, the kept summary still is not.
    let mut context = compacted;
    for message in &all[200..] {
        if message.role == ctxhost_engine_abi::Role::Assistant && lcm.should_compress_preflight(&context) {
            let next = lcm
                .compress(context.clone(), &CompressRequest::default())
                .unwrap();
            assert_valid_compaction(&context, &next);
            context = next;
        }
        context.push(message.clone());
    }
    lcm.on_session_end("s", &context).unwrap();
    assert_eq!(stored_jsons(&mut lcm, "s"), jsons(&all));
    assert_eq!(grep(&mut lcm, "CONTEXT COMPACTION"), 0);
    assert_eq!(grep(&mut lcm, "MARK-0055"), 1);
}

#[test]
fn replaying_the_takeover_again_stores_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let all = conversation(40);
    for _ in 0..3 {
        let (mut lcm, context) = take_over(dir.path(), &all[..120], 70);
        let compacted = lcm.compress(context, &CompressRequest::default()).unwrap();
        let mut context = compacted;
        context.extend_from_slice(&all[120..]);
        lcm.on_session_end("s", &context).unwrap();
        assert_eq!(stored_jsons(&mut lcm, "s"), jsons(&all));
    }
}

#[test]
fn a_session_lcm_never_observed_is_stored_as_handed_over() {
    let dir = tempfile::tempdir().unwrap();
    let all = conversation(10);
    let mut context = vec![all[0].clone(), Message::user(COMPACTION_NOTE)];
    context.extend_from_slice(&all[20..]);
    let mut lcm = engine(dir.path(), 6_000, json!({ "fresh_tail": 6 }));
    lcm.on_session_start("s", &swap()).unwrap();
    lcm.on_session_end("s", &context).unwrap();
    assert_eq!(stored_jsons(&mut lcm, "s"), jsons(&context));
}

#[test]
fn a_live_tool_answer_that_differs_stores_that_answer_and_nothing_after_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let first = conversation(50);
    let mut lcm = engine(dir.path(), 6_000, json!({ "fresh_tail": 6 }));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let (context, compactions) = replay(&mut lcm, &first);
    assert!(compactions >= 2, "only {compactions} compactions");
    lcm.on_session_end("s", &context).unwrap();
    drop(lcm);

    // The same transcript, but one tool answer is live (an lcm tool answering with the time).
    let mut second = first.clone();
    second[43] = Message::tool("call_10", "lcm_grep answered at 12:00:01: 3 matches");
    let mut lcm = engine(dir.path(), 6_000, json!({ "fresh_tail": 6 }));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    let (context, compactions) = replay(&mut lcm, &second);
    assert!(compactions >= 2, "only {compactions} compactions");
    lcm.on_session_end("s", &context).unwrap();
    let mut expected = jsons(&first);
    expected.push(serde_json::to_string(&second[43]).unwrap());
    assert_eq!(stored_jsons(&mut lcm, "s"), expected);
    assert_eq!(grep(&mut lcm, "MARK-0030"), 1);
}

#[test]
fn a_stub_result_the_pair_repair_wrote_is_kept_in_the_context_but_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let all = conversation(10);
    // A call whose output a compaction dropped: the repair's stub answers it in the context.
    let mut context = all.clone();
    let stubbed = context
        .iter()
        .position(|m| m.role == ctxhost_engine_abi::Role::Tool)
        .unwrap();
    let call_id = context[stubbed].tool_call_id.clone().unwrap();
    context[stubbed] = Message::tool(call_id, ctxhost_engine_kit::sequence::REMOVED_RESULT_TEXT);
    let mut lcm = engine(dir.path(), 6_000, json!({ "fresh_tail": 6 }));
    lcm.on_session_start("s", &SessionInfo::default()).unwrap();
    lcm.on_session_end("s", &context).unwrap();
    let mut expected = all.clone();
    expected.remove(stubbed);
    assert_eq!(stored_jsons(&mut lcm, "s"), jsons(&expected));
}
