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

/// A transcript longer than what detection reads of its start, so that a reader given only what
/// detection left would start mid-record.
fn long_transcript() -> (String, usize) {
    let records: Vec<Value> = (0..600)
        .flat_map(|turn| {
            [
                json!({"role": "user", "content": format!("question {turn}: {}", "why ".repeat(60))}),
                json!({"role": "assistant", "content": format!("answer {turn}")}),
            ]
        })
        .collect();
    let text = lines(&records);
    assert!(text.len() > ctxhost::formats::DETECTION_PREFIX_BYTES * 2);
    (text, records.len())
}

/// Runs ctxhost with `input` written to its stdin by a thread, killed if it has not ended in a
/// minute (a second open of the pipe would wait forever).
fn run_with_stdin(dir: &std::path::Path, args: &[&str], input: String) -> std::process::Output {
    use std::io::Write as _;
    let mut child = crate::support::ctxhost()
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ctxhost starts");
    let mut stdin = child.stdin.take().unwrap();
    // A run that stops reading early closes the pipe: the write error is no failure of the test.
    std::thread::spawn(move || drop(stdin.write_all(input.as_bytes())));
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output().unwrap();
        let _ = done.send(());
        output
    });
    if finished.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
        let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
        panic!("ctxhost {args:?} was still running after a minute");
    }
    waiter.join().unwrap()
}

#[test]
fn a_transcript_piped_to_dev_stdin_reads_as_the_same_file_would() {
    let tree = PluginDir::new();
    let (text, count) = long_transcript();
    let out = tree.root().join("out.json");
    let args = [
        "run",
        "/dev/stdin",
        "--engine",
        "compressor",
        "--context-length",
        "10000000",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = run_with_stdin(tree.root(), &args, text.clone());
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(warnings(&stderr), Vec::<&str>::new());
    let context = ctxhost_engine_abi::messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(context.len(), count);
    assert_eq!(context[count - 1].text(), "answer 599");

    // compare reads the transcript once per engine: the pipe's bytes are held for the rows.
    let args = ["compare", "/dev/stdin", "--engines", "compressor", "--json"];
    let output = run_with_stdin(tree.root(), &args, text);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["messages"], count);
    assert_eq!(report["engines"][0]["status"], "ran", "{stdout}");
    assert_eq!(report["engines"][0]["final_messages"], count, "{stdout}");

    // An error in piped bytes names the path the user gave, and the record's line.
    let args = ["run", "/dev/stdin"];
    let broken = "{\"role\": \"user\", \"content\": \"a\"}\nnope\n".to_owned();
    let output = run_with_stdin(tree.root(), &args, broken);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stderr.starts_with("error: /dev/stdin:2:"), "{stderr}");
}

/// `-` is the standard input, as `--out -` is the standard output (verify35 tried it first).
#[test]
fn a_dash_reads_the_transcript_from_the_standard_input() {
    let tree = PluginDir::new();
    let (text, count) = long_transcript();
    let args = ["run", "-", "--engine", "compressor", "--json"];
    let output = run_with_stdin(tree.root(), &args, text.clone());
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["messages_replayed"], count);

    let args = ["compare", "-", "--engines", "compressor", "--json"];
    let output = run_with_stdin(tree.root(), &args, text);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["engines"][0]["final_messages"], count, "{stdout}");

    let broken = "{\"role\": \"user\", \"content\": \"a\"}\nnope\n".to_owned();
    let output = run_with_stdin(tree.root(), &["run", "-"], broken);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stderr.starts_with("error: -:2:"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn a_transcript_written_to_a_fifo_is_read_once_and_does_not_hang() {
    let tree = PluginDir::new();
    let fifo = tree.root().join("transcript.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (text, count) = long_transcript();
    let writer_path = fifo.clone();
    // Not joined: were ctxhost never to open the FIFO, the writer would wait for it forever.
    std::thread::spawn(move || drop(fs::write(writer_path, text)));
    let output = crate::support::run_ctxhost_within(
        tree.root(),
        &["run", fifo.to_str().unwrap(), "--engine", "compressor", "--json"],
        std::time::Duration::from_secs(60),
    );
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["messages_replayed"], count);
}
