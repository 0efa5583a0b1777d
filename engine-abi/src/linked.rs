//! Engines linked into the host's own binary, called without crossing the library boundary.
//!
//! A plugin is reached through [`crate::ffi::EngineBox`], where every message list crosses as JSON.
//! An engine the host links statically (the built-in compressor) needs no JSON at all: the host
//! holds it as a [`LinkedEngine`], made by [`instantiate_linked`], and hands it its messages as
//! they are. Panics are caught the same way as at the boundary, so a linked engine is contained
//! exactly as a plugin is. Plugin authors never need this module.

use serde_json::Value;

use crate::{
    ffi::{Counters, EngineError, HostBox, Usage},
    guard::{call_ext_of, guard},
    observe::Fact,
    sdk::{CompressRequest, Engine, Host, ModelInfo, SessionInfo},
    Message,
};

/// The contract's methods on Rust values, each guarded against panics (an [`crate::ErrorKind::PANIC`]
/// error names the method). The same answers as [`crate::ffi::EngineObject`], without the JSON.
#[allow(missing_docs)] // the methods are the contract's, documented on [`Engine`]
pub trait LinkedEngine: Send {
    fn counters(&self) -> Result<Counters, EngineError>;
    fn update_from_response(&mut self, usage: Usage) -> Result<(), EngineError>;
    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> Result<bool, EngineError>;
    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError>;
    fn should_compress_preflight_estimated(
        &mut self,
        messages: &[Message],
        rough_tokens: u64,
    ) -> Result<bool, EngineError>;
    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError>;
    /// Borrows the messages: the host keeps its context until it has checked the result.
    fn compress(
        &mut self,
        messages: &[Message],
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError>;
    fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> Result<(), EngineError>;
    fn on_session_end(&mut self, session_id: &str, messages: &[Message]) -> Result<(), EngineError>;
    fn on_session_reset(&mut self) -> Result<(), EngineError>;
    fn update_model(&mut self, model: &ModelInfo) -> Result<(), EngineError>;
    fn get_tool_schemas(&self) -> Result<Vec<Value>, EngineError>;
    fn handle_tool_call(
        &mut self,
        name: &str,
        arguments: &Value,
        messages: Option<&[Message]>,
    ) -> Result<Value, EngineError>;
    fn get_status(&self) -> Result<Value, EngineError>;
    fn call_ext(&mut self, method: &str, request: &Value) -> Result<Value, EngineError>;
    /// [`Engine::observe`], the fact handed over as it is.
    fn observe(&mut self, fact: &Fact) -> Result<(), EngineError>;
}

/// Creates engine `E` from its config block for a host that links it; a panic in `E::new` is an
/// error.
pub fn instantiate_linked<E: Engine>(
    config: &Value,
    host: HostBox,
) -> Result<Box<dyn LinkedEngine>, EngineError> {
    let host = Host::new(host);
    let engine = guard("new", || E::new(config, host)).into_result()?;
    Ok(Box::new(Linked(engine)))
}

struct Linked<E>(E);

impl<E: Engine> LinkedEngine for Linked<E> {
    fn counters(&self) -> Result<Counters, EngineError> {
        guard("counters", || Ok(*self.0.counters())).into_result()
    }

    fn update_from_response(&mut self, usage: Usage) -> Result<(), EngineError> {
        guard("update_from_response", || {
            self.0.update_from_response(&usage);
            Ok(())
        })
        .into_result()
    }

    fn should_compress(&mut self, prompt_tokens: Option<u64>) -> Result<bool, EngineError> {
        guard("should_compress", || Ok(self.0.should_compress(prompt_tokens))).into_result()
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        guard("should_compress_preflight", || {
            Ok(self.0.should_compress_preflight(messages))
        })
        .into_result()
    }

    fn should_compress_preflight_estimated(
        &mut self,
        messages: &[Message],
        rough_tokens: u64,
    ) -> Result<bool, EngineError> {
        guard("should_compress_preflight", || {
            Ok(self.0.should_compress_preflight_estimated(messages, rough_tokens))
        })
        .into_result()
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        guard("has_content_to_compress", || {
            Ok(self.0.has_content_to_compress(messages))
        })
        .into_result()
    }

    fn compress(
        &mut self,
        messages: &[Message],
        request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        guard("compress", || self.0.compress_borrowed(messages, request)).into_result()
    }

    fn on_session_start(&mut self, session_id: &str, info: &SessionInfo) -> Result<(), EngineError> {
        guard("on_session_start", || self.0.on_session_start(session_id, info)).into_result()
    }

    fn on_session_end(&mut self, session_id: &str, messages: &[Message]) -> Result<(), EngineError> {
        guard("on_session_end", || self.0.on_session_end(session_id, messages)).into_result()
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        guard("on_session_reset", || {
            self.0.on_session_reset();
            Ok(())
        })
        .into_result()
    }

    fn update_model(&mut self, model: &ModelInfo) -> Result<(), EngineError> {
        guard("update_model", || {
            self.0.update_model(model);
            Ok(())
        })
        .into_result()
    }

    fn get_tool_schemas(&self) -> Result<Vec<Value>, EngineError> {
        guard("get_tool_schemas", || Ok(self.0.get_tool_schemas())).into_result()
    }

    fn handle_tool_call(
        &mut self,
        name: &str,
        arguments: &Value,
        messages: Option<&[Message]>,
    ) -> Result<Value, EngineError> {
        guard("handle_tool_call", || {
            Ok(self.0.handle_tool_call(name, arguments, messages))
        })
        .into_result()
    }

    fn get_status(&self) -> Result<Value, EngineError> {
        guard("get_status", || Ok(self.0.get_status())).into_result()
    }

    fn observe(&mut self, fact: &Fact) -> Result<(), EngineError> {
        guard("observe", || self.0.observe(fact)).into_result()
    }

    fn call_ext(&mut self, method: &str, request: &Value) -> Result<Value, EngineError> {
        guard(method, || call_ext_of(&mut self.0, method, request)).into_result()
    }
}
