use ctxhost_engine_abi::Role;
use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::formats::{open_transcript, TranscriptError};

#[test]
fn what_comes_before_the_messages_is_known_before_the_first_is_taken() {
    let (_dir, path) = write(
        "t.json",
        r#"{"model": "m", "context_length": 8000, "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "after": 1}"#,
    );
    let mut stream = open_transcript(&path, None).unwrap();
    assert_eq!(stream.format(), Format::OpenaiObject);
    assert_eq!(
        (stream.meta().model.as_deref(), stream.meta().context_length),
        (Some("m"), Some(8000))
    );
    assert!(!stream.meta().extra.contains_key("after"));
    assert_eq!(stream.by_ref().count(), 2);
    assert_eq!(stream.meta().extra["after"], 1);
}

#[test]
fn priming_reads_up_to_the_first_assistant_message_so_the_model_is_known() {
    let text = jsonl(&[
        json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}),
        json!({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}),
        json!({"timestamp": "t", "type": "turn_context", "payload": {"model": "gpt-5"}}),
        json!({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}}),
        json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 10, "output_tokens": 2}, "model_context_window": 400000}}}),
        json!({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bye"}]}}),
    ]);
    // A malformed line after the first assistant message is met while iterating, not on opening.
    let (_dir, path) = write("rollout.jsonl", &format!("{text}{{not json\n"));
    let mut stream = open_transcript(&path, None).unwrap();
    assert_eq!(stream.meta().model.as_deref(), Some("gpt-5"));
    assert_eq!(stream.meta().context_length, Some(400_000));
    let roles: Vec<_> = stream.by_ref().take(3).map(|m| m.unwrap().role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    let error = stream.next().unwrap().unwrap_err();
    assert!(
        matches!(error, TranscriptError::Malformed { line: 7, .. }),
        "{error}"
    );
    assert!(stream.next().is_none(), "the stream stops after an error");
}

#[test]
fn a_broken_transcript_is_passed_through_with_its_problems_in_the_meta() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        json!({"role": "tool", "tool_call_id": "ghost", "content": "orphan"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert_eq!(transcript.messages.len(), 3);
    assert_eq!(
        transcript.meta.sequence_problems,
        find_sequence_problems(&transcript.messages)
    );
    assert_eq!(
        transcript.meta.warnings,
        [
            "the transcript itself is not a valid sequence: message 1: tool result `ghost` answers no preceding tool call",
            "the transcript itself is not a valid sequence: tool call `c1` is never answered",
        ]
    );
}

#[test]
fn a_forced_format_that_does_not_fit_is_an_error_naming_the_place() {
    let text = jsonl(&[json!({"role": "user", "content": "hi"})]);
    assert_eq!(
        read_error(Format::ClaudeCode, &text),
        "transcript:1: a Claude Code record without a `type` (byte 0)"
    );
    assert_eq!(
        read_error(Format::OpenaiArray, &text),
        "transcript:1:1: expected a JSON array of messages, found `{` (byte 0)"
    );
}

#[test]
fn an_unrecognised_file_is_refused_before_reading() {
    let (_dir, path) = write("notes.txt", "just some notes\n");
    let error = open_transcript(&path, None).unwrap_err();
    assert!(matches!(error, TranscriptError::Unrecognised { .. }), "{error}");
}
