//! Reading `--engines` and `--set`, and giving every entry the settings it runs with.

use std::collections::BTreeMap;

use ctxhost_compressor::CompressorConfig;
use serde_json::Value;

use crate::config::{Settings, DEFAULT_ENGINE};

/// A mistake in the command line; nothing has run.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// An entry of `--engines` that names no engine or no label.
    #[error("--engines: `{0}` must be an engine name or name@label")]
    BadEntry(String),
    /// The same entry twice.
    #[error("--engines: `{0}` is listed twice")]
    Duplicate(String),
    /// A `--set` that is not `label.key=value`.
    #[error("--set `{text}`: {reason}")]
    BadSet {
        /// The flag's value.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// A label with neither a `compare:` block nor a `--set`.
    #[error("--engines: `{entry}`: no named configuration `{label}` (add `compare: {{{label}: {{…}}}}` to config.yaml, or --set {label}.key=value)")]
    UnknownLabel {
        /// The entry.
        entry: String,
        /// Its label.
        label: String,
    },
    /// A `--set` for a label no entry uses.
    #[error("--set {label}.…: no entry of --engines uses `@{label}`")]
    UnusedSet {
        /// The label.
        label: String,
    },
}

/// One entry of `--engines`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineChoice {
    /// As written: `compressor@tight`.
    pub label: String,
    /// The engine's name: `compressor`.
    pub engine: String,
    /// The named configuration: `tight`.
    pub configuration: Option<String>,
}

/// Reads one entry of `--engines`: `name` or `name@label`.
pub fn parse_engine_choice(text: &str) -> Result<EngineChoice, CompareError> {
    let text = text.trim();
    let bad = || CompareError::BadEntry(text.to_owned());
    let (engine, configuration) = match text.split_once('@') {
        Some((engine, label)) if is_label(label) => (engine, Some(label.to_owned())),
        Some(_) => return Err(bad()),
        None => (text, None),
    };
    if engine.is_empty() || engine.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(EngineChoice {
        label: text.to_owned(),
        engine: engine.to_owned(),
        configuration,
    })
}

fn is_label(label: &str) -> bool {
    !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One `--set label.key.sub=value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The named configuration.
    pub label: String,
    /// The key, split at dots (nested mappings).
    pub path: Vec<String>,
    /// The value, read as YAML.
    pub value: Value,
}

/// Reads one `--set`.
pub fn parse_override(text: &str) -> Result<Override, CompareError> {
    let bad = |reason: &str| CompareError::BadSet {
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| bad("must be label.key=value"))?;
    let mut parts = key.trim().split('.').map(str::to_owned);
    let label = parts.next().unwrap_or_default();
    let path: Vec<String> = parts.collect();
    if !is_label(&label) || path.is_empty() || path.iter().any(String::is_empty) {
        return Err(bad("must be label.key=value, e.g. tight.threshold=0.3"));
    }
    let value = if value.trim().is_empty() {
        Value::Null
    } else {
        serde_norway::from_str(value).map_err(|error| bad(&format!("the value is not YAML: {error}")))?
    };
    Ok(Override { label, path, value })
}

/// Lays `overrides` over `base`: mappings merge key by key, anything else replaces.
pub fn merge_block(base: &mut Value, overrides: &Value) {
    match (base, overrides) {
        (Value::Object(base), Value::Object(overrides)) => {
            for (key, value) in overrides {
                merge_block(base.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (base, overrides) => *base = overrides.clone(),
    }
}

/// One entry ready to run: its engine's settings, or why there are none.
#[derive(Debug)]
pub struct PlannedEngine {
    /// The entry.
    pub choice: EngineChoice,
    /// The block the engine is created with.
    pub block: Value,
    /// The settings to resolve it with, or the problem with its configuration.
    pub settings: Result<Settings, String>,
}

/// Checks the command line and gives every entry its settings.
pub fn plan_engines(
    settings: &Settings,
    entries: &[String],
    sets: &[String],
) -> Result<Vec<PlannedEngine>, CompareError> {
    let choices = entries
        .iter()
        .filter(|entry| !entry.trim().is_empty())
        .map(|entry| parse_engine_choice(entry))
        .collect::<Result<Vec<_>, _>>()?;
    if choices.is_empty() {
        return Err(CompareError::BadEntry(String::new()));
    }
    for (index, choice) in choices.iter().enumerate() {
        if choices[..index].iter().any(|other| other.label == choice.label) {
            return Err(CompareError::Duplicate(choice.label.clone()));
        }
    }
    let mut configurations: BTreeMap<String, Value> = settings.compare.clone();
    for text in sets {
        let set = parse_override(text)?;
        let mut nested = set.value;
        for key in set.path.iter().rev() {
            nested = Value::Object([(key.clone(), nested)].into_iter().collect());
        }
        merge_block(configurations.entry(set.label).or_insert(Value::Null), &nested);
    }
    for text in sets {
        let label = parse_override(text)?.label;
        if !choices
            .iter()
            .any(|c| c.configuration.as_deref() == Some(label.as_str()))
        {
            return Err(CompareError::UnusedSet { label });
        }
    }
    choices
        .into_iter()
        .map(|choice| {
            let mut block = settings.engine_block(&choice.engine);
            let Some(label) = &choice.configuration else {
                return Ok(PlannedEngine {
                    settings: Ok(settings.clone()),
                    block,
                    choice,
                });
            };
            let overrides = configurations
                .get(label)
                .ok_or_else(|| CompareError::UnknownLabel {
                    entry: choice.label.clone(),
                    label: label.clone(),
                })?;
            let planned = check_keys(&choice.engine, overrides).and_then(|()| {
                merge_block(&mut block, overrides);
                settings
                    .with_engine_block(&choice.engine, block.clone())
                    .map_err(|problem| problem.to_string())
            });
            Ok(PlannedEngine {
                settings: planned.map_err(|problem| format!("compare.{label}.{problem}")),
                block,
                choice,
            })
        })
        .collect()
}

/// A key the compressor does not know would leave its configuration the same as the plain one,
/// and two identical rows under different names; plugins' keys are theirs to check.
fn check_keys(engine: &str, overrides: &Value) -> Result<(), String> {
    if engine != DEFAULT_ENGINE {
        return Ok(());
    }
    let known = serde_json::to_value(CompressorConfig::default()).unwrap_or_default();
    let known: Vec<&String> = known
        .as_object()
        .map(|keys| keys.keys().collect())
        .unwrap_or_default();
    match overrides
        .as_object()
        .and_then(|keys| keys.keys().find(|key| !known.contains(key)))
    {
        Some(key) => Err(format!(
            "{key}: not a key of the compressor's block (known: {})",
            known.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
        )),
        None => Ok(()),
    }
}
