//! Folding an earlier summary into the new one (iterative compaction).
//!
//! The earlier summary's lines become candidates of the same sections, after the new ones; then:
//!
//! - work listed In Progress moves to Done once the user has asked something new;
//! - a Blocked line whose command later succeeded moves to Done;
//! - an unanswered request the user has moved past becomes an earlier request in Goal, and other
//!   stale next steps are dropped;
//! - a file listed again keeps what was done to it before (`read`, `changed`) along with the new;
//! - the oldest request keeps its place: it is the conversation's goal;
//! - carried lines rank one tier below new ones of their kind, so a short budget drops older
//!   detail before the facts of the turns just compacted;
//! - what the earlier summary listed verbatim (identifiers, files, error lines, commands, the
//!   user's requests) may use the room for facts, as the new middle's facts do.

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet},
};

use crate::scan::{classify_token, command_prints_files, FastHash, FastMap, Shape, ToolKind};
use ctxhost_engine_kit::text::head_and_tail;

use super::{
    actions::{
        action_keys, broader_keys, exit_code_in, keys_a_success_settles, publishes, tells_a_finding,
        tells_todos, Selection,
    },
    draft::{Draft, Group},
    extractive::{
        asks_back, asks_first, fact_shape, files_group, is_lifted, is_revoked, names_any,
        replaced_note_count, stated_blocker_words, turns_down, EARLIER_ANSWER_CHARS, LINES_PER_ERROR_SHAPE,
        LOOK_UP_TIER, PASSED_LATER, RECORDS_DISPLAY, REPEATED_TIER, STATED_BLOCKER,
    },
    facts::{verbs, FactKind, Facts},
    patterns::{
        decision_record_key, is_decision_record, names_a_ticket, opens_with_record, past_assent,
        states_a_blocker, states_a_finding, FindingKind, RecordKey,
    },
    sections::{
        goal_request, is_goal_request, oldest_request, open_request, parse_sections, Section,
        ANSWERED_QUESTION, FOCUS, LATEST_ANSWER, LATEST_ANSWERED, PINNED_ANSWER, PRINTED_BY,
    },
};

/// How many findings of each kind an earlier summary stated (`Root cause: …`, `Fixed: …`) keep
/// their rank, the newest: an incident's diagnosis outlives the folds after it, a long session's
/// every `Fixed: …` does not.
const CARRIED_FINDINGS: usize = 3;

/// Added to the place of an earlier summary's answer to its latest request moved under Done:
/// past every line of that summary.
const MOVED_ANSWER_ORDER: usize = 1_000_000;

/// The keys of the action a summary's line (``[terminal] ran `cmd` -> …``) tells of: its tool and
/// each program its command runs.
fn action_line_keys(line: &str) -> Option<Vec<String>> {
    let (tool, _) = line.strip_prefix('[')?.split_once(']')?;
    let (_, rest) = line.split_once('`')?;
    let (command, _) = rest.split_once('`')?;
    Some(action_keys(tool, command))
}

/// One line of the earlier summary, placed in the new one.
struct Carried<'t> {
    section: Section,
    group: Group,
    tier: u8,
    order: usize,
    text: &'t str,
    /// A Blocked line a later success resolved, moved under Done.
    passed_later: bool,
    /// The earlier summary's latest request, answered there, asked a question.
    answered_question: bool,
    /// The answer to the request on the Goal line before it.
    answers: bool,
    /// Work done whose effect outlives the session ([`publishes`]).
    publishes: bool,
    /// The command an error line was listed under ([`Candidate::under`](super::draft::Candidate)).
    under: Option<&'t str>,
}

/// What the earlier summary (or several folded together, oldest first, as lcm condenses them)
/// tells of its own lines: which record of a decision stands, which request it reversed, which
/// work a later summary continued or resolved.
struct Earlier<'p> {
    previous: &'p str,
    /// Each decision's last record in Key Decisions, by its key: the one that stands.
    standing: FastMap<RecordKey, &'p str>,
    /// Key Decisions' lines, without a cut's mark.
    listed: Vec<&'p str>,
    /// Where the last summary folded in starts.
    last_summary_at: Option<usize>,
    /// Where each line done or in progress stands, and its action's keys.
    done_at: Vec<(usize, Vec<String>)>,
}

impl<'p> Earlier<'p> {
    fn read(previous: &'p str, sections: &[Vec<&'p str>; 9]) -> Self {
        let decisions = &sections[Section::Decisions.index()];
        let mut earlier = Self {
            previous,
            standing: decisions
                .iter()
                .filter_map(|line| Some((decision_record_key(line.trim())?, line.trim())))
                .collect(),
            listed: decisions
                .iter()
                .map(|line| line.trim().trim_end_matches('…'))
                .collect(),
            last_summary_at: previous
                .match_indices("## Goal")
                .map(|(at, _)| at)
                .filter(|&at| at == 0 || previous.as_bytes()[at - 1] == b'\n')
                .last(),
            done_at: Vec::new(),
        };
        // A failure is never listed as done or in progress: either says the action went through.
        // With the programs each one's success shows to pass (`terraform apply` a `make apply`).
        // Only work listed after a Blocked action line can resolve it: in one summary Done comes
        // first, so only summaries folded together (lcm's) hold any.
        let Some(first_blocked) = sections[Section::Blocked.index()]
            .iter()
            .filter(|line| action_line_keys(line).is_some())
            .map(|line| earlier.offset(line))
            .min()
        else {
            return earlier;
        };
        earlier.done_at = sections[Section::Done.index()]
            .iter()
            .chain(&sections[Section::InProgress.index()])
            .filter(|line| earlier.offset(line) > first_blocked)
            .filter_map(|line| {
                let keys = action_line_keys(line)?;
                let settled: Vec<String> = keys.iter().flat_map(|key| keys_a_success_settles(key)).collect();
                Some((earlier.offset(line), keys.into_iter().chain(settled).collect()))
            })
            .collect();
        earlier
    }

    fn offset(&self, line: &str) -> usize {
        line.as_ptr() as usize - self.previous.as_ptr() as usize
    }

    /// Whether a line of work done ran a command whose effect outlives the session
    /// ([`publishes`]) and did not fail.
    fn publishes_work(&self, line: &str) -> bool {
        let failed = line.ends_with(PASSED_LATER) || exit_code_in(line).is_some_and(|code| code != 0);
        !failed && action_line_keys(line).is_some_and(|keys| keys.iter().any(|key| publishes(key)))
    }

    /// Whether a later summary folded in follows `line`'s: its request is settled, its work in
    /// progress done (verify18: a condensed summary listed three requests in progress).
    fn followed(&self, line: &str) -> bool {
        self.last_summary_at.is_some_and(|last| last > self.offset(line))
    }

    /// Whether work done after `line` (a Blocked action's) ran a program it runs: the failure was
    /// resolved (verify18: a dbt run Blocked beside the rerun that passed).
    fn done_later(&self, line: &str) -> bool {
        action_line_keys(line).is_some_and(|keys| {
            let broader: Vec<String> = keys.iter().flat_map(|key| broader_keys(key)).collect();
            self.done_at.iter().any(|(at, done)| {
                *at > self.offset(line) && done.iter().any(|key| keys.contains(key) || broader.contains(key))
            })
        })
    }

    /// Whether a later record of decision `key` than `line` stands (verify19: `Decision 1:
    /// upgrade AGP` beside `Decision 1 revised: stay on AGP 8.3.2`).
    fn later_record(&self, key: RecordKey, line: &str) -> bool {
        self.standing
            .get(&key)
            .is_some_and(|record| self.offset(record) > self.offset(line))
    }

    /// Whether a goal line is a request recording a decision that a later record replaced, in
    /// the new middle or in Key Decisions, or that Key Decisions no longer lists: carried as a
    /// goal, it read as the plan (verify18: `Decision 2: keep sync.Map but shard it` as a
    /// replay's only goal, beside `Reverse decision 2: drop sync.Map entirely`).
    fn reversed_goal(&self, line: &str, facts: &Facts<'_>) -> bool {
        let request = goal_request(line.trim());
        if !opens_with_record(request) {
            return false;
        }
        let request = past_assent(request);
        match decision_record_key(request) {
            Some(key) => {
                facts.records.iter().any(|record| record.key == Some(key))
                    || self.standing.get(&key).is_some_and(|record| *record != request)
            }
            None => !self.listed.iter().any(|record| {
                !record.is_empty() && (request.starts_with(record) || record.starts_with(request))
            }),
        }
    }
}

impl<'t> Draft<'t> {
    /// Adds the lines of `previous` (an earlier summary's body) after the new candidates.
    pub(super) fn add_previous(&mut self, facts: &Facts<'t>, previous: &'t str) {
        let sections = parse_sections(previous);
        let mut oldest = oldest_request(previous);
        let user_moved_on = !facts.requests.is_empty() || facts.moved_on;
        let settled = user_moved_on || !facts.open_at_end;
        let mut carried = Vec::new();
        let earlier = Earlier::read(previous, &sections);
        let stated_by_user: Vec<&str> = sections[Section::Blocked.index()]
            .iter()
            .filter_map(|line| line.trim().trim_start_matches("- ").strip_prefix(STATED_BLOCKER))
            .filter_map(|line| line.strip_prefix("the user: "))
            .collect();
        let stated_words = stated_blocker_words(&stated_by_user, facts);
        // The earlier requests naming a ticket: what a lift naming only the ticket is about.
        let ticket_goals: Vec<&str> = if facts.lifts.is_empty() {
            Vec::new()
        } else {
            sections[Section::Goal.index()]
                .iter()
                .copied()
                .filter(|line| names_a_ticket(line))
                .collect()
        };
        // The lines of failures that passed later, done or resolved now: read before Critical
        // Context, whose error lines they quote.
        let mut fixed: Vec<FixedRun<'t>> = Vec::new();
        // The messages of the new middle's error lines fixed since: an earlier error saying one
        // under another exception's name was fixed with it.
        let fixed_messages: Vec<String> = self
            .candidates
            .iter()
            .filter(|candidate| candidate.group == Group::FixedErrors)
            .filter_map(|candidate| error_message(&candidate.text).map(str::to_owned))
            .collect();
        // A todo list the new middle wrote replaces the one an earlier summary told.
        let new_todos = self
            .candidates
            .iter()
            .any(|candidate| candidate.section == Section::Done && tells_todos(&candidate.text));
        // The programs of the new middle's successes, which settle a sub-list's command.
        let passed_programs: HashSet<String> = self
            .resolved
            .iter()
            .filter_map(|key| key.split_once('\u{0}').map(|(_, program)| program.to_owned()))
            .collect();
        // The command of the sub-list of error lines being read (`` - `make ci` printed:``).
        let mut printed_by: Option<&'t str> = None;
        // Position in the earlier summary as a whole, so moved lines keep their reading order.
        let mut position = 0;
        // The Goal line before, a question answered: its answer ranks with it.
        let mut after_question = false;
        // The Goal line before, a request: its answer is carried with it.
        let mut after_request = false;
        for section in Section::ALL {
            let lines = &sections[section.index()];
            let mut group = Group::None;
            for line in lines {
                position += 1;
                let follows_question = std::mem::replace(
                    &mut after_question,
                    section == Section::Goal
                        && (line.starts_with(ANSWERED_QUESTION)
                            || line.strip_prefix(LATEST_ANSWERED).is_some_and(asks_first)),
                );
                let follows_request = std::mem::replace(
                    &mut after_request,
                    section == Section::Goal && is_goal_request(line),
                );
                let moved_on = section == Section::Blocked && self.found_later(line);
                let (target, tier) = match section {
                    Section::Goal if line.starts_with(FOCUS) => continue,
                    // The answer to a question stays with it, at its tier (verify21: `Answered
                    // question: which Python version…` lost its answer at the next fold).
                    Section::Goal if line.starts_with(LATEST_ANSWER) && follows_question => (section, 1),
                    // What an earlier request got stays with it, below the requests, as a middle's
                    // earlier answers do. One that states a finding (`Fixed: the redis ingress
                    // rule is back …`) stays under Done, as a middle's findings do (verify38: an
                    // incident's fix was lost at the fold after the next request).
                    Section::Goal if line.starts_with(LATEST_ANSWER) => {
                        let answer = &line[LATEST_ANSWER.len()..];
                        // One that said what blocked the work goes once that is lifted, as its
                        // Blocked line does (verify43: `Its answer: Blocked: … REG-5120` beside
                        // `Blocked: (none)` to the end of a replay).
                        if states_a_blocker(answer) && is_lifted(facts, answer, None, &ticket_goals) {
                            continue;
                        }
                        // One that recorded a decision the new middle reverses by name goes with
                        // the record (verify47).
                        if facts
                            .turning_down
                            .iter()
                            .any(|decision| turns_down(decision.text, answer))
                            && is_decision_record(answer)
                        {
                            continue;
                        }
                        let target = match (states_a_finding(answer), follows_request && !asks_back(answer)) {
                            (true, _) => Section::Done,
                            (false, true) => section,
                            (false, false) => continue,
                        };
                        // Said again by the new summary: a finding it lists, or the same answer
                        // (to a request repeated), quoted as it quotes them. Only a finding is
                        // looked for inside other lines: a replay's every fold carries an answer,
                        // and searching the thousand lines for each cost 6% of it.
                        let said_again = if target == Section::Done {
                            self.candidates
                                .iter()
                                .any(|candidate| candidate.text.contains(answer))
                        } else {
                            self.candidates.iter().any(|candidate| {
                                candidate.section == Section::Goal && candidate.text == *line
                            })
                        };
                        if said_again {
                            continue;
                        }
                        (target, 2)
                    }
                    // The answer to the request kept before the earlier summary: given to that
                    // request, or replaced by the new summary's own, or still standing.
                    Section::Goal
                        if line.starts_with(PINNED_ANSWER)
                            && (facts.pinned_answer_given || facts.pinned_answer.is_some()) =>
                    {
                        continue
                    }
                    Section::Goal if earlier.reversed_goal(line, facts) => continue,
                    Section::NextSteps
                        if open_request(line)
                            .is_some_and(|request| earlier.reversed_goal(request, facts)) =>
                    {
                        continue
                    }
                    // The oldest request keeps the conversation's goal.
                    Section::Goal | Section::NextSteps
                        if oldest.take_if(|oldest| oldest == line).is_some() =>
                    {
                        let open = section == Section::NextSteps && !settled && !earlier.followed(line);
                        (if open { section } else { Section::Goal }, 0)
                    }
                    Section::NextSteps
                        if (settled || earlier.followed(line)) && open_request(line).is_some() =>
                    {
                        (Section::Goal, 1)
                    }
                    Section::NextSteps if settled => continue,
                    Section::NextSteps => (section, 1),
                    // A request the new middle quotes again (asked again, or kept after the head
                    // last time and summarised now) is listed once, with the answer the middle
                    // gives it (verify48: `quick question — …` stood bare beside `Answered
                    // question: quick question — …` and its answer).
                    Section::Goal
                        if is_goal_request(line)
                            && self.candidates.iter().any(|candidate| {
                                candidate.section == Section::Goal
                                    && candidate.text.ends_with(
                                        goal_request(line)
                                            .strip_prefix(ANSWERED_QUESTION)
                                            .unwrap_or(goal_request(line)),
                                    )
                            }) =>
                    {
                        continue
                    }
                    Section::Done | Section::InProgress if new_todos && tells_todos(line) => continue,
                    Section::InProgress if user_moved_on || earlier.followed(line) => (Section::Done, 2),
                    Section::Blocked if moved_on => (Section::Done, 2),
                    Section::Blocked
                        if (self.is_resolved(line) || earlier.done_later(line))
                            && !names_any(line, &stated_words) =>
                    {
                        (Section::Done, 2)
                    }
                    // A stated blocker the user since said is no longer in the way is dropped;
                    // the others give way to the new middle's.
                    Section::Blocked
                        if line
                            .strip_prefix(STATED_BLOCKER)
                            .is_some_and(|stated| is_lifted(facts, stated, None, &ticket_goals)) =>
                    {
                        continue
                    }
                    Section::Blocked if line.starts_with(STATED_BLOCKER) => (section, 2),
                    // A rule the user since permitted what it forbade no longer stands.
                    Section::Constraints if is_revoked(facts, line, None) => continue,
                    Section::Goal | Section::Constraints | Section::Blocked => (section, 1),
                    // A decision record the new middle revised is replaced, not carried; one that
                    // stands ranks as a new record does.
                    Section::Decisions => match decision_record_key(line) {
                        Some(key)
                            if facts
                                .records
                                .iter()
                                .any(|r| r.key == Some(key) || r.replaces == Some(key))
                                || earlier.later_record(key, line) =>
                        {
                            self.replaced_records += 1;
                            continue;
                        }
                        Some(_) => (section, 1),
                        None => match replaced_note_count(line) {
                            Some(count) => {
                                self.replaced_records += count;
                                continue;
                            }
                            // A record without a number stands as a numbered one does, until a
                            // new decision turns it down by name (verify46: `Decision reversed:
                            // keep formatRelative(date: Date) as is …` gave way to commands at
                            // the second fold, with room to spare).
                            None if is_decision_record(line) => {
                                let turned_down = facts
                                    .turning_down
                                    .iter()
                                    .any(|decision| turns_down(decision.text, line));
                                if turned_down {
                                    self.replaced_records += 1;
                                    continue;
                                }
                                (section, 1)
                            }
                            None => (section, 2),
                        },
                    },
                    _ => (section, 2),
                };
                let mut text = line.trim();
                if section == Section::Files {
                    // `Changed: a, b`: each file on its own, folded into a new line naming it.
                    if let Some((label, verbs)) = label_group(text).and_then(|g| Some((g, file_verbs(g)?))) {
                        let items = text[label.label().len()..].trim();
                        for item in items.split(", ").filter(|item| !item.is_empty()) {
                            if !self.merge_file(facts, item, verbs) {
                                carried.push(Carried {
                                    section: target,
                                    group: label,
                                    tier,
                                    order: position,
                                    text: item,
                                    passed_later: false,
                                    answered_question: false,
                                    answers: false,
                                    publishes: false,
                                    under: None,
                                });
                            }
                        }
                        continue;
                    }
                }
                if section == Section::Critical {
                    if let Some(label) = label_group(text) {
                        group = label;
                        printed_by = None;
                        let items = text[label.label().len()..].trim();
                        if label.inline() {
                            // An issue an earlier summary kept ranks as a new one does: a
                            // helpdesk's tickets (`OPS-3302`) gave way to the next day's ids.
                            let tier = if group == Group::Issues { 1 } else { tier };
                            for item in items.split(", ").filter(|item| !item.is_empty()) {
                                carried.push(Carried {
                                    section: target,
                                    group,
                                    tier,
                                    order: position,
                                    text: item.trim_matches('`'),
                                    passed_later: false,
                                    answered_question: false,
                                    answers: false,
                                    publishes: false,
                                    under: None,
                                });
                            }
                        }
                        continue;
                    }
                    if !line.starts_with("  ") {
                        group = Group::None;
                    }
                    text = text.trim_start_matches("- ").trim();
                    if group.is_commands() {
                        text = text.trim_matches('`');
                    }
                    // A sub-list's heading names the command its lines were printed by; a line
                    // indented no further than it ends the sub-list.
                    if group == Group::Errors && !line.starts_with("    ") {
                        printed_by = sub_list_command(text);
                        if printed_by.is_some() {
                            continue;
                        }
                    }
                }
                if section == Section::Files && self.merge_file_line(facts, text) {
                    continue;
                }
                let answered_question =
                    section == Section::Goal && text.strip_prefix(LATEST_ANSWERED).is_some_and(asks_first);
                let text = match section {
                    Section::Goal if target == Section::Done => {
                        text.strip_prefix(LATEST_ANSWER).unwrap_or(text)
                    }
                    Section::Goal => goal_request(text),
                    Section::NextSteps if target == Section::Goal => open_request(text).unwrap_or(text),
                    _ => text,
                };
                // A command an earlier summary kept ranks as a new one does, above the ids listed
                // after it: the later line wins a tie, and an incident's rollback gave way to
                // a log's request ids when lcm condensed its summaries.
                let tier = if group == Group::Commands { 1 } else { tier };
                let passed_later = section == Section::Blocked && target == Section::Done && !moved_on;
                if passed_later || (section == Section::Done && text.ends_with(PASSED_LATER)) {
                    fixed.push(FixedRun::of(text));
                }
                // An error line a failure that passed later quotes was fixed since (verify20: it
                // stood under `Errors:` beside its failure's `; passed on a later run`).
                // So is one that says its message under another name: the exception it was
                // raised from (`psycopg2.errors.LockNotAvailable: canceling statement due to lock
                // timeout` under the fixed `django.db.utils.OperationalError: canceling …`).
                // And every line listed under a command that passed since, by a later run of the
                // failure that printed them or in the new middle (verify36: `make ci` passed and
                // its `FAILED tests/test_invoice.py::…` and `1 failed, 204 passed` stayed under
                // Errors, tied to nothing that passed).
                let message = match group {
                    Group::Errors => error_message(text),
                    _ => None,
                };
                let under = printed_by.filter(|_| group == Group::Errors);
                let (group, tier, under) = match group {
                    Group::Errors
                        if fixed.iter().any(|done| {
                            done.printed(text) || message.is_some_and(|message| done.line.contains(message))
                        }) || message
                            .is_some_and(|message| fixed_messages.iter().any(|fixed| fixed == message))
                            || under.is_some_and(|command| {
                                fixed.iter().any(|done| done.ran(command))
                                    || settles_command(command, &passed_programs, &self.passed_commands)
                            }) =>
                    {
                        (Group::FixedErrors, 4, None)
                    }
                    group => (group, tier, under),
                };
                // The answer to the latest request moved under Done is the newest work there: it
                // reads last, and ranks as the newest finding carried.
                let order = match (section, target) {
                    (Section::Goal, Section::Done) => position + MOVED_ANSWER_ORDER,
                    _ => position,
                };
                carried.push(Carried {
                    section: target,
                    group,
                    tier,
                    order,
                    text,
                    passed_later,
                    answered_question,
                    answers: section == Section::Goal
                        && target == Section::Goal
                        && follows_request
                        && text.starts_with(LATEST_ANSWER),
                    publishes: matches!(section, Section::Done | Section::InProgress)
                        && earlier.publishes_work(line),
                    under,
                });
            }
        }
        self.add_carried(facts, carried);
    }

    fn add_carried(&mut self, facts: &Facts<'t>, carried: Vec<Carried<'t>>) {
        // Lines the new candidates or facts already say, and repeats, are left out (borrowed
        // texts and the fast hash: copying every candidate's text cost more than the rest).
        // A line listing a fact as it reads is found by the facts' own map: only the other lines
        // (requests, actions, a long command's cut) are gathered here.
        let new: HashSet<&str, FastHash> = self
            .candidates
            .iter()
            .filter(|candidate| {
                candidate
                    .fact
                    .is_none_or(|id| facts.facts[id].text.as_ref() != candidate.text.as_ref())
            })
            .map(|candidate| candidate.text.as_ref())
            .collect();
        // A repeat within a section goes; the same words in two sections stay: a user's request
        // that is all a decision (`Reverse decision 1: …`) is listed in Goal and in Key
        // Decisions, and dropping the second made the next fold lose the decision.
        let mut seen = HashSet::with_capacity_and_hasher(carried.len(), FastHash);
        let carried: Vec<Carried<'t>> = carried
            .into_iter()
            .filter(|line| {
                !new.contains(line.text)
                    && !facts.contains_text(line.text)
                    && seen.insert((line.section, line.text))
            })
            .collect();
        drop(new);
        let repeated = repeated_lines(facts, &carried);
        // The newest findings the earlier summary stated under a label (`Root cause: …`), which
        // are listed under Done or, as the assistant's reasoning, under Key Decisions.
        let (mut diagnoses, mut outcomes) = (0, 0);
        let mut newest_finding = vec![false; carried.len()];
        let mut newest_first: Vec<usize> = (0..carried.len()).collect();
        newest_first.sort_by_key(|&at| std::cmp::Reverse(carried[at].order));
        for at in newest_first {
            let line = &carried[at];
            if !matches!(line.section, Section::Done | Section::Decisions) || !states_a_finding(line.text) {
                continue;
            }
            let listed = match FindingKind::of(line.text) {
                FindingKind::Diagnosis => &mut diagnoses,
                FindingKind::Outcome => &mut outcomes,
            };
            if *listed < CARRIED_FINDINGS {
                newest_finding[at] = true;
                *listed += 1;
            }
        }
        self.candidates.reserve(carried.len());
        // The last request carried: its candidate, its place in the earlier summary, where its
        // answer belongs, and whether it asks a question.
        let mut request_at: Option<(usize, usize, bool)> = None;
        for ((line, repeated), newest_finding) in carried.into_iter().zip(repeated).zip(newest_finding) {
            let request = request_at.filter(|&(_, order, _)| order + 1 == line.order);
            if line.answers && request.is_none() {
                // Its request is not carried (the new middle lists it): the answer goes too.
                continue;
            }
            // One tier below new lines of the same kind: when the budget is short, what the
            // earlier summary already condensed gives way before the new middle's facts (the goal,
            // tier 0, always stays). The user's constraints stand until they say otherwise: they
            // keep their tier, or a long session's error lines pushed out `stay on react@18.3.1`;
            // so do the decisions recorded by number that no later record replaced, and the
            // issues and tickets the work is about (a session names few). Error lines,
            // commands and ids of a shape already listed three times go below every other line,
            // as the new middle's do.
            let record = match line.section {
                Section::Decisions => decision_record_key(line.text),
                _ => None,
            };
            // Numbered or not (verify46: `Decision reversed: keep formatRelative(date: Date) as
            // is …` gave way to the fold's read-only commands, in a fifth of the room).
            let is_record = line.section == Section::Decisions && is_decision_record(line.text);
            let tier = match line.tier {
                0 => 0,
                _ if repeated => REPEATED_TIER + 1,
                // So do the files the tools changed: a replay's 42 compactions lost every one of
                // them to the newest listings' names (verify18).
                // And the work done whose effect outlives the session (a release uploaded, a
                // branch pushed): a replay's summaries had lost a PyPI upload by its next fold
                // (verify25).
                // And what still blocks the work: a stated blocker (`tracked in NET-4410`) gave
                // way to a search's paths at the fold after a workaround, though it still stood
                // (verify37).
                // And what a subagent found (verify37: the consumers of `formatDate` a `Task`
                // listed gave way to a search's paths at the next fold), and the newest findings
                // the assistant stated (verify38: an incident's `Root cause: 559e0e8 (#1412) …`
                // gave way to the postmortem's file reads two folds later).
                tier if newest_finding
                    || line.section == Section::Constraints
                    || (line.section == Section::Done
                        && (tells_a_finding(line.text) || tells_todos(line.text)))
                    || line.section == Section::Blocked
                    || is_record
                    || line.group == Group::Issues
                    || line.group == Group::FilesChanged
                    || line.publishes =>
                {
                    tier.min(1)
                }
                // Files printed rank below the other work, as the new middle's do.
                _ if matches!(line.section, Section::Done | Section::InProgress)
                    && tells_a_look_up(line.text) =>
                {
                    LOOK_UP_TIER
                }
                tier => tier + 1,
            };
            // A failure moved under Done says it passed later, or it reads as one left behind
            // (verify19: `./gradlew :app:bundleRelease -> exit 1 … BUILD FAILED` under Done).
            let text = if line.passed_later && !line.text.ends_with(PASSED_LATER) {
                Cow::Owned(format!("{}{PASSED_LATER}", line.text))
            } else if line.answered_question {
                Cow::Owned(format!("{ANSWERED_QUESTION}{}", line.text))
            } else if line.answers && request.is_some_and(|(_, _, asks)| !asks) {
                // The answer to the latest request, quoted longer, is now an earlier one's.
                let answer = &line.text[LATEST_ANSWER.len()..];
                match head_and_tail(answer, EARLIER_ANSWER_CHARS) {
                    Cow::Owned(cut) => Cow::Owned(format!("{LATEST_ANSWER}{cut}")),
                    Cow::Borrowed(_) => Cow::Borrowed(line.text),
                }
            } else {
                Cow::Borrowed(line.text)
            };
            let asks = line.section == Section::Goal
                && (line.answered_question || line.text.starts_with(ANSWERED_QUESTION));
            let at = self.candidates.len();
            let after = request.filter(|_| line.answers).map(|(at, _, _)| at);
            let asked = request.is_some_and(|(_, _, asks)| asks);
            if line.section == Section::Goal {
                request_at = (!line.answers).then_some((at, line.order, asks));
            }
            let candidate = self.push(line.section, tier, 0, text);
            candidate.group = line.group;
            candidate.after = after;
            candidate.under = line.under.map(Cow::Borrowed);
            // Earlier work reads before the new; everything else after it, but for numbered
            // decisions, which read in their numbers' order.
            candidate.display = match (line.section, record) {
                (_, Some(key)) => RECORDS_DISPLAY + i64::from(key.number),
                (Section::Done | Section::InProgress | Section::Blocked, _) => {
                    line.order as i64 - 1_000_000_000
                }
                _ => 1_000_000_000 + line.order as i64,
            };
            candidate.always = line.tier == 0;
            if line.tier == 0 && line.section == Section::Goal {
                // The conversation's first request reads last, as a summary lists it: the next
                // fold finds it there.
                candidate.display = i64::MAX;
            }
            // What the earlier summary listed verbatim (its identifiers, files, error lines,
            // commands and the user's requests) is a fact still: it may use the room for facts,
            // after the new middle's. Kept to the prose's budget, a replay's summaries lost most
            // of what earlier compactions had kept.
            // Not the answer to an earlier task, which restates its work (as a middle's is).
            candidate.keeps_fact = !matches!(line.group, Group::None | Group::Names)
                || (line.section == Section::Goal && (!line.answers || asked))
                || is_record;
            // What still blocks the work may use that room too, as the new middle's blockers do,
            // and the newest findings, as the new middle's newest do: kept to the prose's budget,
            // a root cause gave way at a small window to the requests of the folds after it with
            // three quarters of the facts' room unused (verify43).
            candidate.beyond_prose = line.section == Section::Blocked || newest_finding;
        }
    }

    /// Whether a Blocked line tells of a lookup that found nothing (``[read_file] could not read
    /// src/crawler/session.py: File not found``, a page's 404) and the new middle holds a lookup
    /// of the same tool that found something: the work moved on, as the summary of one middle
    /// holding both says (`moved_on` in `add_actions`).
    fn found_later(&self, line: &str) -> bool {
        let Some((tool, _)) = line.strip_prefix('[').and_then(|rest| rest.split_once(']')) else {
            return false;
        };
        let lowercase = tool.to_ascii_lowercase();
        let looks_up = matches!(ToolKind::of(tool), ToolKind::Read | ToolKind::Search)
            || ["fetch", "web", "browse", "scrape"]
                .iter()
                .any(|word| lowercase.contains(word));
        looks_up
            && self.resolved.iter().any(|key| {
                key.strip_prefix(tool)
                    .is_some_and(|rest| rest.starts_with('\u{0}'))
            })
    }

    /// Whether a Blocked line (``[terminal] ran `cmd` -> exit 1 …``) was resolved by a later success
    /// of a program it runs.
    fn is_resolved(&self, line: &str) -> bool {
        let selection = line.split('`').nth(1).map(Selection::of);
        // A success of the same key that chose another part of the suite shows nothing of it.
        let shows_it = |key: &str| {
            self.resolved.contains(key)
                && match (&selection, self.passed_commands.get(key)) {
                    (Some(selection), Some(commands)) => commands
                        .iter()
                        .any(|passed| !selection.differs_from(&Selection::of(passed))),
                    _ => true,
                }
        };
        action_line_keys(line).is_some_and(|keys| {
            keys.iter()
                .any(|key| shows_it(key) || broader_keys(key).iter().any(|broader| shows_it(broader)))
        })
    }

    /// When an earlier `path (read, changed)` line names a file listed again, folds what was done to
    /// it into the new line; returns whether the earlier line is used up.
    fn merge_file_line(&mut self, facts: &Facts<'t>, line: &str) -> bool {
        let (path, done) = match line.split_once(" (") {
            Some((path, rest)) => (path, rest.trim_end_matches(')')),
            None => (line, ""),
        };
        let mut earlier = 0;
        for verb in done.split(", ") {
            earlier |= match verb {
                "read" => verbs::READ,
                "searched" => verbs::SEARCHED,
                "changed" => verbs::CHANGED,
                _ => 0,
            };
        }
        self.merge_file(facts, path, earlier)
    }

    /// Folds `earlier` (what an earlier summary says was done to `path`) into the new line naming
    /// the file; returns false when no new line names it.
    fn merge_file(&mut self, facts: &Facts<'t>, path: &str, earlier: u8) -> bool {
        let Some(fact) = facts.id_of(path) else {
            return false;
        };
        if let Some(&at) = self.fact_candidates.get(&fact) {
            let merged = earlier | facts.facts[fact].verbs;
            self.candidates[at].group = files_group(merged);
        }
        true
    }
}

/// For each carried line, whether it is an error line, a command or an id beyond the last
/// [`LINES_PER_ERROR_SHAPE`] the earlier summary listed of its shape (see `repeated_shapes`). An
/// id an error line names, carried or new, is counted apart: the failing request's id stays
/// among the access log's others.
/// The message of an error line that names its error first (`psycopg2.errors.LockNotAvailable:
/// canceling statement due to lock timeout`): what follows the name, when it says enough to tell
/// one failure from another.
fn error_message(line: &str) -> Option<&str> {
    const TELLING_MESSAGE: usize = 16;
    let (name, message) = line.split_once(": ")?;
    let named = !name.is_empty() && !name.contains(char::is_whitespace);
    let message = message.trim();
    (named && message.len() >= TELLING_MESSAGE).then_some(message)
}

/// A failure's line of the earlier summary (``[terminal] ran `cmd` -> … — quoted error``) whose
/// command a later run passed, read once for what its run printed: the error lines an earlier
/// summary listed that went with it, which its line does not quote. Its command names the file
/// an error line names (a test run that passed later fixed the `FAILED
/// tests/load/test_invoices.py::test_step6` it printed), or a directory holding it (`pytest
/// tests`); or it checks the whole project (`npm run build`) and the line is a diagnostic of the
/// same compiler as the quoted one (`error TS2741` beside the quoted `error TS2345`). Once the
/// failure's line had moved under Done only the line it quoted went with it: the bundled
/// warehouse migration's replay listed every fixed day's `FAILED …` under Errors to its end, and a
/// TypeScript build's summary its fixed errors beside `npm run build -> exit 0`.
struct FixedRun<'t> {
    /// The failure's line.
    line: &'t str,
    /// Its command, as the line quotes it.
    command: Option<&'t str>,
    /// The files its command names.
    paths: Vec<&'t str>,
    /// The words of its command that could name a directory.
    directories: Vec<&'t str>,
    /// The compiler of the error line it quotes, when its command names no file.
    whole_project_family: Option<&'static str>,
}

impl<'t> FixedRun<'t> {
    fn of(line: &'t str) -> Self {
        let mut run = Self {
            line,
            command: None,
            paths: Vec::new(),
            directories: Vec::new(),
            whole_project_family: None,
        };
        let Some((command, quoted)) = line.split_once('`').and_then(|(_, rest)| rest.split_once('`')) else {
            return run;
        };
        run.command = Some(command);
        let targets = command
            .split_whitespace()
            .skip(1)
            .map(|word| word.trim_matches(|c| matches!(c, '\'' | '"')))
            .filter(|word| !word.starts_with('-'));
        for word in targets {
            if let Some((FactKind::Path, path)) = classify_token(word, Shape::of(word)) {
                run.paths.push(path);
            } else if is_directory_word(word) {
                run.directories.push(word.trim_end_matches('/'));
            }
        }
        if run.paths.is_empty() {
            let quoted = quoted.split_once(" — ").map_or("", |(_, quoted)| quoted);
            run.whole_project_family = diagnostic_family(quoted);
        }
        run
    }

    /// Whether this failure's command is `command` (a sub-list's of error lines).
    fn ran(&self, command: &str) -> bool {
        self.command.is_some_and(|own| same_command(own, command))
    }

    /// Whether `error` (an error line the earlier summary listed) went with this failure.
    fn printed(&self, error: &str) -> bool {
        self.line.contains(error)
            || self.paths.iter().any(|path| names_path(error, path))
            || self.directories.iter().any(|dir| names_path_under(error, dir))
            || self
                .whole_project_family
                .is_some_and(|family| diagnostic_family(error) == Some(family))
    }
}

/// The command of a sub-list's heading of error lines (`` `make ci` printed:``).
fn sub_list_command(item: &str) -> Option<&str> {
    item.strip_suffix(PRINTED_BY)?
        .strip_prefix('`')?
        .strip_suffix('`')
        .filter(|command| !command.is_empty())
}

/// Whether a success of a program among `passed` (the new middle's) settles a failure of
/// `command` (a sub-list's of error lines, which names no tool), as it would settle its Blocked
/// line ([`Draft::is_resolved`]): `tox -e py312` a `python -m pytest tests/unit/test_tz.py`
/// whose line was not carried.
fn settles_command(
    command: &str,
    passed: &HashSet<String>,
    passed_commands: &HashMap<String, Vec<String>>,
) -> bool {
    let selection = Selection::of(command);
    // Not a run of the same program that chose another part of the suite (verify40).
    let shows_it = |program: &str| {
        if !passed.contains(program) {
            return false;
        }
        let mut commands = passed_commands
            .iter()
            .filter(|(key, _)| key.split_once('\u{0}').is_some_and(|(_, other)| other == program))
            .flat_map(|(_, commands)| commands)
            .peekable();
        commands.peek().is_none() || commands.any(|passed| !selection.differs_from(&Selection::of(passed)))
    };
    action_keys("", command).iter().any(|key| {
        std::iter::once(key.clone()).chain(broader_keys(key)).any(|key| {
            key.split_once('\u{0}')
                .is_some_and(|(_, program)| shows_it(program))
        })
    })
}

/// Whether two quotes of a command are of the same command: alike, or one cut (`…`) where the
/// other goes on.
fn same_command(a: &str, b: &str) -> bool {
    match (a.strip_suffix('…'), b.strip_suffix('…')) {
        _ if a == b => true,
        (Some(start), None) => !start.is_empty() && b.starts_with(start),
        (None, Some(start)) => !start.is_empty() && a.starts_with(start),
        (Some(x), Some(y)) => !x.is_empty() && !y.is_empty() && (x.starts_with(y) || y.starts_with(x)),
        (None, None) => false,
    }
}

/// Whether `word` of a command could name a directory of the project (`src`, `tests/unit`).
fn is_directory_word(word: &str) -> bool {
    word.len() >= 2
        && word.bytes().any(|byte| byte.is_ascii_alphabetic())
        && word
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'/' | b'.'))
        && !word.starts_with('.')
}

/// Whether `text` names a path under directory `dir` (`src/billing/tax.py:42` under `src`).
fn names_path_under(text: &str, dir: &str) -> bool {
    text.match_indices(dir).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        before.is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '\'' | '"' | '`'))
            && text[at + dir.len()..].starts_with('/')
    })
}

/// Which compiler's diagnostic `line` is, by its form: TypeScript's (`src/a.tsx(61,5): error
/// TS2741: …`, `Found 4 errors in 3 files.`), rustc's (`error[E0308]: mismatched types`), or
/// one located as `path:line: error` (mypy, gcc, go vet).
fn diagnostic_family(line: &str) -> Option<&'static str> {
    let line = line.trim();
    let typescript = line
        .match_indices("error TS")
        .any(|(at, found)| line[at + found.len()..].starts_with(|c: char| c.is_ascii_digit()))
        || (line.starts_with("Found ") && line.contains(" error") && line.ends_with(" files.")
            || line.starts_with("Found 1 error in "));
    if typescript {
        return Some("typescript");
    }
    if line.starts_with("error[E") {
        return Some("rustc");
    }
    let (location, rest) = line.split_once(": ")?;
    let (path, position) = location.split_once(':')?;
    let located = position
        .split(':')
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && path.contains('.')
        && !path.contains(char::is_whitespace);
    (located && rest.trim_start().to_ascii_lowercase().starts_with("error")).then_some("located")
}

/// Whether `text` names `path` whole (`tests/a.py::test_b`, `tests/a.py:12`), not as part of
/// another name (`tests/a.py.bak`).
fn names_path(text: &str, path: &str) -> bool {
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || matches!(c, '/' | '(' | '\'' | '"' | '`'))
            && after.is_none_or(|c| c.is_whitespace() || matches!(c, ':' | ')' | ',' | '\'' | '"' | '`'))
    })
}

fn repeated_lines(facts: &Facts<'_>, carried: &[Carried<'_>]) -> Vec<bool> {
    let shaped = |line: &Carried<'_>| match line.group {
        Group::Errors
        | Group::FixedErrors
        | Group::FileErrorLines
        | Group::Commands
        | Group::CommandsMentioned
        | Group::Routes => true,
        Group::Hashes => line.text.len() >= 64 || line.text.bytes().any(|byte| !byte.is_ascii_hexdigit()),
        Group::Ids => true,
        _ => false,
    };
    let error_lines: Vec<&str> = carried
        .iter()
        .filter(|line| {
            matches!(
                line.group,
                Group::Errors | Group::FixedErrors | Group::FileErrorLines
            )
        })
        .map(|line| line.text)
        .chain(
            facts
                .facts
                .iter()
                .filter(|fact| fact.kind == FactKind::Error)
                .map(|fact| fact.text.as_ref()),
        )
        .collect();
    let mut by_shape: FastMap<(Group, bool, String), Vec<usize>> = FastMap::default();
    for (at, line) in carried.iter().enumerate().filter(|(_, line)| shaped(line)) {
        let in_error_line = matches!(line.group, Group::Hashes | Group::Ids)
            && error_lines.iter().any(|error| error.contains(line.text));
        by_shape
            .entry((
                line.group,
                in_error_line,
                fact_shape(line.group.is_commands(), line.text),
            ))
            .or_default()
            .push(at);
    }
    let mut repeated = vec![false; carried.len()];
    for lines in by_shape
        .values()
        .filter(|lines| lines.len() > LINES_PER_ERROR_SHAPE)
    {
        for &at in &lines[..lines.len() - LINES_PER_ERROR_SHAPE] {
            repeated[at] = true;
        }
    }
    repeated
}

fn label_group(text: &str) -> Option<Group> {
    Group::LABELLED
        .into_iter()
        .find(|group| text.starts_with(group.label()))
}

/// What was done to the files of a Relevant Files group.
fn file_verbs(group: Group) -> Option<u8> {
    match group {
        Group::FilesChanged => Some(verbs::CHANGED),
        Group::FilesRead => Some(verbs::READ),
        Group::FilesSearched => Some(verbs::SEARCHED),
        Group::FilesMentioned => Some(0),
        _ => None,
    }
}

/// Whether an earlier summary's action line tells of files printed and nothing else done
/// (`[read_file] read src/app.py (1,200 chars)`, ``[bash] ran `cat docs/notes-4.txt` -> 40 lines
/// output``).
fn tells_a_look_up(line: &str) -> bool {
    let Some((tool, rest)) = line.strip_prefix('[').and_then(|rest| rest.split_once("] ")) else {
        return false;
    };
    if rest.starts_with("read ") {
        return ToolKind::of(tool) == ToolKind::Read;
    }
    rest.strip_prefix("ran `")
        .and_then(|rest| rest.split_once("` -> "))
        .is_some_and(|(command, outcome)| {
            !outcome.starts_with("exit") && !outcome.contains("error") && command_prints_files(command)
        })
}
