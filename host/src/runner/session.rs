//! The run loop: one session driven through a conversation exactly as an agent loop drives it.
//!
//! The session owns the live context and is its only writer: only the active engine's `compress`
//! result replaces it, one compaction at a time. Everything else watches: each thing that happens
//! is published as a [`Fact`] to the session's [`Subscribers`] (the event log, the report, the
//! progress bar) and, as the engine-level [`ctxhost_engine_abi::Fact`], to its [`Observers`]. The
//! session does not know who listens.

use std::{
    collections::{BTreeSet, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use ctxhost_engine_abi::{Content, FactBody, FactKind, Message, Role, SessionInfo, Usage};
use ctxhost_engine_kit::stand_in::group_thousands;
use serde_json::{json, Value};

use super::{
    calibration::Calibration,
    fact_measure::FactMeasure,
    facts::{CompactionEvent, Fact, Subscribers, UsageSource},
    observers::{Lifecycle, Observers, ToolAnswer},
    recorded_usage,
    script::{self, CommandSource, ScriptedCommand, SessionCommand},
    tools::{
        answers_equal, merge_tool_owners, parse_arguments, DetachedTool, PendingCall, ToolDispatch, ToolOwner,
    },
    CompactionRecord, FactAccounting, LiveContext, Outcome, ReplayOptions, Trigger, HYGIENE_MESSAGES,
    HYGIENE_PERCENT, HYGIENE_RETRY_SHARE, NEW_SESSION_REASON,
};
use crate::engine::{Compacted, CompressCall, EngineCallError, EngineHandle};

mod swap;

/// Finds an engine by name for `/engine NAME`, afresh (the plugin folder read again, a rebuilt
/// library loaded as new code), or says why it cannot.
pub type EngineSource<'e> = Box<dyn FnMut(&str) -> Result<EngineHandle, String> + 'e>;

/// Who watches a session.
#[derive(Default)]
pub struct Watchers<'e> {
    /// Subscribers of the session's facts.
    pub subscribers: Subscribers<'e>,
    /// Observer engines.
    pub observers: Observers,
    /// Engines that stay on as observers when `/engine` swaps them out (configured as observers
    /// too); any other engine swapped out gets `on_session_end`.
    pub standby: Vec<String>,
    /// What attaching the observers had to say (one left out, a name given twice): published as
    /// warnings once the session starts, so that the report, `--json` and the event log have them.
    pub warnings: Vec<String>,
    /// The tools the transcript records the agent was offered (its own tool definitions): an
    /// observer offering one of those names is not given the agent's calls of it.
    pub agent_tools: Vec<String>,
}

impl<'e> Watchers<'e> {
    /// `subscriber` alone.
    pub fn subscribed(subscriber: impl super::Subscriber + 'e) -> Self {
        let mut watchers = Self::default();
        watchers.subscribers.add(subscriber);
        watchers
    }
}

/// The state of one replay.
pub struct Replayer<'e> {
    engine: &'e mut EngineHandle,
    options: ReplayOptions,
    context: LiveContext,
    subscribers: Subscribers<'e>,
    observers: Observers,
    standby: Vec<String>,
    engine_source: Option<EngineSource<'e>>,
    engine_time: Duration,
    /// The context's rough size when a hygiene compaction last left it over the hygiene line:
    /// hygiene tries again once the context has grown past it by [`HYGIENE_RETRY_SHARE`] of the
    /// window, rather than at every call while the engine cannot do better, or never again.
    hygiene_failed_at: Option<u64>,
    /// Facts held back while a session starts, so that `session_start` comes before the errors
    /// of the calls that start it.
    held: Option<Vec<Fact>>,
    /// Commands given by flag, by message index.
    script: VecDeque<ScriptedCommand>,
    /// Sessions started (`/new` starts one more).
    sessions: usize,
    session_id: String,
    /// The tools the agent is offered, with the engine that answers each.
    tools: Vec<(String, ToolOwner)>,
    /// The agent's own tools, as far as the transcript shows them: those its definitions list,
    /// and those it called while no engine offered them. Observers never answer them.
    agent_tools: BTreeSet<String>,
    /// Tools no longer routed because the observer offering them was detached, with its name:
    /// the transcript's calls of them keep their recorded results.
    fallen_back: Vec<(String, usize)>,
    /// Warnings that are said once in a session however often their cause comes back (a tool
    /// table read again at every swap, a fallen-back tool called again).
    said: BTreeSet<String>,
    /// Calls to engine tools waiting for their results.
    pending: Vec<PendingCall>,
    /// Transcript messages fed so far.
    messages_replayed: usize,
    model_calls: usize,
    /// The index of the message being handled; between messages, of the next one.
    position: usize,
    /// Whether the end of the transcript has been handled.
    transcript_ended: bool,
    /// Whether the transcript was taken whole ([`Replayer::load`], a manual compaction of it):
    /// no agent loop ran it, so none would call the model after its end.
    loaded_whole: bool,
    /// The transcript's system message as it came, which `/new` and `/reset` restart from.
    system: Option<Message>,
    /// The active engine's threshold, read when it started its session.
    threshold: Option<u64>,
    /// Whether the context was at or over the threshold at the last model call: a crossing is
    /// published once, not on every response.
    above_threshold: bool,
    /// Whether the first window overrun of the context itself was warned about.
    overrun_warned: bool,
    /// Whether the first overrun of a prompt the engine is told (the context and the recorded
    /// run's own system prompt and tools) was: a context that then outgrows the window by itself
    /// is warned about too.
    told_overrun_warned: bool,
    /// Why the engine's last compaction left the context as large as it did, when it said so
    /// (its `last_compaction` account's `reason`): the over-window warning gives it.
    last_compaction_reason: Option<String>,
    /// Whether a compaction that made the context larger was warned about.
    growth_warned: bool,
    /// Each engine failure said on stderr, and how many times it happened: an engine that fails
    /// the same way at every turn (a store it cannot open) is said once, then counted.
    failures_said: Vec<(String, usize)>,
    /// The recorded usage of the calls made while the context was the original run's.
    calibration: Calibration,
    /// A compaction changed the context: recorded usage no longer describes it.
    diverged: bool,
    /// A compaction was applied since the last model call: that call's prompt is the one an
    /// engine judges the compaction by.
    compacted_since_call: bool,
    /// The fact measure, when the replay takes it.
    fact_measure: Option<FactMeasure>,
}

impl<'e> Replayer<'e> {
    /// Tells the engine the model, reads its tools and starts the session; nobody watches.
    pub fn start(engine: &'e mut EngineHandle, options: &ReplayOptions) -> Self {
        Self::start_with(engine, options, Watchers::default())
    }

    /// [`Self::start`], with `watchers` receiving everything as it happens.
    pub fn start_with(engine: &'e mut EngineHandle, options: &ReplayOptions, watchers: Watchers<'e>) -> Self {
        let wants_json = engine.wants_json();
        let mut replayer = Self {
            engine,
            options: options.clone(),
            context: LiveContext::with_counter(options.token_counter).keeping_json(wants_json),
            subscribers: watchers.subscribers,
            observers: watchers.observers,
            standby: watchers.standby,
            engine_source: None,
            engine_time: Duration::ZERO,
            hygiene_failed_at: None,
            held: Some(Vec::new()),
            script: VecDeque::new(),
            sessions: 0,
            session_id: options.session_id.clone(),
            tools: Vec::new(),
            agent_tools: watchers.agent_tools.into_iter().collect(),
            fallen_back: Vec::new(),
            said: BTreeSet::new(),
            pending: Vec::new(),
            messages_replayed: 0,
            model_calls: 0,
            position: 0,
            transcript_ended: false,
            loaded_whole: false,
            system: None,
            threshold: None,
            above_threshold: false,
            overrun_warned: false,
            told_overrun_warned: false,
            last_compaction_reason: None,
            growth_warned: false,
            failures_said: Vec::new(),
            calibration: Calibration::default(),
            compacted_since_call: false,
            diverged: false,
            fact_measure: (options.facts == FactAccounting::Measure).then(FactMeasure::default),
        };
        let model = replayer.options.model.clone();
        // Once, as the contract's lifecycle has it: an engine resolved for this model
        // (`resolve_engine_for`, which puts the compressor in the place of one that fails there)
        // was told it already.
        if replayer.engine.model() != Some(&model) {
            replayer.call(|engine| engine.update_model(&model));
        }
        replayer.observers.lifecycle(Lifecycle::UpdateModel(model));
        let warnings = replayer.read_tools();
        replayer.begin_session(None, None);
        for warning in watchers.warnings.into_iter().chain(warnings) {
            replayer.warn(warning);
        }
        replayer
    }

    /// Adds commands to run before given messages (`--at`); in the order given for one message.
    pub fn with_script(mut self, script: &[ScriptedCommand]) -> Self {
        let mut script = script.to_vec();
        script.sort_by_key(|command| command.before_message);
        self.script = script.into();
        self
    }

    /// Lets `/engine NAME` find engines through `source`; without one, `/engine` is refused.
    pub fn with_engine_source(mut self, source: EngineSource<'e>) -> Self {
        self.engine_source = Some(source);
        self
    }

    /// The active engine's name.
    pub fn engine_name(&self) -> &str {
        self.engine.name()
    }

    /// The tools the agent is offered (the active engine's, then the observers'), as the host
    /// routes them.
    pub fn tools(&self) -> Vec<String> {
        self.tools.iter().map(|(name, _)| name.clone()).collect()
    }

    /// The context the model would receive next.
    pub fn context(&self) -> &LiveContext {
        &self.context
    }

    /// The active engine's and the observers' tool names; the warnings about them.
    fn read_tools(&mut self) -> Vec<String> {
        let schemas = self.call(|engine| engine.get_tool_schemas()).unwrap_or_default();
        let offered = crate::tools::offered_tools(self.engine.name(), schemas);
        let active = offered.names().map(str::to_owned).collect();
        let mut warnings = offered.warnings;
        warnings.extend(self.observers.schema_warnings().map(str::to_owned));
        // A detached observer answers nothing: its tools are not offered again after a swap.
        let (offered_by_observers, agents_own) = self.observers.offerable_tools(
            &self.agent_tools,
            "the agent's own calls of it are left to the transcript's recorded results",
        );
        let (table, more) = merge_tool_owners(active, offered_by_observers.into_iter());
        warnings.extend(more);
        for warning in agents_own {
            if self.said.insert(warning.clone()) {
                warnings.push(warning);
            }
        }
        self.tools = table;
        warnings
    }

    /// Feeds every message of `messages`, then handles the transcript's end (commands scripted
    /// past it, calls it never answered). The first error ends it and is returned.
    pub fn feed_all<E>(&mut self, messages: impl IntoIterator<Item = Result<Message, E>>) -> Result<(), E> {
        let mut messages = messages.into_iter().peekable();
        while let Some(message) = messages.next() {
            let message = message?;
            let next_is_tool = match messages.peek() {
                Some(Ok(next)) => next.role == Role::Tool,
                // The next record is broken: the replay ends there, before more engine work.
                Some(Err(_)) => return messages.next().expect("peeked").map(drop),
                None => false,
            };
            self.feed(message, next_is_tool);
        }
        self.end_transcript();
        Ok(())
    }

    /// Takes a whole transcript as the context at once (for a manual compaction of all of it).
    pub fn load(&mut self, messages: Vec<Message>) {
        self.loaded_whole = true;
        self.position = self.messages_replayed;
        self.messages_replayed += messages.len();
        self.system = messages.first().filter(|m| m.role == Role::System).cloned();
        self.publish_appended(&messages);
        self.position = self.messages_replayed;
        self.context.restart(messages);
    }

    /// Feeds one transcript message; `next_is_tool` says whether a tool result follows it.
    pub fn feed(&mut self, message: Message, next_is_tool: bool) {
        let index = self.messages_replayed;
        // A person types between turns, never between a call and its result: a command aimed
        // at a tool result runs once the tool turn is over.
        if message.role != Role::Tool {
            self.run_script_before(index);
        }
        self.position = index;
        self.messages_replayed += 1;
        if message.role != Role::Tool {
            self.settle_unanswered_calls();
        }
        let command = if message.role == Role::User {
            let text = message.text();
            let command = SessionCommand::parse(&text);
            if let (None, Some(why)) = (&command, script::malformed_command(&text)) {
                self.warn(format!(
                    "message {index}: {why} (`/engine masking`); it is replayed as the user's message"
                ));
            }
            command
        } else {
            None
        };
        if let Some(command) = command {
            self.run_command(command, CommandSource::Message);
        } else {
            let ends_tool_turn = message.role == Role::Tool && !next_is_tool;
            match message.role {
                Role::Assistant => self.model_call(message),
                Role::Tool => self.push_tool_result(message),
                _ => {
                    if message.role == Role::System && self.context.is_empty() {
                        self.system = Some(message.clone());
                    }
                    self.append(message);
                }
            }
            if ends_tool_turn {
                self.settle_unanswered_calls();
                self.note_threshold(self.context.tokens());
                if self.call(|engine| engine.should_compress(None)) == Some(true) {
                    self.compact(Trigger::Threshold, None);
                }
            }
        }
        self.position = index + 1;
    }

    /// Appends a message of the conversation and tells who watches; returns its tokens.
    fn append(&mut self, message: Message) -> u64 {
        let tokens = self.context.push(message);
        self.publish_last_appended();
        tokens
    }

    /// Tells who watches that the context's last message was appended.
    fn publish_last_appended(&mut self) {
        self.publish(Fact::MessagesAppended {
            message_index: self.position,
            count: 1,
        });
        if self.observers.wants(FactKind::MessagesAppended) {
            let message = self.context.messages().last().cloned().into_iter().collect();
            self.observe(FactKind::MessagesAppended, || FactBody::MessagesAppended {
                messages: message,
            });
        }
    }

    fn publish_appended(&mut self, messages: &[Message]) {
        if messages.is_empty() {
            return;
        }
        self.publish(Fact::MessagesAppended {
            message_index: self.position,
            count: messages.len(),
        });
        let body = || FactBody::MessagesAppended {
            messages: messages.to_vec(),
        };
        self.observe(FactKind::MessagesAppended, body);
    }

    /// What the loop does before a model call: session hygiene, then the engine's preflight,
    /// compacting when either asks.
    fn before_model_call(&mut self) {
        self.note_threshold(self.context.tokens());
        if self.hygiene_due() {
            self.compact(Trigger::Hygiene, None);
            self.hygiene_failed_at = self.over_hygiene_line().then(|| self.context.rough_tokens());
        }
        let (engine, context) = (&mut *self.engine, &self.context);
        let preflight = timed(&mut self.engine_time, || {
            engine.should_compress_preflight_estimated(
                context.messages(),
                context.json(),
                context.rough_tokens(),
            )
        });
        if self.record(preflight) == Some(true) {
            self.compact(Trigger::Preflight, None);
        }
    }

    fn model_call(&mut self, message: Message) {
        self.before_model_call();
        let prompt_tokens = self.context.tokens();
        let context_messages = self.context.len();
        self.note_tokens(prompt_tokens, false);
        self.model_calls += 1;
        let recorded = recorded_usage(&message);
        let after_compaction = std::mem::take(&mut self.compacted_since_call);
        self.note_agent_tools(&message);
        let calls = self.engine_tool_calls(&message);
        // The model call is what the model received: published before its answer is appended.
        let completion_tokens = self.context.push(message);
        let counter = self.context.counter().name().to_owned();
        self.publish(Fact::ModelCall {
            message_index: self.position,
            context_messages,
            prompt_tokens,
            prompt_source: UsageSource::Estimated,
            completion_tokens,
            completion_source: UsageSource::Estimated,
            token_counter: counter.clone(),
        });
        self.publish_last_appended();
        let (usage, source) = match recorded {
            Some(usage) if !self.diverged => {
                self.calibration.add(prompt_tokens, usage.prompt_tokens);
                let window = self.options.model.window();
                if window > 0
                    && usage.prompt_tokens > window
                    && self.said.insert("recorded over window".to_owned())
                {
                    // Which way the two differ says why: an agent sends what a transcript does
                    // not hold (its system prompt, its tool schemas), or a transcript holds what
                    // the agent did not send (outputs it cut itself), or the counters differ.
                    let why = if usage.prompt_tokens > prompt_tokens {
                        "it sent more than the transcript holds (the agent's own system prompt and tool schemas)"
                    } else {
                        "the agent sent less than the transcript holds (outputs it cut itself), or the host's count runs higher than its model's"
                    };
                    self.warn(format!(
                        "before message {}: the original run's recorded prompt ({} tokens) is over the {}-token window, for a context the host counts at {}: {why}, and the engine is told the recorded figure",
                        self.position,
                        group_thousands(usage.prompt_tokens as usize),
                        group_thousands(window as usize),
                        group_thousands(prompt_tokens as usize)
                    ));
                }
                (usage, UsageSource::Recorded)
            }
            // The original run's context is not this one any more: its count, calibrated.
            Some(recorded) => {
                self.warn_overhead_over_threshold();
                let told = self.calibration.apply(prompt_tokens);
                if after_compaction {
                    self.warn_overhead_keeps_compaction_over(prompt_tokens, told);
                }
                (
                    Usage::new(told, recorded.completion_tokens),
                    UsageSource::Calibrated,
                )
            }
            None => (
                Usage::new(prompt_tokens, completion_tokens),
                UsageSource::Estimated,
            ),
        };
        if source != UsageSource::Estimated && usage.prompt_tokens > prompt_tokens {
            // The prompt the engine is told (the original run's usage, its own system prompt and
            // tool schemas with it) is over the window, though the replayed context alone is not:
            // that is a prompt a model would refuse too.
            self.note_tokens_told(usage.prompt_tokens, prompt_tokens, source);
        }
        self.publish(Fact::Usage {
            message_index: self.position,
            source,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            cache_read_tokens: usage.cache_read_tokens.into_option(),
            cache_write_tokens: usage.cache_write_tokens.into_option(),
            reasoning_tokens: usage.reasoning_tokens.into_option(),
            describes: match source {
                UsageSource::Recorded => {
                    "the original run's context, which no compaction has changed yet".to_owned()
                }
                UsageSource::Estimated => format!("the replayed context, counted by the {counter} tokenizer"),
                UsageSource::Calibrated => format!(
                    "the replayed context, counted by the {counter} tokenizer and calibrated by the usage recorded before its first compaction"
                ),
            },
        });
        self.observe(FactKind::Usage, || FactBody::Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            recorded: source == UsageSource::Recorded,
        });
        self.call(|engine| engine.update_from_response(usage));
        self.observers.lifecycle(Lifecycle::Usage(usage));
        self.pending.extend(calls);
    }

    /// Publishes a crossing of the active engine's threshold, once per crossing.
    fn note_threshold(&mut self, tokens: u64) {
        let Some(threshold) = self.threshold.filter(|&t| t > 0) else {
            return;
        };
        let above = tokens >= threshold;
        if above && !self.above_threshold {
            self.publish(Fact::ThresholdCrossed {
                message_index: self.position,
                tokens,
                threshold,
            });
            self.observe(FactKind::ThresholdCrossed, || FactBody::ThresholdCrossed {
                tokens,
                threshold,
            });
        }
        self.above_threshold = above;
    }

    /// Learns the agent's own tools from `message`'s calls: a name no engine offers is one. Says
    /// once for each tool of a detached observer that its calls keep their recorded results.
    fn note_agent_tools(&mut self, message: &Message) {
        for call in message.calls() {
            let name = &call.function.name;
            if self.tools.iter().any(|(tool, _)| tool == name) {
                continue;
            }
            match self.fallen_back.iter().find(|(tool, _)| tool == name) {
                Some(&(_, index)) => {
                    let observer = self.observers.name(index).to_owned();
                    self.say_fallen_back(name, &observer);
                }
                None => {
                    self.agent_tools.insert(name.clone());
                }
            }
        }
    }

    fn say_fallen_back(&mut self, tool: &str, observer: &str) {
        let warning = format!(
            "observer `{observer}` was detached, so the transcript's calls of its tool `{tool}` keep their recorded results"
        );
        if self.said.insert(warning.clone()) {
            self.warn(warning);
        }
    }

    /// The calls of an assistant message that name one of the offered tools.
    fn engine_tool_calls(&self, message: &Message) -> Vec<PendingCall> {
        message
            .calls()
            .iter()
            .filter(|call| self.tools.iter().any(|(name, _)| name == &call.function.name))
            .map(|call| PendingCall {
                message_index: self.position,
                call_id: call.id.clone(),
                tool: call.function.name.clone(),
                arguments: call.function.arguments.clone(),
            })
            .collect()
    }

    /// Appends a tool result. One answering a call to the active engine's tool is replaced by the
    /// engine's live answer. One answering an observer's tool is kept as recorded: the observer
    /// answers live all the same (compared, reported, published), but observers never change the
    /// context, so the replay gives the same context with or without them, attached or detached.
    fn push_tool_result(&mut self, mut message: Message) {
        let waiting = message
            .tool_call_id
            .as_ref()
            .and_then(|id| self.pending.iter().position(|call| &call.call_id == id));
        if let Some(waiting) = waiting {
            let call = self.pending.remove(waiting);
            let recorded = message.text().into_owned();
            let engine = self.tool_owner_name(&call.tool);
            let replaced = !self.observer_owns(&call.tool);
            if let Some((live, failed)) = self.dispatch(&call) {
                if replaced {
                    message.content = Content::Text(live.clone());
                }
                self.record_dispatch(ToolDispatch {
                    message_index: self.position,
                    equal: answers_equal(&recorded, &live),
                    engine,
                    call_id: call.call_id,
                    tool: call.tool,
                    arguments: call.arguments,
                    recorded: Some(recorded),
                    live,
                    failed,
                    replaced,
                });
            }
        }
        self.append(message);
    }

    /// Whether an observer, not the active engine, answers `tool`.
    fn observer_owns(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|(name, owner)| name == tool && matches!(owner, ToolOwner::Observer(_)))
    }

    /// Dispatches the engine-tool calls the transcript left unanswered; their answers are logged,
    /// nothing is inserted.
    fn settle_unanswered_calls(&mut self) {
        for call in std::mem::take(&mut self.pending) {
            let engine = self.tool_owner_name(&call.tool);
            let Some((live, failed)) = self.dispatch(&call) else {
                continue;
            };
            self.record_dispatch(ToolDispatch {
                message_index: call.message_index,
                engine,
                call_id: call.call_id,
                tool: call.tool,
                arguments: call.arguments,
                recorded: None,
                live,
                failed,
                equal: false,
                replaced: false,
            });
        }
    }

    /// The answer to `call` as JSON text, and whether the engine failed: a failure is contained
    /// and answered as `{"error": …}`, as an agent loop answers the model. `None` when the
    /// observer offering the tool had been detached before the call: it is not asked, and the
    /// transcript's result stands.
    fn dispatch(&mut self, call: &PendingCall) -> Option<(String, bool)> {
        let (answer, failed) = match parse_arguments(&call.arguments) {
            Err(problem) => (json!({ "error": problem }), false),
            Ok(arguments) => match self.route_tool_call(&call.tool, &arguments)? {
                Ok(answered) => answered,
                Err(error) => {
                    self.fault(&error);
                    (json!({ "error": error.to_string() }), true)
                }
            },
        };
        let answer = serde_json::to_string(&answer).expect("JSON values serialise");
        Some((answer, failed))
    }

    /// Calls the tool `name` for the transcript: [`Self::call_tool`], except that an observer
    /// detached before the call is not asked (`None`; said once, and its tools no longer routed).
    /// With the answer, whether the engine failed in it.
    fn route_tool_call(
        &mut self,
        name: &str,
        arguments: &Value,
    ) -> Option<Result<(Value, bool), EngineCallError>> {
        let owner = self
            .tools
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, owner)| *owner);
        let Some(ToolOwner::Observer(index)) = owner else {
            return Some(self.call_tool(name, arguments).map(|answer| (answer, false)));
        };
        let answer = self.observers.try_call_tool(index, name, arguments);
        self.report_detached_observers();
        match answer {
            // Detached by this very call (it failed or got stuck in it): a failed call.
            ToolAnswer::Answered(answer) => Some(Ok((answer, self.observers.is_detached(index)))),
            ToolAnswer::Detached(_) => {
                let observer = self.observers.name(index).to_owned();
                self.say_fallen_back(name, &observer);
                None
            }
        }
    }

    fn record_dispatch(&mut self, mut dispatch: ToolDispatch) {
        // The answer and arguments are read back from JSON only for an observer that asked.
        if self.observers.wants(FactKind::ToolCalled) {
            let owner = self.tool_owner_name(&dispatch.tool);
            self.observe(FactKind::ToolCalled, || FactBody::ToolCalled {
                engine: owner,
                tool: dispatch.tool.clone(),
                arguments: parse_arguments(&dispatch.arguments).unwrap_or(Value::Null),
                answer: serde_json::from_str(&dispatch.live).unwrap_or(Value::Null),
            });
        }
        // The report and the event log keep every dispatch to the end: an engine answering
        // megabytes a call would make them gigabytes. The context keeps the whole answer.
        clip_for_the_record(&mut dispatch.live);
        if let Some(recorded) = &mut dispatch.recorded {
            clip_for_the_record(recorded);
        }
        self.publish(Fact::ToolDispatch(dispatch));
    }

    fn tool_owner_name(&self, tool: &str) -> String {
        match self.tools.iter().find(|(name, _)| name == tool) {
            Some((_, ToolOwner::Observer(index))) => self.observers.name(*index).to_owned(),
            _ => self.engine.name().to_owned(),
        }
    }

    /// Calls one of the offered tools against the current context (`ctxhost tool`): the active
    /// engine's, or an observer's once it has handled everything published so far.
    pub fn call_tool(&mut self, name: &str, arguments: &Value) -> Result<Value, EngineCallError> {
        let owner = self
            .tools
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, owner)| *owner)
            // A detached observer's tool is offered no more, but asked for by name it answers why.
            .or_else(|| {
                self.fallen_back
                    .iter()
                    .find(|(tool, _)| tool == name)
                    .map(|&(_, index)| ToolOwner::Observer(index))
            });
        let answer = match owner {
            Some(ToolOwner::Observer(index)) => {
                let answer = self.observers.call_tool(index, name, arguments);
                self.report_detached_observers();
                Ok(answer)
            }
            _ => {
                let (engine, context) = (&mut *self.engine, &self.context);
                timed(&mut self.engine_time, || {
                    engine.handle_tool_call(name, arguments, Some(context.messages()))
                })
            }
        };
        answer
    }

    /// Runs a command a person would type between turns:
    /// - `/compress [focus]`: a manual compaction now (auto-compaction resumed first);
    /// - `/reset`: `on_session_reset`; the context restarts from the system message;
    /// - `/new`: `on_session_end` for the session, `on_session_reset`, the context restarted, then
    ///   `on_session_start` for a new session id with `boundary_reason` and `old_session_id`;
    /// - `/engine NAME`: [`Self::swap_engine`] to the engine of that name, found afresh.
    pub fn run_command(&mut self, command: SessionCommand, source: CommandSource) {
        self.publish(Fact::Command {
            message_index: self.position,
            command: command.clone(),
            source,
        });
        match &command {
            SessionCommand::Compress { focus } => self.compact(Trigger::Manual, focus.as_deref()),
            SessionCommand::Reset => self.reset_session(true),
            SessionCommand::New => {
                self.end_session();
                // Observers are told nothing of a session once it ended, nor of the next before it
                // starts: the engines are reset, and the new session's start says why it began.
                let old = std::mem::take(&mut self.session_id);
                self.session_id = format!("{}-{}", self.options.session_id, self.sessions + 1);
                self.reset_session(false);
                self.begin_session(Some(NEW_SESSION_REASON), Some(old));
            }
            SessionCommand::Engine { name } => {
                let found = match &mut self.engine_source {
                    Some(source) => source(name),
                    None => Err("this session was started without a way to load engines".to_owned()),
                };
                match found {
                    Ok(engine) => self.swap_engine(engine),
                    Err(reason) => self.refuse_swap(name, reason),
                }
            }
        }
    }

    fn run_script_before(&mut self, index: usize) {
        while self
            .script
            .front()
            .is_some_and(|command| command.before_message <= index)
        {
            let scripted = self.script.pop_front().expect("checked");
            self.position = index.min(self.messages_replayed);
            if scripted.before_message > self.messages_replayed {
                // A typo in N would otherwise go unnoticed: the command runs, at the end.
                self.warn(format!(
                    "`--at {}:{}`: the transcript has {} messages; it ran at the end, after the last one",
                    scripted.before_message,
                    scripted.command.to_string().replacen(' ', ":", 1),
                    self.messages_replayed
                ));
            }
            self.run_command(scripted.command, CommandSource::Flag);
        }
    }

    /// The end of the transcript: commands scripted at or past it, calls it never answered.
    fn end_transcript(&mut self) {
        if std::mem::replace(&mut self.transcript_ended, true) {
            return;
        }
        self.position = self.messages_replayed;
        self.run_script_before(usize::MAX);
        self.settle_unanswered_calls();
        // A transcript that ends on tool results or a request ends before a model call: the
        // loop would run its checks first, and the final context is what that call would send
        // (verify38: a 110 KB log read last left the context at twice the window, uncompacted).
        let awaits_model = !self.loaded_whole
            && self
                .context
                .messages()
                .last()
                .is_some_and(|last| matches!(last.role, Role::Tool | Role::User));
        if awaits_model {
            self.before_model_call();
        }
    }

    fn session_info(&self, boundary_reason: Option<&str>, old_session_id: Option<String>) -> SessionInfo {
        let model = &self.options.model;
        SessionInfo {
            model: model.model.clone(),
            context_length: model.context_length,
            platform: "ctxhost".to_owned(),
            boundary_reason: boundary_reason.map(str::to_owned),
            old_session_id,
        }
    }

    fn begin_session(&mut self, boundary_reason: Option<&str>, old_session_id: Option<String>) {
        self.held.get_or_insert_with(Vec::new);
        self.sessions += 1;
        let info = self.session_info(boundary_reason, old_session_id.clone());
        let session_id = self.session_id.clone();
        self.call(|engine| engine.on_session_start(&session_id, &info));
        self.observers
            .lifecycle(Lifecycle::SessionStart(session_id.clone(), info.clone()));
        self.threshold = self.call(|engine| engine.counters()).map(|c| c.threshold_tokens);
        self.above_threshold = false;
        let held = self.held.take().unwrap_or_default();
        self.publish(Fact::SessionStart {
            message_index: self.position,
            session_id,
            engine: self.engine.name().to_owned(),
            model: info.model.clone(),
            context_length: info.context_length,
            window: self.options.model.window(),
            threshold_tokens: self.threshold,
            token_counter: self.context.counter().name().to_owned(),
            tools: self.tools(),
            boundary_reason: info.boundary_reason,
            old_session_id,
        });
        let engine = self.engine.name().to_owned();
        self.observe(FactKind::SessionStarted, || FactBody::SessionStarted {
            engine,
            model: info.model,
            context_length: info.context_length,
        });
        for fact in held {
            self.publish(fact);
        }
    }

    fn end_session(&mut self) {
        self.call_session_end();
        self.publish_session_end();
    }

    /// The engine's `on_session_end`, a failure recorded.
    fn call_session_end(&mut self) {
        let session_id = self.session_id.clone();
        let (engine, context) = (&mut *self.engine, &self.context);
        let ended = timed(&mut self.engine_time, || {
            engine.on_session_end(&session_id, context.messages())
        });
        self.record(ended);
    }

    /// The session's end, told to the observers and published.
    fn publish_session_end(&mut self) {
        let session_id = self.session_id.clone();
        // The final context is copied only for observers, once for all of them.
        if !self.observers.is_empty() {
            let messages = Arc::new(self.context.messages().to_vec());
            self.observe(FactKind::SessionEnded, || FactBody::SessionEnded {
                messages: messages.to_vec(),
            });
            self.observers
                .lifecycle(Lifecycle::SessionEnd(session_id.clone(), messages));
        }
        self.publish(Fact::SessionEnd {
            message_index: self.position,
            session_id,
            messages: self.context.len(),
            tokens: self.context.tokens(),
        });
    }

    /// `on_session_reset`, and the context restarts from the transcript's system message (as it
    /// came, without what a compaction may have added to it).
    /// `within_session`: observers are told it as a fact of the session (`/reset`); `/new` resets
    /// between two sessions, where a fact would name one not started yet (they still get
    /// `on_session_reset`, and the event log records it).
    fn reset_session(&mut self, within_session: bool) {
        self.call(|engine| engine.on_session_reset());
        self.observers.lifecycle(Lifecycle::Reset);
        if within_session {
            self.observe(FactKind::SessionReset, || FactBody::SessionReset);
        }
        self.publish(Fact::SessionReset {
            message_index: self.position,
            session_id: self.session_id.clone(),
        });
        self.context.restart(self.system.clone().into_iter().collect());
        self.hygiene_failed_at = None;
        self.above_threshold = false;
    }

    /// Says once when what the original run sent besides the transcript's messages (its own
    /// system prompt and tool schemas, as the calibration fits it) is alone at or over the
    /// engine's threshold: no compaction can bring the prompt the engine is told under it, so
    /// the engine pauses, and only hygiene bounds the context.
    fn warn_overhead_over_threshold(&mut self) {
        let overhead = self.calibration.apply(0);
        let Some(threshold) = self
            .threshold
            .filter(|&threshold| threshold > 0 && overhead >= threshold)
        else {
            return;
        };
        if self.said.insert("overhead over threshold".to_owned()) {
            self.warn(format!(
                "before message {}: the original run sent about {} tokens besides the transcript's messages (its own system prompt and tool schemas), at or over the engine's {}-token threshold by itself: no compaction can bring the prompts the engine is told under it at this window",
                self.position,
                group_thousands(overhead as usize),
                group_thousands(threshold as usize)
            ));
        }
    }

    /// Says once when the first prompt after a compaction (`counted` by the host, `told` the
    /// engine with the calibration) is at or over the engine's threshold only because of what the
    /// original run sent besides the transcript's messages: the engine reads its compaction as
    /// ineffective (the compressor pauses after two), and the pause's own warning cannot say why.
    /// An overhead over the threshold by itself is said by [`Self::warn_overhead_over_threshold`].
    fn warn_overhead_keeps_compaction_over(&mut self, counted: u64, told: u64) {
        let overhead = self.calibration.apply(0);
        let Some(threshold) = self.threshold.filter(|&threshold| {
            threshold > 0 && overhead < threshold && counted < threshold && told >= threshold
        }) else {
            return;
        };
        if self.said.insert("overhead keeps compaction over".to_owned()) {
            self.warn(format!(
                "before message {}: after the compaction, the prompt the engine is told ({} tokens) is still at or over its {}-token threshold, though the replayed context is {}: the original run's recorded usage adds about {} tokens besides the transcript's messages (its own system prompt and tool schemas), which no compaction removes, so the engine may read its compactions as ineffective and pause (said once)",
                self.position,
                group_thousands(told as usize),
                group_thousands(threshold as usize),
                group_thousands(counted as usize),
                group_thousands(told.saturating_sub(counted) as usize),
            ));
        }
    }

    fn hygiene_due(&self) -> bool {
        let window = self.options.model.window();
        let grown = |failed_at: u64| self.context.rough_tokens() >= failed_at + window / HYGIENE_RETRY_SHARE;
        self.over_hygiene_line() && self.hygiene_failed_at.is_none_or(grown)
    }

    /// Whether the context is at or over the hygiene line: [`HYGIENE_PERCENT`] of the window, or
    /// [`HYGIENE_MESSAGES`] messages.
    fn over_hygiene_line(&self) -> bool {
        let window = self.options.model.window();
        let over_tokens = window > 0 && self.context.rough_tokens() * 100 >= window * HYGIENE_PERCENT;
        over_tokens || self.context.len() >= HYGIENE_MESSAGES
    }

    /// Compacts the context now; on any failure the context stays as it was.
    ///
    /// A manual `/compress` first resumes automatic compaction, then asks
    /// `has_content_to_compress`: when the engine says no, `compress` is not called and the
    /// record says there was nothing to compact. An engine result equal to its input is recorded
    /// as nothing to compact too, never as a compaction.
    pub fn compact(&mut self, trigger: Trigger, focus: Option<&str>) {
        // Numbered as `--at N` and the window's overrun are: by the transcript message it came
        // before. A threshold compaction follows the tool result being handled, which is in the
        // context already; the others run before the message being handled enters it (a model
        // call, a command typed in its place).
        let before_message = match trigger {
            Trigger::Threshold => self.position + 1,
            _ => self.position,
        };
        let mut record = CompactionRecord {
            at_message: before_message,
            turn: self.model_calls,
            trigger,
            focus: focus.map(str::to_owned),
            tokens_before: self.context.tokens(),
            tokens_after: self.context.tokens(),
            messages_before: self.context.len(),
            messages_after: self.context.len(),
            duration_ms: 0.0,
            outcome: Outcome::Applied,
            retention: None,
            details: None,
        };
        if trigger == Trigger::Manual {
            self.call(|engine| engine.call_ext("resume_auto_compaction", &Value::Null));
            let (engine, context) = (&mut *self.engine, &self.context);
            let has_content = timed(&mut self.engine_time, || {
                engine.has_content_to_compress(context.messages())
            });
            if self.record(has_content) == Some(false) {
                record.outcome = Outcome::NothingToCompact {
                    reason: "the engine says everything is still protected".to_owned(),
                };
                return self.record_compaction(record, &[]);
            }
        }
        let started = Instant::now();
        let (engine, context) = (&mut *self.engine, &self.context);
        let call = CompressCall {
            current_tokens: Some(record.tokens_before),
            focus_topic: focus,
            user_message: context.user_message(),
        };
        let result = engine.compress_or_keep(context.messages(), context.json(), &call);
        let duration = started.elapsed();
        self.engine_time += duration;
        record.duration_ms = duration.as_secs_f64() * 1e3;
        record.details = self
            .call(|engine| engine.call_ext("last_compaction", &Value::Null))
            .flatten();
        let mut inserted = Vec::new();
        record.outcome = match result {
            Ok(Compacted::Unchanged) => Outcome::NothingToCompact {
                reason: "the engine returned the context as it was".to_owned(),
            },
            Ok(Compacted::Changed { messages, json }) => {
                if let Some(measure) = &mut self.fact_measure {
                    let context = &self.context;
                    record.retention = Some(measure.measure(context.messages(), &messages, |message| {
                        context.sent_by_user(message)
                    }));
                }
                if self.observers.wants(FactKind::Compacted) {
                    inserted = super::observers::inserted_messages(self.context.messages(), &messages);
                }
                self.context.replace_written(messages, json);
                self.hygiene_failed_at = None;
                self.diverged = true;
                Outcome::Applied
            }
            Err(error) => {
                let reason = error.to_string();
                self.fault(&error);
                Outcome::Kept { reason }
            }
        };
        record.tokens_after = self.context.tokens();
        record.messages_after = self.context.len();
        if record.outcome == Outcome::Applied {
            self.compacted_since_call = true;
            self.above_threshold = self.threshold.is_some_and(|t| t > 0 && record.tokens_after >= t);
            if record.tokens_after > record.tokens_before && !std::mem::replace(&mut self.growth_warned, true)
            {
                // Applied all the same: the result is checked for validity, and size is the
                // engine's business (an overrun of the window is reported on its own).
                self.warn(format!(
                    "engine `{}` made the context larger, not smaller, in its compaction before message {}: {} -> {} tokens (applied: a result is checked for validity, not size; the report lists every compaction)",
                    self.engine.name(),
                    record.at_message,
                    group_thousands(record.tokens_before as usize),
                    group_thousands(record.tokens_after as usize),
                ));
            }
        }
        self.record_compaction(record, &inserted);
    }

    /// Reports a prompt the engine is told from recorded usage (`told`) over the usable window
    /// when the replayed context (`counted`) is under it, with a warning the first time (a
    /// recorded prompt has had its own).
    fn note_tokens_told(&mut self, told: u64, counted: u64, source: UsageSource) {
        let window = self.options.model.window();
        if window == 0 || told <= window || counted > window {
            return;
        }
        self.publish(Fact::OverWindow {
            message_index: self.position,
            tokens: told,
            window,
            at_end: false,
            with_overhead: true,
        });
        if !std::mem::replace(&mut self.told_overrun_warned, true) && source == UsageSource::Calibrated {
            self.warn(format!(
                "the prompt went over the window before message {}: {} tokens in {}-token window, which a model would refuse: the replayed context is {} tokens, and the original run's recorded usage adds its own system prompt and tool schemas",
                self.position,
                group_thousands(told as usize),
                with_article(&group_thousands(window as usize)),
                group_thousands(counted as usize),
            ));
        }
    }

    /// Takes the tokens of a context the model would receive (or of the final one) and reports
    /// it when it is over the usable window, with a warning the first time.
    fn note_tokens(&mut self, tokens: u64, at_end: bool) {
        let window = self.options.model.window();
        if window == 0 || tokens <= window {
            return;
        }
        self.publish(Fact::OverWindow {
            message_index: self.position,
            tokens,
            window,
            at_end,
            with_overhead: false,
        });
        if !std::mem::replace(&mut self.overrun_warned, true) {
            let at = if self.transcript_ended {
                "at the end".to_owned()
            } else {
                format!("before message {}", self.position)
            };
            let why = match &self.last_compaction_reason {
                Some(reason) => format!("; {} said of its last compaction: {reason}", self.engine.name()),
                None => String::new(),
            };
            self.warn(format!(
                "the context went over the window {at}: {} tokens in {}-token window, which a model would refuse{why}",
                group_thousands(tokens as usize),
                with_article(&group_thousands(window as usize)),
            ));
        }
    }

    fn record_compaction(&mut self, record: CompactionRecord, inserted: &[Message]) {
        self.last_compaction_reason = record
            .details
            .as_ref()
            .and_then(|details| details.get("reason")?.as_str())
            .map(str::to_owned);
        if record.outcome == Outcome::Applied {
            let engine = self.engine.name().to_owned();
            self.observe(FactKind::Compacted, || FactBody::Compacted {
                engine,
                tokens_before: record.tokens_before,
                tokens_after: record.tokens_after,
                messages_before: record.messages_before as u64,
                messages_after: record.messages_after as u64,
                inserted: inserted.to_vec(),
            });
        }
        self.publish(Fact::Compaction(CompactionEvent::new(self.position, &record)));
    }

    /// Ends the transcript and the session, waits for the observers to handle everything, and
    /// returns the final context.
    pub fn finish(mut self) -> Vec<Message> {
        self.end_transcript();
        // The engine's last call first, so that a failure it repeats is counted with the others;
        // said while the session is on, so that the event log has it before the session's end.
        self.call_session_end();
        for (failure, times) in std::mem::take(&mut self.failures_said) {
            if times > 1 {
                self.warn(format!(
                    "{failure}: {times} times in all (said once above; each is in the report)"
                ));
            }
        }
        self.publish_session_end();
        let counters = self.call(|engine| engine.counters());
        let status = self.call(|engine| engine.get_status());
        self.note_tokens(self.context.tokens(), true);
        self.observers.close();
        self.report_detached_observers();
        self.publish(Fact::ReplayEnd {
            message_index: self.messages_replayed,
            messages_replayed: self.messages_replayed,
            final_tokens: self.context.tokens(),
            final_messages: self.context.len(),
            engine_time_ms: self.engine_time.as_secs_f64() * 1e3,
            counters,
            status,
            observers: self.observers.summaries(),
            detached_tools: self.detached_tools(),
            standby: self
                .standby
                .iter()
                .filter(|name| *name == self.engine.name())
                .cloned()
                .collect(),
        });
        std::mem::take(&mut self.context).into_messages()
    }

    /// The tools no longer offered because the observer offering them was detached (a name an
    /// engine swapped in since offers is offered again, as that engine's).
    fn detached_tools(&self) -> Vec<DetachedTool> {
        self.fallen_back
            .iter()
            .filter(|(tool, _)| !self.tools.iter().any(|(offered, _)| offered == tool))
            .map(|(tool, index)| DetachedTool {
                tool: tool.clone(),
                observer: self.observers.name(*index).to_owned(),
            })
            .collect()
    }

    fn call<T>(&mut self, body: impl FnOnce(&mut EngineHandle) -> Result<T, EngineCallError>) -> Option<T> {
        let engine = &mut *self.engine;
        let result = timed(&mut self.engine_time, || body(engine));
        self.record(result)
    }

    fn record<T>(&mut self, result: Result<T, EngineCallError>) -> Option<T> {
        result.map_err(|error| self.fault(&error)).ok()
    }

    fn fault(&mut self, error: &EngineCallError) {
        // The crash that detaches an isolated engine was said by the handle, with who takes over.
        let detaching = matches!(
            error,
            EngineCallError::ProcessLost {
                detached_after: Some(_),
                ..
            }
        );
        let said = error.to_string();
        match self.failures_said.iter_mut().find(|(known, _)| *known == said) {
            Some((_, times)) => *times += 1,
            None => {
                if !detaching {
                    // Only a call that could have changed the context has kept it.
                    let kept = match error.method() {
                        "compress" => "; the context is kept as it was",
                        _ => "",
                    };
                    tracing::warn!("{said}{kept}");
                }
                self.failures_said.push((said, 1));
            }
        }
        self.publish(Fact::Error {
            message_index: self.position,
            at_message: self.position,
            message: error.to_string(),
        });
        if let EngineCallError::ProcessLost {
            engine,
            detached_after: Some(_),
            ..
        } = error
        {
            // The handle put the built-in compressor in its place: the report's owners say so.
            self.handed_over_from(engine.clone());
        }
    }

    fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
        self.publish(Fact::Warning {
            message_index: self.position,
            message,
        });
    }

    fn report_detached_observers(&mut self) {
        for warning in self.observers.newly_detached() {
            self.warn(warning);
        }
        // A detached observer answers nothing: its tools are no longer offered, and the
        // transcript's calls of them keep their recorded results.
        let observers = &self.observers;
        let fallen_back = &mut self.fallen_back;
        self.tools.retain(|(tool, owner)| match owner {
            ToolOwner::Observer(index) if observers.is_detached(*index) => {
                fallen_back.push((tool.clone(), *index));
                false
            }
            _ => true,
        });
    }

    /// Hands `fact` to every subscriber (held back while a session starts).
    fn publish(&mut self, fact: Fact) {
        match &mut self.held {
            Some(held) => held.push(fact),
            None => self.subscribers.publish(&fact),
        }
    }

    /// Delivers the engine-level fact `body` builds to the observers that asked for `kind`;
    /// nothing is built when none did.
    fn observe(&mut self, kind: FactKind, body: impl FnOnce() -> FactBody) {
        if self.observers.is_empty() {
            return;
        }
        // The session's id is copied only into a fact someone asked for.
        let (session_id, at_message) = (&self.session_id, self.messages_replayed as u64);
        self.observers.deliver(kind, || ctxhost_engine_abi::Fact {
            session_id: session_id.clone(),
            at_message,
            body: body(),
        });
        self.report_detached_observers();
    }
}

fn timed<T>(total: &mut Duration, body: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = body();
    *total += started.elapsed();
    value
}

/// `a 16,000` or `an 8,000` (and `an 11,000`, `an 18,000`): the article a number read aloud takes.
fn with_article(number: &str) -> String {
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    // "eight…", "eleven…", "eighteen…", "eighty…": the numbers said with a vowel first.
    let leading = number.split(',').next().unwrap_or(number);
    let vowel = digits.starts_with('8') || leading == "11" || leading == "18";
    format!("{} {number}", if vowel { "an" } else { "a" })
}

/// How much of a tool's answer, or of the result the transcript recorded, the report and the
/// event log keep.
const RECORDED_TEXT_BYTES: usize = 64 * 1024;

/// Cuts `text` to [`RECORDED_TEXT_BYTES`] (at a character's start), saying how long it was.
fn clip_for_the_record(text: &mut String) {
    if text.len() <= RECORDED_TEXT_BYTES {
        return;
    }
    let whole = text.len();
    let mut end = RECORDED_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("… [cut for the report: {whole} bytes in all]"));
}

#[cfg(test)]
mod clip_tests {
    use super::*;

    #[test]
    fn a_huge_answer_is_cut_for_the_record_at_a_character_and_says_its_length() {
        let mut small = "ok".to_owned();
        clip_for_the_record(&mut small);
        assert_eq!(small, "ok");
        // Two-byte characters across the cut: the text stays valid where it is cut.
        let mut huge = "é".repeat(RECORDED_TEXT_BYTES);
        clip_for_the_record(&mut huge);
        let (kept, said) = huge.split_once('…').unwrap();
        assert_eq!(kept.len(), RECORDED_TEXT_BYTES);
        assert_eq!(
            said,
            format!(" [cut for the report: {} bytes in all]", 2 * RECORDED_TEXT_BYTES)
        );
    }
}
