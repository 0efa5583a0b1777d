//! What the binary writes, and where: a stdout or stderr whose reader has gone (`2>&1 | head`).

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Output, Stdio},
};

use serde_json::{json, Value};

use crate::support::{ctxhost, texts, PluginDir};

/// A short conversation, written in the tree as `t.json`.
fn transcript(tree: &PluginDir) -> PathBuf {
    let path = tree.root().join("t.json");
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"}
    ]);
    fs::write(&path, messages.to_string()).unwrap();
    path
}

/// The write end of a pipe whose reader has closed: a write there fails with EPIPE, as it does
/// once `head` has read what it wanted.
fn closed_pipe() -> Stdio {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    writer.into()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn final_context(path: &Path) -> Vec<Value> {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_closed_stderr_loses_the_warnings_but_not_the_run_nor_its_outputs() {
    let tree = PluginDir::new();
    // Warnings from every channel: the config's typo (printed by the host), the window overrun
    // (logged), and info lines with -v.
    tree.config("model:\n  context_lenght: 8000\n");
    let path = transcript(&tree);
    let (out, events) = (tree.root().join("final.json"), tree.root().join("events.jsonl"));
    let run = |args: &[&str]| -> Output {
        ctxhost()
            .current_dir(tree.root())
            .args(args)
            .env_remove("RUST_LOG")
            .stderr(closed_pipe())
            .output()
            .unwrap()
    };
    let output = run(&[
        "-v",
        "run",
        path_str(&path),
        "--context-length",
        "1",
        "--out",
        path_str(&out),
        "--events",
        path_str(&events),
    ]);
    let (stdout, _) = texts(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("OVER THE WINDOW"),
        "the report is printed: {stdout}"
    );
    assert_eq!(final_context(&out).len(), 5);
    assert!(fs::read_to_string(&events).unwrap().contains("\"over_window\""));

    // A failure still says so by the exit status, which is all that is left to say it.
    let failed = run(&["run", "missing.json"]);
    assert_eq!(failed.status.code(), Some(1));
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_outputs_written_and_the_exit_status_kept() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    let out = tree.root().join("final.json");
    let run = |args: &[&str]| -> Output {
        ctxhost()
            .current_dir(tree.root())
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(closed_pipe())
            .output()
            .unwrap()
    };
    let args = ["run", path_str(&path), "--json", "--out", path_str(&out)];
    let output = run(&args);
    let (_, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_eq!(final_context(&out).len(), 5);

    // The run's own failure is still told, by its line and its status.
    fs::remove_file(&out).unwrap();
    let over = run(&[&args[..], &["--context-length", "1", "--fail-over-window"]].concat());
    let (_, stderr) = texts(&over);
    assert_eq!(over.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: --fail-over-window:"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(final_context(&out).len(), 5);
}
