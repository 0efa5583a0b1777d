//! The benchmark session as `hermes sessions export` writes it: the session's row, its system
//! prompt on the row, and its messages with Hermes's own fields.

use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

const SESSION_ID: &str = "20261120_100000_4ea75e55";

pub(super) fn session(session: &[Message]) -> Value {
    let system_prompt = session
        .iter()
        .find(|message| message.role == Role::System)
        .map(|message| message.text().into_owned());
    let messages: Vec<Value> = session
        .iter()
        .filter(|message| message.role != Role::System)
        .enumerate()
        .map(|(index, message)| {
            let mut row = serde_json::to_value(message).expect("a message");
            let fields = row.as_object_mut().expect("an object");
            fields.insert("id".into(), (index + 1).into());
            fields.insert("session_id".into(), SESSION_ID.into());
            fields.insert("timestamp".into(), (1_763_632_800.0 + index as f64).into());
            fields.insert("token_count".into(), (message.text().len() / 4).into());
            fields.insert("finish_reason".into(), Value::Null);
            row
        })
        .collect();
    json!({
        "id": SESSION_ID,
        "source": "cli",
        "user_id": null,
        "model": "anthropic/claude-sonnet-4",
        "model_config": {"max_iterations": 90, "reasoning_config": null, "max_tokens": null},
        "system_prompt": system_prompt,
        "parent_session_id": null,
        "started_at": 1_763_632_800.0,
        "ended_at": null,
        "end_reason": null,
        "message_count": messages.len(),
        "tool_call_count": session.iter().map(|m| m.calls().len()).sum::<usize>(),
        "input_tokens": 0,
        "output_tokens": 0,
        "messages": messages,
    })
}
