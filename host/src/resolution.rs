//! Choosing the engine: the configured one, or the built-in compressor and the reason.
//!
//! Resolution order for any name other than `compressor` (the contract's):
//! - a plugin folder of that name under the plugins directory;
//! - an engine registered by code embedding the host as a library;
//! - otherwise the built-in compressor, with one warning naming the engine asked for and why it
//!   could not be used.
//!
//! A plugin engine is never activated by being present: only the selected name is looked up, and
//! only its library is opened.

use std::{collections::BTreeMap, sync::Arc};

use ctxhost_compressor::Compressor;
use ctxhost_engine_abi::{
    ffi::{EngineBox, HostBox},
    instantiate,
    linked::instantiate_linked,
    Engine, EngineError, ErrorKind,
};
use serde_json::Value;

use crate::{
    config::{Settings, DEFAULT_ENGINE},
    discovery::{discover_plugins, find_plugin, LookupError, PluginFolder},
    engine::{EngineHandle, EngineOrigin},
    isolation::{is_isolated, ChildEngine, ChildSpec, StartError},
    loading::{open_engine_library, verify_checksum, LoadError},
    services::{host_services_for, ServiceContext},
};

/// Shared, so that an observer's thread creates its engine with a copy of the registry.
type Factory = Arc<dyn Fn(&str, HostBox) -> Result<EngineBox, EngineError> + Send + Sync>;

/// Engines registered by a program that embeds the host, by name.
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<String, Factory>,
}

/// A second registration under a name that is taken.
#[derive(Debug, thiserror::Error)]
#[error("an engine named `{0}` is already registered; the second registration is refused")]
pub struct NameTaken(pub String);

impl Registry {
    /// Registers engine `E` under its name.
    pub fn register<E: Engine>(&mut self) -> Result<(), NameTaken> {
        if E::NAME == DEFAULT_ENGINE || self.factories.contains_key(E::NAME) {
            return Err(NameTaken(E::NAME.to_owned()));
        }
        let factory: Factory = Arc::new(|config, services| instantiate::<E>(config, services));
        self.factories.insert(E::NAME.to_owned(), factory);
        Ok(())
    }
}

/// The engine that will run.
pub struct Resolution {
    /// The engine.
    pub engine: EngineHandle,
    /// Set when the requested engine could not be used and the compressor runs instead.
    pub fallback: Option<Fallback>,
}

/// Why the requested engine is not the one running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// The engine asked for.
    pub requested: String,
    /// Why it could not be used.
    pub reason: String,
}

impl Fallback {
    /// The one warning line users see.
    pub fn warning(&self) -> String {
        format!(
            "engine `{}` cannot be used: {}; running the built-in compressor instead",
            self.requested, self.reason
        )
    }
}

/// Why a plugin could not be made into an engine.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The plugins directory could not be listed, or a folder is not usable.
    #[error("{0}")]
    NotFound(String),
    /// No usable folder of that name.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The library could not be opened or checked.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The library's engine has another name than its folder.
    #[error("{library}: the library's engine is named `{found}`, not `{expected}`")]
    WrongEngine {
        /// The library.
        library: String,
        /// The folder's name.
        expected: String,
        /// What the library reports.
        found: String,
    },
    /// The factory returned an error.
    #[error("{library}: the engine's factory failed: {error}")]
    FactoryFailed {
        /// The library, or `registered`.
        library: String,
        /// What it reported.
        error: EngineError,
    },
    /// The factory panicked (the SDK caught it).
    #[error("{library}: the engine's factory panicked: {message}")]
    FactoryPanicked {
        /// The library, or `registered`.
        library: String,
        /// The panic message.
        message: String,
    },
    /// The engine's child process (`context.isolation: process`) could not be started with it.
    #[error("{library}: {error}")]
    Isolated {
        /// The library.
        library: String,
        /// Why.
        error: StartError,
    },
}

/// Resolves the engine named `name` with `settings`, falling back to the built-in compressor.
/// The host's services (the summarizer among them) are built once from `settings`.
pub fn resolve_engine(name: &str, settings: &Settings, registry: &Registry) -> Resolution {
    let services = ServiceContext::from_settings(settings);
    if name == DEFAULT_ENGINE {
        return Resolution {
            engine: builtin_compressor_with(settings, &services),
            fallback: None,
        };
    }
    match try_resolve_engine_with(name, settings, registry, &services) {
        Ok(engine) => Resolution {
            engine,
            fallback: None,
        },
        Err(error) => Resolution {
            engine: builtin_compressor_with(settings, &services),
            fallback: Some(Fallback {
                requested: name.to_owned(),
                reason: error.to_string(),
            }),
        },
    }
}

/// [`resolve_engine`], then the engine told `model` (`update_model`): one that fails there could
/// never know its window, so it would never compact; the compressor takes its place, as for an
/// engine that cannot be loaded.
pub fn resolve_engine_for(
    name: &str,
    settings: &Settings,
    registry: &Registry,
    model: &ctxhost_engine_abi::ModelInfo,
) -> Resolution {
    let mut resolution = resolve_engine(name, settings, registry);
    if resolution.fallback.is_some() || name == DEFAULT_ENGINE {
        return resolution;
    }
    if let Err(error) = resolution.engine.update_model(model) {
        let services = ServiceContext::from_settings(settings);
        resolution = Resolution {
            engine: builtin_compressor_with(settings, &services),
            fallback: Some(Fallback {
                requested: name.to_owned(),
                reason: format!("told its window, it {}", error.without_engine()),
            }),
        };
    }
    resolution
}

/// Resolves the engine named `name` with `settings`, without falling back: the built-in
/// compressor for `compressor`, otherwise the plugin folder (read afresh) or a registered engine,
/// or why neither can be used. Used where a fallback would be wrong: an observer, a live swap.
pub fn try_resolve_engine(
    name: &str,
    settings: &Settings,
    registry: &Registry,
) -> Result<EngineHandle, ResolveError> {
    try_resolve_engine_with(name, settings, registry, &ServiceContext::from_settings(settings))
}

fn try_resolve_engine_with(
    name: &str,
    settings: &Settings,
    registry: &Registry,
    services: &Arc<ServiceContext>,
) -> Result<EngineHandle, ResolveError> {
    if name == DEFAULT_ENGINE {
        return Ok(builtin_compressor_with(settings, services));
    }
    let folders =
        discover_plugins(&settings.plugins_dir).map_err(|error| ResolveError::NotFound(error.to_string()))?;
    let in_folder = folders.iter().any(|folder| folder.folder_name == name);
    if !in_folder {
        if let Some(factory) = registry.factories.get(name) {
            let config = config_json(settings, name);
            let object = factory(&config, host_services_for(name, services))
                .map_err(|error| factory_error("registered".into(), located(error, settings, name)))?;
            return Ok(EngineHandle::new(object, name, EngineOrigin::Registered));
        }
    }
    let folder = find_plugin(&folders, name, &settings.plugins_dir)?;
    load_plugin_with(folder, settings, services)
}

/// Opens a usable plugin folder's library and creates its engine with its config block, and the
/// host's services built from `settings`.
pub fn load_plugin(folder: &PluginFolder, settings: &Settings) -> Result<EngineHandle, ResolveError> {
    load_plugin_with(folder, settings, &ServiceContext::from_settings(settings))
}

/// [`load_plugin`] with services already built.
pub fn load_plugin_with(
    folder: &PluginFolder,
    settings: &Settings,
    services: &Arc<ServiceContext>,
) -> Result<EngineHandle, ResolveError> {
    let (Some(manifest), Some(library)) = (&folder.manifest, &folder.library) else {
        return Err(ResolveError::NotFound(format!(
            "{}: not a usable plugin folder",
            folder.dir.display()
        )));
    };
    if let Some(checksum) = &manifest.checksum {
        verify_checksum(library, checksum)?;
    }
    if is_isolated(settings) {
        return start_isolated(folder, &manifest.name, library, settings);
    }
    let opened = open_engine_library(library)?;
    let shown = library.display().to_string();
    if opened.engine_name != manifest.name {
        return Err(ResolveError::WrongEngine {
            library: shown,
            expected: manifest.name.clone(),
            found: opened.engine_name.to_owned(),
        });
    }
    tracing::debug!("{shown}: opened in {:?}", opened.load_time);
    let config = config_json(settings, &manifest.name);
    let context = Arc::clone(services);
    let services = host_services_for(&manifest.name, services);
    let object = crate::services::creating_with(&context, || {
        (opened.module.new_engine())(config.as_str().into(), services)
    })
    .into_result()
    .map_err(|error| factory_error(shown, located(error, settings, &manifest.name)))?;
    let origin = EngineOrigin::Plugin {
        dir: folder.dir.clone(),
        library: library.clone(),
    };
    Ok(EngineHandle::new(object, manifest.name.clone(), origin))
}

/// The plugin in a child `ctxhost serve` of its own, which opens the library and creates the
/// engine; the built-in compressor (with these settings) takes its place if it is detached.
fn start_isolated(
    folder: &PluginFolder,
    name: &str,
    library: &std::path::Path,
    settings: &Settings,
) -> Result<EngineHandle, ResolveError> {
    let shown = library.display().to_string();
    let isolated = |error| ResolveError::Isolated {
        library: shown.clone(),
        error,
    };
    let spec = ChildSpec::new(&folder.folder_name, settings).map_err(|error| {
        isolated(StartError::Spawn {
            program: "this program".to_owned(),
            error,
        })
    })?;
    let child = ChildEngine::start(spec).map_err(|error| match error {
        // The child's own reason already names the library.
        StartError::Refused(reason) => ResolveError::NotFound(reason),
        other => isolated(other),
    })?;
    let fallback_settings = settings.clone();
    let origin = EngineOrigin::Plugin {
        dir: folder.dir.clone(),
        library: library.to_owned(),
    };
    Ok(EngineHandle::isolated(
        child,
        Box::new(move || builtin_compressor(&fallback_settings)),
        name,
        origin,
    ))
}

/// A configuration error of engine `name` that starts with a key of its block (`lcm.fresh_tail:
/// …`, as [`ctxhost_engine_abi::read_config`] writes them, or `lcm.fan_in must be at least 2`),
/// with where that key is written in the config file put first: the engine knows its block, not
/// the file.
fn located(error: EngineError, settings: &Settings, name: &str) -> EngineError {
    if error.kind != ErrorKind::CONFIG {
        return error;
    }
    let key = error
        .message
        .split(|c: char| c == ':' || c.is_whitespace())
        .next()
        .map(|key| key.split('[').next().unwrap_or(key))
        .filter(|key| key.split('.').next() == Some(name) && key.split('.').all(is_key_word));
    match key.and_then(|key| settings.locate(key)) {
        Some(at) => EngineError::config(format!("{at}: {}", error.message)),
        None => error,
    }
}

fn is_key_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn factory_error(library: String, error: EngineError) -> ResolveError {
    if error.kind == ErrorKind::PANIC {
        ResolveError::FactoryPanicked {
            library,
            message: error.message.into_string(),
        }
    } else {
        ResolveError::FactoryFailed { library, error }
    }
}

fn config_json(settings: &Settings, name: &str) -> String {
    match settings.engine_block(name) {
        Value::Null => String::new(),
        block => block.to_string(),
    }
}

/// The built-in compressor with the `compression:` block of `settings`, and the host's services
/// built from `settings`.
pub fn builtin_compressor(settings: &Settings) -> EngineHandle {
    builtin_compressor_with(settings, &ServiceContext::from_settings(settings))
}

/// [`builtin_compressor`] with services already built.
pub fn builtin_compressor_with(settings: &Settings, services: &Arc<ServiceContext>) -> EngineHandle {
    let config = settings.engine_block(DEFAULT_ENGINE);
    // Linked, not behind the boundary: its messages need no JSON. The settings were validated
    // when read, so the compressor accepts them.
    let engine = instantiate_linked::<Compressor>(&config, host_services_for(DEFAULT_ENGINE, services))
        .unwrap_or_else(|error| panic!("the built-in compressor refused validated settings: {error}"));
    EngineHandle::linked(engine, DEFAULT_ENGINE, EngineOrigin::BuiltIn)
}

#[cfg(test)]
mod tests;
