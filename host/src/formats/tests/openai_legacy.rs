use ctxhost_engine_abi::{Message, Role};
use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::*;
use crate::formats::{detect_format, pairing::UNANSWERED_CALL_TEXT};

fn legacy_call(name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "content": null, "function_call": {"name": name, "arguments": arguments}})
}

fn function_result(name: &str, content: &str) -> Value {
    json!({"role": "function", "name": name, "content": content})
}

/// A session with one legacy call and its result.
fn session() -> Vec<Value> {
    vec![
        json!({"role": "system", "content": "You can list files."}),
        json!({"role": "user", "content": "What is here?"}),
        legacy_call("ls", json!("{\"path\":\".\"}")),
        function_result("ls", "a.txt\nb.txt"),
        json!({"role": "assistant", "content": "Two files."}),
    ]
}

/// The one warning a file with `calls` legacy calls and `results` function messages answering
/// them gets.
fn note(calls: &str, results: &str) -> String {
    let results = if results.is_empty() {
        String::new()
    } else {
        format!(" and {results} as their `tool` results")
    };
    format!(
        "legacy function calling read as tool calls: {calls} (ids `legacy_function_call_line_…` made from their place in the file){results}"
    )
}

fn pretty_array(records: &[Value]) -> String {
    serde_json::to_string_pretty(records).unwrap()
}

#[test]
fn every_openai_shape_reads_a_legacy_call_and_its_result_as_a_paired_tool_call() {
    let records = session();
    let compact_array = serde_json::to_string(&records).unwrap();
    let object = format!("{{\"model\": \"gpt-3.5-turbo-0613\", \"messages\": {compact_array}}}");
    let cases = [
        (
            Format::OpenaiJsonl,
            jsonl(&records),
            "legacy_function_call_line_3",
        ),
        (
            Format::OpenaiArray,
            compact_array,
            "legacy_function_call_line_1_column_94",
        ),
        (
            Format::OpenaiArray,
            pretty_array(&records),
            "legacy_function_call_line_10_column_3",
        ),
        (
            Format::OpenaiObject,
            object,
            "legacy_function_call_line_1_column_138",
        ),
    ];
    for (format, text, id) in cases {
        let transcript = read(format, &text);
        assert_eq!(find_sequence_problems(&transcript.messages), vec![], "{text}");
        let json = messages_json(&transcript);
        assert_eq!(
            json[2],
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]}),
            "{text}"
        );
        assert_eq!(
            json[3],
            json!({"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": id, "name": "ls"}),
            "{text}"
        );
        assert_eq!(transcript.messages.len(), 5, "{text}");
        assert_eq!(
            transcript.meta.warnings,
            [note("1 `function_call` message", "1 `function` message")],
            "{text}"
        );
        assert_eq!(transcript.meta.pairing_repairs, 0, "{text}");
    }
}

#[test]
fn files_starting_with_a_legacy_message_are_detected_as_openai_messages() {
    for first in [function_result("ls", "a.txt"), legacy_call("ls", json!("{}"))] {
        let cases = [
            (
                jsonl(&[first.clone(), json!({"role": "user", "content": "hi"})]),
                Format::OpenaiJsonl,
            ),
            (
                serde_json::to_string(std::slice::from_ref(&first)).unwrap(),
                Format::OpenaiArray,
            ),
            (pretty_array(std::slice::from_ref(&first)), Format::OpenaiArray),
            (
                json!({"messages": [first.clone()]}).to_string(),
                Format::OpenaiObject,
            ),
        ];
        for (text, format) in cases {
            let (_dir, path) = write("t", &text);
            assert_eq!(detect_format(&path, &text).unwrap(), format, "{text}");
        }
    }
}

#[test]
fn arguments_given_as_an_object_or_left_out_are_read_as_a_tool_calls_would_be() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        legacy_call("ls", json!({"path": ".", "all": true})),
        function_result("ls", "a.txt"),
        json!({"role": "assistant", "content": null, "function_call": {"name": "pwd"}}),
        function_result("pwd", "/repo"),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    let calls: Vec<(&str, &str)> = transcript
        .messages
        .iter()
        .flat_map(Message::calls)
        .map(|call| (call.function.name.as_str(), call.function.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("ls", r#"{"path":".","all":true}"#), ("pwd", "")]);
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
}

#[test]
fn legacy_calls_and_tool_calls_mix_in_one_file() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "text"}),
        legacy_call("ls", json!("{}")),
        function_result("ls", "a.txt"),
        json!({"role": "assistant", "content": "done"}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
    let ids: Vec<Option<&str>> = transcript
        .messages
        .iter()
        .map(|m| {
            m.tool_call_id
                .as_deref()
                .or(m.calls().first().map(|c| c.id.as_str()))
        })
        .collect();
    let legacy = Some("legacy_function_call_line_4");
    assert_eq!(ids, [None, Some("call_1"), Some("call_1"), legacy, legacy, None]);
}

#[test]
fn a_result_answers_the_latest_open_call_of_its_name_even_on_one_line() {
    // Two legacy turns in a one-line array: the ids differ by column, each result finds its own.
    let records = [
        json!({"role": "user", "content": "go"}),
        legacy_call("ls", json!("{}")),
        function_result("ls", "first"),
        json!({"role": "user", "content": "again"}),
        legacy_call("ls", json!("{\"all\":true}")),
        function_result("ls", "second"),
    ];
    let transcript = read(Format::OpenaiArray, &serde_json::to_string(&records).unwrap());
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
    let pairs: Vec<(String, String)> = transcript
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.text().into_owned()))
        .collect();
    let call_ids: Vec<String> = transcript
        .messages
        .iter()
        .flat_map(Message::calls)
        .map(|call| call.id.clone())
        .collect();
    assert_eq!(call_ids.len(), 2);
    assert_ne!(call_ids[0], call_ids[1]);
    assert_eq!(
        pairs,
        [
            (call_ids[0].clone(), "first".to_owned()),
            (call_ids[1].clone(), "second".to_owned())
        ]
    );
}

#[test]
fn a_function_message_answering_no_call_is_dropped_with_a_warning_naming_its_line() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        function_result("cat", "no call before it"),
        legacy_call("ls", json!("{}")),
        function_result("pwd", "another function's name"),
        json!({"role": "user", "content": "next"}),
        function_result("ls", "too late: a message came between"),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2: a result of `cat` without a `tool_call_id` answers no call of the message before it; it is dropped".to_owned(),
            "line 4: a result of `pwd` without a `tool_call_id` answers no call of the message before it; it is dropped".to_owned(),
            "line 3: tool call `legacy_function_call_line_3` is never answered; a stub result stands in for it".to_owned(),
            "line 6: a result of `ls` without a `tool_call_id` answers no call of the message before it; it is dropped".to_owned(),
            // Not one of them is counted as a result: each was dropped.
            note("1 `function_call` message", ""),
        ]
    );
    assert_eq!(transcript.meta.pairing_repairs, 4);
    let texts: Vec<String> = transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["go", "", UNANSWERED_CALL_TEXT, "next"]);
}

#[test]
fn a_function_call_that_is_not_one_stays_in_the_message_with_a_warning() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": "ok", "function_call": "auto"}),
        json!({"role": "assistant", "content": "ok", "function_call": {"arguments": "{}"}}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert!(transcript.messages.iter().all(|m| m.calls().is_empty()));
    assert_eq!(transcript.messages[1].extra["function_call"], "auto");
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2: `function_call` is not a legacy call (text, not an object); it is kept in the message as it is",
            "line 3: `function_call` is not a legacy call (it has no `name`); it is kept in the message as it is",
        ]
    );
}

#[test]
fn a_null_function_call_is_no_call_and_no_warning() {
    // openai-python's `model_dump()` of a reply writes `"function_call": null` on every assistant
    // message, as logs and datasets hold them.
    let dumped = |content: &str| json!({"content": content, "refusal": null, "role": "assistant", "function_call": null, "tool_calls": null});
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        dumped("ok"),
        json!({"role": "user", "content": "again"}),
        dumped("done"),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert!(transcript.messages.iter().all(|m| m.calls().is_empty()));
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
    assert_eq!(transcript.messages[1].extra["function_call"], Value::Null);
}

#[test]
fn a_broken_function_message_is_an_error_saying_what_is_wrong_with_it() {
    let text = jsonl(&[
        json!({"role": "user", "content": "go"}),
        json!({"role": "function", "name": "ls", "content": 5}),
    ]);
    let error = read_error(Format::OpenaiJsonl, &text);
    assert!(error.starts_with("transcript:2:"), "{error}");
    assert!(
        error.contains(": a legacy `function` message: invalid type: integer `5`, expected a string"),
        "{error}"
    );
}

#[test]
fn a_legacy_session_replays_and_compacts_into_a_valid_sequence() {
    // Long enough that the built-in compressor compacts several times in a small window: it must
    // see the legacy calls as calls, or it would cut a pair apart.
    let mut records = vec![json!({"role": "system", "content": "You can run shell commands."})];
    for turn in 0..24 {
        records.push(json!({"role": "user", "content": format!("Step {turn}: list build/{turn}.")}));
        records.push(legacy_call("ls", json!({"path": format!("build/{turn}")})));
        let listing: String = (0..60)
            .map(|file| format!("build/{turn}/object_{file}.o\n"))
            .collect();
        records.push(function_result(
            "ls",
            &format!("{listing}error: build/{turn} is stale"),
        ));
        records.push(json!({"role": "assistant", "content": format!("Step {turn} is stale.")}));
    }
    let (_dir, path) = write("legacy.jsonl", &jsonl(&records));
    let transcript = read_transcript(&path, None).unwrap();
    let options = crate::runner::ReplayOptions {
        session_id: "legacy".to_owned(),
        model: ctxhost_engine_abi::ModelInfo {
            context_length: 3_000,
            ..Default::default()
        },
        token_counter: crate::tokens::TokenCounter::rough(),
        facts: crate::runner::FactAccounting::Skip,
    };
    let settings = crate::config::Settings::defaults(std::path::Path::new("."));
    let mut engine = crate::resolution::builtin_compressor(&settings);
    let outcome = crate::runner::replay(&mut engine, transcript.messages, &options);
    assert!(
        outcome.compactions.len() >= 2,
        "{} compactions",
        outcome.compactions.len()
    );
    assert_eq!(outcome.faults.len(), 0, "{:?}", outcome.faults);
    assert_eq!(find_sequence_problems(&outcome.context), vec![]);
    let last_call = outcome
        .context
        .iter()
        .rev()
        .find_map(|m| m.calls().first())
        .unwrap();
    assert_eq!(last_call.id, "legacy_function_call_line_95");
}

#[test]
fn anthropic_tool_blocks_in_an_openai_file_are_said_once_not_read_in_silence() {
    let text = jsonl(&[
        json!({"role": "user", "content": "list files"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "listing"},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]}),
        json!({"role": "assistant", "content": "two files"}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    assert_eq!(transcript.messages.len(), 4);
    assert_eq!(
        transcript.meta.warnings,
        ["2 messages hold Anthropic `tool_use`/`tool_result` blocks (the first at line 2): this looks like an Anthropic Messages transcript, which ctxhost does not read; the blocks are replayed as content, and the engine sees no tool call or result in them"]
    );
}
