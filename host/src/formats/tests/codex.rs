use ctxhost_engine_abi::Role;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn record(kind: &str, payload: Value) -> Value {
    json!({"timestamp": "2025-10-01T09:00:00.000Z", "type": kind, "payload": payload})
}

fn item(payload: Value) -> Value {
    record("response_item", payload)
}

fn token_count(input: u64, cached: u64, output: u64) -> Value {
    record(
        "event_msg",
        json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output},
            "last_token_usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output, "reasoning_output_tokens": 2, "total_tokens": input + output},
            "model_context_window": 272000
        }}),
    )
}

#[test]
fn every_item_type_is_mapped() {
    let text = jsonl(&[
        record(
            "session_meta",
            json!({"id": "sess-1", "cwd": "/repo", "cli_version": "0.40.0", "instructions": "Use rg.", "base_instructions": {"text": "You are Codex."}}),
        ),
        item(
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: workspace-write"}]}),
        ),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix test_parse in tests/test_parser.py"}]}),
        ),
        record(
            "turn_context",
            json!({"cwd": "/repo", "model": "gpt-5-codex", "effort": "medium"}),
        ),
        item(
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Run the test."}], "encrypted_content": "x"}),
        ),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running the test."}], "phase": "commentary"}),
        ),
        item(
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\",\"-q\"]}", "call_id": "call_1"}),
        ),
        item(
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"git\",\"status\"]}", "call_id": "call_2"}),
        ),
        record(
            "event_msg",
            json!({"type": "exec_command_begin", "call_id": "call_1"}),
        ),
        item(
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"E   AssertionError\",\"metadata\":{\"exit_code\":1}}"}),
        ),
        item(
            json!({"type": "function_call_output", "call_id": "call_2", "output": {"content": "clean", "success": true}}),
        ),
        token_count(1200, 1000, 50),
        item(
            json!({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "call_id": "call_3"}),
        ),
        item(json!({"type": "custom_tool_call_output", "call_id": "call_3", "output": "Done!"})),
        token_count(1300, 1200, 20),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]}),
        ),
        token_count(1400, 1300, 5),
        record("event_msg", json!({"type": "agent_message", "message": "Fixed."})),
    ]);
    let transcript = read(Format::Codex, &text);
    let at = "2025-10-01T09:00:00.000Z";
    let usage = |prompt: u64, cached: u64, completion: u64| json!({"prompt_tokens": prompt, "completion_tokens": completion, "cache_read_tokens": cached, "reasoning_tokens": 2, "total_tokens": prompt + completion});
    assert_eq!(
        messages_json(&transcript),
        json!([
            {"role": "system", "content": "You are Codex."},
            {"role": "system", "content": "sandbox: workspace-write", "timestamp": at, "original_role": "developer"},
            {"role": "user", "content": "Fix test_parse in tests/test_parser.py", "timestamp": at},
            {
                "role": "assistant",
                "content": "Running the test.",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"pytest\",\"-q\"]}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"git\",\"status\"]}"}},
                ],
                "timestamp": at,
                "phase": "commentary",
                "reasoning": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Run the test."}], "encrypted_content": "x"}],
                "usage": usage(1200, 1000, 50),
            },
            {"role": "tool", "content": "{\"output\":\"E   AssertionError\",\"metadata\":{\"exit_code\":1}}", "tool_call_id": "call_1", "timestamp": at},
            {"role": "tool", "content": "clean", "tool_call_id": "call_2", "timestamp": at, "success": true},
            {
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "apply_patch", "arguments": "*** Begin Patch\n*** End Patch"}}],
                "timestamp": at,
                "usage": usage(1300, 1200, 20),
            },
            {"role": "tool", "content": "Done!", "tool_call_id": "call_3", "timestamp": at},
            {"role": "assistant", "content": "Fixed.", "timestamp": at, "usage": usage(1400, 1300, 5)},
        ])
    );
    let meta = &transcript.meta;
    assert_eq!(meta.session_id.as_deref(), Some("sess-1"));
    assert_eq!(meta.model.as_deref(), Some("gpt-5-codex"));
    assert_eq!(meta.context_length, Some(272_000));
    assert_eq!(meta.extra["instructions"], "Use rg.");
    assert_eq!(meta.extra["cli_version"], "0.40.0");
    let skipped: Vec<_> = meta
        .skipped
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        skipped,
        [
            ("event_msg (agent_message)", 1),
            ("event_msg (exec_command_begin)", 1),
            ("turn_context", 1)
        ]
    );
    assert_eq!(meta.sequence_problems, vec![]);
}

#[test]
fn cumulative_token_counts_alone_give_each_response_its_difference() {
    let total = |input: u64, output: u64| {
        record(
            "event_msg",
            json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": input, "output_tokens": output}}}),
        )
    };
    let text = jsonl(&[
        record("session_meta", json!({"id": "s"})),
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "one"}]}),
        ),
        total(100, 10),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}),
        ),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "two"}]}),
        ),
        total(250, 30),
        total(260, 31),
    ]);
    let transcript = read(Format::Codex, &text);
    assert_eq!(
        transcript.messages[1].extra["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 10})
    );
    assert_eq!(
        transcript.messages[3].extra["usage"],
        json!({"prompt_tokens": 150, "completion_tokens": 20})
    );
    // The last count follows no new assistant message: it maps to nothing.
    assert_eq!(
        transcript.meta.skipped["event_msg (token_count with no assistant message since the last)"],
        1
    );
}

/// Token counts are read typed, past the interface's fields: one written with its payload before
/// its type, with a key twice (the last counts, as in a map), or with counters that are no whole
/// numbers reads as it always did.
#[test]
fn token_counts_in_any_field_order_or_shape_give_their_usage() {
    let assistant = |text: &str| {
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
        )
    };
    let user = |text: &str| {
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}))
    };
    let text = [
        jsonl(&[record("session_meta", json!({"id": "s"})), user("hi"), assistant("one")]),
        r#"{"payload": {"info": {"last_token_usage": {"input_tokens": 70, "output_tokens": 4}}, "type": "token_count"}, "type": "event_msg", "timestamp": "t"}"#.to_owned(),
        jsonl(&[user("again"), assistant("two")]),
        r#"{"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "rate_limits": {"primary": [1, 2]}, "info": {"last_token_usage": {"input_tokens": 80, "input_tokens": 90, "output_tokens": "five", "total_tokens": 95}, "model_context_window": 64000}}}"#.to_owned(),
        jsonl(&[user("and again"), assistant("three")]),
        r#"{"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "info": [{"last_token_usage": {"input_tokens": 1}}]}}"#.to_owned(),
    ]
    .join("\n");
    let transcript = read(Format::Codex, &text);
    assert_eq!(
        transcript.messages[1].extra["usage"],
        json!({"prompt_tokens": 70, "completion_tokens": 4})
    );
    assert_eq!(
        transcript.messages[3].extra["usage"],
        json!({"prompt_tokens": 90, "completion_tokens": 0, "total_tokens": 95})
    );
    assert!(!transcript.messages[5].extra.contains_key("usage"));
    assert_eq!(transcript.meta.context_length, Some(64000));
    assert_eq!(
        transcript.meta.skipped["event_msg (token_count without usage)"],
        1
    );
}

#[test]
fn a_compaction_is_listed_where_it_happened_not_replayed() {
    let text = jsonl(&[
        record("session_meta", json!({"id": "s"})),
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}),
        ),
        record(
            "compacted",
            json!({"message": "The user said hi.", "replacement_history": []}),
        ),
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bye"}]})),
    ]);
    let transcript = read(Format::Codex, &text);
    assert_eq!(transcript.messages.len(), 3);
    assert_eq!(
        transcript.meta.compactions,
        vec![super::super::RecordedCompaction {
            line: 4,
            messages_before: 2,
            summary: "The user said hi.".into()
        }]
    );
}

#[test]
fn an_output_without_its_call_is_dropped_with_a_warning_naming_its_line() {
    let text = jsonl(&[
        record("session_meta", json!({"id": "s"})),
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})),
        item(json!({"type": "function_call_output", "call_id": "gone", "output": "late"})),
    ]);
    let transcript = read(Format::Codex, &text);
    assert_eq!(transcript.messages.len(), 1);
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert_eq!(
        transcript.meta.warnings,
        ["line 3: tool result `gone` answers no call of the message before it; it is dropped"]
    );
}

#[test]
fn malformed_records_are_errors_with_their_line_and_offset() {
    let first = format!("{}\n", record("session_meta", json!({"id": "s"})));
    let offset = first.len();
    let no_payload = format!("{first}{}\n", json!({"timestamp": "t", "type": "response_item"}));
    assert_eq!(
        read_error(Format::Codex, &no_payload),
        format!("transcript:2: a `response_item` record without a `payload` object (byte {offset})")
    );
    let no_call_id = format!(
        "{first}{}\n",
        item(json!({"type": "function_call", "name": "shell", "arguments": "{}"}))
    );
    assert_eq!(
        read_error(Format::Codex, &no_call_id),
        format!("transcript:2: a `function_call` item without a `call_id` (byte {offset})")
    );
    let broken = format!("{first}{{\"type\": \"event_msg\",\n");
    assert_eq!(
        read_error(Format::Codex, &broken),
        format!(
            "transcript:2:21: EOF while parsing a value (byte {})",
            offset + 20
        )
    );
}

/// A legacy rollout's header `instructions` were sent to the model with Codex's own and are
/// recorded nowhere else: they open the conversation as its system message (verify48: the user's
/// rules were nowhere in the replayed context).
#[test]
fn a_legacy_rollout_with_a_header_line_and_bare_items_is_read() {
    let text = jsonl(&[
        json!({"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-04-23T12:00:00.000Z", "instructions": "Use rg.", "git": {"branch": "main"}}),
        json!({"record_type": "state"}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Why does the build fail?"}]}),
        json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Build it."}]}),
        json!({"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"build\"]}", "call_id": "call_1"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"error[E0432]: unresolved import\",\"metadata\":{\"exit_code\":101}}"}),
        json!({"record_type": "state"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "An unresolved import."}]}),
    ]);
    let transcript = read(Format::Codex, &text);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role).collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(roles, [System, User, Assistant, Tool, Assistant]);
    assert_eq!(transcript.messages[0].text(), "Use rg.");
    assert_eq!(transcript.messages[2].calls()[0].id, "call_1");
    assert_eq!(transcript.messages[2].extra["reasoning"][0]["id"], "rs_1");
    assert!(transcript.messages[3].text().contains("E0432"));
    let meta = &transcript.meta;
    assert_eq!(
        meta.session_id.as_deref(),
        Some("5973b6c0-94b8-487b-a530-2aeb6098ae0e")
    );
    assert!(!meta.extra.contains_key("instructions"));
    assert_eq!(meta.extra["git"], json!({"branch": "main"}));
    assert_eq!(meta.skipped["state (a legacy rollout's record_type)"], 2);
    assert_eq!(meta.warnings, Vec::<String>::new());
}

#[test]
fn call_ids_written_as_numbers_are_read_as_text_with_a_warning() {
    let text = jsonl(&[
        item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]})),
        item(json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": 41})),
        item(json!({"type": "function_call_output", "call_id": 41, "output": "ok"})),
    ]);
    let transcript = read(Format::Codex, &text);
    assert_eq!(transcript.messages[1].calls()[0].id, "41");
    assert_eq!(transcript.messages[2].tool_call_id.as_deref(), Some("41"));
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2: a `function_call`'s `call_id` is the number 41, not text; it is read as \"41\"",
            "line 3: a call output's `call_id` is the number 41, not text; it is read as \"41\"",
        ]
    );
    assert_eq!(transcript.meta.sequence_problems, vec![]);
}

#[test]
fn an_item_type_the_reader_does_not_know_is_left_out_with_one_warning_naming_its_line() {
    let text = jsonl(&[
        record("session_meta", json!({"id": "sess-1"})),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find the docs"}]}),
        ),
        item(
            json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "tokio docs"}}),
        ),
        item(json!({"type": "tool_search_call", "query": "docs"})),
        item(json!({"type": "tool_search_call", "query": "more docs"})),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found them."}]}),
        ),
    ]);
    let transcript = read(Format::Codex, &text);
    assert_eq!(transcript.messages.len(), 2);
    assert_eq!(
        transcript.meta.warnings,
        ["line 4: a `response_item` of the type `tool_search_call`, which ctxhost does not read: left out (each is counted)"]
    );
    let skipped: Vec<_> = transcript
        .meta
        .skipped
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        skipped,
        [
            ("response_item (tool_search_call)", 2),
            (
                "response_item (web_search_call, a hosted search: no call to replay)",
                1
            ),
        ]
    );
}

/// Codex records a call when the model has written it and its output when the tool is done: a
/// response's parallel calls may have outputs between them. Before the token count that closes the
/// response, a call is still that response's.
#[test]
fn parallel_calls_recorded_with_outputs_between_them_are_one_response() {
    let call = |id: &str, command: &str| {
        item(
            json!({"type": "function_call", "name": "shell", "arguments": json!({"command": ["bash", "-lc", command]}).to_string(), "call_id": id}),
        )
    };
    let output =
        |id: &str, text: &str| item(json!({"type": "function_call_output", "call_id": id, "output": text}));
    let records = [
        record("session_meta", json!({"id": "sess-1"})),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "check the tree"}]}),
        ),
        call("call_A", "ls"),
        output("call_A", "src"),
        call("call_B", "git status"),
        output("call_B", "clean"),
        token_count(1000, 0, 10),
        call("call_C", "cargo test"),
        output("call_C", "ok"),
        token_count(1100, 1000, 20),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All clean."}]}),
        ),
        token_count(1200, 1100, 5),
    ];
    let shape = |transcript: &Transcript| -> Vec<String> {
        transcript
            .messages
            .iter()
            .map(|message| match message.role {
                Role::Assistant if message.has_tool_calls() => {
                    let ids: Vec<&str> = message.calls().iter().map(|call| call.id.as_str()).collect();
                    format!("calls {}", ids.join(","))
                }
                Role::Tool => format!("result {}", message.tool_call_id.as_deref().unwrap_or("")),
                role => format!("{role:?} {}", message.text()),
            })
            .collect()
    };
    let transcript = read(Format::Codex, &jsonl(&records));
    assert_eq!(
        shape(&transcript),
        [
            "User check the tree",
            "calls call_A,call_B",
            "result call_A",
            "result call_B",
            "calls call_C",
            "result call_C",
            "Assistant All clean.",
        ]
    );
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert!(
        transcript.meta.warnings.is_empty(),
        "{:?}",
        transcript.meta.warnings
    );
    // A token count closes a response when it carries no usage too (`info: null`, from a provider
    // that reports none): the same responses, with no usage on them.
    let without_usage: Vec<Value> = records
        .iter()
        .map(|line| match line["type"].as_str() {
            Some("event_msg") => record(
                "event_msg",
                json!({"type": "token_count", "info": null, "rate_limits": null}),
            ),
            _ => line.clone(),
        })
        .collect();
    let no_usage = read(Format::Codex, &jsonl(&without_usage));
    assert_eq!(shape(&no_usage), shape(&transcript));
    assert!(no_usage
        .messages
        .iter()
        .all(|message| !message.extra.contains_key("usage")));
    assert_eq!(no_usage.meta.skipped["event_msg (token_count without usage)"], 3);
    // A rollout that closes no response with a token count does not tell parallel calls from the
    // next response's: a call after an output stays a response of its own, as it was read.
    let uncounted: Vec<Value> = records
        .iter()
        .filter(|record| record["type"] != "event_msg")
        .cloned()
        .collect();
    let transcript = read(Format::Codex, &jsonl(&uncounted));
    assert_eq!(
        shape(&transcript),
        [
            "User check the tree",
            "calls call_A",
            "result call_A",
            "calls call_B",
            "result call_B",
            "calls call_C",
            "result call_C",
            "Assistant All clean.",
        ]
    );
}
