//! `cargo xtask bench`: the timing benchmarks (engine calls, token counting, whole replays), the
//! peak-memory probe, then the ratios the targets are stated in, all from one run.

use std::{path::Path, process::Command};

use anyhow::{bail, Context, Result};

use crate::plugins::cargo_program;

/// Runs every benchmark and prints the ratios.
pub fn run_benchmarks(filter: Option<&str>) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut timing = vec!["bench", "-p", "ctxhost", "--bench", "engine", "--"];
    timing.extend(filter);
    run(
        Command::new(cargo_program()).args(&timing).current_dir(&root),
        "the timing benchmarks",
    )?;
    let mut tokens = vec!["bench", "-p", "ctxhost", "--bench", "tokens", "--"];
    tokens.extend(filter);
    run(
        Command::new(cargo_program()).args(&tokens).current_dir(&root),
        "the token-counting benchmarks",
    )?;
    // A whole replay of 10,000 and 100,000 messages: about two minutes, ten samples each.
    let mut replay = vec!["bench", "-p", "ctxhost", "--bench", "replay", "--"];
    replay.extend(filter);
    run(
        Command::new(cargo_program()).args(&replay).current_dir(&root),
        "the replay benchmarks",
    )?;
    run(
        Command::new(cargo_program())
            .args(["bench", "-p", "ctxhost", "--bench", "memory"])
            .current_dir(&root),
        "the memory benchmark",
    )?;
    run(
        Command::new("python3")
            .arg("benches/ratios.py")
            .current_dir(&root),
        "benches/ratios.py",
    )
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("cannot start {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
