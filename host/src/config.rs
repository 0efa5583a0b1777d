//! `config.yaml` → validated [`Settings`].
//!
//! The file uses Hermes Agent's keys where Hermes has them, so a Hermes user's file reads as is.
//! Unknown keys are ignored with a debug log; a wrong type or an impossible value is an error that
//! names the file, the line and the key.

use std::{
    collections::BTreeMap,
    fmt, fs, io,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use ctxhost_compressor::{CompressorConfig, ConfigProblem};
use serde::Deserialize;
use serde_json::Value;

use crate::{runner::DEFAULT_OBSERVER_TIMEOUT, tokens::TokenizerKind};

mod auxiliary;
mod isolation;

pub use auxiliary::{ApiKey, SummarizerProblem, SummarizerSettings, DEFAULT_API_KEY_ENV, REDACTED};
pub use isolation::{Deadlines, Isolation, IsolationProblem, IsolationSettings, Limits};

/// The engine used when `context.engine` is not set.
pub const DEFAULT_ENGINE: &str = "compressor";

/// The longest `context.observer_timeout`, in seconds: a day, which is as good as no limit.
const MAX_OBSERVER_TIMEOUT_S: f64 = 86_400.0;

/// Where the plugins directory is when neither config nor flag says: `plugins/` next to the
/// config file.
pub const DEFAULT_PLUGINS_DIR: &str = "plugins";

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The file they were read from, when there was one.
    pub source: Option<PathBuf>,
    /// `context.engine`: the engine to run.
    pub engine: String,
    /// `context.observers`: engines that watch the session without changing its context.
    pub observers: Vec<String>,
    /// `context.observer_timeout` (seconds): how long the session waits on an observer that
    /// finishes no call (its queue full, a tool call, the end) before it detaches it.
    pub observer_timeout: Duration,
    /// The plugins directory (holding `context_engine/<name>/` folders).
    pub plugins_dir: PathBuf,
    /// `context.tokenizer`: what the host counts the context's tokens with.
    pub tokenizer: TokenizerKind,
    /// `context.isolation`: whether plugin engines run in the host's process or each in a child.
    pub isolation: Isolation,
    /// The `isolation:` block: deadlines, crashes tolerated, limits of a child.
    pub isolation_settings: IsolationSettings,
    /// The `model:` block.
    pub model: ModelSettings,
    /// The built-in compressor's `compression:` block.
    pub compression: CompressorConfig,
    /// `auxiliary.compression:`: the model that writes summaries, offered to every engine.
    pub summarizer: SummarizerSettings,
    /// `compare:`: named configurations for `ctxhost compare --engines compressor@tight`, each a
    /// mapping of the keys it changes in its engine's block.
    pub compare: BTreeMap<String, Value>,
    /// The whole file as JSON, for the blocks of plugin engines (the API key replaced).
    document: Value,
    /// What the user should hear about the file (a misspelt key), one line each, with its file
    /// and line.
    pub warnings: Vec<String>,
    /// The line of each key written in the file (dotted: `lcm.fresh_tail`), to say where an
    /// engine's block has the key its error names. Only keys: the text holds the API key.
    key_lines: Arc<BTreeMap<String, usize>>,
}

/// The `model:` block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
pub struct ModelSettings {
    /// `model.default`: the model's name.
    pub default: Option<String>,
    /// `model.context_length`: the window, when the host cannot know it otherwise.
    pub context_length: Option<u64>,
    /// `model.max_tokens`: the output reservation, taken off the window.
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
// The sections read as the user wrote them: an error names "a mapping", not these types.
#[serde(default, expecting = "a mapping of settings")]
struct RawConfig {
    context: RawContext,
    model: ModelSettings,
    compression: CompressorConfig,
    auxiliary: RawAuxiliary,
    compare: BTreeMap<String, Value>,
    isolation: IsolationSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
struct RawAuxiliary {
    compression: SummarizerSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "a mapping of settings")]
struct RawContext {
    engine: Option<EngineName>,
    observers: Vec<EngineName>,
    observer_timeout: Option<f64>,
    plugins_dir: Option<PathBuf>,
    tokenizer: Option<String>,
    isolation: Option<String>,
}

/// An engine's name as the file writes it (`context.engine`, `context.observers`): a string.
/// YAML reads `engine: 5` as a number, which a plain `String` would take as the name "5" without
/// a word; the error names the key and the line instead.
#[derive(Debug)]
struct EngineName(String);

impl EngineName {
    fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EngineName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = EngineName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an engine name (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<EngineName, E> {
                Ok(EngineName(name.to_owned()))
            }
        }
        // `any`, not `string`: the YAML reader hands a plain `5` to `visit_str` when asked for a
        // string, and as the number it is when asked what it is.
        deserializer.deserialize_any(Visitor)
    }
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: cannot read the config file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Not YAML, or a value of the wrong type.
    #[error("{}{}: {message}", path.display(), Location(*line, *column))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A value of the right type that cannot be right.
    #[error("{}{}: `{key}` {message}", path.display(), Location(*line, None))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key, when found.
        line: Option<usize>,
        /// The dotted key, e.g. `compression.threshold`.
        key: String,
        /// Why it cannot be right.
        message: String,
    },
}

/// How errors and warnings name a config given as an object, not a file.
const INLINE_CONFIG: &str = "inline config";

struct Location(Option<usize>, Option<usize>);

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(line), Some(column)) => write!(f, ":{line}:{column}"),
            (Some(line), None) => write!(f, ":{line}"),
            _ => Ok(()),
        }
    }
}

impl Settings {
    /// Settings when there is no config file: every default, plugins under `base_dir/plugins`.
    pub fn defaults(base_dir: &Path) -> Self {
        Self {
            source: None,
            engine: DEFAULT_ENGINE.to_owned(),
            observers: Vec::new(),
            observer_timeout: DEFAULT_OBSERVER_TIMEOUT,
            plugins_dir: base_dir.join(DEFAULT_PLUGINS_DIR),
            tokenizer: TokenizerKind::default(),
            isolation: Isolation::default(),
            isolation_settings: IsolationSettings::default(),
            model: ModelSettings::default(),
            compression: CompressorConfig::default(),
            summarizer: SummarizerSettings::default(),
            compare: BTreeMap::new(),
            document: Value::Null,
            warnings: Vec::new(),
            key_lines: Arc::default(),
        }
    }

    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Validates a config that came as an object rather than a file (`ctxhost serve`'s
    /// `session/open`), written out as YAML for `text`. Its errors and warnings name the keys,
    /// under the name `inline config`, but no line: the lines would be those of YAML the client
    /// never wrote.
    pub fn parse_inline(text: &str) -> Result<Self, ConfigError> {
        let mut settings = Self::parse(text, Path::new(INLINE_CONFIG)).map_err(|error| match error {
            ConfigError::Parse { path, message, .. } => ConfigError::Parse {
                path,
                line: None,
                column: None,
                message,
            },
            ConfigError::Invalid {
                path, key, message, ..
            } => ConfigError::Invalid {
                path,
                line: None,
                key,
                message,
            },
            other => other,
        })?;
        for warning in &mut settings.warnings {
            if let Some(rest) = warning.strip_prefix(INLINE_CONFIG) {
                let rest = rest.trim_start_matches(|c: char| c == ':' || c.is_ascii_digit());
                *warning = format!("{INLINE_CONFIG}: {}", rest.trim_start());
            }
        }
        settings.source = None;
        settings.key_lines = Arc::default();
        Ok(settings)
    }

    /// Validates the text of a config file; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let parse_error = |error: serde_norway::Error| {
            let location = error.location();
            let mut message = strip_location(&error.to_string());
            // YAML refuses a tab where it indents, in words that do not say "tab".
            let tab = location.as_ref().and_then(|l| {
                let line = text.lines().nth(l.line().checked_sub(1)?)?;
                line.chars()
                    .nth(l.column().saturating_sub(1))
                    .filter(|c| *c == '\t')
            });
            if tab.is_some() {
                message.push_str(" (a tab: YAML indents with spaces only)");
            }
            ConfigError::Parse {
                path: path.to_owned(),
                line: location.as_ref().map(|l| l.line()),
                column: location.as_ref().map(|l| l.column()),
                message,
            }
        };
        let yaml: serde_norway::Value = if text.trim().is_empty() {
            serde_norway::Value::Null
        } else {
            serde_norway::from_str(text).map_err(parse_error)?
        };
        let mut warnings = Vec::new();
        let raw: RawConfig = if yaml.is_null() {
            RawConfig::default()
        } else {
            let deserializer = serde_norway::Deserializer::from_str(text);
            serde_ignored::deserialize(deserializer, |ignored| {
                let key = ignored.to_string();
                match misspelt_key_warning(&key) {
                    Some(warning) => {
                        let at = Location(find_key_line(text, &key), None);
                        warnings.push(format!("{}{at}: {warning}", path.display()));
                    }
                    None => tracing::debug!("{}: ignoring `{key}`: not a host setting", path.display()),
                }
            })
            .map_err(parse_error)?
        };
        let mut document = serde_json::to_value(&yaml).map_err(|error| ConfigError::Parse {
            path: path.to_owned(),
            line: None,
            column: None,
            message: format!("cannot be read as JSON for engines: {error}"),
        })?;
        auxiliary::scrub_document(&mut document);
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_owned(),
            line: find_key_line(text, key),
            key: key.to_owned(),
            message,
        };
        let tokenizer = match raw.context.tokenizer.as_deref() {
            None => TokenizerKind::default(),
            Some(name) => name.trim().parse().map_err(|_| {
                invalid(
                    "context.tokenizer",
                    format!("must be one of {}, got `{name}`", TokenizerKind::allowed_names()),
                )
            })?,
        };
        let isolation = match raw.context.isolation.as_deref() {
            None => Isolation::default(),
            Some(name) => name
                .parse()
                .map_err(|reason| invalid("context.isolation", reason))?,
        };
        validate(&raw, invalid)?;
        warnings.extend(misspelt_engine_blocks(&raw.context, &document, text, path));
        let base_dir = path.parent().unwrap_or(Path::new("."));
        let plugins_dir = raw
            .context
            .plugins_dir
            .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGINS_DIR));
        Ok(Self {
            source: Some(path.to_owned()),
            engine: raw
                .context
                .engine
                .map_or_else(|| DEFAULT_ENGINE.to_owned(), |name| name.0),
            observers: raw.context.observers.into_iter().map(|name| name.0).collect(),
            observer_timeout: raw
                .context
                .observer_timeout
                .map_or(DEFAULT_OBSERVER_TIMEOUT, Duration::from_secs_f64),
            plugins_dir: tidy(&base_dir.join(plugins_dir)),
            tokenizer,
            isolation,
            isolation_settings: raw.isolation,
            model: raw.model,
            compression: raw.compression,
            summarizer: raw.auxiliary.compression,
            compare: raw.compare,
            document,
            warnings,
            key_lines: Arc::new(key_lines(text)),
        })
    }

    /// Where `key` (dotted: `lcm.fresh_tail`) is written, `config.yaml:12`; the line of the
    /// nearest section holding it when the key itself is not written there (its default was
    /// refused). `None` without a file, or when no part of it is written.
    pub fn locate(&self, key: &str) -> Option<String> {
        self.key_locations().locate(key)
    }

    /// Where the file's keys are written, for messages about them made elsewhere (a plugin's
    /// warning about a key of its block).
    pub fn key_locations(&self) -> KeyLocations {
        KeyLocations {
            path: self.source.clone(),
            lines: Arc::clone(&self.key_lines),
        }
    }

    /// The config block handed to engine `name` when it is created: `compression:` for the
    /// built-in compressor, the top-level block named after the engine otherwise (`null` when
    /// there is none).
    pub fn engine_block(&self, name: &str) -> Value {
        if name == DEFAULT_ENGINE {
            return serde_json::to_value(&self.compression).unwrap_or(Value::Null);
        }
        self.document.get(name).cloned().unwrap_or(Value::Null)
    }

    /// These settings with `block` as engine `name`'s config block (what [`engine_block`] gives
    /// and the engine is created with). The compressor's block is read and validated as
    /// `compression:` is; a problem names the key.
    ///
    /// [`engine_block`]: Self::engine_block
    pub fn with_engine_block(&self, name: &str, block: Value) -> Result<Self, ConfigProblem> {
        let mut settings = self.clone();
        if name == DEFAULT_ENGINE {
            let config = CompressorConfig::from_json(&block)?;
            config.validate()?;
            settings.compression = config;
        } else {
            if !settings.document.is_object() {
                settings.document = Value::Object(serde_json::Map::new());
            }
            settings.document[name] = block;
        }
        Ok(settings)
    }
}

fn validate(raw: &RawConfig, invalid: impl Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    if let Some(engine) = &raw.context.engine {
        if engine.as_str().trim().is_empty() {
            return Err(invalid(
                "context.engine",
                "must name an engine, got an empty string".into(),
            ));
        }
    }
    if raw.model.context_length == Some(0) {
        return Err(invalid(
            "model.context_length",
            "must be a positive number of tokens, got 0".into(),
        ));
    }
    if let (Some(length), Some(reserved)) = (raw.model.context_length, raw.model.max_tokens) {
        if reserved >= length {
            return Err(invalid(
                "model.max_tokens",
                format!("({reserved}) must be smaller than model.context_length ({length})"),
            ));
        }
    }
    raw.auxiliary
        .compression
        .validate()
        .map_err(|problem| invalid(&format!("auxiliary.compression.{}", problem.key), problem.reason))?;
    if let Some(seconds) = raw.context.observer_timeout {
        if !(seconds > 0.0 && seconds <= MAX_OBSERVER_TIMEOUT_S) {
            return Err(invalid(
                "context.observer_timeout",
                format!("must be a number of seconds above 0 and at most {MAX_OBSERVER_TIMEOUT_S} (a day), got {seconds}"),
            ));
        }
    }
    if let Some(blank) = raw
        .context
        .observers
        .iter()
        .map(EngineName::as_str)
        .find(|name| name.trim().is_empty())
    {
        return Err(invalid(
            "context.observers",
            format!("lists an empty engine name ({blank:?})"),
        ));
    }
    raw.isolation
        .validate()
        .map_err(|problem| invalid(&format!("isolation.{}", problem.key), problem.reason))?;
    for (name, block) in &raw.compare {
        if !block.is_object() {
            return Err(invalid(
                &format!("compare.{name}"),
                format!("must be a mapping of the settings it changes, got {block}"),
            ));
        }
    }
    raw.compression
        .validate()
        .map_err(|problem| invalid(&format!("compression.{}", problem.key), problem.reason.clone()))
}

/// The host's own sections and the keys each one has: a key in one of them that the host does not
/// know is a mistake worth a warning (the rest of the file may hold Hermes's other settings and
/// plugin engines' blocks, which are not the host's to judge).
fn known_sections() -> [(&'static str, &'static [&'static str]); 4] {
    use serde_aux::serde_introspection::serde_introspect;
    [
        ("context", serde_introspect::<RawContext>()),
        ("model", serde_introspect::<ModelSettings>()),
        ("compression", serde_introspect::<CompressorConfig>()),
        ("auxiliary.compression", serde_introspect::<SummarizerSettings>()),
    ]
}

/// For an ignored dotted `key` inside one of the host's own sections that is spelt like one of its
/// keys, the warning naming that key. Keys far from every known one are left alone: Hermes's own
/// settings (`model.provider`, `model.base_url`…) share these sections.
fn misspelt_key_warning(key: &str) -> Option<String> {
    let Some((section, name)) = key.rsplit_once('.') else {
        return misspelt_section_warning(key);
    };
    let (_, known) = known_sections()
        .into_iter()
        .find(|(known, _)| *known == section)?;
    let closest = ctxhost_engine_kit::keys::closest_key(name, known)?;
    Some(format!(
        "unknown key `{key}`, ignored; did you mean `{section}.{closest}`?"
    ))
}

/// A top-level key spelt like the block of an engine the file selects (`context.engine`,
/// `context.observers`) when that block is not there: the engine would start with its defaults,
/// the block ignored without a word.
fn misspelt_engine_blocks(
    context: &RawContext,
    document: &serde_json::Value,
    text: &str,
    path: &Path,
) -> Vec<String> {
    let selected: Vec<&str> = context
        .engine
        .iter()
        .chain(&context.observers)
        .map(EngineName::as_str)
        .filter(|name| *name != DEFAULT_ENGINE && document.get(name).is_none())
        .collect();
    let Some(keys) = document.as_object() else {
        return Vec::new();
    };
    let sections = serde_aux::serde_introspection::serde_introspect::<RawConfig>();
    keys.keys()
        .filter(|key| !sections.contains(&key.as_str()))
        .filter_map(|key| {
            let meant = ctxhost_engine_kit::keys::closest_key(key, &selected)?;
            let at = Location(find_key_line(text, key), None);
            Some(format!(
                "{}{at}: `{key}` is the block of no engine the file selects, and `{meant}`, which it selects, has none: one of the two names is misspelt (`{meant}` starts with its defaults)",
                path.display()
            ))
        })
        .collect()
}

/// For an ignored top-level `key` one letter away from one of the host's sections (a letter
/// missing, added, changed or swapped, or only its case), the warning naming that section: all
/// of the section's settings would be ignored. Only that close, since the top level also holds
/// Hermes's other sections and plugin engines' blocks, named freely (`context_engine`,
/// `auxiliary_models`).
fn misspelt_section_warning(key: &str) -> Option<String> {
    use serde_aux::serde_introspection::serde_introspect;
    let lowercase = key.to_lowercase();
    let closest = serde_introspect::<RawConfig>()
        .iter()
        .find(|section| strsim::osa_distance(&lowercase, section) <= 1)?;
    Some(format!("unknown key `{key}`, ignored; did you mean `{closest}`?"))
}

/// `dir/sub/../plugins` → `dir/plugins`, so reports show the path a person would write. Paths
/// that do not exist are left as given.
fn tidy(path: &Path) -> PathBuf {
    let Ok(canonical) = path.canonicalize() else {
        return path.to_owned();
    };
    match std::env::current_dir()
        .ok()
        .and_then(|cwd| canonical.strip_prefix(cwd).ok().map(Path::to_owned))
    {
        Some(relative) if !relative.as_os_str().is_empty() => relative,
        _ => canonical,
    }
}

/// serde_norway appends " at line L column C" to its messages; the location is printed apart.
/// The parser's message without its ` at line L column C`, wherever it says it: the error line
/// gives the place once, as `file:line:column`.
fn strip_location(message: &str) -> String {
    let Some(at) = message.find(" at line ") else {
        return message.to_owned();
    };
    let rest = &message[at + " at line ".len()..];
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.strip_prefix(" column ").map_or(rest, |after| {
        after.trim_start_matches(|c: char| c.is_ascii_digit())
    });
    format!("{}{rest}", &message[..at])
}

/// Where the keys of a config file are written ([`Settings::key_locations`]).
#[derive(Clone, Debug, Default)]
pub struct KeyLocations {
    path: Option<PathBuf>,
    lines: Arc<BTreeMap<String, usize>>,
}

impl KeyLocations {
    /// Where `key` (dotted: `lcm.fresh_tail`) is written, `config.yaml:12`; the line of the
    /// nearest section holding it when the key itself is not written there. `None` without a
    /// file, or when no part of it is written.
    pub fn locate(&self, key: &str) -> Option<String> {
        let path = self.path.as_ref()?;
        let line = nearest_line(&self.lines, key)?;
        Some(format!("{}:{line}", path.display()))
    }
}

/// The 1-based line where the dotted `key` is defined in block-style YAML, when it can be found:
/// the line of `key`, or of the closest key above it that has one (a key written in a flow
/// mapping, `deadlines: {compress: 0}`, is on its parent's line).
pub(crate) fn find_key_line(text: &str, key: &str) -> Option<usize> {
    nearest_line(&key_lines(text), key)
}

/// The line of `key` in `lines`, or of the closest key above it that has one.
fn nearest_line(lines: &BTreeMap<String, usize>, mut key: &str) -> Option<usize> {
    loop {
        if let Some(&line) = lines.get(key) {
            return Some(line);
        }
        key = &key[..key.rfind('.')?];
    }
}

/// The line of each key of a YAML mapping, by its dotted path, the first where one is written
/// twice (what the YAML parser refuses anyway).
fn key_lines(text: &str) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        let Some((name, _)) = content.split_once(':') else {
            continue;
        };
        let name = name.trim().trim_matches(|c| c == '"' || c == '\'');
        while stack.last().is_some_and(|(depth, _)| *depth >= indent) {
            stack.pop();
        }
        stack.push((indent, name));
        let path = stack.iter().map(|(_, name)| *name).collect::<Vec<_>>().join(".");
        lines.entry(path).or_insert(number + 1);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<Settings, ConfigError> {
        Settings::parse(text, Path::new("/work/config.yaml"))
    }

    /// A config given as an object (`ctxhost serve`) was written out as YAML by the server: its
    /// errors and warnings name keys, never lines of that YAML.
    #[test]
    fn an_inline_configs_errors_and_warnings_name_keys_not_lines() {
        let error = Settings::parse_inline("context:\n  engine: 5\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "inline config: context.engine: invalid type: integer `5`, expected an engine name (a string)"
        );
        let error = Settings::parse_inline("compression:\n  threshold: 3\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "inline config: `compression.threshold` must be between 0 and 1, got 3"
        );
        let settings = Settings::parse_inline("model:\n  context_lenght: 5000\n").unwrap();
        assert_eq!(
            settings.warnings,
            ["inline config: unknown key `model.context_lenght`, ignored; did you mean `model.context_length`?"]
        );
        assert_eq!(settings.locate("model.context_lenght"), None);
    }

    #[test]
    fn a_parse_error_gives_its_place_once_and_says_tab_for_a_tab() {
        let error = Settings::parse("context:\n  engine: [compressor\n", Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert_eq!(error.matches("line 3").count(), 0, "{error}");
        assert!(error.starts_with("c.yaml:3:1: did not find expected"), "{error}");
        let error = Settings::parse("context:\n\tengine: masking\n", Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("c.yaml:2:1: "), "{error}");
        assert!(
            error.ends_with("(a tab: YAML indents with spaces only)"),
            "{error}"
        );
    }

    #[test]
    fn an_empty_file_gives_every_default() {
        let settings = parse("").unwrap();
        assert_eq!(settings.engine, "compressor");
        assert_eq!(settings.plugins_dir, Path::new("/work/plugins"));
        assert_eq!(settings.compression, CompressorConfig::default());
    }

    #[test]
    fn a_misspelt_key_in_a_host_section_is_warned_about_with_its_line_and_the_closest_key() {
        let settings =
            parse("model:\n  default: m\n  context_lenght: 16000\ncompression:\n  treshold: 0.4\n").unwrap();
        assert_eq!(
            settings.warnings,
            [
                "/work/config.yaml:3: unknown key `model.context_lenght`, ignored; did you mean `model.context_length`?",
                "/work/config.yaml:5: unknown key `compression.treshold`, ignored; did you mean `compression.threshold`?",
            ]
        );
        assert_eq!(settings.model.context_length, None);
    }

    #[test]
    fn a_block_spelt_like_a_selected_engine_missing_its_own_is_warned_about() {
        let text = "context:\n  engine: tail-note\n  observers: [lcm]\ntail-noet:\n  turns: 1\nlcm:\n  fresh_tail: 3\nlcmm: {}\n";
        assert_eq!(
            parse(text).unwrap().warnings,
            ["/work/config.yaml:4: `tail-noet` is the block of no engine the file selects, and `tail-note`, which it selects, has none: one of the two names is misspelt (`tail-note` starts with its defaults)"]
        );
        // With its own block there, a look-alike is another program's business.
        let both = "context:\n  engine: tail-note\ntail-note: {}\ntail-noet: {}\n";
        assert_eq!(parse(both).unwrap().warnings, Vec::<String>::new());
    }

    #[test]
    fn other_sections_and_plugin_blocks_are_not_the_hosts_to_warn_about() {
        let text = "masking:\n  keep_lastt: 3\nplugins:\n  enabled: [ctxhost]\nauxiliary:\n  vision:\n    model: x\n";
        assert_eq!(parse(text).unwrap().warnings, Vec::<String>::new());
        let hermes = "model:\n  default: m\n  provider: openrouter\n  base_url: http://x\n  api_key: k\ncontext:\n  colour: blue\n";
        assert_eq!(parse(hermes).unwrap().warnings, Vec::<String>::new());
    }

    #[test]
    fn a_misspelt_section_is_warned_about_since_everything_in_it_is_ignored() {
        let settings = parse(
            "contxt:\n  engine: masking\nModel:\n  context_length: 16000\ncompresion:\n  threshold: 0.4\n",
        )
        .unwrap();
        assert_eq!(
            settings.warnings,
            [
                "/work/config.yaml:1: unknown key `contxt`, ignored; did you mean `context`?",
                "/work/config.yaml:3: unknown key `Model`, ignored; did you mean `model`?",
                "/work/config.yaml:5: unknown key `compresion`, ignored; did you mean `compression`?",
            ]
        );
        assert_eq!(settings.engine, "compressor");
        // Hermes's other sections and plugin blocks, however close in spelling, are not typos.
        let text =
            "memory:\n  a: 1\nmasking:\n  keep_last: 2\ncontext_engine:\n  x: 1\nauxiliary_models:\n  y: 2\n";
        assert_eq!(parse(text).unwrap().warnings, Vec::<String>::new());
    }

    #[test]
    fn a_section_that_is_not_a_mapping_is_an_error_in_the_users_words() {
        // Not the names of the host's own types (`expected struct RawContext`).
        for (text, expected) in [
            (
                "context: 5\n",
                "context: invalid type: integer `5`, expected a mapping of settings",
            ),
            (
                "model: x\n",
                "model: invalid type: string \"x\", expected a mapping of settings",
            ),
            (
                "compression: [1]\n",
                "compression: invalid type: sequence, expected a mapping of settings",
            ),
            (
                "auxiliary: 3\n",
                "auxiliary: invalid type: integer `3`, expected a mapping of settings",
            ),
            (
                "auxiliary:\n  compression: 3\n",
                "auxiliary.compression: invalid type: integer `3`, expected a mapping of settings",
            ),
            (
                "isolation: 1\n",
                "isolation: invalid type: integer `1`, expected a mapping of settings",
            ),
            (
                "isolation:\n  deadlines: 5\n",
                "isolation.deadlines: invalid type: integer `5`, expected a mapping of settings",
            ),
            ("[1]\n", "invalid type: sequence, expected a mapping of settings"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.ends_with(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn an_engine_name_that_is_not_a_string_is_an_error_naming_the_file_line_and_key() {
        for (text, expected) in [
            (
                "context:\n  engine: 5\n",
                "c.yaml:2:11: context.engine: invalid type: integer `5`, expected an engine name (a string)",
            ),
            (
                "context:\n  engine: masking\n  observers:\n    - lcm\n    - 7.5\n",
                "c.yaml:5:7: context.observers[1]: invalid type: floating point `7.5`, expected an engine name (a string)",
            ),
            (
                "context:\n  observers: [lcm, true]\n",
                "c.yaml:2:20: context.observers[1]: invalid type: boolean `true`, expected an engine name (a string)",
            ),
            (
                "context:\n  observers: [{name: lcm}]\n",
                "c.yaml:2:15: context.observers[0]: invalid type: map, expected an engine name (a string)",
            ),
        ] {
            let error = Settings::parse(text, Path::new("c.yaml")).unwrap_err().to_string();
            assert_eq!(error, expected, "{text:?}");
        }
        // Quoted, a number is a name the user chose to write.
        let settings = parse("context:\n  engine: '5'\n  observers: [\"7\"]\n").unwrap();
        assert_eq!(
            (settings.engine.as_str(), settings.observers),
            ("5", vec!["7".to_owned()])
        );
    }

    #[test]
    fn hermes_keys_are_read_and_unknown_keys_ignored() {
        let settings = parse(
            "context:\n  engine: masking\n  plugins_dir: ../engines\nmodel:\n  default: some/model\n  context_length: 200000\n  max_tokens: 8000\ncompression:\n  threshold: 0.6\nauxiliary:\n  compression:\n    model: ''\nmasking:\n  keep_last: 4\nsomething_else: true\n",
        )
        .unwrap();
        assert_eq!(settings.engine, "masking");
        assert_eq!(settings.plugins_dir, Path::new("/work/../engines"));
        assert_eq!(settings.model.context_length, Some(200_000));
        assert_eq!(settings.model.max_tokens, Some(8_000));
        assert_eq!(settings.compression.threshold, 0.6);
        assert_eq!(
            settings.engine_block("masking"),
            serde_json::json!({"keep_last": 4})
        );
        assert_eq!(settings.engine_block("lcm"), Value::Null);
    }

    #[test]
    fn the_observer_timeout_is_in_seconds_and_must_be_above_zero_and_at_most_a_day() {
        assert_eq!(parse("").unwrap().observer_timeout, DEFAULT_OBSERVER_TIMEOUT);
        let settings = parse("context:\n  observer_timeout: 2.5\n").unwrap();
        assert_eq!(settings.observer_timeout, Duration::from_millis(2_500));
        for bad in ["0", "-1", "100000", ".nan"] {
            let error = parse(&format!(
                "context:\n  engine: compressor\n  observer_timeout: {bad}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                error.starts_with(
                    "/work/config.yaml:3: `context.observer_timeout` must be a number of seconds above 0"
                ),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn a_wrong_type_names_the_file_line_and_key() {
        let error = parse("model:\n  context_length: -5\n").unwrap_err().to_string();
        assert!(error.starts_with("/work/config.yaml:2:"), "{error}");
        assert!(error.contains("model.context_length"), "{error}");
    }

    #[test]
    fn an_impossible_value_names_the_file_line_and_key() {
        let error = parse("# comment\ncompression:\n  enabled: true\n  threshold: 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("/work/config.yaml:4: `compression.threshold`"),
            "{error}"
        );
        let error = parse("model:\n  context_length: 1000\n  max_tokens: 1000\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("/work/config.yaml:3: `model.max_tokens`"),
            "{error}"
        );
    }

    #[test]
    fn the_tokenizer_is_rough_unless_configured() {
        assert_eq!(parse("").unwrap().tokenizer, TokenizerKind::Rough);
        for kind in TokenizerKind::ALL {
            let settings = parse(&format!("context:\n  tokenizer: {kind}\n")).unwrap();
            assert_eq!(settings.tokenizer, kind);
        }
    }

    #[test]
    fn an_unknown_tokenizer_names_the_file_line_key_and_allowed_values() {
        let error = parse("context:\n  engine: masking\n  tokenizer: gpt2\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "/work/config.yaml:3: `context.tokenizer` must be one of rough, o200k_base, cl100k_base, got `gpt2`"
        );
    }

    #[test]
    fn malformed_yaml_names_line_and_column() {
        let error = parse("context:\n  engine: [unclosed\n").unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Parse {
                    line: Some(_),
                    column: Some(_),
                    ..
                }
            ),
            "{error}"
        );
    }
}
