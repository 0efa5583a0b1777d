//! Transcripts as users have them, through the binary: a session picked from an export, a
//! malformed record in the middle, a broken tool pairing, a `--format` that does not fit.

use std::fs;

use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::support::{texts, PluginDir};

fn lines(records: &[Value]) -> String {
    records.iter().map(|record| format!("{record}\n")).collect()
}

fn session(id: &str, question: &str) -> Value {
    json!({"id": id, "model": "m", "system_prompt": "You are Hermes.", "messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": format!("About {question}")},
    ]})
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .collect()
}

#[test]
fn session_picks_one_session_of_an_export_and_an_unknown_id_lists_the_ids() {
    let tree = PluginDir::new();
    let path = tree.root().join("export.jsonl");
    fs::write(
        &path,
        lines(&[session("s-alpha", "alpha"), session("s-beta", "beta")]),
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let out = tree.root().join("out.json");
    let output = tree.run(&["run", file, "--session", "s-be", "--out", out.to_str().unwrap()]);
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let context: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(context[1]["content"], "beta");
    assert_eq!(
        warnings(&stderr),
        [format!(
            "warning: {file}: the file holds 2 sessions (`s-alpha`, `s-beta`); read session 2 of 2, `s-beta`, as asked"
        )]
    );

    let output = tree.run(&["run", file]);
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        warnings(&stderr),
        [format!(
            "warning: {file}: the file holds 2 sessions (`s-alpha`, `s-beta`); read the first, `s-alpha`; pass --session ID to read another"
        )]
    );

    let output = tree.run(&["run", file, "--session", "s-gamma"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: {file}: no session whose id starts with `s-gamma` (the file holds `s-alpha`, `s-beta`)"
        )
    );
}

#[test]
fn a_malformed_record_stops_the_run_with_a_hint_and_is_skipped_when_asked() {
    let tree = PluginDir::new();
    let path = tree.root().join("t.jsonl");
    let mut text = lines(&[
        json!({"role": "user", "content": "a"}),
        json!({"role": "assistant", "content": "b"}),
    ]);
    text.push_str("{\"role\": \"user\", \"content\": tru}\n");
    text.push_str(&lines(&[
        json!({"role": "user", "content": "c"}),
        json!({"role": "assistant", "content": "d"}),
    ]));
    fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();

    let output = tree.run(&["run", file, "--json"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: {file}:3:32: expected ident (byte 96) (pass --skip-bad-records to leave such records out and go on); the replay stopped there"
        )
    );

    let output = tree.run(&["run", file, "--json", "--skip-bad-records"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        warnings(&stderr),
        [format!(
            "warning: {file}: line 3, column 32: skipped a malformed record: expected ident (byte 96)"
        )]
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["bad_records_skipped"], 1);
    assert_eq!(report["messages_replayed"], 4);

    let output = tree.run(&["run", file, "--skip-bad-records"]);
    let (stdout, _) = texts(&output);
    assert!(
        stdout.contains("1 malformed records skipped (--skip-bad-records; each named in a warning)"),
        "{stdout}"
    );
}

#[test]
fn a_broken_pairing_is_warned_about_and_the_output_is_a_valid_sequence() {
    let tree = PluginDir::new();
    let path = tree.root().join("t.json");
    let messages = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "never mind"},
        {"role": "tool", "tool_call_id": "c1", "content": "late"},
        {"role": "assistant", "content": "ok"},
    ]);
    fs::write(&path, serde_json::to_string_pretty(&messages).unwrap()).unwrap();
    let file = path.to_str().unwrap();
    let out = tree.root().join("out.json");
    let output = tree.run(&[
        "run",
        file,
        "--out",
        out.to_str().unwrap(),
        "--engine",
        "compressor",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        warnings(&stderr),
        [
            format!("warning: {file}: line 6, column 3: tool call `c1` is never answered; a stub result stands in for it"),
            format!("warning: {file}: line 24, column 3: tool result `c1` answers no call of the message before it; it is dropped"),
        ]
    );
    let context = ctxhost_engine_abi::messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(find_sequence_problems(&context), vec![]);
    assert!(!stdout.contains("errors "), "no engine is blamed: {stdout}");
}

#[test]
fn a_format_that_does_not_fit_the_file_is_refused_naming_the_one_it_looks_like() {
    let tree = PluginDir::new();
    let path = tree.root().join("session.jsonl");
    let record = json!({"parentUuid": null, "isSidechain": false, "type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}});
    fs::write(&path, lines(&[record])).unwrap();
    let file = path.to_str().unwrap();
    let output = tree.run(&["run", file, "--format", "openai-jsonl"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: `{file}` does not look like OpenAI messages (JSONL); it looks like Claude Code session (JSONL) (pass --format claude-code)"
        )
    );
}

#[test]
fn compare_reads_the_session_asked_for_and_skips_bad_records_when_asked() {
    let tree = PluginDir::new();
    let path = tree.root().join("export.jsonl");
    let mut text = lines(&[session("s-alpha", "alpha")]);
    text.push_str("{\"id\": \"s-broken\", \"messages\": [{\"role\": \"wizard\"}]}\n");
    text.push_str(&lines(&[session("s-beta", "beta")]));
    fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    let output = tree.run(&[
        "compare",
        file,
        "--engines",
        "compressor",
        "--session",
        "s-beta",
        "--json",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["messages"], 3,
        "the system prompt, the question and the answer"
    );

    let output = tree.run(&[
        "compare",
        file,
        "--engines",
        "compressor",
        "--session",
        "s-broken",
    ]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("unknown variant `wizard`"), "{stderr}");
    assert!(stderr.contains("pass --skip-bad-records"), "{stderr}");
    let output = tree.run(&[
        "compare",
        file,
        "--engines",
        "compressor",
        "--session",
        "s-broken",
        "--skip-bad-records",
        "--json",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("skipped a malformed record"), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["messages"], 0);
}
