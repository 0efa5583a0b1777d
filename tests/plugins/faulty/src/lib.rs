//! Test plugin `faulty`: an engine that misbehaves on request, so the host's integration tests
//! can check that it survives every failure a plugin can cause.
//!
//! Its behaviour is chosen by its config block (JSON):
//!
//! - `{"panic_in": "<method>"}`: panics in that method (`new`, `compress`, `update_from_response`,
//!   `should_compress`, `should_compress_preflight`, `has_content_to_compress`, `on_session_start`,
//!   `on_session_end`, `on_session_reset`, `update_model`, `get_tool_schemas`,
//!   `handle_tool_call`, `get_status`, `counters`, `call_ext`, `observe_idle`). The SDK turns the panic into an
//!   error; the process must live on.
//! - `{"crash_in": "<method>", "crash": "abort" | "segfault" | "exit" | "hang" | "allocate" |
//!   "panic_abort"}`: in that method (any of `panic_in`'s, or `observe`), ends its process the way
//!   a broken native plugin does: `std::process::abort()`, a write through a null pointer,
//!   `std::process::exit(3)`, an endless busy loop, allocating (and touching) memory without
//!   bound, or a panic in a plugin built with `panic = "abort"` (a panic hook that aborts, which is
//!   what that profile does after printing the message). No host survives these in process; a
//!   host running the engine in a child process must.
//! - `{"fail_factory": "<message>"}`: `new` returns a configuration error with that message.
//! - `{"invalid_output": "orphan_result" | "unanswered_call" | "drop_system" | "drop_last_user" |
//!   "empty"}`: `compress` returns such an invalid result, which the host must refuse.
//! - `{"user_note": true}`: `compress` is correct and also writes a user-role note right after the
//!   user's last message, saying how many messages it dropped (a new text each time), and drops
//!   its earlier notes. The host must not take that note for the user's message.
//! - `{"pad_words": N}`: `compress` is correct and also puts an assistant note of N words after
//!   the system message: with N large, a valid result larger than its input.
//! - `{"bad_tools": true}`: `get_tool_schemas` also offers `faulty_echo` a second time, a schema
//!   with an empty name and one with none, which every host path must leave out with a warning.
//! - `{"echo_tool": "<name>"}`: the echo tool is offered under that name (another engine's tool
//!   name, to test which of two offers of one name the agent gets).
//! - `{"chatty": true}`: it prints a line on stdout when created, in `compress` and in `observe`,
//!   as a plugin left with a debugging `println!` does.
//! - `{"observe": "count" | "sleep" | "jitter" | "fail" | "panic" | "hang"}`: as an observer, it
//!   asks for every kind of fact and, on each, only counts it, sleeps 2 ms, sleeps 0–3 ms, or (at
//!   the `observe_fail_at`-th fact, default 5) returns an error, panics, or never returns.
//! - `{"fail_session_start_from": N}`: `on_session_start` returns an error in the N-th engine
//!   this process creates and every later one (a second instance of the same plugin that fails
//!   to start where the first did not).
//! - otherwise `compress` is correct and simple: it keeps the system message and the last four
//!   messages, moving the cut back so that no tool group is split.
//!
//! Its status carries [`GENERATION`], which a test rewrites in a copy of the library to stand for
//! a plugin rebuilt on disk.
//!
//! It logs `faulty engine created` (info) in `new` and a warning in `compress`, to test log
//! forwarding, and offers two tools: `faulty_echo`, which answers its arguments, and
//! `faulty_host_services`, which asks the host for a summary and token counts of the messages.
//!
//! Not for anything but tests; it is not staged as a plugin (the tests write plugin folders in
//! temporary directories).

use ctxhost_engine_abi::{
    CompressRequest, Counters, Engine, EngineError, Fact, FactKind, Host, Message, ModelInfo, Role,
    SessionInfo, ToolCall, Usage,
};
use ctxhost_engine_kit::sequence::align_start_to_group;
use serde_json::{json, Value};

ctxhost_engine_abi::export_engine!(Faulty);

/// Every method `panic_in` can name.
pub const METHODS: [&str; 16] = [
    "new",
    "compress",
    "update_from_response",
    "should_compress",
    "should_compress_preflight",
    "has_content_to_compress",
    "on_session_start",
    "on_session_end",
    "on_session_reset",
    "update_model",
    "get_tool_schemas",
    "handle_tool_call",
    "get_status",
    "counters",
    "call_ext",
    "observe_idle",
];

/// This build's generation, in its status. A test rewrites these bytes in a copy of the library
/// (same length) to make a "rebuilt" plugin whose new behaviour must be what runs.
pub const GENERATION: &str = "faulty-generation-A";

/// The ways `crash` can end the process.
pub const CRASHES: [&str; 6] = ["abort", "segfault", "exit", "hang", "allocate", "panic_abort"];

/// What `observe` can ask for.
pub const OBSERVE_MODES: [&str; 6] = ["count", "sleep", "jitter", "fail", "panic", "hang"];

/// The kinds of invalid output `invalid_output` can ask for.
pub const INVALID_OUTPUTS: [&str; 5] = [
    "orphan_result",
    "unanswered_call",
    "drop_system",
    "drop_last_user",
    "empty",
];

/// How many messages after the system message a correct `compress` keeps (at least).
const KEEP_LAST: usize = 4;

/// How the notes of `user_note` start, so that the engine knows its own.
const NOTE_MARK: &str = "[faulty note]";

fn is_note(message: &Message) -> bool {
    message.role == Role::User && message.text().starts_with(NOTE_MARK)
}

/// The misbehaving engine.
pub struct Faulty {
    counters: Counters,
    host: Host,
    panic_in: Option<String>,
    crash: Option<(String, String)>,
    invalid_output: Option<String>,
    user_note: bool,
    pad_words: usize,
    bad_tools: bool,
    chatty: bool,
    echo_tool: String,
    observe: Option<String>,
    observe_fail_at: u64,
    observed: u64,
    /// Which engine of this process it is (1 for the first).
    instance: u64,
    fail_session_start_from: Option<u64>,
}

/// Engines created in this process so far.
static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Faulty {
    /// With `chatty: true`, prints on the process's stdout, as a plugin left with a debugging
    /// `println!` does: the host must keep it out of what it prints there itself.
    fn chat(&self, what: &str) {
        if self.chatty {
            println!("faulty says: {what}");
        }
    }

    /// Uses the host's services the way a real plugin would: a summary and token counts.
    fn ask_host(&self, messages: &[Message]) -> Value {
        let texts: Vec<String> = messages.iter().map(|m| m.text().into_owned()).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let request = ctxhost_engine_abi::SummarizeRequest {
            messages,
            previous_summary: None,
            focus_topic: None,
            target_tokens: 2_000,
            input_tokens: u64::MAX,
        };
        match (self.host.count_tokens(&texts), self.host.summarize(&request)) {
            (Ok(tokens), Ok(summary)) => json!({
                "tokens": tokens,
                "summary": summary.summary,
                "summarizer": summary.summarizer,
            }),
            (tokens, summary) => json!({
                "error": format!("count_tokens: {:?}; summarize: {:?}", tokens.err(), summary.err()),
            }),
        }
    }

    fn panic_if_told(&self, method: &str) {
        if self.panic_in.as_deref() == Some(method) {
            panic!("faulty engine: told to panic in `{method}`");
        }
        if let Some((_, how)) = self.crash.as_ref().filter(|(at, _)| at == method) {
            crash(how, method);
        }
    }

    /// The correct result: the system message, then the last messages without splitting a group.
    fn keep_system_and_tail(messages: Vec<Message>) -> Vec<Message> {
        let has_system = messages.first().is_some_and(|m| m.role == Role::System);
        let first_rest = usize::from(has_system);
        // The tail reaches back to the last user message at least, as the contract requires.
        let last_user = messages
            .iter()
            .rposition(|m| m.role == Role::User && !is_note(m))
            .unwrap_or(messages.len());
        let tail_start = messages.len().saturating_sub(KEEP_LAST).min(last_user);
        let cut = align_start_to_group(&messages, tail_start).max(first_rest);
        let mut kept = Vec::with_capacity(messages.len() - cut + first_rest);
        let mut messages = messages.into_iter();
        if has_system {
            kept.extend(messages.next());
        }
        kept.extend(messages.skip(cut - first_rest));
        kept
    }

    fn spoil(kind: &str, mut messages: Vec<Message>) -> Vec<Message> {
        let after_system = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
        match kind {
            "orphan_result" => messages.insert(
                after_system,
                Message::tool("faulty_orphan", "the result of a call nobody made"),
            ),
            "unanswered_call" => messages.push(Message::assistant_calls(vec![ToolCall::new(
                "faulty_unanswered",
                "faulty_echo",
                "{}",
            )])),
            "drop_system" => messages.retain(|m| m.role != Role::System),
            "drop_last_user" => {
                if let Some(last_user) = messages.iter().rposition(|m| m.role == Role::User) {
                    messages.remove(last_user);
                }
            }
            _ => messages.clear(),
        }
        messages
    }
}

/// Ends this process as `how` says; never returns.
fn crash(how: &str, method: &str) -> ! {
    match how {
        "abort" => std::process::abort(),
        "segfault" => {
            // SAFETY: none; this is the fault a broken plugin makes, which the test wants.
            unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
            unreachable!("a write through a null pointer ends the process")
        }
        "exit" => std::process::exit(3),
        "hang" => loop {
            std::hint::spin_loop();
        },
        "allocate" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                // Filled, not only reserved, so that the pages are really taken.
                hoard.push(vec![1; 64 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        _ => {
            // What `panic = "abort"` does: the message, then abort, with no unwinding to catch.
            std::panic::set_hook(Box::new(|info| {
                eprintln!("{info}");
                std::process::abort();
            }));
            panic!("faulty engine: told to panic (built with panic = \"abort\") in `{method}`");
        }
    }
}

/// The string under `key`, which must be one of `allowed` when given.
fn read_choice(config: &Value, key: &str, allowed: &[&str]) -> Result<Option<String>, EngineError> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(choice)) if allowed.contains(&choice.as_str()) => Ok(Some(choice.clone())),
        Some(other) => Err(EngineError::config(format!(
            "faulty.{key}: expected one of {}, got {other}",
            allowed.join(", ")
        ))),
    }
}

impl Engine for Faulty {
    const NAME: &'static str = "faulty";

    fn new(config: &Value, host: Host) -> Result<Self, EngineError> {
        if !(config.is_null() || config.is_object()) {
            return Err(EngineError::config(format!(
                "faulty: expected a mapping, got {config}"
            )));
        }
        if let Some(message) = config.get("fail_factory") {
            let message = message
                .as_str()
                .map_or_else(|| message.to_string(), str::to_owned);
            return Err(EngineError::config(message));
        }
        let crash = match (
            read_choice(config, "crash_in", &[&METHODS[..], &["observe"]].concat())?,
            read_choice(config, "crash", &CRASHES)?,
        ) {
            (Some(method), Some(how)) => Some((method, how)),
            (None, None) => None,
            _ => return Err(EngineError::config("faulty: `crash_in` and `crash` go together")),
        };
        let engine = Self {
            counters: Counters::default(),
            host,
            panic_in: read_choice(config, "panic_in", &METHODS)?,
            crash,
            invalid_output: read_choice(config, "invalid_output", &INVALID_OUTPUTS)?,
            user_note: config.get("user_note").and_then(Value::as_bool).unwrap_or(false),
            pad_words: config.get("pad_words").and_then(Value::as_u64).unwrap_or(0) as usize,
            bad_tools: config.get("bad_tools").and_then(Value::as_bool).unwrap_or(false),
            chatty: config.get("chatty").and_then(Value::as_bool).unwrap_or(false),
            echo_tool: config
                .get("echo_tool")
                .and_then(Value::as_str)
                .unwrap_or("faulty_echo")
                .to_owned(),
            observe: read_choice(config, "observe", &OBSERVE_MODES)?,
            observe_fail_at: config.get("observe_fail_at").and_then(Value::as_u64).unwrap_or(5),
            observed: 0,
            instance: CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
            fail_session_start_from: config.get("fail_session_start_from").and_then(Value::as_u64),
        };
        engine.panic_if_told("new");
        engine.chat("created");
        tracing::info!("faulty engine created");
        Ok(engine)
    }

    fn counters(&self) -> &Counters {
        self.panic_if_told("counters");
        &self.counters
    }

    fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn compress(
        &mut self,
        messages: Vec<Message>,
        _request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        tracing::warn!("faulty engine compressing {} messages", messages.len());
        self.panic_if_told("compress");
        self.chat("compress");
        let before = messages.len();
        let mut kept = Self::keep_system_and_tail(messages);
        if self.user_note {
            kept.retain(|m| !is_note(m));
            let dropped = before - kept.len();
            if let Some(user) = kept.iter().rposition(|m| m.role == Role::User) {
                let count = self.counters.compression_count + 1;
                let note = format!("{NOTE_MARK} compaction {count} dropped {dropped} earlier messages");
                kept.insert(user + 1, Message::user(note));
            }
        }
        if self.pad_words > 0 {
            let after_system = usize::from(kept.first().is_some_and(|m| m.role == Role::System));
            kept.insert(
                after_system,
                Message::assistant("padding ".repeat(self.pad_words)),
            );
        }
        self.counters.compression_count += 1;
        Ok(match &self.invalid_output {
            Some(kind) => Self::spoil(kind, kept),
            None => kept,
        })
    }

    fn update_from_response(&mut self, usage: &Usage) {
        self.panic_if_told("update_from_response");
        self.counters.last_prompt_tokens = usage.prompt_tokens;
        self.counters.last_completion_tokens = usage.completion_tokens;
        self.counters.last_total_tokens = usage.total_tokens;
    }

    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> bool {
        self.panic_if_told("should_compress");
        let tokens = prompt_tokens.unwrap_or(self.counters.last_prompt_tokens);
        self.counters.threshold_tokens > 0 && tokens >= self.counters.threshold_tokens
    }

    fn should_compress_preflight(&mut self, _messages: &[Message]) -> bool {
        self.panic_if_told("should_compress_preflight");
        false
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> bool {
        self.panic_if_told("has_content_to_compress");
        messages.len() > KEEP_LAST + 1
    }

    fn on_session_start(&mut self, _session_id: &str, _info: &SessionInfo) -> Result<(), EngineError> {
        self.panic_if_told("on_session_start");
        match self.fail_session_start_from {
            Some(from) if self.instance >= from => Err(EngineError::other(format!(
                "faulty: instance {} refuses to start a session",
                self.instance
            ))),
            _ => Ok(()),
        }
    }

    fn on_session_end(&mut self, _session_id: &str, _messages: &[Message]) -> Result<(), EngineError> {
        self.panic_if_told("on_session_end");
        Ok(())
    }

    fn on_session_reset(&mut self) {
        self.panic_if_told("on_session_reset");
        self.counters = Counters {
            threshold_tokens: self.counters.threshold_tokens,
            context_length: self.counters.context_length,
            ..Counters::default()
        };
    }

    fn update_model(&mut self, model: &ModelInfo) {
        self.panic_if_told("update_model");
        self.counters.context_length = model.context_length;
        self.counters.threshold_tokens = (model.window() as f64 * self.threshold_percent()).floor() as u64;
    }

    fn get_tool_schemas(&self) -> Vec<Value> {
        self.panic_if_told("get_tool_schemas");
        let bad = [
            json!({"name": "faulty_echo", "description": "The same name again."}),
            json!({"name": "", "description": "An empty name."}),
            json!({"description": "No name at all."}),
        ];
        let good = [
            json!({
                "name": self.echo_tool,
                "description": "Answers its arguments unchanged.",
                "parameters": { "type": "object", "additionalProperties": true },
            }),
            json!({
                "name": "faulty_host_services",
                "description": "Asks the host to summarise the messages and count their tokens.",
                "parameters": { "type": "object", "properties": {} },
            }),
        ];
        let bad = if self.bad_tools { &bad[..] } else { &[] };
        good.into_iter().chain(bad.iter().cloned()).collect()
    }

    fn handle_tool_call(&mut self, name: &str, arguments: &Value, messages: Option<&[Message]>) -> Value {
        self.panic_if_told("handle_tool_call");
        match name {
            _ if name == self.echo_tool => arguments.clone(),
            "faulty_host_services" => self.ask_host(messages.unwrap_or_default()),
            _ => json!({ "error": format!("Unknown context engine tool: {name}") }),
        }
    }

    fn get_status(&self) -> Value {
        self.panic_if_told("get_status");
        let mut status = ctxhost_engine_abi::default_status(&self.counters);
        status["generation"] = GENERATION.into();
        status["facts_observed"] = self.observed.into();
        status
    }

    fn interests(&self) -> Vec<FactKind> {
        let crashes_observing = self.crash.as_ref().is_some_and(|(method, _)| method == "observe");
        if self.observe.is_some() || crashes_observing {
            FactKind::ALL.to_vec()
        } else {
            Vec::new()
        }
    }

    fn observe(&mut self, _fact: &Fact) -> Result<(), EngineError> {
        self.panic_if_told("observe");
        self.chat("observe");
        self.observed += 1;
        let failing = self.observed == self.observe_fail_at;
        match self.observe.as_deref() {
            Some("sleep") => std::thread::sleep(std::time::Duration::from_millis(2)),
            Some("jitter") => {
                // Deterministic per fact, uneven across facts: enough to shuffle thread timing.
                let micros = (self.observed.wrapping_mul(2_654_435_761) >> 7) % 3_000;
                std::thread::sleep(std::time::Duration::from_micros(micros));
            }
            Some("fail") if failing => {
                return Err(EngineError::other("faulty engine: told to fail in `observe`"))
            }
            Some("panic") if failing => panic!("faulty engine: told to panic in `observe`"),
            Some("hang") if failing => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            _ => {}
        }
        Ok(())
    }

    fn observe_idle(&mut self) -> Result<(), EngineError> {
        self.panic_if_told("observe_idle");
        Ok(())
    }

    fn call_ext(&mut self, method: &str, _request: &Value) -> Result<Value, EngineError> {
        self.panic_if_told("call_ext");
        Err(EngineError::unknown_method(method))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ErrorKind;
    use ctxhost_engine_kit::sequence::{find_sequence_problems, is_valid_sequence};

    fn faulty(config: Value) -> Faulty {
        Faulty::new(&config, Host::detached()).expect("valid config")
    }

    /// A conversation whose last four messages start inside a group of two parallel results.
    fn conversation() -> Vec<Message> {
        vec![
            Message::system("sys"),
            Message::user("one"),
            Message::assistant("two"),
            Message::user("three"),
            Message::assistant_calls(vec![
                ToolCall::new("a", "ls", "{}"),
                ToolCall::new("b", "ls", "{}"),
            ]),
            Message::tool("a", "x"),
            Message::tool("b", "y"),
            Message::assistant("done"),
            Message::user("thanks"),
        ]
    }

    #[test]
    fn a_plain_faulty_engine_compresses_correctly_without_splitting_groups() {
        let messages = conversation();
        assert!(is_valid_sequence(&messages));
        let kept = faulty(Value::Null)
            .compress(messages.clone(), &CompressRequest::default())
            .unwrap();
        assert_eq!(kept[0].role, Role::System);
        // The last four messages start with the first tool result: the cut moves back to the call.
        assert_eq!(kept[1..], messages[4..]);
        assert!(is_valid_sequence(&kept));
    }

    #[test]
    fn each_invalid_output_is_invalid() {
        for kind in INVALID_OUTPUTS {
            let mut engine = faulty(json!({ "invalid_output": kind }));
            let out = engine
                .compress(conversation(), &CompressRequest::default())
                .unwrap();
            let broken = match kind {
                "orphan_result" | "unanswered_call" => !find_sequence_problems(&out).is_empty(),
                "drop_system" => out.iter().all(|m| m.role != Role::System),
                "drop_last_user" => out.iter().all(|m| m.text() != "thanks"),
                _ => out.is_empty(),
            };
            assert!(broken, "{kind}: {out:?}");
        }
    }

    #[test]
    fn the_factory_fails_or_refuses_bad_choices_on_request() {
        let error = Faulty::new(&json!({ "fail_factory": "no key" }), Host::detached())
            .err()
            .unwrap();
        assert_eq!(
            (error.kind, error.message.as_str()),
            (ErrorKind::CONFIG, "no key")
        );
        let error = Faulty::new(&json!({ "panic_in": "nowhere" }), Host::detached())
            .err()
            .unwrap();
        assert!(error.message.contains("faulty.panic_in"), "{error}");
    }

    #[test]
    fn the_echo_tool_answers_its_arguments() {
        let mut engine = faulty(Value::Null);
        assert_eq!(engine.get_tool_schemas()[0]["name"], "faulty_echo");
        let arguments = json!({ "a": [1, 2] });
        assert_eq!(
            engine.handle_tool_call("faulty_echo", &arguments, None),
            arguments
        );
    }
}
