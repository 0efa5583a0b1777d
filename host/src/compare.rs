//! `ctxhost compare`: one transcript replayed through several engines, one table.
//!
//! `--engines compressor,masking,compressor@tight` names the engines as `context.engine` does. A
//! `@label` runs the engine under a **named configuration**: the keys it changes in the engine's
//! own block (`compression:` for the compressor, the block named after a plugin otherwise), from
//! the `compare:` block of `config.yaml` and from `--set label.key=value`:
//!
//! ```yaml
//! compare:
//!   tight:                 # --engines compressor,compressor@tight
//!     threshold: 0.3       # laid over compression:, the rest of which still applies
//!     target_ratio: 0.1
//! ```
//!
//! Rules, in order:
//! - every entry gets a fresh engine, resolved as `run` resolves one;
//! - an engine that cannot be loaded gets a row saying why; the built-in compressor is never run
//!   in its place, as it would be under another name;
//! - a configuration the engine's block cannot take (the compressor validates its own) gets a row
//!   saying why;
//! - a failed engine never stops the others: its faults are contained by the replay and counted,
//!   and even a panic in the host while replaying one engine only ends that row;
//! - mistakes in the command itself (an empty name, a label used twice, a label with no block and
//!   no `--set`, a `--set` for a label no entry uses) stop before anything runs.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
};

use anyhow::Result;
use clap::Args;
use ctxhost_compressor::CompressorConfig;
use ctxhost_engine_abi::{Message, ModelInfo};
use ctxhost_engine_kit::stand_in::group_thousands;
use serde::Serialize;
use serde_json::Value;

use crate::{
    cli::DEFAULT_CONTEXT_LENGTH,
    config::{Settings, DEFAULT_ENGINE},
    formats::{read_transcript, Format, Transcript},
    report::{warn_user, EngineSource, Sourced},
    resolution::{resolve_engine, Registry},
    runner::{replay, Outcome, ReplayOptions, ReplayOutcome},
    tokens::TokenCounter,
};

/// `ctxhost compare`'s arguments.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The transcript file.
    pub transcript: PathBuf,
    /// The engines, comma-separated: names as in `context.engine`; `name@label` runs one under the
    /// named configuration `compare.<label>` of config.yaml and the `--set <label>.…` flags.
    #[arg(long, required = true, value_delimiter = ',', value_name = "NAME[@LABEL],…")]
    pub engines: Vec<String>,
    /// Sets one key of a named configuration (repeatable), e.g. `--set tight.threshold=0.3`; the
    /// value is read as YAML (a number, true/false, a string, a list…).
    #[arg(long = "set", value_name = "LABEL.KEY=VALUE")]
    pub set: Vec<String>,
    /// The model's window in tokens, overriding config and transcript.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub context_length: Option<u64>,
    /// Read the transcript as this format instead of detecting it.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

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

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    /// The transcript.
    pub transcript: String,
    /// Its format.
    pub format: String,
    /// Its messages.
    pub messages: usize,
    /// The model's window.
    pub context_length: Sourced<u64>,
    /// The usable window (minus the output reservation).
    pub window: u64,
    /// What the token figures were counted with.
    pub token_counter: String,
    /// The whole transcript's tokens: the final context had nothing been compacted.
    pub uncompacted_tokens: u64,
    /// One row per entry of `--engines`, in order.
    pub engines: Vec<EngineRow>,
}

/// One engine's row.
#[derive(Clone, Debug, Serialize)]
pub struct EngineRow {
    /// The entry as written: `compressor@tight`.
    pub label: String,
    /// The engine asked for.
    pub engine: String,
    /// The named configuration, if any.
    pub configuration: Option<String>,
    /// The config block the engine was (or would have been) created with.
    pub config: Value,
    /// What came of it.
    #[serde(flatten)]
    pub result: RowResult,
}

/// What came of one entry.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RowResult {
    /// The engine replayed the transcript.
    Ran(Box<EngineFigures>),
    /// The engine could not be loaded; nothing ran in its place.
    NotLoaded {
        /// Why.
        reason: String,
    },
    /// Its named configuration is not one the engine's block can take.
    InvalidConfig {
        /// Why.
        reason: String,
    },
    /// The replay itself failed (a panic in the host), so there are no figures.
    Failed {
        /// Why.
        reason: String,
    },
}

/// The figures of one replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineFigures {
    /// Where the engine came from.
    pub source: EngineSource,
    /// The engine's threshold after `update_model`.
    pub threshold_tokens: u64,
    /// Compactions whose result replaced the context.
    pub compactions_applied: usize,
    /// Compactions whose result was refused or failed, the context kept.
    pub compactions_kept: usize,
    /// The largest context the model would have received.
    pub peak_tokens: u64,
    /// The final context's tokens.
    pub final_tokens: u64,
    /// The final context's messages.
    pub final_messages: usize,
    /// `uncompacted_tokens − final_tokens`: what the engine spared the final request (negative
    /// when the engine added more than it took away).
    pub tokens_saved: i64,
    /// Σ (tokens before − tokens after) over applied compactions: what the engine took out of the
    /// context over the whole replay, counting again what grew back and was compacted again.
    pub tokens_compacted_away: i64,
    /// Fact retention over the applied compactions; `None` when there were none.
    pub retention: Option<RetentionSummary>,
    /// Time spent inside the engine.
    pub engine_time_ms: f64,
    /// Engine calls that failed and were contained.
    pub errors: usize,
    /// The first of them.
    pub first_error: Option<String>,
}

/// Fact retention over a replay's applied compactions (`CompactionRecord::retention`): of the
/// identifiers — paths, commands, error lines, URLs, hashes, issues, versions, requests — in what
/// each compaction replaced, the share its result still holds verbatim. Engine-agnostic: masking
/// is measured as a summarizer is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetentionSummary {
    /// Compactions measured.
    pub compactions: usize,
    /// Mean share kept.
    pub mean_share: f64,
    /// Lowest share kept.
    pub min_share: f64,
    /// Facts kept, summed over compactions.
    pub facts_kept: usize,
    /// Facts found, summed over compactions.
    pub facts_total: usize,
}

/// Sums up one replay.
pub fn summarise_outcome(
    outcome: &ReplayOutcome,
    source: EngineSource,
    uncompacted_tokens: u64,
) -> EngineFigures {
    let applied: Vec<_> = outcome
        .compactions
        .iter()
        .filter(|c| c.outcome == Outcome::Applied)
        .collect();
    let retentions: Vec<_> = applied.iter().filter_map(|c| c.retention.as_ref()).collect();
    let retention = (!retentions.is_empty()).then(|| RetentionSummary {
        compactions: retentions.len(),
        mean_share: retentions.iter().map(|r| r.share).sum::<f64>() / retentions.len() as f64,
        min_share: retentions.iter().map(|r| r.share).fold(f64::INFINITY, f64::min),
        facts_kept: retentions.iter().map(|r| r.kept).sum(),
        facts_total: retentions.iter().map(|r| r.total).sum(),
    });
    let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    EngineFigures {
        source,
        threshold_tokens: outcome.counters.map_or(0, |c| c.threshold_tokens),
        compactions_applied: applied.len(),
        compactions_kept: outcome.compactions.len() - applied.len(),
        peak_tokens: outcome.peak_tokens,
        final_tokens: outcome.final_tokens,
        final_messages: outcome.final_messages,
        tokens_saved: signed(uncompacted_tokens) - signed(outcome.final_tokens),
        tokens_compacted_away: applied
            .iter()
            .map(|c| signed(c.tokens_before) - signed(c.tokens_after))
            .sum(),
        retention,
        engine_time_ms: outcome.engine_time_ms,
        errors: outcome.faults.len(),
        first_error: outcome.faults.first().map(|f| f.message.clone()),
    }
}

/// Replays `transcript` through each planned engine, each a fresh instance, one row each.
pub fn compare_engines(
    planned: Vec<PlannedEngine>,
    transcript: &Transcript,
    context_length: Sourced<u64>,
    options: &ReplayOptions,
) -> CompareReport {
    let uncompacted_tokens = options.token_counter.count_messages(&transcript.messages);
    let engines = planned
        .into_iter()
        .map(|plan| {
            let result = match &plan.settings {
                Err(reason) => RowResult::InvalidConfig {
                    reason: reason.clone(),
                },
                Ok(settings) => run_one(
                    &plan.choice,
                    settings,
                    &transcript.messages,
                    options,
                    uncompacted_tokens,
                ),
            };
            EngineRow {
                label: plan.choice.label,
                engine: plan.choice.engine,
                configuration: plan.choice.configuration,
                config: plan.block,
                result,
            }
        })
        .collect();
    CompareReport {
        transcript: transcript.path.display().to_string(),
        format: transcript.format.to_string(),
        messages: transcript.messages.len(),
        context_length,
        window: options.model.window(),
        token_counter: options.token_counter.name().to_owned(),
        uncompacted_tokens,
        engines,
    }
}

fn run_one(
    choice: &EngineChoice,
    settings: &Settings,
    messages: &[Message],
    options: &ReplayOptions,
    uncompacted: u64,
) -> RowResult {
    let resolution = resolve_engine(&choice.engine, settings, &Registry::default());
    if let Some(fallback) = resolution.fallback {
        warn_user(&format!(
            "engine `{}` cannot be used: {}; its row is left without figures",
            choice.label, fallback.reason
        ));
        return RowResult::NotLoaded {
            reason: fallback.reason,
        };
    }
    let mut engine = resolution.engine;
    // The replay contains engine faults itself; this only keeps a bug of the host's, met with one
    // engine, from taking the other rows with it.
    let replayed = catch_unwind(AssertUnwindSafe(|| {
        replay(&mut engine, messages.to_vec(), options)
    }));
    match replayed {
        Ok(outcome) => RowResult::Ran(Box::new(summarise_outcome(
            &outcome,
            engine.origin().into(),
            uncompacted,
        ))),
        Err(panic) => RowResult::Failed {
            reason: format!("the replay panicked: {}", panic_message(&*panic)),
        },
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// `ctxhost compare`.
pub fn run_compare(settings: &Settings, args: &CompareArgs) -> Result<()> {
    let planned = plan_engines(settings, &args.engines, &args.set)?;
    let transcript = read_transcript(&args.transcript, args.format)?;
    let context_length = resolve_context_length(args.context_length, settings, &transcript);
    let options = replay_options(settings, &transcript, context_length.value);
    let report = compare_engines(planned, &transcript, context_length, &options);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_text());
    }
    Ok(())
}

// The window and the session as `run` takes them (cli.rs): flag, then config, then transcript.
fn resolve_context_length(flag: Option<u64>, settings: &Settings, transcript: &Transcript) -> Sourced<u64> {
    let sourced = |value, source: String| Sourced { value, source };
    if let Some(length) = flag {
        return sourced(length, "--context-length".into());
    }
    if let Some(length) = settings.model.context_length {
        let file = settings
            .source
            .as_ref()
            .map_or("config".to_owned(), |p| p.display().to_string());
        return sourced(length, format!("model.context_length in {file}"));
    }
    if let Some(length) = transcript.meta.context_length {
        return sourced(length, "the transcript".into());
    }
    sourced(DEFAULT_CONTEXT_LENGTH, "default; set model.context_length".into())
}

fn replay_options(settings: &Settings, transcript: &Transcript, context_length: u64) -> ReplayOptions {
    let session_id = transcript.meta.session_id.clone().unwrap_or_else(|| {
        transcript
            .path
            .file_stem()
            .map_or("session".to_owned(), |stem| stem.to_string_lossy().into_owned())
    });
    ReplayOptions {
        session_id,
        model: ModelInfo {
            model: (settings.model.default.clone())
                .or_else(|| transcript.meta.model.clone())
                .unwrap_or_default(),
            context_length,
            max_tokens: settings
                .model
                .max_tokens
                .filter(|reserved| *reserved < context_length),
            ..ModelInfo::default()
        },
        token_counter: TokenCounter::new(settings.tokenizer),
    }
}

/// The table's columns, and whether each is right-aligned (figures are).
const COLUMNS: [(&str, bool); 11] = [
    ("engine", false),
    ("source", false),
    ("threshold", true),
    ("applied", true),
    ("kept", true),
    ("peak", true),
    ("final", true),
    ("saved", true),
    ("identifiers kept", true),
    ("engine ms", true),
    ("errors", true),
];

impl CompareReport {
    /// The comparison as an aligned table, with what its columns mean.
    pub fn render_text(&self) -> String {
        let tokens = |n: u64| group_thousands(n as usize);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "transcript  {} ({}), {} messages",
            self.transcript, self.format, self.messages
        );
        let _ = writeln!(
            out,
            "window      {} tokens ({}), usable {}; uncompacted {} tokens ({})\n",
            tokens(self.context_length.value),
            self.context_length.source,
            tokens(self.window),
            tokens(self.uncompacted_tokens),
            self.token_counter,
        );
        let rows: Vec<Vec<String>> = self.engines.iter().map(|row| self.cells(row)).collect();
        out.push_str(&align_columns(&COLUMNS, &rows));
        let _ = writeln!(
            out,
            "\napplied/kept: compactions whose result replaced the context / was refused, the context kept"
        );
        let _ = writeln!(
            out,
            "saved: the uncompacted {} tokens minus the final context's",
            tokens(self.uncompacted_tokens)
        );
        let _ = writeln!(
            out,
            "identifiers kept: of the paths, commands, errors, URLs, hashes, issues, versions and requests in what a\n  compaction replaced, the share its result holds verbatim (mean / lowest over applied compactions)"
        );
        for row in self.engines.iter().filter(|row| row.configuration.is_some()) {
            let _ = writeln!(out, "{}: {}", row.label, row.config);
        }
        for row in &self.engines {
            if let RowResult::Ran(figures) = &row.result {
                if let Some(error) = &figures.first_error {
                    let _ = writeln!(
                        out,
                        "{}: {} errors, the first: {error}",
                        row.label, figures.errors
                    );
                }
            }
        }
        out
    }

    fn cells(&self, row: &EngineRow) -> Vec<String> {
        let figures = match &row.result {
            RowResult::Ran(figures) => figures,
            RowResult::NotLoaded { reason } => {
                return vec![row.label.clone(), format!("NOT LOADED: {reason}")]
            }
            RowResult::InvalidConfig { reason } => {
                return vec![
                    row.label.clone(),
                    format!("NOT RUN, invalid configuration: {reason}"),
                ]
            }
            RowResult::Failed { reason } => return vec![row.label.clone(), format!("FAILED: {reason}")],
        };
        let tokens = |n: u64| group_thousands(n as usize);
        let signed = |n: i64| {
            let magnitude = group_thousands(n.unsigned_abs() as usize);
            if n < 0 {
                format!("-{magnitude}")
            } else {
                magnitude
            }
        };
        let share = |uncompacted: u64| {
            if uncompacted == 0 {
                String::new()
            } else {
                format!(
                    " ({:.0}%)",
                    figures.tokens_saved as f64 * 100.0 / uncompacted as f64
                )
            }
        };
        let source = match &figures.source {
            EngineSource::BuiltIn => "built-in",
            EngineSource::Plugin { .. } => "plugin",
            EngineSource::Registered => "registered",
        };
        let retention = figures.retention.as_ref().map_or("-".to_owned(), |r| {
            format!("{:.0}% / {:.0}%", r.mean_share * 100.0, r.min_share * 100.0)
        });
        vec![
            row.label.clone(),
            source.to_owned(),
            tokens(figures.threshold_tokens),
            figures.compactions_applied.to_string(),
            figures.compactions_kept.to_string(),
            tokens(figures.peak_tokens),
            tokens(figures.final_tokens),
            format!(
                "{}{}",
                signed(figures.tokens_saved),
                share(self.uncompacted_tokens)
            ),
            retention,
            format!("{:.2}", figures.engine_time_ms),
            figures.errors.to_string(),
        ]
    }
}

/// Columns two spaces apart, aligned as `columns` say. A row shorter than the header (an engine
/// without figures) runs its last cell across the remaining columns.
fn align_columns(columns: &[(&str, bool)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        // A spanning cell does not widen the column it starts in, except the first.
        let counted = if row.len() == columns.len() { row.len() } else { 1 };
        for (width, cell) in widths.iter_mut().zip(row).take(counted) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = columns.iter().map(|(h, _)| (*h).to_owned()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            let (width, right) = (widths[index], columns[index].1);
            if index + 1 == row.len() && (!right || row.len() < columns.len()) {
                line.push_str(cell);
            } else if right {
                let _ = write!(line, "{cell:>width$}  ");
            } else {
                let _ = write!(line, "{cell:<width$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
