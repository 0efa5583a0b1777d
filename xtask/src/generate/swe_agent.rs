//! The benchmark session as a SWE-agent trajectory (`.traj`, function calling): `history` with
//! SWE-agent's own fields on each message and `tool_call_ids` on results, and `trajectory`
//! repeating the run step by step, as real files do.

use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

pub(super) fn trajectory(session: &[Message]) -> Value {
    let mut history = Vec::with_capacity(session.len());
    let mut steps = Vec::new();
    for message in session {
        let text = message.text().into_owned();
        let entry = match message.role {
            Role::System => {
                json!({"role": "system", "content": text, "agent": "main", "message_type": "system_prompt"})
            }
            Role::User => {
                json!({"role": "user", "content": text, "agent": "main", "message_type": "observation"})
            }
            Role::Assistant => {
                let action = message
                    .calls()
                    .first()
                    .map(|call| call.function.arguments.clone())
                    .unwrap_or_default();
                json!({"role": "assistant", "content": text, "thought": text, "action": action,
                       "agent": "main", "tool_calls": message.calls(), "message_type": "action"})
            }
            Role::Tool => {
                steps.push(json!({"action": "", "observation": text, "response": "", "thought": "",
                                  "execution_time": 0.4, "state": {"open_file": "n/a", "working_dir": "/srv/app"},
                                  "extra_info": {}}));
                json!({"role": "tool", "content": text, "agent": "main", "message_type": "observation",
                       "tool_call_ids": [message.tool_call_id]})
            }
        };
        history.push(entry);
    }
    json!({
        "environment": "swe_main",
        "trajectory": steps,
        "history": history,
        "info": {"swe_agent_version": "1.1.0", "exit_status": "submitted", "submission": "",
                 "model_stats": {"instance_cost": 1.2, "tokens_sent": 2_000_000, "tokens_received": 90_000, "api_calls": steps.len()}},
        "replay_config": "{\"agent\": {\"model\": {\"name\": \"claude-sonnet-4\"}}}",
    })
}
