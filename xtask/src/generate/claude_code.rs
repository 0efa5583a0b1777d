//! The benchmark session as a Claude Code session log.

use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

/// The session as Claude Code logs it: no system record (the log does not hold the system
/// prompt), a record per user message, assistant message and tool result, chained by
/// `parentUuid`.
pub(super) fn records(session: &[Message]) -> Vec<Value> {
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
