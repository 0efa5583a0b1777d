//! The model server, the workspace a test runs `ctxhost` in, and the transcripts it replays.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

use serde_json::{json, Value};
use tempfile::TempDir;

/// `auxiliary.compression` lines that keep SmolLM2-135M's answer in the template: a 135M model
/// left alone writes anything (a Python comment block, a list of headings) and whether it writes
/// a heading changes with every prompt. llama.cpp's server takes a GBNF `grammar`, so the answer
/// is held to `## Goal` and `## Next Steps`, each with a bullet the model writes; a user with a
/// small local model can do the same.
pub const IN_TEMPLATE: &str = r###"    max_tokens: 200
    extra:
      temperature: 0
      grammar: |
        root ::= "## Goal\n" item "\n## Next Steps\n" item
        item ::= "- " [^\n#]+ "\n"
"###;

/// The model the server serves (its file is `SmolLM2-135M-Instruct.Q4_1.gguf`).
pub const MODEL: &str = "SmolLM2-135M-Instruct";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/llm-server")
}

fn run_script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script().display()))
}

/// Installs the server's venv once per test run (several tests start servers at once).
fn ensure_installed() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let output = run_script(&["install"]);
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    });
    if let Err(error) = installed {
        panic!(
            "the model server could not be installed (`tests/e2e/llm-server install`; it needs \
             python3 with venv, a C++ compiler and access to PyPI the first time):\n{error}"
        );
    }
}

/// A running model server, stopped when dropped.
pub struct ModelServer {
    state: TempDir,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
}

impl ModelServer {
    /// A server on a free loopback port.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server that requires `key`.
    pub fn start_with_key(key: &str) -> Self {
        Self::start_with(&["--api-key", key])
    }

    fn start_with(extra: &[&str]) -> Self {
        ensure_installed();
        let state = tempfile::tempdir().unwrap();
        let owner = std::process::id().to_string();
        let state_arg = state.path().to_str().unwrap();
        let mut args = vec!["start", state_arg, "--owner", &owner];
        args.extend_from_slice(extra);
        let output = run_script(&args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the model server did not start (`tests/e2e/llm-server start`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let base_url = stdout.lines().last().unwrap_or_default().trim().to_owned();
        assert!(
            base_url.starts_with("http://127.0.0.1:"),
            "unexpected output: {stdout}"
        );
        Self { state, base_url }
    }

    /// Stops the server now (a second stop does nothing).
    pub fn stop(&self) {
        let output = run_script(&["stop", self.state.path().to_str().unwrap()]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.state.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = run_script(&["stop", self.state.path().to_str().unwrap()]);
    }
}

/// A folder holding `config.yaml` and transcripts, where `ctxhost` runs.
pub struct Workspace {
    dir: TempDir,
}

/// What a run of `ctxhost` printed and wrote.
pub struct Run {
    /// The report (`--json`).
    pub report: Value,
    /// Everything printed, stdout and stderr.
    pub printed: String,
    /// The final context (`--out`), as text and as messages.
    pub written: String,
    /// The final context's messages.
    pub context: Vec<Value>,
}

impl Run {
    /// The engine's account of each compaction (`details`).
    pub fn compactions(&self) -> Vec<Value> {
        self.report["compactions"].as_array().cloned().unwrap_or_default()
    }

    /// The text of the summary message in the final context.
    pub fn summary(&self) -> String {
        self.context
            .iter()
            .filter_map(|message| message["content"].as_str())
            .find(|text| text.starts_with("[CONTEXT COMPACTION]"))
            .unwrap_or_else(|| panic!("no summary in the final context:\n{}", self.written))
            .to_owned()
    }
}

impl Workspace {
    /// A workspace whose config points the summarizer at `base_url`, with `extra` lines appended
    /// under `auxiliary.compression` (indented by the caller's text).
    pub fn new(base_url: &str, summarizer_lines: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "compression:\n  protect_first_n: 1\n  protect_last_n: 4\nauxiliary:\n  compression:\n    model: {MODEL}\n    base_url: {base_url}\n    timeout: 120\n{summarizer_lines}"
        );
        fs::write(dir.path().join("config.yaml"), config).unwrap();
        Self { dir }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `messages` as `name` and returns its path.
    pub fn write_transcript(&self, name: &str, messages: &[Value]) -> PathBuf {
        let path = self.path().join(name);
        fs::write(&path, serde_json::to_string_pretty(messages).unwrap()).unwrap();
        path
    }

    /// Runs `ctxhost -vv <command> <transcript> --json --out <out>` with `args` and `env` added;
    /// the run must succeed.
    pub fn ctxhost(&self, command: &str, transcript: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
        let out = self.path().join(format!(
            "{}.out.json",
            transcript.file_stem().unwrap().to_string_lossy()
        ));
        let mut ctxhost = Command::new(env!("CARGO_BIN_EXE_ctxhost"));
        ctxhost
            .current_dir(self.path())
            .args(["-vv", "--config", "config.yaml", command])
            .arg(transcript)
            .args(["--json", "--out"])
            .arg(&out)
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("CTXHOST_SUMMARIZER_API_KEY");
        for (name, value) in env {
            ctxhost.env(name, value);
        }
        let output = ctxhost.output().expect("run ctxhost");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "ctxhost {command} failed:\n{stderr}\n{stdout}"
        );
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("the report is not JSON ({error}):\n{stdout}"));
        let written = fs::read_to_string(&out).expect("the final context was written");
        let context: Vec<Value> = serde_json::from_str(&written).unwrap();
        Run {
            report,
            printed: format!("{stdout}\n{stderr}"),
            written,
            context,
        }
    }
}

fn shell(id: &str, command: &str) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": id, "type": "function", "function": {
            "name": "terminal",
            "arguments": json!({"command": command}).to_string(),
        }}],
    })
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn tool(id: &str, text: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": text})
}

/// A debugging session of `steps` rounds (about 330 tokens each): paths, a failing command with
/// its error, constraints and requests, as an agent's transcript holds them.
pub fn debugging_session(steps: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent working in the shop repository."}),
        user("The coupon discount is wrong at checkout: 10% off gives 0% off. Fix src/coupons/apply.py and never touch migrations/."),
    ];
    for step in 0..steps {
        let id = format!("call_{step}");
        messages.push(shell(&id, "pytest -q tests/test_coupons.py"));
        messages.push(tool(
            &id,
            &format!(
                "{}FAILED tests/test_coupons.py::test_percent_off - AssertionError: expected 90.0, got 100.0\n1 failed, 11 passed in 0.4{step}s\nExit code: 1",
                "tests/test_coupons.py ........ [ 66%]\n".repeat(8)
            ),
        ));
        messages.push(assistant(&format!(
            "Attempt {step}: the discount in src/coupons/apply.py is applied after rounding to cents, so a 10% coupon on a small basket rounds away. I will check src/coupons/rules.py next."
        )));
        messages.push(user(&format!(
            "Go on with step {step}, and keep the signature of apply_coupon unchanged."
        )));
    }
    messages.push(user(
        "Also add a CHANGELOG.md entry for issue #481, then rerun `pytest -q`.",
    ));
    messages.push(assistant("I will add the entry and rerun the tests."));
    messages
}
