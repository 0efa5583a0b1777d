//! Phase 2: where the protected head ends and the protected tail starts.
//!
//! Rules, in the order they apply (compressor.md, phase 2):
//!
//! - The head is the system message (when the list starts with one) plus the next
//!   `protect_first_n` messages, moved forward past the results of a head assistant's calls.
//!   When that head would take more than a quarter of the result cap, it ends before its first
//!   tool call (`shrink_head`), and when even that leaves the summary no room under the cap, it is
//!   the system message alone.
//! - The tail is walked backward from the end, one tool group at a time, while the tail budget
//!   lasts; it then grows to at least `protect_last_n` messages.
//! - If head plus tail (plus the room of the summary to come) would still reach the result cap
//!   (75% of the threshold, see `Budgets::result_cap_tokens`), the tail shrinks back toward the
//!   budget, group by group: compaction must make progress, and the summary's facts need room.
//! - The last user message is kept verbatim: the tail reaches back to it when head plus tail
//!   still leave room, otherwise it is *pinned*, moved to just after the head, so that a long run of
//!   agent work after the user's last request can still be summarised (the tail cannot make
//!   progress while it must hold every message after that request).
//! - A boundary never falls between an assistant's tool calls and their results.
//! - When no role would fit a summary between head and tail, the tail takes up to three more
//!   groups so that its first message need not carry a merged summary.

use ctxhost_engine_abi::{Message, Role};
use ctxhost_engine_kit::{
    retention::is_agent_note,
    sequence::{align_end_to_group, align_start_to_group},
};

use crate::assemble::{choose_placement, Placement};

/// What the boundaries are computed against, in rough tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    /// What the tail may hold.
    pub tail_budget: u64,
    /// What head, tail and summary together must stay under (the result cap, below the
    /// threshold); 0 when the window is not known (no progress rule then).
    pub threshold: u64,
    /// Room kept for the summary and the system note when judging progress.
    pub summary_allowance: u64,
    pub protect_first_n: usize,
    pub protect_last_n: usize,
    /// Where an earlier compaction's head ended (see [`head_cap`]): the head never reaches past
    /// it. `None` before the first compaction.
    pub head_cap: Option<usize>,
}

/// `messages[..head_end]` is the head, `messages[tail_start..]` the tail, the rest the middle,
/// except `pinned_user`: the last user message, in the middle but kept verbatim after the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundaries {
    pub head_end: usize,
    pub tail_start: usize,
    pub pinned_user: Option<usize>,
}

/// The head and tail of `messages`; `estimates` holds each message's rough tokens.
pub(crate) fn find_boundaries(messages: &[Message], estimates: &[u64], limits: &Limits) -> Boundaries {
    let len = messages.len();
    let starts_with_system = messages
        .first()
        .is_some_and(|message| message.role == Role::System);
    let head_end = (usize::from(starts_with_system) + limits.protect_first_n).min(len);
    let head_end = align_end_to_group(messages, head_end);
    // Capped before it is weighed: an earlier summary and the turns after it are no part of the
    // head, and counted in, their weight (an image the user sent) shrank the head to the system
    // message and summarised the first request away (verify18).
    let head_end = limits.head_cap.map_or(head_end, |cap| {
        head_end.min(cap.max(usize::from(starts_with_system)))
    });
    let head_end = shrink_head(messages, estimates, head_end, limits);
    if head_end >= len {
        return Boundaries {
            head_end: len,
            tail_start: len,
            pinned_user: None,
        };
    }
    let mut prefix = Vec::with_capacity(len + 1);
    prefix.push(0u64);
    for estimate in estimates {
        prefix.push(prefix.last().copied().unwrap_or(0) + estimate);
    }
    let tail_tokens = |start: usize| prefix[len] - prefix[start];

    // Whole groups from the end while the budget lasts.
    let mut budget_start = len;
    while budget_start > head_end {
        let group_start = align_start_to_group(messages, budget_start - 1).max(head_end);
        if tail_tokens(group_start) > limits.tail_budget {
            break;
        }
        budget_start = group_start;
    }

    let counted_start =
        align_start_to_group(messages, len.saturating_sub(limits.protect_last_n)).max(head_end);
    let mut tail_start = budget_start.min(counted_start);

    let too_big = |start: usize| {
        limits.threshold > 0
            && prefix[head_end] + tail_tokens(start) + limits.summary_allowance >= limits.threshold
    };
    while tail_start < budget_start && too_big(tail_start) {
        tail_start = next_group_start(messages, tail_start);
    }

    let mut pinned_user = None;
    if let Some(last_user) = last_user_index(messages) {
        if last_user >= head_end && last_user < tail_start {
            if too_big(last_user) && last_user + 1 < tail_start {
                pinned_user = Some(last_user);
            } else {
                tail_start = last_user;
            }
        }
    }
    let tail_start = tail_start.max(head_end);

    Boundaries {
        head_end,
        tail_start: avoid_merging(messages, head_end, pinned_user, tail_start, &too_big),
        pinned_user,
    }
}

/// Where the head of an earlier compaction ended in `messages` (which still hold its summary):
/// before that summary, and before the user message pinned there, the request that was newest
/// then (the first one excepted, which is the head's). Counted again from the start, the head
/// took in what an earlier compaction had placed after it, a pinned request, then the turns the
/// tail kept, and froze them verbatim before the summary of older work.
pub(crate) fn head_cap(messages: &[Message], carries_summary: impl Fn(&Message) -> bool) -> Option<usize> {
    let summary_at = messages.iter().position(carries_summary)?;
    // The first request, not the agent's notes before it (Codex's `<environment_context>`): the
    // request after them is the head's, not one pinned later (verify18).
    let first_user = messages
        .iter()
        .position(|message| message.role == Role::User && !is_agent_note(message, &message.text()));
    let pinned_before = summary_at
        .checked_sub(1)
        .filter(|&at| messages[at].role == Role::User && Some(at) != first_user);
    Some(pinned_before.unwrap_or(summary_at))
}

/// Most of the result cap the head may take before its tool groups give way.
const HEAD_SHARE_DIVISOR: u64 = 4;

/// The head, or, when it takes more than a quarter of the result cap (a small window whose first
/// turns read a file), only the messages before its first tool call: the instructions and the
/// first request, which are what the head is kept for. The tool groups then belong to the middle,
/// where their output is summarised like any other; verbatim, a single file read took a third of
/// an 8,000-token window's result and left the summary too little room for its facts (issue 7).
fn shrink_head(messages: &[Message], estimates: &[u64], head_end: usize, limits: &Limits) -> usize {
    let head_tokens: u64 = estimates[..head_end].iter().sum();
    if limits.threshold == 0 || head_tokens.saturating_mul(HEAD_SHARE_DIVISOR) <= limits.threshold {
        return head_end;
    }
    let before_calls = messages[..head_end]
        .iter()
        .position(Message::has_tool_calls)
        .unwrap_or(head_end);
    // Even without its tool groups, a head that leaves the summary no room under the cap (SWE-agent's
    // demonstration, a first user message of 30,000 characters) would make every compaction
    // find nothing to do while the context outgrows the window: only the system message stays.
    // The first request is then summarised with the middle, which lists the user's requests first.
    let kept: u64 = estimates[..before_calls].iter().sum();
    if kept + limits.summary_allowance >= limits.threshold {
        return usize::from(
            messages
                .first()
                .is_some_and(|message| message.role == Role::System),
        );
    }
    before_calls
}

/// The index of the last user message.
pub(crate) fn last_user_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|message| message.role == Role::User)
}

/// The start of the group after the one starting at `start`.
fn next_group_start(messages: &[Message], start: usize) -> usize {
    align_end_to_group(messages, start + 1)
}

/// When no role fits a summary between the head's last message and the tail's first (user then
/// assistant, or assistant then user), the summary would have to be merged into the tail's first
/// message. Taking up to three more groups into the tail usually finds a start where a role fits,
/// which keeps every tail message verbatim; progress and a non-empty middle come first.
fn avoid_merging(
    messages: &[Message],
    head_end: usize,
    pinned_user: Option<usize>,
    tail_start: usize,
    too_big: &dyn Fn(usize) -> bool,
) -> usize {
    if head_end == 0 || tail_start <= head_end {
        return tail_start;
    }
    // The summary follows the pinned user message when there is one, else the head's last.
    let before = Some(pinned_user.map_or(messages[head_end - 1].role, |_| Role::User));
    let head_end = pinned_user.map_or(head_end, |pinned| pinned + 1);
    let fits = |start: usize| {
        choose_placement(before, messages.get(start).map(|message| message.role)) != Placement::Merged
    };
    if fits(tail_start) {
        return tail_start;
    }
    let mut candidate = tail_start;
    for _ in 0..3 {
        candidate = align_start_to_group(messages, candidate - 1);
        if candidate <= head_end || too_big(candidate) {
            break;
        }
        if fits(candidate) {
            return candidate;
        }
    }
    tail_start
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;
    use pretty_assertions::assert_eq;

    fn estimates(messages: &[Message]) -> Vec<u64> {
        messages.iter().map(|_| 10).collect()
    }

    fn call(id: &str) -> Message {
        Message::assistant_calls(vec![ToolCall::new(id, "ls", "{}")])
    }

    fn limits(tail_budget: u64, protect_last_n: usize) -> Limits {
        Limits {
            tail_budget,
            threshold: 0,
            summary_allowance: 0,
            protect_first_n: 1,
            protect_last_n,
            head_cap: None,
        }
    }

    /// The first request after Codex's notes is the head's, not a request pinned after it: the
    /// head was the `<environment_context>` alone, and the task was summarised (verify18).
    #[test]
    fn the_head_ends_after_the_first_request_that_follows_the_agents_notes() {
        let summary = |message: &Message| message.text().starts_with("[SUMMARY]");
        let messages = vec![
            Message::user("<environment_context>\n  <cwd>/home/dev/work</cwd>\n</environment_context>"),
            Message::user("Backfill March in staging."),
            Message::assistant("[SUMMARY] earlier turns"),
            Message::user("Now the prod load."),
        ];
        assert_eq!(head_cap(&messages, summary), Some(2));
        // A request pinned before the summary is not the head's.
        let pinned = vec![
            Message::user("Backfill March in staging."),
            Message::user("Now the prod load."),
            Message::assistant("[SUMMARY] earlier turns"),
        ];
        assert_eq!(head_cap(&pinned, summary), Some(1));
    }

    #[test]
    fn the_head_moves_past_the_results_of_its_calls() {
        let messages = vec![
            Message::system("s"),
            call("a"),
            Message::tool("a", "x"),
            Message::tool("a", "y"),
            Message::user("u"),
            Message::assistant("ok"),
            Message::user("again"),
        ];
        let found = find_boundaries(&messages, &estimates(&messages), &limits(10, 1));
        assert_eq!(found.head_end, 4);
        assert_eq!(found.tail_start, 6);
    }

    #[test]
    fn the_tail_takes_whole_groups_only() {
        let messages = vec![
            Message::system("s"),
            Message::user("ask"),
            call("a"),
            Message::tool("a", "x"),
            Message::tool("a", "y"),
            call("b"),
            Message::tool("b", "x"),
            Message::tool("b", "y"),
            Message::assistant("done"),
        ];
        // Protecting the last 2 messages would cut between b's results: the whole group comes.
        let found = find_boundaries(&messages, &estimates(&messages), &limits(30, 2));
        assert_eq!(found.tail_start, 5);
        let found = find_boundaries(&messages, &estimates(&messages), &limits(30, 0));
        assert_eq!(found.tail_start, 8);
    }

    #[test]
    fn the_tail_reaches_back_to_the_last_user_message() {
        let messages = vec![
            Message::system("s"),
            Message::user("first"),
            Message::assistant("ok"),
            Message::user("ask"),
            call("a"),
            Message::tool("a", "x"),
            Message::assistant("done"),
        ];
        let found = find_boundaries(&messages, &estimates(&messages), &limits(10, 1));
        assert_eq!(found.tail_start, 3);
    }

    #[test]
    fn progress_shrinks_a_tail_that_protect_last_n_made_too_big() {
        let mut messages = vec![Message::system("s"), Message::user("first")];
        for n in 0..10 {
            messages.push(Message::assistant(format!("a{n}")));
            messages.push(Message::user(format!("u{n}")));
        }
        let limits = Limits {
            tail_budget: 30,
            threshold: 100,
            summary_allowance: 20,
            protect_first_n: 1,
            protect_last_n: 20,
            head_cap: None,
        };
        let found = find_boundaries(&messages, &estimates(&messages), &limits);
        // Head 20 + tail + allowance 20 must stay under 100: 5 tail messages of 10.
        assert_eq!(found.head_end, 2);
        assert_eq!(messages.len() - found.tail_start, 5);
    }
}
