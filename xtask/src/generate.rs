//! `cargo xtask gen-heavy OUT [--messages N] [--shape heavy|tool-heavy]`: writes a benchmark
//! session (`benches/sessions.rs`: [`heavy_session`], or [`tool_heavy_conversation`], which the
//! replay and observer benchmarks replay) to a file, so that whole-process runs such as
//! `ctxhost compress OUT --context-length 200000` can be timed on it.
//!
//! `.jsonl` files get one OpenAI message a line; anything else a JSON array of messages.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use anyhow::{Context, Result};

#[path = "../../benches/sessions.rs"]
pub(crate) mod sessions;

use sessions::{heavy_session, tool_heavy_conversation};

/// Which benchmark session to write.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Shape {
    /// [`heavy_session`]: the `compress` and `run` process benchmarks' (issue 7).
    Heavy,
    /// [`tool_heavy_conversation`]: the replay and observer benchmarks'.
    ToolHeavy,
}

/// Writes the session `shape` of `messages` messages to `out`; returns the bytes written.
pub fn write_session(out: &Path, shape: Shape, messages: usize) -> Result<u64> {
    let session = match shape {
        Shape::Heavy => heavy_session(messages),
        Shape::ToolHeavy => tool_heavy_conversation(messages),
    };
    let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut writer = BufWriter::new(file);
    let jsonl = out.extension().is_some_and(|ext| ext == "jsonl");
    if jsonl {
        for message in &session {
            serde_json::to_writer(&mut writer, message)?;
            writer.write_all(b"\n")?;
        }
    } else {
        serde_json::to_writer(&mut writer, &session)?;
    }
    writer
        .flush()
        .with_context(|| format!("writing {}", out.display()))?;
    let bytes = std::fs::metadata(out)?.len();
    eprintln!(
        "{}: {} messages, {:.1} MB",
        out.display(),
        session.len(),
        bytes as f64 / 1e6
    );
    Ok(bytes)
}
