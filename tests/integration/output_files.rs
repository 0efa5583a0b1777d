//! What the binary writes, and where: a stdout or stderr whose reader has gone (`2>&1 | head`),
//! and the `--out` and `--events` files (their mode, a symlink, a read-only file, the transcript
//! itself).

use std::{
    fs,
    os::unix::fs::{symlink, PermissionsExt as _},
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

/// Runs ctxhost under `umask`.
fn run_with_umask(tree: &PluginDir, umask: &str, args: &[&str]) -> Output {
    let binary = env!("CARGO_BIN_EXE_ctxhost");
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(binary)
        .args(args)
        .current_dir(tree.root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn the_outputs_get_the_mode_the_umask_gives_and_a_replaced_file_keeps_its_own() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    let (out, events) = (tree.root().join("final.json"), tree.root().join("events.jsonl"));
    let args = [
        "run",
        path_str(&path),
        "--out",
        path_str(&out),
        "--events",
        path_str(&events),
    ];
    let output = run_with_umask(&tree, "027", &args);
    assert!(output.status.success(), "{}", texts(&output).1);
    assert_eq!(mode(&out), 0o640);
    assert_eq!(mode(&events), 0o640);

    fs::set_permissions(&out, fs::Permissions::from_mode(0o604)).unwrap();
    let output = run_with_umask(&tree, "077", &args);
    assert!(output.status.success(), "{}", texts(&output).1);
    assert_eq!(mode(&out), 0o604, "a file replaced keeps its mode");
}

#[test]
fn an_output_through_a_symlink_replaces_its_target_and_the_link_stays() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    fs::create_dir(tree.root().join("keep")).unwrap();
    let target = tree.root().join("keep/final.json");
    let link = tree.root().join("final.json");
    // Relative, as most links are: read from the link's folder. The target need not exist yet.
    symlink("keep/final.json", &link).unwrap();
    let output = tree.run(&["run", path_str(&path), "--out", path_str(&link)]);
    assert!(output.status.success(), "{}", texts(&output).1);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(final_context(&target).len(), 5);
}

#[test]
fn a_read_only_file_or_the_transcript_itself_is_refused_and_left_as_it_was() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    let original = fs::read(&path).unwrap();

    let read_only = tree.root().join("ro.json");
    fs::write(&read_only, "kept").unwrap();
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o444)).unwrap();
    let output = tree.run(&["run", path_str(&path), "--out", path_str(&read_only)]);
    let (_, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: {}: cannot write: the file is read-only; make it writable to replace it",
            read_only.display()
        )
    );
    assert_eq!(fs::read_to_string(&read_only).unwrap(), "kept");

    // By its own name, through a link, or as the event log: one line, nothing read or written.
    let link = tree.root().join("link.json");
    symlink(&path, &link).unwrap();
    for (flag, output_path) in [("--out", &path), ("--out", &link), ("--events", &path)] {
        let output = tree.run(&["run", path_str(&path), flag, path_str(output_path)]);
        let (stdout, stderr) = texts(&output);
        assert_eq!(output.status.code(), Some(1), "{flag} {}", output_path.display());
        assert_eq!(
            stderr.trim_end(),
            format!(
                "error: {}: {flag} names the transcript being read; nothing was written (name another file)",
                output_path.display()
            )
        );
        assert!(stdout.is_empty(), "no report: {stdout}");
        assert_eq!(fs::read(&path).unwrap(), original);
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
}

#[test]
fn a_standard_stream_named_as_an_output_is_refused_and_neither_stream_is_overwritten() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    let (out_file, err_file) = (tree.root().join("a.out"), tree.root().join("a.err"));
    for (flag, stream) in [
        ("--out", "/dev/stdout"),
        ("--out", "/dev/stderr"),
        ("--events", "/dev/stdout"),
        ("--out", "/dev/fd/1"),
        ("--out", "/proc/self/fd/2"),
    ] {
        // Streams redirected to files, as `>a.out 2>a.err` does: the host moves its stdout aside
        // at start, so fd 1 then names stderr's file.
        let output = ctxhost()
            .current_dir(tree.root())
            .args(["run", path_str(&path), flag, stream])
            .env_remove("RUST_LOG")
            .stdout(fs::File::create(&out_file).unwrap())
            .stderr(fs::File::create(&err_file).unwrap())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{flag} {stream}");
        let stderr = fs::read_to_string(&err_file).unwrap();
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            [format!(
                "error: {stream}: cannot write: a standard stream or another open file of a process, not a file: an output is written to a file and renamed into place"
            )],
            "{flag} {stream}"
        );
        assert_eq!(fs::read_to_string(&out_file).unwrap(), "", "{flag} {stream}");
    }
    // Stdout a pipe: the same line, not a missing file named `pipe:[…]`.
    let output = tree.run(&["run", path_str(&path), "--out", "/dev/stdout"]);
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("/dev/stdout: cannot write: a standard stream"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn out_dash_writes_the_final_context_on_stdout_and_the_report_on_stderr() {
    let tree = PluginDir::new();
    let path = transcript(&tree);
    let file = tree.root().join("final.json");
    let to_file = tree.run(&["run", path_str(&path), "--out", path_str(&file)]);
    assert!(to_file.status.success());
    let output = tree.run(&["run", path_str(&path), "--out", "-"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    // The very context `--out FILE` writes, for the next program of a pipe.
    assert_eq!(stdout, fs::read_to_string(&file).unwrap());
    assert!(
        stderr.contains("output      stdout"),
        "the report is on stderr: {stderr}"
    );
    // Where stdout already has a use, one line says so and nothing runs.
    for (args, said) in [
        (
            &["run", path_str(&path), "--out", "-", "--json"][..],
            "where --json writes the report",
        ),
        (
            &["status", path_str(&path), "--out", "-"][..],
            "this command prints its answer on stdout",
        ),
    ] {
        let output = tree.run(args);
        let (stdout, stderr) = texts(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(stdout.is_empty() && stderr.contains(said), "{args:?}: {stderr}");
    }
}

/// `--out-fields api` says in one `warning:` line, without `-v`, when it changed what the file
/// says (a freeform tool's input rewritten as `{"input": …}`), as the README promises; fields
/// left out alone, which the option asks for, are said only at `-v`, and once.
#[test]
fn out_fields_api_warns_once_when_it_rewrote_arguments_and_only_at_v_for_fields() {
    let tree = PluginDir::new();
    let patch = "*** Begin Patch\n*** Update File: a.py\n*** End Patch";
    let with_freeform = tree.root().join("freeform.json");
    fs::write(
        &with_freeform,
        json!([
            {"role": "user", "content": "patch a.py"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "apply_patch", "arguments": patch}
            }]},
            {"role": "tool", "tool_call_id": "c1", "content": "Done", "call_ms": 12},
            {"role": "assistant", "content": "patched"}
        ])
        .to_string(),
    )
    .unwrap();
    let fields_only = tree.root().join("fields.json");
    fs::write(
        &fields_only,
        json!([
            {"role": "user", "content": "q1", "uuid": "u1"},
            {"role": "assistant", "content": "a1", "uuid": "u2"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = tree.root().join("final.json");
    let run = |path: &Path, verbose: bool| {
        let mut args = vec![
            "run",
            path_str(path),
            "--out",
            path_str(&out),
            "--out-fields",
            "api",
        ];
        if verbose {
            args.push("-v");
        }
        let output = tree.run(&args);
        let (_, stderr) = texts(&output);
        assert!(output.status.success(), "{stderr}");
        stderr
    };
    let said = |stderr: &str, prefix: &str| {
        stderr
            .lines()
            .filter(|line| line.starts_with(&format!("{prefix}: --out-fields api:")))
            .count()
    };

    let stderr = run(&with_freeform, false);
    assert_eq!(said(&stderr, "warning"), 1, "{stderr}");
    assert!(stderr.contains("whose arguments were not JSON"), "{stderr}");
    assert!(stderr.contains("`call_ms` (1)"), "{stderr}");
    let written = final_context(&out);
    assert_eq!(
        written[1]["tool_calls"][0]["function"]["arguments"],
        json!({ "input": patch }).to_string()
    );
    // At `-v` too the line is said once, as a warning.
    let stderr = run(&with_freeform, true);
    assert_eq!(
        (said(&stderr, "warning"), said(&stderr, "info")),
        (1, 0),
        "{stderr}"
    );

    let stderr = run(&fields_only, false);
    assert!(!stderr.contains("--out-fields api"), "{stderr}");
    let stderr = run(&fields_only, true);
    assert_eq!(
        (said(&stderr, "warning"), said(&stderr, "info")),
        (0, 1),
        "{stderr}"
    );
}
