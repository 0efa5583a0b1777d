//! What the readers give is what a model API accepts, whatever the transcript recorded: content
//! where the API needs some, tool calls each answered once under an id of their own.

use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "ls", "arguments": "{}"}})
}

#[test]
fn a_user_system_or_tool_message_without_content_is_read_as_empty_text_with_a_warning_naming_its_line() {
    let text = jsonl(&[
        json!({"role": "system", "content": null}),
        json!({"role": "user"}),
        json!({"role": "assistant", "content": null, "tool_calls": [call("c1")]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": null}),
        json!({"role": "assistant", "content": "done"}),
    ]);
    let transcript = read(Format::OpenaiJsonl, &text);
    let contents: Vec<Value> = messages_json(&transcript)
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].clone())
        .collect();
    // The assistant's calls say what it did: its null stays.
    assert_eq!(
        contents,
        [json!(""), json!(""), Value::Null, json!(""), json!("done")]
    );
    let said = "with no content (`null`); it is read as empty text, which a model API accepts";
    assert_eq!(
        transcript.meta.warnings,
        [
            format!("line 1: a system message {said}"),
            format!("line 2: a user message {said}"),
            format!("line 4: a tool message {said}"),
        ]
    );
}

#[test]
fn a_claude_code_result_with_no_content_is_empty_text_without_a_warning() {
    let record = |kind: &str, uuid: &str, message: Value| json!({"parentUuid": null, "isSidechain": false, "sessionId": "s1", "type": kind, "uuid": uuid, "message": message});
    let text = jsonl(&[
        record("user", "u1", json!({"role": "user", "content": "go"})),
        record(
            "assistant",
            "a1",
            json!({"id": "m1", "role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}},
            ]}),
        ),
        record(
            "user",
            "u2",
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": null},
                {"type": "tool_result", "tool_use_id": "t2", "content": []},
            ]}),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let results: Vec<Value> = messages_json(&transcript).as_array().unwrap()[2..]
        .iter()
        .map(|message| message["content"].clone())
        .collect();
    assert_eq!(results, [json!(""), json!("")]);
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
}

#[test]
fn a_reused_call_id_is_one_warning_naming_its_line_and_leaves_no_sequence_problem() {
    let turn = |id: &str, output: &str| {
        [
            json!({"role": "assistant", "content": null, "tool_calls": [call(id)]}),
            json!({"role": "tool", "tool_call_id": id, "content": output}),
        ]
    };
    let mut records = vec![json!({"role": "user", "content": "go"})];
    records.extend(turn("c1", "first"));
    records.extend(turn("c1", "second"));
    records.push(json!({"role": "assistant", "content": "done"}));
    let transcript = read(Format::OpenaiJsonl, &jsonl(&records));
    assert_eq!(
        transcript.meta.warnings,
        ["line 4: tool call id `c1` was used by an earlier call; this call and its result are read as `c1_reused_line_4`"]
    );
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert_eq!(find_sequence_problems(&transcript.messages), vec![]);
    assert_eq!(transcript.messages[4].text(), "second");
}

#[test]
fn a_developer_message_is_read_as_a_system_message_in_every_openai_shape_and_hermes() {
    let messages = json!([
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "hi"},
    ]);
    let said =
        "a `developer` message (OpenAI's newer name for system instructions) is read as a system message";
    let cases = [
        (Format::OpenaiJsonl, jsonl(messages.as_array().unwrap()), "line 1"),
        (Format::OpenaiArray, messages.to_string(), "line 1, column 2"),
        (
            Format::OpenaiObject,
            json!({"messages": messages}).to_string(),
            "line 1, column 14",
        ),
        (
            Format::Hermes,
            jsonl(&[json!({"id": "s1", "system_prompt": "p", "messages": messages})]),
            "line 1, column 44",
        ),
    ];
    for (format, text, place) in cases {
        let transcript = read(format, &text);
        assert_eq!(
            messages_json(&transcript)[0],
            json!({"role": "system", "content": "Answer in French."}),
            "{format}"
        );
        assert_eq!(transcript.messages.len(), 2, "{format}");
        assert_eq!(transcript.meta.warnings, [format!("{place}: {said}")], "{format}");
    }
}
