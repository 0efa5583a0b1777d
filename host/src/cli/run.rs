//! `run`, `compress`, `status` and `tool`: a transcript replayed through the engine, and what is
//! written of it.
//!
//! - The transcript is streamed through the replay (`compress` alone reads it whole: its one
//!   compaction takes all of it). A record that cannot be read ends the run with that error.
//! - Outputs are all-or-nothing. The event log is written as the run goes into a temporary file
//!   beside its target; the final context is written once the run is over. Only then, with
//!   `--out` in place, is the event log renamed over its target: a run that fails leaves neither
//!   file (an older file of that name stays as it was).
//! - A progress bar shows on stderr when stderr is a terminal and the transcript is long.

use std::{
    cell::{Cell, RefCell},
    io::{IsTerminal, Write as _},
    rc::Rc,
    time::Duration,
};

use anyhow::{anyhow, bail, Context as _, Result};
use ctxhost_engine_kit::stand_in::group_thousands;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::{
    build_report, read_failure, replay_options, resolve_context_length, stdout::host_stdout, RunArgs,
    TranscriptWarnings,
};
use crate::{
    config::Settings,
    formats::{open_transcript_with, read_transcript_with},
    output::{
        api_fields::{keep_api_fields, OutFields},
        prompt_cache::{apply_cache_shape, CacheTtl},
        same_file, write_json_atomically, EventLog,
    },
    report::{describe_overrun, warn_user},
    resolution::{resolve_engine_for, try_resolve_engine, Registry},
    runner::{
        finish_with, observer_names,
        tools::{recorded_tool_names, tools_listed_too_late},
        Fact, FactAccounting, Observers, ReplayOutcome, Replayer, Subscriber, Tally, Trigger, Watchers,
    },
};

/// A transcript at least this long (in bytes) gets a progress bar, when stderr is a terminal.
pub const PROGRESS_BAR_BYTES: u64 = 1024 * 1024;

/// What a replaying command does with the replay.
#[derive(Clone, Debug)]
pub(super) enum Mode {
    /// `run`: the whole transcript, then the report.
    Replay,
    /// `compress`: one manual compaction over the whole transcript, then the report.
    Compress {
        /// Its focus.
        focus: Option<String>,
    },
    /// `status`: the whole transcript, then the engine's `get_status` as JSON.
    Status,
    /// `tool`: the whole transcript, then one engine tool's answer as JSON.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// Runs `mode` over `args.transcript`.
pub(super) fn run_transcript(settings: &Settings, args: &RunArgs, mode: Mode) -> Result<()> {
    if matches!(mode, Mode::Compress { .. }) && !args.at.is_empty() {
        bail!("--at scripts commands between messages; `compress` takes the whole transcript at once (use `run --at N:/compress`)");
    }
    refuse_the_transcript_as_output(args)?;
    if args.out_is_stdout() {
        match mode {
            Mode::Status | Mode::Tool { .. } => {
                bail!("--out -: this command prints its answer on stdout; name a file for the final context")
            }
            _ if args.json => {
                bail!("--out - writes the final context on stdout, where --json writes the report; name a file for one of them")
            }
            _ => {}
        }
    }
    // `compress` needs every message at once; the others stream them.
    let reading = args.reading.options(args.format);
    let failed = |error| anyhow!(read_failure(&error, &args.reading));
    let (mut stream, mut collected) = match mode {
        Mode::Compress { .. } => (
            None,
            Some(read_transcript_with(&args.transcript, &reading).map_err(failed)?),
        ),
        _ => {
            let stream = open_transcript_with(&args.transcript, &reading).map_err(failed)?;
            let reader = stream.read_ahead().with_context(|| {
                format!("{}: cannot start a thread to read it", args.transcript.display())
            })?;
            (Some(reader), None)
        }
    };
    let mut warnings = TranscriptWarnings::default();
    let (path, format, meta) = match (&stream, &collected) {
        (Some(stream), _) => (stream.path().to_owned(), stream.format(), stream.meta().clone()),
        (None, Some(transcript)) => (
            transcript.path.clone(),
            transcript.format,
            transcript.meta.clone(),
        ),
        (None, None) => unreachable!("one of them is open"),
    };
    warnings.show_new(&path, &meta);
    let name = args.engine.clone().unwrap_or_else(|| settings.engine.clone());
    let context_length = resolve_context_length(args.context_length, settings, &meta);
    let mut options = replay_options(settings, &path, &meta, context_length.value);
    let resolution = resolve_engine_for(&name, settings, &Registry::default(), &options.model);
    if let Some(fallback) = &resolution.fallback {
        warn_user(&fallback.warning());
    }
    let mut engine = resolution.engine;
    if args.facts {
        options.facts = FactAccounting::Measure;
    }
    // The report names the engine the session started with; `/engine` swaps show as its spans.
    let started_with = (engine.name().to_owned(), engine.origin().clone());
    let mut log = args.events.as_deref().map(EventLog::create).transpose()?;
    let tally = Rc::new(RefCell::new(Tally::default()));
    let bytes_read = Rc::new(Cell::new(0));
    let (observers, standby, observer_warnings) = attach_observers(settings, args, engine.name());
    // The agent's own tools, as far as the transcript listed them before its messages.
    let agent_tools = recorded_tool_names(&meta.extra);
    let mut watchers = Watchers {
        observers,
        standby,
        warnings: observer_warnings,
        agent_tools: agent_tools.clone(),
        ..Watchers::default()
    };
    watchers.subscribers.add(Rc::clone(&tally));
    if let Some(log) = &mut log {
        watchers.subscribers.add(log);
    }
    let bar = progress_bar(stream.as_ref().map_or(0, |stream| stream.bytes_total()));
    watchers.subscribers.add(Progress {
        bar: bar.clone(),
        bytes_read: Rc::clone(&bytes_read),
        compactions: 0,
    });
    let mut replayer = Replayer::start_with(&mut engine, &options, watchers)
        .with_script(&args.at)
        .with_engine_source(Box::new(|name: &str| {
            try_resolve_engine(name, settings, &Registry::default()).map_err(|error| error.to_string())
        }));
    if let Mode::Tool { name, .. } = &mode {
        let tools = replayer.tools();
        if !tools.iter().any(|tool| tool == name) {
            let offered = match tools.as_slice() {
                [] => "none".to_owned(),
                tools => tools.join(", "),
            };
            bail!("no engine of this session offers a tool `{name}` (the tools offered: {offered})");
        }
    }
    match (&mode, stream.as_mut(), collected.as_mut()) {
        (Mode::Compress { focus }, _, Some(transcript)) => {
            replayer.load(std::mem::take(&mut transcript.messages));
            replayer.compact(Trigger::Manual, focus.as_deref());
        }
        (_, Some(stream), _) => {
            let messages = std::iter::from_fn(|| {
                let next = stream.next();
                bytes_read.set(stream.bytes_read());
                warnings.show_new(stream.path(), stream.meta());
                next
            });
            let fed = replayer.feed_all(messages);
            if let Err(error) = fed {
                bar.finish_and_clear();
                let error = read_failure(&error, &args.reading);
                return Err(anyhow!("{error}; the replay stopped there{}", not_written(args)));
            }
        }
        _ => unreachable!("compress reads the whole transcript, the rest stream it"),
    }
    // An engine that fails answers `{"error": …}`, as an observer's failure does and as an agent
    // loop answers the model: printed, then the failure below.
    let answer = match &mode {
        Mode::Tool { name, arguments } => Some(
            replayer
                .call_tool(name, arguments)
                .unwrap_or_else(|error| serde_json::json!({ "error": error.to_string() })),
        ),
        _ => None,
    };
    let mut outcome = finish_with(replayer, &tally);
    bar.finish_and_clear();
    let meta = match stream {
        Some(stream) => stream.into_meta(),
        None => meta,
    };
    let late = tools_listed_too_late(
        &agent_tools,
        &recorded_tool_names(&meta.extra),
        &outcome.tool_dispatches,
    );
    for warning in late {
        let warning = format!("{}: {warning}", path.display());
        warn_user(&warning);
        outcome.warnings.push(warning);
    }
    write_outputs(args, log, &mut outcome)?;
    let overrun = outcome.over_window.clone();
    match mode {
        Mode::Replay | Mode::Compress { .. } => {
            let fallback = resolution
                .fallback
                .map(|f| format!("`{}` could not be used: {}", f.requested, f.reason))
                .or_else(|| engine.detached().map(str::to_owned));
            let report = build_report(
                &started_with,
                (&path, format, &meta),
                fallback,
                context_length,
                &options,
                outcome,
                args,
            );
            if args.json {
                writeln!(host_stdout(), "{}", serde_json::to_string_pretty(&report)?)?;
            } else if args.out_is_stdout() {
                // Stdout holds the final context, for the next program of a pipe.
                let _ = write!(std::io::stderr().lock(), "{}", report.render_text());
            } else {
                write!(host_stdout(), "{}", report.render_text())?;
            }
        }
        Mode::Status => {
            let status = outcome.status.ok_or_else(|| {
                let why = outcome.faults.last().map_or("no answer", |f| f.message.as_str());
                anyhow!("the engine's status could not be read: {why}")
            })?;
            writeln!(host_stdout(), "{}", serde_json::to_string_pretty(&status)?)?;
        }
        Mode::Tool { name, .. } => {
            let answer = answer.expect("a tool was called");
            writeln!(host_stdout(), "{}", serde_json::to_string_pretty(&answer)?)?;
            // The contract's tools answer a failure as `{"error": …}`: printed like any answer,
            // and a failure to a script that checks the exit status.
            if let Some(error) = answer.get("error") {
                let error = error.as_str().map_or_else(|| error.to_string(), str::to_owned);
                bail!("`{name}` answered with an error: {error}");
            }
        }
    }
    match overrun {
        Some(overrun) if args.fail_over_window => Err(anyhow!(
            "--fail-over-window: the context went over the {}-token window: {}",
            group_thousands(overrun.window as usize),
            describe_overrun(&overrun)
        )),
        _ => Ok(()),
    }
}

/// Writes the final context (shaped for prompt caching when asked) and publishes the event log:
/// the log is renamed over its target only once the context is in place.
fn write_outputs(args: &RunArgs, log: Option<EventLog>, outcome: &mut ReplayOutcome) -> Result<()> {
    let log = log.map(EventLog::finish).transpose()?;
    if let Some(out) = &args.out {
        if args.out_fields == OutFields::Api {
            let left_out = keep_api_fields(&mut outcome.context);
            if let Some(line) = left_out.describe() {
                // Content or messages lost, or arguments rewritten, change what the file says:
                // a warning. Fields alone are what the user asked to leave out: said at `-v`.
                if left_out.warrants_warning() {
                    warn_user(&line);
                } else {
                    tracing::info!("{line}");
                }
            }
        }
        if let Some(shape) = args.cache_shape {
            let ttl = args.cache_ttl.unwrap_or(CacheTtl::FiveMinutes);
            apply_cache_shape(&mut outcome.context, shape, ttl);
        }
        if args.out_is_stdout() {
            let mut stdout = host_stdout();
            serde_json::to_writer_pretty(&mut stdout, &outcome.context)?;
            writeln!(stdout)?;
        } else {
            write_json_atomically(out, &outcome.context).map_err(|error| match &args.events {
                Some(events) => anyhow!("{error}; so no event log was written to {}", events.display()),
                None => error.into(),
            })?;
        }
    }
    if let Some(log) = log {
        log.publish()?;
    }
    Ok(())
}

/// An output naming the transcript would replace it with what was made of it: refused before
/// anything is read or written.
fn refuse_the_transcript_as_output(args: &RunArgs) -> Result<()> {
    let out = args.out.as_ref().filter(|_| !args.out_is_stdout());
    for (flag, output) in [("--out", out), ("--events", args.events.as_ref())] {
        if let Some(output) = output
            .map(std::path::PathBuf::as_path)
            .filter(|o| same_file(o, &args.transcript))
        {
            bail!(
                "{}: {flag} names the transcript being read; nothing was written (name another file)",
                output.display()
            );
        }
    }
    // One would replace the other.
    if let (Some(out), Some(events)) = (out, &args.events) {
        if out == events || same_file(out, events) {
            bail!(
                "{}: --out and --events name the same file; nothing was written (name two files)",
                out.display()
            );
        }
    }
    Ok(())
}

/// What a failed run did not write, for its error line.
fn not_written(args: &RunArgs) -> String {
    let mut unwritten = Vec::new();
    if let Some(out) = &args.out {
        let out = if args.out_is_stdout() {
            "stdout".to_owned()
        } else {
            out.display().to_string()
        };
        unwritten.push(format!("the context so far was not written to {out}"));
    }
    if let Some(events) = &args.events {
        unwritten.push(format!("no event log was written to {}", events.display()));
    }
    if unwritten.is_empty() {
        String::new()
    } else {
        format!(": {}", unwritten.join(" and "))
    }
}

/// The observers of `context.observers` and `--observer`, each resolved like `context.engine`
/// but never replaced by the compressor: one that cannot be used is left out with one warning.
/// The active engine is not attached a second time: it is on standby, to stay on as an observer
/// if `/engine` swaps it out. Returns the observers, those on standby and the warnings.
fn attach_observers(
    settings: &Settings,
    args: &RunArgs,
    active: &str,
) -> (Observers, Vec<String>, Vec<String>) {
    let mut observers = Observers::with_timeout(settings.observer_timeout);
    let lists = [
        ("`context.observers`", settings.observers.as_slice()),
        ("`--observer`", args.observers.as_slice()),
    ];
    let mut warnings = Vec::new();
    let (names, standby) = observer_names(&lists, active, |warning: String| warnings.push(warning));
    for name in &names {
        let create = {
            let (name, settings) = (name.to_owned(), settings.clone());
            move || {
                try_resolve_engine(&name, &settings, &Registry::default()).map_err(|error| error.to_string())
            }
        };
        if let Err(reason) = observers.start(name, create) {
            warnings.push(format!(
                "observer `{name}` cannot be used: {reason}; the session goes on without it"
            ));
        }
    }
    (observers, standby, warnings)
}

/// The progress bar, as a subscriber: it moves with the bytes read at each model call and counts
/// the compactions.
struct Progress {
    bar: ProgressBar,
    bytes_read: Rc<Cell<u64>>,
    compactions: usize,
}

impl Subscriber for Progress {
    fn receive(&mut self, fact: &Fact) {
        match fact {
            Fact::ModelCall { .. } => self.bar.set_position(self.bytes_read.get()),
            Fact::Compaction(event) if event.applied => {
                self.compactions += 1;
                self.bar.set_message(format!("{} compactions", self.compactions));
            }
            _ => {}
        }
    }
}

/// A bar over the transcript's bytes when it is long and stderr is a terminal; hidden otherwise,
/// so tests and CI logs stay clean.
fn progress_bar(bytes_total: u64) -> ProgressBar {
    if bytes_total < PROGRESS_BAR_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(bytes_total);
    let style = ProgressStyle::with_template(
        "replaying {wide_bar} {binary_bytes}/{binary_total_bytes} {msg} ({eta} left)",
    )
    .expect("the template is valid");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
