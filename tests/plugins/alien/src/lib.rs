//! Test plugin `alien`: a library built against a *different* interface that happens to use the
//! same root-module names as `ctxhost-engine-abi` (`BASE_NAME = "ctxhost_engine"`, the same `NAME`).
//!
//! Its root module has the same field names but other types: the version is a `u64` and the
//! factory takes a flag word instead of the host's services and returns plain text. The host must
//! refuse it with a layout (type-check) error when it opens it, and must not crash.
//!
//! It depends on `abi_stable` directly, never on `ctxhost-engine-abi`: sharing that crate's types
//! would defeat the point. Not for anything but tests.

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    package_version_strings,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{RStr, RString},
    StableAbi,
};

/// A root module that looks like ctxhost's by name only.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = EngineModuleRef)))]
#[sabi(missing_field(panic))]
pub struct EngineModule {
    /// Wider than ctxhost's `u32`.
    pub abi_version: extern "C" fn() -> u64,

    /// The same as ctxhost's.
    pub engine_name: extern "C" fn() -> RStr<'static>,

    /// Different arguments and result from ctxhost's factory.
    #[sabi(last_prefix_field)]
    pub new_engine: extern "C" fn(config: RStr<'_>, flags: u32) -> RString,
}

impl RootModule for EngineModuleRef {
    declare_root_module_statics! {EngineModuleRef}

    const BASE_NAME: &'static str = "ctxhost_engine";
    const NAME: &'static str = "ctxhost context engine";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// The root module abi_stable's loader finds.
#[export_root_module]
pub fn root_module() -> EngineModuleRef {
    EngineModule {
        abi_version,
        engine_name,
        new_engine,
    }
    .leak_into_prefix()
}

extern "C" fn abi_version() -> u64 {
    1
}

extern "C" fn engine_name() -> RStr<'static> {
    RStr::from_str("alien")
}

extern "C" fn new_engine(config: RStr<'_>, flags: u32) -> RString {
    RString::from(format!("alien engine for {} (flags {flags})", config.as_str()))
}
