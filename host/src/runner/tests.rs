//! The replay in process: streaming, scripted commands, engine tools, events, with a probe engine
//! that records every call the host makes to it.

use std::path::{Path, PathBuf};

use ctxhost_engine_abi::{
    instantiate, CompressRequest, Counters, Engine, EngineError, Host, Message, ModelInfo, Role, SessionInfo,
    ToolCall,
};
use ctxhost_engine_kit::sequence::align_start_to_group;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::*;
use crate::{
    config::Settings,
    engine::EngineOrigin,
    formats::{open_transcript, read_transcript},
    resolution::builtin_compressor,
    services::{host_services_for, ServiceContext},
};

/// An engine that keeps the system message and the last two messages, offers two tools (one of
/// them twice), and answers `call_ext("calls")` with every call the host made to it.
struct Probe {
    counters: Counters,
    calls: Vec<String>,
    /// `should_compress` says yes after every tool turn (config `{"eager": true}`).
    eager: bool,
    /// The window of each `update_model`, answered to `call_ext("models")`.
    models: Vec<u64>,
    /// `compress` gives the context back as it was while it holds fewer messages than this
    /// (config `{"stubborn_below": N}`).
    stubborn_below: usize,
}

impl Engine for Probe {
    const NAME: &'static str = "probe";

    fn new(config: &Value, _host: Host) -> Result<Self, EngineError> {
        Ok(Self {
            counters: Counters::default(),
            calls: Vec::new(),
            eager: config["eager"] == true,
            models: Vec::new(),
            stubborn_below: config["stubborn_below"].as_u64().unwrap_or(0) as usize,
        })
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }
    fn compress(
        &mut self,
        messages: Vec<Message>,
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        self.calls
            .push(format!("compress focus={:?}", request.focus_topic));
        if messages.len() < self.stubborn_below {
            return Ok(messages);
        }
        let head = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
        let last_user = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(messages.len());
        let cut = align_start_to_group(&messages, messages.len().saturating_sub(2).min(last_user)).max(head);
        let mut kept = messages[..head].to_vec();
        kept.extend_from_slice(&messages[cut..]);
        self.counters.compression_count += 1;
        Ok(kept)
    }
    fn should_compress(&mut self, _prompt_tokens: Option<u64>) -> bool {
        self.eager
    }
    fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> Result<(), EngineError> {
        self.calls.push(format!(
            "on_session_start {session_id} reason={:?} old={:?}",
            info.boundary_reason, info.old_session_id
        ));
        Ok(())
    }
    fn on_session_end(&mut self, session_id: &str, messages: &[Message]) -> Result<(), EngineError> {
        self.calls
            .push(format!("on_session_end {session_id} messages={}", messages.len()));
        Ok(())
    }
    fn on_session_reset(&mut self) {
        self.calls.push("on_session_reset".to_owned());
    }
    fn update_model(&mut self, model: &ModelInfo) {
        self.models.push(model.context_length);
        self.counters.context_length = model.context_length;
        self.counters.threshold_tokens = model.context_length / 2;
    }
    fn get_tool_schemas(&self) -> Vec<Value> {
        vec![
            json!({"name": "probe_echo", "description": "answers its arguments", "parameters": {}}),
            json!({"name": "probe_count", "description": "counts the context", "parameters": {}}),
            json!({"name": "probe_echo", "description": "a second schema of that name", "parameters": {}}),
        ]
    }
    fn handle_tool_call(&mut self, name: &str, arguments: &Value, messages: Option<&[Message]>) -> Value {
        self.calls.push(format!("handle_tool_call {name}"));
        match name {
            "probe_echo" => arguments.clone(),
            "probe_count" => json!({"messages": messages.map_or(0, <[Message]>::len)}),
            _ => json!({"error": format!("Unknown context engine tool: {name}")}),
        }
    }
    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        match method {
            "calls" => Ok(json!(self.calls)),
            "models" => Ok(json!(self.models)),
            "resume_auto_compaction" => {
                self.calls.push(method.to_owned());
                Ok(json!(true))
            }
            _ => Err(EngineError::unknown_method(method)),
        }
    }
}

fn probe() -> EngineHandle {
    probe_with("{}")
}

fn probe_with(config: &str) -> EngineHandle {
    let services = ServiceContext::without_model();
    let object = instantiate::<Probe>(config, host_services_for("probe", &services)).unwrap();
    EngineHandle::new(object, "probe", EngineOrigin::Registered)
}

fn probe_calls(engine: &mut EngineHandle) -> Vec<String> {
    let calls = engine.call_ext("calls", &Value::Null).unwrap().unwrap();
    serde_json::from_value(calls).unwrap()
}

fn options() -> ReplayOptions {
    ReplayOptions {
        session_id: "s".to_owned(),
        model: ModelInfo {
            context_length: 100_000,
            ..ModelInfo::default()
        },
        token_counter: TokenCounter::rough(),
        facts: FactAccounting::Measure,
    }
}

/// The kinds of `events`, without the appends (one per message) and the run's end.
fn kinds(events: &[Fact]) -> Vec<&'static str> {
    events
        .iter()
        .map(Fact::kind)
        .filter(|kind| !matches!(*kind, "messages_appended" | "replay_end"))
        .collect()
}

/// Replays `messages` with `script`, keeping the events.
fn replay_with(
    engine: &mut EngineHandle,
    messages: Vec<Message>,
    script: &[ScriptedCommand],
) -> (ReplayOutcome, Vec<Fact>) {
    let mut events = Vec::new();
    let outcome = replay_stream(
        engine,
        messages.into_iter().map(Ok::<_, Infallible>),
        &options(),
        script,
        Watchers::subscribed(&mut events),
    )
    .unwrap();
    (outcome, events)
}

fn conversation_with_commands() -> Vec<Message> {
    vec![
        Message::system("be brief"),
        Message::user("first question"),
        Message::assistant("first answer"),
        Message::user("second question"),
        Message::assistant("second answer"),
        Message::user("/compress the second question"),
        Message::assistant("third answer"),
        Message::user("/new"),
        Message::user("after new"),
        Message::assistant("fourth answer"),
        Message::user(" /reset "),
        Message::user("after reset"),
        Message::assistant("fifth answer"),
    ]
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.text().into_owned()).collect()
}

#[test]
fn an_engine_resolved_for_the_model_is_told_it_once_before_its_session_starts() {
    let mut registry = crate::resolution::Registry::default();
    registry.register::<Probe>().unwrap();
    let settings = Settings::defaults(Path::new("."));
    let options = options();
    let mut engine =
        crate::resolution::resolve_engine_for("probe", &settings, &registry, &options.model).engine;
    assert_eq!(engine.name(), "probe");
    drop(Replayer::start(&mut engine, &options));
    let told = engine.call_ext("models", &Value::Null).unwrap().unwrap();
    assert_eq!(
        told,
        json!([100_000]),
        "the engine-contract lifecycle: update_model once, then on_session_start"
    );
    // One told another window first is told the replay's.
    let mut engine = probe();
    engine
        .update_model(&ModelInfo {
            context_length: 5_000,
            ..ModelInfo::default()
        })
        .unwrap();
    drop(Replayer::start(&mut engine, &options));
    let told = engine.call_ext("models", &Value::Null).unwrap().unwrap();
    assert_eq!(told, json!([5_000, 100_000]));
}

#[test]
fn commands_typed_as_messages_run_and_never_enter_the_context() {
    let mut engine = probe();
    let (outcome, events) = replay_with(&mut engine, conversation_with_commands(), &[]);
    assert_eq!(
        probe_calls(&mut engine),
        vec![
            "on_session_start s reason=None old=None",
            "resume_auto_compaction",
            "compress focus=Some(\"the second question\")",
            "on_session_end s messages=4",
            "on_session_reset",
            "on_session_start s-2 reason=Some(\"new_session\") old=Some(\"s\")",
            "on_session_reset",
            "on_session_end s-2 messages=3",
        ]
    );
    assert_eq!(
        texts(&outcome.context),
        vec!["be brief", "after reset", "fifth answer"]
    );
    assert_eq!(outcome.session_id, "s-2");
    assert_eq!(outcome.messages_replayed, 13);
    let commands: Vec<(usize, String, CommandSource, &str)> = outcome
        .commands
        .iter()
        .map(|c| {
            (
                c.message_index,
                c.command.to_string(),
                c.source,
                c.session_id.as_str(),
            )
        })
        .collect();
    assert_eq!(
        commands,
        vec![
            (
                5,
                "/compress the second question".to_owned(),
                CommandSource::Message,
                "s"
            ),
            (7, "/new".to_owned(), CommandSource::Message, "s-2"),
            (10, "/reset".to_owned(), CommandSource::Message, "s-2"),
        ]
    );
    assert_eq!(outcome.compactions.len(), 1);
    assert_eq!(outcome.compactions[0].trigger, Trigger::Manual);
    assert_eq!(
        outcome.compactions[0].focus.as_deref(),
        Some("the second question")
    );
    assert_eq!(
        kinds(&events),
        vec![
            "session_start",
            "warning",
            "model_call",
            "usage",
            "model_call",
            "usage",
            "command",
            "compaction",
            "model_call",
            "usage",
            "command",
            "session_end",
            "session_reset",
            "session_start",
            "model_call",
            "usage",
            "command",
            "session_reset",
            "model_call",
            "usage",
            "session_end",
        ]
    );
    let second_start = events
        .iter()
        .filter(|fact| fact.kind() == "session_start")
        .nth(1)
        .expect("a second session");
    assert_eq!(
        serde_json::to_value(second_start).unwrap(),
        json!({
            "event": "session_start",
            "message_index": 7,
            "session_id": "s-2",
            "engine": "probe",
            "model": "",
            "context_length": 100_000,
            "window": 100_000,
            "threshold_tokens": 50_000,
            "token_counter": "rough",
            "tools": ["probe_echo", "probe_count"],
            "boundary_reason": "new_session",
            "old_session_id": "s",
        })
    );
    let first_command = events.iter().find(|fact| fact.kind() == "command").unwrap();
    assert_eq!(
        serde_json::to_value(first_command).unwrap(),
        json!({"event": "command", "message_index": 5, "command": "compress", "focus": "the second question", "source": "message"})
    );
}

#[test]
fn commands_given_by_flag_run_before_their_message_and_after_a_tool_turn() {
    let messages = vec![
        Message::system("be brief"),
        Message::user("list files"),
        Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{}")]),
        Message::tool("c1", "a.txt"),
        Message::assistant("one file"),
        Message::user("thanks"),
    ];
    let script: Vec<ScriptedCommand> = ["5:/new", "3:/compress:files", "99:/reset", "5:/compress"]
        .iter()
        .map(|text| text.parse().unwrap())
        .collect();
    let mut engine = probe();
    let (outcome, _) = replay_with(&mut engine, messages, &script);
    let ran: Vec<(usize, String)> = outcome
        .commands
        .iter()
        .map(|c| (c.message_index, c.command.to_string()))
        .collect();
    // 3 is a tool result: its command waits for the turn to end, before message 4. Two commands
    // for one message run in the order given; past the end runs at the end.
    assert_eq!(
        ran,
        vec![
            (4, "/compress files".to_owned()),
            (5, "/new".to_owned()),
            (5, "/compress".to_owned()),
            (6, "/reset".to_owned()),
        ]
    );
    assert!(outcome.commands.iter().all(|c| c.source == CommandSource::Flag));
    assert_eq!(texts(&outcome.context), vec!["be brief"]);
    assert_eq!(outcome.compactions.len(), 2);
}

#[test]
fn a_compaction_is_numbered_by_the_message_it_comes_before_whatever_fired_it() {
    // The tool turn ends with message 3: the threshold compaction after it and the /compress
    // given for message 4 both come before message 4, with messages 0-3 in the context.
    let messages = vec![
        Message::system("be brief"),
        Message::user("list files"),
        Message::assistant_calls(vec![ToolCall::new("c1", "ls", "{}")]),
        Message::tool("c1", "a.txt"),
        Message::assistant("one file"),
        Message::user("/compress"),
        Message::assistant("done"),
    ];
    let script: Vec<ScriptedCommand> = vec!["4:/compress".parse().unwrap()];
    let mut engine = probe_with(r#"{"eager": true}"#);
    let (outcome, _) = replay_with(&mut engine, messages, &script);
    let numbered: Vec<(Trigger, usize, usize)> = outcome
        .compactions
        .iter()
        .map(|c| (c.trigger, c.at_message, c.messages_before))
        .collect();
    // The /compress typed as message 5 runs in its place, before it. (The probe keeps the last
    // user message and what follows: nothing was taken out, so the counts match.)
    assert_eq!(
        numbered,
        vec![
            (Trigger::Threshold, 4, 4),
            (Trigger::Manual, 4, 4),
            (Trigger::Manual, 5, 5),
        ]
    );
}

/// A dispatch's index, call id, tool, recorded and live answers, and whether they are equal.
type DispatchRow<'a> = (usize, &'a str, &'a str, Option<&'a str>, &'a str, bool);

#[test]
fn an_engine_tool_call_is_answered_live_and_the_live_answer_replaces_the_recorded_one() {
    let messages = vec![
        Message::system("be brief"),
        Message::user("search"),
        Message::assistant_calls(vec![
            ToolCall::new("e1", "probe_echo", r#"{"q": "coupon"}"#),
            ToolCall::new("t1", "terminal", r#"{"cmd": "ls"}"#),
            ToolCall::new("e2", "probe_count", ""),
        ]),
        Message::tool("e1", r#"{"q":"coupon"}"#),
        Message::tool("t1", "a.txt"),
        Message::tool("e2", r#"{"messages": 99}"#),
        Message::assistant_calls(vec![ToolCall::new("e3", "probe_echo", "{broken")]),
        Message::user("never answered"),
        Message::assistant_calls(vec![ToolCall::new("e4", "probe_echo", r#"{"n": 4}"#)]),
    ];
    let mut engine = probe();
    let (outcome, events) = replay_with(&mut engine, messages, &[]);
    assert_eq!(outcome.tools, vec!["probe_echo", "probe_count"]);
    assert_eq!(
        outcome.warnings,
        vec!["engine `probe` offers the tool `probe_echo` twice; the later schema is rejected"]
    );
    let dispatched: Vec<DispatchRow> = outcome
        .tool_dispatches
        .iter()
        .map(|d| {
            (
                d.message_index,
                d.call_id.as_str(),
                d.tool.as_str(),
                d.recorded.as_deref(),
                d.live.as_str(),
                d.equal,
            )
        })
        .collect();
    assert_eq!(
        dispatched,
        vec![
            (
                3,
                "e1",
                "probe_echo",
                Some(r#"{"q":"coupon"}"#),
                r#"{"q":"coupon"}"#,
                true
            ),
            // The context at the call: system, user, the assistant's call, the first two results.
            (
                5,
                "e2",
                "probe_count",
                Some(r#"{"messages": 99}"#),
                r#"{"messages":5}"#,
                false
            ),
            (
                6,
                "e3",
                "probe_echo",
                None,
                r#"{"error":"the arguments are not JSON: key must be a string at line 1 column 2"}"#,
                false
            ),
            (8, "e4", "probe_echo", None, r#"{"n":4}"#, false),
        ]
    );
    // The terminal's result is the transcript's; the engine's are live.
    assert_eq!(outcome.context[4].text(), "a.txt");
    assert_eq!(outcome.context[5].text(), r#"{"messages":5}"#);
    assert_eq!(
        probe_calls(&mut engine)
            .iter()
            .filter(|call| call.starts_with("handle_tool_call"))
            .count(),
        3,
        "broken arguments never reach the engine"
    );
    assert_eq!(kinds(&events)[..2], ["session_start", "warning"]);
    assert_eq!(events.iter().filter(|e| e.kind() == "tool_dispatch").count(), 4);
}

#[test]
fn a_read_error_ends_the_replay_without_ending_the_session() {
    let messages: Vec<Result<Message, String>> = vec![
        Ok(Message::user("hi")),
        Ok(Message::assistant("hello")),
        Err("t.jsonl:3:1: broken".to_owned()),
        Ok(Message::user("never fed")),
    ];
    let mut engine = probe();
    let mut events = Vec::new();
    let error = replay_stream(
        &mut engine,
        messages,
        &options(),
        &[],
        Watchers::subscribed(&mut events),
    )
    .unwrap_err();
    assert_eq!(error, "t.jsonl:3:1: broken");
    // The assistant message before the broken record is not fed either: the run ends as soon
    // as the broken record is seen.
    assert_eq!(kinds(&events), vec!["session_start", "warning"]);
    assert_eq!(
        probe_calls(&mut engine),
        vec!["on_session_start s reason=None old=None"]
    );
}

/// Recorded usage describes the original run's context. Once a compaction changed the replayed
/// one, the engine is given the replayed context's count calibrated by the calls recorded before
/// (here one: what the original sent besides the messages), with the recorded completion.
#[test]
fn after_a_compaction_recorded_usage_is_calibrated_to_the_replayed_context() {
    let with_usage = |mut message: Message, prompt: u64, completion: u64| {
        message.extra.insert(
            "usage".to_owned(),
            json!({"prompt_tokens": prompt, "completion_tokens": completion}),
        );
        message
    };
    let mut engine = probe_with(r#"{"eager": true}"#);
    let (outcome, events) = replay_with(
        &mut engine,
        vec![
            Message::user("hello"),
            Message::assistant("hi"),
            Message::user("list the files"),
            with_usage(
                Message::assistant_calls(vec![ToolCall::new("c1", "terminal", r#"{"command":"ls"}"#)]),
                20_000,
                7,
            ),
            Message::tool("c1", "a.txt\nb.txt"),
            with_usage(
                Message::assistant_calls(vec![ToolCall::new(
                    "c2",
                    "terminal",
                    r#"{"command":"cat a.txt"}"#,
                )]),
                20_050,
                9,
            ),
            Message::tool("c2", "hello"),
            with_usage(Message::assistant("done"), 20_100, 3),
        ],
        &[],
    );
    assert_eq!(
        (
            outcome.usage_recorded,
            outcome.usage_calibrated,
            outcome.usage_estimated
        ),
        (1, 2, 1)
    );
    let prompts: Vec<u64> = events
        .iter()
        .filter_map(|event| match event {
            Fact::ModelCall { prompt_tokens, .. } => Some(*prompt_tokens),
            _ => None,
        })
        .collect();
    let usages: Vec<(UsageSource, u64, u64)> = events
        .iter()
        .filter_map(|event| match event {
            Fact::Usage {
                source,
                prompt_tokens,
                completion_tokens,
                ..
            } => Some((*source, *prompt_tokens, *completion_tokens)),
            _ => None,
        })
        .collect();
    let besides = 20_000 - prompts[1];
    assert_eq!(
        usages[1..],
        [
            (UsageSource::Recorded, 20_000, 7),
            (UsageSource::Calibrated, prompts[2] + besides, 9),
            (UsageSource::Calibrated, prompts[3] + besides, 3),
        ]
    );
    // The compaction made the context smaller than the original: under the original's count.
    assert!(prompts[2] < prompts[1] + 20, "{prompts:?}");
}

#[test]
fn a_recorded_prompt_over_the_window_is_said_once() {
    let with_usage = |text: &str, prompt: u64| {
        let mut message = Message::assistant(text);
        message.extra.insert(
            "usage".to_owned(),
            json!({"prompt_tokens": prompt, "completion_tokens": 1}),
        );
        message
    };
    // The one warning a replay of `messages` gives about a recorded prompt.
    let said_of = |messages: Vec<Message>| {
        let mut engine = probe();
        let (outcome, _) = replay_with(&mut engine, messages, &[]);
        let said: Vec<String> = outcome
            .warnings
            .into_iter()
            .filter(|warning| warning.contains("recorded prompt"))
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        said[0].clone()
    };
    let said = said_of(vec![
        Message::user("hi"),
        with_usage("hello", 120_000),
        Message::user("more"),
        with_usage("ok", 121_000),
    ]);
    assert!(
        said.starts_with("before message 1: the original run's recorded prompt (120,000 tokens) is over the 100,000-token window"),
        "{said}"
    );
    assert!(said.contains("it sent more than the transcript holds"), "{said}");
    // A recorded prompt below the host's own count has the other reason.
    let said = said_of(vec![
        Message::user("x".repeat(480_000)),
        with_usage("hello", 101_000),
    ]);
    assert!(
        said.contains("the agent sent less than the transcript holds"),
        "{said}"
    );
}

#[test]
fn recorded_usage_is_passed_on_and_says_what_it_describes() {
    let mut answer = Message::assistant("hello");
    answer.extra.insert(
        "usage".to_owned(),
        json!({"prompt_tokens": 1234, "completion_tokens": 5, "cache_read_input_tokens": 1000}),
    );
    let mut engine = probe();
    let (outcome, events) = replay_with(
        &mut engine,
        vec![
            Message::user("hi"),
            answer,
            Message::user("more"),
            Message::assistant("ok"),
        ],
        &[],
    );
    assert_eq!((outcome.usage_recorded, outcome.usage_estimated), (1, 1));
    let usages: Vec<Value> = events
        .iter()
        .filter(|e| e.kind() == "usage")
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(
        usages[0],
        json!({
            "event": "usage",
            "message_index": 1,
            "source": "recorded",
            "prompt_tokens": 1234,
            "completion_tokens": 5,
            "total_tokens": 1239,
            "cache_read_tokens": 1000,
            "cache_write_tokens": null,
            "reasoning_tokens": null,
            "describes": "the original run's context, which no compaction has changed yet",
        })
    );
    assert_eq!(usages[1]["source"], "estimated");
    assert_eq!(
        usages[1]["describes"],
        "the replayed context, counted by the rough tokenizer"
    );
    let calls: Vec<Value> = events
        .iter()
        .filter(|e| e.kind() == "model_call")
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(calls[1]["prompt_source"], "estimated");
    assert_eq!(calls[1]["context_messages"], 3);
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/transcripts");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// What must not depend on how the messages arrived (durations do).
fn fingerprint(outcome: &ReplayOutcome) -> Value {
    let compactions: Vec<Value> = outcome
        .compactions
        .iter()
        .map(|c| {
            json!([
                c.at_message,
                c.trigger,
                c.tokens_before,
                c.tokens_after,
                c.messages_before,
                c.messages_after,
                c.outcome
            ])
        })
        .collect();
    json!({
        "messages": outcome.messages_replayed,
        "calls": outcome.model_calls,
        "usage": [outcome.usage_recorded, outcome.usage_estimated],
        "compactions": compactions,
        "faults": outcome.faults.len(),
        "peak": outcome.peak_tokens,
        "final": outcome.final_tokens,
        "status": outcome.status,
        "context": ctxhost_engine_abi::messages_to_json(&outcome.context),
    })
}

#[test]
fn a_streamed_replay_equals_a_collected_replay_on_every_example() {
    let settings = Settings::defaults(Path::new("."));
    let mut compacted = 0;
    for path in examples() {
        let transcript = read_transcript(&path, None).unwrap();
        // A small window, so that every example compacts several times.
        let options = ReplayOptions {
            session_id: "example".to_owned(),
            model: ModelInfo {
                context_length: 3_000,
                ..ModelInfo::default()
            },
            token_counter: TokenCounter::rough(),
            facts: FactAccounting::Measure,
        };
        let mut engine = builtin_compressor(&settings);
        let collected = replay(&mut engine, transcript.messages, &options);
        let mut engine = builtin_compressor(&settings);
        let stream = open_transcript(&path, None).unwrap();
        let mut events = Vec::new();
        let streamed = replay_stream(
            &mut engine,
            stream,
            &options,
            &[],
            Watchers::subscribed(&mut events),
        )
        .unwrap();
        assert_eq!(
            fingerprint(&streamed),
            fingerprint(&collected),
            "{}",
            path.display()
        );
        compacted += usize::from(!collected.compactions.is_empty());
        assert_eq!(
            events.iter().filter(|e| e.kind() == "compaction").count(),
            collected.compactions.len()
        );
    }
    assert!(
        compacted >= 4,
        "only {compacted} examples compacted: the comparison says little"
    );
}

#[test]
fn a_typed_engine_command_without_one_name_is_said_and_replayed_as_the_users_message() {
    let messages = vec![
        Message::system("be brief"),
        Message::user("/engine"),
        Message::assistant("which one?"),
        Message::user("/engine masking lcm"),
        Message::assistant("one at a time"),
    ];
    let mut engine = probe();
    let (outcome, _) = replay_with(&mut engine, messages, &[]);
    let said: Vec<&str> = outcome
        .warnings
        .iter()
        .map(String::as_str)
        .filter(|warning| warning.starts_with("message "))
        .collect();
    assert_eq!(
        said,
        vec![
            "message 1: `/engine` names no engine (`/engine masking`); it is replayed as the user's message",
            "message 3: `/engine` takes one engine name (`/engine masking`); it is replayed as the user's message",
        ]
    );
    assert!(outcome.engine_spans.len() <= 1, "no swap was attempted");
    assert_eq!(outcome.final_messages, 5);
}

/// Session hygiene that could not bring the context under its line tries again once the context
/// has grown by a twentieth of the window: not at every call, and not never (an engine that can
/// do better with more to summarise would otherwise leave the context growing past the window).
#[test]
fn hygiene_tries_again_once_the_context_has_grown() {
    let mut engine = probe_with(r#"{"stubborn_below": 95}"#);
    let mut messages = vec![Message::system("be brief")];
    // About 2,000 rough tokens a turn: hygiene's line (85,000 tokens of the 100,000-token
    // window) is crossed after some 43 turns, and a retry is due every 5,000 tokens.
    for at in 0..60 {
        messages.push(Message::user(format!("question {at}")));
        messages.push(Message::assistant(format!("{at:02} {}", "x".repeat(7_990))));
    }
    let (outcome, _) = replay_with(&mut engine, messages, &[]);
    let hygiene: Vec<(usize, bool)> = outcome
        .compactions
        .iter()
        .filter(|record| record.trigger == Trigger::Hygiene)
        .map(|record| (record.messages_before, matches!(record.outcome, Outcome::Applied)))
        .collect();
    let applied = hygiene.iter().filter(|(_, applied)| *applied).count();
    assert!(hygiene.len() - applied >= 2, "{hygiene:?}");
    assert_eq!(applied, 1, "{hygiene:?}");
    // Every other call at most: a retry waits for 5,000 tokens, two or three turns here.
    assert!(
        hygiene.windows(2).all(|pair| pair[1].0 >= pair[0].0 + 4),
        "{hygiene:?}"
    );
    assert!(outcome.peak_tokens < 100_000, "{}", outcome.peak_tokens);
}

/// `message` with the usage an agent recorded for the call that wrote it.
fn recorded(mut message: Message, prompt_tokens: u64) -> Message {
    message.extra.insert(
        "usage".to_owned(),
        json!({"prompt_tokens": prompt_tokens, "completion_tokens": 5}),
    );
    message
}

/// An assistant message calling `ls` in a terminal, with call id `id`.
fn ls_call(id: &str) -> Message {
    Message::assistant_calls(vec![ToolCall::new(id, "terminal", r#"{"command":"ls"}"#)])
}

/// The warnings about what the original run sent besides the transcript's messages, from a
/// replay of `messages` by the probe compacting after every tool turn.
fn overhead_warnings(messages: Vec<Message>) -> Vec<String> {
    let mut engine = probe_with(r#"{"eager": true}"#);
    let (outcome, _) = replay_with(&mut engine, messages, &[]);
    assert!(!outcome.compactions.is_empty());
    outcome
        .warnings
        .into_iter()
        .filter(|warning| warning.contains("besides the transcript's messages"))
        .collect()
}

/// What the original run sent besides the transcript's messages, alone over the engine's
/// threshold: said once, since no compaction can bring the prompts the engine is told under it.
#[test]
fn an_original_runs_overhead_over_the_threshold_is_said_once() {
    // The probe's threshold: 50,000 of the 100,000-token window.
    let messages = |overhead: u64| {
        vec![
            Message::user("hello"),
            Message::assistant("hi"),
            Message::user("list the files"),
            recorded(ls_call("c1"), overhead),
            Message::tool("c1", "a.txt"),
            recorded(ls_call("c2"), overhead + 50),
            Message::tool("c2", "b.txt"),
            recorded(ls_call("c3"), overhead + 100),
            Message::tool("c3", "c.txt"),
            recorded(Message::assistant("done"), overhead + 150),
        ]
    };
    let said = |overhead: u64| overhead_warnings(messages(overhead));
    let over = said(90_000);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(
        over[0].contains("at or over the engine's 50,000-token threshold by itself"),
        "{}",
        over[0]
    );
    assert_eq!(said(30_000), Vec::<String>::new());
}

/// What the original run sent besides the transcript's messages, under the threshold alone but
/// over it with what a compaction leaves: the first prompt after the compaction says so (verify40:
/// the compressor paused, and its warning could not say why).
#[test]
fn an_overhead_that_keeps_a_compacted_prompt_over_the_threshold_is_named() {
    // The probe's threshold: 50,000 of the 100,000-token window; each listing about 5,000
    // rough tokens, and the probe keeps the last request, its call and its listing.
    let listing = |name: &str| format!("{name}\n{}", "x".repeat(20_000));
    let messages = |overhead: u64| {
        vec![
            Message::user("list a"),
            recorded(ls_call("c1"), overhead),
            Message::tool("c1", listing("a")),
            Message::user("list b"),
            recorded(ls_call("c2"), overhead + 5_000),
            Message::tool("c2", listing("b")),
            Message::user("list c"),
            recorded(ls_call("c3"), overhead + 10_000),
            Message::tool("c3", listing("c")),
            recorded(Message::assistant("done"), overhead + 15_000),
        ]
    };
    let said = |overhead: u64| overhead_warnings(messages(overhead));
    let over = said(46_000);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(
        over[0].contains("still at or over its 50,000-token threshold")
            && over[0].contains("adds about 45,9"),
        "{}",
        over[0]
    );
    assert_eq!(said(30_000), Vec::<String>::new());
}

/// The prompt the engine is told from calibrated usage (the replayed context and what the
/// original agent sent besides it) over the window is an overrun, reported as one, though the
/// replayed context alone is under it: the report said `peak 13,568 of 16,000` while the engine
/// was told 18,536.
/// Eight listings, each answer's recorded prompt just under a 100,000-token window; the context
/// grows by some 600 tokens a result.
fn listings_recorded_under_the_window() -> Vec<Message> {
    let mut messages = vec![Message::user("list the files")];
    for at in 0..8 {
        if at == 2 {
            // A request of its own, so that the probe's compaction has turns before it to drop.
            messages.push(Message::user("and the hidden ones"));
        }
        let id = format!("c{at}");
        messages.push(recorded(ls_call(&id), 99_000 + 100 * at));
        messages.push(Message::tool(&id, "a.txt\n".repeat(400)));
    }
    messages
}

#[test]
fn a_calibrated_prompt_over_the_window_is_reported() {
    let mut messages = listings_recorded_under_the_window();
    messages.push(recorded(Message::assistant("done"), 99_900));
    let mut engine = probe_with(r#"{"eager": true}"#);
    let (outcome, _) = replay_with(&mut engine, messages, &[]);
    assert!(outcome.peak_tokens < 100_000, "{}", outcome.peak_tokens);
    assert!(outcome.peak_told_tokens > 100_000, "{}", outcome.peak_told_tokens);
    let overrun = outcome.over_window.as_ref().expect("an overrun");
    assert!(overrun.first_tokens > 100_000, "{overrun:?}");
    let said: Vec<&String> = outcome
        .warnings
        .iter()
        .filter(|warning| warning.starts_with("the prompt went over the window"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", outcome.warnings);
}

/// A context that outgrows the window by itself after a told prompt did is warned about too:
/// the told prompt's warning had silenced it, and a masking replay ended over the window with
/// no word.
#[test]
fn a_context_over_the_window_after_a_told_prompt_is_warned_about_too() {
    let mut messages = listings_recorded_under_the_window();
    messages.push(recorded(ls_call("big"), 99_900));
    messages.push(Message::tool("big", "b.txt\n".repeat(80_000)));
    messages.push(Message::assistant("done"));
    let mut engine = probe_with(r#"{"eager": true}"#);
    let (outcome, _) = replay_with(&mut engine, messages, &[]);
    assert!(outcome.peak_tokens > 100_000, "{}", outcome.peak_tokens);
    for said in [
        "the prompt went over the window",
        "the context went over the window",
    ] {
        assert_eq!(
            outcome
                .warnings
                .iter()
                .filter(|warning| warning.starts_with(said))
                .count(),
            1,
            "{said}: {:?}",
            outcome.warnings
        );
    }
}
