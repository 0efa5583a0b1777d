//! `cargo xtask gen-heavy OUT [--messages N] [--shape heavy|tool-heavy]`: writes a benchmark
//! session (`benches/sessions.rs`: [`heavy_session`], or [`tool_heavy_conversation`], which the
//! replay and observer benchmarks replay) to a file, so that whole-process runs such as
//! `ctxhost compress OUT --context-length 200000` can be timed on it.
//!
//! `.jsonl` files get one OpenAI message a line; anything else a JSON array of messages. With
//! `--format claude-code`, the same session as a Claude Code session log instead (records with
//! `uuid`/`parentUuid`, content blocks, and each tool result's `toolUseResult`, as real logs have).

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use anyhow::{Context, Result};
use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

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
    if written == Written::ClaudeCode {
        for record in claude_code_records(&session) {
            serde_json::to_writer(&mut writer, &record)?;
            writer.write_all(b"\n")?;
        }
    } else if jsonl {
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

/// The session as Claude Code logs it: no system record (the log does not hold the system
/// prompt), a record per user message, assistant message and tool result, chained by
/// `parentUuid`.
fn claude_code_records(session: &[Message]) -> Vec<Value> {
    let mut records = Vec::with_capacity(session.len());
    let mut parent: Option<String> = None;
    for (index, message) in session.iter().enumerate() {
        let uuid = format!("00000000-0000-4000-8000-{index:012}");
        let timestamp = format!("2026-11-20T10:{:02}:{:02}.000Z", index / 60 % 60, index % 60);
        let mut record = json!({
            "parentUuid": parent,
            "isSidechain": false,
            "userType": "external",
            "cwd": "/srv/app",
            "sessionId": "3f1c2a9e-5b7d-4c11-9e2f-0a1b2c3d4e5f",
            "version": "1.0.51",
            "gitBranch": "main",
            "uuid": uuid,
            "timestamp": timestamp,
        });
        let fields = record.as_object_mut().expect("an object");
        match message.role {
            Role::System => continue,
            Role::User => {
                fields.insert("type".into(), "user".into());
                fields.insert(
                    "message".into(),
                    json!({"role": "user", "content": message.text()}),
                );
            }
            Role::Assistant => {
                let text = message.text();
                let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
                let calls = message.calls().iter().map(|call| {
                    let input: Value = serde_json::from_str(&call.function.arguments).unwrap_or_default();
                    json!({"type": "tool_use", "id": call.id, "name": call.function.name, "input": input})
                });
                let content: Vec<Value> = text.into_iter().chain(calls).collect();
                fields.insert("type".into(), "assistant".into());
                fields.insert("requestId".into(), format!("req_{index:06}").into());
                fields.insert(
                    "message".into(),
                    json!({
                        "id": format!("msg_{index:06}"),
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-20250514",
                        "content": content,
                        "stop_reason": if message.calls().is_empty() { "end_turn" } else { "tool_use" },
                        "stop_sequence": null,
                        "usage": {"input_tokens": 4, "cache_creation_input_tokens": 1200,
                                  "cache_read_input_tokens": 30000, "output_tokens": 200},
                    }),
                );
            }
            Role::Tool => {
                let output = message.text();
                fields.insert("type".into(), "user".into());
                fields.insert(
                    "message".into(),
                    json!({"role": "user", "content": [{
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": output,
                    }]}),
                );
                // Claude Code repeats a tool's whole output here.
                fields.insert(
                    "toolUseResult".into(),
                    json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false}),
                );
            }
        }
        records.push(record);
        parent = Some(uuid);
    }
    records
}
