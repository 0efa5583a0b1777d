use ctxhost_engine_abi::Role;
use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::*;
use crate::formats::{
    open_transcript, open_transcript_with, read_transcript_with, BadRecords, ReadOptions, TranscriptError,
};

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
fn a_broken_pairing_is_repaired_with_one_warning_per_problem_naming_its_line() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        json!({"role": "tool", "tool_call_id": "ghost", "content": "orphan"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": 7, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": 7, "content": "seven"}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(transcript.messages[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(transcript.messages[4].tool_call_id.as_deref(), Some("7"));
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2: tool result `ghost` answers no call of the message before it; it is dropped",
            "line 4: tool call id 7 is a number, not text; it is read as \"7\"",
            "line 3: tool call `c1` is never answered; a stub result stands in for it",
            "line 5: `tool_call_id` is the number 7, not text; it is read as \"7\"",
        ]
    );
    assert_eq!(transcript.meta.pairing_repairs, 4);
}

#[test]
fn a_malformed_record_stops_the_stream_by_default_and_is_skipped_when_asked() {
    let mut text = jsonl(&[
        json!({"role": "user", "content": "a"}),
        json!({"role": "assistant", "content": "b"}),
    ]);
    text.push_str("{\"role\": \"user\", \"content\": tru}\n{\"content\": \"no role\"}\n");
    text.push_str(&jsonl(&[json!({"role": "user", "content": "c"})]));
    let (_dir, path) = write("t.jsonl", &text);
    let error = read_transcript(&path, None).unwrap_err();
    assert!(
        matches!(
            error,
            TranscriptError::Malformed {
                line: 3,
                skippable: true,
                ..
            }
        ),
        "{error}"
    );
    let options = ReadOptions {
        bad_records: BadRecords::Skip,
        ..ReadOptions::default()
    };
    let transcript = read_transcript_with(&path, &options).unwrap();
    let texts: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["a", "b", "c"]);
    assert_eq!(transcript.meta.bad_records_skipped, 2);
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 3, column 32: skipped a malformed record: expected ident (byte 96)",
            "line 4, column 22: skipped a malformed record: missing field `role` (byte 119)",
        ]
    );
}

#[test]
fn a_malformed_element_of_a_json_document_is_skipped_but_a_broken_structure_still_stops() {
    let text = "[\n  {\"role\": \"user\", \"content\": \"a\"},\n  {\"role\": \"wizard\"},\n  {\"role\": \"user\", \"content\": \"c\"}\n]";
    let (_dir, path) = write("t.json", text);
    let options = ReadOptions {
        bad_records: BadRecords::Skip,
        ..ReadOptions::default()
    };
    let transcript = read_transcript_with(&path, &options).unwrap();
    assert_eq!(transcript.messages.len(), 2);
    assert_eq!(transcript.meta.bad_records_skipped, 1);
    let (_dir, path) = write(
        "t.json",
        "[{\"role\": \"user\", \"content\": \"a\"} {\"role\": \"user\"}]",
    );
    let error = read_transcript_with(&path, &options).unwrap_err();
    assert!(
        matches!(error, TranscriptError::Malformed { skippable: false, .. }),
        "{error}"
    );
}

#[test]
fn pretty_printed_json_reads_as_compact_json_does_in_every_json_format() {
    let messages = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]);
    let documents = [
        (Format::OpenaiArray, messages.clone()),
        (Format::OpenaiObject, json!({"model": "m", "messages": messages})),
        (
            Format::SweAgent,
            json!({"trajectory": [], "history": messages, "info": {}}),
        ),
    ];
    for (format, document) in documents {
        let compact = read(format, &document.to_string());
        let pretty = read(format, &serde_json::to_string_pretty(&document).unwrap());
        assert_eq!(pretty.messages, compact.messages, "{format}");
        assert_eq!(pretty.messages.len(), 3, "{format}");
    }
}

#[test]
fn a_forced_format_that_does_not_match_the_file_says_what_the_file_looks_like() {
    let openai = jsonl(&[json!({"role": "user", "content": "hi"})]);
    assert_eq!(
        read_error(Format::ClaudeCode, &openai),
        "`transcript` does not look like Claude Code session (JSONL); it looks like OpenAI messages (JSONL) (pass --format openai-jsonl)"
    );
    assert_eq!(
        read_error(Format::OpenaiArray, &openai),
        "`transcript` does not look like OpenAI messages (JSON array); it looks like OpenAI messages (JSONL) (pass --format openai-jsonl)"
    );
    let claude_code = jsonl(&[
        json!({"parentUuid": null, "isSidechain": false, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}),
    ]);
    assert_eq!(
        read_error(Format::OpenaiJsonl, &claude_code),
        "`transcript` does not look like OpenAI messages (JSONL); it looks like Claude Code session (JSONL) (pass --format claude-code)"
    );
    assert_eq!(
        read_error(Format::Codex, "just some notes\n"),
        "`transcript` does not look like Codex rollout (JSONL); it starts with neither `[` nor `{`"
    );
}

#[test]
fn a_hermes_export_is_not_read_as_an_openai_object() {
    // Read as an object, a session loses its `system_prompt` (the system message) and its window
    // without a word; several sessions stop at a parser error after the first.
    let session = |id: &str| {
        json!({"id": id, "system_prompt": "You are terse.", "model_config": {"context_length": 32000},
               "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    };
    let expected = "`transcript` does not look like OpenAI messages (JSON object); it looks like Hermes session export (pass --format hermes)";
    assert_eq!(
        read_error(Format::OpenaiObject, &jsonl(&[session("s1")])),
        expected
    );
    assert_eq!(
        read_error(Format::OpenaiObject, &jsonl(&[session("s1"), session("s2")])),
        expected
    );
    // A session without the fields only Hermes writes, several of them one a line.
    let bare = |id: &str| json!({"id": id, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        read_error(Format::OpenaiObject, &jsonl(&[bare("s1"), bare("s2")])),
        expected
    );
    // The other way round, an object with `messages` reads as a session only when it has the
    // `id` every session row has: without one, it is OpenAI messages (Hermes's fixtures).
    let object = json!({"name": "fixture", "model": "m", "context_length": 16000, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        read_error(Format::Hermes, &object.to_string()),
        "`transcript` does not look like Hermes session export; it looks like OpenAI messages (JSON object) (pass --format openai-object)"
    );
    let pretty = serde_json::to_string_pretty(&object).unwrap();
    assert!(read_error(Format::Hermes, &pretty).contains("it looks like OpenAI messages (JSON object)"));
    let one_session =
        json!({"id": "s1", "model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let (_dir, path) = write("t.json", &one_session);
    let transcript = read_transcript(&path, Some(Format::Hermes)).unwrap();
    assert_eq!(transcript.messages.len(), 1);
    assert_eq!(transcript.meta.session_id.as_deref(), Some("s1"));
}

#[test]
fn a_session_asked_of_a_file_of_one_session_is_checked_against_its_id() {
    let with_session = |session: &str| ReadOptions {
        session: Some(session.into()),
        ..ReadOptions::default()
    };
    // Claude Code records its session's id: another id is an error, as in a Hermes export.
    let claude_code = jsonl(&[
        json!({"parentUuid": null, "isSidechain": false, "type": "user", "uuid": "u1", "sessionId": "5d1c0b0e-aaaa", "message": {"role": "user", "content": "hi"}}),
    ]);
    let (_dir, path) = write("session.jsonl", &claude_code);
    assert!(open_transcript_with(&path, &with_session("5d1c")).is_ok());
    let error = open_transcript_with(&path, &with_session("abc"))
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with("no session whose id starts with `abc` (the file holds `5d1c0b0e-aaaa`)"),
        "{error}"
    );
    // A format that records no id: read, and said that --session did not choose anything.
    let (_dir, path) = write("t.json", r#"[{"role": "user", "content": "hi"}]"#);
    let transcript = read_transcript_with(&path, &with_session("abc")).unwrap();
    assert_eq!(
        transcript.meta.warnings,
        ["--session `abc` chose nothing: this file (OpenAI messages (JSON array)) holds one session and records no id; it is read"]
    );
}

#[test]
fn a_byte_that_is_not_utf8_in_one_record_is_that_records_error_not_the_files() {
    // One corrupted byte on line 4 made the whole file "not a transcript format" (its start, the
    // first 64 KiB, is not UTF-8), even with --skip-bad-records.
    let records: Vec<Value> = (0..6)
        .map(|n| json!({"role": if n % 2 == 0 { "user" } else { "assistant" }, "content": format!("message {n}")}))
        .collect();
    let mut bytes = jsonl(&records).into_bytes();
    let line_4 = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(2)
        .unwrap()
        .0
        + 1;
    bytes.insert(line_4 + 30, 0xff);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, &bytes).unwrap();

    let error = read_transcript(&path, None).unwrap_err();
    assert!(
        matches!(error, TranscriptError::Malformed { line: 4, .. }),
        "{error}"
    );
    let options = ReadOptions {
        bad_records: BadRecords::Skip,
        ..ReadOptions::default()
    };
    let transcript = read_transcript_with(&path, &options).unwrap();
    assert_eq!(transcript.messages.len(), 5);
    assert_eq!(transcript.meta.bad_records_skipped, 1);
    // A file that is not text from its first byte is still refused as such.
    std::fs::write(&path, [0xff, 0xfe, b'[', b']']).unwrap();
    let error = read_transcript(&path, None).unwrap_err().to_string();
    assert!(error.ends_with("(its start is not UTF-8 text)"), "{error}");
}

#[test]
fn a_repair_in_a_one_line_json_file_names_the_records_column_too() {
    // Every record of a JSON array written on one line is on line 1: the column finds it.
    let messages = json!([
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": 7, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "bye"}
    ])
    .to_string();
    let column = |needle: &str| {
        let record_end = messages.find(needle).unwrap();
        messages[..record_end].rfind("{\"role\"").unwrap() + 1
    };
    let (_dir, path) = write("t.json", &messages);
    let transcript = read_transcript(&path, None).unwrap();
    assert_eq!(
        transcript.meta.warnings,
        [
            format!(
                "line 1, column {}: tool result `ghost` answers no call of the message before it; it is dropped",
                column("\"ghost\"")
            ),
            format!(
                "line 1, column {}: tool call id 7 is a number, not text; it is read as \"7\"",
                column("\"id\":7")
            ),
            format!(
                "line 1, column {}: tool call `7` is never answered; a stub result stands in for it",
                column("\"id\":7")
            ),
        ]
    );
}

#[test]
fn an_openai_object_is_not_read_as_a_trajectory() {
    // Its `messages` decide the format: forcing SWE-agent or OpenHands read the whole file and
    // then said the trajectory had no `history`.
    let object = serde_json::to_string_pretty(
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "history_note": 1}),
    )
    .unwrap();
    assert_eq!(
        read_error(Format::SweAgent, &object),
        "`transcript` does not look like SWE-agent trajectory; it looks like OpenAI messages (JSON object) (pass --format openai-object)"
    );
    assert_eq!(
        read_error(Format::Openhands, &object),
        "`transcript` does not look like OpenHands event stream (JSON); it looks like OpenAI messages (JSON object) (pass --format openai-object)"
    );
}

#[test]
fn a_forced_format_reads_json_whose_keys_decide_nothing() {
    let text = jsonl(&[json!({"mystery": 1, "messages": [{"role": "user", "content": "hi"}]})]);
    let (_dir, path) = write("t.json", &text);
    assert!(read_transcript(&path, None).is_ok());
    let (_dir, path) = write("t.json", "{\"foo\": 1}\n");
    let error = read_transcript(&path, Some(Format::OpenaiObject)).unwrap_err();
    assert!(matches!(error, TranscriptError::Malformed { .. }), "{error}");
}

#[test]
fn an_unrecognised_file_is_refused_before_reading() {
    let (_dir, path) = write("notes.txt", "just some notes\n");
    let error = open_transcript(&path, None).unwrap_err();
    assert!(matches!(error, TranscriptError::Unrecognised { .. }), "{error}");
}

#[test]
fn a_long_json_array_reads_across_its_batches_as_element_by_element() {
    // Pretty-printed, some 700 KB: several batches, with a bad element and a `session_meta` in
    // the middle of one.
    let elements: Vec<Value> = (0..2_000)
        .map(|n| match n {
            700 => json!({"role": "wizard", "content": "not a message"}),
            1_300 => json!({"role": "session_meta", "model": "m"}),
            _ => json!({"role": if n % 2 == 0 { "user" } else { "assistant" },
                        "content": format!("message {n}\n{}\"quoted\"\\", "x".repeat(n % 400))}),
        })
        .collect();
    let text = serde_json::to_string_pretty(&Value::Array(elements.clone())).unwrap();
    let (_dir, path) = write("t.json", &text);
    let options = ReadOptions {
        bad_records: BadRecords::Skip,
        ..ReadOptions::default()
    };
    let transcript = read_transcript_with(&path, &options).unwrap();
    let expected: Vec<Value> = elements
        .into_iter()
        .enumerate()
        .filter(|(n, _)| *n != 700 && *n != 1_300)
        .map(|(_, element)| element)
        .collect();
    assert_eq!(messages_json(&transcript), Value::Array(expected));
    assert_eq!(transcript.meta.bad_records_skipped, 1);
    // The error is placed where serde_json stops, after the unknown role.
    let line = text[..text.find("\"wizard\"").unwrap()].lines().count();
    assert!(
        transcript.meta.warnings[0]
            .starts_with(&format!("line {line}, column 20: skipped a malformed record")),
        "{:?}",
        transcript.meta.warnings
    );
}

/// A file that opens with more blank lines than detection first reads is no empty file
/// (verify35: 64 KB of blank lines, then the records, was refused as empty); an error still
/// names the record's own line.
#[test]
fn a_file_opening_with_a_long_run_of_blank_lines_is_read_after_it() {
    let blank = "\n".repeat(100_000);
    let text = format!(
        "{blank}{}\n{}\n{{\"role\": \"wizard\"}}\n",
        json!({"role": "user", "content": "after the blank lines"}),
        json!({"role": "assistant", "content": "read"}),
    );
    let (_dir, path) = write("t.jsonl", &text);
    let mut stream = open_transcript(&path, None).unwrap();
    assert_eq!(stream.next().unwrap().unwrap().text(), "after the blank lines");
    assert_eq!(stream.next().unwrap().unwrap().text(), "read");
    let error = stream.next().unwrap().unwrap_err().to_string();
    assert!(error.contains("t.jsonl:100003:"), "{error}");
    let (_dir, path) = write("blank.jsonl", &blank);
    let error = open_transcript(&path, None).unwrap_err().to_string();
    assert!(error.contains("the file is empty"), "{error}");
}

/// Batches after the first are parsed on a helper thread while the ones before are read: what
/// breaks the document in a later batch still comes after every message before it, and names its
/// line.
#[test]
fn a_document_broken_batches_later_gives_every_message_before_the_break_then_the_error() {
    let elements: Vec<Value> = (0..4_000)
        .map(|n| {
            json!({"role": if n % 2 == 0 { "user" } else { "assistant" },
                   "content": format!("message {n} {}", "y".repeat(n % 500))})
        })
        .collect();
    let whole = serde_json::to_string_pretty(&Value::Array(elements)).unwrap();
    // Cut inside message 3,500's text: the file ends in a string.
    let cut = whole.find("message 3500 ").unwrap() + 10;
    let (_dir, path) = write("t.json", &whole[..cut]);
    assert!(cut > 4 * 256 * 1024);
    let mut read = Vec::new();
    let mut error = None;
    for message in open_transcript(&path, None).unwrap() {
        match message {
            Ok(message) => read.push(message),
            Err(failed) => {
                error = Some(failed.to_string());
                break;
            }
        }
    }
    assert_eq!(read.len(), 3_500);
    assert!(read
        .iter()
        .enumerate()
        .all(|(n, message)| message.text().starts_with(&format!("message {n} "))));
    let error = error.expect("the broken document is an error");
    let line = whole[..cut].lines().count();
    assert!(error.contains(&format!("t.json:{line}:")), "{error}");
}

/// A JSONL session of `turns` user and assistant messages, with a tool result that answers no
/// call (a warning) after the first turn.
fn long_session(turns: usize) -> String {
    let mut records = Vec::new();
    for turn in 0..turns {
        records.push(json!({"role": "user", "content": format!("request {turn}")}));
        records.push(json!({"role": "assistant", "content": format!("answer {turn}")}));
        if turn == 0 {
            records.push(json!({"role": "tool", "tool_call_id": "ghost", "content": "orphan"}));
        }
    }
    jsonl(&records)
}

#[test]
fn read_ahead_gives_the_messages_warnings_and_meta_the_stream_gives() {
    // More messages than the reader may hold ahead, so that it waits for the replay.
    let (_dir, path) = write("long.jsonl", &long_session(1_500));
    let direct: Vec<_> = open_transcript(&path, None)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut stream = open_transcript(&path, None).unwrap();
    stream.by_ref().for_each(drop);
    let direct_meta = stream.into_meta();

    let mut ahead = open_transcript(&path, None).unwrap().read_ahead().unwrap();
    let mut warnings_seen = Vec::new();
    let mut messages = Vec::new();
    while let Some(message) = ahead.next() {
        messages.push(message.unwrap());
        warnings_seen.push(ahead.meta().warnings.len());
    }
    assert_eq!(messages, direct);
    assert!(
        warnings_seen[..10].iter().all(|&seen| seen == 1),
        "the orphan's warning is known while the first messages are replayed: {:?}",
        &warnings_seen[..10]
    );
    assert_eq!(ahead.into_meta(), direct_meta);
}

#[test]
fn read_ahead_stops_at_a_malformed_record_after_the_messages_before_it() {
    let text = format!("{}{{not json\n{}", long_session(300), long_session(2));
    let (_dir, path) = write("broken.jsonl", &text);
    let mut ahead = open_transcript(&path, None).unwrap().read_ahead().unwrap();
    let taken = ahead.by_ref().take_while(Result::is_ok).count();
    assert_eq!(
        taken, 600,
        "every message before the broken line, the orphan result dropped"
    );
    assert!(ahead.next().is_none(), "nothing follows the error");

    let mut ahead = open_transcript(&path, None).unwrap().read_ahead().unwrap();
    let error = ahead.find_map(Result::err).unwrap();
    assert!(
        matches!(error, TranscriptError::Malformed { line: 602, .. }),
        "{error}"
    );
}

#[test]
fn a_replay_that_stops_early_lets_the_reader_go() {
    let (_dir, path) = write("long.jsonl", &long_session(5_000));
    let mut ahead = open_transcript(&path, None).unwrap().read_ahead().unwrap();
    assert!(ahead.next().unwrap().is_ok());
    // The reader is blocked on a full queue: dropping must let it go, not wait for it forever.
    let (dropped, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(ahead);
        dropped.send(()).unwrap();
    });
    assert!(
        done.recv_timeout(std::time::Duration::from_secs(30)).is_ok(),
        "dropping a read-ahead whose reader waits on a full queue returns"
    );
}

#[test]
fn a_transcript_without_messages_says_so_once() {
    let empty_array = read(Format::OpenaiArray, "[]");
    assert_eq!(empty_array.messages, vec![]);
    assert_eq!(
        empty_array.meta.warnings,
        ["the transcript holds no messages: there is nothing to replay"]
    );
    let titles_only = read(
        Format::ClaudeCode,
        &jsonl(&[json!({"type": "summary", "summary": "Fixing the parser", "leafUuid": "a1"})]),
    );
    assert_eq!(
        titles_only.meta.warnings,
        ["the transcript holds no messages: there is nothing to replay"]
    );
}
