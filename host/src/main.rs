//! The `ctxhost` binary: parse the command line, set up logging, run, print one line on failure.

use std::{
    io::{IsTerminal, Write as _},
    process::ExitCode,
};

use clap::Parser;
use ctxhost::cli::{run_cli, Cli};
use mimalloc::MiMalloc;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::{
    fmt::{
        format::{FormatEvent, FormatFields, Writer},
        FmtContext, FormattedFields,
    },
    registry::LookupSpan,
    EnvFilter,
};

// The replay allocates a string per message field on one thread and frees many of them on
// another (observers, the freeing of a replaced context): mimalloc's thread-local heaps take
// such frees without the lock glibc's arenas wait on.
#[global_allocator]
static ALLOCATOR: MiMalloc = MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    init_logging(cli.verbose);
    match run_cli(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Not `eprintln!`, which panics when stderr is a closed pipe (`2>&1 | head`): the
            // exit status still tells.
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// A command line clap refused, said on one line as every other error is (clap's own takes
/// three to five, with the usage); help and version are printed as clap prints them.
fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        // 0 for --help and --version; 2 for help shown because a command is missing.
        return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    }
    let text = error.render().to_string();
    // Paragraphs: the message, a tip (a similar name), then the usage and the pointer to --help.
    let line = text
        .split("\n\n")
        .filter(|paragraph| {
            !paragraph.starts_with("Usage:") && !paragraph.starts_with("For more information")
        })
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|paragraph| !paragraph.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let _ = writeln!(std::io::stderr(), "{line} (see --help)");
    ExitCode::from(2)
}

/// The error and its causes on one line, each cause once: an error whose message already quotes
/// its cause (as `path: cannot read: <why>` does) is not followed by that cause again.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Its default reports a failed write with `eprintln!`, which panics when stderr is a
        // closed pipe: a log line nobody can read is dropped.
        .log_internal_errors(false)
        .with_ansi(std::io::stderr().is_terminal())
        .event_format(OneLine)
        .init();
}

/// Log lines as the rest of the output speaks: `warning: …`, `error: …`, `info: …`, with the
/// event's fields and its spans' after its message, and no timestamp; a plugin's line as
/// `warning: engine \`<name>\`: …`.
struct OneLine;

impl<S, N> FormatEvent<S, N> for OneLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        // The spans around the event: `serve`'s session a line is about leads it, as the host's
        // own lines about a session read (`session s2: …`); any other's fields follow the
        // message (`compare="<row>"` names the row being replayed).
        let mut trailing = String::new();
        for span in ctx.event_scope().into_iter().flat_map(|scope| scope.from_root()) {
            let extensions = span.extensions();
            let Some(fields) = extensions.get::<FormattedFields<N>>() else {
                continue;
            };
            match fields.strip_prefix(SESSION_FIELD) {
                Some(id) if span.name() == SESSION_SPAN => write!(writer, "session {id}: ")?,
                _ if fields.is_empty() => {}
                _ => trailing.push_str(&format!(" {fields}")),
            }
        }
        if event.metadata().target() == "engine" {
            // A plugin's own log line: its engine named the way the host's warnings name it, and
            // the Rust module it came from only when asked for detail (`-vv`).
            let mut fields = PluginFields::default();
            event.record(&mut fields);
            write!(writer, "engine `{}`: {}", fields.engine, fields.message)?;
            let detailed = tracing::level_filters::LevelFilter::current() >= Level::DEBUG;
            if detailed && !fields.source.is_empty() {
                write!(writer, " (from {})", fields.source)?;
            }
        } else {
            ctx.field_format().format_fields(writer.by_ref(), event)?;
        }
        writeln!(writer, "{trailing}")
    }
}

/// The span `serve` enters for a session's work ([`ctxhost::serve::SESSION_SPAN`]), and how its
/// one field reads once formatted.
const SESSION_SPAN: &str = ctxhost::serve::SESSION_SPAN;
const SESSION_FIELD: &str = "id=";

/// The fields the host gives a plugin's log line (`services.rs`).
#[derive(Default)]
struct PluginFields {
    engine: String,
    source: String,
    message: String,
}

impl tracing::field::Visit for PluginFields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "engine" => self.engine = value.to_owned(),
            "source" => self.source = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "engine" | "source" => self.record_str(field, &format!("{value:?}")),
            _ => {}
        }
    }
}
