use ctxhost_engine_abi::{Role, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::runner::recorded_usage;

fn user(uuid: &str, parent: Option<&str>, content: Value) -> Value {
    json!({"parentUuid": parent, "isSidechain": false, "type": "user", "message": {"role": "user", "content": content}, "uuid": uuid, "sessionId": "s1", "cwd": "/repo"})
}

fn assistant(uuid: &str, parent: &str, id: &str, content: Value, usage: Value) -> Value {
    json!({"parentUuid": parent, "isSidechain": false, "type": "assistant", "message": {"id": id, "model": "claude-sonnet-4-5", "role": "assistant", "content": content, "stop_reason": null, "usage": usage}, "uuid": uuid, "sessionId": "s1"})
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": output})
}

#[test]
fn every_block_type_is_mapped() {
    let text = jsonl(&[
        user("u1", None, json!("Fix the failing test in src/lib.rs")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([
                {"type": "thinking", "thinking": "Run the tests first.", "signature": "sig"},
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test"}},
            ]),
            usage(5, 40),
        ),
        user(
            "u2",
            Some("a1"),
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "error[E0308]: mismatched types"}, {"type": "image", "source": {"type": "base64", "data": "AA=="}}], "is_error": true},
                {"type": "text", "text": "Also check the docs."},
            ]),
        ),
        assistant(
            "a2",
            "u2",
            "msg_2",
            json!([{"type": "text", "text": "Fixed."}, {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}]),
            usage(7, 9),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(
        messages_json(&transcript),
        json!([
            {"role": "user", "content": "Fix the failing test in src/lib.rs", "parentUuid": null, "isSidechain": false, "uuid": "u1", "sessionId": "s1", "cwd": "/repo"},
            {
                "role": "assistant",
                "content": "Running the tests.",
                "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"cargo test\"}"}}],
                "parentUuid": "u1", "isSidechain": false, "uuid": "a1", "sessionId": "s1",
                "usage": {"prompt_tokens": 1105, "completion_tokens": 40, "cache_read_tokens": 1000, "cache_write_tokens": 100},
                "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "stop_reason": null, "usage": usage(5, 40)},
                "thinking": [{"type": "thinking", "thinking": "Run the tests first.", "signature": "sig"}],
            },
            {
                "role": "tool",
                "content": [{"type": "text", "text": "error[E0308]: mismatched types"}, {"type": "image", "source": {"type": "base64", "data": "AA=="}}],
                "tool_call_id": "toolu_1",
                "parentUuid": "a1", "isSidechain": false, "uuid": "u2", "sessionId": "s1", "cwd": "/repo",
                "is_error": true,
            },
            {"role": "user", "content": "Also check the docs.", "parentUuid": "a1", "isSidechain": false, "uuid": "u2", "sessionId": "s1", "cwd": "/repo"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Fixed."}, {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}],
                "parentUuid": "u2", "isSidechain": false, "uuid": "a2", "sessionId": "s1",
                "usage": {"prompt_tokens": 1107, "completion_tokens": 9, "cache_read_tokens": 1000, "cache_write_tokens": 100},
                "message": {"id": "msg_2", "model": "claude-sonnet-4-5", "stop_reason": null, "usage": usage(7, 9)},
            },
        ])
    );
    assert_eq!(transcript.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(transcript.meta.session_id.as_deref(), Some("s1"));
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
}

#[test]
fn records_of_one_api_message_are_merged_even_with_results_between() {
    let text = jsonl(&[
        user("u1", None, json!("List then read")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Glob", "input": {"pattern": "*.rs"}}]),
            usage(1, 10),
        ),
        user(
            "u2",
            Some("a1"),
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "src/main.rs"}]),
        ),
        assistant(
            "a2",
            "u2",
            "msg_1",
            json!([{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "src/main.rs"}}]),
            usage(1, 25),
        ),
        user(
            "u3",
            Some("a2"),
            json!([{"type": "tool_result", "tool_use_id": "t2", "content": "fn main() {}"}]),
        ),
        assistant(
            "a3",
            "u3",
            "msg_2",
            json!([{"type": "text", "text": "Done."}]),
            usage(2, 3),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
    let merged = &transcript.messages[1];
    let ids: Vec<_> = merged.calls().iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2"]);
    assert_eq!(merged.extra["uuid"], "a1");
    assert_eq!(merged.extra["merged_uuids"], json!(["a2"]));
    // The last record's usage: Claude Code repeats the usage on every record, growing.
    assert_eq!(merged.extra["usage"]["completion_tokens"], 25);
    assert_eq!(transcript.meta.sequence_problems, vec![]);
}

#[test]
fn usage_reaches_the_runner_with_cache_reads_and_writes_in_the_prompt() {
    let text = jsonl(&[
        user("u1", None, json!("hi")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "text", "text": "hello"}]),
            usage(5, 40),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let expected = Usage {
        cache_read_tokens: Some(1000).into(),
        cache_write_tokens: Some(100).into(),
        ..Usage::new(1105, 40)
    };
    assert_eq!(recorded_usage(&transcript.messages[1]), Some(expected));
}

#[test]
fn sidechain_summary_and_system_records_are_left_out_and_counted() {
    let mut sidechain = assistant(
        "s1",
        "u1",
        "msg_9",
        json!([{"type": "text", "text": "subagent"}]),
        usage(1, 1),
    );
    sidechain["isSidechain"] = json!(true);
    let text = jsonl(&[
        json!({"type": "summary", "summary": "Fixing the parser", "leafUuid": "a1"}),
        json!({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}),
        user("u1", None, json!("go")),
        sidechain.clone(),
        sidechain,
        json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "x1", "parentUuid": null}),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "text", "text": "ok"}]),
            usage(1, 1),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.messages.len(), 2);
    let skipped: Vec<_> = transcript
        .meta
        .skipped
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        skipped,
        [
            ("file-history-snapshot", 1),
            ("sidechain (a subagent's record)", 2),
            ("summary (a title for the resume list)", 1),
            ("system (compact_boundary)", 1),
        ]
    );
    assert_eq!(transcript.meta.extra["summaries"], json!(["Fixing the parser"]));
}

#[test]
fn a_compact_summary_is_listed_where_it_happened_not_replayed() {
    let mut summary = user(
        "u9",
        None,
        json!("This session is being continued from a previous conversation. Summary: the parser was fixed."),
    );
    summary["isCompactSummary"] = json!(true);
    let text = jsonl(&[
        user("u1", None, json!("fix the parser")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "text", "text": "fixed"}]),
            usage(1, 1),
        ),
        summary,
        user("u10", Some("u9"), json!("now the docs")),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let texts: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["fix the parser", "fixed", "now the docs"]);
    assert_eq!(
        transcript.meta.compactions,
        vec![super::super::RecordedCompaction {
            line: 3,
            messages_before: 2,
            summary:
                "This session is being continued from a previous conversation. Summary: the parser was fixed."
                    .into(),
        }]
    );
}

#[test]
fn a_tool_use_left_unanswered_gets_a_stub_result_and_a_warning_naming_its_line() {
    let text = jsonl(&[
        user("u1", None, json!("run it")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]),
            usage(1, 1),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.messages.len(), 3);
    assert_eq!(transcript.messages[2].tool_call_id.as_deref(), Some("t1"));
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert_eq!(
        transcript.meta.warnings,
        ["line 2: tool call `t1` is never answered; a stub result stands in for it"]
    );
}

#[test]
fn a_call_left_unanswered_is_named_by_its_own_record_not_its_responses_first() {
    // Claude Code writes each block of one response on a record of its own: the thinking on
    // line 2, a call answered on line 3, the call left unanswered on line 5.
    let text = jsonl(&[
        user("u1", None, json!("run it")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "thinking", "thinking": "Run make, then the tests.", "signature": "s"}]),
            usage(1, 1),
        ),
        assistant(
            "a2",
            "a1",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]),
            usage(1, 2),
        ),
        user(
            "u2",
            Some("a2"),
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        ),
        assistant(
            "a3",
            "u2",
            "msg_1",
            json!([{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "make test"}}]),
            usage(1, 3),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(
        transcript.meta.warnings,
        ["line 5: tool call `t2` is never answered; a stub result stands in for it"]
    );
}

#[test]
fn a_rewind_is_read_in_file_order_and_reported() {
    let text = jsonl(&[
        user("u1", None, json!("first try")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "text", "text": "one"}]),
            usage(1, 1),
        ),
        user("u2", Some("u1"), json!("edited prompt")),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.messages.len(), 3);
    assert!(
        transcript.meta.warnings[0].starts_with("1 record does not continue the record before it"),
        "{:?}",
        transcript.meta.warnings
    );
}

#[test]
fn a_record_after_a_skipped_one_is_no_branch_and_a_branch_names_its_line() {
    use crate::formats::{read_transcript_with, BadRecords, ReadOptions};
    let call = |uuid: &str, parent: &str, id: &str, call: &str| {
        assistant(
            uuid,
            parent,
            id,
            json!([{"type": "tool_use", "id": call, "name": "Read", "input": {}}]),
            usage(1, 1),
        )
    };
    let result = |uuid: &str, parent: &str, call: &str| {
        let mut result = user(
            uuid,
            Some(parent),
            json!([{"type": "tool_result", "tool_use_id": call, "content": "text"}]),
        );
        result["sourceToolAssistantUUID"] = json!(parent);
        result
    };
    let records = [
        user("u1", None, json!("read them")),
        call("a1", "u1", "msg_1", "t1"),
        result("r1", "a1", "t1"),
        // Line 4, cut short below: the next record names it as its parent.
        call("a2", "r1", "msg_2", "t2"),
        call("a3", "a2", "msg_2", "t3"),
        // Two parallel results, each naming its own call's record; line 6's call was refused.
        result("r2", "a2", "t2"),
        result("r3", "a3", "t3"),
        user("u2", Some("r3"), json!("thanks")),
        // Line 9: an edited prompt, a real branch.
        user("u3", Some("r3"), json!("thanks, and one more")),
    ];
    let mut text = String::new();
    for (index, record) in records.iter().enumerate() {
        let line = record.to_string();
        let line = if index == 3 { &line[..60] } else { &line[..] };
        text.push_str(line);
        text.push('\n');
    }
    let (_dir, path) = super::write("transcript", &text);
    let options = ReadOptions {
        bad_records: BadRecords::Skip,
        ..ReadOptions::default()
    };
    let transcript = read_transcript_with(&path, &options).unwrap();
    assert_eq!(transcript.meta.bad_records_skipped, 1);
    let branches: Vec<_> = transcript
        .meta
        .warnings
        .iter()
        .filter(|warning| warning.contains("a rewind or an edited prompt"))
        .collect();
    assert_eq!(
        branches,
        [
            "1 record does not continue the record before it (a rewind or an edited prompt): \
          the transcript is read in file order, abandoned branches included (the first at line 9)"
        ]
    );
}

#[test]
fn malformed_records_are_errors_with_their_line_and_offset() {
    let first = format!("{}\n", user("u1", None, json!("hi")));
    let offset = first.len();
    let text = format!("{first}{{\"type\": \"user\", \"message\": }}\n");
    assert_eq!(
        read_error(Format::ClaudeCode, &text),
        format!("transcript:2:29: expected value (byte {})", offset + 28)
    );

    let bad_call = jsonl(&[
        user("u1", None, json!("hi")),
        assistant(
            "a1",
            "u1",
            "m",
            json!([{"type": "tool_use", "name": "Bash"}]),
            usage(1, 1),
        ),
    ]);
    assert_eq!(
        read_error(Format::ClaudeCode, &bad_call),
        format!("transcript:2: a `tool_use` block without an `id` and a `name` (byte {offset})")
    );
    assert_eq!(
        read_error(Format::ClaudeCode, "{\"uuid\": \"x\"}\n"),
        "transcript:1: a Claude Code record without a `type` (byte 0)"
    );
}

#[test]
fn a_file_that_starts_with_a_compact_summary_says_the_rest_is_elsewhere() {
    let mut summary = user(
        "u1",
        None,
        json!("This session is being continued from a previous conversation."),
    );
    summary["isCompactSummary"] = json!(true);
    let text = jsonl(&[summary, user("u2", Some("u1"), json!("go on"))]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.messages.len(), 1);
    assert_eq!(transcript.meta.compactions[0].messages_before, 0);
    assert!(transcript.meta.warnings[0]
        .starts_with("the transcript starts with the summary of an earlier compaction"));
}

#[test]
fn interface_records_in_the_chain_are_no_branch() {
    let text = jsonl(&[
        user("u1", None, json!("go")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "text", "text": "ok"}]),
            usage(1, 1),
        ),
        json!({"type": "progress", "uuid": "p1", "parentUuid": "a1", "data": {}}),
        json!({"type": "system", "subtype": "turn_duration", "uuid": "s1", "parentUuid": "p1"}),
        user("u2", Some("s1"), json!("next")),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
    assert_eq!(transcript.meta.skipped["progress"], 1);
}

#[test]
fn tool_use_ids_written_as_numbers_are_read_as_text_with_a_warning() {
    let text = jsonl(&[
        user("u1", None, json!("run it")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "tool_use", "id": 5, "name": "Bash", "input": {}}]),
            usage(1, 1),
        ),
        user(
            "u2",
            Some("a1"),
            json!([{"type": "tool_result", "tool_use_id": 5, "content": "ok"}]),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    assert_eq!(transcript.messages[1].calls()[0].id, "5");
    assert_eq!(transcript.messages[2].tool_call_id.as_deref(), Some("5"));
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2: a `tool_use`'s `id` is the number 5, not text; it is read as \"5\"",
            "line 3: a `tool_result`'s `tool_use_id` is the number 5, not text; it is read as \"5\"",
        ]
    );
    assert_eq!(transcript.meta.sequence_problems, vec![]);
}

#[test]
fn a_key_written_twice_keeps_its_first_place_and_its_last_value() {
    // As a JSON object read into a map keeps it: in the record, its message and a content block.
    let text = concat!(
        r#"{"type":"user","uuid":"u1","uuid":"u1-last","cwd":"/a","message":{"role":"user","content":"first","content":"last","id":"x","id":"y"},"cwd":"/b"}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"a","text":"b","citations":null}],"model":"m","model":"m2"}}"#,
        "\n",
    );
    let transcript = read(Format::ClaudeCode, text);
    assert_eq!(
        messages_json(&transcript),
        json!([
            {"role": "user", "content": "last", "uuid": "u1-last", "cwd": "/b", "id": "y"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "b", "citations": null}],
                "uuid": "a1",
                "message": {"id": "m1", "model": "m2"},
            },
        ])
    );
    assert_eq!(transcript.meta.model.as_deref(), Some("m2"));
}

#[test]
fn a_record_that_is_not_an_object_or_holds_a_bad_number_names_its_line_and_column() {
    let first = format!("{}\n", user("u1", None, json!("hi")));
    let offset = first.len();
    assert_eq!(
        read_error(Format::ClaudeCode, &format!("{first}[1, 2]\n")),
        format!("transcript:2:1: invalid type: sequence, expected a map (byte {offset})")
    );
    let text = format!("{first}{{\"type\": \"user\", \"toolUseStats\": {{\"n\": 1e400}}}}\n");
    assert_eq!(
        read_error(Format::ClaudeCode, &text),
        format!("transcript:2:44: number out of range (byte {})", offset + 43)
    );
}

#[test]
fn tool_use_result_the_interfaces_copy_of_an_output_is_left_out() {
    let mut result = user(
        "u2",
        Some("a1"),
        json!([{"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}]),
    );
    // What the model never saw may even hold what JSON cannot read as a number.
    result["toolUseResult"] = json!({"stdout": "3 passed", "stderr": "", "interrupted": false});
    let text = jsonl(&[
        user("u1", None, json!("run the tests")),
        assistant(
            "a1",
            "u1",
            "m1",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]),
            usage(10, 2),
        ),
        result,
    ])
    .replace(r#""interrupted":false"#, r#""interrupted":false,"n":1e400"#);
    let transcript = read(Format::ClaudeCode, &text);
    let tool = &transcript.messages[2];
    assert_eq!((tool.role, tool.text().as_ref()), (Role::Tool, "3 passed"));
    assert!(!tool.extra.contains_key("toolUseResult"), "{:?}", tool.extra);
    assert!(tool.extra.contains_key("uuid"), "the record's other fields stay");
}

/// `record` as Claude Code writes it in a subagent's `agent-<id>.jsonl`.
fn subagents(mut record: Value) -> Value {
    record["isSidechain"] = json!(true);
    record["agentId"] = json!("a1b2c3d4");
    record
}

#[test]
fn a_subagents_own_log_is_read_as_its_conversation_with_one_warning() {
    let text = jsonl(&[
        subagents(user("u1", None, json!("Find the retry code"))),
        subagents(assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "retry"}}]),
            usage(4, 120),
        )),
        subagents(user(
            "u2",
            Some("a1"),
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "src/retry.py"}]),
        )),
        subagents(assistant(
            "a2",
            "u2",
            "msg_2",
            json!([{"type": "text", "text": "Retry is in src/retry.py."}]),
            usage(4, 20),
        )),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let messages: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| (m.role, m.text().into_owned()))
        .collect();
    assert_eq!(
        messages,
        [
            (Role::User, "Find the retry code".to_owned()),
            (Role::Assistant, String::new()),
            (Role::Tool, "src/retry.py".to_owned()),
            (Role::Assistant, "Retry is in src/retry.py.".to_owned()),
        ]
    );
    assert_eq!(transcript.messages[1].calls()[0].id, "t1");
    assert_eq!(
        transcript.meta.warnings,
        ["line 1: the file starts with a sidechain record (`isSidechain`), as a subagent's own log (Claude Code's \
          `agent-<id>.jsonl`) does: its sidechain records are read as that subagent's conversation"]
    );
    assert!(
        transcript.meta.skipped.is_empty(),
        "{:?}",
        transcript.meta.skipped
    );
}

#[test]
fn an_api_error_claude_code_wrote_itself_is_left_out_not_replayed_as_a_model_call() {
    let mut error = assistant(
        "a1",
        "u1",
        "7c1c1c1c-synthetic",
        json!([{"type": "text", "text": "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}]),
        json!({"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}),
    );
    error["isApiErrorMessage"] = json!(true);
    error["message"]["model"] = json!("<synthetic>");
    let mut stand_in = assistant(
        "a2",
        "u2",
        "7c1c1c1d-synthetic",
        json!([{"type": "text", "text": "No response requested."}]),
        json!({"input_tokens": 0, "output_tokens": 0}),
    );
    stand_in["message"]["model"] = json!("<synthetic>");
    let text = jsonl(&[
        user("u1", None, json!("hello")),
        error,
        user("u2", Some("a1"), json!("try again")),
        stand_in,
        user("u3", Some("a2"), json!("and again")),
        assistant(
            "a3",
            "u3",
            "msg_1",
            json!([{"type": "text", "text": "hi"}]),
            usage(10, 5),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let texts: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["hello", "try again", "and again", "hi"]);
    let skipped: Vec<_> = transcript
        .meta
        .skipped
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        skipped,
        [
            ("api error (written by Claude Code, not the model)", 1),
            (
                "synthetic assistant message (written by Claude Code, not the model)",
                1
            ),
        ]
    );
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
}

#[test]
fn parallel_results_linked_to_their_own_call_records_are_no_rewind() {
    // Claude Code 2.x: one API message's two calls, a record each, and each result linked to the
    // record of its own call.
    let mut first = user(
        "r1",
        Some("a1"),
        json!([{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
    );
    first["sourceToolAssistantUUID"] = json!("a1");
    let mut second = user(
        "r2",
        Some("a2"),
        json!([{"type": "tool_result", "tool_use_id": "t2", "content": "B"}]),
    );
    second["sourceToolAssistantUUID"] = json!("a2");
    let call = |uuid: &str, parent: &str, id: &str| {
        assistant(
            uuid,
            parent,
            "msg_1",
            json!([{"type": "tool_use", "id": id, "name": "Read", "input": {}}]),
            usage(1, 1),
        )
    };
    let text = jsonl(&[
        user("u1", None, json!("read both files")),
        call("a1", "u1", "t1"),
        call("a2", "a1", "t2"),
        first,
        second,
        assistant(
            "a3",
            "r2",
            "msg_2",
            json!([{"type": "text", "text": "both read"}]),
            usage(1, 1),
        ),
        // A real rewind after them is still reported.
        user("u2", Some("a3"), json!("now a third")),
        user("u2b", Some("r2"), json!("edited: now a fourth")),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "assistant", "user", "user"]
    );
    assert_eq!(
        transcript.meta.warnings,
        [
            "1 record does not continue the record before it (a rewind or an edited prompt): \
          the transcript is read in file order, abandoned branches included (the first at line 8)"
        ]
    );
}

fn attachment(uuid: &str, parent: &str, attachment: Value) -> Value {
    json!({"parentUuid": parent, "isSidechain": false, "type": "attachment", "uuid": uuid, "sessionId": "s1", "attachment": attachment})
}

#[test]
fn attachments_the_model_reads_are_user_messages_in_place_and_others_are_counted() {
    let mut rendered = attachment("at5", "at4", json!({"type": "date"}));
    rendered["rendered"] = json!([{"content": "<system-reminder>Today is 2026-11-29.</system-reminder>"}]);
    let text = jsonl(&[
        user("u1", None, json!("fix the retry bug in @src/handlers.py")),
        attachment(
            "at1",
            "u1",
            json!({"type": "file", "filename": "/repo/src/handlers.py", "content": {"type": "text", "file": {"filePath": "/repo/src/handlers.py", "content": "def retry(): pass"}}}),
        ),
        attachment(
            "at2",
            "at1",
            json!({"type": "nested_memory", "path": "/repo/CLAUDE.md", "content": {"path": "/repo/CLAUDE.md", "type": "Project", "content": "always run make test"}}),
        ),
        attachment(
            "at3",
            "at2",
            json!({"type": "hook_additional_context", "content": ["branch: main", "ticket: PAY-7"], "hookEvent": "UserPromptSubmit"}),
        ),
        attachment(
            "at4",
            "at3",
            json!({"type": "plan_mode", "planFilePath": "/p.md"}),
        ),
        rendered,
        assistant(
            "a1",
            "at5",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}]),
            usage(10, 5),
        ),
        user(
            "u2",
            Some("a1"),
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed"}]),
        ),
        attachment(
            "at6",
            "u2",
            json!({"type": "queued_command", "prompt": "also check the logs", "commandMode": "prompt", "origin": {"kind": "human"}}),
        ),
        attachment(
            "at7",
            "at6",
            json!({"type": "queued_command", "prompt": "<task-notification>done</task-notification>", "commandMode": "task-notification"}),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let messages: Vec<(Role, String, bool)> = transcript
        .messages
        .iter()
        .map(|m| {
            let meta = m.extra.get("isMeta") == Some(&json!(true));
            (m.role, m.text().into_owned(), meta)
        })
        .collect();
    assert_eq!(
        messages,
        [
            (
                Role::User,
                "fix the retry bug in @src/handlers.py".to_owned(),
                false
            ),
            (
                Role::User,
                "Contents of /repo/src/handlers.py:\n\ndef retry(): pass".to_owned(),
                true
            ),
            (
                Role::User,
                "Contents of /repo/CLAUDE.md:\n\nalways run make test".to_owned(),
                true
            ),
            (Role::User, "branch: main\nticket: PAY-7".to_owned(), true),
            (
                Role::User,
                "<system-reminder>Today is 2026-11-29.</system-reminder>".to_owned(),
                true
            ),
            (Role::Assistant, String::new(), false),
            (Role::Tool, "1 failed".to_owned(), false),
            (Role::User, "also check the logs".to_owned(), false),
            (
                Role::User,
                "<task-notification>done</task-notification>".to_owned(),
                true
            ),
        ]
    );
    // The attachment's other fields stay, its text is not kept twice.
    assert_eq!(
        transcript.messages[1].extra["attachment"],
        json!({"type": "file", "filename": "/repo/src/handlers.py"})
    );
    assert_eq!(
        transcript
            .meta
            .skipped
            .get("attachment (plan_mode: no text ctxhost replays)"),
        Some(&1)
    );
    assert_eq!(transcript.meta.skipped.len(), 1);
    assert!(
        transcript.meta.warnings.is_empty(),
        "{:?}",
        transcript.meta.warnings
    );
}

#[test]
fn an_attachment_written_between_a_call_and_its_result_follows_the_result() {
    let text = jsonl(&[
        user("u1", None, json!("run the tests")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}]),
            usage(10, 5),
        ),
        attachment(
            "at1",
            "a1",
            json!({"type": "hook_additional_context", "content": "lint is slow today", "hookEvent": "PreToolUse"}),
        ),
        user(
            "u2",
            Some("at1"),
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let roles: Vec<(Role, String)> = transcript
        .messages
        .iter()
        .map(|m| (m.role, m.text().into_owned()))
        .collect();
    assert_eq!(
        roles,
        [
            (Role::User, "run the tests".to_owned()),
            (Role::Assistant, String::new()),
            (Role::Tool, "ok".to_owned()),
            (Role::User, "lint is slow today".to_owned()),
        ]
    );
    assert!(
        transcript.meta.warnings.is_empty(),
        "{:?}",
        transcript.meta.warnings
    );
}

/// Claude Code flags every failure; a result it left unflagged is said to have succeeded, so
/// that an engine can tell a command that printed an `ERROR` line from one that failed.
#[test]
fn an_unflagged_result_reads_as_a_success() {
    let text = jsonl(&[
        user("u1", None, json!("Why did ingest stall?")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "kubectl logs ingest-0"}},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "kubectl logs ingest-9"}},
            ]),
            usage(1, 10),
        ),
        user(
            "u2",
            Some("a1"),
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "ERROR req-91 upstream timeout"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "Error from server (NotFound)", "is_error": true},
            ]),
        ),
    ]);
    let transcript = read(Format::ClaudeCode, &text);
    let flags: Vec<_> = transcript
        .messages
        .iter()
        .filter(|message| message.role == Role::Tool)
        .map(|message| message.extra.get("is_error").cloned())
        .collect();
    assert_eq!(flags, [Some(json!(false)), Some(json!(true))]);
}
