//! The benchmark session as a Codex rollout: `session_meta`, then a `response_item` per message,
//! call and call output, with what Codex records around them for its interface (a `turn_context`
//! before each user message, `user_message`/`agent_message` events repeating the messages, a
//! `token_count` event after each model call); and as older Codex versions wrote it, a bare
//! header then bare items.

use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

const SESSION_ID: &str = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

/// The session's items as the Responses API has them.
fn items(session: &[Message]) -> Vec<(Value, bool)> {
    let mut items = Vec::new();
    for message in session {
        let text = message.text().into_owned();
        match message.role {
            Role::System => {}
            Role::User => items.push((
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
                false,
            )),
            Role::Assistant => {
                if !text.is_empty() {
                    items.push((
                        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
                        !message.has_tool_calls(),
                    ));
                }
                let calls = message.calls();
                for (k, call) in calls.iter().enumerate() {
                    items.push((
                        json!({"type": "function_call", "name": call.function.name,
                               "arguments": call.function.arguments, "call_id": call.id}),
                        k + 1 == calls.len(),
                    ));
                }
            }
            Role::Tool => items.push((
                json!({"type": "function_call_output", "call_id": message.tool_call_id,
                       "output": serde_json::to_string(&json!({"output": text, "metadata": {"exit_code": 0, "duration_seconds": 0.4}})).expect("JSON")}),
                false,
            )),
        }
    }
    items
}

fn instructions(session: &[Message]) -> Option<String> {
    session
        .iter()
        .find(|message| message.role == Role::System)
        .map(|message| message.text().into_owned())
}

pub(super) fn rollout(session: &[Message]) -> Vec<Value> {
    let mut records = vec![json!({
        "timestamp": "2026-11-20T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": SESSION_ID, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/srv/app",
                    "originator": "codex_cli_rs", "cli_version": "0.40.0", "instructions": instructions(session),
                    "git": {"commit_hash": "4ea75e55", "branch": "main"}},
    })];
    let mut total = 0u64;
    for (index, (item, ends_a_model_call)) in items(session).into_iter().enumerate() {
        let timestamp = format!(
            "2026-11-20T10:{:02}:{:02}.{:03}Z",
            index / 60 % 60,
            index % 60,
            index % 1000
        );
        // What Codex records for its own interface around the items: the turn's settings before
        // a user's message, and events repeating the messages' text.
        let role = (item["type"] == "message")
            .then(|| item["role"].as_str())
            .flatten();
        let text = item["content"][0]["text"].clone();
        if role == Some("user") {
            records.push(json!({"timestamp": timestamp, "type": "turn_context", "payload": {
                "cwd": "/srv/app", "approval_policy": "on-request", "model": "gpt-5-codex", "effort": "medium",
                "summary": "auto", "sandbox_policy": {"mode": "workspace-write", "network_access": false},
            }}));
        }
        records.push(json!({"timestamp": timestamp, "type": "response_item", "payload": item}));
        match role {
            Some("user") => records.push(json!({"timestamp": timestamp, "type": "event_msg", "payload": {
                "type": "user_message", "message": text, "images": [],
            }})),
            Some("assistant") => {
                records.push(json!({"timestamp": timestamp, "type": "event_msg", "payload": {
                    "type": "agent_message", "message": text,
                }}))
            }
            _ => {}
        }
        if ends_a_model_call {
            total += 31_000;
            records.push(json!({"timestamp": timestamp, "type": "event_msg", "payload": {
                "type": "token_count",
                "info": {"total_token_usage": {"input_tokens": total, "cached_input_tokens": total - 1_000,
                                               "output_tokens": 180, "reasoning_output_tokens": 0, "total_tokens": total + 180},
                         "last_token_usage": {"input_tokens": 31_000, "cached_input_tokens": 30_000,
                                              "output_tokens": 180, "reasoning_output_tokens": 0, "total_tokens": 31_180},
                         "model_context_window": 272_000},
            }}));
        }
    }
    records
}

pub(super) fn legacy_rollout(session: &[Message]) -> Vec<Value> {
    let header = json!({"id": SESSION_ID, "timestamp": "2026-11-20T10:00:00.000Z", "instructions": instructions(session)});
    std::iter::once(header)
        .chain(items(session).into_iter().map(|(item, _)| item))
        .collect()
}
