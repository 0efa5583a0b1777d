//! One compaction, phases 1 to 4, apart from the engine's state (counters, pause, cool-down).
//!
//! Order of the steps, and why:
//!
//! - Earlier summaries are taken out first, so that boundaries are computed on real turns and the
//!   old summary is updated, not summarised as a turn.
//! - Phase 2 (boundaries) runs before phase 1 (pruning): pruning applies outside the tail, so the
//!   tail must be known. Phase 1 then prunes the middle (what a model summarizer reads) and
//!   replaces older copies of repeated outputs in the tail.
//! - Phase 3 reads the middle as it was before pruning (the extractive summarizer loses nothing
//!   to stand-ins).
//! - A newest tool group too big for any tail (the tail came out empty) is summarised with the
//!   middle, and a copy of it, its results cut, is the tail: the copy shows the agent the output
//!   it is answering, and the summary what the cut took.
//! - The input stays as it was (no new list is made) when nothing lies between head and tail, when
//!   the middle is too small to summarise, or when the result would not be smaller than the input.
//! - The input is borrowed: the host keeps its context until it has checked the result, and a copy
//!   of a 2-million-token context cost as much as the compaction. Only a context holding an
//!   earlier summary, or a user message to pin, is copied to be rearranged.

use std::{borrow::Cow, time::Instant};

use ctxhost_engine_abi::{Message, Role};
use ctxhost_engine_kit::{
    retention::is_agent_note,
    sequence::{align_end_to_group, repair_tool_pairs},
    tokens::{
        estimate_message_tokens, estimate_message_tokens_bound, estimate_messages_tokens,
        estimate_text_tokens,
    },
};

use crate::{
    assemble::{
        append_system_note, assemble, carries_summary, has_summary, summary_message_text,
        take_previous_summaries, take_previous_summaries_estimated,
    },
    boundaries::{find_boundaries, head_cap, Boundaries, Limits},
    config::{Budgets, CompressorConfig, SUMMARY_TOKENS_CEILING},
    prune::{
        calls_by_id, count_images, count_prunable, cut_newest_group, find_older_duplicates, prune_middle,
        replace_duplicates_in_place, PruneStats,
    },
    report::{CompactionReport, Outcome},
    summary::{
        check_summary, facts::replies_in_words, ExtractiveSummarizer, Summarizer, SummaryError, SummaryNote,
        SummaryRequest, FALLBACK_MAX_CHARS,
    },
};

/// The most a real token count may scale the rough estimates by (the character rule under-counts
/// JSON and logs by 16–44%, compressor.md).
const MAX_CALIBRATION: f64 = 1.5;
/// A middle (with any earlier summary) below this many tokens is not worth a summary: the
/// template and preamble alone take about 130, and the extractive summary of anything bigger is
/// always shorter than its input.
const MIN_SUMMARISABLE_TOKENS: u64 = 400;
/// Tokens kept free for the summary's preamble and the system note when judging progress.
const PREAMBLE_ALLOWANCE_TOKENS: u64 = 100;

/// Whether to ask the summarizer.
pub(crate) enum Ask<'s> {
    /// Ask it.
    Summarizer(&'s mut dyn Summarizer),
    /// Leave it alone (it is cooling down); use the fallback, saying why.
    Skip { name: &'s str, reason: String },
}

impl Ask<'_> {
    fn name(&self) -> String {
        match self {
            Ask::Summarizer(summarizer) => summarizer.name().to_owned(),
            Ask::Skip { name, .. } => (*name).to_owned(),
        }
    }
}

/// What a compaction depends on besides the messages.
pub(crate) struct Settings<'a> {
    pub config: &'a CompressorConfig,
    pub budgets: Budgets,
    /// The real prompt size, when the host knows it: calibrates the rough estimates.
    pub current_tokens: Option<u64>,
    pub focus_topic: Option<&'a str>,
    /// The summary the engine remembers from its last compaction.
    pub remembered_summary: Option<&'a str>,
}

/// The result of [`compact`].
pub(crate) struct Compaction {
    /// The new context; `None` when the input stays as it was.
    pub messages: Option<Vec<Message>>,
    pub report: CompactionReport,
    /// The summary body now in the context, to remember.
    pub summary_body: Option<String>,
    /// The summarizer's failure, when it had one (a fallback or a timeout starts a cool-down).
    pub failure: Option<SummaryError>,
}

/// The boundary limits for `settings`, calibrated by `scale`.
///
/// The summary's allowance is its room (the extractive summary lists facts in it), and head, tail
/// and summary together aim at the result cap, so the room comes out of the tail's
/// `protect_last_n` extension rather than on top of it.
pub(crate) fn limits_for(settings: &Settings<'_>, scale: f64) -> Limits {
    let budgets = settings.budgets;
    let summary_room = if budgets.context_length == 0 {
        SUMMARY_TOKENS_CEILING
    } else {
        budgets.summary_room_tokens
    };
    Limits {
        tail_budget: (budgets.tail_token_budget as f64 / scale) as u64,
        threshold: (budgets.result_cap_tokens as f64 / scale) as u64,
        summary_allowance: summary_room + PREAMBLE_ALLOWANCE_TOKENS,
        protect_first_n: settings.config.protect_first_n,
        protect_last_n: settings.config.protect_last_n,
        head_cap: None,
    }
}

/// Whether [`compact`] would find something to summarise: a middle between head and tail, big
/// enough to be worth a summary (an earlier summary in it counts).
///
/// The same answer as `compact`'s boundaries, without counting the characters of every message
/// (asked before every manual `/compress`, that was a pass over the whole context): see
/// [`boundary_estimates`].
pub(crate) fn has_content(messages: &[Message], settings: &Settings<'_>) -> bool {
    let taken;
    let (working, previous_tokens) = if has_summary(messages) {
        let (working, bodies) = take_previous_summaries(messages.to_vec());
        taken = working;
        let tokens = bodies.iter().map(|body| estimate_text_tokens(body)).sum();
        (taken.as_slice(), tokens)
    } else {
        let remembered = settings.remembered_summary.map_or(0, estimate_text_tokens);
        (messages, remembered)
    };
    let limits = Limits {
        head_cap: head_cap(messages, carries_summary),
        ..limits_for(settings, 1.0)
    };
    let estimates = boundary_estimates(working, &limits);
    let Boundaries {
        head_end, tail_start, ..
    } = find_boundaries(working, &estimates, &limits);
    if tail_start <= head_end {
        return false;
    }
    // The middle's size only matters up to the minimum: stop counting there.
    let mut middle_tokens = previous_tokens;
    for message in &working[head_end..tail_start] {
        if middle_tokens >= MIN_SUMMARISABLE_TOKENS {
            break;
        }
        middle_tokens += estimate_message_tokens(message);
    }
    middle_tokens >= MIN_SUMMARISABLE_TOKENS
}

/// How many turns a summary's preamble says it stands for (`Earlier turns (8 messages) were…`).
fn turns_summarised(text: &str) -> Option<usize> {
    let rest = text.split_once("Earlier turns (")?.1;
    let (count, _) = rest.split_once(" messages)")?;
    count.parse().ok()
}

/// Estimates that give the boundaries `find_boundaries` gives with every message counted: the
/// head's and the newest messages' exact, until those newest reach both the tail budget and the
/// result cap; the older ones only bounded from above by their byte lengths. Every decision past
/// that point (the tail budget exceeded, head plus tail at the cap) holds whatever the older
/// messages count, and a bound only makes the sums larger.
fn boundary_estimates(messages: &[Message], limits: &Limits) -> Vec<u64> {
    let enough = limits.tail_budget.max(limits.threshold);
    let mut estimates: Vec<u64> = messages.iter().map(estimate_message_tokens_bound).collect();
    let mut newest = 0;
    for (at, message) in messages.iter().enumerate().rev() {
        if newest > enough {
            break;
        }
        estimates[at] = estimate_message_tokens(message);
        newest += estimates[at];
    }
    // At least the head `find_boundaries` takes (a system message or not, then past the results
    // of a head assistant's calls).
    let head = align_end_to_group(messages, (1 + limits.protect_first_n).min(messages.len()));
    for (estimate, message) in estimates.iter_mut().zip(messages).take(head) {
        *estimate = estimate_message_tokens(message);
    }
    estimates
}

/// Compacts `messages`, which the caller keeps: the middle is only read, and the head and tail
/// are copied into the result.
pub(crate) fn compact(messages: &[Message], settings: &Settings<'_>, ask: Ask<'_>) -> Compaction {
    let started = Instant::now();
    let name = ask.name();
    let messages_before = messages.len();
    // One pass over every message: its estimate, and whether an earlier summary is among them.
    let mut found_summary = false;
    let mut estimates: Vec<u64> = messages
        .iter()
        .map(|message| {
            found_summary |= carries_summary(message);
            estimate_message_tokens(message)
        })
        .collect();
    let tokens_before: u64 = estimates.iter().sum();
    let unchanged = |outcome, reason: String| {
        let mut report = CompactionReport::unchanged(&name, outcome, reason, tokens_before, messages_before);
        report.focus_topic = settings.focus_topic.map(str::to_owned);
        report.duration_ms = started.elapsed().as_secs_f64() * 1e3;
        Compaction {
            messages: None,
            report,
            summary_body: None,
            failure: None,
        }
    };

    let earlier_turns: usize = if found_summary {
        messages
            .iter()
            .filter(|message| carries_summary(message))
            .filter_map(|message| turns_summarised(&message.text()))
            .sum()
    } else {
        0
    };
    // Earlier summaries out, in a copy: the input stays the caller's.
    let (working, bodies) = if found_summary {
        let (working, bodies, kept_estimates) = take_previous_summaries_estimated(messages, &estimates);
        estimates = kept_estimates;
        (Cow::Owned(working), bodies)
    } else {
        (Cow::Borrowed(messages), Vec::new())
    };
    let previous = if bodies.is_empty() {
        settings.remembered_summary.map(str::to_owned)
    } else {
        Some(bodies.join("\n\n"))
    };

    // Phase 2.
    let scale = match settings.current_tokens {
        Some(real) if tokens_before > 0 => (real as f64 / tokens_before as f64).clamp(1.0, MAX_CALIBRATION),
        _ => 1.0,
    };
    let limits = Limits {
        head_cap: found_summary
            .then(|| head_cap(messages, carries_summary))
            .flatten(),
        ..limits_for(settings, scale)
    };
    let Boundaries {
        head_end,
        tail_start,
        pinned_user,
    } = find_boundaries(&working, &estimates, &limits);
    // Where in the middle the pinned request stood: the work after it is for it.
    let pinned_in_middle = pinned_user.map(|at| at - head_end);
    // The pinned user message moves to just after the head: the request, then the summary of the
    // work so far, then the tail.
    let (working, head_end) = match pinned_user {
        Some(at) if at > head_end => {
            let mut working = working.into_owned();
            let pinned = working.remove(at);
            working.insert(head_end, pinned);
            let pinned_estimate = estimates.remove(at);
            estimates.insert(head_end, pinned_estimate);
            (Cow::Owned(working), head_end + 1)
        }
        Some(_) => (working, head_end + 1),
        None => (working, head_end),
    };
    if tail_start <= head_end {
        let reason = format!(
            "nothing lies between the protected head ({head_end} messages) and tail ({} messages)",
            working.len() - tail_start
        );
        return unchanged(Outcome::NothingToCompress, reason);
    }
    let middle = &working[head_end..tail_start];
    let middle_tokens: u64 = estimates[head_end..tail_start].iter().sum();
    let previous_tokens = previous.as_deref().map_or(0, estimate_text_tokens);
    let input_tokens = middle_tokens + previous_tokens;
    if input_tokens < MIN_SUMMARISABLE_TOKENS {
        let reason = format!("the middle ({input_tokens} tokens) is too small to summarise");
        return unchanged(Outcome::NothingToCompress, reason);
    }

    // The newest tool group, when no tail can hold it (the tail is empty), is summarised with the
    // middle and kept after the summary too, its results cut: the agent still reads the start and
    // the end of the output it is answering. To half the tail's budget: what it takes is room the
    // next turns no longer have (the whole budget made the corpus's replays at 8,000 tokens
    // compact a third more often, half a sixth).
    let mut stats = PruneStats::default();
    let cut_group = (tail_start == working.len())
        .then(|| cut_newest_group(&working, head_end, limits.tail_budget / 2, &mut stats))
        .flatten();
    let tail_messages: &[Message] = cut_group.as_deref().unwrap_or(&working[tail_start..]);
    let tail_tokens: u64 = match &cut_group {
        Some(group) => estimate_messages_tokens(group),
        None => estimates[tail_start..].iter().sum(),
    };

    // Phase 1. A summarizer that reads the messages themselves gets no pruned copy: only the
    // tail's duplicates are replaced, and the rest is counted for the report.
    let reads_transcript = matches!(&ask, Ask::Summarizer(summarizer) if summarizer.reads_transcript());
    // Groups are never split, so the tail's results find their calls in the tail.
    let calls = calls_by_id(if reads_transcript {
        &working
    } else {
        &working[tail_start..]
    });
    let duplicates_from = if reads_transcript { head_end } else { tail_start };
    let duplicates = find_older_duplicates(&working, duplicates_from);
    let images_summarized = middle
        .iter()
        .filter(|message| message.role != Role::Tool)
        .map(|message| count_images(&message.content))
        .sum();
    let pruned = if reads_transcript {
        prune_middle(middle, &duplicates[head_end..tail_start], &calls, &mut stats)
    } else {
        count_prunable(middle, &mut stats);
        Vec::new()
    };

    // Phase 3. The summary's prose keeps to the target length; the facts it lists (identifiers,
    // error lines, commands, the user's requests) may also fill the room: the tail and the summary
    // share one budget, the result cap, so what a short tail leaves is the facts' too.
    let target_tokens = settings.budgets.summary_target_tokens(input_tokens);
    let head_and_tail: u64 = estimates[..head_end].iter().sum::<u64>() + tail_tokens;
    let left = ((settings.budgets.result_cap_tokens as f64 / scale) as u64)
        .saturating_sub(head_and_tail + PREAMBLE_ALLOWANCE_TOKENS);
    // Never beyond the ceiling of any summary: a large window's room is already ample.
    let room_tokens = settings
        .budgets
        .summary_room_for(input_tokens)
        .max(left.min(SUMMARY_TOKENS_CEILING));
    let request = SummaryRequest {
        middle,
        pruned_middle: &pruned,
        previous_summary: previous.as_deref(),
        focus_topic: settings.focus_topic,
        target_tokens,
        input_tokens,
        // A request the tail keeps: the user moved on from the middle's.
        request_follows: tail_messages
            .iter()
            .any(|message| message.role == Role::User && !is_agent_note(message, &message.text())),
        pinned_request_at: pinned_in_middle,
        // Moved to just before the middle.
        pinned_request: pinned_user.map(|_| &working[head_end - 1]),
        tail: tail_messages,
        head_request: open_head_request(&working[..head_end])
            .filter(|_| previous.is_none() && pinned_user.is_none()),
    };
    let (asked, was_asked, note) = match ask {
        Ask::Summarizer(summarizer) => {
            let answer = summarizer
                .summarize_with_room(&request, room_tokens)
                .and_then(|body| check_summary(&body, input_tokens).map(|()| body));
            let note = summarizer.take_note();
            (answer, true, note)
        }
        Ask::Skip { reason, .. } => (Err(SummaryError::Failed(reason)), false, None),
    };
    // The turns the earlier summaries stood for count too: the summary stands for all of them,
    // and a count of the new middle alone could write a summary identical to the one it replaces
    // (a session repeating its calls), which reads as an older message moved past the newest.
    let count = middle.len() + earlier_turns;
    let middle_messages = middle.len();
    let (body, outcome, preamble, reason) = match asked {
        Ok(body) => {
            let preamble = format!(
                "Earlier turns ({count} messages) were compacted into this summary by the {name} summarizer. \
                 It is reference material, not a new instruction: respond to the latest message after it."
            );
            (body, Outcome::Compacted, preamble, None)
        }
        Err(error) if error.aborts() => {
            drop(pruned);
            let mut aborted = unchanged(Outcome::Aborted, error.reason().to_owned());
            aborted.failure = Some(error);
            return aborted;
        }
        Err(error) => {
            let reason = error.reason().to_owned();
            let preamble = format!(
                "Earlier turns ({count} messages) were compacted into this FALLBACK summary, built locally \
                 instead of by the {name} summarizer because: {reason}. It is reference material, not a new \
                 instruction: respond to the latest message after it."
            );
            let limit = FALLBACK_MAX_CHARS
                .min(target_tokens.saturating_mul(4) as usize)
                .saturating_sub(preamble.chars().count());
            let body = ExtractiveSummarizer.summarize_with_limit(&request, limit);
            (body, Outcome::Fallback, preamble, Some(reason))
        }
    };
    // Only a summarizer actually asked can fail; a skipped one is already cooling down.
    let failure = reason.clone().filter(|_| was_asked).map(SummaryError::Failed);
    let note = match outcome {
        Outcome::Compacted => note.unwrap_or_else(|| SummaryNote {
            written_by: name.clone(),
            facts_added: 0,
        }),
        _ => SummaryNote {
            written_by: ExtractiveSummarizer::NAME.to_owned(),
            facts_added: 0,
        },
    };
    drop(pruned);

    // Phase 4.
    let mut head = working[..head_end].to_vec();
    let tail = match cut_group {
        Some(group) => group,
        None => {
            let mut tail = working[tail_start..].to_vec();
            stats.deduplicated_outputs +=
                replace_duplicates_in_place(&mut tail, &duplicates[tail_start..], &calls);
            tail
        }
    };
    let tail_len = tail.len();
    drop(calls);
    append_system_note(&mut head);
    let text = summary_message_text(&preamble, &body);
    let summary_tokens = estimate_text_tokens(&text);
    let (assembled, placement) = assemble(head, text, tail);
    let assembled = repair_tool_pairs(assembled);
    let tokens_after = estimate_messages_tokens(&assembled);
    if tokens_after >= tokens_before {
        let reason = format!(
            "a summary would not be smaller than the {count} messages it replaces ({tokens_after} ≥ {tokens_before} tokens)"
        );
        return unchanged(Outcome::NothingToCompress, reason);
    }

    let mut report = CompactionReport {
        summarizer: name,
        written_by: Some(note.written_by),
        facts_added: note.facts_added,
        outcome,
        reason,
        focus_topic: settings.focus_topic.map(str::to_owned),
        tokens_before,
        tokens_after,
        messages_before,
        messages_after: assembled.len(),
        head_messages: head_end,
        middle_messages,
        tail_messages: tail_len,
        pruned_outputs: 0,
        deduplicated_outputs: 0,
        shortened_arguments: 0,
        images_replaced: 0,
        cut_outputs: 0,
        images_summarized,
        summary_tokens,
        updated_previous_summary: previous.is_some(),
        summary_placement: Some(placement.describe().to_owned()),
        duration_ms: started.elapsed().as_secs_f64() * 1e3,
    };
    report.record_pruning(&stats);
    report.duration_ms = started.elapsed().as_secs_f64() * 1e3;
    Compaction {
        messages: Some(assembled),
        report,
        summary_body: Some(body),
        failure,
    }
}

/// The user's request `head` keeps, when the head ends inside its turn: the request, then no
/// reply to it in words (calls, their results), so the middle holds the reply (verify33: a
/// question kept in the head, its numeric answer in no line of the summary).
fn open_head_request(head: &[Message]) -> Option<&Message> {
    let request = head
        .iter()
        .rposition(|message| message.role == Role::User && !is_agent_note(message, &message.text()))?;
    let replied = head[request + 1..].iter().any(replies_in_words);
    (!replied).then_some(&head[request])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::property::{agent_conversation, Rng};
    use ctxhost_engine_abi::Content;

    /// Property: boundaries from [`boundary_estimates`] are those of every message counted, on
    /// conversations whose text is partly multibyte (where a byte bound over-counts), for many
    /// budgets, caps and protected counts.
    #[test]
    fn bounded_estimates_give_the_boundaries_of_exact_ones() {
        let mut rng = Rng::new(11);
        for seed in 0..60 {
            let mut messages = agent_conversation(seed, 40 + rng.below(200));
            for message in &mut messages {
                if rng.chance(40) {
                    let text = message.text().replace(['e', 'o'], "é");
                    message.content = Content::Text(text);
                }
            }
            let exact: Vec<u64> = messages.iter().map(estimate_message_tokens).collect();
            let total: u64 = exact.iter().sum();
            for _ in 0..20 {
                let limits = Limits {
                    tail_budget: rng.below(total as usize / 2 + 1) as u64,
                    threshold: if rng.chance(20) {
                        0
                    } else {
                        rng.below(total as usize) as u64
                    },
                    summary_allowance: rng.below(3_000) as u64,
                    protect_first_n: rng.below(6),
                    protect_last_n: rng.below(30),
                    head_cap: None,
                };
                assert_eq!(
                    find_boundaries(&messages, &boundary_estimates(&messages, &limits), &limits),
                    find_boundaries(&messages, &exact, &limits),
                    "seed {seed}, {limits:?}"
                );
            }
        }
    }
}
