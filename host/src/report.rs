//! What the user reads: the run report, in words or as JSON, and the one warning channel.

use std::fmt::Write;

use ctxhost_engine_kit::stand_in::group_thousands;
use serde::Serialize;
use serde_json::Value;

use crate::{
    engine::EngineOrigin,
    runner::{CompactionRecord, Outcome, ReplayOutcome},
};

/// Prints a warning the user must see (a fallback, a refused result), once, on stderr.
pub fn warn_user(message: &str) {
    tracing::debug!("warning shown to the user: {message}");
    eprintln!("warning: {message}");
}

/// Where a figure came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    /// The figure.
    pub value: T,
    /// Where it came from (`--context-length`, `config.yaml`, the transcript, the default…).
    pub source: String,
}

/// Everything a run report shows.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The transcript.
    pub transcript: String,
    /// Its format.
    pub format: String,
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
    /// The engine's threshold after `update_model`.
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
}

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
        let _ = writeln!(out, "engine      {} ({source})", self.engine);
        if let Some(fallback) = &self.fallback {
            let _ = writeln!(out, "            fallback: {fallback}");
        }
        let _ = writeln!(
            out,
            "window      {} tokens ({}), usable {}; compaction threshold {}",
            tokens(self.context_length.value),
            self.context_length.source,
            tokens(self.window),
            tokens(self.threshold_tokens),
        );
        let o = &self.outcome;
        let _ = writeln!(
            out,
            "replayed    {} messages, {} model calls (usage: {} recorded, {} estimated)",
            o.messages_replayed, o.model_calls, o.usage_recorded, o.usage_estimated
        );
        if o.compactions.is_empty() {
            let _ = writeln!(out, "compactions none");
        } else {
            let _ = writeln!(out, "compactions {}", o.compactions.len());
            for (number, compaction) in o.compactions.iter().enumerate() {
                let _ = writeln!(out, "  #{:<3}{}", number + 1, describe_compaction(compaction));
            }
        }
        let _ = writeln!(
            out,
            "tokens      peak {}, final {} in {} messages (estimated, {})",
            tokens(o.peak_tokens),
            tokens(o.final_tokens),
            o.final_messages,
            self.token_counter
        );
        let _ = writeln!(out, "engine time {:.2} ms", o.engine_time_ms);
        if !o.faults.is_empty() {
            let _ = writeln!(
                out,
                "errors      {} (each contained; the context was kept)",
                o.faults.len()
            );
            for fault in o.faults.iter().take(10) {
                let _ = writeln!(out, "  after message {}: {}", fault.at_message, fault.message);
            }
            if o.faults.len() > 10 {
                let _ = writeln!(out, "  … and {} more", o.faults.len() - 10);
            }
        }
        if let Some(output) = &self.output {
            let _ = writeln!(out, "output      {output}");
        }
        out
    }
}

fn describe_compaction(compaction: &CompactionRecord) -> String {
    let tokens = |n: u64| group_thousands(n as usize);
    let mut line = format!(
        "after message {} ({}): {} -> {} tokens, {} -> {} messages, {:.2} ms",
        compaction.at_message,
        compaction.trigger,
        tokens(compaction.tokens_before),
        tokens(compaction.tokens_after),
        compaction.messages_before,
        compaction.messages_after,
        compaction.duration_ms,
    );
    if let Some(retention) = &compaction.retention {
        line.push_str(&format!(
            "; facts kept {}/{} ({:.0}%)",
            retention.kept,
            retention.total,
            retention.share * 100.0
        ));
    }
    if let Some(summary) = compaction.details.as_ref().and_then(summarise_details) {
        line.push_str(&format!("; {summary}"));
    }
    if let Outcome::Kept { reason } = &compaction.outcome {
        line.push_str(&format!("\n       KEPT the context as it was: {reason}"));
    }
    line
}

/// A few words from the engine's own account of a compaction.
fn summarise_details(details: &Value) -> Option<String> {
    let mut parts = Vec::new();
    let text = |key: &str| {
        details
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    };
    for key in ["outcome", "summarizer"] {
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
