//! One compaction sweep: leaf passes, condensation passes, assembly.
//!
//! - Only raw messages outside the fresh tail that no summary in the context covers are
//!   summarised, oldest first: compaction is incremental.
//! - A chunk (or a run of summaries) that was summarised before, in this session, with exactly
//!   the same sources, reuses that summary: a second replay of a transcript calls no summarizer
//!   and writes nothing.
//! - Escalation, guaranteed to end: (1) the host's summarizer at the target size; (2) if that is
//!   not smaller than its input, once more at half the size; (3) a deterministic truncation,
//!   strictly smaller, labelled as a truncation and never as a summary. A pass whose result does
//!   not make the context smaller stops the sweep.
//! - The summarizer being unreachable (`UNAVAILABLE`) aborts the sweep: nothing is written, the
//!   error goes to the host, which keeps the context.
//! - A timeout, or an answer that failed, starts the engine's cool-down (60 s, then 300 and 900 s
//!   on repeated timeouts, as the compressor's): until it ends the summarizer is not asked, and
//!   every pass takes the deterministic truncation, which loses nothing, since `lcm_expand` gives
//!   the originals. A timeout costs the whole timeout, and Hermes asks up to three times a turn.
//! - Everything a sweep writes is one transaction, after the last summarizer call.

use std::time::{Duration, Instant};

use ctxhost_engine_abi::{CompressRequest, EngineError, ErrorKind, Message, Role, SummarizeRequest};
use ctxhost_engine_kit::{
    pacing::{FailureKind, TIMED_OUT},
    sequence::repair_tool_pairs,
    tokens,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::{
    assemble,
    store::{NewSummary, SummaryKind, SummaryRow},
    text::search_text,
    Entry, Lcm, LcmConfig, Slot,
};

/// Tokens a summary costs in the context beyond its text: its heading line.
const SUMMARY_HEADING_TOKENS: u64 = 30;

/// The deterministic truncation keeps at most this many tokens (the paper's fixed size), and
/// always less than its input.
const TRUNCATION_TOKENS: u64 = 512;

const TRUNCATION_LABEL: &str = "[lcm: truncated, not a summary: the summarizer gave nothing shorter. \
The start of the covered text follows; lcm_expand gives all of it.]";

/// A raw message of the context, with what the sweep needs of it.
struct Raw {
    message: Message,
    /// 0 for another engine's message ([`Slot::Foreign`]).
    id: i64,
    seq: i64,
    tokens: u64,
}

impl Raw {
    /// Whether it is another engine's message, which no summary may take as a source: the sweep
    /// keeps it where it is.
    fn is_foreign(&self) -> bool {
        self.id == 0
    }
}

/// The state of one sweep.
struct Sweep<'a> {
    engine: &'a mut Lcm,
    focus: Option<String>,
    calls: u32,
    started: Instant,
    deadline: Duration,
    written: Vec<NewSummary>,
    reused: usize,
    truncations: usize,
    stopped: Option<String>,
    summary_cap: u64,
    /// Why the summarizer was not asked in this sweep (its cool-down).
    skipped: Option<String>,
}

/// Compacts the placed context `entries`; returns the new context and an account of the sweep.
pub fn compact(
    engine: &mut Lcm,
    input: Vec<Message>,
    entries: Vec<Entry>,
    request: &CompressRequest,
) -> Result<(Vec<Message>, Value), EngineError> {
    let input_tokens = tokens::estimate_messages_tokens(&input);
    let mut system = None;
    let mut frontier_ids: Vec<String> = Vec::new();
    let mut raws = Vec::new();
    for entry in entries {
        match entry.slot {
            Slot::System { .. } => {
                system = Some(assemble::with_note(&assemble::without_note(&entry.message)))
            }
            Slot::Summaries(ids) => frontier_ids.extend(ids),
            Slot::Raw { id, seq, tokens } => raws.push(Raw {
                message: entry.message,
                id,
                seq,
                tokens,
            }),
            Slot::Foreign { tokens } => raws.push(Raw {
                message: entry.message,
                id: 0,
                seq: -1,
                tokens,
            }),
        }
    }
    let mut frontier = Vec::new();
    for id in &frontier_ids {
        let row = engine.store()?.summary(id).map_err(|e| engine.store_error(e))?;
        match row {
            Some(row) => frontier.push(row),
            // A summary id the store does not know (another store, a hand-edited context): keep
            // nothing of it rather than invent a lineage.
            None => tracing::warn!("{id}: not in the store; dropped from the summary message"),
        }
    }

    let config = engine.config.clone();
    let threshold = engine.threshold();
    let system_tokens = system.as_ref().map_or(0, tokens::estimate_message_tokens);
    let rough_before =
        system_tokens + block_tokens(&frontier) + raws.iter().map(|raw| raw.tokens).sum::<u64>();
    // The real count may be above the rough one (JSON and logs under-count): aim lower then.
    let scale = match request.current_tokens {
        Some(real) if rough_before > 0 && real > rough_before => real as f64 / rough_before as f64,
        _ => 1.0,
    };
    let target = if threshold == 0 {
        0
    } else {
        ((threshold as f64 * config.target) / scale) as u64
    };
    let tail_budget = if threshold == 0 {
        u64::MAX
    } else {
        ((threshold as f64 * config.tail_share) / scale) as u64
    };
    let tail = find_tail(&raws, config.fresh_tail, tail_budget, target_or_all(target));
    let summary_budget = target / 2;

    let mut sweep = Sweep {
        deadline: Duration::from_secs(config.max_sweep_seconds),
        engine,
        focus: request.focus_topic.clone(),
        calls: 0,
        started: Instant::now(),
        written: Vec::new(),
        reused: 0,
        truncations: 0,
        stopped: None,
        skipped: None,
        // A summary asks for at most half of what all summaries may take (at least a line).
        summary_cap: if threshold == 0 {
            u64::MAX
        } else {
            (summary_budget / 2).max(64)
        },
    };
    let total = |frontier: &[SummaryRow], raws: &[Raw]| {
        system_tokens + block_tokens(frontier) + raws.iter().map(|raw| raw.tokens).sum::<u64>()
    };

    // Leaf passes: the oldest raw messages outside the tail (the pinned user message excepted).
    let mut pinned = tail.pinned;
    let mut uncovered = tail.start;
    while uncovered > usize::from(pinned.is_some_and(|p| p < uncovered))
        && total(&frontier, &raws) > target
        && sweep.may_continue()
    {
        let picked = choose_leaf_chunk(&raws[..uncovered], pinned, config.leaf_chunk_tokens);
        if picked.is_empty() {
            break;
        }
        let chunk: Vec<&Raw> = picked.iter().map(|&at| &raws[at]).collect();
        let chunk_tokens: u64 = chunk.iter().map(|raw| raw.tokens).sum();
        let Some(summary) = sweep.leaf(&chunk, chunk_tokens, &config)? else {
            break;
        };
        if summary.tokens + SUMMARY_HEADING_TOKENS >= chunk_tokens {
            sweep.stopped = Some(format!(
                "a leaf over {chunk_tokens} tokens gave {} tokens: no smaller",
                summary.tokens
            ));
            break;
        }
        frontier.push(summary);
        for &at in picked.iter().rev() {
            raws.remove(at);
        }
        uncovered -= picked.len();
        if let Some(p) = pinned.as_mut() {
            *p -= picked.iter().filter(|&&at| at < *p).count();
        }
    }
    // A message the summaries precede though they cover later ones is the pinned user message
    // (pinned now or by an earlier compaction): the summary message names it, so that the next
    // compaction finds it in the store.
    let _ = pinned;
    // Another engine's messages before the first stored one (a compressor's summary of what
    // came before) go before lcm's summaries, which cover what came after.
    let leading_foreign = raws.iter().take_while(|raw| raw.is_foreign()).count();
    let pinned_id = raws
        .get(leading_foreign)
        .filter(|raw| frontier_covers_after(&frontier, raw.seq))
        .map(|raw| raw.id);

    // Condensation passes: while the summaries take too much room, runs of `fan_in` of one depth,
    // or, when no depth has that many, the oldest summaries across depths.
    while sweep.stopped.is_none()
        && (block_tokens(&frontier) > summary_budget || total(&frontier, &raws) > target)
        && sweep.may_continue()
    {
        // Past the automatic depth limit only when the summaries still do not fit: the context
        // must stay bounded however long the session, and every summary must stay in it.
        let run = find_condensable_run(&frontier, config.fan_in, config.max_depth)
            .or_else(|| find_condensable_run(&frontier, config.fan_in, u32::MAX))
            .or_else(|| oldest_run(&frontier, config.fan_in));
        let Some(run) = run else {
            break;
        };
        let sources: Vec<SummaryRow> = run.iter().map(|&at| frontier[at].clone()).collect();
        let sources_tokens = block_tokens(&sources);
        let Some(summary) = sweep.condensed(&sources, sources_tokens, &config)? else {
            break;
        };
        if summary.tokens + SUMMARY_HEADING_TOKENS >= sources_tokens {
            sweep.stopped = Some(format!(
                "a condensed summary over {sources_tokens} tokens gave {} tokens: no smaller",
                summary.tokens
            ));
            break;
        }
        let first = run[0];
        for &at in run.iter().rev() {
            frontier.remove(at);
        }
        frontier.insert(first, summary);
    }

    // Assembly: highest depth first, then oldest first.
    frontier.sort_by(|a, b| b.depth.cmp(&a.depth).then(a.earliest_at.cmp(&b.earliest_at)));
    let mut context = Vec::with_capacity(raws.len() + 2);
    // The note only when there are summaries to explain, so that a context with nothing to
    // compact comes back as it was.
    context.extend(system.map(|system| match frontier.is_empty() {
        true => assemble::without_note(&system),
        false => system,
    }));
    let mut raws = raws.into_iter().peekable();
    while let Some(raw) = raws.next_if(Raw::is_foreign) {
        context.push(raw.message);
    }
    if !frontier.is_empty() {
        context.push(assemble::summary_message(&frontier, pinned_id));
    }
    let raws: Vec<Raw> = raws.collect();
    let tail_ids: Vec<i64> = raws
        .iter()
        .filter(|raw| !raw.is_foreign())
        .map(|raw| raw.id)
        .collect();
    let first_seq = raws.iter().find(|raw| !raw.is_foreign()).map(|raw| raw.seq);
    context.extend(raws.into_iter().map(|raw| raw.message));
    let mut context = repair_tool_pairs(context);
    let mut rough_after = tokens::estimate_messages_tokens(&context);
    let mut kept_input = false;
    if rough_after >= input_tokens {
        // Convergence: a compaction never grows the context. What the sweep made is dropped,
        // unwritten, and the input comes back as it was.
        tracing::debug!("~{input_tokens} -> ~{rough_after} tokens: not smaller; the context is kept");
        context = input;
        rough_after = input_tokens;
        kept_input = true;
    }

    let record = json!({
        "summaries": frontier.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        "tail_first_seq": first_seq,
        "tail_messages": tail_ids.len(),
        "tokens": rough_after,
    });
    let Sweep {
        engine,
        written,
        calls,
        reused,
        truncations,
        stopped,
        started,
        skipped,
        ..
    } = sweep;
    let written = if kept_input { Vec::new() } else { written };
    let session = match engine.session.id {
        Some(id) => Some(id),
        None if written.is_empty() => None,
        None => unreachable!("summaries are only written over stored messages"),
    };
    if let (Some(session), false) = (session, kept_input) {
        engine
            .store()?
            .write_compaction(session, &written, reused, &record)
            .map_err(|e| engine.store_error(e))?;
    }
    let report = json!({
        "engine": "lcm",
        "summarizer": written.last().map(|s| s.method.clone()),
        "new_summaries": written.len(),
        "reused_summaries": reused,
        "truncations": truncations,
        "summarizer_calls": calls,
        "stopped": stopped,
        "summarizer_skipped": skipped,
        "kept_input": kept_input,
        "tokens_before": rough_before,
        "tokens_after": rough_after,
        "target_tokens": target,
        "summaries_in_context": record["summaries"],
        "sweep_ms": started.elapsed().as_secs_f64() * 1000.0,
    });
    Ok((context, report))
}

/// Rough tokens the summary message takes for `frontier`.
fn block_tokens(frontier: &[SummaryRow]) -> u64 {
    if frontier.is_empty() {
        return 0;
    }
    SUMMARY_HEADING_TOKENS
        + frontier
            .iter()
            .map(|s| s.tokens + SUMMARY_HEADING_TOKENS)
            .sum::<u64>()
}

/// Where the fresh tail starts in `raws`, and the newest user message when it is kept apart.
struct Tail {
    /// The newest `fresh_tail` messages within the budget, never inside a tool group.
    start: usize,
    /// The newest user message, when it lies before `start`: it is kept (the host requires it),
    /// right after the summaries, while the work that followed it may be summarised.
    pinned: Option<usize>,
}

/// The fresh tail of `raws`: the newest `fresh_tail` messages within `budget` tokens. When the
/// newest user message and everything after it fit in the budget, the tail starts there;
/// otherwise that user message is pinned. A tail kept whole with its tool groups stays within
/// `limit` (the compaction's target): see below.
fn find_tail(raws: &[Raw], fresh_tail: usize, budget: u64, limit: u64) -> Tail {
    let mut start = raws.len();
    let mut used = 0u64;
    while start > 0 && raws.len() - start < fresh_tail && used + raws[start - 1].tokens <= budget {
        start -= 1;
        used += raws[start].tokens;
    }
    let last_user = raws.iter().rposition(|raw| raw.message.role == Role::User);
    let mut pinned = None;
    if let Some(last_user) = last_user.filter(|&at| at < start) {
        let from_user: u64 = raws[last_user..].iter().map(|raw| raw.tokens).sum();
        if from_user <= budget {
            start = last_user;
        } else {
            pinned = Some(last_user);
        }
    }
    while start > 0 && start < raws.len() && raws[start].message.role == Role::Tool {
        start -= 1;
    }
    // Tool outputs large next to the window (a log's tail of 10,000 tokens) make a tail kept
    // with its whole tool groups larger than the compaction's target: with nothing else left to
    // summarise, compactions would then give the context back over the threshold, and the
    // session would grow without bound once they paused. Its oldest groups are summarised
    // instead, the newest one too when it alone is that large; the store keeps their originals
    // for `lcm_expand`.
    let mut tail_tokens: u64 = raws[start..].iter().map(|raw| raw.tokens).sum();
    while start < raws.len() && tail_tokens > limit {
        tail_tokens -= raws[start].tokens;
        start += 1;
        while start < raws.len() && raws[start].message.role == Role::Tool {
            tail_tokens -= raws[start].tokens;
            start += 1;
        }
    }
    if pinned.is_none() {
        pinned = last_user.filter(|&at| at < start);
    }
    if pinned.is_some_and(|p| p >= start) {
        pinned = None;
    }
    Tail { start, pinned }
}

/// The most a fresh tail may hold: the compaction's target, or anything without a threshold.
fn target_or_all(target: u64) -> u64 {
    if target == 0 {
        u64::MAX
    } else {
        target
    }
}

/// Whether a summary in `frontier` covers a message ingested after position `seq`.
fn frontier_covers_after(frontier: &[SummaryRow], seq: i64) -> bool {
    frontier.iter().any(|summary| summary.last_seq > seq)
}

/// The positions of the oldest chunk of `candidates` (all but `pinned` and other engines'
/// messages) within `max_tokens` (at least one message), extended so that a tool call's results
/// stay with it.
fn choose_leaf_chunk(candidates: &[Raw], pinned: Option<usize>, max_tokens: u64) -> Vec<usize> {
    let mut picked = Vec::new();
    let mut used = 0u64;
    let mut at = 0;
    while at < candidates.len() {
        if Some(at) == pinned || candidates[at].is_foreign() {
            at += 1;
            continue;
        }
        let is_result = candidates[at].message.role == Role::Tool;
        if !picked.is_empty() && !is_result && used + candidates[at].tokens > max_tokens {
            break;
        }
        used += candidates[at].tokens;
        picked.push(at);
        at += 1;
    }
    picked
}

/// The positions in `frontier` of the oldest run of `fan_in` summaries of one depth below
/// `max_depth`, lowest depth first.
fn find_condensable_run(frontier: &[SummaryRow], fan_in: usize, max_depth: u32) -> Option<Vec<usize>> {
    let mut depths: Vec<u32> = frontier
        .iter()
        .map(|s| s.depth)
        .filter(|&d| d < max_depth)
        .collect();
    depths.sort_unstable();
    depths.dedup();
    depths.into_iter().find_map(|depth| {
        let mut at: Vec<usize> = (0..frontier.len())
            .filter(|&i| frontier[i].depth == depth)
            .collect();
        at.sort_by_key(|&i| frontier[i].earliest_at);
        (at.len() >= fan_in).then(|| {
            let mut run = at[..fan_in].to_vec();
            run.sort_unstable();
            run
        })
    })
}

/// The positions in `frontier` of its oldest `fan_in` summaries whatever their depths (at least
/// two): with fewer than `fan_in` of every depth, the summaries can still outgrow the room, and
/// only condensing across depths keeps the context bounded.
fn oldest_run(frontier: &[SummaryRow], fan_in: usize) -> Option<Vec<usize>> {
    if frontier.len() < 2 {
        return None;
    }
    let mut at: Vec<usize> = (0..frontier.len()).collect();
    at.sort_by_key(|&i| frontier[i].earliest_at);
    at.truncate(fan_in.max(2));
    at.sort_unstable();
    Some(at)
}

/// `sum_` + 16 hex digits of a hash of the content and the sources.
fn summary_id(kind: SummaryKind, depth: u32, text: &str, sources_key: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_str().as_bytes());
    hasher.update([0, depth as u8]);
    hasher.update(text.as_bytes());
    hasher.update([0]);
    hasher.update(sources_key.as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sum_{hex}")
}

fn sources_key<I: IntoIterator<Item = String>>(kind: SummaryKind, sources: I) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_str().as_bytes());
    for source in sources {
        hasher.update([0]);
        hasher.update(source.as_bytes());
    }
    let digest = hasher.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The deterministic fallback: the label and the start of `text`, at most `min(512, input − 1)`
/// tokens in all, so strictly smaller than the input. `None` when the input is too small for
/// even the label.
pub fn truncate_deterministically(text: &str, input_tokens: u64) -> Option<String> {
    let label_tokens = tokens::estimate_text_tokens(TRUNCATION_LABEL) + 1;
    let budget = TRUNCATION_TOKENS.min(input_tokens.saturating_sub(1 + SUMMARY_HEADING_TOKENS));
    let room = budget.checked_sub(label_tokens)?;
    let kept: String = text.chars().take(room as usize * 4).collect();
    let result = format!("{TRUNCATION_LABEL}\n{kept}");
    (tokens::estimate_text_tokens(&result) <= budget).then_some(result)
}

/// The text of messages, as the truncation shows them.
fn transcript_text(messages: &[&Message]) -> String {
    let mut text = String::new();
    for message in messages {
        text.push_str(message.role.as_str());
        text.push_str(": ");
        text.push_str(&search_text(message));
        text.push('\n');
    }
    text
}

impl NewSummary {
    /// The row it becomes.
    pub fn row(&self) -> SummaryRow {
        SummaryRow {
            id: self.id.clone(),
            kind: self.kind,
            depth: self.depth,
            method: self.method.clone(),
            text: self.text.clone(),
            tokens: self.tokens,
            earliest_at: self.earliest_at,
            latest_at: self.latest_at,
            descendant_count: self.descendant_count,
            descendant_tokens: self.descendant_tokens,
            last_seq: self.last_seq,
            dated: self.dated,
        }
    }
}

impl Sweep<'_> {
    fn may_continue(&mut self) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        if self.calls >= self.engine.config.max_summarizer_calls {
            self.stopped = Some(format!(
                "{} summarizer calls, the most per compaction",
                self.calls
            ));
        } else if self.started.elapsed() >= self.deadline {
            self.stopped = Some(format!(
                "{} s, the longest a compaction may summarise",
                self.deadline.as_secs()
            ));
        }
        self.stopped.is_none()
    }

    fn session(&self) -> i64 {
        self.engine
            .session
            .id
            .expect("a session holds the messages being summarised")
    }

    fn leaf(
        &mut self,
        chunk: &[&Raw],
        chunk_tokens: u64,
        config: &LcmConfig,
    ) -> Result<Option<SummaryRow>, EngineError> {
        let key = sources_key(SummaryKind::Leaf, chunk.iter().map(|raw| raw.id.to_string()));
        let session = self.session();
        if let Some(row) = self.reuse(session, &key)? {
            return Ok(Some(row));
        }
        let messages: Vec<Message> = chunk.iter().map(|raw| raw.message.clone()).collect();
        let refs: Vec<&Message> = chunk.iter().map(|raw| &raw.message).collect();
        let target = config
            .leaf_target_tokens
            .min(chunk_tokens / 2)
            .min(self.summary_cap)
            .max(1);
        let Some((text, method)) = self.escalate(&messages, None, &refs, chunk_tokens, target)? else {
            return Ok(None);
        };
        let (earliest_at, latest_at, dated) = self.times(chunk)?;
        let summary = NewSummary {
            id: summary_id(SummaryKind::Leaf, 0, &text, &key),
            kind: SummaryKind::Leaf,
            depth: 0,
            method,
            tokens: tokens::estimate_text_tokens(&text),
            text,
            earliest_at,
            latest_at,
            dated,
            descendant_count: chunk.len() as u64,
            descendant_tokens: chunk_tokens,
            last_seq: chunk.iter().map(|raw| raw.seq).max().unwrap_or(0),
            messages: chunk.iter().map(|raw| raw.id).collect(),
            sources: Vec::new(),
            sources_key: key,
        };
        let row = summary.row();
        self.written.push(summary);
        Ok(Some(row))
    }

    fn condensed(
        &mut self,
        sources: &[SummaryRow],
        sources_tokens: u64,
        config: &LcmConfig,
    ) -> Result<Option<SummaryRow>, EngineError> {
        let key = sources_key(SummaryKind::Condensed, sources.iter().map(|s| s.id.clone()));
        let session = self.session();
        if let Some(row) = self.reuse(session, &key)? {
            return Ok(Some(row));
        }
        let messages: Vec<Message> = sources
            .iter()
            .map(|s| Message::assistant(assemble::render_summary(s)))
            .collect();
        let refs: Vec<&Message> = messages.iter().collect();
        let target = config
            .condensed_target_tokens
            .min(sources_tokens / 2)
            .min(self.summary_cap)
            .max(1);
        // The sources go to the summarizer as the earlier summary it folds into its own, section
        // by section: given as messages, they read as an assistant's prose, and a condensed
        // summary lost the request, the errors and the blocked steps its leaves held.
        let earlier: Vec<String> = sources.iter().map(assemble::render_summary).collect();
        let earlier = earlier.join("\n\n");
        let Some((text, method)) = self.escalate(&[], Some(&earlier), &refs, sources_tokens, target)? else {
            return Ok(None);
        };
        let depth = sources.iter().map(|s| s.depth).max().unwrap_or(0) + 1;
        let summary = NewSummary {
            id: summary_id(SummaryKind::Condensed, depth, &text, &key),
            kind: SummaryKind::Condensed,
            depth,
            method,
            tokens: tokens::estimate_text_tokens(&text),
            text,
            earliest_at: sources.iter().map(|s| s.earliest_at).min().unwrap_or(0),
            latest_at: sources.iter().map(|s| s.latest_at).max().unwrap_or(0),
            dated: sources.iter().all(|s| s.dated),
            descendant_count: sources.iter().map(|s| s.descendant_count).sum(),
            descendant_tokens: sources.iter().map(|s| s.descendant_tokens).sum(),
            last_seq: sources.iter().map(|s| s.last_seq).max().unwrap_or(0),
            messages: Vec::new(),
            sources: sources.iter().map(|s| s.id.clone()).collect(),
            sources_key: key,
        };
        let row = summary.row();
        self.written.push(summary);
        Ok(Some(row))
    }

    /// A summary of this exact input written earlier in this sweep or a former one.
    fn reuse(&mut self, session: i64, key: &str) -> Result<Option<SummaryRow>, EngineError> {
        if let Some(summary) = self.written.iter().find(|s| s.sources_key == key) {
            return Ok(Some(summary.row()));
        }
        let found = self
            .engine
            .store()?
            .find_summary_by_sources(session, key)
            .map_err(|e| self.engine.store_error(e))?;
        if found.is_some() {
            self.reused += 1;
        }
        Ok(found)
    }

    /// Earliest and latest storage time of the chunk's messages.
    /// The time range of `chunk` (its first and last messages' times), and whether those are
    /// when they were written.
    fn times(&mut self, chunk: &[&Raw]) -> Result<(i64, i64, bool), EngineError> {
        let (first, last) = (chunk[0].id, chunk[chunk.len() - 1].id);
        let mut times = Vec::new();
        let mut dated = true;
        for id in [first, last] {
            let row = self
                .engine
                .store()?
                .message(id)
                .map_err(|e| self.engine.store_error(e))?;
            dated &= row.as_ref().is_some_and(|row| row.dated);
            times.push(row.map_or(0, |row| row.created_at));
        }
        Ok((times[0].min(times[1]), times[0].max(times[1]), dated))
    }

    /// The three levels, for `messages` and the `earlier` summaries they follow (`refs` is what
    /// the last level truncates); `None` when nothing smaller than the input can be written.
    /// Errors only when the summarizer is unavailable.
    fn escalate(
        &mut self,
        messages: &[Message],
        earlier: Option<&str>,
        refs: &[&Message],
        input_tokens: u64,
        target: u64,
    ) -> Result<Option<(String, String)>, EngineError> {
        for target in [target, (target / 2).max(1)] {
            if !self.may_continue() {
                return Ok(None);
            }
            let now = Instant::now();
            let cooldown = &self.engine.cooldown;
            if cooldown.is_active(now) {
                if self.skipped.is_none() {
                    let reason = format!(
                        "the summarizer is cooling down for {} s after: {}",
                        cooldown.remaining_secs(now),
                        cooldown.reason().unwrap_or("a failure")
                    );
                    tracing::info!("lcm: {reason}; truncating instead");
                    self.skipped = Some(reason);
                }
                break;
            }
            self.calls += 1;
            let request = SummarizeRequest {
                messages,
                previous_summary: earlier,
                focus_topic: self.focus.as_deref(),
                target_tokens: target,
                input_tokens,
            };
            match self.engine.host.summarize(&request) {
                Ok(answer) => {
                    self.engine.cooldown.on_success();
                    let tokens = tokens::estimate_text_tokens(&answer.summary);
                    if !answer.summary.trim().is_empty() && tokens + SUMMARY_HEADING_TOKENS < input_tokens {
                        return Ok(Some((answer.summary, answer.summarizer)));
                    }
                    tracing::debug!("summary of {input_tokens} tokens gave {tokens}: not smaller");
                }
                Err(error) if error.kind == ErrorKind::UNAVAILABLE => {
                    let mut reason = error.message.to_string();
                    if reason.starts_with(TIMED_OUT) {
                        // Counted from the end of the attempt, which took the whole timeout.
                        let pause =
                            self.engine
                                .cooldown
                                .on_failure(Instant::now(), &reason, FailureKind::Timeout);
                        reason.push_str(&format!(
                            "; not asked again for {} s (lcm truncates meanwhile)",
                            pause.as_secs()
                        ));
                    }
                    tracing::warn!("lcm: compaction aborted, context kept: {reason}");
                    return Err(EngineError::unavailable(format!(
                        "lcm: the summarizer is unavailable, nothing written: {reason}"
                    )));
                }
                Err(error) if error.kind == ErrorKind::UNKNOWN_METHOD => {
                    // A host without the service: the truncation is all there is.
                    self.calls -= 1;
                    break;
                }
                Err(error) => {
                    let pause =
                        self.engine
                            .cooldown
                            .on_failure(Instant::now(), &error.message, FailureKind::Failed);
                    tracing::warn!(
                        "lcm: the summarizer failed ({}); truncating instead, next try in {} s",
                        error.message,
                        pause.as_secs()
                    );
                    break;
                }
            }
        }
        let text = transcript_text(refs);
        Ok(truncate_deterministically(&text, input_tokens).map(|text| {
            self.truncations += 1;
            (text, "truncation".to_owned())
        }))
    }
}

/// Whether a compaction would find anything to summarise: raw messages outside the tail, or
/// summaries to condense.
pub fn has_content(config: &LcmConfig, threshold: u64, messages: &[Message]) -> bool {
    let raws: Vec<Raw> = messages
        .iter()
        .skip(usize::from(
            messages.first().is_some_and(|m| m.role == Role::System),
        ))
        .filter(|m| assemble::parse_summary_message(m).is_none())
        .map(|m| Raw {
            tokens: tokens::estimate_message_tokens(m),
            message: m.clone(),
            id: 0,
            seq: 0,
        })
        .collect();
    let budget = if threshold == 0 {
        u64::MAX
    } else {
        (threshold as f64 * config.tail_share) as u64
    };
    let summaries = messages
        .iter()
        .find_map(assemble::parse_summary_message)
        .map_or(0, |ids| ids.len());
    let target = (threshold as f64 * config.target) as u64;
    let tail = find_tail(&raws, config.fresh_tail, budget, target_or_all(target));
    tail.start > usize::from(tail.pinned.is_some()) || summaries >= config.fan_in
}
