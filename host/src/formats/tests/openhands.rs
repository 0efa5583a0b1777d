use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

/// An action with the model response that made its call, and the observation answering it.
fn call_and_result(id: u64, call: &str, thought: &str, output: &str) -> [Value; 2] {
    let response = json!({
        "id": format!("resp-{call}"),
        "model": "gpt-4o",
        "choices": [{"message": {"role": "assistant", "content": thought, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls\"}"}}
        ]}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 512}},
    });
    let metadata = json!({"function_name": "execute_bash", "tool_call_id": call, "model_response": response, "total_calls_in_response": 1});
    [
        json!({"id": id, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": metadata}),
        json!({"id": id + 1, "source": "agent", "cause": id, "observation": "run", "content": output, "extras": {"exit_code": 0}, "tool_call_metadata": metadata}),
    ]
}

fn events() -> Vec<Value> {
    let mut events = vec![
        json!({"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands.", "tools": []}}),
        json!({"id": 1, "source": "user", "action": "message", "args": {"content": "List the files."}}),
        json!({"id": 2, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "running"}}),
    ];
    events.extend(call_and_result(3, "call_1", "Listing.", "README.md"));
    events.push(json!({"id": 5, "source": "agent", "action": "finish", "args": {"final_thought": "There is a README.", "outputs": {}}}));
    events
}

#[test]
fn events_become_user_assistant_with_calls_and_tool_messages() {
    let text = serde_json::to_string_pretty(&events()).unwrap();
    let transcript = read(Format::Openhands, &text);
    let roles: Vec<_> = transcript.messages.iter().map(|m| m.role).collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(roles, [System, User, Assistant, Tool, Assistant]);
    let messages = &transcript.messages;
    assert_eq!(messages[0].text(), "You are OpenHands.");
    assert_eq!(messages[2].text(), "Listing.");
    assert_eq!(messages[2].calls()[0].id, "call_1");
    assert_eq!(messages[2].calls()[0].function.arguments, "{\"command\": \"ls\"}");
    assert_eq!(
        messages[2].extra["usage"],
        json!({"prompt_tokens": 900, "completion_tokens": 20, "cache_read_tokens": 512})
    );
    assert!(!messages[2].extra.contains_key("tool_call_metadata"));
    assert_eq!(messages[3].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(messages[3].text(), "README.md");
    assert_eq!(messages[3].extra["extras"], json!({"exit_code": 0}));
    assert_eq!(messages[4].text(), "There is a README.");
    assert_eq!(transcript.meta.model.as_deref(), Some("gpt-4o"));
    assert_eq!(transcript.meta.skipped["observation (agent_state_changed)"], 1);
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
}

#[test]
fn the_calls_of_one_response_make_one_assistant_message() {
    let response = json!({"id": "r1", "choices": [{"message": {"content": null, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}},
    ]}}]});
    let meta = |id: &str| json!({"function_name": "read", "tool_call_id": id, "model_response": response});
    let events = json!([
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 2, "source": "agent", "action": "read", "args": {"path": "a"}, "tool_call_metadata": meta("a")},
        {"id": 3, "source": "agent", "observation": "read", "content": "A", "tool_call_metadata": meta("a")},
        {"id": 4, "source": "agent", "action": "read", "args": {"path": "b"}, "tool_call_metadata": meta("b")},
        {"id": 5, "source": "agent", "observation": "read", "content": "B", "tool_call_metadata": meta("b")},
    ]);
    let transcript = read(Format::Openhands, &events.to_string());
    assert_eq!(transcript.messages.len(), 4);
    assert_eq!(transcript.messages[1].calls().len(), 2);
    assert_eq!(transcript.meta.sequence_problems, vec![]);
}

#[test]
fn a_numeric_call_id_in_a_response_is_read_as_text_with_a_warning() {
    let response = json!({"id": "r1", "object": "chat.completion", "choices": [{"index": 0, "message": {
        "content": "Reading.", "reasoning_content": "think",
        "tool_calls": [{"id": 7, "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    }}]});
    let events = json!([
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}, "tool_call_metadata": null},
        {"id": 2, "source": "agent", "action": "read", "args": {"path": "a"},
         "tool_call_metadata": {"function_name": "read", "tool_call_id": 7, "model_response": response}},
        {"id": 3, "source": "agent", "observation": "read", "content": "A",
         "tool_call_metadata": {"function_name": "read", "tool_call_id": 7}},
    ]);
    let transcript = read(Format::Openhands, &events.to_string());
    let messages = &transcript.messages;
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].text(), "Reading.");
    assert_eq!(messages[1].calls()[0].id, "7");
    assert_eq!(messages[1].extra["reasoning"], "think");
    assert_eq!(messages[2].tool_call_id.as_deref(), Some("7"));
    assert_eq!(transcript.meta.sequence_problems, vec![]);
    assert_eq!(
        transcript.meta.warnings.len(),
        2,
        "{:?}",
        transcript.meta.warnings
    );
    assert!(
        transcript
            .meta
            .warnings
            .iter()
            .all(|w| w.contains("number") && w.contains("read as \"7\"")),
        "{:?}",
        transcript.meta.warnings
    );
}

#[test]
fn a_tool_call_metadata_that_is_not_an_object_is_an_error_naming_its_kind_and_line() {
    let text = "[\n{\"id\": 1, \"source\": \"agent\", \"action\": \"run\", \"args\": {}, \"tool_call_metadata\": [1]}\n]";
    let error = read_error(Format::Openhands, text);
    assert!(error.contains(":2:1:"), "{error}");
    assert!(
        error.contains("`tool_call_metadata` is a list, not an object"),
        "{error}"
    );
}

#[test]
fn the_window_is_read_from_llm_metrics_which_is_not_kept_whatever_its_shape() {
    let metrics =
        |usages: Value| json!({"accumulated_cost": 0.2, "costs": [{"cost": 0.1}], "token_usages": usages});
    let message = |id: u64, metrics: Value| json!({"id": id, "source": "user", "action": "message", "args": {"content": "go"}, "llm_metrics": metrics});
    let window_of = |events: Value| {
        let transcript = read(Format::Openhands, &events.to_string());
        assert!(transcript
            .messages
            .iter()
            .all(|m| !m.extra.contains_key("llm_metrics")));
        assert_eq!(transcript.messages.len(), events.as_array().unwrap().len());
        transcript.meta.context_length
    };
    let usages = json!([{"context_window": 100_000}, {"prompt_tokens": 5, "context_window": 128_000}]);
    assert_eq!(
        window_of(json!([message(1, metrics(usages.clone()))])),
        Some(128_000)
    );
    // The first event that has one sets it.
    let later = json!([{"context_window": 64_000}]);
    let events = json!([
        message(1, metrics(json!([]))),
        message(2, metrics(later)),
        message(3, metrics(usages))
    ]);
    assert_eq!(window_of(events), Some(64_000));
    // The last usage without a window, a window of 0, and shapes that are not OpenHands's: none.
    for odd in [
        metrics(json!([{"context_window": 128_000}, {"prompt_tokens": 5}])),
        metrics(json!([{"context_window": 0}])),
        metrics(json!({"context_window": 128_000})),
        metrics(json!([7, "x", [1]])),
        json!("metrics"),
        json!([1, 2]),
        Value::Null,
    ] {
        assert_eq!(window_of(json!([message(1, odd.clone())])), None, "{odd}");
    }
}

#[test]
fn a_response_copy_whose_choices_cannot_be_read_is_a_bad_record_and_skipped_leaves_the_other_copy_to_make_the_message(
) {
    use crate::formats::{read_transcript_with, BadRecords, ReadOptions};
    let response = |choices: Value| json!({"id": "r1", "model": "gpt-4o", "choices": choices});
    let readable = json!([{"message": {"content": "Both.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}},
    ]}}]);
    let meta = |id: &str, choices: Value| json!({"function_name": "run", "tool_call_id": id, "model_response": response(choices)});
    let events = |broken: Value| {
        json!([
            {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
            {"id": 2, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": meta("a", broken)},
            {"id": 3, "source": "agent", "action": "read", "args": {"path": "x"}, "tool_call_metadata": meta("b", readable.clone())},
            {"id": 4, "source": "agent", "observation": "run", "content": "A", "tool_call_metadata": meta("a", Value::Null)},
            {"id": 5, "source": "agent", "observation": "read", "content": "B", "tool_call_metadata": meta("b", Value::Null)},
        ])
        .to_string()
    };
    for broken in [
        json!("x"),
        json!([]),
        json!([5]),
        json!([{"message": "text"}]),
        json!([{"index": 0}]),
    ] {
        let error = read_error(Format::Openhands, &events(broken.clone()));
        assert!(error.contains("`model_response.choices`"), "{broken}: {error}");
        let (_dir, path) = super::write("transcript", &events(broken.clone()));
        let options = ReadOptions {
            bad_records: BadRecords::Skip,
            ..ReadOptions::default()
        };
        let transcript = read_transcript_with(&path, &options).unwrap();
        let messages = &transcript.messages;
        assert_eq!(messages.len(), 4, "{broken}");
        assert_eq!(messages[1].text(), "Both.");
        assert_eq!(messages[1].calls().len(), 2, "{broken}");
        assert_eq!(transcript.meta.bad_records_skipped, 1, "{broken}");
        assert_eq!(transcript.meta.sequence_problems, vec![], "{broken}");
    }
}

#[test]
fn the_trajectory_object_form_is_read_and_its_other_keys_kept() {
    let text = json!({"trajectory": events(), "conversation_id": "c-42"}).to_string();
    let transcript = read(Format::Openhands, &text);
    assert_eq!(transcript.messages.len(), 5);
    assert_eq!(transcript.meta.extra["conversation_id"], "c-42");
}

#[test]
fn a_call_without_its_model_response_is_made_from_the_metadata() {
    let events = json!([
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c9"}},
        {"id": 3, "source": "agent", "observation": "run", "content": "ok", "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c9"}},
    ]);
    let transcript = read(Format::Openhands, &events.to_string());
    let call = &transcript.messages[1].calls()[0];
    assert_eq!(
        (call.id.as_str(), call.function.name.as_str()),
        ("c9", "execute_bash")
    );
    assert_eq!(call.function.arguments, "{\"command\":\"ls\"}");
}

#[test]
fn an_event_that_is_neither_action_nor_observation_is_an_error_naming_its_line() {
    let text = "[\n{\"id\": 1, \"source\": \"user\", \"action\": \"message\", \"args\": {\"content\": \"go\"}},\n{\"id\": 2, \"source\": \"agent\"}\n]";
    assert_eq!(
        read_error(Format::Openhands, text),
        "transcript:3:1: an OpenHands event with neither an `action` nor an `observation` (byte 79)"
    );
}

#[test]
fn a_condensation_is_listed_as_a_recorded_compaction_and_not_replayed() {
    let mut events = events();
    events.insert(
        5,
        json!({"id": 9, "source": "agent", "action": "condensation", "args": {"forgotten_event_ids": [3, 4], "summary": "Listed the files: a README."}}),
    );
    let transcript = read(Format::Openhands, &serde_json::to_string_pretty(&events).unwrap());
    assert_eq!(transcript.messages.len(), 5);
    let compactions = &transcript.meta.compactions;
    assert_eq!(compactions.len(), 1);
    assert_eq!(
        (compactions[0].messages_before, compactions[0].summary.as_str()),
        (4, "Listed the files: a README.")
    );
}

#[test]
fn a_condense_observation_of_the_older_condenser_is_a_recorded_compaction_too() {
    let mut events = events();
    events.insert(
        5,
        json!({"id": 9, "source": "agent", "observation": "condense", "content": "The user asked for the files; a README was listed.", "extras": {}}),
    );
    let transcript = read(Format::Openhands, &serde_json::to_string_pretty(&events).unwrap());
    assert_eq!(transcript.messages.len(), 5);
    let compactions = &transcript.meta.compactions;
    assert_eq!(compactions.len(), 1);
    assert_eq!(
        (compactions[0].messages_before, compactions[0].summary.as_str()),
        (4, "The user asked for the files; a README was listed.")
    );
    assert!(
        !transcript
            .meta
            .skipped
            .keys()
            .any(|kind| kind.contains("condense")),
        "{:?}",
        transcript.meta.skipped
    );
}

#[test]
fn actions_before_function_calling_are_read_as_the_codeact_text_openhands_sent() {
    let events = json!([
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix the test."}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "pytest -x", "thought": "Run the tests.", "blocking": false}},
        {"id": 2, "source": "environment", "cause": 1, "observation": "run", "content": "1 failed", "extras": {"command_id": -1, "command": "pytest -x", "exit_code": 1}},
        {"id": 3, "source": "agent", "action": "run_ipython", "args": {"code": "print(1)", "thought": ""}},
        {"id": 4, "source": "environment", "cause": 3, "observation": "run_ipython", "content": "1", "extras": {"code": "print(1)"}},
        // An observation of a command the agent did not run (no action read as text caused it):
        // left out, as the model never saw it.
        {"id": 5, "source": "environment", "cause": 99, "observation": "run", "content": "stray", "extras": {}},
        {"id": 6, "source": "agent", "action": "change_agent_state", "args": {"agent_state": "finished"}},
        {"id": 7, "source": "agent", "action": "finish", "args": {"thought": "Fixed."}},
    ]);
    let mut events = events.as_array().unwrap().clone();
    events.extend(user_command(8));
    let transcript = read(Format::Openhands, &serde_json::to_string_pretty(&events).unwrap());
    let texts: Vec<(ctxhost_engine_abi::Role, String)> = transcript
        .messages
        .iter()
        .map(|m| (m.role, m.text().into_owned()))
        .collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(
        texts,
        [
            (User, "Fix the test.".to_owned()),
            (
                Assistant,
                "Run the tests.\n<execute_bash>\npytest -x\n</execute_bash>".to_owned()
            ),
            (
                User,
                "OBSERVATION:\n1 failed\n[Command -1 finished with exit code 1]".to_owned()
            ),
            (
                Assistant,
                "\n<execute_ipython>\nprint(1)\n</execute_ipython>".to_owned()
            ),
            (User, "OBSERVATION:\n1".to_owned()),
            (Assistant, "Fixed.".to_owned()),
            (User, "User executed the command:\ngit status".to_owned()),
            (User, USER_COMMAND_OUTPUT.to_owned()),
        ]
    );
    // The arguments made into text are not kept twice.
    assert_eq!(transcript.messages[1].extra["args"], json!({"blocking": false}));
    assert_eq!(
        transcript.meta.warnings.len(),
        1,
        "{:?}",
        transcript.meta.warnings
    );
    let warning = &transcript.meta.warnings[0];
    assert!(
        warning.starts_with("line ") && warning.contains(": an action without `tool_call_metadata`"),
        "{warning}"
    );
    assert_eq!(transcript.meta.skipped["observation (run)"], 1);
}

/// What OpenHands sends the model for the output of [`user_command`].
const USER_COMMAND_OUTPUT: &str =
    "\nObserved result of command executed by user:\nnothing to commit\n[Command finished with exit code 0]";

/// A command the user ran in OpenHands's terminal (id `id`), and its output.
fn user_command(id: u64) -> [Value; 2] {
    [
        json!({"id": id, "source": "user", "action": "run", "args": {"command": "git status", "thought": ""}}),
        json!({"id": id + 1, "source": "environment", "cause": id, "observation": "run", "content": "nothing to commit", "extras": {"metadata": {"exit_code": 0}}}),
    ]
}

#[test]
fn a_command_the_user_ran_is_read_as_openhands_sends_it_with_no_warning() {
    let mut events = events();
    events.extend(user_command(6));
    let transcript = read(Format::Openhands, &serde_json::to_string(&events).unwrap());
    let last: Vec<String> = transcript.messages[5..]
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(
        last,
        ["User executed the command:\ngit status", USER_COMMAND_OUTPUT]
    );
    assert_eq!(transcript.messages[5].role, ctxhost_engine_abi::Role::User);
    assert_eq!(transcript.messages[6].role, ctxhost_engine_abi::Role::User);
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
}

/// The parent's `delegate` call `call` (event `id`), made by the model response `response`.
fn delegate_action(id: u64, call: &str, task: &str) -> Value {
    let response = json!({"id": format!("resp-{call}"), "choices": [{"message": {"role": "assistant", "content": "Delegating.", "tool_calls": [
        {"id": call, "type": "function", "function": {"name": "delegate_to_browsing_agent", "arguments": format!("{{\"task\": \"{task}\"}}")}}
    ]}}]});
    json!({"id": id, "source": "agent", "action": "delegate", "args": {"agent": "BrowsingAgent", "inputs": {"task": task}},
           "tool_call_metadata": {"function_name": "delegate_to_browsing_agent", "tool_call_id": call, "model_response": response}})
}

/// The observation answering the delegation `call`, without a `cause`, as upstream OpenHands
/// writes it.
fn delegate_observation(id: u64, call: &str, content: &str) -> Value {
    json!({"id": id, "source": "agent", "observation": "delegate", "content": content, "extras": {"outputs": {}},
           "tool_call_metadata": {"function_name": "delegate_to_browsing_agent", "tool_call_id": call}})
}

#[test]
fn a_delegates_own_events_are_left_out_and_the_delegate_call_gets_its_observation() {
    let events = json!([
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Find the docs."}},
        delegate_action(2, "t1", "find docs"),
        // The delegate's own conversation, which the parent's model never saw, with a delegation
        // of its own inside it.
        {"id": 3, "source": "user", "action": "message", "args": {"content": "TASK: find docs"}},
        delegate_action(4, "t9", "open the page"),
        {"id": 5, "source": "user", "action": "message", "args": {"content": "TASK: open the page"}},
        {"id": 6, "source": "agent", "action": "finish", "args": {"thought": "Opened."}},
        delegate_observation(7, "t9", "page opened"),
        {"id": 8, "source": "agent", "action": "finish", "args": {"thought": "The docs say X."}},
        delegate_observation(9, "t1", "BrowsingAgent finishes task with content: docs say X"),
        {"id": 10, "source": "agent", "action": "message", "args": {"content": "The docs say X."}},
    ]);
    let transcript = read(Format::Openhands, &serde_json::to_string_pretty(&events).unwrap());
    let messages: Vec<(ctxhost_engine_abi::Role, String)> = transcript
        .messages
        .iter()
        .map(|m| (m.role, m.text().into_owned()))
        .collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(
        messages,
        [
            (System, "You are OpenHands.".to_owned()),
            (User, "Find the docs.".to_owned()),
            (Assistant, "Delegating.".to_owned()),
            (
                Tool,
                "BrowsingAgent finishes task with content: docs say X".to_owned()
            ),
            (Assistant, "The docs say X.".to_owned()),
        ]
    );
    assert_eq!(transcript.messages[3].tool_call_id.as_deref(), Some("t1"));
    assert_eq!(
        transcript.meta.skipped["delegate's event (a subagent's record)"],
        6
    );
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
    assert_eq!(transcript.meta.pairing_repairs, 0);
}

#[test]
fn a_delegation_never_answered_leaves_out_the_rest_with_a_warning_naming_its_line() {
    let events = json!([
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Find the docs."}},
        delegate_action(2, "t1", "find docs"),
        {"id": 3, "source": "user", "action": "message", "args": {"content": "TASK: find docs"}},
    ]);
    let text = serde_json::to_string_pretty(&events).unwrap();
    let transcript = read(Format::Openhands, &text);
    let texts: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts[..2], ["Find the docs.", "Delegating."]);
    assert_eq!(
        transcript.meta.skipped["delegate's event (a subagent's record)"],
        1
    );
    assert_eq!(
        transcript.meta.warnings[0],
        "line 10: this delegation is never answered (no `delegate` observation follows): every event after it is taken for the delegate's and left out"
    );
}

#[test]
fn a_commands_output_is_read_with_the_metadata_openhands_shows_the_model() {
    let mut events = events();
    // The last observation answers a `run` call: give it the metadata OpenHands 0.2x records.
    let run = events
        .iter_mut()
        .rev()
        .find(|event| event["observation"] == "run")
        .expect("the fixture runs a command");
    run["extras"] = json!({"command": "pytest", "metadata": {
        "exit_code": 1, "pid": -1, "working_dir": "/workspace", "py_interpreter_path": "/usr/bin/python",
        "prefix": "", "suffix": "\n[The command completed with exit code 1.]"}});
    let content = run["content"].as_str().unwrap().to_owned();
    let transcript = read(Format::Openhands, &serde_json::to_string(&events).unwrap());
    let result = transcript
        .messages
        .iter()
        .find(|m| m.role == ctxhost_engine_abi::Role::Tool && m.text().starts_with(content.as_str()))
        .expect("the command's result");
    assert_eq!(
        result.text(),
        format!(
            "{content}\n[The command completed with exit code 1.]\n[Current working directory: /workspace]\n[Python interpreter: /usr/bin/python]\n[Command finished with exit code 1]"
        )
    );
}

#[test]
fn an_observation_without_metadata_answers_the_call_of_the_action_it_names_as_its_cause() {
    let mut events = events();
    let [action, _] = call_and_result(10, "call_9", "Testing.", "");
    events.push(action);
    // What OpenHands writes when the runtime died under the action: `cause`, no metadata.
    events.push(json!({"id": 11, "source": "agent", "cause": 10, "observation": "error", "content": "The action has not been executed due to a runtime error."}));
    // A second one for the same action, and one whose cause made no call, stay user messages.
    events.push(json!({"id": 12, "source": "agent", "cause": 10, "observation": "error", "content": "Runtime restarted."}));
    events.push(
        json!({"id": 13, "source": "agent", "cause": 1, "observation": "error", "content": "Bad input."}),
    );
    let text = serde_json::to_string_pretty(&events).unwrap();
    let transcript = read(Format::Openhands, &text);
    let messages: Vec<_> = transcript
        .messages
        .iter()
        .skip(5)
        .map(|m| (m.role, m.tool_call_id.as_deref(), m.text().into_owned()))
        .collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(
        messages,
        [
            (Assistant, None, "Testing.".to_owned()),
            (
                Tool,
                Some("call_9"),
                "The action has not been executed due to a runtime error.".to_owned()
            ),
            (User, None, "Runtime restarted.".to_owned()),
            (User, None, "Bad input.".to_owned()),
        ]
    );
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
    assert_eq!(transcript.meta.pairing_repairs, 0);
}

#[test]
fn a_message_action_without_content_is_read_as_its_message_text_or_empty_with_a_warning() {
    let text = "[\n{\"id\": 0, \"source\": \"user\", \"message\": \"Fix issue #881.\", \"action\": \"message\", \"args\": {\"content\": null, \"image_urls\": null}},\n\
                {\"id\": 1, \"source\": \"user\", \"message\": \"\", \"action\": \"message\", \"args\": {}},\n\
                {\"id\": 2, \"source\": \"agent\", \"action\": \"message\", \"args\": {\"content\": null}},\n\
                {\"id\": 3, \"source\": \"agent\", \"action\": \"system\", \"args\": {\"tools\": []}}\n]";
    let transcript = read(Format::Openhands, text);
    let messages: Vec<_> = transcript
        .messages
        .iter()
        .map(|m| (m.role, m.text().into_owned()))
        .collect();
    use ctxhost_engine_abi::Role::*;
    assert_eq!(
        messages,
        [
            (User, "Fix issue #881.".to_owned()),
            (User, String::new()),
            (Assistant, String::new()),
            (System, String::new()),
        ]
    );
    assert!(!transcript.messages[0].extra["args"]
        .as_object()
        .unwrap()
        .contains_key("content"));
    assert_eq!(
        transcript.meta.warnings,
        [
            "line 2, column 1: a `message` action without `args.content`: the event's `message` text, \
             which OpenHands writes from the same text, is read as its content",
            "line 3, column 1: a user message with no content (`null`); it is read as empty text, which a model API accepts",
            "line 5, column 1: a system message with no content (`null`); it is read as empty text, which a model API accepts",
        ]
    );
}

#[test]
fn a_message_whose_content_is_not_text_is_a_malformed_record_naming_its_line() {
    let text = "[\n{\"id\": 1, \"source\": \"user\", \"action\": \"message\", \"args\": {\"content\": \"go\"}},\n{\"id\": 2, \"source\": \"user\", \"action\": \"message\", \"args\": {\"content\": [\"a\", \"b\"]}}\n]";
    let error = read_error(Format::Openhands, text);
    assert!(
        error.starts_with("transcript:3:1: the `message` action's `args.content` is a list"),
        "{error}"
    );
}

/// A screenshot the user attached is part of what OpenHands sends the model: each image after
/// `Image N:`, as its `ConversationMemory` writes them; an agent's images unlabelled. A list that
/// is empty or holds something else than URLs stays in `args`.
#[test]
fn a_messages_images_are_sent_as_image_parts() {
    use ctxhost_engine_abi::Content;
    let text = serde_json::to_string(&json!([
        {"id": 0, "source": "user", "action": "message", "args": {"content": "The button is cut off, see:", "image_urls": ["data:image/png;base64,iVBORw0KGgo=", "https://example.com/b.png"], "file_urls": []}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "Here is the fix.", "image_urls": ["https://example.com/after.png"]}},
        {"id": 2, "source": "user", "action": "message", "args": {"content": "Thanks.", "image_urls": []}},
        {"id": 3, "source": "user", "action": "message", "args": {"content": "And this?", "image_urls": [42]}},
    ]))
    .unwrap();
    let transcript = read(Format::Openhands, &text);
    let [user, agent, no_images, odd] = &transcript.messages[..] else {
        panic!("{:?}", transcript.messages);
    };
    assert_eq!(
        user.content,
        Content::Parts(vec![
            json!({"type": "text", "text": "The button is cut off, see:"}),
            json!({"type": "text", "text": "Image 1:"}),
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
            json!({"type": "text", "text": "Image 2:"}),
            json!({"type": "image_url", "image_url": {"url": "https://example.com/b.png"}}),
        ])
    );
    assert!(!user.extra["args"].as_object().unwrap().contains_key("image_urls"));
    assert_eq!(
        agent.content,
        Content::Parts(vec![
            json!({"type": "text", "text": "Here is the fix."}),
            json!({"type": "image_url", "image_url": {"url": "https://example.com/after.png"}}),
        ])
    );
    assert_eq!(no_images.content, Content::Text("Thanks.".into()));
    assert_eq!(odd.content, Content::Text("And this?".into()));
    assert_eq!(odd.extra["args"]["image_urls"], json!([42]));
}
