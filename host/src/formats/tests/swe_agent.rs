use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn trajectory(history: Value) -> String {
    serde_json::to_string_pretty(&json!({
        "environment": "main",
        "trajectory": [{"action": "ls", "observation": "setup.py", "response": "", "thought": "", "state": {"open_file": "n/a"}}],
        "history": history,
        "info": {"exit_status": "submitted", "model_stats": {"api_calls": 2}},
        "replay_config": {"agent": {"model": {"name": "gpt-4o"}}},
    }))
    .unwrap()
}

#[test]
fn tool_call_ids_become_tool_call_id_and_swe_agent_fields_are_kept() {
    let history = json!([
        {"message_type": "system_prompt", "role": "system", "content": "SETTING: you are a programmer.", "agent": "main"},
        {"message_type": "observation", "role": "user", "content": [{"type": "text", "text": "Fix the bug in src/app.py"}], "agent": "main"},
        {"message_type": "action", "role": "assistant", "content": "Let me look.", "thought": "Let me look.", "action": "ls", "agent": "main",
         "tool_calls": [{"function": {"arguments": "{\"command\":\"ls\"}", "name": "bash"}, "id": "call_1", "type": "function"}]},
        {"message_type": "observation", "role": "tool", "content": "setup.py\nsrc", "agent": "main", "tool_call_ids": ["call_1"]},
        {"role": "user", "content": "demo", "is_demo": true, "agent": "main"},
    ]);
    let transcript = read(Format::SweAgent, &trajectory(history));
    assert_eq!(
        messages_json(&transcript),
        json!([
            {"role": "system", "content": "SETTING: you are a programmer.", "message_type": "system_prompt", "agent": "main"},
            {"role": "user", "content": [{"type": "text", "text": "Fix the bug in src/app.py"}], "message_type": "observation", "agent": "main"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}],
                "message_type": "action", "thought": "Let me look.", "action": "ls", "agent": "main",
            },
            {"role": "tool", "content": "setup.py\nsrc", "tool_call_id": "call_1", "message_type": "observation", "agent": "main"},
            {"role": "user", "content": "demo", "is_demo": true, "agent": "main"},
        ])
    );
    let meta = &transcript.meta;
    assert_eq!(meta.model.as_deref(), Some("gpt-4o"));
    assert_eq!(meta.extra["info"]["exit_status"], "submitted");
    assert_eq!(meta.extra["environment"], "main");
    assert_eq!(
        meta.skipped["trajectory (the run step by step; it repeats the history)"],
        1
    );
    assert_eq!(meta.sequence_problems, vec![]);
}

#[test]
fn a_result_for_several_calls_keeps_its_list_and_the_other_calls_get_a_note_saying_where_their_output_is() {
    let history = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"arguments": "{}", "name": "a"}, "id": "c1", "type": "function"},
            {"function": {"arguments": "{}", "name": "b"}, "id": "c2", "type": "function"},
            {"function": {"arguments": "{}", "name": "c"}, "id": "c3", "type": "function"}]},
        {"role": "tool", "content": "all three", "tool_call_ids": ["c1", "c2", "c3"]},
        {"role": "assistant", "content": "done"},
    ]);
    let transcript = read(Format::SweAgent, &trajectory(history));
    let messages = &transcript.messages;
    let result = &messages[2];
    assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(result.text(), "all three");
    assert_eq!(result.extra["tool_call_ids"], json!(["c1", "c2", "c3"]));
    for (message, id) in messages[3..5].iter().zip(["c2", "c3"]) {
        assert_eq!(message.tool_call_id.as_deref(), Some(id));
        assert!(
            message.text().contains("together with that of call `c1`"),
            "{}",
            message.text()
        );
    }
    assert_eq!(messages[5].text(), "done");
    assert_eq!(
        transcript.meta.warnings,
        ["1 tool message answers several calls at once (`tool_call_ids`), the first at line 49: the output stands as the first call's result, and each other call gets a note saying where its output is"]
    );
    assert_eq!(transcript.meta.sequence_problems, vec![]);
}

#[test]
fn a_trajectory_without_history_or_with_a_bad_message_is_an_error() {
    let error = read_error(Format::SweAgent, "{\"trajectory\": [], \"info\": {}}");
    assert_eq!(
        error,
        "transcript:1:31: the trajectory has no `history` list (byte 30)"
    );
    let error = read_error(Format::SweAgent, "{\"history\": [\n  {\"role\": \"user\", \"content\": \"a\"},\n  {\"role\": \"tool\", \"tool_call_ids\": 5}\n]}");
    assert_eq!(
        error,
        "transcript:3:3: `tool_call_ids` is neither a list nor text (byte 52)"
    );
}
