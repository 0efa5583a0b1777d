//! The fact-retention table of `cargo xtask bench` (and `cargo xtask retention` alone): one
//! forced `ctxhost compress FILE --context-length W --json` per transcript at 16,000 and 8,000
//! tokens, with the built-in compressor at its defaults (extractive summarizer), read back from
//! the report: the transcript's tokens, the result's, and the facts of the compacted messages kept
//! verbatim (the host's measure, kit's `measure_retention`). Each transcript is also replayed
//! (`ctxhost run`, the same window) and every compaction's facts are summed: a replay folds each
//! summary into the next, so this measures what earlier compactions kept surviving later ones.
//!
//! Transcripts: the made-up corpus (`benches/sessions.rs`, written to `target/retention-corpus/`),
//! the bundled examples (`examples/transcripts/`), and the real Hermes and SWE-agent transcripts in
//! `../shared/transcripts/` when that folder is there. Saved to `target/bench-retention-table.json`
//! for `benches/ratios.py`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{generate::sessions::corpus, plugins::cargo_program};

/// The windows of the table.
const WINDOWS: [u64; 2] = [16_000, 8_000];

/// Runs every transcript at every window and saves the table.
pub fn write_retention_table(root: &Path) -> Result<()> {
    let status = Command::new(cargo_program())
        .args(["build", "--release", "-q", "-p", "ctxhost"])
        .current_dir(root)
        .status()
        .context("cannot start cargo build")?;
    if !status.success() {
        bail!("building ctxhost failed ({status})");
    }
    let binary = root
        .join("target/release")
        .join(format!("ctxhost{}", std::env::consts::EXE_SUFFIX));
    let mut rows = Vec::new();
    for (group, file) in transcripts(root)? {
        for window in WINDOWS {
            rows.push(measure(&binary, root, &group, &file, window)?);
        }
    }
    let path = root.join("target").join("bench-retention-table.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&rows)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// `(group, file)` for every transcript of the table.
fn transcripts(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let dir = root.join("target").join("retention-corpus");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, messages) in corpus() {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(&messages)?)
            .with_context(|| format!("writing {}", path.display()))?;
        files.push(("corpus".to_owned(), path));
    }
    files.extend(
        sorted_files(&root.join("examples/transcripts"))?
            .into_iter()
            .map(|p| ("examples".to_owned(), p)),
    );
    let shared = root.join("../shared/transcripts");
    if shared.is_dir() {
        // The Hermes export and the SWE-agent trajectories: the kind of session the tracker measures.
        let real = sorted_files(&shared)?.into_iter().filter(|path| {
            let name = path.file_name().and_then(|name| name.to_str()).unwrap_or("");
            name.starts_with("hermes__") || name.starts_with("swe-agent__")
        });
        files.extend(real.map(|p| ("shared".to_owned(), p)));
    }
    Ok(files)
}

fn sorted_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    Ok(files)
}

fn measure(binary: &Path, root: &Path, group: &str, file: &Path, window: u64) -> Result<Value> {
    let report = report_of(binary, root, "compress", file, window)?;
    let compaction = report["compactions"].get(0).cloned().unwrap_or(Value::Null);
    let input = compaction["tokens_before"]
        .as_u64()
        .or_else(|| report["final_tokens"].as_u64());
    let result = compaction["tokens_after"].as_u64().or(input);
    let retention = &compaction["retention"];
    // The same transcript replayed as the agent ran it: every compaction folds the summary before
    // it into its own, so what earlier compactions kept must survive the later ones too.
    let replay = report_of(binary, root, "run", file, window)?;
    let (mut replay_kept, mut replay_total, mut replay_compactions) = (0, 0, 0);
    for compaction in replay["compactions"].as_array().into_iter().flatten() {
        if compaction["outcome"]["status"] == "applied" {
            replay_compactions += 1;
            replay_kept += compaction["retention"]["kept"].as_u64().unwrap_or(0);
            replay_total += compaction["retention"]["total"].as_u64().unwrap_or(0);
        }
    }
    Ok(json!({
        "group": group,
        "transcript": file.file_name().and_then(|name| name.to_str()).unwrap_or(""),
        "window": window,
        "messages": report["messages_replayed"],
        "input_tokens": input,
        "result_tokens": result,
        "compacted": compaction["outcome"]["status"] == "applied",
        "facts_total": retention["total"].as_u64().unwrap_or(0),
        "facts_kept": retention["kept"].as_u64().unwrap_or(0),
        "engine_ms": compaction["duration_ms"],
        "replay": {
            "compactions": replay_compactions,
            "facts_total": replay_total,
            "facts_kept": replay_kept,
            "final_tokens": replay["final_tokens"],
        },
    }))
}

/// `ctxhost COMMAND FILE --context-length W --json --facts` with the built-in compressor.
fn report_of(binary: &Path, root: &Path, command: &str, file: &Path, window: u64) -> Result<Value> {
    let output = Command::new(binary)
        .arg(command)
        .arg(file)
        .args(["--context-length", &window.to_string(), "--json", "--facts"])
        // No config of the repository's (it names a plugin engine): the built-in compressor at
        // its defaults.
        .args(["--config", "/dev/null"])
        .current_dir(root)
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "ctxhost {command} {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout).with_context(|| format!("ctxhost {command} --json"))
}
