//! The full replay through the binary: scripted commands, engine tools, the event log, the
//! prompt-caching shape, `status` and `tool`.

use std::{fs, path::PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::support::{texts, PluginDir};

/// Writes `messages` as an OpenAI JSON array transcript in the tree and returns its path.
fn transcript(tree: &PluginDir, name: &str, messages: Value) -> PathBuf {
    let path = tree.root().join(name);
    fs::write(&path, serde_json::to_string_pretty(&messages).unwrap()).unwrap();
    path
}

/// A tree with the faulty test plugin selected, its block being `block`.
fn faulty_tree(block: &str) -> PluginDir {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!("context:\n  engine: faulty\nfaulty:\n{block}"));
    tree
}

/// A conversation that calls `faulty_echo` (recorded answer: stale), then a command typed by the
/// user.
fn conversation_with_an_engine_tool() -> Value {
    json!([
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find the coupon code."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "faulty_echo", "arguments": "{\"word\": \"live\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"word\": \"stale\"}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "coupons.py"},
        {"role": "assistant", "content": "The code is in coupons.py."},
        {"role": "user", "content": "/compress coupons"},
        {"role": "user", "content": "Thanks. Now fix it."},
        {"role": "assistant", "content": "Fixed."}
    ])
}

fn read_events(path: &std::path::Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn an_engine_tool_call_is_answered_live_by_the_plugin_and_replaces_the_recorded_result() {
    let tree = faulty_tree("  {}\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let out = tree.root().join("final.json");
    let events = tree.root().join("events.jsonl");
    let output = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains("tools       faulty_echo, faulty_host_services; 1 call answered live (1 differed from the recorded result)"),
        "{stdout}"
    );
    let context: Vec<Value> = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let results: Vec<(&str, &str)> = context
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![("call_1", r#"{"word":"live"}"#), ("call_2", "coupons.py")]
    );
    let dispatch = read_events(&events)
        .into_iter()
        .find(|e| e["event"] == "tool_dispatch")
        .unwrap();
    assert_eq!(
        dispatch,
        json!({
            "event": "tool_dispatch",
            "message_index": 3,
            "engine": "faulty",
            "call_id": "call_1",
            "tool": "faulty_echo",
            "arguments": "{\"word\": \"live\"}",
            "recorded": "{\"word\": \"stale\"}",
            "live": "{\"word\":\"live\"}",
            "failed": false,
            "equal": false,
            "replaced": true,
        })
    );
}

#[test]
fn a_panic_in_handle_tool_call_is_answered_as_an_error_and_the_replay_goes_on() {
    let tree = faulty_tree("  panic_in: handle_tool_call\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let out = tree.root().join("final.json");
    let output = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let live = report["tool_dispatches"][0]["live"].as_str().unwrap();
    assert!(
        live.starts_with(r#"{"error":"engine `faulty` failed in `handle_tool_call`"#),
        "{live}"
    );
    assert!(
        report["faults"][0]["message"]
            .as_str()
            .unwrap()
            .contains("told to panic in `handle_tool_call`"),
        "{stdout}"
    );
}

#[test]
fn the_event_log_has_one_json_event_a_line_of_every_kind_in_order() {
    // update_from_response panics at every model call: an `error` after each `usage`.
    let tree = faulty_tree("  panic_in: update_from_response\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let events = tree.root().join("events.jsonl");
    let output = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--at",
        "7:/new",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("events      "), "{stdout}");
    let kinds: Vec<(String, u64)> = read_events(&events)
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["message_index"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, u64)> = [
        ("session_start", 0),
        ("messages_appended", 0),
        ("messages_appended", 1),
        ("model_call", 2),
        ("messages_appended", 2),
        ("usage", 2),
        ("error", 2),
        ("tool_dispatch", 3),
        ("messages_appended", 3),
        ("messages_appended", 4),
        ("model_call", 5),
        ("messages_appended", 5),
        ("usage", 5),
        ("error", 5),
        ("command", 6),
        ("compaction", 6),
        ("command", 7),
        ("session_end", 7),
        ("session_reset", 7),
        ("session_start", 7),
        ("messages_appended", 7),
        ("model_call", 8),
        ("messages_appended", 8),
        ("usage", 8),
        ("error", 8),
        // The three errors are one failure: said once, then counted.
        ("warning", 9),
        ("session_end", 9),
    ]
    .iter()
    .map(|(kind, index)| (kind.to_string(), *index))
    .collect();
    assert_eq!(kinds, expected);
}

#[test]
fn a_run_that_fails_mid_stream_writes_neither_the_context_nor_the_event_log() {
    let tree = PluginDir::new();
    let path = tree.root().join("bad.jsonl");
    fs::write(
        &path,
        concat!(
            "{\"role\":\"system\",\"content\":\"be brief\"}\n",
            "{\"role\":\"user\",\"content\":\"hi\"}\n",
            "{\"role\":\"assistant\",\"content\":\"hello\"}\n",
            "{\"role\":\"user\",\"content\":\"more\"}\n",
            "{\"role\":\"assistant\",\"content\":\n",
        ),
    )
    .unwrap();
    let out = tree.root().join("final.json");
    let events = tree.root().join("events.jsonl");
    let output = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.jsonl:5:"), "{stderr}");
    assert!(
        stderr.contains("the replay stopped there: the context so far was not written to")
            && stderr.contains("and no event log was written to"),
        "{stderr}"
    );
    assert!(!out.exists() && !events.exists());
    let left: Vec<String> = fs::read_dir(tree.root())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, vec!["bad.jsonl", "plugins"], "no temporary file is left");
}

#[test]
fn commands_typed_and_given_by_flag_both_run_through_the_built_in_compressor() {
    let tree = PluginDir::new();
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let output = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--json",
        "--at",
        "1:/compress:coupon code",
        "--at",
        "7:/reset",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let mut report: Value = serde_json::from_str(&stdout).unwrap();
    // A transcript that records no id is the session of its file: its name and where it is.
    let mut sessions: Vec<String> = report["commands"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .map(|command| {
            command
                .as_object_mut()
                .unwrap()
                .remove("session_id")
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    sessions.dedup();
    assert!(
        sessions.len() == 1 && sessions[0].starts_with("t-"),
        "{sessions:?}"
    );
    assert_eq!(
        report["commands"],
        json!([
            {"message_index": 1, "command": "compress", "focus": "coupon code", "source": "flag"},
            {"message_index": 6, "command": "compress", "focus": "coupons", "source": "message"},
            {"message_index": 7, "command": "reset", "source": "flag"},
        ])
    );
    let triggers: Vec<&Value> = report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["trigger"])
        .collect();
    assert_eq!(triggers, vec!["manual", "manual"]);
    // After /reset: the system message, then what followed.
    assert_eq!(report["final_messages"], 3);
    assert_eq!(report["messages_replayed"], 9);
}

#[test]
fn a_bad_at_flag_is_refused_with_its_form() {
    let tree = PluginDir::new();
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let output = tree.run(&["run", path.to_str().unwrap(), "--at", "3:/explode"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("expected N:/compress[:focus], N:/new, N:/reset or N:/engine:NAME"),
        "{stderr}"
    );
}

fn small_conversation() -> Value {
    json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "text", "text": "see above"}]},
        {"role": "assistant", "content": "a2"}
    ])
}

#[test]
fn the_final_request_is_shaped_for_anthropic_prompt_caching_with_either_ttl() {
    let tree = PluginDir::new();
    let path = transcript(&tree, "t.json", small_conversation());
    for (ttl, marker) in [
        (None, json!({"type": "ephemeral"})),
        (Some("5m"), json!({"type": "ephemeral"})),
        (Some("1h"), json!({"type": "ephemeral", "ttl": "1h"})),
    ] {
        let out = tree.root().join("final.json");
        let mut args = vec![
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--cache-shape",
            "system_and_3",
        ];
        if let Some(ttl) = ttl {
            args.extend(["--cache-ttl", ttl]);
        }
        let output = tree.run(&args);
        assert!(output.status.success(), "{}", texts(&output).1);
        let written: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(
            written,
            json!([
                {"role": "system", "content": [{"type": "text", "text": "be brief", "cache_control": marker}]},
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": [{"type": "text", "text": "a1", "cache_control": marker}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "q2"},
                    {"type": "text", "text": "see above", "cache_control": marker}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "a2", "cache_control": marker}]}
            ]),
            "ttl {ttl:?}"
        );
    }
}

#[test]
fn the_cache_shape_needs_an_output_file() {
    let tree = PluginDir::new();
    let path = transcript(&tree, "t.json", small_conversation());
    let output = tree.run(&["run", path.to_str().unwrap(), "--cache-shape", "system_and_3"]);
    assert!(!output.status.success());
    assert!(texts(&output).1.contains("--out"), "{}", texts(&output).1);
}

#[test]
fn status_prints_what_get_status_reports_after_the_replay() {
    let tree = faulty_tree("  {}\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let output = tree.run(&["status", path.to_str().unwrap(), "--context-length", "1000"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&str> = status.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "last_prompt_tokens",
            "threshold_tokens",
            "context_length",
            "usage_percent",
            "compression_count",
            "generation",
            "facts_observed"
        ]
    );
    assert_eq!(status["context_length"], 1000);
    assert_eq!(status["compression_count"], 1, "the typed /compress: {stdout}");
}

#[test]
fn tool_calls_an_engine_tool_against_the_final_context() {
    let tree = faulty_tree("  {}\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let output = tree.run(&["tool", path.to_str().unwrap(), "faulty_echo", r#"{"a": [1, 2]}"#]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"a": [1, 2]})
    );

    // faulty_host_services counts the tokens of the messages it is given: the final context.
    let output = tree.run(&["tool", path.to_str().unwrap(), "faulty_host_services", "{}"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert!(answer["summary"].is_string(), "{stdout}");
    let report = tree.run(&["run", path.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_str(&texts(&report).0).unwrap();
    assert_eq!(
        answer["tokens"].as_array().unwrap().len() as u64,
        report["final_messages"].as_u64().unwrap()
    );
}

#[test]
fn tool_refuses_a_tool_the_engine_does_not_offer_and_arguments_that_are_not_an_object() {
    let tree = faulty_tree("  {}\n");
    let path = transcript(&tree, "t.json", conversation_with_an_engine_tool());
    let output = tree.run(&["tool", path.to_str().unwrap(), "lcm_grep", "{}"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim(),
        "error: no engine of this session offers a tool `lcm_grep` (the tools offered: faulty_echo, faulty_host_services)"
    );
    let output = tree.run(&["tool", path.to_str().unwrap(), "faulty_echo", "[1]"]);
    assert!(!output.status.success());
    assert!(
        texts(&output).1.contains("expected a JSON object"),
        "{}",
        texts(&output).1
    );
}

#[test]
fn calls_over_the_window_are_never_more_than_the_calls_and_the_final_context_is_told_apart() {
    let tree = PluginDir::new();
    let path = transcript(&tree, "t.json", small_conversation());
    let path = path.to_str().unwrap();
    let json = tree.run(&["run", path, "--context-length", "1", "--json"]);
    let report: Value = serde_json::from_str(&texts(&json).0).unwrap();
    assert_eq!(report["model_calls"], 2);
    let overrun = &report["over_window"];
    assert_eq!(
        overrun["times"], 2,
        "both calls, not the final context: {overrun}"
    );
    assert_eq!(overrun["first_at_message"], 2);
    assert_eq!(overrun["final_tokens"], report["final_tokens"]);

    // The report and --fail-over-window's error say the same, in the same words.
    let failed = tree.run(&["run", path, "--context-length", "1", "--fail-over-window"]);
    let (stdout, stderr) = texts(&failed);
    let said = format!(
        "2 model calls over it, first {} tokens before message 2, and the final context ({} tokens)",
        overrun["first_tokens"], report["final_tokens"]
    );
    assert!(stdout.contains(&format!("OVER THE WINDOW: {said}\n")), "{stdout}");
    assert_eq!(
        stderr.lines().last().unwrap(),
        format!("error: --fail-over-window: the context went over the 1-token window: {said}")
    );

    // `compress` makes no model call: only its final context can be over.
    let compressed = tree.run(&["compress", path, "--context-length", "1", "--fail-over-window"]);
    let (stdout, stderr) = texts(&compressed);
    assert!(stdout.contains("0 model calls"), "{stdout}");
    let line = stdout.lines().find(|l| l.contains("OVER THE WINDOW")).unwrap();
    let said = line.split_once("OVER THE WINDOW: ").unwrap().1;
    assert!(said.starts_with("the final context ("), "{line}");
    assert!(said.ends_with(" tokens); no model call was over it"), "{line}");
    assert!(stderr.trim_end().ends_with(said), "{stderr}");
}

#[test]
fn every_line_numbers_a_moment_by_the_transcript_message_it_comes_before() {
    // The long user message 3 puts the call before message 4 over the window: a manual
    // /compress, session hygiene and preflight all run there, with messages 0-3 in the context.
    let tree = PluginDir::new();
    let path = transcript(
        &tree,
        "t.json",
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "word ".repeat(8_000)},
            {"role": "assistant", "content": "done"}
        ]),
    );
    let args = [
        "run",
        path.to_str().unwrap(),
        "--context-length",
        "8000",
        "--at",
        "4:/compress",
    ];
    let json = tree.run(&[&args[..], &["--json"]].concat());
    let report: Value = serde_json::from_str(&texts(&json).0).unwrap();
    let compactions: Vec<(String, u64, u64)> = report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["trigger"].as_str().unwrap().to_owned(),
                c["at_message"].as_u64().unwrap(),
                c["messages_before"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        compactions,
        vec![
            ("manual".to_owned(), 4, 4),
            ("hygiene".to_owned(), 4, 4),
            ("preflight".to_owned(), 4, 4),
        ]
    );
    assert_eq!(report["over_window"]["first_at_message"], 4);
    assert_eq!(report["commands"][0]["message_index"], 4);

    let text = tree.run(&args);
    let (stdout, _) = texts(&text);
    for line in [
        "  at message 4: /compress (--at;",
        "  #1  before message 4 (manual /compress):",
        "  #2  before message 4 (session hygiene):",
        "  #3  before message 4 (preflight):",
        "OVER THE WINDOW: 1 model call over it, first ",
    ] {
        assert!(stdout.contains(line), "`{line}` in:\n{stdout}");
    }
    assert!(
        stdout.contains(" tokens before message 4, and the final context ("),
        "{stdout}"
    );
}

#[test]
fn a_command_line_that_does_not_parse_is_one_error_line_with_the_tip() {
    let dir = tempfile::tempdir().unwrap();
    let output = crate::support::run_ctxhost(dir.path(), &["run", "t.json", "--isolaton", "process"]);
    let (_, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr,
        "error: unexpected argument '--isolaton' found; tip: a similar argument exists: '--isolation' (see --help)\n"
    );
    // An observer with no name is no observer.
    let output = crate::support::run_ctxhost(dir.path(), &["run", "t.json", "--observer", ""]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        texts(&output)
            .1
            .starts_with("error: a value is required for '--observer <NAME>'"),
        "{}",
        texts(&output).1
    );
}

#[test]
fn records_left_out_are_counted_in_the_report_and_in_json() {
    let tree = PluginDir::new();
    let transcript = crate::support::example("transcripts/flaky-upload.claude-code.jsonl");
    let transcript = transcript.to_str().unwrap();
    let (stdout, _) = texts(&tree.run(&["run", transcript]));
    assert!(
        stdout.contains("records left out, not replayed as messages: 1 file-history-snapshot, 4 sidechain"),
        "{stdout}"
    );
    let (stdout, _) = texts(&tree.run(&["run", transcript, "--json"]));
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["records_left_out"]["sidechain (a subagent's record)"], 4,
        "{report}"
    );
    assert_eq!(report["pairing_repairs"], 0, "{report}");
}

/// A transcript that ends on a tool result ends before a model call: the loop's checks run there,
/// and the final context is what that call would send, under the window (verify38: a 110 KB log
/// read last left the final context at twice the window, never compacted). The output read last
/// stays after the summary, cut, under its call.
#[test]
fn a_transcript_ending_before_a_model_call_is_compacted_as_that_call_would_be() {
    let tree = PluginDir::new();
    let log: String = (0..2_000)
        .map(|n| {
            format!(
                "12:{:02}:{:02} GET /v2/quotes 200 req={n:06x}\n",
                n / 60 % 60,
                n % 60
            )
        })
        .collect();
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Pull the access log and tell me whether any request failed."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "terminal", "arguments": "{\"command\": \"cat access.log\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": log}
    ]);
    let path = transcript(&tree, "t.json", messages.clone());
    let out = tree.root().join("final.json");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--context-length",
        "8000",
        "--fail-over-window",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = tree.run(&args);
    let (stdout, stderr) = texts(&run);
    assert!(run.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["model_calls"], 1);
    let compactions = report["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), 1, "{report:#}");
    assert_eq!(compactions[0]["at_message"], 4, "after the last message");
    assert!(report["final_tokens"].as_u64().unwrap() < 8_000, "{report:#}");
    let context: Vec<Value> = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let last = context.last().unwrap();
    assert_eq!(last["tool_call_id"], "c1");
    let kept = last["content"].as_str().unwrap();
    assert!(
        kept.starts_with("12:00:00 GET /v2/quotes 200 req=000000\n"),
        "{kept}"
    );
    assert!(kept.ends_with("GET /v2/quotes 200 req=0007cf\n"), "{kept}");
    assert_eq!(
        context[context.len() - 2]["tool_calls"],
        messages[2]["tool_calls"]
    );

    // One that ends on the model's answer ends after a call: nothing runs after it.
    let mut answered = messages.as_array().unwrap().clone();
    answered.push(json!({"role": "assistant", "content": "No request failed."}));
    let path = transcript(&tree, "answered.json", Value::Array(answered));
    let run = tree.run(&[
        "run",
        path.to_str().unwrap(),
        "--context-length",
        "8000",
        "--json",
    ]);
    let report: Value = serde_json::from_str(&texts(&run).0).unwrap();
    let at: Vec<&Value> = report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|compaction| &compaction["at_message"])
        .collect();
    assert_eq!(at, [&json!(4)], "only before the answer: {report:#}");

    // `compress` is one manual compaction, no loop's turn: nothing runs after it, even when its
    // result stays over the threshold (a system prompt of most of the window).
    let mut heavy = messages.as_array().unwrap().clone();
    heavy[0] = json!({"role": "system", "content": "rule. ".repeat(2_500)});
    let path = transcript(&tree, "heavy.json", Value::Array(heavy));
    let compressed = tree.run(&[
        "compress",
        path.to_str().unwrap(),
        "--context-length",
        "4000",
        "--json",
    ]);
    let report: Value = serde_json::from_str(&texts(&compressed).0).unwrap();
    assert_eq!(report["compactions"].as_array().unwrap().len(), 1, "{report:#}");
    assert!(
        report["final_tokens"].as_u64().unwrap() >= 2_000,
        "over the threshold: {report:#}"
    );
}
