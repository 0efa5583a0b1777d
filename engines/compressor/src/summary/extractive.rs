//! The built-in summarizer: fills the template from the turns themselves, without a model.
//!
//! How it chooses what to keep, in order (each step only while the budget lasts):
//!
//! - the earliest and the latest request, always (the latest goes to Next Steps when no answer
//!   followed it: `Unanswered request:` when nothing was done for it yet, `Request in progress:`
//!   when the assistant acted on it), and the focus topic;
//! - with a focus topic, everything that mentions it, up to about two thirds of the budget;
//! - tier 1: other requests (latest first, with the answer to it; one cut to its start keeps
//!   the decision the user recorded at its end), constraints (not questions), the assistant's
//!   decision records as they stand (`Decision 3 revised: …` replaces `Decision 3: …`), error
//!   lines the user pasted, the most telling error line of each tool result, commands run,
//!   failures not resolved later, files the tools touched, issue numbers, advisories and
//!   tickets, the earlier summary's goal, constraints, decision records and commands;
//! - tier 2: the newest tool actions with their outcome (with the last line a command that
//!   succeeded printed), error lines from tool output, every path, URL, route, hash and version
//!   seen;
//! - tier 3: older tool actions, decisions the assistant stated, names in code spans;
//! - tier 4: identifiers found only inside file contents, lines of files read that mention
//!   errors (listed apart: source code says `catch (error)`), and the error lines of failures a
//!   later run of the same call fixed (listed under `Errors fixed since:`);
//! - tier 5: error lines, commands and ids of one shape (differing only in numbers, or in the
//!   place a compiler's message opens with) beyond the newest three.
//!
//! A tool's JSON answer (`{"output": "…", "metadata": {…}}`) is read as the text of its strings.
//!
//! Within a tier the newest comes first. Everything keeps to the target length, where the facts
//! take at most half of it before the prose has had its turn (and lines of a repeated shape none
//! of it); then the facts alone (identifiers, error lines, commands, requests) may fill the larger
//! room the engine took from the tail, as compact comma-separated lists by kind. A fact already
//! quoted verbatim by a chosen line (a path inside a command, a version inside `name-1.2.3`) is
//! not listed again. An earlier summary's lines follow the new ones of their section
//! (`previous`); selection and layout are in `draft`.

use std::{borrow::Cow, cmp::Reverse, collections::HashSet};

use ctxhost_engine_abi::{Message, Role, ToolCall};
use ctxhost_engine_kit::{
    stand_in::error_line,
    text::{head_and_tail, one_line, without_terminal_codes},
};

use super::{
    actions::{
        broader_keys, keys_a_success_settles, keys_of_the_compiler, publishes, settling_words,
        tells_a_finding, tells_todos, CiStep, Selection, WRITING,
    },
    draft::{cut_marked, Candidate, Draft, Group},
    facts::{
        extract_facts, extract_outcomes, replies_in_words, verbs, Action, Blocker, DecisionRecord, Fact,
        FactKind, Facts, Request, Sentence, Source,
    },
    patterns::{
        error_line_score, lifts_the_blocker, past_assent, tickets, FindingKind, RecordKey, TELLING_ERROR,
    },
    quoted::QuotedFacts,
    sections::{
        parse_sections, Section, ANSWERED_QUESTION, FOCUS, IN_PROGRESS, LATEST_ANSWER, LATEST_ANSWERED,
        LATEST_BEFORE_NEXT, PINNED_ANSWER, UNANSWERED,
    },
    Summarizer, SummaryError, SummaryRequest,
};

use crate::scan::FastMap;

/// The summarizer that needs no model: the default, and the fallback for every other one.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtractiveSummarizer;

impl ExtractiveSummarizer {
    /// The summarizer's name in reports.
    pub const NAME: &'static str = "extractive";

    /// A summary body of at most about `max_chars` characters (the template's headings are always
    /// written, even when they alone exceed it).
    pub fn summarize_with_limit(&self, request: &SummaryRequest<'_>, max_chars: usize) -> String {
        self.summarize_with_limits(request, max_chars, max_chars)
    }

    /// A summary body whose prose (actions, decisions, names) keeps to about `max_chars`
    /// characters, while the facts it lists verbatim (identifiers, error lines, commands, the
    /// user's requests) may fill up to `fact_chars` in all.
    pub fn summarize_with_limits(
        &self,
        request: &SummaryRequest<'_>,
        max_chars: usize,
        fact_chars: usize,
    ) -> String {
        let fact_chars = fact_chars.max(max_chars);
        let focus_words = focus_words(request.focus_topic);
        let scan_budget = scan_budget(request.middle, fact_chars);
        let mut facts = extract_facts(
            request.middle,
            &focus_words,
            scan_budget,
            request.pinned_request_at,
        );
        if let Some(previous) = request.previous_summary {
            attach_pinned_answer(&mut facts, previous, request.pinned_request_at);
        }
        if let (Some(at), Some(pinned)) = (request.pinned_request_at, request.pinned_request) {
            facts.on_kept_user_text(at, pinned);
        }
        // The first reply before the middle's first request answers a question the head keeps,
        // as the first after the request kept after the head answers that one. A task's first
        // reply is often a step on the way (`Baseline: ingress p95 = 412 ms`).
        let head_question = request.head_request.is_some_and(|head| asks_first(&head.text()));
        if head_question && facts.pinned_answer.is_none() {
            let first_request = facts.requests.first().map_or(request.middle.len(), |r| r.index);
            facts.pinned_answer = request.middle[..first_request]
                .iter()
                .enumerate()
                .find(|(_, message)| replies_in_words(message))
                .map(|(index, message)| (index, message.text()));
        }
        // The messages kept after the summary: a success there settles the failures it retries,
        // unless the user says there that they are blocked (verify23: four failures listed under
        // Blocked above the kept `pnpm -r build && pnpm lint && pnpm test` passing 412 tests;
        // verify24: the Semgrep Pro scan the user's `Blocked: … SEC-4475` names stays blocked
        // after the free scan passed).
        let passed_after = if facts.actions.iter().any(|action| action.failed) {
            for (offset, message) in request.tail.iter().enumerate() {
                if message.role == Role::User {
                    facts.on_kept_user_text(request.middle.len() + offset, message);
                }
            }
            passed_in(request.tail, request.middle.len(), &facts)
        } else {
            // What the kept messages say no longer blocks the work is lifted all the same.
            for (offset, message) in request.tail.iter().enumerate() {
                if message.role == Role::User {
                    facts.on_kept_user_lifts(request.middle.len() + offset, message);
                }
            }
            FastMap::default()
        };
        // A request in the tail: the user moved on, and nothing of the middle is still in
        // progress (verify18: a replay's summary read `Request in progress:` for a request done
        // and followed by another).
        if request.request_follows {
            facts.open_at_end = false;
            facts.moved_on = true;
        }
        // A line for each fact, request, constraint, decision and action, and a few more.
        let lines = facts.facts.len()
            + facts.requests.len()
            + facts.constraints.len()
            + facts.decisions.len()
            + facts.records.len()
            + facts.actions.len()
            + 8;
        let mut draft = Draft::new(facts.facts.len(), lines, focus_words);
        draft.add_new(
            &facts,
            passed_after,
            request.focus_topic,
            request.previous_summary.is_some(),
        );
        if let Some(previous) = request.previous_summary {
            draft.add_previous(&facts, previous);
        }
        draft.note_replaced_records();
        let summary = draft.render(max_chars, fact_chars);
        match without_terminal_codes(&summary) {
            Cow::Borrowed(_) => summary,
            Cow::Owned(plain) => plain,
        }
    }
}

/// The keys of the commands of `tail` (the messages kept after the summary) that passed, and of
/// those their success shows to pass (`cargo test` compiles what `cargo check` does), each with
/// where the first of them ran, counted on from the middle's `middle_len` messages. Only the calls
/// naming a program that one of the middle's failures ran are read again, with their results:
/// reading the whole tail cost a replay 7%.
fn passed_in(tail: &[Message], middle_len: usize, facts: &Facts<'_>) -> FastMap<String, usize> {
    let words: HashSet<&str> = facts
        .actions
        .iter()
        .filter(|action| action.failed)
        .flat_map(|action| action.keys.iter())
        .flat_map(|key| settling_words(key))
        .filter(|word| word.len() > 1)
        .collect();
    let mut wanted: HashSet<&str> = HashSet::new();
    let mut read_again: Vec<Message> = Vec::new();
    // Where in the tail each message read again stands.
    let mut at_in_tail: Vec<usize> = Vec::new();
    for (offset, message) in tail.iter().enumerate() {
        if message.has_tool_calls() {
            let calls: Vec<&ToolCall> = message
                .calls()
                .iter()
                .filter(|call| words.iter().any(|word| call.function.arguments.contains(word)))
                .collect();
            if !calls.is_empty() {
                wanted.extend(calls.iter().map(|call| call.id.as_str()));
                read_again.push(Message::assistant_calls(calls.into_iter().cloned().collect()));
                at_in_tail.push(offset);
            }
        } else if message.role == Role::Tool
            && message
                .tool_call_id
                .as_deref()
                .is_some_and(|id| wanted.contains(id))
        {
            read_again.push(message.clone());
            at_in_tail.push(offset);
        }
    }
    let mut passed: FastMap<String, usize> = FastMap::default();
    if read_again.is_empty() {
        return passed;
    }
    let outcomes = extract_outcomes(&read_again);
    for action in outcomes
        .actions
        .iter()
        .filter(|action| !action.failed && action.answered && !action.found_by_exit_code)
    {
        let at = middle_len + at_in_tail[action.index];
        for key in action
            .keys
            .iter()
            .cloned()
            .chain(action.keys.iter().flat_map(|key| keys_a_success_settles(key)))
        {
            passed.entry(key).or_insert(at);
        }
    }
    passed
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        // A summary must save something: never more than three quarters of its input.
        self.summarize_with_room(request, request.target_tokens)
    }

    fn summarize_with_room(
        &mut self,
        request: &SummaryRequest<'_>,
        room_tokens: u64,
    ) -> Result<String, SummaryError> {
        let input_cap = request.input_tokens.saturating_mul(3);
        let target = request.target_tokens.saturating_mul(4).min(input_cap);
        let room = room_tokens.saturating_mul(4).min(input_cap);
        Ok(self.summarize_with_limits(request, target as usize, room as usize))
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn reads_transcript(&self) -> bool {
        false
    }
}

/// Whether a sentence of the user's after message `after` (`None`: anywhere in the middle and the
/// messages kept after it) says that what `blocker` names no longer blocks the work: the same
/// ticket, or, when the blocker names none, two of its naming words (`the grant on
/// MARTS.ORDERS_DAILY is in place`). A model reading a lifted blocker under Blocked would wait on
/// it still. A lift naming only a ticket is about what the sentences naming it said, here or in
/// `earlier` lines (an earlier summary's requests): `PLAT-7781 is done` lifts `only the platform
/// team can publish a new base image` after `I filed PLAT-7781 for a new base image` (verify40).
pub(super) fn is_lifted(facts: &Facts<'_>, blocker: &str, after: Option<usize>, earlier: &[&str]) -> bool {
    // A plan turned down by name takes its blocker with it (`Switched to Redis instead of SQS`
    // after `… waiting on infra to provision the SQS queues`; verify45: it stood under Blocked).
    let abandoned = facts
        .turning_down
        .iter()
        .filter(|decision| after.is_none_or(|after| decision.index > after))
        .any(|decision| turns_down(decision.text, blocker));
    if abandoned {
        return true;
    }
    if facts.lifts.is_empty() {
        return false;
    }
    let blocker_tickets: Vec<&str> = tickets(blocker).collect();
    let blocker_words = naming_words(blocker);
    facts
        .lifts
        .iter()
        .filter(|lift| after.is_none_or(|after| lift.index > after))
        .any(|lift| {
            let lift_tickets: Vec<&str> = tickets(lift.text).collect();
            // `The blocker is lifted`: the newest one before it, whatever it named (verify39);
            // an earlier summary's, when the middle states none before it.
            if lift_tickets.is_empty() && lifts_the_blocker(lift.text) {
                let since = after.map_or(0, |after| after + 1);
                return !facts
                    .blockers
                    .iter()
                    .any(|other| (since..lift.index).contains(&other.sentence.index));
            }
            // A lift naming a ticket lifts that ticket's blocker; one naming none, the blocker
            // it shares two naming words with, though that blocker named a ticket in passing
            // (verify39: `bench-07 is free now` and `… Working on PERF-2211 meanwhile.`).
            if !blocker_tickets.is_empty() && !lift_tickets.is_empty() {
                return lift_tickets.iter().any(|ticket| blocker_tickets.contains(ticket));
            }
            let mut lift_words = naming_words(lift.text);
            // The user's next message after the blocker answers it, and names less of it: `I
            // released the lock, try again` after `… the state is locked by a stale apply`
            // (verify47: the blocker stayed under Blocked through the plan and apply after it).
            let replies = after.is_some_and(|after| {
                !facts
                    .requests
                    .iter()
                    .any(|request| request.index > after && request.index < lift.index)
            });
            if replies && lift_tickets.is_empty() && shares_a_stem(&lift_words, &blocker_words) {
                return true;
            }
            if !lift_tickets.is_empty() {
                let naming_the_ticket = |sentence: &&str| {
                    *sentence != lift.text && lift_tickets.iter().any(|ticket| sentence.contains(ticket))
                };
                let said = facts
                    .ticket_sentences
                    .iter()
                    .filter(|sentence| sentence.index <= lift.index)
                    .map(|sentence| sentence.text)
                    .chain(earlier.iter().copied())
                    .filter(naming_the_ticket);
                for sentence in said {
                    lift_words.extend(naming_words(sentence));
                }
            }
            lift_words.intersection(&blocker_words).count() >= 2
        })
}

/// Whether a word of `a` and one of `b` share a stem: one starts the other (`lock`, `locked`).
fn shares_a_stem(a: &HashSet<String>, b: &HashSet<String>) -> bool {
    a.iter().any(|word| {
        b.iter().any(|other| {
            let (short, long) = if word.len() <= other.len() {
                (word, other)
            } else {
                (other, word)
            };
            short.len() >= 4 && long.starts_with(short.as_str())
        })
    })
}

/// Whether a sentence of the user's after message `after` (`None`: anywhere in the middle and the
/// messages kept after it) permits what `rule` forbade: it quotes the same code (`git add -A`)
/// or shares two of its naming words. A model reading a revoked rule under Constraints would
/// keep to it (verify36: `never use git add -A` listed after `you may use git add -A again`).
pub(super) fn is_revoked(facts: &Facts<'_>, rule: &str, after: Option<usize>) -> bool {
    if facts.permits.is_empty() && facts.lifts.is_empty() {
        return false;
    }
    let code = |text: &'_ str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(|span| span.trim().to_owned())
            .filter(|span| !span.is_empty())
            .collect()
    };
    let rule_code = code(rule);
    let rule_words = naming_words(rule);
    let later = |sentence: &&Sentence<'_>| after.is_none_or(|after| sentence.index > after);
    let permitted = facts.permits.iter().filter(later).any(|permit| {
        code(permit.text).iter().any(|span| rule_code.contains(span))
            || naming_words(permit.text).intersection(&rule_words).count() >= 2
    });
    // A rule that holds for now waits for a go-ahead, which names less of it: `do not deploy
    // anything to prod yet` ends at `The blocker is lifted — you can proceed with prod`
    // (verify39, kept to the end of every replay).
    // Or by the lift of the blocker it was said with (`Blocker: stg-wh is down (INFRA-903). Don't
    // run anything against it until I say so.`, then `INFRA-903 is done`; verify44).
    let with_a_lifted_blocker = || {
        after.is_some_and(|at| {
            facts.blockers.iter().any(|blocker| {
                blocker.by_user
                    && blocker.sentence.index == at
                    && is_lifted(facts, blocker.sentence.text, Some(at), &[])
            })
        })
    };
    // A rule that is itself what blocked the work (`Blocked: CHG-20931 must be approved by the
    // DBA lead before you edit the primary's config.`) ends with that blocker (verify46: listed
    // under Constraints after `CHG-20931 approved by Dana, go ahead`).
    let is_a_lifted_blocker = || {
        facts.blockers.iter().any(|blocker| {
            blocker.by_user
                && overlaps(blocker.sentence.text, rule)
                && is_lifted(facts, blocker.sentence.text, Some(blocker.sentence.index), &[])
        })
    };
    permitted
        || is_a_lifted_blocker()
        || holds_for_now(rule)
            && (facts
                .permits
                .iter()
                .chain(&facts.lifts)
                .filter(later)
                .any(|go_ahead| !naming_words(go_ahead.text).is_disjoint(&rule_words))
                || with_a_lifted_blocker())
}

/// Whether `rule` says it holds only for a while (`do not deploy to prod yet`, `leave the flag
/// off for now`, `no merges until the freeze ends`).
fn holds_for_now(rule: &str) -> bool {
    const FOR_NOW: [&str; 5] = [" yet", "for now", "for the moment", "until ", " till "];
    let lower = rule.to_ascii_lowercase();
    FOR_NOW.iter().any(|words| lower.contains(words))
}

/// Whether the user said, after `failure` and before `settled_at` (where a later success went
/// around it, when one did), that something blocks the work and named what it failed on (a word
/// of its command or its error line besides the common ones): it stays blocked. A blocker said
/// only after the fix is another's (verify33: a PyPI upload's fixed 403 held by the user's later
/// `Blocked: the acme-oss organization on PyPI is still pending approval`).
fn held_by_a_stated_blocker(failure: &Action<'_>, facts: &Facts<'_>, settled_at: usize) -> bool {
    let after = failure.result_index.unwrap_or(failure.index);
    let words: HashSet<String> = facts
        .blockers
        .iter()
        .filter(|blocker| {
            // The request kept after the head stood just before the message its place names.
            blocker.by_user
                && blocker.sentence.index > after
                && blocker.sentence.index <= settled_at
                && !is_lifted(facts, blocker.sentence.text, Some(blocker.sentence.index), &[])
        })
        .flat_map(|blocker| naming_words(blocker.sentence.text))
        .collect();
    names_any(&failure.line, &words)
        || failure
            .first_error
            .as_deref()
            .is_some_and(|error| names_any(error, &words))
}

/// The words that name what the user says blocks the work: in the new middle, in the request kept
/// verbatim after the head, or an earlier summary's `Stated by the user: …` (`stated`). A failure
/// an earlier summary listed under Blocked that names one of them is held, though a later success
/// went around it (verify26: the workspace check failing on tokio read `passed on a later run`
/// once the user's `Blocked: … PLAT-3391` was the request kept verbatim).
pub(super) fn stated_blocker_words(stated: &[&str], facts: &Facts<'_>) -> HashSet<String> {
    facts
        .blockers
        .iter()
        .filter(|blocker| blocker.by_user)
        .filter(|blocker| !is_lifted(facts, blocker.sentence.text, Some(blocker.sentence.index), &[]))
        .map(|blocker| blocker.sentence.text)
        .chain(
            stated
                .iter()
                .copied()
                .filter(|stated| !is_lifted(facts, stated, None, &[])),
        )
        .flat_map(naming_words)
        .collect()
}

/// Whether `line` (a failure's) names one of `words`.
pub(super) fn names_any(line: &str, words: &HashSet<String>) -> bool {
    !words.is_empty() && naming_words(line).iter().any(|word| words.contains(word))
}

/// Words any failure or blocker says, which name nothing: sorted, for a binary search.
pub(super) const COMMON_WORDS: &[&str] = &[
    "about", "after", "again", "all", "also", "and", "any", "are", "bash", "been", "before", "blocked",
    "blocker", "blocks", "build", "but", "can", "can't", "cannot", "check", "did", "does", "done", "error",
    "errors", "exit", "fail", "failed", "fails", "failure", "fix", "fixed", "for", "from", "get", "has",
    "have", "here", "how", "into", "its", "just", "let", "line", "lines", "make", "more", "must", "need",
    "needs", "new", "not", "now", "off", "old", "once", "one", "only", "our", "out", "output", "over",
    "please", "ran", "run", "set", "shell", "should", "skip", "some", "still", "team", "terminal", "test",
    "tests", "that", "the", "their", "them", "then", "there", "they", "this", "too", "two", "until", "use",
    "was", "what", "when", "which", "who", "why", "will", "with", "would", "yet", "you", "your",
];

/// The words of `text` that name something (`tokio`, `semgrep`, `e2e`), lowercase: three
/// characters or more, not a number, not a word any failure or blocker says.
pub(super) fn naming_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !word.chars().all(|c| c.is_ascii_digit()))
        // A scan of the list was most of the 3% of a replay this took.
        .filter(|word| COMMON_WORDS.binary_search(&word.as_str()).is_err())
        .collect()
}

/// The answer an earlier summary gave to the request kept verbatim before it, given to that
/// request, now the middle's first message and no longer kept (a later request took its place):
/// the request reads answered, with its answer, rather than bare (verify21).
fn attach_pinned_answer<'a>(facts: &mut Facts<'a>, previous: &'a str, pinned_request_at: Option<usize>) {
    // Most earlier summaries hold no such line: not parsed again for it.
    if !previous.contains(PINNED_ANSWER) {
        return;
    }
    let Some(answer) = parse_sections(previous)[Section::Goal.index()]
        .iter()
        .find_map(|line| line.strip_prefix(PINNED_ANSWER))
    else {
        return;
    };
    if pinned_request_at == Some(0) {
        // Still kept verbatim: the earlier summary's line is carried as it stands, and a reply
        // in the new middle, after it, is other work's (verify24: the tower-http question's
        // answer gave way to `The code errors are gone…`).
        facts.pinned_answer = None;
        return;
    }
    if let Some(request) = facts.requests.first_mut().filter(|request| request.index == 0) {
        // Its answer came before anything the middle holds: a reply there answers later work
        // (verify24: the tower-http question was given the first reply after it in the new
        // middle, beside the earlier summary's answer).
        request.answered = true;
        request.answer = Some((0, Cow::Borrowed(answer)));
        facts.pinned_answer_given = true;
    }
}

/// Bytes of assistant text and tool output read per character of summary budget, within bounds:
/// enough to read the whole middle of a session of a few hundred messages (its facts are what the
/// summary keeps), and never more than a few milliseconds of scanning. At 48 an 8,000-token
/// window read 430 KB, and a monorepo triage of 500 KB never read its `git log` (verify37).
const SCAN_BYTES_PER_SUMMARY_CHAR: usize = 96;
const MIN_SCAN_BYTES: usize = 128 * 1024;
const MAX_SCAN_BYTES: usize = 1024 * 1024;
/// A middle bigger than this holds far more than any summary can: its scan budget shrinks in
/// proportion (never below the minimum), so that the cost stays bounded on a session of millions
/// of tokens while a session of a few hundred messages is read whole.
const LARGE_MIDDLE_BYTES: usize = 1024 * 1024;

/// Bytes of the middle to read, from the newest back, for a summary whose facts may fill
/// `fact_chars`.
fn scan_budget(middle: &[ctxhost_engine_abi::Message], fact_chars: usize) -> usize {
    let budget = fact_chars
        .saturating_mul(SCAN_BYTES_PER_SUMMARY_CHAR)
        .clamp(MIN_SCAN_BYTES, MAX_SCAN_BYTES);
    let middle_bytes: usize = middle
        .iter()
        .map(|message| {
            crate::summary::facts::content_pieces(&message.content)
                .map(str::len)
                .sum::<usize>()
        })
        .sum();
    if middle_bytes <= LARGE_MIDDLE_BYTES {
        return budget;
    }
    ((budget as u128 * LARGE_MIDDLE_BYTES as u128 / middle_bytes as u128) as usize).max(MIN_SCAN_BYTES)
}

/// How a blocker someone stated opens its line under Blocked.
pub(super) const STATED_BLOCKER: &str = "Stated by ";
/// Stated blockers listed from one middle, the newest first.
const STATED_BLOCKERS: usize = 2;
/// Longest stated blocker or measured result quoted.
const STATED_BLOCKER_CHARS: usize = 300;
/// The longest finding listed, in characters: a root cause names its fix at its end (verify44:
/// `… Fix: link geoserve to fmt:…` cut at 300).
const FINDING_CHARS: usize = 500;
/// How a measured result opens its line under Done (a version bumped `0.27.2 -> 1.6.8` is one too).
const RESULT: &str = "Result: ";
/// How a failure's line ends when a later run of the same program passed.
pub(super) const PASSED_LATER: &str = "; passed on a later run";
/// Measured results listed from one middle, the newest first.
const RESULTS: usize = 3;

/// How many of the assistant's labelled findings are listed, the newest first: diagnoses
/// (`Root cause: …`, `Culprit: …`; a bisect's culprit and the cause it explains are two)…
const DIAGNOSES: usize = 3;
/// …and outcomes (`Fixed: …`, `Rollback done: …`), apart: a session's later fixes left out the
/// root cause and culprit that one `compress` summarised (verify39).
const OUTCOMES: usize = 2;

/// Longest answer to the latest request quoted (its start and end, when longer).
const ANSWER_CHARS: usize = 400;
/// The answer to an earlier request or question, its start and end when longer, in characters.
pub(super) const EARLIER_ANSWER_CHARS: usize = 200;
/// The earlier requests (besides questions) whose answers are quoted, the newest.
pub(super) const EARLIER_ANSWERS: usize = 3;
/// Longest decision record quoted.
const DECISION_RECORD_CHARS: usize = 400;
/// Where numbered decision records sit in their section: before the other decisions, which sit
/// at minus their recency.
pub(super) const RECORDS_DISPLAY: i64 = i64::MIN / 2;
/// How the note on replaced decision records ends.
const REPLACED_NOTE_END: &str = "replaced by the revisions listed here)";

/// The count of the note on replaced decision records, when `line` is that note: an earlier
/// summary's count is added to the next one's.
pub(super) fn replaced_note_count(line: &str) -> Option<usize> {
    let count = line.strip_prefix('(')?.strip_suffix(REPLACED_NOTE_END)?;
    count.split(' ').next()?.parse().ok()
}

/// Whether two slices of the same text overlap.
fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (
        a.as_ptr() as usize..a.as_ptr() as usize + a.len(),
        b.as_ptr() as usize..b.as_ptr() as usize + b.len(),
    );
    a.start < b.end && b.start < a.end
}

/// Action lines ranked with the facts; older ones rank below them.
const RECENT_ACTIONS: usize = 8;
/// The newest of them ranks with the requests, and is kept: what was done last is what a model
/// resumes from, and without it Progress read `(none)` after a session of work whenever the
/// requests and the facts filled the prose's room.
const NEWEST_ACTIONS: usize = 1;

/// Where a file printed and nothing else done ranks, beyond the newest action: below older work
/// and below the work an earlier summary carries (tier 3), since the file's name is kept as a fact
/// anyway. A replay's folds had lost a smoke test that passed, and the command that fixed its
/// broker, to the newest `cat docs/notes-N.txt` (verify45).
pub(super) const LOOK_UP_TIER: u8 = 4;

/// How many of the newest actions with lasting effects (a publish, a push, a deploy) rank with the
/// newest action.
const PUBLISHED_ACTIONS: usize = 3;

/// How many of the newest successes that fixed an earlier failure rank with the newest action.
const FIXING_ACTIONS: usize = 2;

/// Requests listed one by one, besides the first.
const MAX_LISTED_REQUESTS: usize = 200;

/// Longest request quoted, for the ten latest and for the rest.
const RECENT_REQUEST_CHARS: usize = 600;
/// 200 characters and the cut marker.
const OLDER_REQUEST_CHARS: usize = 201;
/// The start of a long command quoted (and the cut marker).
const COMMAND_CHARS: usize = 300;
const LATEST_REQUEST_CHARS: usize = 1_200;
impl<'t> Draft<'t> {
    /// `passed_after`: the keys of the commands that passed in the messages kept after the part
    /// summarised, with where the first of each ran ([`passed_in`]).
    pub(super) fn add_new(
        &mut self,
        facts: &Facts<'t>,
        passed_after: FastMap<String, usize>,
        focus: Option<&str>,
        has_previous: bool,
    ) {
        if let Some(focus) = focus {
            let candidate = self.push(Section::Goal, 0, 0, Cow::Owned(format!("{FOCUS}{focus}")));
            candidate.always = true;
            candidate.display = i64::MIN;
        }
        self.add_requests(facts, has_previous);
        // A decision record is listed, or replaced, as a decision: not again as a rule (verify17:
        // a reversed `Decision 1: keep a thin shim … so external consumers don't break` stood
        // under Constraints beside its reversal; `Decision 1: deactivate the key (don't delete
        // it)` was listed twice).
        let constraints = facts.constraints.iter().filter(|sentence| {
            !facts
                .records
                .iter()
                .any(|record| overlaps(sentence.text, record.text))
                && !is_revoked(facts, sentence.text, Some(sentence.index))
        });
        for sentence in constraints {
            let candidate = self.push(
                Section::Constraints,
                1,
                sentence.index + 1,
                Cow::Borrowed(sentence.text),
            );
            candidate.focus = facts.is_focus(sentence.index);
        }
        self.add_stated_blockers(facts);
        self.add_results(facts);
        let findings = self.add_findings(facts);
        let replacing = self.add_decision_records(facts);
        // The user's own decisions rank with their constraints and, quoted as they wrote them,
        // may use the room for facts as their requests do; the assistant's reasoning ranks below.
        let decisions = (facts.user_decisions.iter().map(|sentence| (sentence, true)))
            .chain(facts.decisions.iter().map(|sentence| (sentence, false)))
            // A sentence of a recorded decision is listed with its record, or was replaced; one
            // of a finding listed (`Root cause: 559e0e8 (#1412) removed …`) is listed with it,
            // and one that replaced a record in its place.
            .filter(|(sentence, _)| {
                !facts
                    .records
                    .iter()
                    .any(|record| overlaps(sentence.text, record.text))
                    && !findings.iter().any(|finding| overlaps(sentence.text, finding))
                    && !replacing
                        .iter()
                        .any(|replacing| replacing.as_ptr() == sentence.text.as_ptr())
            });
        // A decision the user recorded in a request is quoted with it as well (`add_requests`).
        let decisions = decisions.filter(|(sentence, by_user)| {
            !by_user
                || !facts
                    .requests
                    .iter()
                    .any(|request| request.index == sentence.index)
        });
        for (sentence, by_user) in decisions {
            let candidate = self.push(
                Section::Decisions,
                if by_user { 2 } else { 3 },
                sentence.index + 1,
                Cow::Borrowed(sentence.text),
            );
            candidate.focus = facts.is_focus(sentence.index);
            candidate.keeps_fact = by_user;
        }
        let repeated = repeated_shapes(facts);
        let fixed_later = self.add_actions(facts, &repeated, passed_after);
        // The most telling error line of each result (`PSQLException: FATAL: password
        // authentication failed` over the pool's `Exception during pool initialization`): the
        // cause a log names, which a short summary kept behind newer, vaguer lines.
        let telling: HashSet<usize> = facts
            .actions
            .iter()
            .flat_map(|action| &action.fact_ids)
            .copied()
            .filter(|&id| {
                let fact = &facts.facts[id];
                fact.kind == FactKind::Error && error_line_score(&fact.text) == TELLING_ERROR
            })
            .collect();
        let printed_by = commands_by_result(facts);
        for (id, fact) in facts.facts.iter().enumerate() {
            // An error line only a failure fixed later printed is history: it gives way to the
            // facts of the work as it stands (a refactor's 99 compiler errors, all fixed, were
            // half of its summary).
            let standing = if fact.kind != FactKind::Error {
                Standing::Plain
            } else if fixed_later.contains(&fact.last_seen) {
                Standing::FixedLater
            } else if telling.contains(&id) {
                Standing::Telling
            } else {
                Standing::Plain
            };
            self.add_fact(id, fact, repeated[id], standing);
            if fact.kind == FactKind::Error && fact.source == Source::ToolOutput {
                let candidate = self.candidates.last_mut().expect("just added");
                if candidate.group == Group::Errors {
                    candidate.under = printed_by.get(&fact.last_seen).cloned();
                }
            }
        }
        self.cover_quoted_facts(facts);
    }

    /// The decisions the assistant or the user recorded (`Decision 3: …`), as they stand: a later
    /// record with the same number (`Decision 3 revised: …`) replaces the earlier, which is not
    /// listed, and a revision without a number (`Reverse yesterday's decision: …`) the latest
    /// record without one, so that a model reading the summary cannot take a reversed decision
    /// for the current one.
    /// Numbered records are listed in their numbers' order, then the others newest first; they
    /// rank with the user's constraints.
    ///
    /// A record a later decision turns down by name (`Switching to Qdrant instead of pgvector:
    /// …` after `Decision: go with pgvector 0.8.0 …`) is replaced by it, listed in its place
    /// (verify45: the reversed record stood alone under Key Decisions, and its reversal, ranked
    /// as reasoning, gave way). Returns the decisions listed so.
    fn add_decision_records(&mut self, facts: &Facts<'t>) -> Vec<&'t str> {
        let records = &facts.records;
        let mut replacing = Vec::new();
        for (record, standing) in records.iter().zip(record_standings(records)) {
            if standing.replaced {
                if !standing.restated {
                    self.replaced_records += 1;
                }
                continue;
            }
            let turned_down_by = facts
                .turning_down
                .iter()
                .filter(|decision| decision.index > record.index)
                .filter(|decision| turns_down(decision.text, record.text))
                .max_by_key(|decision| decision.index);
            if let Some(decision) = turned_down_by {
                self.replaced_records += 1;
                // A revision that is a record of its own is listed as one.
                let a_record = records
                    .iter()
                    .any(|other| other.text.as_ptr() == decision.text.as_ptr());
                if !a_record
                    && !replacing
                        .iter()
                        .any(|listed: &&str| listed.as_ptr() == decision.text.as_ptr())
                {
                    let text = cut_marked(decision.text, DECISION_RECORD_CHARS);
                    let candidate = self.push(Section::Decisions, 1, decision.index + 1, text);
                    candidate.focus = facts.is_focus(decision.index);
                    candidate.keeps_fact = true;
                    replacing.push(decision.text);
                }
                continue;
            }
            let text = cut_marked(record.text, DECISION_RECORD_CHARS);
            let candidate = self.push(Section::Decisions, 1, record.index + 1, text);
            if let Some(key) = record.key {
                candidate.display = RECORDS_DISPLAY + i64::from(key.number);
            }
            candidate.focus = facts.is_focus(record.index);
            candidate.keeps_fact = true;
        }
        replacing
    }

    /// Says how many decision records were replaced, after the records that stand: a model then
    /// knows that the decisions changed, and that the earlier versions it may find quoted in
    /// requests are not current.
    pub(super) fn note_replaced_records(&mut self) {
        let replaced = self.replaced_records;
        if replaced == 0 {
            return;
        }
        let plural = if replaced == 1 {
            "record was"
        } else {
            "records were"
        };
        let text = format!("({replaced} earlier {plural} {REPLACED_NOTE_END}");
        let candidate = self.push(Section::Decisions, 1, 0, Cow::Owned(text));
        candidate.display = i64::MAX;
    }

    /// A line that quotes a fact verbatim covers it: a command names its path and version
    /// (`pip install x==1.2.3`), a traceback's `/srv/app/src/x.py` holds `src/x.py`,
    /// `warehouse-client-3.7.9` holds `3.7.9`. Once such a line is chosen, listing the fact again
    /// would waste the summary's room. Every line is searched for every fact (`quoted`).
    fn cover_quoted_facts(&mut self, facts: &Facts<'t>) {
        let patterns: Vec<&str> = facts.facts.iter().map(|fact| fact.text.as_ref()).collect();
        let quoted = QuotedFacts::new(&patterns);
        for candidate in &mut self.candidates {
            let own = candidate.fact;
            // Relevant Files still lists the files an action line names.
            let progress = matches!(
                candidate.section,
                Section::Done | Section::InProgress | Section::Blocked
            );
            let covers = &mut candidate.covers;
            quoted.for_each_in(candidate.text.as_ref(), |id| {
                let listed_elsewhere = progress && facts.facts[id].kind == FactKind::Path;
                if Some(id) != own && !listed_elsewhere {
                    covers.push(id);
                }
            });
        }
    }

    /// The user's requests, verbatim up to a length. The latest is always kept; so is the earliest
    /// when no earlier summary holds older ones.
    fn add_requests(&mut self, facts: &Facts<'t>, has_previous: bool) {
        let count = facts.requests.len();
        // More than a summary could quote: the oldest are only counted.
        let unlisted = count.saturating_sub(MAX_LISTED_REQUESTS + 1);
        if unlisted > 0 {
            let text = format!("({unlisted} earlier requests are not listed)");
            self.push(Section::Goal, 1, 0, Cow::Owned(text)).display = i64::MAX;
        }
        // The newest earlier question answered: its pair ranks with the requests, the older
        // pairs below them (verify26: at its tier, pairs took the room of older requests and a
        // decision; all below it, every pair of a Rust upgrade's summaries was lost).
        let newest_question = facts
            .requests
            .iter()
            .enumerate()
            .take(count.saturating_sub(1))
            .rev()
            .find(|(_, request)| !answered_question(request).is_empty() && request.answer.is_some())
            .map(|(position, _)| position);
        // A request the user repeated word for word is listed once, at its latest place.
        let mut latest_of: FastMap<&str, usize> = FastMap::default();
        for (position, request) in facts.requests.iter().enumerate() {
            latest_of.insert(request.text.trim(), position);
        }
        // A request that is a decision record a later one replaced (`Decision: … Go with a full
        // refresh`, reversed since) stands under Key Decisions as its replacement: listed as a
        // goal, it read as the current one (verify18).
        let replaced_requests: HashSet<usize> = facts
            .records
            .iter()
            .zip(record_standings(&facts.records))
            .filter(|(record, standing)| standing.replaced && opens_its_message(record, facts))
            .map(|(record, _)| record.index)
            .collect();
        // A message of the user's that says only what blocks the work is listed under Blocked,
        // whole, while it stands: under Goal too, it read as a goal (verify42).
        let said_under_blocked: Vec<(usize, &str)> = standing_blockers(facts)
            .into_iter()
            .filter(|blocker| {
                blocker.by_user && blocker.sentence.text.chars().count() <= STATED_BLOCKER_CHARS
            })
            .map(|blocker| (blocker.sentence.index, blocker.sentence.text.trim()))
            .collect();
        for (position, request) in facts.requests.iter().enumerate() {
            if position > 0 && position <= unlisted {
                continue;
            }
            let latest = position + 1 == count;
            if position > 0 && !latest && said_under_blocked.contains(&(request.index, request.text.trim())) {
                continue;
            }
            if position > 0 && !latest && latest_of[request.text.trim()] != position {
                continue;
            }
            if !latest && replaced_requests.contains(&request.index) {
                continue;
            }
            let open = latest && !request.answered && facts.open_at_end && !facts.moved_on;
            let text: &str = &request.text;
            let (section, tier, label, limit) = if open {
                let acted_on = facts.actions.len() > facts.in_progress_from;
                (
                    Section::NextSteps,
                    0,
                    if acted_on { IN_PROGRESS } else { UNANSWERED },
                    LATEST_REQUEST_CHARS,
                )
            } else if latest && !request.answered && facts.moved_on {
                // Followed by another request, not by an answer: neither open nor answered.
                (Section::Goal, 0, LATEST_BEFORE_NEXT, LATEST_REQUEST_CHARS)
            } else if latest {
                (Section::Goal, 0, LATEST_ANSWERED, LATEST_REQUEST_CHARS)
            } else if position == 0 && !has_previous {
                (Section::Goal, 0, answered_question(request), LATEST_REQUEST_CHARS)
            } else {
                // An earlier question is kept with its answer or not at all, and the two together
                // rank below the requests and decisions that still stand, but for the newest: at
                // their tier, the pairs pushed out an older decision record (a planning chat at
                // 8,000 tokens lost `Decision 2: orchestrator = Dagster+ …` to five answers).
                let label = answered_question(request);
                let pair = !label.is_empty() && request.answer.is_some();
                let tier = if pair && newest_question != Some(position) {
                    2
                } else {
                    1
                };
                let limit = if count - position <= 10 {
                    RECENT_REQUEST_CHARS
                } else {
                    OLDER_REQUEST_CHARS
                };
                (Section::Goal, tier, label, limit)
            };
            let quoted = cut_marked(text.trim(), limit);
            let mut text = format!("{label}{quoted}");
            // A request cut before the decision the user recorded at its end keeps it: the
            // decision is what the rest of the conversation builds on.
            if let Cow::Owned(_) = quoted {
                for decision in facts
                    .user_decisions
                    .iter()
                    .filter(|sentence| sentence.index == request.index)
                {
                    text.push(' ');
                    text.push_str(decision.text.trim());
                }
            }
            if request.images > 0 {
                let plural = if request.images == 1 { "" } else { "s" };
                let space = if text.is_empty() || text.ends_with(' ') {
                    ""
                } else {
                    " "
                };
                text.push_str(&format!(
                    "{space}[{} image{plural} sent with it, not kept]",
                    request.images
                ));
            }
            let request_at = self.candidates.len();
            let candidate = self.push(section, tier, request.index + 1, Cow::Owned(text));
            candidate.always = tier == 0;
            candidate.keeps_fact = true;
            candidate.focus = facts.is_focus(request.index);
            let display = candidate.display;
            // The answer to the latest request, or, shorter, to an earlier question (verify20:
            // which line checks the signature, answered, and lost). What the user asked to know
            // may use the facts' room: a docs session's listings of built pages pushed out the
            // Python version the user had asked for (verify21).
            // And what an earlier request got, below the requests: the bundled migration's
            // `Day 2 done: … commit ec99108 (#713)` was in no summary once Day 3 was asked.
            // Not one that asks back (`… Should I?`): the user's next request answers it. Only
            // the newest few: a long chat's answers took the place of its error lines at 8,000
            // tokens.
            let answer_room = match (latest, open) {
                (true, false) => Some((1, ANSWER_CHARS)),
                (false, _) if label == ANSWERED_QUESTION => Some((2, EARLIER_ANSWER_CHARS)),
                (false, _)
                    if count - position <= EARLIER_ANSWERS + 1
                        && !request.answer.as_ref().is_some_and(|(_, text)| asks_back(text)) =>
                {
                    Some((2, EARLIER_ANSWER_CHARS))
                }
                _ => None,
            };
            // An answer that said what blocked the work, lifted since, would read as the state of
            // things beside an empty Blocked (verify43: `Its answer: Blocked: the staging node
            // pool can't pull … REG-5120` after REG-5120 was resolved).
            // Nor one that opened with a decision replaced since: quoted, it read as the current
            // one beside its reversal (verify47).
            let answer = request.answer.as_ref().filter(|(answer, text)| {
                !states_a_lifted_blocker(facts, *answer)
                    && !opens_with_a_replaced_record(facts, *answer, text)
            });
            if let (Some(room), Some((answer, text))) = (answer_room, answer) {
                let candidate = self.add_answer(text, *answer, display, room);
                candidate.focus = facts.is_focus(*answer);
                // What the user asked to know may use the facts' room: a summary at a small
                // window had room for a listing's file names and not for `CI uses Xcode 15.4`
                // (verify27). What an earlier task ended with restates its work: prose's room.
                candidate.beyond_prose = latest || label == ANSWERED_QUESTION;
                candidate.after = Some(request_at);
            }
        }
        if let Some((index, answer)) = &facts.pinned_answer {
            let flat = one_line(answer);
            let text = format!("{PINNED_ANSWER}{}", head_and_tail(&flat, ANSWER_CHARS));
            let candidate = self.push(Section::Goal, 1, index + 1, Cow::Owned(text));
            candidate.focus = facts.is_focus(*index);
            candidate.beyond_prose = true;
        }
    }

    /// What the user or the assistant said blocks the work, the newest few, under Blocked: a
    /// permission the prod role lacks, a ticket prod waits on, is no failed command (verify16:
    /// `Blocked: (none)` while the assistant had said `Blocked: the prod reader role …`). The
    /// newest ranks with the failures, the one before below them; nothing says when one is
    /// lifted, so an earlier summary's give way first (`previous`).
    fn add_stated_blockers(&mut self, facts: &Facts<'t>) {
        for (position, blocker) in standing_blockers(facts).into_iter().enumerate() {
            let text = blocker.sentence.text;
            let tier = if position == 0 { 1 } else { 2 };
            let who = if blocker.by_user {
                "the user"
            } else {
                "the assistant"
            };
            let line = format!(
                "{STATED_BLOCKER}{who}: {}",
                cut_marked(text, STATED_BLOCKER_CHARS)
            );
            let candidate = self.push(
                Section::Blocked,
                tier,
                blocker.sentence.index + 1,
                Cow::Owned(line),
            );
            candidate.focus = facts.is_focus(blocker.sentence.index);
            candidate.beyond_prose = tier == 1;
        }
    }

    /// What the assistant measured, before and after (`queryid -6021…: 2381.442 ms -> 3.112 ms`),
    /// under Done: what the work achieved, which no command's line says (verify16: lost in all
    /// 14 summaries of a tuning session). The newest ranks with the newest actions, the two
    /// before it below them.
    fn add_results(&mut self, facts: &Facts<'t>) {
        // A labelled finding (`Cause: … 2381 ms -> 3 ms`) is listed as one, not twice.
        let within = |inner: &str, outer: &str| {
            let (start, end) = (outer.as_ptr() as usize, outer.as_ptr() as usize + outer.len());
            (start..end).contains(&(inner.as_ptr() as usize))
        };
        let results = facts.results.iter().filter(|sentence| {
            !facts
                .findings
                .iter()
                .any(|finding| within(sentence.text, finding.text) || within(finding.text, sentence.text))
        });
        for (newer, sentence) in results.rev().take(RESULTS).enumerate() {
            let tier = if newer == 0 { 1 } else { 2 };
            // The assistant's own `Result: …` is not labelled twice.
            let text = sentence.text.trim_start();
            let said = text
                .get(..RESULT.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(RESULT));
            let text = if said { &text[RESULT.len()..] } else { text };
            let line = format!("{RESULT}{}", cut_marked(text, STATED_BLOCKER_CHARS));
            let candidate = self.push(Section::Done, tier, sentence.index + 1, Cow::Owned(line));
            candidate.focus = facts.is_focus(sentence.index);
            candidate.beyond_prose = tier == 1;
        }
    }

    /// What the assistant found, under the label it gave (`Culprit: 7c4e91a2d0 (#897) …`), under
    /// Done: the newest diagnosis and the newest outcome rank with the newest actions, those
    /// before them below. Returns the findings listed, here or whole in the answer to the latest
    /// request.
    fn add_findings(&mut self, facts: &Facts<'t>) -> Vec<&'t str> {
        // The answer to the latest request is kept with it: a finding it states is not repeated.
        let latest_answer = facts
            .requests
            .last()
            .filter(|request| request.answered)
            .and_then(|request| request.answer.as_ref())
            .map(|(_, answer)| answer.as_ref());
        let mut seen: Vec<&'t str> = Vec::new();
        let mut answered: Vec<&'t str> = Vec::new();
        let (mut diagnoses, mut outcomes) = (0, 0);
        for sentence in facts.findings.iter().rev() {
            if seen.contains(&sentence.text) {
                continue;
            }
            if let Some(answer) = latest_answer.filter(|answer| answer.contains(sentence.text)) {
                // Quoted whole with the answer when the answer is.
                if answer.chars().count() <= ANSWER_CHARS {
                    answered.push(sentence.text);
                }
                continue;
            }
            let kind = FindingKind::of(sentence.text);
            let (listed, most) = match kind {
                FindingKind::Diagnosis => (&mut diagnoses, DIAGNOSES),
                FindingKind::Outcome => (&mut outcomes, OUTCOMES),
            };
            if *listed == most {
                continue;
            }
            let tier = if *listed == 0 { 1 } else { 2 };
            *listed += 1;
            seen.push(sentence.text);
            let text = cut_marked(sentence.text, FINDING_CHARS);
            let candidate = self.push(Section::Done, tier, sentence.index + 1, text);
            candidate.focus = facts.is_focus(sentence.index);
            candidate.beyond_prose = tier == 1;
            if diagnoses == DIAGNOSES && outcomes == OUTCOMES {
                break;
            }
        }
        seen.extend(answered);
        seen
    }

    /// The assistant's answer to the latest request (its start and end when long), right after
    /// it: what the part summarised concluded (`Platform total ~$4,230/month`), which no other
    /// line keeps of an answer in prose.
    fn add_answer(
        &mut self,
        answer: &str,
        index: usize,
        request_display: i64,
        (tier, chars): (u8, usize),
    ) -> &mut Candidate<'t> {
        let flat = one_line(answer);
        let text = format!("{LATEST_ANSWER}{}", head_and_tail(&flat, chars));
        let candidate = self.push(Section::Goal, tier, index + 1, Cow::Owned(text));
        candidate.display = request_display + 1;
        candidate
    }

    /// The actions, each on its line; one whose command repeats the shape of others (`head -n
    /// 48 data.csv` with twenty counts, `repeated`) ranks as that command does. Returns where
    /// the results of failures that a later success of the same call fixed are.
    fn add_actions(
        &mut self,
        facts: &Facts<'t>,
        repeated: &[bool],
        passed_after: FastMap<String, usize>,
    ) -> HashSet<usize> {
        // A failure is resolved when a later success runs one of its programs, or acts on its
        // path: each key, with where the first success after the action at hand ran (its
        // message, and the action itself).
        // Every later success of each key, the earliest last.
        let mut resolved: FastMap<&str, Vec<(usize, usize)>> = FastMap::default();
        // The programs a success shows to pass besides its own (`cargo test` compiles what
        // `cargo check` does), and those that passed after the part summarised (no action of
        // the middle's).
        let mut settled: FastMap<String, Vec<(usize, usize)>> = passed_after
            .into_iter()
            .map(|(key, index)| (key, vec![(index, usize::MAX)]))
            .collect();
        let mut blocked = vec![false; facts.actions.len()];
        // Failures that block nothing though nothing fixed them: a call the user refused, and a
        // lookup that found nothing (`File not found: src/crawler/session.py`, a page's 404)
        // before a later one of the same tool found what the work needed (verify36: listed
        // under Blocked in 17 of 18 summaries of a research session).
        let mut moved_on = vec![false; facts.actions.len()];
        let mut found_later: HashSet<&str> = HashSet::new();
        // The successes that fixed an earlier failure: the fix a continuing agent must not redo.
        let mut fixing = vec![false; facts.actions.len()];
        let mut fixed_later = HashSet::new();
        // A CI run seen passing later: what an earlier run's log of failed jobs printed was
        // fixed (verify40: `gh run view --log-failed`'s failures listed under Errors after the
        // rerun went green; the log read is no failure, and the rerun is another program).
        let mut ci_passed_later = false;
        // The nearest later failed run of each command, and whether its output was read whole:
        // what an earlier run printed and it no longer does was fixed on the way (verify46:
        // DueBadge's TS2345 stood under Blocked after the rerun of `pnpm -r typecheck` printed
        // only Tasks.tsx's TS2322).
        let mut failed_again: FastMap<&str, bool> = FastMap::default();
        for (at, action) in facts.actions.iter().enumerate().rev() {
            if action.looks_up && !action.failed && action.answered {
                found_later.insert(action.tool);
            }
            match action.ci {
                CiStep::Checked => ci_passed_later = true,
                CiStep::ReadLog if ci_passed_later => fixed_later.extend(action.result_index),
                _ => {}
            }
            if action.failed && (action.refused || (action.looks_up && found_later.contains(action.tool))) {
                moved_on[at] = true;
            } else if !action.failed && action.answered && !action.found_by_exit_code && !action.skipped_all {
                for key in &action.keys {
                    resolved.entry(key.as_str()).or_default().push((action.index, at));
                    for settles in keys_a_success_settles(key) {
                        settled.entry(settles).or_default().push((action.index, at));
                    }
                }
                // What a command retried on its way to success was fixed by it (verify28: a
                // migration's `lock timeout` listed under Errors after its retry loop applied
                // it).
                if action.recovered {
                    fixed_later.extend(action.result_index);
                }
            } else if action.failed {
                // A selection of a test suite is settled by the whole suite passing too, a tool's
                // run by the project's target for it.
                // And a compiler's diagnostic by that compiler passing, whatever printed it.
                let compiler = action
                    .keys
                    .first()
                    .zip(action.first_error.as_deref())
                    .map(|(key, error)| keys_of_the_compiler(key, error))
                    .unwrap_or_default();
                let keys: Vec<Cow<'_, str>> = action
                    .keys
                    .iter()
                    .map(|key| Cow::Borrowed(key.as_str()))
                    .chain(
                        action
                            .keys
                            .iter()
                            .flat_map(|key| broader_keys(key))
                            .chain(compiler)
                            .map(Cow::Owned),
                    )
                    .collect();
                // Not by a run that chose another part of the suite (verify40: firefox's failure
                // read `passed on a later run` after chromium's run passed), whichever key it
                // settles by (verify46: a filtered `pnpm test` settled `pnpm -r test` as `js test`).
                // A success after the part summarised shows its key alone.
                let selection = command_of(facts, action).map(Selection::of);
                let shows_it = |&&(_, by): &&(usize, usize)| {
                    selection.as_ref().is_none_or(|selection| {
                        facts
                            .actions
                            .get(by)
                            .and_then(|passed| command_of(facts, passed))
                            .is_none_or(|passed| !selection.differs_from(&Selection::of(passed)))
                    })
                };
                let settled_at = keys
                    .iter()
                    .flat_map(|key| {
                        let own = resolved
                            .get(key.as_ref())
                            .and_then(|successes| successes.iter().rev().find(shows_it));
                        let by_another = settled
                            .get(key.as_ref())
                            .and_then(|successes| successes.iter().rev().find(shows_it));
                        [own, by_another]
                    })
                    .flatten()
                    .min()
                    .copied();
                let command = command_of(facts, action);
                let superseded = command.and_then(|command| failed_again.get(command)) == Some(&true);
                if let Some(command) = command {
                    failed_again.insert(command, action.read_whole);
                }
                match settled_at {
                    // Its run of the command still fails, the later run tells how: the errors
                    // only this one printed are fixed, and the later run stands for it.
                    None if superseded => {
                        moved_on[at] = true;
                        fixed_later.extend(action.result_index);
                    }
                    None => blocked[at] = true,
                    // Worked around, not fixed (verify24: `cargo check --workspace` failing on
                    // tokio, the user's `Blocked: acme-grpc-client needs a tokio-1 release`, then
                    // the crate excluded and `cargo test --workspace` passing).
                    Some((settled_at, _)) if held_by_a_stated_blocker(action, facts, settled_at) => {
                        blocked[at] = true;
                    }
                    Some((_, by)) => {
                        fixed_later.extend(action.result_index);
                        if let Some(fix) = fixing.get_mut(by) {
                            *fix = true;
                        }
                    }
                }
            }
        }
        // What ran under each key, its own or one it settles: a later summary's Blocked line is
        // resolved only by a run that chose its part of the suite.
        let keyed = resolved
            .iter()
            .map(|(key, successes)| (*key, successes))
            .chain(settled.iter().map(|(key, successes)| (key.as_str(), successes)));
        for (key, successes) in keyed {
            let commands = successes
                .iter()
                .filter_map(|&(_, by)| command_of(facts, facts.actions.get(by)?))
                .map(str::to_owned);
            self.passed_commands
                .entry(key.to_owned())
                .or_default()
                .extend(commands);
        }
        self.resolved.extend(
            resolved
                .into_keys()
                .filter(|key| !key.is_empty())
                .map(str::to_owned)
                .chain(settled.into_keys()),
        );
        // Identical lines collapse into their latest occurrence, with a count.
        let mut repeats: FastMap<&str, (usize, usize)> = FastMap::default();
        for (at, action) in facts.actions.iter().enumerate() {
            let entry = repeats.entry(action.line.as_str()).or_insert((0, at));
            entry.0 += 1;
            entry.1 = at;
        }
        self.add_unitemised(facts);
        // The newest lines tell what was going on; older ones rank below the facts, which the
        // Files and Critical Context lists keep more compactly than action lines do.
        let mut newer_lines = 0;
        // How many itemised lines are newer than each action's.
        let mut newer = vec![usize::MAX; facts.actions.len()];
        for (at, action) in facts.actions.iter().enumerate().rev() {
            if action.itemised && repeats[action.line.as_str()].1 == at {
                newer[at] = newer_lines;
                newer_lines += 1;
            }
        }
        // How many actions with lasting effects are newer than each: a release's upload to PyPI
        // is what a continuing agent must not repeat, and it had given way to the newer listings
        // of package files (verify25).
        let mut published = 0;
        let mut newer_published = vec![usize::MAX; facts.actions.len()];
        // And how many successes that fixed a failure: the newest fixes rank with the newest
        // action (verify34: `make test`, `golangci-lint run` and `npm test` passing after the
        // failures they fixed were in no Done list of 21 summaries).
        let mut fixes = 0;
        let mut newer_fixing = vec![usize::MAX; facts.actions.len()];
        for (at, action) in facts.actions.iter().enumerate().rev() {
            let done = action.itemised && !action.failed && action.answered;
            if done && action.keys.iter().any(|key| publishes(key)) {
                newer_published[at] = published;
                published += 1;
            }
            if done && fixing[at] {
                newer_fixing[at] = fixes;
                fixes += 1;
            }
        }
        // The newest action done before the request in progress is kept too: an incident's
        // containment steps all gave way to the queries in progress (verify17: `Done: (none)`
        // in every summary).
        let mut newest_done: Option<(usize, usize)> = None;
        // A todo list is written whole each time: the newest is the plan, the older ones are
        // past states of it.
        let newest_todos = facts
            .actions
            .iter()
            .rposition(|action| action.answered && tells_todos(&action.line));
        for (at, action) in facts.actions.iter().enumerate() {
            if !action.itemised {
                continue;
            }
            let (times, last) = repeats[action.line.as_str()];
            if last != at {
                continue;
            }
            let todos = action.answered && tells_todos(&action.line);
            if todos && newest_todos != Some(at) {
                continue;
            }
            let mut text = if action.answered {
                action.line.clone()
            } else {
                format!("[{}] called; its result is not kept", action.tool)
            };
            if times > 1 {
                text.push_str(&format!(" (×{times})"));
            }
            // A failure a later run resolved reads as done work: say so, or `-> exit 1` under
            // Done reads as a failure left behind.
            if action.failed && !blocked[at] && !moved_on[at] {
                text.push_str(PASSED_LATER);
            }
            let only_read = action.prints_files && !action.failed && action.first_error.is_none();
            let (section, tier) = if blocked[at] {
                // The error line, unless the action's line already says it (a failed call's
                // line quotes its first line: `-> failed: Request failed with status code 404`).
                if let Some(error) = action
                    .first_error
                    .as_deref()
                    .filter(|error| !action.line.contains(&error_line(error)))
                {
                    // Whole, or its start and end: why it failed often closes the line.
                    text.push_str(" — ");
                    text.push_str(error);
                    // And how the run ended, when that is an error line too (`1 failed, 14
                    // passed`): a summary folding this one moves the error lines this line
                    // quotes once a later run passes.
                    if let Some(last) = action.last_line.as_deref() {
                        text.push_str("; last line: ");
                        text.push_str(last);
                    }
                } else if let Some(last) = action
                    .last_line
                    .as_deref()
                    .filter(|_| action.first_error.is_none())
                {
                    // A tool whose error lines read as none of the usual kinds still tells how it
                    // ended, most often last (verify29: `k6 run … -> exit 99, 6 lines output` and
                    // nothing of why).
                    text.push_str("; last line: ");
                    text.push_str(last);
                }
                (Section::Blocked, 1)
            } else if facts.open_at_end && at >= facts.in_progress_from {
                let tier = match newer[at] {
                    n if n < NEWEST_ACTIONS => 1,
                    _ if only_read => LOOK_UP_TIER,
                    _ => 2,
                };
                (Section::InProgress, tier)
            } else {
                let tier = match newer[at] {
                    n if n < NEWEST_ACTIONS => 1,
                    _ if newer_published[at] < PUBLISHED_ACTIONS => 1,
                    _ if tells_a_finding(&action.line) || todos => 1,
                    _ if newer_fixing[at] < FIXING_ACTIONS => 1,
                    _ if only_read => LOOK_UP_TIER,
                    n if n < RECENT_ACTIONS => 2,
                    _ => 3,
                };
                (Section::Done, tier)
            };
            // How a command ended, when its last line says it (`Health Status: Healthy`, `320
            // passed`): for the request in progress and the newest work done, whose successes
            // would otherwise read as line counts beside failures quoted in words.
            // A failure's last line (kept for a Blocked line) is no outcome of one fixed later.
            let tells_outcome = !action.failed
                && (section == Section::InProgress
                    || (section == Section::Done && newer[at] < RECENT_ACTIONS));
            if let (true, Some(last)) = (tells_outcome, &action.last_line) {
                if !text.contains(last.as_str()) {
                    text.push_str("; last line: ");
                    text.push_str(last);
                }
            }
            let repeats_a_shape = action
                .fact_ids
                .iter()
                .any(|&id| facts.facts[id].kind == FactKind::Command && repeated[id]);
            let tier = if repeats_a_shape { REPEATED_TIER } else { tier };
            let covers = action
                .fact_ids
                .iter()
                .copied()
                .filter(|&id| {
                    facts.facts[id].kind != FactKind::Path && text.contains(facts.facts[id].text.as_ref())
                })
                .collect();
            let keep_newest = matches!(section, Section::Done | Section::InProgress)
                && newer[at] < NEWEST_ACTIONS
                && self.focus_words.is_empty();
            // Without what a change wrote, when the line does not fit whole.
            let shorter = action
                .line
                .find(WRITING)
                .filter(|_| text.starts_with(action.line.as_str()))
                .map(|at| Cow::Owned(format!("{}{}", &text[..at], &text[action.line.len()..])));
            let candidate = self.push(section, tier, action.index + 1, Cow::Owned(text));
            candidate.shorter = shorter;
            candidate.covers = covers;
            candidate.focus = facts.is_focus(action.index);
            // The newest action is kept, cut to fit if it must: ranked with the requests, it
            // still lost to them at 8,000 tokens, and a mobile release's summaries read `Done:
            // (none)` and `In Progress: (none)`. A focus topic asked for the room instead.
            candidate.always = keep_newest;
            if section == Section::Done && newest_done.is_none_or(|(rank, _)| newer[at] < rank) {
                newest_done = Some((newer[at], self.candidates.len() - 1));
            }
        }
        if let (Some((_, candidate)), true) = (newest_done, self.focus_words.is_empty()) {
            self.candidates[candidate].always = true;
        }
        fixed_later
    }

    /// One line counting the older actions that were not read one by one, by tool.
    fn add_unitemised(&mut self, facts: &Facts<'t>) {
        let mut by_tool: Vec<(&str, usize)> = Vec::new();
        let mut total = 0;
        for action in facts.actions.iter().filter(|action| !action.itemised) {
            total += 1;
            match by_tool.iter_mut().find(|(tool, _)| *tool == action.tool) {
                Some((_, count)) => *count += 1,
                None => by_tool.push((action.tool, 1)),
            }
        }
        if total == 0 {
            return;
        }
        by_tool.sort_by_key(|(tool, count)| (Reverse(*count), *tool));
        let tools: Vec<String> = by_tool
            .iter()
            .take(12)
            .map(|(tool, count)| format!("{tool} ×{count}"))
            .collect();
        let text = format!("{total} earlier tool calls, not itemised: {}", tools.join(", "));
        self.push(Section::Done, 1, 1, Cow::Owned(text)).display = i64::MIN;
    }

    /// Adds fact `id`; a `repeated` error line, command or id ranks below every other fact, and an
    /// error line as its `standing` says.
    fn add_fact(&mut self, id: usize, fact: &Fact<'t>, repeated: bool, standing: Standing) {
        let recency = fact.last_seen + 1;
        let (section, group, tier, shown) = match fact.kind {
            FactKind::Path => {
                let tier = if fact.verbs != 0 {
                    1
                } else {
                    fact_tier(fact.source)
                };
                (Section::Files, files_group(fact.verbs), tier, fact.text.clone())
            }
            FactKind::Error => {
                let tier = match fact.source {
                    _ if repeated => REPEATED_TIER,
                    _ if standing == Standing::FixedLater => 4,
                    Source::ToolOutput if standing == Standing::Telling => 1,
                    Source::User | Source::Arguments => 1,
                    Source::ToolOutput => 2,
                    Source::Assistant => 3,
                    Source::FileContent => 4,
                };
                // Said so: a model reading a fixed failure's errors as standing would fix them
                // again, and one reading a source file's `catch (error) {` as an error would look
                // for a failure that never happened.
                // A file's line is the file's whichever way the command that read it ended
                // (verify40: a module's lines under `Errors fixed since:` after a `cat` of it
                // and a missing file failed, then passed).
                let group = match (standing, fact.source) {
                    (_, Source::FileContent) => Group::FileErrorLines,
                    (Standing::FixedLater, _) => Group::FixedErrors,
                    _ => Group::Errors,
                };
                (Section::Critical, group, tier, fact.text.clone())
            }
            FactKind::Command => {
                let tier = match fact.source {
                    _ if repeated => REPEATED_TIER,
                    Source::Assistant => 3,
                    _ => 1,
                };
                // Named only in the assistant's words: no call ran it.
                let group = if fact.source == Source::Assistant {
                    Group::CommandsMentioned
                } else {
                    Group::Commands
                };
                (Section::Critical, group, tier, quoted_command(&fact.text))
            }
            FactKind::Url | FactKind::Route => {
                // A page the user gave, a tool fetched, or the assistant cited from what it read
                // ranks with the commands: a research session's search results listed seventy
                // URLs nobody opened, and the newest of them took the room of the cited sources.
                let used = fact.source <= Source::Arguments
                    || (fact.source == Source::ToolOutput && fact.said_by_assistant);
                let group = if fact.kind == FactKind::Url {
                    Group::Urls
                } else {
                    Group::Routes
                };
                let tier = match fact.kind {
                    FactKind::Route if repeated && !used => REPEATED_TIER,
                    _ if used => 1,
                    _ => fact_tier(fact.source),
                };
                (Section::Critical, group, tier, fact.text.clone())
            }
            FactKind::Hash | FactKind::Issue | FactKind::Version => {
                let group = match fact.kind {
                    FactKind::Hash if fact.text.contains(['-', '_', '=']) => Group::Ids,
                    FactKind::Hash => Group::Hashes,
                    FactKind::Issue => Group::Issues,
                    _ => Group::Versions,
                };
                let tier = match fact_tier(fact.source) {
                    _ if repeated => REPEATED_TIER,
                    // An issue, an advisory or a ticket is what the work is about, and a session
                    // names few: an audit's advisory ids went before its lockfile's paths.
                    2 if fact.kind == FactKind::Issue => 1,
                    tier => tier,
                };
                (Section::Critical, group, tier, fact.text.clone())
            }
            FactKind::Name => (Section::Critical, Group::Names, 3, fact.text.clone()),
        };
        let at = self.candidates.len();
        let candidate = self.push(section, tier, recency, shown);
        candidate.group = group;
        candidate.keeps_fact = group != Group::Names;
        candidate.fact = Some(id);
        candidate.focus = fact.focus;
        self.fact_candidates.insert(id, at);
    }
}

/// For each tool result of a command, the command as a summary quotes it (a long one by its
/// start): the error lines a result printed are listed under it.
/// Whether message `index` said what blocks the work, and that has been lifted since.
fn states_a_lifted_blocker(facts: &Facts<'_>, index: usize) -> bool {
    facts
        .blockers
        .iter()
        .filter(|blocker| blocker.sentence.index == index)
        .any(|blocker| is_lifted(facts, blocker.sentence.text, Some(index), &[]))
}

/// The blockers listed under Blocked: the newest [`STATED_BLOCKERS`] that still stand, each once,
/// the newest first; not one the request kept after the head says.
fn standing_blockers<'f, 't>(facts: &'f Facts<'t>) -> Vec<&'f Blocker<'t>> {
    let mut listed: Vec<&Blocker<'t>> = Vec::new();
    for blocker in facts
        .blockers
        .iter()
        .rev()
        .filter(|blocker| !blocker.kept_verbatim)
        .filter(|blocker| !is_lifted(facts, blocker.sentence.text, Some(blocker.sentence.index), &[]))
    {
        if listed
            .iter()
            .any(|seen| seen.sentence.text == blocker.sentence.text)
        {
            continue;
        }
        listed.push(blocker);
        if listed.len() == STATED_BLOCKERS {
            break;
        }
    }
    listed
}

fn commands_by_result<'t>(facts: &Facts<'t>) -> FastMap<usize, Cow<'t, str>> {
    let mut commands = FastMap::default();
    for action in &facts.actions {
        let Some(result) = action.result_index else {
            continue;
        };
        let command = action
            .fact_ids
            .iter()
            .map(|&id| &facts.facts[id])
            .find(|fact| fact.kind == FactKind::Command);
        if let Some(command) = command {
            commands.insert(result, quoted_command(&command.text));
        }
    }
    commands
}

/// A command as the summary lists it: whole, or a long one (a script, a commit message) by its
/// start.
fn quoted_command<'t>(command: &Cow<'t, str>) -> Cow<'t, str> {
    match cut_marked(command.trim(), COMMAND_CHARS + 1) {
        Cow::Borrowed(_) => command.clone(),
        Cow::Owned(cut) => Cow::Owned(cut),
    }
}

/// The label of an earlier request that asked a question and got its answer: `Answered
/// question: `, or none.
fn answered_question(request: &Request<'_>) -> &'static str {
    if request.answered && asks_first(&request.text) {
        ANSWERED_QUESTION
    } else {
        ""
    }
}

/// Whether `text` opens by asking: its first sentence ends with a question mark (`Quick
/// question: which Python does the docs job use? I need it for the inventory.`).
pub(super) fn asks_first(text: &str) -> bool {
    let text = text.trim();
    let first_end = text.char_indices().find(|&(at, c)| {
        matches!(c, '.' | '!' | '?' | '\n')
            && text[at + c.len_utf8()..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
    });
    first_end.is_some_and(|(_, c)| c == '?')
}

/// The command `action` ran, whole.
fn command_of<'f>(facts: &'f Facts<'_>, action: &Action<'_>) -> Option<&'f str> {
    action
        .fact_ids
        .iter()
        .map(|&id| &facts.facts[id])
        .find(|fact| fact.kind == FactKind::Command)
        .map(|fact| fact.text.as_ref())
}

/// Whether an answer ends by asking the user something (`… so we can plan. Should I?`): it is no
/// outcome of the request.
pub(super) fn asks_back(answer: &str) -> bool {
    answer
        .trim_end()
        .trim_end_matches(['"', '\'', ')', '*', '`'])
        .ends_with('?')
}

/// Whether `record` opens the request of its message, past a word of assent (`Makes sense.
/// Decision: pin the chart at 4.10.1`; verify43: listed as a goal after its reversal): the
/// request is the record.
fn opens_its_message(record: &DecisionRecord<'_>, facts: &Facts<'_>) -> bool {
    facts
        .requests
        .iter()
        .find(|request| request.index == record.index)
        .is_some_and(|request| {
            past_assent(&request.text).starts_with(record.text.get(..20).unwrap_or(record.text))
        })
}

/// Whether `text`, the reply of message `index`, opens with a decision record that a later
/// record or decision replaced.
fn opens_with_a_replaced_record(facts: &Facts<'_>, index: usize, text: &str) -> bool {
    let opening = past_assent(text);
    facts
        .records
        .iter()
        .zip(record_standings(&facts.records))
        .filter(|(record, _)| record.index == index && opening.starts_with(record.text))
        .any(|(record, standing)| {
            standing.replaced
                || facts
                    .turning_down
                    .iter()
                    .any(|decision| decision.index > record.index && turns_down(decision.text, record.text))
        })
}

/// What turns a choice down, in a decision.
const REJECTING: [&str; 2] = ["instead of ", "rather than "];

/// What drops a choice by name, in a decision: `we will NOT use tokio::sync::Mutex` (verify47:
/// the record that chose it stood after its reversal).
const DROPPING: [&str; 6] = [
    "will not use ",
    "won't use ",
    "not going to use ",
    "no longer use ",
    "stop using ",
    "not switch to ",
];

/// What keeps a thing as it was, which turns down a change of it only in a reversal (`Reverting
/// that: we keep REACT_APP_API_URL` after `Decision: rename REACT_APP_* env vars to VITE_*`);
/// elsewhere `keep` is a step (`keep going`).
const KEEPING: [&str; 5] = ["keep ", "stay on ", "stay with ", "stick with ", "stays "];

/// What says a decision reverses an earlier one.
const REVERSING: [&str; 6] = [
    "revers",
    "revert",
    "scratch that",
    "undo",
    "on second thought",
    "back out",
];

/// Whether `decision` (lowercase) reverses an earlier one ([`REVERSING`]).
fn reverses(lower: &str) -> bool {
    REVERSING.iter().any(|words| lower.contains(words))
}

/// The phrases after which `decision` (lowercase) names what it turns down.
fn turning_down_phrases(lower: &str) -> impl Iterator<Item = &'static str> {
    let keeping: &[&str] = if reverses(lower) { &KEEPING } else { &[] };
    REJECTING.iter().chain(&DROPPING).chain(keeping).copied()
}

/// Whether `decision` may turn down something by name ([`REJECTING`], [`DROPPING`], or
/// [`KEEPING`] in a reversal): most decisions turn nothing down.
pub(super) fn turns_something_down(decision: &str) -> bool {
    // Past the first letter, which a sentence may capitalise: no copy for most decisions.
    let may = REJECTING
        .iter()
        .chain(&DROPPING)
        .any(|phrase| decision.contains(phrase[1..].trim_end()))
        || REVERSING.iter().any(|words| decision.contains(&words[1..]));
    may && {
        let lower = decision.to_ascii_lowercase();
        turning_down_phrases(&lower).any(|phrase| lower.contains(phrase))
    }
}

/// Whether `decision` turns down what `record` chose, by name: `instead of pgvector`, `rather
/// than pgvector`, `we will not use pgvector`, where the record names `pgvector` (a word of three
/// characters or more that is not a common one), or a pattern that covers it (`REACT_APP_*`
/// covers `REACT_APP_API_URL`).
pub(super) fn turns_down(decision: &str, record: &str) -> bool {
    if !turns_something_down(decision) {
        return false;
    }
    let lower = decision.to_ascii_lowercase();
    let chosen = naming_words(record);
    let patterns = name_patterns(record);
    turning_down_phrases(&lower).any(|phrase| {
        lower.match_indices(phrase).any(|(at, _)| {
            // A word's end, not `backup` in `backup instead of `.
            let starts_a_word = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let rejected = &lower[at + phrase.len()..];
            // The thing turned down, in the next few words: `instead of the pgvector plan`.
            starts_a_word
                && rejected
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
                    .filter(|word| !word.is_empty())
                    .take(3)
                    .any(|word| {
                        chosen.contains(word)
                            || patterns.iter().any(|pattern| {
                                word.len() > pattern.len() && word.starts_with(pattern.as_str())
                            })
                    })
        })
    })
}

/// The starts of the names `text` gives as patterns (`REACT_APP_*`, `VITE_*`), lowercase: each
/// stands for every name it starts.
fn name_patterns(text: &str) -> Vec<String> {
    text.match_indices('*')
        .filter_map(|(at, _)| {
            let before = &text[..at];
            let start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |end| end + 1);
            let stem = &before[start..];
            (stem.chars().count() >= 3).then(|| stem.to_ascii_lowercase())
        })
        .collect()
}

/// Where each of `records` stands: replaced by a later record, and restated by the next one.
#[derive(Clone, Copy, Default)]
struct RecordStanding {
    replaced: bool,
    /// Restated by the next message (the user's `Reverse decision 1: BigQuery`, the assistant's
    /// `Decision 1 reversed: warehouse = BigQuery …`): one change, counted once.
    restated: bool,
}

fn record_standings(records: &[DecisionRecord<'_>]) -> Vec<RecordStanding> {
    // A record without a number that the next message numbers (the user's `Decision:
    // Snowflake.`, the assistant's `Noted. Decision 1: warehouse = Snowflake …`) is that record:
    // it goes when the number is revised, and is no replacement of its own.
    let adopted: Vec<Option<RecordKey>> = records
        .iter()
        .enumerate()
        .map(|(at, record)| match (record.key, records.get(at + 1)) {
            (None, Some(next))
                if !next.revises && next.index > record.index && next.index - record.index <= 2 =>
            {
                next.key
            }
            _ => None,
        })
        .collect();
    let key_of = |at: usize| records[at].key.or(adopted[at]);
    let mut latest: FastMap<RecordKey, usize> = FastMap::default();
    // Records a later one revises without their name: a revision without a number revises the
    // latest record without one (or, with none, the latest record: `Revised decision: Yarn
    // workspaces instead of npm` after `Decision 1: npm workspaces`), and a record that says it
    // replaces another names it (`Decision 2 (replaces 1): …`).
    let mut revised = HashSet::new();
    let mut unnumbered = None;
    let mut latest_any = None;
    for (at, record) in records.iter().enumerate() {
        if let Some(earlier) = record.replaces.and_then(|replaced| latest.get(&replaced)) {
            revised.insert(*earlier);
        }
        match key_of(at) {
            Some(key) => {
                latest.insert(key, at);
            }
            None => {
                if record.revises {
                    revised.extend(unnumbered.or(latest_any));
                }
                unnumbered = Some(at);
            }
        }
        latest_any = Some(at);
    }
    records
        .iter()
        .enumerate()
        .map(|(at, record)| RecordStanding {
            replaced: match key_of(at) {
                Some(key) => latest[&key] != at || revised.contains(&at),
                None => revised.contains(&at),
            },
            restated: records.get(at + 1).is_some_and(|next| {
                next.index > record.index
                    && next.index - record.index <= 2
                    && next.key.is_some()
                    && next.key == key_of(at)
            }),
        })
        .collect()
}

/// Where an error line stands in the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// Any other line.
    Plain,
    /// The most telling line of a tool result (a named error with its message).
    Telling,
    /// Printed only by failures a later run of the same call fixed.
    FixedLater,
}

/// How many error lines or ids of one shape rank as facts of their kind do; the others rank
/// below every fact.
pub(super) const LINES_PER_ERROR_SHAPE: usize = 3;

/// The tier of an error line or id beyond the first [`LINES_PER_ERROR_SHAPE`] of its shape.
pub(super) const REPEATED_TIER: u8 = 5;

/// For each fact, whether it repeats the shape of others of its kind, differing only in numbers:
/// a log's `upstream timed out … client: 10.0.1.7 … page=7` 110 times over, `head -n 48 data.csv`
/// run with twenty counts, an access log's
/// `req-75370e51f7ee` on every line (a commit's hash, hex alone, has no shape to share). Beyond
/// the newest [`LINES_PER_ERROR_SHAPE`] of a shape they fill only room no other fact wants:
/// taken in turn, they once filled a whole summary and pushed out the files an earlier summary
/// listed, and the one failing request's id with them. Ids an error line names are counted
/// apart from the others of their shape: the failing request is not one of the log's many.
fn repeated_shapes(facts: &Facts<'_>) -> Vec<bool> {
    let mut by_shape: FastMap<(FactKind, bool, String), Vec<usize>> = FastMap::default();
    for (id, fact) in facts.facts.iter().enumerate() {
        let shaped = match fact.kind {
            // And a log's request targets, one per line (`/api/v2/customers/3707623`): 404 of them
            // filled two thirds of a migration's summary (verify27).
            FactKind::Error | FactKind::Command | FactKind::Route => true,
            // Ids of a log's lines (`req-7f3a…`), and digests of 64 hex digits and more: a
            // checksum listing's sha256 sums filled half of an ops session's summary, where a
            // commit's hash (40 digits at most) is what a session names a few of.
            FactKind::Hash => {
                fact.text.len() >= 64 || fact.text.bytes().any(|byte| !byte.is_ascii_hexdigit())
            }
            _ => false,
        };
        if shaped {
            by_shape
                .entry((
                    fact.kind,
                    fact.in_error_line,
                    fact_shape(fact.kind == FactKind::Command, &fact.text),
                ))
                .or_default()
                .push(id);
        }
    }
    let mut repeated = vec![false; facts.facts.len()];
    for ids in by_shape
        .values_mut()
        .filter(|ids| ids.len() > LINES_PER_ERROR_SHAPE)
    {
        ids.sort_by_key(|&id| Reverse(facts.facts[id].last_seen));
        for &id in &ids[LINES_PER_ERROR_SHAPE..] {
            repeated[id] = true;
        }
    }
    repeated
}

/// The shape of a listed fact: a command that only looks something up is of its program's
/// (`wc -l a.ts b.ts`, `sed -n '1,400p' src/x.ts`): a monorepo's triage ran forty of them, which
/// took the room of the 150 commits its `git log` listed (verify37); any other line is of its
/// [`error_shape`].
pub(super) fn fact_shape(command: bool, text: &str) -> String {
    match lookup_program(text).filter(|_| command) {
        Some(program) => format!("look-up {program}"),
        None => error_shape(text),
    }
}

/// Programs that print what they find and change nothing, run one at a time.
const LOOKUP_PROGRAMS: &[&str] = &[
    "ls", "wc", "cat", "head", "tail", "nl", "bat", "sed", "rg", "grep", "find", "fd", "tree", "stat",
    "file", "du",
];

/// The program of a command that only looks something up: one of [`LOOKUP_PROGRAMS`], alone
/// (nothing chained, piped or redirected), `sed` only printing (`-n`, no `-i`).
fn lookup_program(command: &str) -> Option<&str> {
    if command.contains(['|', ';', '&', '>', '<', '`', '$', '\n']) {
        return None;
    }
    let program = command.split_whitespace().next()?;
    let printing_sed =
        |words: &str| words.split_whitespace().any(|word| word == "-n") && !words.contains(" -i");
    (LOOKUP_PROGRAMS.contains(&program) && (program != "sed" || printing_sed(command))).then_some(program)
}

/// An error line with each run of hex digits that holds a decimal one (a time, an address, a
/// count, an id) written `0`, and the place it opens with (`src/cart/Total.tsx(12,5):`,
/// `app/models.py:42:`) left out: lines of one shape differ only there. A compiler's or a
/// linter's one message at sixty places is one shape.
pub(super) fn error_shape(line: &str) -> String {
    let line = line.trim_start();
    let line = match line.split_once(char::is_whitespace) {
        Some((place, rest)) if is_source_place(place) => rest,
        _ => line,
    };
    let mut shape = String::with_capacity(line.len());
    let mut run = String::new();
    let flush = |run: &mut String, shape: &mut String| {
        if run.bytes().any(|byte| byte.is_ascii_digit()) {
            shape.push('0');
        } else {
            shape.push_str(run);
        }
        run.clear();
    };
    for c in line.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut shape);
            shape.push(c);
        }
    }
    flush(&mut run, &mut shape);
    shape
}

/// Whether `token` is a place in a source file that opens a compiler's or a linter's line: a
/// path with a line (`src/a.tsx(12,5):`, `app/models.py:42:`, `lib/x.rs:3:9:`).
fn is_source_place(token: &str) -> bool {
    let Some(token) = token.strip_suffix(':') else {
        return false;
    };
    let path_end = token.find(['(', ':']).unwrap_or(token.len());
    let (path, place) = token.split_at(path_end);
    (path.contains('/') || path.contains('.'))
        && place.bytes().any(|byte| byte.is_ascii_digit())
        && place
            .bytes()
            .all(|byte| byte.is_ascii_digit() || matches!(byte, b'(' | b')' | b',' | b':'))
}

/// The words of a focus topic worth matching, lowercase.
fn focus_words(focus: Option<&str>) -> Vec<String> {
    focus
        .map(|topic| {
            topic
                .split(|c: char| !c.is_alphanumeric() && !matches!(c, '_' | '.' | '/' | '-'))
                .filter(|word| word.chars().count() >= 3)
                .map(str::to_lowercase)
                .collect()
        })
        .unwrap_or_default()
}

fn fact_tier(source: Source) -> u8 {
    match source {
        Source::FileContent => 4,
        _ => 2,
    }
}

/// The Relevant Files list a file goes in: the most a tool did to it (changed, read, searched),
/// or only mentioned.
pub(super) fn files_group(verbs: u8) -> Group {
    if verbs & verbs::CHANGED != 0 {
        Group::FilesChanged
    } else if verbs & verbs::READ != 0 {
        Group::FilesRead
    } else if verbs & verbs::SEARCHED != 0 {
        Group::FilesSearched
    } else {
        Group::FilesMentioned
    }
}
