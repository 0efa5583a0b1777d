//! The types that cross the library boundary.
//!
//! Everything here is `#[repr(C)]` and derives [`StableAbi`], so abi_stable can check when a
//! library is opened that host and plugin agree on every layout. Engine authors normally never
//! touch this module: implement [`crate::Engine`] and export it with [`crate::export_engine!`].
//!
//! Growth rules (see `README.md`, "Writing an engine"): nothing reachable from [`EngineModule`] gains
//! a field or a method. New host services are new *names* passed to [`HostServices::call`]; new
//! engine capabilities are new names passed to [`EngineObject::call_ext`]. Both sides answer an
//! unknown name with [`ErrorKind::UNKNOWN_METHOD`], so an old plugin runs in a new host and the
//! reverse.

use std::fmt;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RArc, RBox, ROption, RResult, RStr, RString},
    StableAbi,
};

/// The version of this interface, written as `abi_version` in every `plugin.yaml` and reported by
/// every library's [`EngineModule::abi_version`].
///
/// Added in interface version 1. It changes only when a type in this module changes shape; a host
/// refuses a plugin whose version it does not support (see the host's `is_supported_abi`).
pub const ABI_VERSION: u32 = 1;

/// What kind of failure an [`EngineError`] reports.
///
/// A transparent integer rather than an enum so that later versions can add kinds without breaking
/// built plugins: an older host shows an unknown kind as its number.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorKind(pub u32);

impl ErrorKind {
    /// Anything not covered below.
    pub const OTHER: Self = Self(0);
    /// The engine panicked; the SDK caught it at the boundary.
    pub const PANIC: Self = Self(1);
    /// The input (messages, arguments, JSON) was not what the contract promises.
    pub const INVALID_INPUT: Self = Self(2);
    /// The engine's configuration block is wrong.
    pub const CONFIG: Self = Self(3);
    /// A service the engine depends on (the summarizer model, a database) cannot be reached; the
    /// host keeps the context as it was.
    pub const UNAVAILABLE: Self = Self(4);
    /// The other side does not know the named method or service.
    pub const UNKNOWN_METHOD: Self = Self(5);

    fn label(self) -> &'static str {
        match self {
            Self::OTHER => "error",
            Self::PANIC => "panic",
            Self::INVALID_INPUT => "invalid input",
            Self::CONFIG => "configuration error",
            Self::UNAVAILABLE => "unavailable",
            Self::UNKNOWN_METHOD => "unknown method",
            _ => "error",
        }
    }
}

impl fmt::Debug for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.label(), self.0)
    }
}

/// The one error type that crosses the boundary: a kind and a human-readable message.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// What went wrong, coarsely; lets the host decide what to do.
    pub kind: ErrorKind,
    /// What went wrong, for people. Never empty.
    pub message: RString,
}

impl EngineError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = if message.is_empty() {
            kind.label().to_owned()
        } else {
            message
        };
        Self {
            kind,
            message: message.into(),
        }
    }

    /// An [`ErrorKind::OTHER`] error.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OTHER, message)
    }

    /// An [`ErrorKind::INVALID_INPUT`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::INVALID_INPUT, message)
    }

    /// An [`ErrorKind::CONFIG`] error.
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::CONFIG, message)
    }

    /// An [`ErrorKind::UNAVAILABLE`] error.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::UNAVAILABLE, message)
    }

    /// The answer to a method or service name the callee does not know.
    pub fn unknown_method(name: &str) -> Self {
        Self::new(ErrorKind::UNKNOWN_METHOD, format!("unknown method `{name}`"))
    }
}

impl fmt::Display for EngineError {
    /// The message, after its kind when that says more than "error" (`panic: …`,
    /// `configuration error: …`): it is read inside the host's own `warning:` or `error:` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind.label() {
            "error" => f.write_str(&self.message),
            label => write!(f, "{label}: {}", self.message),
        }
    }
}

impl fmt::Debug for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EngineError({:?}, {:?})", self.kind, self.message.as_str())
    }
}

impl std::error::Error for EngineError {}

/// Token usage of one model response, as handed to `update_from_response`.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt the model received.
    pub prompt_tokens: u64,
    /// Tokens the model wrote.
    pub completion_tokens: u64,
    /// Their sum, as the provider reported it.
    pub total_tokens: u64,
    /// Prompt tokens served from the provider's cache, when known.
    pub cache_read_tokens: ROption<u64>,
    /// Prompt tokens written to the provider's cache, when known.
    pub cache_write_tokens: ROption<u64>,
    /// Reasoning tokens inside `completion_tokens`, when known.
    pub reasoning_tokens: ROption<u64>,
}

impl Usage {
    /// Usage with the three counts every provider reports.
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            ..Self::default()
        }
    }
}

/// The counters the host reads after every turn, for display and logging.
///
/// Frozen with interface version 1: they are the contract's counters, and the host reads them
/// every turn, so they cross as one small struct rather than JSON.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Prompt tokens of the last model response.
    pub last_prompt_tokens: u64,
    /// Completion tokens of the last model response.
    pub last_completion_tokens: u64,
    /// Total tokens of the last model response.
    pub last_total_tokens: u64,
    /// The prompt size at which compaction fires (equality fires).
    pub threshold_tokens: u64,
    /// The model's context window.
    pub context_length: u64,
    /// How many times `compress` has run.
    pub compression_count: u64,
}

/// Severity of a log line an engine sends to the host.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogLevel(pub u8);

impl LogLevel {
    /// Very verbose detail.
    pub const TRACE: Self = Self(0);
    /// Detail for debugging.
    pub const DEBUG: Self = Self(1);
    /// Normal operation.
    pub const INFO: Self = Self(2);
    /// Something the user should know about.
    pub const WARN: Self = Self(3);
    /// Something failed.
    pub const ERROR: Self = Self(4);
}

/// What the host offers an engine. Handed to the factory; the SDK wraps it as [`crate::Host`].
///
/// Interface version 1. No method will be added: a new service is a new name for [`call`].
///
/// [`call`]: HostServices::call
#[sabi_trait]
pub trait HostServices: Clone + Send + Sync {
    /// Writes one log line into the host's log stream, labelled with the engine.
    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>);

    /// Calls the host service `service` with a JSON request and returns its JSON answer.
    ///
    /// Every host answers `"services"` with a JSON array of the names it supports, and an unknown
    /// name with [`ErrorKind::UNKNOWN_METHOD`].
    #[sabi(last_prefix_field)]
    fn call(&self, service: RStr<'_>, request: RStr<'_>) -> RResult<RString, EngineError>;
}

/// The host's services as a boxed trait object, the form handed to a factory.
pub type HostBox = HostServices_TO<'static, RArc<()>>;

/// An engine as the host sees it across the boundary.
///
/// Messages, tool schemas, arguments and status cross as JSON text (`RStr` in, `RString` out); the
/// values the host reads every turn cross as plain integers and structs. The SDK implements this
/// for every [`crate::Engine`], catching panics in every method.
///
/// Interface version 1. No method will be added: a new capability is a new name for
/// [`call_ext`](EngineObject::call_ext).
#[sabi_trait]
pub trait EngineObject: Send {
    /// The contract's counters.
    fn counters(&self) -> RResult<Counters, EngineError>;

    /// After every model response.
    fn update_from_response(&mut self, usage: Usage) -> RResult<(), EngineError>;

    /// Whether compaction should fire; `None` means "use `last_prompt_tokens`".
    fn should_compress(&mut self, prompt_tokens: ROption<u64>) -> RResult<bool, EngineError>;

    /// A cheap check before a model call, on the messages as a JSON array.
    fn should_compress_preflight(&mut self, messages: RStr<'_>) -> RResult<bool, EngineError>;

    /// Whether anything outside the protected parts could be compacted.
    fn has_content_to_compress(&mut self, messages: RStr<'_>) -> RResult<bool, EngineError>;

    /// Compacts the messages (a JSON array) and returns the new JSON array.
    fn compress(
        &mut self,
        messages: RStr<'_>,
        current_tokens: ROption<u64>,
        focus_topic: ROption<RStr<'_>>,
    ) -> RResult<RString, EngineError>;

    /// At the start of a session; `info` is a JSON object.
    fn on_session_start(&mut self, session_id: RStr<'_>, info: RStr<'_>) -> RResult<(), EngineError>;

    /// At a real session boundary, with the final messages as a JSON array.
    fn on_session_end(&mut self, session_id: RStr<'_>, messages: RStr<'_>) -> RResult<(), EngineError>;

    /// On `/new` or `/reset`.
    fn on_session_reset(&mut self) -> RResult<(), EngineError>;

    /// When the model or its window is known or changes; `model` is a JSON object.
    fn update_model(&mut self, model: RStr<'_>) -> RResult<(), EngineError>;

    /// The tools the engine offers the agent, as a JSON array of schemas.
    fn get_tool_schemas(&self) -> RResult<RString, EngineError>;

    /// Runs one of the engine's tools; always answers JSON.
    fn handle_tool_call(
        &mut self,
        name: RStr<'_>,
        arguments: RStr<'_>,
        messages: ROption<RStr<'_>>,
    ) -> RResult<RString, EngineError>;

    /// A JSON object describing the engine's state.
    fn get_status(&self) -> RResult<RString, EngineError>;

    /// The extension point: calls the engine capability `method` with a JSON request.
    ///
    /// Every engine built with the SDK answers `"methods"` with the names it supports, and an
    /// unknown name with [`ErrorKind::UNKNOWN_METHOD`].
    #[sabi(last_prefix_field)]
    fn call_ext(&mut self, method: RStr<'_>, request: RStr<'_>) -> RResult<RString, EngineError>;
}

/// An engine as a boxed trait object, the form a factory returns.
pub type EngineBox = EngineObject_TO<'static, RBox<()>>;

/// The root module every engine library exports (through [`crate::export_engine!`]).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = EngineModuleRef)))]
#[sabi(missing_field(panic))]
pub struct EngineModule {
    /// The interface version the library was built against ([`ABI_VERSION`]).
    pub abi_version: extern "C" fn() -> u32,

    /// The engine's name, as users write it in `context.engine`.
    pub engine_name: extern "C" fn() -> RStr<'static>,

    /// Creates an engine from its config block (a JSON object) and the host's services.
    #[sabi(last_prefix_field)]
    pub new_engine: extern "C" fn(config: RStr<'_>, host: HostBox) -> RResult<EngineBox, EngineError>,
}

impl RootModule for EngineModuleRef {
    declare_root_module_statics! {EngineModuleRef}

    const BASE_NAME: &'static str = "ctxhost_engine";
    const NAME: &'static str = "ctxhost context engine";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}
