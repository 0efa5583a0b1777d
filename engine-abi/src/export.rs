//! The one macro a plugin crate needs: [`export_engine!`](crate::export_engine).

use abi_stable::{
    prefix_type::PrefixTypeTrait,
    std_types::{RResult, RStr},
};

use crate::{
    ffi::{EngineBox, EngineError, EngineModule, EngineModuleRef, HostBox, ABI_VERSION},
    guard, logging,
    sdk::{Engine, Host},
};

/// Exports engine type `$engine` as this library's root module.
///
/// Put it once in a `cdylib` crate:
///
/// ```text
/// ctxhost_engine_abi::export_engine!(my_engine::MyEngine);
/// ```
///
/// The library then answers the host's loader with the interface version, the engine's name and a
/// factory. The factory forwards the engine's `tracing` events to the host and catches panics in
/// `new` and in every engine method.
#[macro_export]
macro_rules! export_engine {
    ($engine:ty) => {
        // The exported symbol abi_stable's loader looks up; `export_symbol_name_matches_abi_stable`
        // in this crate checks the name against abi_stable's own constant.
        #[doc(hidden)]
        #[no_mangle]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::__private::LibHeader = {
            extern "C" fn load_root_module() -> $crate::__private::RootModuleResult {
                $crate::__private::call_root_module_loader(
                    $crate::__private::root_module::<$engine> as fn() -> _,
                )
            }
            // SAFETY: `load_root_module` returns the module `root_module` builds, an
            // `EngineModuleRef`, which is the type named here.
            unsafe {
                $crate::__private::LibHeader::from_constructor::<$crate::ffi::EngineModuleRef>(
                    load_root_module,
                    $crate::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

/// Builds the root module for engine `E`. Called once per library by abi_stable's loader.
#[doc(hidden)]
pub fn root_module<E: Engine>() -> EngineModuleRef {
    EngineModule {
        abi_version,
        engine_name: engine_name::<E>,
        new_engine: new_engine::<E>,
    }
    .leak_into_prefix()
}

extern "C" fn abi_version() -> u32 {
    ABI_VERSION
}

extern "C" fn engine_name<E: Engine>() -> RStr<'static> {
    RStr::from_str(E::NAME)
}

extern "C" fn new_engine<E: Engine>(config: RStr<'_>, host: HostBox) -> RResult<EngineBox, EngineError> {
    let setup = std::panic::catch_unwind(|| {
        guard::install_panic_hook();
        logging::forward_logs_to(&Host::new(host.clone()));
    });
    if setup.is_err() {
        return RResult::RErr(EngineError::other("the SDK could not install its log forwarding"));
    }
    guard::instantiate::<E>(config.as_str(), host).into()
}
