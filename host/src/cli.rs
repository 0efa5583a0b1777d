//! The command line: argument definitions and what each command does.
//!
//! The replaying commands (`run`, `compress`, `status`, `tool`) live in [`run`].

mod run;
mod serve;
pub(crate) mod stdout;

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context as _, Result};
use clap::{Args, Parser, Subcommand};
use ctxhost_engine_abi::ModelInfo;
use ctxhost_engine_kit::stand_in::group_thousands;
use serde_json::Value;

use self::stdout::host_stdout;
use crate::{
    config::Settings,
    discovery::{discover_plugins, find_plugin},
    engine::EngineOrigin,
    formats::{BadRecords, Format, ReadOptions, TranscriptMeta},
    loading::open_engine_library,
    output::{
        api_fields::OutFields,
        prompt_cache::{CacheShape, CacheTtl},
    },
    report::{warn_user, FigureSources, RunReport, Sourced},
    resolution::load_plugin,
    runner::{FactAccounting, ReplayOptions, ReplayOutcome, ScriptedCommand},
    tokens::TokenCounter,
};

/// The window assumed when neither flag, config nor transcript gives one.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 128_000;

/// Loads context engines from plugin folders and replays agent transcripts through them.
#[derive(Debug, Parser)]
#[command(name = "ctxhost", version, about)]
pub struct Cli {
    /// The config file [default: ./config.yaml when it exists].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The plugins directory (holding context_engine/<name>/) [default: plugins/ next to the config file].
    #[arg(long, global = true, value_name = "DIR")]
    pub plugins_dir: Option<PathBuf>,

    /// Where plugin engines run, overriding `context.isolation`: in the host's process, or each
    /// in a child process of its own that cannot take the host down [default: in-process].
    #[arg(long, global = true, value_enum, value_name = "WHERE")]
    pub isolation: Option<crate::config::Isolation>,

    /// More detail on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a transcript through the engine, as an agent loop would.
    Run(RunArgs),
    /// Run one manual compaction over a whole transcript, like `/compress [focus]`.
    // One compaction of the whole transcript: no command runs between its messages.
    #[command(mut_arg("at", |arg| arg.hide(true)))]
    Compress {
        /// What the summary should spend its budget on.
        #[arg(long)]
        focus: Option<String>,
        /// The transcript and the options `run` takes.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Replay a transcript, then print what the engine's `get_status` reports (JSON).
    Status(RunArgs),
    /// Replay a transcript, then call one of the engine's tools against the final context and
    /// print its answer (JSON).
    Tool {
        /// The transcript and the options `run` takes.
        #[command(flatten)]
        run: RunArgs,
        /// The tool's name (one the engine offers in `get_tool_schemas`).
        name: String,
        /// Its arguments: a JSON object.
        #[arg(value_name = "JSON-ARGS", value_parser = parse_json_object)]
        arguments: Value,
    },
    /// Inspect plugin engines.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Replay one transcript through several engines and compare them in one table.
    Compare(crate::compare::CompareArgs),
    /// Serve engines to an agent in any language: JSON-RPC 2.0, one message a line, on stdin and
    /// stdout (logs on stderr). The README's "From any other language" is the reference.
    Serve(ServeArgs),
}

/// `serve`'s own flags: the limits a host sets on the child it runs one engine in.
#[derive(Debug, Default, Args)]
pub struct ServeArgs {
    /// Limit this process's address space to MiB (RLIMIT_AS), before any library is opened.
    #[arg(long, value_name = "MIB", hide = true)]
    pub limit_address_space_mb: Option<u64>,
    /// Limit this process's CPU time to seconds (RLIMIT_CPU), before any library is opened.
    #[arg(long, value_name = "SECONDS", hide = true)]
    pub limit_cpu_seconds: Option<u64>,
    /// The host this server runs one engine for: the server ends when that process does.
    #[arg(long, value_name = "PID", hide = true)]
    pub parent_pid: Option<u32>,
}

/// Arguments shared by `run` and `compress`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The transcript file (`-`: the standard input).
    pub transcript: PathBuf,
    /// The engine to run, overriding `context.engine`.
    #[arg(long)]
    pub engine: Option<String>,
    /// An engine that watches the session without changing its context (LCM recording every
    /// message, telemetry), added to `context.observers`. Repeatable.
    #[arg(long = "observer", value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub observers: Vec<String>,
    /// The model's window in tokens, overriding config and transcript.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub context_length: Option<u64>,
    /// Read the transcript as this format instead of detecting it.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// How to read the transcript: which session, what to do with a malformed record.
    #[command(flatten)]
    pub reading: ReadingArgs,
    /// Write the final context (OpenAI JSON) here, atomically; `-` writes it on stdout, and the
    /// report on stderr.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the report as JSON instead of words.
    #[arg(long)]
    pub json: bool,
    /// Write the event log here (JSON lines, one event a line), atomically.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Before transcript message N (0-based), run a command as typed in Hermes:
    /// N:/compress[:focus], N:/new, N:/reset or N:/engine:NAME. Repeatable.
    #[arg(long = "at", value_name = "N:COMMAND")]
    pub at: Vec<ScriptedCommand>,
    /// Which fields --out keeps: `all` (every field the transcript and the engine gave), or `api`
    /// (only what the chat completions API takes, so the file can be sent as `messages`).
    #[arg(
        long,
        value_enum,
        value_name = "FIELDS",
        requires = "out",
        default_value = "all"
    )]
    pub out_fields: OutFields,
    /// Write --out shaped for Anthropic prompt caching (markers on the system message and the
    /// last three non-system messages).
    #[arg(long, value_enum, value_name = "SHAPE", requires = "out")]
    pub cache_shape: Option<CacheShape>,
    /// How long the cache markers of --cache-shape last [default: 5m].
    #[arg(long, value_enum, value_name = "TTL", requires = "cache_shape")]
    pub cache_ttl: Option<CacheTtl>,
    /// Exit with a failure (after the report and outputs) when the context the model would
    /// receive ever went over the usable window.
    #[arg(long)]
    pub fail_over_window: bool,
    /// Measure fact retention of every compaction (identifiers of the compacted messages still
    /// present verbatim); analysis that costs more than the compaction on long transcripts.
    #[arg(long)]
    pub facts: bool,
}

impl RunArgs {
    /// Whether `--out -` asks for the final context on stdout.
    pub fn out_is_stdout(&self) -> bool {
        self.out.as_deref() == Some(Path::new("-"))
    }
}

/// The flags that say how a transcript is read, shared by every command that reads one.
#[derive(Debug, Default, Args)]
pub struct ReadingArgs {
    /// For a file holding several sessions (a Hermes export): the one to read, by its id or the
    /// start of it [default: the first, with a warning listing the others].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Leave out a malformed record (one warning each, counted in the report) instead of
    /// stopping there.
    #[arg(long)]
    pub skip_bad_records: bool,
}

impl ReadingArgs {
    /// The read options, with `format` forced when given.
    pub fn options(&self, format: Option<Format>) -> ReadOptions {
        ReadOptions {
            format,
            session: self.session.clone(),
            bad_records: if self.skip_bad_records {
                BadRecords::Skip
            } else {
                BadRecords::Stop
            },
        }
    }
}

/// Shows a transcript's warnings as `warning:` lines, each once, as the stream finds them.
#[derive(Debug, Default)]
pub(crate) struct TranscriptWarnings {
    shown: usize,
}

impl TranscriptWarnings {
    /// Shows the warnings of `meta` not shown yet.
    pub(crate) fn show_new(&mut self, path: &Path, meta: &TranscriptMeta) {
        for warning in meta.warnings.iter().skip(self.shown) {
            crate::report::warn_user(&format!("{}: {warning}", path.display()));
        }
        self.shown = self.shown.max(meta.warnings.len());
    }
}

/// The line a failed read ends with: the error, and how to go on past a malformed record when
/// that is possible.
pub(crate) fn read_failure(error: &crate::formats::TranscriptError, reading: &ReadingArgs) -> String {
    match error {
        crate::formats::TranscriptError::Malformed { skippable: true, .. } if !reading.skip_bad_records => {
            format!("{error} (pass --skip-bad-records to leave such records out and go on)")
        }
        _ => error.to_string(),
    }
}

/// A tool's arguments on the command line: a JSON object.
fn parse_json_object(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!("expected a JSON object, got {other}")),
        Err(error) => Err(format!("not JSON: {error}")),
    }
}

/// `plugins` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List every plugin folder with its status; opens no library.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Open one plugin's library and report what loading found.
    Check {
        /// The plugin's name.
        name: String,
    },
}

/// Runs the parsed command line.
pub fn run_cli(cli: Cli) -> Result<()> {
    // Before any plugin is loaded: what a plugin prints must not reach a program reading stdout.
    if let Err(error) = stdout::keep_for_the_host() {
        tracing::debug!("stdout is shared with plugins: {error}");
    }
    // An isolated engine's child reads its host's config: the host said its warnings already.
    let child = matches!(&cli.command, Command::Serve(args) if args.parent_pid.is_some());
    let mut settings = load_settings(cli.config.as_deref(), cli.plugins_dir.as_deref(), !child)?;
    if let Some(isolation) = cli.isolation {
        settings.isolation = isolation;
    }
    match cli.command {
        Command::Run(args) => run::run_transcript(&settings, &args, run::Mode::Replay),
        Command::Compress { focus, run } => {
            run::run_transcript(&settings, &run, run::Mode::Compress { focus })
        }
        Command::Status(args) => run::run_transcript(&settings, &args, run::Mode::Status),
        Command::Tool { run, name, arguments } => {
            run::run_transcript(&settings, &run, run::Mode::Tool { name, arguments })
        }
        Command::Plugins(PluginsCommand::List { json }) => list_plugins(&settings, json),
        Command::Plugins(PluginsCommand::Check { name }) => check_one_plugin(&settings, &name),
        Command::Compare(args) => crate::compare::run_compare(&settings, &args),
        Command::Serve(args) => {
            let overrides = crate::serve::Overrides {
                plugins_dir: cli.plugins_dir.clone(),
                isolation: cli.isolation,
                model_from_parent: args.parent_pid.is_some(),
            };
            serve::serve_stdio(&settings, &args, overrides)
        }
    }
}

fn load_settings(config: Option<&Path>, plugins_dir: Option<&Path>, say_warnings: bool) -> Result<Settings> {
    let mut settings = match config {
        Some(path) => Settings::load(path)?,
        None if Path::new("config.yaml").is_file() => Settings::load(Path::new("config.yaml"))?,
        None => Settings::defaults(Path::new(".")),
    };
    if let Some(dir) = plugins_dir {
        settings.plugins_dir = dir.to_owned();
    }
    if say_warnings {
        for warning in &settings.warnings {
            warn_user(warning);
        }
    }
    Ok(settings)
}

/// The window: the flag, else `model.context_length`, else the transcript's, else the default;
/// with where it came from. `run` and `compare` both use it.
pub(crate) fn resolve_context_length(
    flag: Option<u64>,
    settings: &Settings,
    meta: &TranscriptMeta,
) -> Sourced<u64> {
    let sourced = |value, source: &str| Sourced {
        value,
        source: source.to_owned(),
    };
    if let Some(length) = flag {
        return sourced(length, "--context-length");
    }
    if let Some(length) = settings.model.context_length {
        let file = settings
            .source
            .as_ref()
            .map_or("config".to_owned(), |p| p.display().to_string());
        return sourced(length, &format!("model.context_length in {file}"));
    }
    if let Some(length) = meta.context_length {
        return sourced(length, "the transcript");
    }
    sourced(DEFAULT_CONTEXT_LENGTH, "default; set model.context_length")
}

/// The session a replay drives the engine through (`run` and `compare`).
pub(crate) fn replay_options(
    settings: &Settings,
    path: &Path,
    meta: &TranscriptMeta,
    context_length: u64,
) -> ReplayOptions {
    let model = settings
        .model
        .default
        .clone()
        .or_else(|| meta.model.clone())
        .unwrap_or_default();
    // The config checks it against model.context_length; a window from --context-length or the
    // transcript can still leave it no room, and then it is not reserved, with a word.
    let max_tokens = settings.model.max_tokens.filter(|&reserved| {
        let fits = reserved < context_length;
        if !fits {
            warn_user(&format!(
                "model.max_tokens ({}) leaves nothing of the {}-token window; it is not reserved",
                group_thousands(reserved as usize),
                group_thousands(context_length as usize)
            ));
        }
        fits
    });
    let session_id = meta
        .session_id
        .clone()
        .unwrap_or_else(|| session_id_of_file(path));
    ReplayOptions {
        session_id,
        model: ModelInfo {
            model,
            context_length,
            max_tokens,
            ..ModelInfo::default()
        },
        token_counter: TokenCounter::new(settings.tokenizer),
        facts: FactAccounting::Skip,
    }
}

/// The session id of a transcript that records none: its file name, and a hash of where it is,
/// so that two files named alike (`a/chat.jsonl`, `b/chat.jsonl`, or `terraform.openai.json`
/// beside `terraform.openai.jsonl`) are two sessions of one store, and the same file is always
/// the same one.
fn session_id_of_file(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let stem = path
        .file_stem()
        .map_or("session".to_owned(), |stem| stem.to_string_lossy().into_owned());
    let full = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let digest = Sha256::digest(full.as_os_str().as_encoded_bytes());
    let short: String = digest[..4].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{stem}-{short}")
}

fn build_report(
    (engine, origin): &(String, EngineOrigin),
    (path, format, meta): (&Path, Format, &TranscriptMeta),
    fallback: Option<String>,
    context_length: Sourced<u64>,
    options: &ReplayOptions,
    outcome: ReplayOutcome,
    args: &RunArgs,
) -> RunReport {
    let threshold_tokens = outcome.counters.map_or(0, |counters| counters.threshold_tokens);
    let last_engine = outcome
        .engine_spans
        .last()
        .map_or(engine.as_str(), |span| &span.engine);
    let sources = FigureSources::new(&context_length.source, options.token_counter.name(), last_engine);
    RunReport {
        transcript: path.display().to_string(),
        format: format.to_string(),
        transcript_warnings: meta.warnings.clone(),
        bad_records_skipped: meta.bad_records_skipped,
        records_left_out: meta.skipped.clone(),
        recorded_compactions: meta
            .compactions
            .iter()
            .map(|c| crate::report::RecordedCompactionAt {
                line: c.line,
                messages_before: c.messages_before,
            })
            .collect(),
        pairing_repairs: meta.pairing_repairs,
        engine: engine.clone(),
        engine_source: origin.into(),
        fallback,
        context_length,
        window: options.model.window(),
        threshold_tokens,
        token_counter: options.token_counter.name().to_owned(),
        outcome,
        output: args.out.as_ref().map(|p| {
            if args.out_is_stdout() {
                "stdout".to_owned()
            } else {
                p.display().to_string()
            }
        }),
        events: args.events.as_ref().map(|p| p.display().to_string()),
        sources,
    }
}

fn list_plugins(settings: &Settings, json: bool) -> Result<()> {
    let folders = discover_plugins(&settings.plugins_dir)?;
    if json {
        let rows: Vec<_> = folders
            .iter()
            .map(|folder| {
                let manifest = folder.manifest.as_ref();
                let status = listed_status(folder);
                serde_json::json!({
                    "name": folder.name(),
                    "folder": folder.dir.display().to_string(),
                    "version": manifest.map(|m| m.version.clone()),
                    "description": manifest.map(|m| m.description.clone()),
                    "abi_version": manifest.map(|m| m.abi_version),
                    "library": folder.library.as_ref().map(|l| l.display().to_string()),
                    "usable": status.is_ok(),
                    "problem": status.err(),
                })
            })
            .collect();
        writeln!(host_stdout(), "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let root = settings.plugins_dir.join(crate::discovery::CONTEXT_ENGINE_DIR);
    if folders.is_empty() {
        writeln!(host_stdout(), "no plugin folders in {}", root.display())?;
        return Ok(());
    }
    writeln!(host_stdout(), "plugins in {}", root.display())?;
    let color = stdout::is_terminal();
    for folder in &folders {
        let manifest = folder.manifest.as_ref();
        let library = folder
            .library
            .as_ref()
            .and_then(|l| l.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let status = match listed_status(folder) {
            Ok(()) if color => "\x1b[32musable\x1b[0m".to_owned(),
            Ok(()) => "usable".to_owned(),
            Err(problem) if color => format!("\x1b[31munusable\x1b[0m: {problem}"),
            Err(problem) => format!("unusable: {problem}"),
        };
        writeln!(
            host_stdout(),
            "  {:<16} {:<9} abi {:<3} {:<40} {status}",
            folder.name(),
            manifest.map_or("-", |m| m.version.as_str()),
            manifest.map_or("-".to_owned(), |m| m.abi_version.to_string()),
            library.unwrap_or_else(|| "-".to_owned()),
        )?;
        if let Some(manifest) = manifest {
            writeln!(host_stdout(), "  {:<16} {}", "", manifest.description)?;
        }
    }
    Ok(())
}

/// A folder's status as listed: what its manifest says, and whether its library is the one the
/// manifest's checksum names (read, never opened), which `run` would otherwise be first to find.
fn listed_status(folder: &crate::discovery::PluginFolder) -> Result<(), String> {
    folder.status.as_ref().map_err(ToString::to_string)?;
    let checksum = folder.manifest.as_ref().and_then(|m| m.checksum.as_deref());
    match (folder.library.as_deref(), checksum) {
        (Some(library), Some(checksum)) => {
            crate::loading::verify_checksum(library, checksum).map_err(|error| match error {
                crate::loading::LoadError::Checksum { expected, found, .. } => {
                    format!("checksum mismatch: plugin.yaml says {expected}, the file is {found}")
                }
                other => other.to_string(),
            })
        }
        _ => Ok(()),
    }
}

fn check_one_plugin(settings: &Settings, name: &str) -> Result<()> {
    let folders = discover_plugins(&settings.plugins_dir)?;
    if name == crate::config::DEFAULT_ENGINE && !folders.iter().any(|folder| folder.folder_name == name) {
        bail!("`{name}` is the built-in engine, linked into the host: there is no plugin to check");
    }
    let folder = find_plugin(&folders, name, &settings.plugins_dir)?;
    let library = folder.library.as_deref().context("the folder names no library")?;
    // Before the library is opened, as `run` does: opening it runs its code.
    if let Some(checksum) = folder
        .manifest
        .as_ref()
        .and_then(|manifest| manifest.checksum.as_deref())
    {
        crate::loading::verify_checksum(library, checksum)?;
    }
    let opened = open_engine_library(library)?;
    writeln!(host_stdout(), "plugin `{name}`: {}", library.display())?;
    writeln!(
        host_stdout(),
        "  opened in {:.2} ms; engine `{}`, engine ABI version {} (this host runs {})",
        opened.load_time.as_secs_f64() * 1e3,
        opened.engine_name,
        opened.abi_version,
        crate::loading::supported_versions()
    )?;
    let mut engine = load_plugin(folder, settings).with_context(|| format!("plugin `{name}`"))?;
    let tools = engine
        .get_tool_schemas()
        .context("reading the engine's tool schemas")?;
    // Read as a session reads them: what a session would warn of, this says too.
    let offered = crate::tools::offered_tools(engine.name(), tools);
    let names: Vec<&str> = offered.names().collect();
    let block = if settings.engine_block(name).is_null() {
        "with no config block"
    } else {
        "with its config block"
    };
    writeln!(
        host_stdout(),
        "  created {block}; tools: {}",
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    )?;
    for warning in &offered.warnings {
        writeln!(host_stdout(), "  warning: {warning}")?;
    }
    writeln!(
        host_stdout(),
        "  status: {}",
        engine.get_status().context("reading the engine's status")?
    )?;
    writeln!(host_stdout(), "plugin `{name}` loads")?;
    Ok(())
}
