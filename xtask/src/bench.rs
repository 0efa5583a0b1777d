//! `cargo xtask bench`: the timing benchmarks (engine calls, token counting, whole replays), the
//! peak-memory probe, then the ratios the targets are stated in, all from one run.

use std::{path::Path, process::Command};

use anyhow::{bail, Context, Result};

use crate::plugins::cargo_program;

/// The heavy session's files besides OpenAI JSONL, each named for the benchmark that compresses it
/// (`process/compress_heavy_<stem>`).
const HEAVY_FORMATS: [(crate::generate::Written, &str); 6] = [
    (crate::generate::Written::ClaudeCode, "claude-code.jsonl"),
    (crate::generate::Written::Openhands, "openhands.json"),
    (crate::generate::Written::Hermes, "hermes.jsonl"),
    (crate::generate::Written::Codex, "codex.jsonl"),
    (crate::generate::Written::CodexLegacy, "codex-legacy.jsonl"),
    (crate::generate::Written::SweAgent, "swe-agent.traj"),
];

/// Runs every benchmark and prints the ratios.
pub fn run_benchmarks(filter: Option<&str>) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if filter == Some("lcm") {
        return run_lcm_benchmarks(&root);
    }
    let timed = [
        ("engine", "the timing benchmarks"),
        ("tokens", "the token-counting benchmarks"),
        // A whole replay of 10,000 and 100,000 messages: about two minutes, ten samples each.
        ("replay", "the replay benchmarks"),
        // The whole process on the heavy session: `ctxhost compress` and `ctxhost run`, spawned.
        ("process", "the whole-process benchmarks"),
        // The same replay with observers attached (none, idle, every fact, lcm): under a minute.
        ("observers", "the observer benchmarks"),
        // `ctxhost serve` against the same engine in process: the pipe, the JSON, the check.
        ("serve", "the serve benchmarks"),
        // Process isolation: a plugin in process and in a child `ctxhost serve`.
        ("isolation", "the isolation benchmarks"),
    ];
    // The heavy session in every other format a user has, for the whole-process benchmark.
    let formats = root.join("target/bench-heavy");
    std::fs::create_dir_all(&formats).with_context(|| format!("creating {}", formats.display()))?;
    for (written, name) in HEAVY_FORMATS {
        let out = formats.join(name);
        crate::generate::write_session(&out, crate::generate::Shape::Heavy, 5_000, written)?;
    }
    for (bench, what) in timed {
        let mut args = vec!["bench", "-p", "ctxhost", "--bench", bench, "--"];
        args.extend(filter);
        let mut command = Command::new(cargo_program());
        command.args(&args).current_dir(&root);
        if bench == "process" {
            command.env("CTXHOST_HEAVY_FORMATS", &formats);
        }
        run(&mut command, what)?;
    }
    run(
        Command::new(cargo_program())
            .args(["bench", "-p", "ctxhost", "--bench", "memory"])
            .current_dir(&root),
        "the memory benchmark",
    )?;
    compare_retention(&root)?;
    crate::retention::write_retention_table(&root)?;
    run(
        Command::new("python3")
            .arg("benches/ratios.py")
            .current_dir(&root),
        "benches/ratios.py",
    )
}

/// The fact-retention table alone (`cargo xtask retention`).
pub fn run_retention_table() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    crate::retention::write_retention_table(&root)?;
    run(
        Command::new("python3")
            .args(["benches/ratios.py", "--retention"])
            .current_dir(&root),
        "benches/ratios.py --retention",
    )
}

/// `cargo xtask bench lcm`: the lcm store's figures at 10,000, 100,000 and 1,000,000 messages (the
/// stores are built once into .cache/lcm-bench/ and reused), then the same figures for
/// lossless-hermes-py, installed into .cache/py/ by the script, side by side.
fn run_lcm_benchmarks(root: &Path) -> Result<()> {
    run(
        Command::new(cargo_program())
            .args(["bench", "-p", "ctxhost-lcm", "--bench", "lcm"])
            .current_dir(root),
        "the lcm benchmark",
    )?;
    run(
        Command::new("python3")
            .args(["benches/lcm_compare.py", "1000,10000,100000"])
            .current_dir(root),
        "benches/lcm_compare.py",
    )
}

/// Fact retention of the summarizers on the two bundled examples written to compact, through
/// `ctxhost compare` (the compressor at its defaults and tightened, masking for contrast), saved
/// for ratios.py. With a model configured in a config.yaml of your own, add it as another
/// configuration to compare the model's summaries with the extractive ones.
fn compare_retention(root: &Path) -> Result<()> {
    // Masking runs from its plugin folder: stage it, or a clean clone would compare without it.
    crate::plugins::build_and_stage(crate::plugins::Profile::Release)?;
    let mut results = Vec::new();
    for example in ["coupon-fix.json", "warehouse-migration.json"] {
        let transcript = format!("examples/transcripts/{example}");
        let output = Command::new(cargo_program())
            .args([
                "run",
                "--release",
                "-q",
                "-p",
                "ctxhost",
                "--",
                "compare",
                &transcript,
            ])
            .args([
                "--plugins-dir",
                "plugins",
                "--engines",
                "compressor,compressor@tight,masking",
            ])
            .args([
                "--set",
                "tight.threshold=0.3",
                "--set",
                "tight.target_ratio=0.1",
                "--json",
            ])
            .current_dir(root)
            .output()
            .context("cannot start ctxhost compare")?;
        if !output.status.success() {
            bail!(
                "ctxhost compare {example} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).context("ctxhost compare --json")?;
        results.push(serde_json::json!({ "example": example, "report": report }));
    }
    let path = root.join("target").join("bench-retention.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&results)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("cannot start {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
