//! The interface between `ctxhost` and context engines, and the SDK for writing one.
//!
//! A *context engine* decides when an agent's conversation is compacted and how. This crate is
//! the contract both sides compile against:
//!
//! - [`Engine`]: the safe trait an engine author implements. Only the name, the constructor, the
//!   counters and `compress` are required; every other method has the contract's default.
//! - [`export_engine!`]: the one line that turns an engine into a plugin library.
//! - [`ffi`]: the stable-ABI types that cross the library boundary (checked by abi_stable when a
//!   library is opened). Plugin authors do not need them.
//! - [`Message`]: an OpenAI-format chat message that keeps unknown keys.
//!
//! It holds no loading, no configuration and no I/O: those are the host's.
//!
//! # Example
//!
//! A complete engine that keeps the system message and the last 20 messages (a real engine must
//! also keep tool calls and their results together; see `ctxhost-masking` for one that does):
//!
//! ```
//! use ctxhost_engine_abi::{CompressRequest, Counters, Engine, EngineError, Host, Message, Role};
//! use serde_json::Value;
//!
//! pub struct LastTwenty {
//!     counters: Counters,
//! }
//!
//! impl Engine for LastTwenty {
//!     const NAME: &'static str = "last-twenty";
//!
//!     fn new(_config: &Value, _host: Host) -> Result<Self, EngineError> {
//!         Ok(Self { counters: Counters::default() })
//!     }
//!     fn counters(&self) -> &Counters { &self.counters }
//!     fn counters_mut(&mut self) -> &mut Counters { &mut self.counters }
//!
//!     fn compress(&mut self, messages: Vec<Message>, _: &CompressRequest) -> Result<Vec<Message>, EngineError> {
//!         let (system, rest): (Vec<_>, Vec<_>) = messages.into_iter().partition(|m| m.role == Role::System);
//!         let keep = rest.len().saturating_sub(20);
//!         self.counters.compression_count += 1;
//!         Ok(system.into_iter().chain(rest.into_iter().skip(keep)).collect())
//!     }
//! }
//!
//! // In the plugin's cdylib crate:
//! // ctxhost_engine_abi::export_engine!(LastTwenty);
//! ```
#![deny(missing_docs)]

mod config;
// The sabi_trait macro emits impls of its generated items outside their module.
#[allow(non_local_definitions)]
pub mod ffi;
mod guard;
pub mod linked;
mod logging;
mod message;
pub mod observe;
mod sdk;

#[doc(hidden)]
pub mod export;

pub use config::{closest_key, misspelt_keys, read_config};
pub use ffi::{Counters, EngineError, ErrorKind, Usage, ABI_VERSION};
pub use guard::instantiate;
pub use message::{
    is_image_part, messages_from_json, messages_to_json, part_text, Content, FunctionCall, Message, Role,
    ToolCall,
};
pub use observe::{Fact, FactBody, FactKind, FactView, RawFact};
pub use sdk::{
    default_status, CompressRequest, Engine, Host, HostPaths, HostSummary, ModelInfo, SessionInfo,
    SummarizeRequest,
};

/// What [`export_engine!`] expands to; not part of the public interface.
#[doc(hidden)]
pub mod __private {
    pub use crate::export::root_module;
    pub use abi_stable::library::{
        __call_root_module_loader as call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
}

/// The README's plugin-author example, compiled as a doctest so that it cannot drift from the SDK.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

#[cfg(test)]
mod tests {
    #[test]
    fn export_symbol_name_matches_abi_stable() {
        // `export_engine!` names its static by hand (the attribute macro would make every plugin
        // depend on abi_stable directly); abi_stable must look up exactly that name.
        assert_eq!(
            abi_stable::library::ROOT_MODULE_LOADER_NAME,
            "_1as_0lib_1header_0root_bmodule_bloader"
        );
    }
}
