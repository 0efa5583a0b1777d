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
//!
//! [`plan`](plan_engines) reads the command line into settings per entry; this file reads the
//! transcript and runs the engines; [`CompareReport`] holds the figures and renders the table.

use std::{
    io::Write as _,
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Result;
use clap::Args;

use crate::{
    cli::{
        read_failure, replay_options, resolve_context_length, stdout::host_stdout, ReadingArgs,
        TranscriptWarnings,
    },
    config::Settings,
    formats::{
        open_transcript_from, open_transcript_with, Format, ReadOptions, TranscriptError, TranscriptMeta,
        TranscriptStream,
    },
    report::{warn_user, Sourced},
    resolution::{resolve_engine_for, Registry},
    runner::{replay_stream, FactAccounting, ReplayOptions, Watchers},
    tokens::TokenCounter,
};

mod plan;
mod report;

pub use plan::{
    merge_block, parse_engine_choice, parse_override, plan_engines, CompareError, EngineChoice, Override,
    PlannedEngine,
};
pub use report::{summarise_outcome, CompareReport, EngineFigures, EngineRow, RetentionSummary, RowResult};

/// `ctxhost compare`'s arguments.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The transcript file (`-`: the standard input).
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
    /// How to read the transcript: which session, what to do with a malformed record.
    #[command(flatten)]
    pub reading: ReadingArgs,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit with a failure (after the table) when any engine let the context the model would
    /// receive go over the usable window.
    #[arg(long)]
    pub fail_over_window: bool,
}

/// What a first pass over the transcript learns, before any engine runs: that it reads to the
/// end, how long it is, and what it records about its session.
#[derive(Clone, Debug)]
pub struct TranscriptSurvey {
    /// The file.
    pub path: PathBuf,
    /// Its format, detected or forced.
    pub format: Format,
    /// Its messages.
    pub messages: usize,
    /// All of them counted: the final context had nothing been compacted.
    pub uncompacted_tokens: u64,
    /// What it records about its session.
    pub meta: TranscriptMeta,
    /// How it was read, to read it again the same way for each engine (its format now known).
    pub options: ReadOptions,
    /// The whole file, when it is a pipe or a FIFO: read once, it cannot be read again for the
    /// rows.
    pub held: Option<Arc<[u8]>>,
}

/// Reads the transcript at `path` once, as a stream, counting its messages and their tokens.
pub fn survey_transcript(
    path: &Path,
    options: &ReadOptions,
    counter: TokenCounter,
) -> Result<TranscriptSurvey, TranscriptError> {
    let held = hold_if_not_a_file(path)?;
    let mut stream = open_survey_transcript(path, options, held.as_ref())?;
    let (mut messages, mut uncompacted_tokens) = (0, 0);
    for message in stream.by_ref() {
        messages += 1;
        uncompacted_tokens += counter.count_message(&message?);
    }
    Ok(TranscriptSurvey {
        path: stream.path().to_owned(),
        format: stream.format(),
        messages,
        uncompacted_tokens,
        options: ReadOptions {
            format: Some(stream.format()),
            ..options.clone()
        },
        meta: stream.into_meta(),
        held,
    })
}

/// The whole of the file at `path` when it is not a regular file (a pipe, a FIFO): each engine's
/// row reads the transcript anew, and such a file gives its bytes once.
fn hold_if_not_a_file(path: &Path) -> Result<Option<Arc<[u8]>>, TranscriptError> {
    if crate::formats::is_stdin(path) {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .map_err(|source| TranscriptError::read(path, source))?;
        return Ok(Some(bytes.into()));
    }
    let metadata = std::fs::metadata(path).map_err(|source| TranscriptError::read(path, source))?;
    if metadata.is_file() || metadata.is_dir() {
        // A directory is refused by the reader, with its own message.
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(|source| TranscriptError::read(path, source))?;
    Ok(Some(bytes.into()))
}

/// The transcript at `path` as a stream: from the bytes held, when the file could be read once.
fn open_survey_transcript(
    path: &Path,
    options: &ReadOptions,
    held: Option<&Arc<[u8]>>,
) -> Result<TranscriptStream, TranscriptError> {
    match held {
        Some(bytes) => {
            let total = bytes.len() as u64;
            open_transcript_from(path, std::io::Cursor::new(Arc::clone(bytes)), total, options)
        }
        None => open_transcript_with(path, options),
    }
}

/// Replays the surveyed transcript through each planned engine, each a fresh instance reading
/// the file anew as a stream (so that no more than one live context is held), one row each.
pub fn compare_engines(
    planned: Vec<PlannedEngine>,
    survey: &TranscriptSurvey,
    context_length: Sourced<u64>,
    options: &ReplayOptions,
) -> CompareReport {
    let engines = planned
        .into_iter()
        .map(|plan| {
            let result = match &plan.settings {
                Err(reason) => RowResult::InvalidConfig {
                    reason: reason.clone(),
                },
                Ok(settings) => run_one(&plan.choice, settings, survey, options),
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
        transcript: survey.path.display().to_string(),
        format: survey.format.to_string(),
        messages: survey.messages,
        transcript_warnings: survey.meta.warnings.clone(),
        context_length,
        window: options.model.window(),
        token_counter: options.token_counter.name().to_owned(),
        uncompacted_tokens: survey.uncompacted_tokens,
        engines,
    }
}

fn run_one(
    choice: &EngineChoice,
    settings: &Settings,
    survey: &TranscriptSurvey,
    options: &ReplayOptions,
) -> RowResult {
    let resolution = resolve_engine_for(&choice.engine, settings, &Registry::default(), &options.model);
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
    // Rows replay one after another: a warning met during one (the window overrun, an engine's
    // own) is labelled `compare="<row>"`, or nothing would say which engine it came from.
    let _row = tracing::warn_span!("row", compare = ?choice.label).entered();
    // The replay contains engine faults itself; this only keeps a bug of the host's, met with one
    // engine, from taking the other rows with it.
    let replayed = catch_unwind(AssertUnwindSafe(|| {
        let stream = open_survey_transcript(&survey.path, &survey.options, survey.held.as_ref())?;
        replay_stream(&mut engine, stream, options, &[], Watchers::default())
    }));
    match replayed {
        // The compressor stood in for it: its figures are not the engine's.
        Ok(Ok(_)) if engine.detached().is_some() => RowResult::Detached {
            reason: engine.detached().unwrap_or_default().to_owned(),
        },
        Ok(Ok(outcome)) => RowResult::Ran(Box::new(summarise_outcome(
            &outcome,
            engine.origin().into(),
            survey.uncompacted_tokens,
        ))),
        // The survey read the whole file; it changed since.
        Ok(Err(error)) => RowResult::Failed {
            reason: error.to_string(),
        },
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
    if !settings.observers.is_empty() {
        warn_user(&format!(
            "`context.observers` ({}) are not attached: each row of `compare` measures its engine alone",
            settings.observers.join(", ")
        ));
    }
    let counter = TokenCounter::new(settings.tokenizer);
    let options = args.reading.options(args.format);
    let survey = survey_transcript(&args.transcript, &options, counter)
        .map_err(|error| anyhow::anyhow!(read_failure(&error, &args.reading)))?;
    TranscriptWarnings::default().show_new(&survey.path, &survey.meta);
    let context_length = resolve_context_length(args.context_length, settings, &survey.meta);
    // Retention is one of the columns compared.
    let options = ReplayOptions {
        facts: FactAccounting::Measure,
        ..replay_options(settings, &survey.path, &survey.meta, context_length.value)
    };
    let report = compare_engines(planned, &survey, context_length, &options);
    if args.json {
        writeln!(host_stdout(), "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(host_stdout(), "{}", report.render_text())?;
    }
    let over: Vec<&str> = report
        .engines
        .iter()
        .filter(|row| matches!(&row.result, RowResult::Ran(figures) if figures.over_window.is_some()))
        .map(|row| row.label.as_str())
        .collect();
    if args.fail_over_window && !over.is_empty() {
        anyhow::bail!(
            "--fail-over-window: the context went over the {}-token window with {}",
            ctxhost_engine_kit::stand_in::group_thousands(report.window as usize),
            over.iter()
                .map(|label| format!("`{label}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
