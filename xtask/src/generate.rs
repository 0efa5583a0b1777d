//! `cargo xtask gen-heavy OUT [--messages N] [--shape heavy|tool-heavy]`: writes a benchmark
//! session (`benches/sessions.rs`: [`heavy_session`], or [`tool_heavy_conversation`], which the
//! replay and observer benchmarks replay) to a file, so that whole-process runs such as
//! `ctxhost compress OUT --context-length 200000` can be timed on it.
//!
//! `.jsonl` files get one OpenAI message a line; anything else a JSON array of messages. With
//! `--format`, the same session as another agent writes it, with the fields real files carry, so
//! that each reader's speed can be timed on the same conversation:
//! - `claude-code`: a session log (records with `uuid`/`parentUuid`, content blocks, and each tool
//!   result's `toolUseResult`);
//! - `openhands`: an event stream (each action with its `tool_call_metadata` and the whole model
//!   response, each observation with its command's `metadata`);
//! - `hermes`: a `hermes sessions export` line (the session's row with its messages);
//! - `codex`, `codex-legacy`: a Codex rollout (`session_meta`, `response_item`s), and the older
//!   form (a bare header, then bare items);
//! - `swe-agent`: a `.traj` (`history`, and `trajectory` repeating it step by step).

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use anyhow::{Context, Result};
use serde_json::Value;

mod claude_code;
mod codex;
mod hermes;
mod openhands;
mod swe_agent;

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

/// The file format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Written {
    /// OpenAI messages: JSONL for a `.jsonl` file, else a JSON array.
    Openai,
    /// A Claude Code session log (JSONL).
    ClaudeCode,
    /// An OpenHands event stream (a JSON list of events).
    Openhands,
    /// A Hermes Agent session export (one session a line).
    Hermes,
    /// A Codex rollout (JSONL).
    Codex,
    /// A Codex rollout as older Codex versions wrote it (JSONL).
    CodexLegacy,
    /// A SWE-agent trajectory (`.traj`).
    SweAgent,
}

/// A file's content: records one a line, or one JSON document.
enum Document {
    Lines(Vec<Value>),
    Whole(Value),
}

/// Writes the session `shape` of `messages` messages to `out` as `written`; returns the bytes
/// written.
pub fn write_session(out: &Path, shape: Shape, messages: usize, written: Written) -> Result<u64> {
    let session = match shape {
        Shape::Heavy => heavy_session(messages),
        Shape::ToolHeavy => tool_heavy_conversation(messages),
    };
    let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut writer = BufWriter::new(file);
    let jsonl = out.extension().is_some_and(|ext| ext == "jsonl");
    let document = match written {
        Written::Openai if jsonl => Document::Lines(
            session
                .iter()
                .map(|m| serde_json::to_value(m).expect("a message"))
                .collect(),
        ),
        Written::Openai => Document::Whole(serde_json::to_value(&session)?),
        Written::ClaudeCode => Document::Lines(claude_code::records(&session)),
        Written::Openhands => Document::Whole(Value::Array(openhands::events(&session))),
        Written::Hermes => Document::Lines(vec![hermes::session(&session)]),
        Written::Codex => Document::Lines(codex::rollout(&session)),
        Written::CodexLegacy => Document::Lines(codex::legacy_rollout(&session)),
        Written::SweAgent => Document::Whole(swe_agent::trajectory(&session)),
    };
    match document {
        Document::Lines(records) => {
            for record in &records {
                serde_json::to_writer(&mut writer, record)?;
                writer.write_all(b"\n")?;
            }
        }
        Document::Whole(value) => serde_json::to_writer(&mut writer, &value)?,
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

#[cfg(test)]
mod tests {
    use ctxhost::formats::{read_transcript_with, Format, ReadOptions};

    use super::*;

    /// Every format's file reads back, detected as that format, as the same conversation: the
    /// same calls, each answered, and nothing for the reader to warn about or repair.
    #[test]
    fn each_format_written_reads_back_as_the_same_conversation() {
        let folder = tempfile::tempdir().unwrap();
        let cases = [
            (Written::Openai, "session.jsonl", Format::OpenaiJsonl),
            (Written::Openai, "session.json", Format::OpenaiArray),
            (Written::ClaudeCode, "session.cc.jsonl", Format::ClaudeCode),
            (Written::Openhands, "session.openhands.json", Format::Openhands),
            (Written::Hermes, "session.hermes.jsonl", Format::Hermes),
            (Written::Codex, "session.codex.jsonl", Format::Codex),
            (Written::CodexLegacy, "session.legacy.jsonl", Format::Codex),
            (Written::SweAgent, "session.traj", Format::SweAgent),
        ];
        let session = heavy_session(400);
        let calls: Vec<_> = session
            .iter()
            .flat_map(|message| message.calls())
            .map(|call| (call.id.clone(), call.function.name.clone()))
            .collect();
        for (written, name, format) in cases {
            let path = folder.path().join(name);
            write_session(&path, Shape::Heavy, 400, written).unwrap();
            let transcript = read_transcript_with(&path, &ReadOptions::default())
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(transcript.format, format, "{name}");
            let read: Vec<_> = transcript
                .messages
                .iter()
                .flat_map(|message| message.calls())
                .map(|call| (call.id.clone(), call.function.name.clone()))
                .collect();
            assert_eq!(read, calls, "{name}");
            let results = transcript
                .messages
                .iter()
                .filter(|m| m.tool_call_id.is_some())
                .count();
            assert_eq!(results, calls.len(), "{name}");
            assert_eq!(transcript.meta.sequence_problems, vec![], "{name}");
            assert_eq!(transcript.meta.warnings, Vec::<String>::new(), "{name}");
        }
    }
}
