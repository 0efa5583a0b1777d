//! The comparison's figures, and the table they are shown in.

use std::fmt::Write as _;

use ctxhost_engine_kit::stand_in::group_thousands;
use serde::Serialize;
use serde_json::Value;

use crate::{
    report::{describe_overrun, EngineSource, Sourced},
    runner::{Outcome, ReplayOutcome, WindowOverrun},
};

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    /// The transcript.
    pub transcript: String,
    /// Its format.
    pub format: String,
    /// Its messages.
    pub messages: usize,
    /// What is odd about the transcript itself, as its reader found (each also a `warning:` line).
    pub transcript_warnings: Vec<String>,
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
    /// The engine's process crashed once too often and the built-in compressor took over: the
    /// figures would be partly the compressor's, so there are none.
    Detached {
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
    /// Compactions that found nothing to compact (not failures, not compactions either).
    pub nothing_to_compact: usize,
    /// The largest context the model would have received.
    pub peak_tokens: u64,
    /// Set when the context went over the usable window (the model would have refused it).
    pub over_window: Option<WindowOverrun>,
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
    /// What the session warned of (an observer left out, a tool name taken twice…), each also a
    /// `warning:` line naming the row.
    pub warnings: Vec<String>,
}

/// Fact retention over a replay's applied compactions (`CompactionRecord::retention`): of the
/// identifiers — paths, commands, error lines, URLs, hashes, issues, versions, requests — in what
/// each compaction replaced, the share its result still holds verbatim. Engine-agnostic: masking
/// is measured as a summarizer is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetentionSummary {
    /// Compactions measured: those that replaced at least one identifier.
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
    // A compaction that replaced no identifier kept none of none: counted as 100% it raised the
    // mean (verify17: masking's `82% / 0%` where 18 of 33 compactions had no facts).
    let retentions: Vec<_> = applied
        .iter()
        .filter_map(|c| c.retention.as_ref())
        .filter(|r| r.total > 0)
        .collect();
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
        compactions_kept: outcome
            .compactions
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Kept { .. }))
            .count(),
        nothing_to_compact: outcome
            .compactions
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::NothingToCompact { .. }))
            .count(),
        peak_tokens: outcome.peak_tokens,
        over_window: outcome.over_window.clone(),
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
        warnings: outcome.warnings.clone(),
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
            "identifiers kept: of the paths, commands, errors, URLs, hashes, issues, versions and requests in what a\n  compaction replaced, the share its result holds verbatim (mean / lowest over the applied compactions that replaced any)"
        );
        for row in self.engines.iter().filter(|row| row.configuration.is_some()) {
            let _ = writeln!(out, "{}: {}", row.label, row.config);
        }
        for row in &self.engines {
            if let RowResult::Ran(figures) = &row.result {
                if let Some(overrun) = &figures.over_window {
                    let _ = writeln!(
                        out,
                        "{}: OVER THE {}-TOKEN WINDOW: {}",
                        row.label,
                        tokens(overrun.window),
                        describe_overrun(overrun)
                    );
                }
                if let Some(error) = &figures.first_error {
                    let _ = writeln!(
                        out,
                        "{}: {} error{}, the first: {error}",
                        row.label,
                        figures.errors,
                        if figures.errors == 1 { "" } else { "s" }
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
            RowResult::Detached { reason } => {
                return vec![
                    row.label.clone(),
                    format!("DETACHED, no figures (the compressor finished its replay): {reason}"),
                ]
            }
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
            // The warning on stderr is easily missed beside a table that looks fine.
            match figures.over_window {
                Some(_) => format!("{} OVER", tokens(figures.peak_tokens)),
                None => tokens(figures.peak_tokens),
            },
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
pub(super) fn align_columns(columns: &[(&str, bool)], rows: &[Vec<String>]) -> String {
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
