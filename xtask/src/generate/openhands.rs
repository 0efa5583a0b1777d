//! The benchmark session as an OpenHands event stream (0.4x, function calling): a `system`
//! action, the user's `message` actions, one action per tool call carrying the whole LiteLLM
//! response that made it, and one observation per result with its command's `metadata`.

use ctxhost_engine_abi::{Message, Role};
use serde_json::{json, Value};

pub(super) fn events(session: &[Message]) -> Vec<Value> {
    let mut events = Vec::with_capacity(session.len());
    // The action each tool call became, for the observation that answers it.
    let mut causes = std::collections::HashMap::new();
    for (index, message) in session.iter().enumerate() {
        let id = events.len();
        let timestamp = format!(
            "2026-11-20T10:{:02}:{:02}.{:06}",
            index / 60 % 60,
            index % 60,
            index
        );
        let text = message.text().into_owned();
        match message.role {
            Role::System => events.push(json!({
                "id": id, "timestamp": timestamp, "source": "agent", "message": text,
                "action": "system",
                "args": {"content": text, "tools": [], "openhands_version": "0.48.0", "agent_class": "CodeActAgent"},
            })),
            Role::User => events.push(json!({
                "id": id, "timestamp": timestamp, "source": "user", "message": text,
                "action": "message",
                "args": {"content": text, "image_urls": null, "file_urls": null, "wait_for_response": false},
            })),
            Role::Assistant if !message.has_tool_calls() => events.push(json!({
                "id": id, "timestamp": timestamp, "source": "agent", "message": text,
                "action": "message",
                "args": {"content": text, "image_urls": null, "file_urls": null, "wait_for_response": true},
            })),
            Role::Assistant => {
                let calls = message.calls();
                let response = json!({
                    "id": format!("chatcmpl-{index:08}"),
                    "created": 1_763_632_800 + index,
                    "model": "litellm_proxy/claude-sonnet-4-20250514",
                    "object": "chat.completion",
                    "system_fingerprint": null,
                    "choices": [{
                        "finish_reason": "tool_calls",
                        "index": 0,
                        "message": {
                            "content": if text.is_empty() { Value::Null } else { Value::String(text.clone()) },
                            "role": "assistant",
                            "tool_calls": calls.iter().enumerate().map(|(k, call)| json!({
                                "index": k, "function": {"arguments": call.function.arguments, "name": call.function.name},
                                "id": call.id, "type": "function",
                            })).collect::<Vec<_>>(),
                            "function_call": null,
                        },
                    }],
                    "usage": {"completion_tokens": 180, "prompt_tokens": 31_000, "total_tokens": 31_180,
                              "completion_tokens_details": null,
                              "prompt_tokens_details": {"audio_tokens": null, "cached_tokens": 30_000}},
                    "service_tier": null,
                });
                for call in calls {
                    let arguments: Value = serde_json::from_str(&call.function.arguments).unwrap_or_default();
                    let command = arguments.get("command").and_then(Value::as_str).unwrap_or(&call.function.arguments);
                    causes.insert(call.id.clone(), events.len());
                    events.push(json!({
                        "id": events.len(), "timestamp": timestamp, "source": "agent",
                        "message": format!("Running command: {command}"),
                        "action": "run",
                        "tool_call_metadata": {
                            "function_name": call.function.name, "tool_call_id": call.id,
                            "model_response": response, "total_calls_in_response": calls.len(),
                        },
                        "args": {"command": command, "is_input": false, "thought": text, "blocking": false,
                                 "is_static": false, "cwd": null, "hidden": false, "confirmation_state": "confirmed"},
                        "llm_metrics": {"accumulated_cost": 0.01 * index as f64,
                                        "accumulated_token_usage": {"model": "claude-sonnet-4", "prompt_tokens": 31_000,
                                                                    "completion_tokens": 180, "context_window": 200_000}},
                    }));
                }
            }
            Role::Tool => {
                let call_id = message.tool_call_id.clone().unwrap_or_default();
                let cause = causes.get(&call_id).copied();
                events.push(json!({
                    "id": id, "timestamp": timestamp, "source": "agent",
                    "message": "Command finished with exit code 0.",
                    "cause": cause,
                    "observation": "run",
                    "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call_id,
                                           "model_response": null, "total_calls_in_response": 1},
                    "content": text,
                    "extras": {
                        "command": "", "hidden": false,
                        "metadata": {"exit_code": 0, "pid": -1, "username": "openhands", "hostname": "runtime",
                                     "working_dir": "/workspace", "py_interpreter_path": "/usr/bin/python",
                                     "prefix": "", "suffix": "\n[The command completed with exit code 0.]"},
                    },
                    "success": true,
                }));
            }
        }
    }
    events
}
