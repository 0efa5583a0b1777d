//! Test plugin `future`: a library with exactly the current root-module layout that reports the
//! *next* interface version, `ctxhost_engine_abi::ABI_VERSION + 1`, as a plugin built for a newer
//! host would. Its layout passes abi_stable's check; the host must then refuse it because the
//! version is unsupported.
//!
//! `export_engine!` always reports the current version, so the root module is built by hand here
//! with `#[export_root_module]`. Not for anything but tests.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{RResult, RStr},
};
use ctxhost_engine_abi::{
    ffi::{EngineBox, EngineModule, EngineModuleRef, HostBox},
    CompressRequest, Counters, Engine, EngineError, Host, Message,
};
use serde_json::Value;

/// The version this library claims.
pub const FUTURE_ABI_VERSION: u32 = ctxhost_engine_abi::ABI_VERSION + 1;

/// A do-nothing engine, in case a host creates it anyway.
pub struct Future {
    counters: Counters,
}

impl Engine for Future {
    const NAME: &'static str = "future";

    fn new(_config: &Value, _host: Host) -> Result<Self, EngineError> {
        Ok(Self {
            counters: Counters::default(),
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
        _request: &CompressRequest,
    ) -> Result<Vec<Message>, EngineError> {
        self.counters.compression_count += 1;
        Ok(messages)
    }
}

/// The root module abi_stable's loader finds: the current layout, the next version.
#[export_root_module]
pub fn root_module() -> EngineModuleRef {
    EngineModule {
        abi_version,
        engine_name,
        new_engine,
    }
    .leak_into_prefix()
}

extern "C" fn abi_version() -> u32 {
    FUTURE_ABI_VERSION
}

extern "C" fn engine_name() -> RStr<'static> {
    RStr::from_str(Future::NAME)
}

extern "C" fn new_engine(config: RStr<'_>, host: HostBox) -> RResult<EngineBox, EngineError> {
    // `instantiate` catches a panic in `new`.
    ctxhost_engine_abi::instantiate::<Future>(config.as_str(), host).into()
}
