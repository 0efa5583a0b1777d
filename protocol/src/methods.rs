//! The methods, their params and their results.
//!
//! - Every method of the engine contract is a request of the same name, with the contract's
//!   arguments as named params plus `session`, the id `session/open` returned.
//! - Every reply to a session's method is an [`Answer`]: the method's `value` and the engine's six
//!   `counters` after the call, so a client mirroring them is always current.
//! - Messages are OpenAI-format chat messages; unknown keys survive the trip in their order.

use std::path::PathBuf;

use ctxhost_engine_abi::{Counters, Message, ModelInfo, SessionInfo, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ProtocolVersion;

/// The method names.
pub mod method {
    /// The handshake: [`InitializeParams`](super::InitializeParams) → [`Initialized`](super::Initialized).
    pub const INITIALIZE: &str = "initialize";
    /// Opens a session with its own engine: [`OpenParams`](super::OpenParams) → [`EngineInfo`](super::EngineInfo).
    pub const SESSION_OPEN: &str = "session/open";
    /// Closes a session, ending it with `on_session_end` when it was started.
    pub const SESSION_CLOSE: &str = "session/close";
    /// The contract's `update_model`.
    pub const UPDATE_MODEL: &str = "update_model";
    /// The contract's `on_session_start`.
    pub const ON_SESSION_START: &str = "on_session_start";
    /// The contract's `on_session_end`.
    pub const ON_SESSION_END: &str = "on_session_end";
    /// The contract's `on_session_reset`.
    pub const ON_SESSION_RESET: &str = "on_session_reset";
    /// The contract's `update_from_response`.
    pub const UPDATE_FROM_RESPONSE: &str = "update_from_response";
    /// The contract's `should_compress`.
    pub const SHOULD_COMPRESS: &str = "should_compress";
    /// The contract's `should_compress_preflight`.
    pub const SHOULD_COMPRESS_PREFLIGHT: &str = "should_compress_preflight";
    /// The contract's `has_content_to_compress`.
    pub const HAS_CONTENT_TO_COMPRESS: &str = "has_content_to_compress";
    /// The contract's `compress`, its result checked by the host.
    pub const COMPRESS: &str = "compress";
    /// The contract's `compress` for a client that checks the result itself (added in 1.2):
    /// [`CompressParams`](super::CompressParams) → [`Unchecked`](super::Unchecked), the engine's
    /// messages as it wrote them.
    ///
    /// - It exists for the host's process isolation, whose engine handle checks every result as
    ///   it does in process: the server neither reads the messages into values nor checks the
    ///   result, and keeps no compaction record of it (`compactions` does not list it).
    /// - An answer that is not JSON is still refused (`INVALID_OUTPUT`): it would break the line.
    /// - A session with observers gets `compress`'s checked answer (a superset of this one), so
    ///   that they are told what the context became.
    pub const COMPRESS_UNCHECKED: &str = "compress/unchecked";
    /// The contract's `get_tool_schemas`.
    pub const GET_TOOL_SCHEMAS: &str = "get_tool_schemas";
    /// The contract's `handle_tool_call`.
    pub const HANDLE_TOOL_CALL: &str = "handle_tool_call";
    /// The contract's `get_status`.
    pub const GET_STATUS: &str = "get_status";
    /// An engine's extension method (`call_ext`), added in 1.1: [`CallExtParams`](super::CallExtParams)
    /// → its JSON answer; a method the engine does not know is an error of kind `unknown_method`.
    pub const CALL_EXT: &str = "call_ext";
    /// The six counters alone (the cheapest call there is).
    pub const COUNTERS: &str = "counters";
    /// The host's record of every `compress` of the session.
    pub const COMPACTIONS: &str = "compactions";
    /// Replaces the session's engine (`/engine NAME`).
    pub const SWAP: &str = "swap";
    /// Ends every session (`on_session_end`) and stops the server after replying.
    pub const SHUTDOWN: &str = "shutdown";

    /// Every method of this version, as `capabilities` lists them.
    pub const ALL: [&str; 21] = [
        INITIALIZE,
        SESSION_OPEN,
        SESSION_CLOSE,
        UPDATE_MODEL,
        ON_SESSION_START,
        ON_SESSION_END,
        ON_SESSION_RESET,
        UPDATE_FROM_RESPONSE,
        SHOULD_COMPRESS,
        SHOULD_COMPRESS_PREFLIGHT,
        HAS_CONTENT_TO_COMPRESS,
        COMPRESS,
        COMPRESS_UNCHECKED,
        GET_TOOL_SCHEMAS,
        HANDLE_TOOL_CALL,
        GET_STATUS,
        CALL_EXT,
        COUNTERS,
        COMPACTIONS,
        SWAP,
        SHUTDOWN,
    ];
}

/// `initialize` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    /// The client's protocol version.
    pub protocol_version: ProtocolVersion,
    /// Who the client is, for the server's logs (`hermes-bridge`).
    pub client_name: String,
    /// The client's own version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
}

/// `initialize` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Initialized {
    /// The server's protocol version.
    pub protocol_version: ProtocolVersion,
    /// `ctxhost`.
    pub server_name: String,
    /// ctxhost's version.
    pub server_version: String,
    /// The engine interface (ABI) version the server's plugins are built against.
    pub abi_version: u32,
    /// The methods the server serves; a method not listed is unknown to it.
    pub capabilities: Vec<String>,
}

/// Where a session's config comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConfigSource {
    /// A `config.yaml` file (relative paths in it are relative to the file).
    Path(PathBuf),
    /// An object with the keys of `config.yaml`; relative paths in it are relative to the
    /// server's working directory.
    Inline(serde_json::Map<String, Value>),
}

/// `session/open` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenParams {
    /// The config; absent: the server's own (`--config`), else every default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigSource>,
    /// The engine, overriding the config's `context.engine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Observer engines, resolved like the engine (never replaced by the compressor): one that
    /// cannot be used refuses the session with `CONFIG_ERROR`. Absent: the config's
    /// `context.observers`; `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observers: Option<Vec<String>>,
    /// When given, `update_model` is called with it before the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// The engine's config block, replacing the one the config gives it (added in 1.1): a host
    /// running an engine in a child process hands it the block it would have created it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_config: Option<Value>,
    /// The names of the tools the agent has itself (added in 1.4): an observer offering a tool
    /// of one of these names (`terminal`) is not offered as that tool's owner, nor given the
    /// agent's calls of it, and the reply's `warnings` say so once. Absent or empty: the server
    /// knows of none. A server before 1.4 refuses the field (-32602): send it only to one whose
    /// `initialize` answered 1.4 or later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_tools: Vec<String>,
}

/// The engine a session runs (`session/open`, `swap`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// The session's id, for every later call.
    pub session: String,
    /// The engine that runs.
    pub engine: String,
    /// Where it came from: `built-in`, `plugin <library>`.
    pub origin: String,
    /// Set when the engine asked for could not be used and the built-in compressor runs instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// The engine's tool schemas (`get_tool_schemas`).
    pub tools: Vec<Value>,
    /// What the server warned about while opening the session (added in 1.3): keys of the config
    /// it does not know, an observer named twice…; each is in the server's log too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Why the engine asked for is not the one running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// The engine asked for.
    pub requested: String,
    /// Why it could not be used.
    pub reason: String,
}

/// Params of a method that needs nothing but its session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// The session.
    pub session: String,
}

/// `session/close` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseParams {
    /// The session.
    pub session: String,
    /// The final context for `on_session_end`; absent: the last context the server saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
}

/// `update_model` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateModelParams {
    /// The session.
    pub session: String,
    /// The model and its window.
    pub model: ModelInfo,
}

/// `on_session_start` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStartParams {
    /// The session.
    pub session: String,
    /// The agent's session id (an engine keeps its state under it).
    pub session_id: String,
    /// Model, window, platform, and on a compaction boundary why and which session it continues.
    #[serde(default)]
    pub info: SessionInfo,
}

/// `on_session_end` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEndParams {
    /// The session.
    pub session: String,
    /// The agent's session id.
    pub session_id: String,
    /// The final context.
    pub messages: Vec<Message>,
}

/// `update_from_response` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageParams {
    /// The session.
    pub session: String,
    /// The response's usage.
    pub usage: WireUsage,
}

/// A model response's usage, as the contract names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Their sum as the provider reported it; absent: the sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens inside the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(wire: WireUsage) -> Self {
        Usage {
            prompt_tokens: wire.prompt_tokens,
            completion_tokens: wire.completion_tokens,
            total_tokens: wire
                .total_tokens
                .unwrap_or(wire.prompt_tokens.saturating_add(wire.completion_tokens)),
            cache_read_tokens: wire.cache_read_tokens.into(),
            cache_write_tokens: wire.cache_write_tokens.into(),
            reasoning_tokens: wire.reasoning_tokens.into(),
        }
    }
}

impl From<Usage> for WireUsage {
    fn from(usage: Usage) -> Self {
        WireUsage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: Some(usage.total_tokens),
            cache_read_tokens: usage.cache_read_tokens.into(),
            cache_write_tokens: usage.cache_write_tokens.into(),
            reasoning_tokens: usage.reasoning_tokens.into(),
        }
    }
}

/// `should_compress` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShouldCompressParams {
    /// The session.
    pub session: String,
    /// The prompt size to judge; absent: the engine's `last_prompt_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
}

/// Params of `should_compress_preflight` and `has_content_to_compress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesParams {
    /// The session.
    pub session: String,
    /// The context.
    pub messages: Vec<Message>,
}

/// `compress` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressParams {
    /// The session.
    pub session: String,
    /// The whole context, as the agent would send it to the model.
    pub messages: Vec<Message>,
    /// Its size in tokens, when the agent knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_tokens: Option<u64>,
    /// From a manual `/compress <focus>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_topic: Option<String>,
    /// The index in `messages` of the user's last message, when the client knows it by
    /// provenance (it appended it); the server then checks the result keeps that one instead of
    /// telling it apart by content (added in 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_message: Option<usize>,
}

/// `compress` value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compressed {
    /// The new context, checked by the host (a valid sequence; the system message first; the
    /// user's last message kept).
    pub messages: Vec<Message>,
    /// What the host saw of the compaction.
    pub record: CompactionRecord,
}

/// `compress/unchecked` value: the engine's messages as it wrote them (JSON, on one line).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unchecked {
    /// What the engine returned, unread and unchecked.
    pub messages: Box<serde_json::value::RawValue>,
}

/// `compress` (or `compress/unchecked`) params as JSON text in three pieces, the context's JSON
/// array between the two returned here: `{"session":…,"messages":`, the messages, `}`. A client
/// that keeps its context's JSON sends it as it is ([`crate::Client::call_json`]) rather than
/// writing every message again. The messages must be compact JSON (no line break), as
/// `serde_json` writes them.
pub fn compress_params_around(
    session: &str,
    current_tokens: Option<u64>,
    focus_topic: Option<&str>,
    user_message: Option<usize>,
) -> (String, &'static str) {
    /// Every field but the messages, which go last.
    #[derive(Serialize)]
    struct Head<'a> {
        session: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        current_tokens: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        focus_topic: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        user_message: Option<usize>,
    }
    let mut head = serde_json::to_string(&Head {
        session,
        current_tokens,
        focus_topic,
        user_message,
    })
    .expect("strings and numbers serialise");
    // `{...}` becomes `{...,"messages":`.
    head.pop();
    head.push_str(",\"messages\":");
    (head, "}")
}

/// The host's record of one `compress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The engine that ran it.
    pub engine: String,
    /// Its focus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_topic: Option<String>,
    /// Messages handed in.
    pub messages_before: usize,
    /// Messages of the context after it (handed in, when it failed).
    pub messages_after: usize,
    /// Tokens handed in, as the host counts them (`context.tokenizer`).
    pub tokens_before: u64,
    /// Tokens of the context after it.
    pub tokens_after: u64,
    /// Time spent in the engine and the host's check.
    pub duration_ms: f64,
    /// What came of it.
    pub outcome: CompactionOutcome,
    /// The engine's own account (its `last_compaction` extension), when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// What came of a `compress`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// The engine returned a new context.
    Applied,
    /// The engine returned the context as it was.
    Unchanged,
    /// It failed (the reply was an error): the context is the one handed in.
    Failed {
        /// The error's message.
        reason: String,
    },
}

/// `handle_tool_call` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallParams {
    /// The session.
    pub session: String,
    /// The tool (one of `get_tool_schemas`).
    pub name: String,
    /// Its arguments: an object.
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
    /// The current context, for tools that read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
}

/// `call_ext` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallExtParams {
    /// The session.
    pub session: String,
    /// The extension method's name (`last_compaction`, `observe`…).
    pub method: String,
    /// Its request.
    #[serde(default)]
    pub request: Value,
}

/// `swap` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapParams {
    /// The session.
    pub session: String,
    /// The engine to run from now on.
    pub engine: String,
}

/// `shutdown` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShutdownReport {
    /// Sessions ended with `on_session_end`.
    pub sessions_ended: usize,
    /// Engines that failed to end their session, one line each (the server stops anyway).
    pub problems: Vec<String>,
}

/// The reply to a session's method: what the method returned and the counters after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer<T> {
    /// What the contract method returns (`null` for those returning nothing).
    pub value: T,
    /// The engine's counters after the call.
    pub counters: Counters,
}
