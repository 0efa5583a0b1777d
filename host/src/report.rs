//! What the user reads: the run report, in words or as JSON, and the one warning channel.

use std::{fmt::Write, io::Write as _};

use ctxhost_engine_kit::stand_in::group_thousands;
use serde::Serialize;
use serde_json::Value;

use crate::{
    engine::EngineOrigin,
    runner::{CommandSource, CompactionRecord, Outcome, ReplayOutcome, WindowOverrun},
};

/// Prints a warning the user must see (a fallback, a refused result), once, on stderr.
///
/// Best effort: when stderr is a closed pipe (`2>&1 | head`) the warning is lost, and the run
/// goes on to write its outputs (`eprintln!` would panic there).
pub fn warn_user(message: &str) {
    tracing::debug!("warning shown to the user: {message}");
    let _ = writeln!(std::io::stderr(), "warning: {message}");
}

/// Where a figure came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    /// The figure.
    pub value: T,
    /// Where it came from (`--context-length`, `config.yaml`, the transcript, the default…).
    pub source: String,
}

/// Where the recording agent compacted, as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordedCompactionAt {
    /// The line of the record holding its summary.
    pub line: usize,
    /// How many messages of the transcript come before it.
    pub messages_before: usize,
}

/// Everything a run report shows.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The transcript.
    pub transcript: String,
    /// Its format.
    pub format: String,
    /// What is odd about the transcript itself (its own sequence problems…), as its reader found.
    pub transcript_warnings: Vec<String>,
    /// Malformed records left out (`--skip-bad-records`), each named in a warning.
    pub bad_records_skipped: u64,
    /// Records left out, not replayed as messages (a Claude Code subagent's sidechain,
    /// OpenHands's state changes, an attachment type not read…), by kind.
    pub records_left_out: std::collections::BTreeMap<String, u64>,
    /// Compactions the recording agent made: where each was (its record's line, the messages
    /// before it), without its summary, which is not replayed.
    pub recorded_compactions: Vec<RecordedCompactionAt>,
    /// Tool pairings the reader repaired (results dropped, stub results inserted, ids renamed),
    /// each named in a warning.
    pub pairing_repairs: u64,
    /// The engine that ran.
    pub engine: String,
    /// Where it came from: `built-in`, or the plugin's folder and library.
    pub engine_source: EngineSource,
    /// Set when the requested engine could not be used.
    pub fallback: Option<String>,
    /// The model's window.
    pub context_length: Sourced<u64>,
    /// The usable window (minus the output reservation).
    pub window: u64,
    /// The engine's threshold: its `threshold_tokens` counter after the run (set by
    /// `update_model`); after `/engine` swaps, the threshold of the engine in charge at the end.
    pub threshold_tokens: u64,
    /// What the host's token figures were counted with (`context.tokenizer`: `rough`,
    /// `o200k_base`, `cl100k_base`). Every figure of the report is its estimate, except the usage
    /// the transcript recorded, which was passed to the engine as is.
    pub token_counter: String,
    /// The replay.
    #[serde(flatten)]
    pub outcome: ReplayOutcome,
    /// Where the final context was written, if it was.
    pub output: Option<String>,
    /// Where the event log was written, if it was.
    pub events: Option<String>,
    /// Where each figure of the report came from.
    pub sources: FigureSources,
}

/// Where each figure of a report came from, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FigureSources {
    /// The window (`--context-length`, the config, the transcript, the default).
    pub context_length: String,
    /// The threshold.
    pub threshold_tokens: String,
    /// The usage given to `update_from_response`.
    pub usage: String,
    /// Usage the transcript recorded.
    pub usage_recorded: String,
    /// Usage the host estimated.
    pub usage_estimated: String,
    /// Usage recorded after a compaction changed the context, calibrated to the replayed one.
    pub usage_calibrated: String,
    /// Peak and final tokens, and every compaction's tokens.
    pub tokens: String,
}

impl FigureSources {
    /// The sources, for a run whose window came from `context_length_source`, whose tokens
    /// were counted with `token_counter`, and whose engine in charge at the end is `last_engine`
    /// (the one whose threshold is read, after `/engine` swaps too).
    pub fn new(context_length_source: &str, token_counter: &str, last_engine: &str) -> Self {
        Self {
            context_length: context_length_source.to_owned(),
            threshold_tokens: format!(
                "the threshold_tokens of `{last_engine}`, the engine in charge at the end, set by update_model from the window"
            ),
            usage: "per model call: recorded in the transcript when it has usage (calibrated to the replayed context once a compaction changed it), else estimated".to_owned(),
            usage_recorded: RECORDED_USAGE_NOTE.to_owned(),
            usage_estimated: format!("counted by the host with {token_counter} on the replayed context"),
            usage_calibrated: format!(
                "counted by the host with {token_counter} on the replayed context, calibrated by the usage the transcript recorded before the first compaction (recorded ≈ a × counted + b)"
            ),
            tokens: format!("counted by the host with {token_counter} on the replayed context"),
        }
    }
}

/// What recorded usage describes.
pub const RECORDED_USAGE_NOTE: &str =
    "recorded in the transcript: the original run's context, passed on while no compaction has changed it";

/// The engine's origin, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EngineSource {
    /// Linked into the host.
    BuiltIn,
    /// From a plugin folder.
    Plugin {
        /// The folder.
        folder: String,
        /// The library.
        library: String,
    },
    /// Registered by an embedding program.
    Registered,
}

impl From<&EngineOrigin> for EngineSource {
    fn from(origin: &EngineOrigin) -> Self {
        match origin {
            EngineOrigin::BuiltIn => Self::BuiltIn,
            EngineOrigin::Plugin { dir, library } => Self::Plugin {
                folder: format!("{}/", dir.display()),
                library: library
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            },
            EngineOrigin::Registered => Self::Registered,
        }
    }
}

impl RunReport {
    /// The report in words.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let tokens = |n: u64| group_thousands(n as usize);
        let source = match &self.engine_source {
            EngineSource::BuiltIn => "built-in".to_owned(),
            EngineSource::Plugin { folder, library } => format!("plugin {folder}{library}"),
            EngineSource::Registered => "registered by the embedding program".to_owned(),
        };
        let _ = writeln!(out, "transcript  {} ({})", self.transcript, self.format);
        if self.bad_records_skipped > 0 {
            let _ = writeln!(
                out,
                "            {} malformed records skipped (--skip-bad-records; each named in a warning)",
                self.bad_records_skipped
            );
        }
        if !self.records_left_out.is_empty() {
            let kinds: Vec<String> = self
                .records_left_out
                .iter()
                .map(|(kind, count)| format!("{count} {kind}"))
                .collect();
            let _ = writeln!(
                out,
                "            records left out, not replayed as messages: {}",
                kinds.join(", ")
            );
        }
        if !self.recorded_compactions.is_empty() {
            let at: Vec<String> = self
                .recorded_compactions
                .iter()
                .map(|c| format!("line {} (after {} messages)", c.line, c.messages_before))
                .collect();
            let _ = writeln!(
                out,
                "            {} compaction{} by the recording agent, its summary not replayed: {}",
                at.len(),
                if at.len() == 1 { "" } else { "s" },
                at.join(", ")
            );
        }
        if self.pairing_repairs > 0 {
            let _ = writeln!(
                out,
                "            {} tool pairing{} repaired (named in the warnings)",
                self.pairing_repairs,
                if self.pairing_repairs == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(out, "engine      {} ({source})", self.engine);
        if let Some(fallback) = &self.fallback {
            let _ = writeln!(out, "            fallback: {fallback}");
        }
        render_owners_and_observers(&mut out, &self.outcome);
        // After `/engine` swaps, the counter read at the end is the last engine's.
        let whose = match self.outcome.engine_spans.as_slice() {
            [_, .., last] => format!("`{}`'s, in charge at the end", last.engine),
            _ => "the engine's".to_owned(),
        };
        let _ = writeln!(
            out,
            "window      {} tokens ({}), usable {}; compaction threshold {} ({whose})",
            tokens(self.context_length.value),
            self.context_length.source,
            tokens(self.window),
            tokens(self.threshold_tokens),
        );
        let o = &self.outcome;
        let calibrated = if o.usage_calibrated > 0 {
            format!(", {} calibrated", o.usage_calibrated)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "replayed    {} messages, {} model calls (usage: {} recorded, {} estimated{calibrated})",
            o.messages_replayed, o.model_calls, o.usage_recorded, o.usage_estimated
        );
        if o.usage_calibrated > 0 {
            let _ = writeln!(
                out,
                "            recorded usage is passed on until a compaction changes the context; after it, the replayed context's count calibrated by the recorded calls before"
            );
        } else if o.usage_recorded > 0 {
            let _ = writeln!(
                out,
                "            recorded usage describes the original run's context, which no compaction changed"
            );
        }
        if o.usage_estimated > 0 {
            let _ = writeln!(
                out,
                "            estimated usage: the replayed context counted by the {} tokenizer (context.tokenizer)",
                self.token_counter
            );
        }
        render_tools_and_commands(&mut out, o);
        render_compactions(&mut out, &o.compactions, o.messages_replayed);
        let _ = writeln!(
            out,
            "tokens      peak {} of the {}-token window, final {} in {} messages (estimated, {})",
            tokens(o.peak_tokens),
            tokens(self.window),
            tokens(o.final_tokens),
            o.final_messages,
            self.token_counter
        );
        if o.peak_told_tokens > o.peak_tokens {
            let _ = writeln!(
                out,
                "            the engine was told prompts of up to {} tokens: the usage the transcript recorded, with the original agent's own system prompt and tool schemas",
                tokens(o.peak_told_tokens)
            );
        }
        if let Some(overrun) = &o.over_window {
            let _ = writeln!(out, "            OVER THE WINDOW: {}", describe_overrun(overrun));
        }
        let _ = writeln!(out, "engine time {:.2} ms", o.engine_time_ms);
        if !o.faults.is_empty() {
            let _ = writeln!(
                out,
                "errors      {} (each contained; the session went on)",
                o.faults.len()
            );
            for fault in o.faults.iter().take(10) {
                let at = match fault.at_message {
                    at if at >= o.messages_replayed => "at the end".to_owned(),
                    at => format!("at message {at}"),
                };
                let _ = writeln!(out, "  {at}: {}", fault.message);
            }
            if o.faults.len() > 10 {
                let _ = writeln!(out, "  … and {} more", o.faults.len() - 10);
            }
        }
        for warning in &o.warnings {
            let _ = writeln!(out, "warning     {warning}");
        }
        if let Some(output) = &self.output {
            let _ = writeln!(out, "output      {output}");
        }
        if let Some(events) = &self.events {
            let _ = writeln!(out, "events      {events}");
        }
        out
    }
}

/// Where the context went over the window, for the report and `--fail-over-window`'s error:
/// `2 model calls over it, first 10,020 tokens before message 4, and the final context (10,025
/// tokens)`, or `the final context (9,164 tokens); no model call was over it`.
pub fn describe_overrun(overrun: &WindowOverrun) -> String {
    let described = describe_overrun_calls(overrun);
    match overrun.with_overhead {
        0 => described,
        n => format!(
            "{described} ({n} of them over it only with the original agent's own system prompt and tool schemas, which the recorded usage counts)"
        ),
    }
}

fn describe_overrun_calls(overrun: &WindowOverrun) -> String {
    let tokens = |n: u64| group_thousands(n as usize);
    let Some(final_tokens) = overrun.final_tokens else {
        return format!(
            "{} over it, first {} tokens before message {}",
            model_calls(overrun.times),
            tokens(overrun.first_tokens),
            overrun.first_at_message
        );
    };
    if overrun.times == 0 {
        return format!(
            "the final context ({} tokens); no model call was over it",
            tokens(final_tokens)
        );
    }
    format!(
        "{} over it, first {} tokens before message {}, and the final context ({} tokens)",
        model_calls(overrun.times),
        tokens(overrun.first_tokens),
        overrun.first_at_message,
        tokens(final_tokens)
    )
}

fn model_calls(n: usize) -> String {
    format!("{n} model call{}", if n == 1 { "" } else { "s" })
}

/// Which engine owned which span (after `/engine` swaps), and what each observer received.
fn render_owners_and_observers(out: &mut String, outcome: &ReplayOutcome) {
    if outcome.engine_spans.len() > 1 {
        let spans: Vec<String> = outcome
            .engine_spans
            .iter()
            .map(|span| {
                let until = span
                    .until_message
                    .map_or_else(|| "the end".to_owned(), |at| at.to_string());
                format!("{} messages {}-{until}", span.engine, span.from_message)
            })
            .collect();
        let _ = writeln!(out, "owners      {}", spans.join("; "));
    }
    let mut label = "observers";
    for observer in &outcome.observers {
        let state = match &observer.detached {
            // Its observing instance failed as it stopped; the swap to it still went ahead.
            Some(reason) if observer.took_over => {
                format!("stopped observing to take over the context (its observing instance DETACHED as it stopped: {reason})")
            }
            Some(reason) => format!("DETACHED: {reason}"),
            None if observer.took_over => "stopped observing to take over the context".to_owned(),
            None if observer.stopped_for_refused_swap => {
                "stopped observing for a swap to it, which was refused; observed no more".to_owned()
            }
            None if observer.kept_observing_after_refused_swap => {
                "attached to the end (a swap to it was refused; it kept observing)".to_owned()
            }
            None => "attached to the end".to_owned(),
        };
        let _ = writeln!(
            out,
            "{label:<11} {} ({}): {} facts observed, queue wait {:.2} ms, waited for at the end {:.2} ms; {state}",
            observer.name, observer.origin, observer.facts, observer.queue_wait_ms, observer.end_wait_ms
        );
        label = "";
        // As `--json`'s `status` is the active engine's `get_status`: the whole object, on one
        // line (a store's own figures, such as lcm's `stored_messages`, are only there).
        if let Some(status) = &observer.status {
            let _ = writeln!(out, "{label:<11} {} status: {status}", observer.name);
        }
    }
    for name in &outcome.standby {
        let _ = writeln!(
            out,
            "{label:<11} {name}: owns the context; it observes once `/engine` swaps it out"
        );
        label = "";
    }
}

/// The tools offered at the end, then those a detached observer offered, under its name:
/// `lcm_grep; detached with observer `faulty`: faulty_echo, faulty_host_services`.
fn offered_tools(o: &ReplayOutcome) -> String {
    let mut parts = Vec::new();
    if !o.tools.is_empty() {
        parts.push(o.tools.join(", "));
    }
    let mut observers: Vec<&str> = Vec::new();
    for detached in &o.detached_tools {
        if !observers.contains(&detached.observer.as_str()) {
            observers.push(&detached.observer);
        }
    }
    for observer in observers {
        let tools: Vec<&str> = o
            .detached_tools
            .iter()
            .filter(|detached| detached.observer == observer)
            .map(|detached| detached.tool.as_str())
            .collect();
        parts.push(format!(
            "detached with observer `{observer}`: {}",
            tools.join(", ")
        ));
    }
    parts.join("; ")
}

fn render_tools_and_commands(out: &mut String, o: &ReplayOutcome) {
    if !o.tools.is_empty() || !o.detached_tools.is_empty() {
        let differed = o.tool_dispatches.iter().filter(|d| !d.equal).count();
        let failed = o.tool_dispatches.iter().filter(|d| d.failed).count();
        let failed = match failed {
            0 => String::new(),
            n => format!("; {n} failed, the engine's error their answer"),
        };
        let _ = writeln!(
            out,
            "tools       {}; {} call{} answered live ({} differed from the recorded result{failed})",
            offered_tools(o),
            o.tool_dispatches.len(),
            if o.tool_dispatches.len() == 1 { "" } else { "s" },
            differed
        );
        let kept = o
            .tool_dispatches
            .iter()
            .filter(|d| !d.replaced && d.recorded.is_some())
            .count();
        if kept > 0 {
            let _ = writeln!(
                out,
                "            {kept} of them by observers: compared, and the recorded result kept (observers never change the context)"
            );
        }
    }
    if !o.commands.is_empty() {
        let _ = writeln!(out, "commands    {}", o.commands.len());
        for command in &o.commands {
            let source = match command.source {
                CommandSource::Message => "typed",
                CommandSource::Flag => "--at",
            };
            let _ = writeln!(
                out,
                "  at message {}: {} ({source}; session {})",
                command.message_index, command.command, command.session_id
            );
        }
    }
}

/// The `compactions` line, then a line for each compaction but those folded (see
/// [`Unchanged`]), then one for each folded group.
fn render_compactions(out: &mut String, compactions: &[CompactionRecord], messages_replayed: usize) {
    if compactions.is_empty() {
        let _ = writeln!(out, "compactions none");
        return;
    }
    let _ = writeln!(out, "compactions {}", count_outcomes(compactions));
    let repeated = repeated_unchanged(compactions);
    for (number, compaction) in compactions.iter().enumerate() {
        if repeated
            .iter()
            .any(|group| Some((group.kind, group.reason)) == unchanged(compaction))
        {
            continue;
        }
        let _ = writeln!(
            out,
            "  #{:<3}{}",
            number + 1,
            describe_compaction(compaction, messages_replayed)
        );
    }
    for group in repeated {
        let at = match group.first_at == group.last_at {
            true => format!("before message {}", group.first_at),
            false => format!("before messages {} to {}", group.first_at, group.last_at),
        };
        let _ = writeln!(
            out,
            "  {} attempts, {at}: {}: {}",
            group.attempts,
            group.kind.words(),
            group.reason
        );
    }
}

fn describe_compaction(compaction: &CompactionRecord, messages_replayed: usize) -> String {
    let tokens = |n: u64| group_thousands(n as usize);
    let at = if compaction.at_message >= messages_replayed {
        "at the end".to_owned()
    } else {
        format!("before message {}", compaction.at_message)
    };
    let trigger = match &compaction.focus {
        Some(focus) => format!("{} {focus}", compaction.trigger),
        None => compaction.trigger.to_string(),
    };
    let mut line = format!(
        "{at} ({trigger}): {} -> {} tokens, {} -> {} messages, {:.2} ms",
        tokens(compaction.tokens_before),
        tokens(compaction.tokens_after),
        compaction.messages_before,
        compaction.messages_after,
        compaction.duration_ms,
    );
    match &compaction.retention {
        // Masking's stand-ins replace output with no identifier in it: nothing to keep is no
        // perfect score.
        Some(retention) if retention.total == 0 => line.push_str("; no facts in what it compacted"),
        Some(retention) => line.push_str(&format!(
            "; facts kept {}/{} ({:.0}%)",
            retention.kept,
            retention.total,
            retention.share * 100.0
        )),
        None => {}
    }
    let applied = compaction.outcome == Outcome::Applied;
    if let Some(summary) = compaction
        .details
        .as_ref()
        .and_then(|details| summarise_details(details, applied))
    {
        line.push_str(&format!("; {summary}"));
    }
    if let Some((kind, reason)) = unchanged(compaction) {
        line.push_str(&format!("\n       {}: {reason}", kind.words()));
    }
    line
}

/// How an attempt that left the context as it was ended. Attempts of one kind and reason are
/// said once in the terminal report (each is still in `--json`): an engine that cannot bring the
/// context under its threshold, or whose every result is refused, is asked before every model
/// call, and a long session would list hundreds of identical lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unchanged {
    NothingToCompact,
    /// The host refused the result, or the engine failed.
    Kept,
}

impl Unchanged {
    fn words(self) -> &'static str {
        match self {
            Unchanged::NothingToCompact => "nothing to compact",
            Unchanged::Kept => "KEPT the context as it was",
        }
    }
}

/// Attempts of one kind and reason, folded into one line.
struct Repeated<'a> {
    kind: Unchanged,
    reason: &'a str,
    attempts: usize,
    first_at: usize,
    last_at: usize,
}

/// How and why `compaction` left the context as it was; `None` when it was applied.
fn unchanged(compaction: &CompactionRecord) -> Option<(Unchanged, &str)> {
    match &compaction.outcome {
        Outcome::NothingToCompact { reason } => Some((Unchanged::NothingToCompact, reason.as_str())),
        Outcome::Kept { reason } => Some((Unchanged::Kept, reason.as_str())),
        Outcome::Applied => None,
    }
}

/// Attempts of one kind and reason listed one a line up to this many; more are one line.
const UNCHANGED_LISTED: usize = 3;

/// The kinds and reasons given more than [`UNCHANGED_LISTED`] times, in the order first met.
fn repeated_unchanged(compactions: &[CompactionRecord]) -> Vec<Repeated<'_>> {
    let mut groups: Vec<Repeated<'_>> = Vec::new();
    for compaction in compactions {
        let Some((kind, reason)) = unchanged(compaction) else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|group| group.kind == kind && group.reason == reason)
        {
            Some(group) => {
                group.attempts += 1;
                group.last_at = compaction.at_message;
            }
            None => groups.push(Repeated {
                kind,
                reason,
                attempts: 1,
                first_at: compaction.at_message,
                last_at: compaction.at_message,
            }),
        }
    }
    groups.retain(|group| group.attempts > UNCHANGED_LISTED);
    groups
}

/// `5 (3 applied, 1 nothing to compact, 1 kept the context)`, or `3` when all were applied.
fn count_outcomes(compactions: &[CompactionRecord]) -> String {
    let count = |wanted: fn(&Outcome) -> bool| compactions.iter().filter(|c| wanted(&c.outcome)).count();
    let applied = count(|o| matches!(o, Outcome::Applied));
    let nothing = count(|o| matches!(o, Outcome::NothingToCompact { .. }));
    let kept = count(|o| matches!(o, Outcome::Kept { .. }));
    if applied == compactions.len() {
        return applied.to_string();
    }
    let mut parts = vec![format!("{applied} applied")];
    if nothing > 0 {
        parts.push(format!("{nothing} nothing to compact"));
    }
    if kept > 0 {
        parts.push(format!("{kept} kept the context as it was"));
    }
    format!("{} ({})", compactions.len(), parts.join(", "))
}

/// A few words from the engine's own account of a compaction. The engine's `outcome` is shown
/// only when the host applied its result: a refused result was not a compaction, whatever the
/// engine thought of it.
fn summarise_details(details: &Value, applied: bool) -> Option<String> {
    let mut parts = Vec::new();
    let text = |key: &str| {
        details
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    };
    for key in ["outcome", "summarizer"] {
        if key == "outcome" && !applied {
            continue;
        }
        if let Some(value) = text(key) {
            parts.push(format!("{key} {value}"));
        }
    }
    // A fallback is written by another summarizer than the one asked.
    if let Some(written_by) = text("written_by").filter(|by| Some(*by) != text("summarizer")) {
        parts.push(format!("written by {written_by}"));
    }
    if let Some(facts) = details
        .get("facts_added")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
    {
        parts.push(format!("grounding added {facts} facts"));
    }
    if let Some(reason) = text("reason") {
        parts.push(format!("reason {reason}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::runner::Trigger;

    fn attempt(at_message: usize, outcome: Outcome) -> CompactionRecord {
        CompactionRecord {
            at_message,
            turn: at_message / 2,
            trigger: Trigger::Preflight,
            focus: None,
            tokens_before: 9_000,
            tokens_after: 9_000,
            messages_before: at_message,
            messages_after: at_message,
            duration_ms: 0.5,
            outcome,
            retention: None,
            details: None,
        }
    }

    fn kept(reason: &str) -> Outcome {
        Outcome::Kept {
            reason: reason.to_owned(),
        }
    }

    /// A compaction whose compacted part held no identifier (masking's stand-ins of outputs that
    /// named none) says so, not `facts kept 0/0 (100%)`.
    #[test]
    fn a_compaction_with_no_facts_to_keep_says_so() {
        let measured = |total, kept| {
            let mut compaction = attempt(30, Outcome::Applied);
            compaction.retention = Some(ctxhost_engine_kit::retention::Retention {
                total,
                kept,
                share: if total == 0 {
                    1.0
                } else {
                    kept as f64 / total as f64
                },
                lost: Vec::new(),
                lost_unlisted: 0,
                lost_by_kind: Default::default(),
            });
            let mut out = String::new();
            render_compactions(&mut out, &[compaction], 40);
            out
        };
        assert!(
            measured(0, 0).contains("0.50 ms; no facts in what it compacted"),
            "{}",
            measured(0, 0)
        );
        assert!(
            measured(4, 3).contains("0.50 ms; facts kept 3/4 (75%)"),
            "{}",
            measured(4, 3)
        );
    }

    #[test]
    fn more_than_three_refused_attempts_of_one_reason_are_one_line_as_nothing_to_compact_ones_are() {
        let invalid =
            "engine `faulty` returned an invalid result from `compress`: the last user message was lost";
        let nothing = || Outcome::NothingToCompact {
            reason: "the engine returned the context as it was".to_owned(),
        };
        let mut compactions = vec![attempt(30, kept("engine `faulty` failed in `compress`: timeout"))];
        compactions.extend((31..36).map(|at| attempt(at, kept(invalid))));
        compactions.extend((40..44).map(|at| attempt(at, nothing())));
        // Three of a reason are still listed each.
        compactions.extend((50..53).map(|at| attempt(at, kept("engine `faulty` panicked"))));
        let mut out = String::new();
        render_compactions(&mut out, &compactions, 60);
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            [
                "compactions 13 (0 applied, 4 nothing to compact, 9 kept the context as it was)",
                "  #1  before message 30 (preflight): 9,000 -> 9,000 tokens, 30 -> 30 messages, 0.50 ms",
                "       KEPT the context as it was: engine `faulty` failed in `compress`: timeout",
                "  #11 before message 50 (preflight): 9,000 -> 9,000 tokens, 50 -> 50 messages, 0.50 ms",
                "       KEPT the context as it was: engine `faulty` panicked",
                "  #12 before message 51 (preflight): 9,000 -> 9,000 tokens, 51 -> 51 messages, 0.50 ms",
                "       KEPT the context as it was: engine `faulty` panicked",
                "  #13 before message 52 (preflight): 9,000 -> 9,000 tokens, 52 -> 52 messages, 0.50 ms",
                "       KEPT the context as it was: engine `faulty` panicked",
                &format!("  5 attempts, before messages 31 to 35: KEPT the context as it was: {invalid}"),
                "  4 attempts, before messages 40 to 43: nothing to compact: the engine returned the context as it was",
            ]
        );
    }
}
