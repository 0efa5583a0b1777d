//! Finding what a summary must keep: requests, constraints, tool actions and their outcomes, error
//! lines, and every path, command, URL and identifier.
//!
//! One pass over the middle, at most linear in its size: bodies are read from the newest back
//! within a byte budget, each only to its first 24,000 and last 8,000 bytes, and the tool output
//! older than the budget for its error lines alone, up to three times the budget; tokens are
//! classified by hand (`identify`), and the few regexes (`patterns`) are compiled once. Tool calls
//! are read in `actions`.

use std::borrow::Cow;

use ctxhost_engine_abi::{is_image_part, part_text, Content, Message, Role, ToolCall};
use ctxhost_engine_kit::{retention::is_agent_note, sequence::align_start_to_group};

use super::{
    extractive::naming_words,
    is_summary_text,
    patterns::{
        decision_records, findings, lifts_the_blocker, measured_changes, names_a_ticket, past_assent, run_on,
        says_lifted, says_unblocked, states_a_rule, with_antecedent, with_ticket_after,
        with_workaround_after, RecordKey, BLOCKER_WORDS, CONSTRAINT_WORDS, DECISION_WORDS, LIFTED_WORDS,
        PERMITTED_WORDS, USER_DECISION_WORDS, WAITING_WORDS,
    },
};
use crate::scan::{
    capped_pieces, capped_pieces_of_bodies, reads_files, tool_kind, FastHash, FastMap, ToolKind,
};

/// Room made for this many facts a message before reading a middle.
const FACTS_PER_MESSAGE: usize = 8;

/// Tool output older than the scan budget is read for its error lines alone, up to this many
/// times the budget.
const ERROR_SCAN_SHARE: usize = 3;

/// The user's messages get this share of the scan budget of their own.
const USER_SCAN_SHARE: usize = 4;

/// What kind of identifier a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FactKind {
    Path,
    Url,
    /// An HTTP route a request named (`GET /v2/checkout`): a path, but of no file.
    Route,
    Hash,
    Issue,
    Version,
    Error,
    Command,
    Name,
}

/// Where a fact was seen, best first: decides how much it is worth keeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    User,
    Arguments,
    ToolOutput,
    Assistant,
    FileContent,
}

/// What a tool did to a path.
pub(crate) mod verbs {
    pub const READ: u8 = 1;
    pub const CHANGED: u8 = 2;
    pub const SEARCHED: u8 = 4;
}

#[derive(Clone, Debug)]
pub(crate) struct Fact<'a> {
    pub kind: FactKind,
    pub text: Cow<'a, str>,
    pub source: Source,
    /// Index of the last message it appeared in.
    pub last_seen: usize,
    pub verbs: u8,
    /// Seen in a message about the focus topic.
    pub focus: bool,
    /// An id named by an error line (the failing request's `req-…`): not one of a log's many.
    pub in_error_line: bool,
    /// Seen in the assistant's own words: with a tool's output, what it drew on from it (the
    /// page a research answer cites among the search results it read).
    pub said_by_assistant: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Request<'a> {
    pub index: usize,
    pub text: Cow<'a, str>,
    /// An assistant answered it in text before the next request.
    pub answered: bool,
    /// The text answer to it, when one came, and its message: the first to a question; to
    /// another request the last, unless the assistant went on changing files after it
    /// (`Decision 1 revised: no alias`, then edits and a remark on the tests), and then the first.
    pub answer: Option<(usize, Cow<'a, str>)>,
    first_answer: Option<(usize, Cow<'a, str>)>,
    /// Every text answer, in order: the one naming what was asked may be the answer.
    replies: Vec<(usize, Cow<'a, str>)>,
    /// The assistant changed files after the last text answer.
    worked_since_answer: bool,
    /// Images the user sent with it, which a summary cannot carry.
    pub images: usize,
}

/// A sentence saying what blocks the work, and who said it.
#[derive(Clone, Debug)]
pub(crate) struct Blocker<'a> {
    pub sentence: Sentence<'a>,
    pub by_user: bool,
    /// Said in the request kept verbatim after the head: it holds failures, and the context
    /// already says it, so the summary does not list it again.
    pub kept_verbatim: bool,
}

/// Whether `text` asks something: a sentence of it ends with a question mark (not a URL's query).
fn asks_anything(text: &str) -> bool {
    text.split_whitespace()
        .any(|word| word.trim_end_matches(['"', '\'', ')', '*', '`']).ends_with('?'))
}

/// `text` without the state and prompt SWE-agent's environment ends each message it sends the
/// model with (`(Open file: n/a)\n(Current directory: /repo)\nbash-$`): quoted with every
/// request, it made each a list item of four lines (verify25).
fn without_shell_prompt(text: Cow<'_, str>) -> Cow<'_, str> {
    const OPEN_FILE: &str = "(Open file: ";
    let trimmed = text.trim_end();
    let Some(start) = trimmed.rfind(OPEN_FILE) else {
        return text;
    };
    let prompt = &trimmed[start..];
    let is_prompt =
        prompt.lines().count() == 3 && prompt.lines().all(|line| is_swe_agent_prompt(line.trim()));
    let kept = trimmed[..start].trim_end().len();
    if !is_prompt || kept == 0 {
        return text;
    }
    match text {
        Cow::Borrowed(text) => Cow::Borrowed(&text[..kept]),
        Cow::Owned(mut text) => {
            text.truncate(kept);
            Cow::Owned(text)
        }
    }
}

/// Whether `line` is one of the three lines of SWE-agent's prompt: `(Open file: n/a)`,
/// `(Current directory: /repo)`, `bash-$`.
pub(super) fn is_swe_agent_prompt(line: &str) -> bool {
    line == "bash-$"
        || (line.ends_with(')')
            && (line.starts_with("(Open file: ") || line.starts_with("(Current directory: ")))
}

#[derive(Clone, Debug)]
pub(crate) struct Sentence<'a> {
    pub index: usize,
    pub text: &'a str,
}

/// A decision recorded on a line of its own (`Decision 3 revised: …`): a later record with the
/// same number replaces it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecisionRecord<'a> {
    pub index: usize,
    /// What names it (`Decision 3`, `BC-1`); none for `Decision: …`.
    pub key: Option<RecordKey>,
    /// The earlier record it says it replaces, under another name (`Decision 2 (replaces 1): …`).
    pub replaces: Option<RecordKey>,
    /// Says it revises an earlier decision (`Decision 1 reversed:`, `Reverse yesterday's
    /// decision:`): without a number, it replaces the latest record without one, or else the
    /// latest record.
    pub revises: bool,
    pub text: &'a str,
}

#[derive(Clone, Debug)]
pub(crate) struct Action<'a> {
    pub index: usize,
    /// One line, built like a stand-in: ``[terminal] ran `make` -> exit 2, 14 lines output``.
    pub line: String,
    pub failed: bool,
    /// Tool and main argument, and for a command each program its chain runs
    /// ([`super::actions::action_keys`]): a later success sharing one resolves a failure.
    pub keys: Vec<String>,
    pub first_error: Option<Cow<'a, str>>,
    /// The result arrived (a call whose result is gone has none).
    pub answered: bool,
    /// Exited with a code that says what it found (a scanner's findings, `grep`'s no match, a
    /// detailed plan's changes): no failure,
    /// but no retry of another run either (verify21: an OSS `semgrep scan` with findings made a
    /// `semgrep scan --pro` blocked on its licence `passed on a later run`).
    pub found_by_exit_code: bool,
    /// Described on its own line; older actions beyond the scan budget are only counted.
    pub itemised: bool,
    /// The tool's name.
    pub tool: &'a str,
    /// The facts this action names: its command, its path, its first error.
    pub fact_ids: Vec<usize>,
    /// The last line a command that succeeded, or failed with no error line, printed, when short
    /// (`Health Status: Healthy`): how the work on the request in progress ended.
    pub last_line: Option<String>,
    /// Succeeded after saying it retried what failed on the way (`attempt 1: lock timeout,
    /// retrying in 15 s` … `OK`): the error lines it printed were recovered from.
    pub recovered: bool,
    /// Where its result is in the middle.
    pub result_index: Option<usize>,
    /// Its output was read whole: not cut by the agent, the host or an earlier compaction, nor
    /// past what a scan reads. Only then does an error line it no longer prints say anything.
    pub read_whole: bool,
    /// Reads, searches or fetches something (`read_file`, `search_files`, `web_fetch`): a lookup
    /// that failed (a path that does not exist, a page gone) blocks nothing once a later lookup
    /// of the same tool found what the work needed.
    pub looks_up: bool,
    /// Printed files and did nothing else (`read_file`, `cat src/app.py`): the files are listed
    /// as read, and the line says no more.
    pub prints_files: bool,
    /// The user refused the call: it did not run, and the user decided so.
    pub refused: bool,
    /// Succeeded by skipping every test it selected (`9 skipped in 0.11s`): a failure deferred,
    /// not fixed, so it settles none.
    pub skipped_all: bool,
    /// What it did with a CI run, when it did not fail: a run's log read, or runs seen passing.
    pub ci: super::actions::CiStep,
    /// The path this call reads, searches or changes, and that verb: given to the path when
    /// the result says the call succeeded, or when no result came
    /// ([`settle_unanswered`](Facts::settle_unanswered)).
    pub path_verbs: Vec<(usize, u8)>,
}

/// Whether `message` is the assistant answering in words: text, and no call.
pub(crate) fn replies_in_words(message: &Message) -> bool {
    message.role == Role::Assistant && !message.has_tool_calls() && !message.text().trim().is_empty()
}

/// Everything [`extract_facts`] found, in the order it appeared.
#[derive(Debug, Default)]
pub(crate) struct Facts<'a> {
    pub requests: Vec<Request<'a>>,
    pub constraints: Vec<Sentence<'a>>,
    pub decisions: Vec<Sentence<'a>>,
    /// Decisions the user stated, which rank with their requests.
    pub user_decisions: Vec<Sentence<'a>>,
    /// Decisions the assistant recorded on lines of their own, in order.
    pub records: Vec<DecisionRecord<'a>>,
    /// What the user or the assistant said blocks the work, in order.
    pub blockers: Vec<Blocker<'a>>,
    /// The user's sentences saying something in the way no longer is (`DATA-2291 is done: the
    /// grant is in place`), and the assistant's saying its blocker is (`so that blocker is
    /// resolved`), in order: they lift the blockers they name.
    pub lifts: Vec<Sentence<'a>>,
    /// The user's sentences permitting what a rule forbade (`you may use \`git add -A\` again`),
    /// in order: they revoke the rules they name.
    pub permits: Vec<Sentence<'a>>,
    /// The user's sentences naming a ticket (`I filed PLAT-7781 for a new base image`): what a
    /// lift naming only that ticket is about.
    pub ticket_sentences: Vec<Sentence<'a>>,
    /// The assistant's sentences stating a measured change (`2381.442 ms -> 3.112 ms`), in order.
    pub results: Vec<Sentence<'a>>,
    /// The findings the assistant states under a label (`Culprit: …`, `Root cause: …`), in order.
    pub findings: Vec<Sentence<'a>>,
    pub actions: Vec<Action<'a>>,
    pub facts: Vec<Fact<'a>>,
    by_text: FastMap<Cow<'a, str>, usize>,
    /// The latest request is still being worked on when the middle ends; the actions from
    /// `in_progress_from` on belong to it.
    pub open_at_end: bool,
    pub in_progress_from: usize,
    /// The user sent a request after the middle's requests: in the tail
    /// ([`super::SummaryRequest::request_follows`]) or pinned after the head.
    pub moved_on: bool,
    /// The newest request was pinned after the head from within the middle: answers after its
    /// place are its own.
    pub pinned: bool,
    /// The first text answer after the pinned request's place, and its message: the answer to a
    /// request the summary does not quote, kept verbatim before it.
    pub pinned_answer: Option<(usize, Cow<'a, str>)>,
    /// An earlier summary's answer to the request it kept before it was given to that request,
    /// the middle's first: the earlier line is not carried besides.
    pub pinned_answer_given: bool,
    /// For each message: whether it is about the focus topic (empty without one).
    pub focus: Vec<bool>,
    /// Only how the calls ended is wanted ([`extract_outcomes`]): no identifier is looked for.
    pub(super) outcomes_only: bool,
    /// The file the latest read or change named: what an editor given no path changes
    /// (SWE-agent's `edit`, on the file its `open` showed).
    pub(super) open_file: Option<usize>,
    /// The decisions, the assistant's and the user's, that may turn a choice down by name
    /// (`instead of pgvector`): what replaces a record or abandons a blocker's plan, gathered
    /// once (asked of every decision for every blocker, their search cost 4% of a replay).
    pub(super) turning_down: Vec<Sentence<'a>>,
    /// The commands (their facts) that failed so far.
    pub(super) failed_commands: std::collections::HashSet<usize, FastHash>,
}

impl<'a> Facts<'a> {
    /// Whether message `index` is about the focus topic.
    pub(crate) fn is_focus(&self, index: usize) -> bool {
        self.focus.get(index).copied().unwrap_or(false)
    }

    pub(super) fn add(&mut self, kind: FactKind, text: Cow<'a, str>, source: Source, index: usize) -> usize {
        if let Some(&at) = self.by_text.get(text.as_ref()) {
            self.touch(at, source, index);
            return at;
        }
        let focus = self.is_focus(index);
        let at = self.facts.len();
        self.by_text.insert(text.clone(), at);
        self.facts.push(Fact {
            kind,
            text,
            source,
            last_seen: index,
            verbs: 0,
            focus,
            in_error_line: false,
            said_by_assistant: source == Source::Assistant,
        });
        at
    }

    /// Like [`add`](Self::add) for text that does not live as long as the messages: it is copied
    /// only when new.
    pub(super) fn add_copy(&mut self, kind: FactKind, text: &str, source: Source, index: usize) -> usize {
        match self.by_text.get(text) {
            Some(&at) => {
                self.touch(at, source, index);
                at
            }
            None => self.add(kind, Cow::Owned(text.to_owned()), source, index),
        }
    }

    /// Records that fact `at` was seen again in message `index`.
    pub(super) fn touch(&mut self, at: usize, source: Source, index: usize) {
        let focus = self.is_focus(index);
        let fact = &mut self.facts[at];
        fact.last_seen = fact.last_seen.max(index);
        fact.source = fact.source.min(source);
        fact.said_by_assistant |= source == Source::Assistant;
        fact.focus |= focus;
    }

    /// Whether some fact reads exactly `text`.
    pub(crate) fn contains_text(&self, text: &str) -> bool {
        self.by_text.contains_key(text)
    }

    /// The fact that reads exactly `text`.
    pub(crate) fn id_of(&self, text: &str) -> Option<usize> {
        self.by_text.get(text).copied()
    }

    fn on_user(&mut self, index: usize, message: &'a Message, scan: bool) {
        let text = message.text();
        let images = image_count(message);
        // A screenshot sent alone is a request too: the summary says one was sent.
        if (text.trim().is_empty() && images == 0) || is_summary_text(&text) {
            return;
        }
        if is_agent_note(message, &text) {
            if scan {
                for piece in capped_pieces(message) {
                    self.scan_identifiers(piece, Source::ToolOutput, index);
                }
            }
            return;
        }
        // The first request sets the goal: it is always read.
        let scan = scan || self.requests.is_empty();
        self.requests.push(Request {
            index,
            text: without_shell_prompt(text),
            answered: false,
            answer: None,
            first_answer: None,
            replies: Vec::new(),
            worked_since_answer: false,
            images,
        });
        self.open_at_end = true;
        self.in_progress_from = self.actions.len();
        if !scan {
            return;
        }
        for (piece, body) in capped_pieces_of_bodies(message) {
            self.scan_identifiers(piece, Source::User, index);
            self.scan_errors(piece, body, Source::User, index);
            self.scan_code(piece, Source::User, index);
            let from = self.constraints.len();
            Self::sentences(piece, &CONSTRAINT_WORDS, index, &mut self.constraints);
            // A question is no constraint: the user asks it, and may answer it the other way
            // (`Read-only from April, delete end of May?`, then `Not end of May`).
            // What the user pasted between fences (a store's rejection, a log) is quoted text,
            // not a rule of theirs (verify19: `Change your app's target API level to at least
            // 34.` as a constraint).
            let fenced = fenced_ranges(piece);
            let pasted = |sentence: &Sentence<'_>| {
                let at = sentence.text.as_ptr() as usize - piece.as_ptr() as usize;
                fenced.iter().any(|range| range.contains(&at))
            };
            let mut stated: Vec<Sentence<'a>> = self
                .constraints
                .drain(from..)
                .filter(|sentence| {
                    !sentence.text.ends_with('?') && !pasted(sentence) && states_a_rule(sentence.text)
                })
                .collect();
            let mut labelled = Vec::new();
            Self::labelled_rules(piece, index, &mut labelled);
            stated.extend(labelled.into_iter().filter(|sentence| !pasted(sentence)));
            // In the order the user wrote them.
            stated.sort_by_key(|sentence| sentence.text.as_ptr() as usize);
            self.constraints.extend(stated);
            self.blockers_in(piece, index, true);
            self.lifts_in(piece, index);
            Self::sentences(piece, &USER_DECISION_WORDS, index, &mut self.user_decisions);
            decision_records(piece, index, &mut self.records);
        }
    }

    /// Where the user's newest request stood, kept verbatim after the head: the requests before
    /// it are settled, and what follows is its work, which an answer ends (verify18: the answer
    /// to the pinned request was quoted as the answer to the one before it).
    fn on_pinned_request(&mut self) {
        self.moved_on = true;
        self.pinned = true;
        self.open_at_end = true;
        self.in_progress_from = self.actions.len();
    }

    /// What a user's message kept verbatim, standing at `index`, says blocks the work: the
    /// request kept after the head, or one kept after the summary. The failures before it are held
    /// by it (verify24: a workspace check failing on tokio read `passed on a later run` once the
    /// crate the user's `Blocked:` named was excluded).
    pub(super) fn on_kept_user_text(&mut self, index: usize, message: &'a Message) {
        let from = self.blockers.len();
        for piece in capped_pieces(message) {
            self.blockers_in(piece, index, true);
            self.lifts_in(piece, index);
        }
        for blocker in &mut self.blockers[from..] {
            blocker.kept_verbatim = true;
        }
    }

    /// The sentences of `piece` (of message `index`) that say what blocks the work; not a
    /// question.
    fn blockers_in(&mut self, piece: &'a str, index: usize, by_user: bool) {
        let mut found = Vec::new();
        Self::sentences(piece, &BLOCKER_WORDS, index, &mut found);
        let mut waits = Vec::new();
        Self::sentences(piece, &WAITING_WORDS, index, &mut waits);
        for sentence in waits {
            if names_a_ticket(sentence.text) && !found.iter().any(|blocker| blocker.text == sentence.text) {
                found.push(sentence);
            }
        }
        // In the order they were said: the newest is listed first.
        found.sort_by_key(|sentence| sentence.text.as_ptr() as usize);
        // `The blocker is lifted — you can proceed` says what no longer blocks.
        let said = found
            .into_iter()
            .filter(|sentence| !sentence.text.ends_with('?') && !says_unblocked(sentence.text))
            .map(|sentence| Sentence {
                text: with_workaround_after(
                    piece,
                    with_ticket_after(piece, with_antecedent(piece, sentence.text)),
                ),
                ..sentence
            });
        let from = self.blockers.len();
        for sentence in said {
            // Blocker sentences one after the other state one blocker (`Blocked: adding repo
            // secrets needs admin rights my token doesn't have. Until someone with admin access
            // adds them, CI can't get past the data step.`): apart, the second named nothing it
            // waited on and outlived the lift of the first (verify45).
            let joined = self.blockers[from..]
                .last()
                .and_then(|last| run_on(piece, last.sentence.text, sentence.text));
            match (joined, self.blockers[from..].last_mut()) {
                (Some(joined), Some(last)) => last.sentence.text = joined,
                _ => self.blockers.push(Blocker {
                    sentence,
                    by_user,
                    kept_verbatim: false,
                }),
            }
        }
    }

    /// What a user's message kept after the summary (at `index`) says no longer blocks the work.
    pub(super) fn on_kept_user_lifts(&mut self, index: usize, message: &'a Message) {
        for piece in capped_pieces(message) {
            self.lifts_in(piece, index);
        }
    }

    /// The assistant's sentences that say the blocker itself is out of the way (`lag is back to
    /// 3 s, so that blocker is resolved`): it stated the blocker, and saw it go (verify40: the
    /// replica lag stayed under Blocked through the prod backfill that followed).
    fn assistant_lifts_in(&mut self, piece: &'a str, index: usize) {
        if !piece.contains("blocker") && !piece.contains("unblocked") {
            return;
        }
        let mut lifts = Vec::new();
        Self::sentences(piece, &LIFTED_WORDS, index, &mut lifts);
        self.lifts.extend(
            lifts
                .into_iter()
                .filter(|sentence| lifts_the_blocker(sentence.text) && says_lifted(sentence.text)),
        );
    }

    /// The sentences of `piece` (the user's, of message `index`) that say something in the way
    /// no longer is, or permit what a rule forbade.
    fn lifts_in(&mut self, piece: &'a str, index: usize) {
        let mut lifts = Vec::new();
        Self::sentences(piece, &LIFTED_WORDS, index, &mut lifts);
        self.lifts
            .extend(lifts.into_iter().filter(|sentence| says_lifted(sentence.text)));
        Self::sentences(piece, &PERMITTED_WORDS, index, &mut self.permits);
        Self::ticket_sentences(piece, index, &mut self.ticket_sentences);
    }

    fn on_assistant(
        &mut self,
        index: usize,
        message: &'a Message,
        slots: &mut FastMap<&'a str, usize>,
        scan: bool,
    ) {
        let text = message.text();
        let answers = !message.has_tool_calls() && !text.trim().is_empty();
        if answers {
            if self.pinned {
                // An agent's turn ends with its first answer: later prose is other work's.
                if self.pinned_answer.is_none() {
                    self.pinned_answer = Some((index, text));
                }
            } else if let Some(request) = self.requests.last_mut() {
                request.answered = true;
                // A question's answer is its first reply: an agent's turn ends with it, and prose
                // after it reports other work (verify20: `is the signature checked before or
                // after the body is parsed?` was given `Two failures: the FastAPI route…` as its
                // answer; verify22: `how long do we keep v1 alive` the design note written after
                // the answer).
                // So is a request's that asks anything: `Revert it. Quick question while you are at
                // it: which Xcode version does CI use?` was given a later status line (verify27).
                if request.answer.is_none() || !asks_anything(&request.text) {
                    request.first_answer.get_or_insert_with(|| (index, text.clone()));
                    request.replies.push((index, text.clone()));
                    request.answer = Some((index, text));
                    request.worked_since_answer = false;
                }
            }
            self.open_at_end = false;
        }
        if scan {
            for piece in capped_pieces(message) {
                // Error words in the assistant's prose are explanations, not error lines.
                self.scan_identifiers(piece, Source::Assistant, index);
                self.scan_code(piece, Source::Assistant, index);
                Self::sentences(piece, &DECISION_WORDS, index, &mut self.decisions);
                decision_records(piece, index, &mut self.records);
                self.blockers_in(piece, index, false);
                self.assistant_lifts_in(piece, index);
                measured_changes(piece, index, &mut self.results);
                findings(piece, index, &mut self.findings);
            }
        }
        // Changes made after an answer: it was a remark on the way. A look-up is no change
        // (verify24: `2 of 10 CI runs still fail…` lost to an earlier reply for a `gh run view`
        // after it).
        // After the pinned request's place, the work is that request's, not the one before.
        if !self.pinned
            && message
                .calls()
                .iter()
                .any(|call| tool_kind(call) == ToolKind::Write)
        {
            if let Some(request) = self
                .requests
                .last_mut()
                .filter(|request| request.answer.is_some())
            {
                request.worked_since_answer = true;
            }
        }
        for call in message.calls() {
            if scan {
                slots.insert(call.id.as_str(), self.actions.len());
            }
            let action = self.on_call(index, call, scan);
            self.actions.push(action);
        }
    }
}

/// The actions of `messages` and how each ended, every result read, without the identifiers
/// [`extract_facts`] looks for in them: what the messages kept after a summary fixed.
pub(crate) fn extract_outcomes(messages: &[Message]) -> Facts<'_> {
    extract(messages, &[], usize::MAX, None, true)
}

/// Collects every fact of `middle` (the messages before pruning); `focus_words` (lowercase) mark
/// the messages about a focus topic.
///
/// Bodies are read from the newest back while `scan_budget` bytes last (at most 5,500 per body),
/// the user's messages with a budget of their own: a summary has room for only so many facts, the
/// newest are worth most, and the cost stays bounded on huge middles. Older tool calls are only
/// counted, and every request is still listed.
pub(crate) fn extract_facts<'a>(
    middle: &'a [Message],
    focus_words: &[String],
    scan_budget: usize,
    pinned_request_at: Option<usize>,
) -> Facts<'a> {
    extract(middle, focus_words, scan_budget, pinned_request_at, false)
}

fn extract<'a>(
    middle: &'a [Message],
    focus_words: &[String],
    scan_budget: usize,
    pinned_request_at: Option<usize>,
    outcomes_only: bool,
) -> Facts<'a> {
    let (scan_from, user_scan_from) = scan_starts(middle, scan_budget);
    let users_before = middle[user_scan_from.min(scan_from)..scan_from]
        .iter()
        .filter(|message| message.role == Role::User)
        .count();
    let scanned = middle.len() - scan_from + users_before;
    let mut facts = Facts {
        // With no request in the middle, the work continues one from before it.
        open_at_end: true,
        focus: focus_flags(middle, focus_words),
        // About as many facts as the messages read whole hold, so the map rarely regrows (its
        // rehashing, which hashes every fact again, was 1% of a long replay); not room for every
        // message of a long middle, most of which is only searched for error lines (a whole
        // heavy transcript's 5,000 messages gave 860 facts a map of 57,000 had room for).
        by_text: FastMap::with_capacity_and_hasher(scanned * FACTS_PER_MESSAGE, FastHash),
        outcomes_only,
        ..Facts::default()
    };
    // Error lines are cheap to find (one pass of the markers): the tool output older than the scan
    // budget is read for them alone, up to a few times that budget, newest first. A session's
    // compiler errors a megabyte back outrank the log lines of its last turns.
    let mut error_budget = scan_budget.saturating_mul(ERROR_SCAN_SHARE);
    let mut error_from = scan_from;
    while error_from > 0 && error_budget > 0 {
        let message = &middle[error_from - 1];
        let bytes: usize = capped_pieces(message).map(str::len).sum();
        error_budget = error_budget.saturating_sub(bytes);
        error_from -= 1;
    }
    let mut slots: FastMap<&str, usize> = FastMap::default();
    let mut calls: FastMap<&str, &ToolCall> = FastMap::default();
    for (index, message) in middle.iter().enumerate() {
        if Some(index) == pinned_request_at {
            facts.on_pinned_request();
        }
        let scan = index >= scan_from;
        match message.role {
            Role::User => facts.on_user(index, message, index >= user_scan_from),
            Role::Assistant => {
                if index >= error_from {
                    calls.extend(message.calls().iter().map(|call| (call.id.as_str(), call)));
                }
                facts.on_assistant(index, message, &mut slots, scan);
            }
            Role::Tool if scan => {
                let id = message.tool_call_id.as_deref().unwrap_or("");
                let slot = slots.remove(id);
                facts.on_result(index, message, calls.get(id).copied(), slot);
            }
            Role::Tool if index >= error_from => {
                // A file's contents are no error lines of a run (`raise ValueError(…)`).
                let call = calls.get(message.tool_call_id.as_deref().unwrap_or(""));
                if !call.is_some_and(|call| reads_files(call, tool_kind(call))) {
                    for (piece, body) in capped_pieces_of_bodies(message) {
                        facts.scan_errors(piece, body, Source::ToolOutput, index);
                    }
                }
            }
            Role::Tool | Role::System => {}
        }
    }
    facts.settle_unanswered();
    // A record that revises an earlier one says by name what it drops as well (`Reversing the
    // earlier decision: we will NOT use tokio::sync::Mutex.`): a record an earlier summary
    // carried goes with it (verify47).
    let revisions = facts
        .records
        .iter()
        .filter(|record| record.revises)
        .map(|record| Sentence {
            index: record.index,
            text: record.text,
        });
    facts.turning_down = facts
        .decisions
        .iter()
        .chain(&facts.user_decisions)
        .cloned()
        .chain(revisions)
        .filter(|decision| super::extractive::turns_something_down(decision.text))
        .collect();
    let quoted_from = facts.requests.len().saturating_sub(ON_TOPIC_REQUESTS);
    let constraints = &facts.constraints;
    for (at, request) in facts.requests.iter_mut().enumerate() {
        // Work went on after the last answer: it was a remark on the way, and the first said
        // what the request got (verify23: `Reverse decision 1: drop the alias` was given
        // `formatMoney formats minor units as major units…`, a finding of the tests after it).
        // So did any reply after the acknowledgement of a message that only gave rules: it
        // asked for no work, and what followed was the earlier request's (verify47: `Don't apply
        // terraform in prod yourself … change freeze until 18:00 UTC.` was given a later
        // `Atlantis plan is blocked: …` over `Understood: no terraform apply in prod …`).
        if request.worked_since_answer
            || (request.replies.len() > 1 && only_gives_rules(&request.text, request.index, constraints))
        {
            request.answer = request.first_answer.take();
            continue;
        }
        // A last reply about something else (`Lag check: replica within seconds.`) is a status
        // on the way: the reply that named what was asked (`The analytics dump completed:
        // /backup/analytics.dump, 4.8 GB …`) is the answer (verify45, verify46: the dump's place
        // and size, or the cost asked for, were in no summary).
        // Asked only when the last reply looks away: naming the words of every reply cost 3% of
        // a replay.
        let Some((_, answer)) = &request.answer else {
            continue;
        };
        if at < quoted_from || request.replies.len() < 2 || reports_done(answer) {
            continue;
        }
        let asked = naming_words(&request.text);
        // What an answer opens with says what it is about, and no more is quoted.
        let named = |reply: &str| naming_words(cut_at(reply, 800)).intersection(&asked).count();
        if named(answer) > 1 {
            continue;
        }
        let mut on_topic: Option<(usize, usize)> = None;
        for (reply_at, (_, reply)) in request.replies.iter().enumerate() {
            let count = named(reply);
            if count >= ON_TOPIC_WORDS && on_topic.is_none_or(|(_, most)| count > most) {
                on_topic = Some((reply_at, count));
            }
        }
        if let Some((reply_at, _)) = on_topic {
            request.answer = Some(request.replies[reply_at].clone());
        }
    }
    facts
}

/// Whether `request` (the user's message `index`) says nothing but the rules `constraints` hold
/// of it, past a word of assent (`ok. Don't … Also no more …`).
fn only_gives_rules(request: &str, index: usize, constraints: &[Sentence<'_>]) -> bool {
    let mut rest = past_assent(request).to_owned();
    let mut any = false;
    for rule in constraints.iter().filter(|rule| rule.index == index) {
        if let Some(at) = rest.find(rule.text) {
            rest.replace_range(at..at + rule.text.len(), "");
            any = true;
        }
    }
    any && rest.chars().all(|c| !c.is_alphanumeric())
}

/// The newest requests whose answers are looked for among their replies: the latest and the
/// earlier ones whose answers a summary quotes.
const ON_TOPIC_REQUESTS: usize = super::extractive::EARLIER_ANSWERS + 1;

/// How many words of a request a reply must name to be its answer over a last reply naming at
/// most one.
const ON_TOPIC_WORDS: usize = 3;

/// Whether `reply` opens by saying the work is done (`Done: the alias is gone …`, `Fixed.`): the
/// report of the work asked for, whatever it names.
fn reports_done(reply: &str) -> bool {
    const DONE: [&str; 10] = [
        "done",
        "fixed",
        "finished",
        "completed",
        "all",
        "pushed",
        "merged",
        "deployed",
        "shipped",
        "resolved",
    ];
    reply
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .is_some_and(|word| DONE.contains(&word.to_lowercase().as_str()))
}

/// The byte ranges of `text` between Markdown code fences (```` ``` ````), an unclosed one to the
/// end.
fn fenced_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let fences: Vec<usize> = text.match_indices("```").map(|(at, _)| at).collect();
    fences
        .chunks(2)
        .map(|pair| pair[0]..pair.get(1).copied().unwrap_or(text.len()))
        .collect()
}

/// The image parts of `message`.
fn image_count(message: &Message) -> usize {
    match &message.content {
        Content::Parts(parts) => parts.iter().filter(|part| is_image_part(part)).count(),
        Content::Null | Content::Text(_) => 0,
    }
}

/// Where reading starts: for tool output and the assistant's text (at a group's start, so that
/// every result read has its call), and for the user's messages.
fn scan_starts(middle: &[Message], budget: usize) -> (usize, usize) {
    let capped = |message: &Message| {
        let body: usize = content_pieces(&message.content)
            .map(|piece| piece.len().min(crate::scan::SCAN_HEAD + crate::scan::SCAN_TAIL))
            .sum();
        body + message
            .calls()
            .iter()
            .map(|call| call.function.arguments.len())
            .sum::<usize>()
    };
    let (mut spent, mut user_spent) = (0, 0);
    let (mut scan_from, mut user_scan_from) = (None, None);
    for (index, message) in middle.iter().enumerate().rev() {
        let (spent, from, budget) = match message.role {
            Role::User => (&mut user_spent, &mut user_scan_from, budget / USER_SCAN_SHARE),
            _ => (&mut spent, &mut scan_from, budget),
        };
        if from.is_none() {
            *spent += capped(message);
            if *spent > budget {
                *from = Some(index + 1);
            }
        }
        if scan_from.is_some() && user_scan_from.is_some() {
            break;
        }
    }
    let scan_from = align_start_to_group(middle, scan_from.unwrap_or(0));
    (scan_from, user_scan_from.unwrap_or(0))
}

/// For each message, whether it mentions a focus word; a tool result inherits its call's.
fn focus_flags(middle: &[Message], focus_words: &[String]) -> Vec<bool> {
    if focus_words.is_empty() {
        return Vec::new();
    }
    let mentions = |text: &str| {
        let lower = text.to_lowercase();
        focus_words.iter().any(|word| lower.contains(word.as_str()))
    };
    let mut calls_about_focus = std::collections::HashSet::new();
    middle
        .iter()
        .map(|message| {
            let own = mentions(&message.text())
                || message
                    .calls()
                    .iter()
                    .any(|call| mentions(&call.function.arguments) || mentions(&call.function.name));
            if own {
                calls_about_focus.extend(message.calls().iter().map(|call| call.id.as_str()));
            }
            own || message
                .tool_call_id
                .as_deref()
                .is_some_and(|id| calls_about_focus.contains(id))
        })
        .collect()
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn cut_at(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How far [`cut_at_token`] may go past its limit to finish a token.
const TOKEN_OVERRUN: usize = 64;

/// `text` cut to about `max` bytes without splitting a token: a cut inside one goes on to its
/// end (at most [`TOKEN_OVERRUN`] bytes further), so that an error line never ends in part of
/// an id (`request_id=req-7f3a9c2e` for `req-7f3a9c2e11b0`), which reads as an id of its own.
pub(crate) fn cut_at_token(text: &str, max: usize) -> &str {
    let cut = cut_at(text, max);
    let rest = &text[cut.len()..];
    if cut.ends_with(char::is_whitespace) || rest.starts_with(char::is_whitespace) {
        return cut;
    }
    match rest.find(char::is_whitespace) {
        Some(at) if at <= TOKEN_OVERRUN => &text[..cut.len() + at],
        None if rest.len() <= TOKEN_OVERRUN => text,
        _ => cut,
    }
}

/// The text of a message's content, piece by piece, borrowed.
pub(crate) fn content_pieces(content: &Content) -> impl Iterator<Item = &str> {
    let (text, parts) = match content {
        Content::Null => (None, &[][..]),
        Content::Text(text) => (Some(text.as_str()), &[][..]),
        Content::Parts(parts) => (None, parts.as_slice()),
    };
    text.into_iter().chain(parts.iter().filter_map(part_text))
}
