//! What the last `compress` did, as the host prints it (`call_ext("last_compaction")`).

use serde::Serialize;

use crate::prune::PruneStats;

/// How a `compress` call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The middle was replaced by the summarizer's summary.
    Compacted,
    /// The middle was replaced by the deterministic fallback summary (the summarizer failed or is
    /// cooling down); `reason` says why.
    Fallback,
    /// The input came back unchanged: nothing lay between head and tail, or a summary would not
    /// have been smaller than what it replaces.
    NothingToCompress,
    /// The summarizer could not be reached; the context was kept as it was.
    Aborted,
}

impl Outcome {
    /// Whether the context was replaced.
    pub fn compacted(self) -> bool {
        matches!(self, Outcome::Compacted | Outcome::Fallback)
    }
}

/// The report of one `compress` call. Token counts are rough estimates (characters ÷ 4).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionReport {
    /// The summarizer asked: `extractive`, or `model:<name>` for the host's model.
    pub summarizer: String,
    /// Who wrote the summary now in the context: the summarizer asked (`model:<name>`), or
    /// `extractive` for a fallback or when the host had no model. `None` when nothing was written.
    pub written_by: Option<String>,
    /// Facts of the extractive summarizer that grounding added to a model's summary.
    pub facts_added: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it fell back, aborted or found nothing to compress.
    pub reason: Option<String>,
    /// The focus topic of a manual `/compress <focus>`.
    pub focus_topic: Option<String>,
    /// Rough tokens of the messages handed in.
    pub tokens_before: u64,
    /// Rough tokens of the messages handed back.
    pub tokens_after: u64,
    /// Messages handed in.
    pub messages_before: usize,
    /// Messages handed back.
    pub messages_after: usize,
    /// Messages kept verbatim at the start.
    pub head_messages: usize,
    /// Messages summarised.
    pub middle_messages: usize,
    /// Messages kept at the end.
    pub tail_messages: usize,
    /// Long tool results of the middle replaced by stand-ins (what a model summarizer reads).
    pub pruned_outputs: usize,
    /// Older copies of repeated long outputs replaced (middle and tail).
    pub deduplicated_outputs: usize,
    /// Tool calls of the middle whose long arguments were shortened.
    pub shortened_arguments: usize,
    /// Image parts of old tool results replaced by a placeholder.
    pub images_replaced: usize,
    /// The newest tool results, too big for any tail, summarised and kept cut to their start and
    /// end after the summary.
    pub cut_outputs: usize,
    /// Image parts the user or the assistant sent in the summarised middle: the summary says how
    /// many came with each request and keeps none.
    pub images_summarized: usize,
    /// Rough tokens of the summary message's text.
    pub summary_tokens: u64,
    /// An earlier summary was updated rather than a new one started.
    pub updated_previous_summary: bool,
    /// `user`, `assistant`, or `merged into the first tail message`.
    pub summary_placement: Option<String>,
    /// Time spent in `compress`, in milliseconds.
    pub duration_ms: f64,
}

impl CompactionReport {
    /// A report of a call that changed nothing.
    pub(crate) fn unchanged(
        summarizer: &str,
        outcome: Outcome,
        reason: String,
        tokens: u64,
        messages: usize,
    ) -> Self {
        Self {
            summarizer: summarizer.to_owned(),
            written_by: None,
            facts_added: 0,
            outcome,
            reason: Some(reason),
            focus_topic: None,
            tokens_before: tokens,
            tokens_after: tokens,
            messages_before: messages,
            messages_after: messages,
            head_messages: 0,
            middle_messages: 0,
            tail_messages: 0,
            pruned_outputs: 0,
            deduplicated_outputs: 0,
            shortened_arguments: 0,
            images_replaced: 0,
            cut_outputs: 0,
            images_summarized: 0,
            summary_tokens: 0,
            updated_previous_summary: false,
            summary_placement: None,
            duration_ms: 0.0,
        }
    }

    pub(crate) fn record_pruning(&mut self, stats: &PruneStats) {
        self.pruned_outputs = stats.pruned_outputs;
        self.deduplicated_outputs = stats.deduplicated_outputs;
        self.shortened_arguments = stats.shortened_arguments;
        self.images_replaced = stats.images_replaced;
        self.cut_outputs = stats.cut_outputs;
    }
}
