//! The built-in summarizer: fills the template from the turns themselves, without a model.
//!
//! How it chooses what to keep, in order (each step only while the budget lasts):
//!
//! - the first and the latest request, always (the latest goes to Next Steps when unanswered);
//! - with a focus topic, everything that mentions it, up to about two thirds of the budget;
//! - tier 1: other requests (latest first), constraints, error lines the user pasted, commands
//!   run, failures not resolved later, files the tools touched, the earlier summary's goal;
//! - tier 2: tool actions with their outcome, error lines from tool output, every path, URL, hash,
//!   issue number and version seen;
//! - tier 3: decisions the assistant stated, names in code spans;
//! - tier 4: identifiers found only inside file contents.
//!
//! Within a tier the newest comes first. A fact already quoted verbatim by a chosen line (a command
//! inside an action line) is not listed again.

use std::{borrow::Cow, cmp::Reverse};

use super::{
    facts::{extract_facts, verbs, Fact, FactKind, Facts, Source},
    sections::{parse_sections, Section, NONE_ITEM},
    Summarizer, SummaryError, SummaryRequest,
};
use crate::{scan::FastMap, summary::facts::cut_at};

/// The summarizer that needs no model: the default, and the fallback for every other one.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtractiveSummarizer;

impl ExtractiveSummarizer {
    /// The summarizer's name in reports.
    pub const NAME: &'static str = "extractive";

    /// A summary body of at most about `max_chars` characters (the template's headings are always
    /// written, even when they alone exceed it).
    pub fn summarize_with_limit(&self, request: &SummaryRequest<'_>, max_chars: usize) -> String {
        let focus_words = focus_words(request.focus_topic);
        let scan_budget = max_chars
            .saturating_mul(SCAN_BYTES_PER_SUMMARY_CHAR)
            .clamp(MIN_SCAN_BYTES, MAX_SCAN_BYTES);
        let facts = extract_facts(request.middle, &focus_words, scan_budget);
        let mut draft = Draft::new(&facts, focus_words);
        draft.add_new(&facts, request.focus_topic, request.previous_summary.is_some());
        if let Some(previous) = request.previous_summary {
            draft.add_previous(&facts, previous);
        }
        draft.render(max_chars)
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        // A summary must save something: never more than three quarters of its input.
        let target = request.target_tokens.saturating_mul(4);
        let input_cap = request.input_tokens.saturating_mul(3);
        Ok(self.summarize_with_limit(request, target.min(input_cap) as usize))
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn reads_transcript(&self) -> bool {
        false
    }
}

/// Sub-lists of Critical Context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    None,
    Errors,
    Commands,
    Urls,
    Identifiers,
    Names,
}

impl Group {
    fn label(self) -> &'static str {
        match self {
            Group::None => "",
            Group::Errors => "Errors:",
            Group::Commands => "Commands:",
            Group::Urls => "URLs:",
            Group::Identifiers => "Identifiers:",
            Group::Names => "Names:",
        }
    }

    fn inline(self) -> bool {
        matches!(self, Group::Urls | Group::Identifiers | Group::Names)
    }

    /// Characters an item costs beyond its text.
    fn overhead(self) -> usize {
        match self {
            Group::None => 3,                      // "- " and a newline
            Group::Errors => 5,                    // "  - " and a newline
            Group::Commands => 7,                  // "  - `" "`" and a newline
            Group::Urls | Group::Identifiers => 2, // ", "
            Group::Names => 4,                     // ", `" "`"
        }
    }
}

struct Candidate<'t> {
    section: Section,
    group: Group,
    tier: u8,
    /// Larger is newer; items of an earlier summary are 0.
    recency: usize,
    /// Order within its section: ascending.
    display: i64,
    text: Cow<'t, str>,
    /// The fact this item lists; skipped when a chosen line already quotes it.
    fact: Option<usize>,
    /// Facts this line quotes verbatim.
    covers: Vec<usize>,
    /// Always kept, cut to fit.
    always: bool,
    focus: bool,
}

struct Draft<'t> {
    candidates: Vec<Candidate<'t>>,
    fact_count: usize,
    focus_words: Vec<String>,
}

/// Bytes of assistant text and tool output read per character of summary budget, within bounds:
/// far more than a summary can quote, and never more than a few milliseconds of scanning.
const SCAN_BYTES_PER_SUMMARY_CHAR: usize = 16;
const MIN_SCAN_BYTES: usize = 128 * 1024;
const MAX_SCAN_BYTES: usize = 512 * 1024;

/// Longest request quoted, for the ten latest and for the rest.
const RECENT_REQUEST_CHARS: usize = 600;
const OLDER_REQUEST_CHARS: usize = 200;
const LATEST_REQUEST_CHARS: usize = 1_200;
/// Shortest cut of an item that must be kept.
const MIN_ALWAYS_CHARS: usize = 80;

impl<'t> Draft<'t> {
    fn new(facts: &Facts<'t>, focus_words: Vec<String>) -> Self {
        Self {
            candidates: Vec::new(),
            fact_count: facts.facts.len(),
            focus_words,
        }
    }

    fn push(&mut self, section: Section, tier: u8, recency: usize, text: Cow<'t, str>) -> &mut Candidate<'t> {
        let display = match section {
            Section::Done | Section::InProgress | Section::Blocked => recency as i64,
            _ => -(recency as i64),
        };
        self.candidates.push(Candidate {
            section,
            group: Group::None,
            tier,
            recency,
            display,
            text,
            fact: None,
            covers: Vec::new(),
            always: false,
            focus: false,
        });
        self.candidates.last_mut().expect("just pushed")
    }

    fn add_new(&mut self, facts: &Facts<'t>, focus: Option<&str>, has_previous: bool) {
        if let Some(focus) = focus {
            let candidate = self.push(Section::Goal, 0, 0, Cow::Owned(format!("Focus: {focus}")));
            candidate.always = true;
            candidate.display = i64::MIN;
        }
        self.add_requests(facts, has_previous);
        for sentence in &facts.constraints {
            let candidate = self.push(
                Section::Constraints,
                1,
                sentence.index + 1,
                Cow::Borrowed(sentence.text),
            );
            candidate.focus = facts.is_focus(sentence.index);
        }
        for sentence in &facts.decisions {
            let candidate = self.push(
                Section::Decisions,
                3,
                sentence.index + 1,
                Cow::Borrowed(sentence.text),
            );
            candidate.focus = facts.is_focus(sentence.index);
        }
        self.add_actions(facts);
        for (id, fact) in facts.facts.iter().enumerate() {
            self.add_fact(id, fact);
        }
    }

    /// The user's requests, verbatim up to a length. The latest is always kept; so is the earliest
    /// when no earlier summary holds older ones.
    fn add_requests(&mut self, facts: &Facts<'t>, has_previous: bool) {
        let count = facts.requests.len();
        for (position, request) in facts.requests.iter().enumerate() {
            let latest = position + 1 == count;
            let unanswered = latest && !request.answered && facts.open_at_end;
            let text: &str = &request.text;
            let (section, tier, label, limit) = if unanswered {
                (
                    Section::NextSteps,
                    0,
                    "Unanswered request: ",
                    LATEST_REQUEST_CHARS,
                )
            } else if latest {
                (Section::Goal, 0, "Latest request: ", LATEST_REQUEST_CHARS)
            } else if position == 0 && !has_previous {
                (Section::Goal, 0, "", LATEST_REQUEST_CHARS)
            } else if count - position <= 10 {
                (Section::Goal, 1, "", RECENT_REQUEST_CHARS)
            } else {
                (Section::Goal, 1, "", OLDER_REQUEST_CHARS)
            };
            let text = format!("{label}{}", cut_marked(text.trim(), limit));
            let candidate = self.push(section, tier, request.index + 1, Cow::Owned(text));
            candidate.always = tier == 0;
            candidate.focus = facts.is_focus(request.index);
        }
    }

    fn add_actions(&mut self, facts: &Facts<'t>) {
        // A failure is resolved when the same call (tool and command or path) later succeeds.
        let mut resolved = std::collections::HashSet::new();
        let mut blocked = vec![false; facts.actions.len()];
        for (at, action) in facts.actions.iter().enumerate().rev() {
            if !action.failed && action.answered {
                resolved.insert(action.key.as_str());
            } else if action.failed && !resolved.contains(action.key.as_str()) {
                blocked[at] = true;
            }
        }
        // Identical lines collapse into their latest occurrence, with a count.
        let mut repeats: FastMap<&str, (usize, usize)> = FastMap::default();
        for (at, action) in facts.actions.iter().enumerate() {
            let entry = repeats.entry(action.line.as_str()).or_insert((0, at));
            entry.0 += 1;
            entry.1 = at;
        }
        self.add_unitemised(facts);
        for (at, action) in facts.actions.iter().enumerate() {
            if !action.itemised {
                continue;
            }
            let (times, last) = repeats[action.line.as_str()];
            if last != at {
                continue;
            }
            let mut text = action.line.clone();
            if times > 1 {
                text.push_str(&format!(" (×{times})"));
            }
            let (section, tier) = if blocked[at] {
                if let Some(error) = action.first_error {
                    text.push_str(" — ");
                    text.push_str(cut_at(error, 200));
                }
                (Section::Blocked, 1)
            } else if facts.open_at_end && at >= facts.in_progress_from {
                (Section::InProgress, 2)
            } else {
                (Section::Done, 2)
            };
            let covers = action
                .fact_ids
                .iter()
                .copied()
                .filter(|&id| {
                    facts.facts[id].kind != FactKind::Path && text.contains(facts.facts[id].text.as_ref())
                })
                .collect();
            let candidate = self.push(section, tier, action.index + 1, Cow::Owned(text));
            candidate.covers = covers;
            candidate.focus = facts.is_focus(action.index);
        }
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

    fn add_fact(&mut self, id: usize, fact: &Fact<'t>) {
        let recency = fact.last_seen + 1;
        let text: &str = &fact.text;
        let (section, group, tier, shown) = match fact.kind {
            FactKind::Path => {
                let tier = if fact.verbs != 0 {
                    1
                } else {
                    fact_tier(fact.source)
                };
                (
                    Section::Files,
                    Group::None,
                    tier,
                    Cow::Owned(describe_path(text, fact.verbs)),
                )
            }
            FactKind::Error => {
                let tier = match fact.source {
                    Source::User | Source::Arguments => 1,
                    Source::ToolOutput => 2,
                    Source::Assistant => 3,
                    Source::FileContent => 4,
                };
                (Section::Critical, Group::Errors, tier, fact.text.clone())
            }
            FactKind::Command => {
                let tier = if fact.source == Source::Assistant { 3 } else { 1 };
                (Section::Critical, Group::Commands, tier, fact.text.clone())
            }
            FactKind::Url => (
                Section::Critical,
                Group::Urls,
                fact_tier(fact.source),
                fact.text.clone(),
            ),
            FactKind::Hash | FactKind::Issue | FactKind::Version => (
                Section::Critical,
                Group::Identifiers,
                fact_tier(fact.source),
                fact.text.clone(),
            ),
            FactKind::Name => (Section::Critical, Group::Names, 3, fact.text.clone()),
        };
        let candidate = self.push(section, tier, recency, shown);
        candidate.group = group;
        candidate.fact = Some(id);
        candidate.focus = fact.focus;
    }

    /// Folds an earlier summary in: its items follow the new ones of their section; finished work
    /// moves to Done and stale next steps are dropped once the user has asked something new.
    fn add_previous(&mut self, facts: &Facts<'t>, previous: &'t str) {
        let sections = parse_sections(previous);
        let user_moved_on = !facts.requests.is_empty();
        let known: std::collections::HashSet<&str> = self
            .candidates
            .iter()
            .map(|candidate| candidate.text.as_ref())
            .collect();
        let known: std::collections::HashSet<String> = known.into_iter().map(str::to_owned).collect();
        let mut extra = Vec::new();
        for section in Section::ALL {
            let mut group = Group::None;
            for (order, line) in sections[section.index()].iter().enumerate() {
                let settled = user_moved_on || !facts.open_at_end;
                let (target, tier) = match section {
                    Section::Goal if line.starts_with("Focus: ") => continue,
                    // The oldest request (listed last) keeps the conversation's goal across compactions.
                    Section::Goal if order + 1 == sections[section.index()].len() => (Section::Goal, 0),
                    // An open request the user has since moved past is history, not a next step.
                    Section::NextSteps if settled && line.starts_with("Unanswered request: ") => {
                        (Section::Goal, 1)
                    }
                    Section::NextSteps if settled => continue,
                    Section::NextSteps => (section, 1),
                    Section::InProgress if user_moved_on => (Section::Done, 2),
                    Section::Goal | Section::Constraints | Section::Blocked => (section, 1),
                    Section::Decisions => (section, 3),
                    _ => (section, 2),
                };
                let mut text = line.trim();
                if section == Section::Critical {
                    if let Some(label_group) = label_group(text) {
                        group = label_group;
                        let rest = text[label_group.label().len()..].trim();
                        if group.inline() {
                            for item in rest.split(", ").filter(|item| !item.is_empty()) {
                                let item = item.trim_matches('`');
                                extra.push((target, group, tier, order, item));
                            }
                        }
                        continue;
                    }
                    if !line.starts_with("  ") {
                        group = Group::None;
                    }
                    text = text.trim_start_matches("- ").trim();
                    if group == Group::Commands {
                        text = text.trim_matches('`');
                    }
                }
                let text = match text.strip_prefix("Latest request: ") {
                    Some(request) if section == Section::Goal => request,
                    _ => text,
                };
                let text = match text.strip_prefix("Unanswered request: ") {
                    Some(request) if target == Section::Goal => request,
                    _ => text,
                };
                if section == Section::Files && facts.contains_text(text.split(" (").next().unwrap_or(text)) {
                    continue;
                }
                extra.push((target, group, tier, order, text));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (section, group, tier, order, text) in extra {
            if known.contains(text) || facts.contains_text(text) || !seen.insert(text) {
                continue;
            }
            let candidate = self.push(section, tier, 0, Cow::Borrowed(text));
            candidate.group = group;
            // Earlier work reads before the new; everything else after it.
            candidate.display = match section {
                Section::Done | Section::InProgress | Section::Blocked => order as i64 - 1_000_000_000,
                _ => 1_000_000_000 + order as i64,
            };
            candidate.always = tier == 0;
        }
    }

    fn render(mut self, max_chars: usize) -> String {
        let fixed: usize = super::TEMPLATE_HEADINGS
            .iter()
            .map(|heading| heading.len() + 2)
            .sum::<usize>()
            + Section::ALL.len() * (NONE_ITEM.len() + 3);
        let budget = max_chars.saturating_sub(fixed);
        for candidate in &mut self.candidates {
            candidate.focus |= !self.focus_words.is_empty() && {
                let lower = candidate.text.to_lowercase();
                self.focus_words.iter().any(|word| lower.contains(word.as_str()))
            };
        }
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.sort_by_key(|&at| (self.candidates[at].tier, Reverse(self.candidates[at].recency)));
        let mut chosen = Selection {
            picked: vec![false; self.candidates.len()],
            covered: vec![false; self.fact_count],
            groups: Vec::new(),
            used: 0,
        };
        for &at in &order {
            if self.candidates[at].always {
                let candidate = &mut self.candidates[at];
                let room = budget.saturating_sub(chosen.used).max(MIN_ALWAYS_CHARS);
                if candidate.text.chars().count() + 3 > room {
                    candidate.text = Cow::Owned(cut_marked(&candidate.text, room - 3).into_owned());
                }
                chosen.take(candidate, at, usize::MAX);
            }
        }
        if !self.focus_words.is_empty() {
            let focus_budget = budget * 2 / 3;
            for &at in &order {
                if self.candidates[at].focus {
                    chosen.take(&self.candidates[at], at, focus_budget);
                }
            }
        }
        for &at in &order {
            chosen.take(&self.candidates[at], at, budget);
            if budget.saturating_sub(chosen.used) < 8 {
                break;
            }
        }
        render_sections(&self.candidates, &chosen.picked)
    }
}

struct Selection {
    picked: Vec<bool>,
    covered: Vec<bool>,
    groups: Vec<(Section, Group)>,
    used: usize,
}

impl Selection {
    /// Takes `candidate` when it fits in `budget` and lists nothing already quoted.
    fn take(&mut self, candidate: &Candidate<'_>, at: usize, budget: usize) {
        if self.picked[at] || candidate.fact.is_some_and(|fact| self.covered[fact]) {
            return;
        }
        let mut cost = candidate.text.chars().count() + candidate.group.overhead();
        let key = (candidate.section, candidate.group);
        if candidate.group != Group::None && !self.groups.contains(&key) {
            cost += candidate.group.label().len() + 3;
        }
        if self.used + cost > budget {
            return;
        }
        self.used += cost;
        self.picked[at] = true;
        if !self.groups.contains(&key) {
            self.groups.push(key);
        }
        if let Some(fact) = candidate.fact {
            self.covered[fact] = true;
        }
        for &fact in &candidate.covers {
            self.covered[fact] = true;
        }
    }
}

fn render_sections(candidates: &[Candidate<'_>], picked: &[bool]) -> String {
    let mut out = String::new();
    for section in Section::ALL {
        if section == Section::Done {
            out.push_str("## Progress\n");
        }
        out.push_str(section.heading());
        out.push('\n');
        let mut items: Vec<&Candidate<'_>> = candidates
            .iter()
            .zip(picked)
            .filter(|(candidate, picked)| **picked && candidate.section == section)
            .map(|(candidate, _)| candidate)
            .collect();
        items.sort_by_key(|candidate| (candidate.group, candidate.display));
        if items.is_empty() {
            out.push_str("- ");
            out.push_str(NONE_ITEM);
            out.push('\n');
        }
        let mut at = 0;
        while at < items.len() {
            let group = items[at].group;
            let end = items[at..]
                .iter()
                .position(|item| item.group != group)
                .map_or(items.len(), |n| at + n);
            let members = &items[at..end];
            match group {
                Group::None => {
                    for item in members {
                        out.push_str("- ");
                        out.push_str(&item.text);
                        out.push('\n');
                    }
                }
                _ if group.inline() => {
                    let quote = if group == Group::Names { "`" } else { "" };
                    let joined: Vec<String> = members
                        .iter()
                        .map(|item| format!("{quote}{}{quote}", item.text))
                        .collect();
                    out.push_str(&format!("- {} {}\n", group.label(), joined.join(", ")));
                }
                _ => {
                    out.push_str(&format!("- {}\n", group.label()));
                    for item in members {
                        if group == Group::Commands {
                            out.push_str(&format!("  - `{}`\n", item.text));
                        } else {
                            out.push_str(&format!("  - {}\n", item.text));
                        }
                    }
                }
            }
            at = end;
        }
        if !matches!(section, Section::Done | Section::InProgress) {
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
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

fn label_group(text: &str) -> Option<Group> {
    [
        Group::Errors,
        Group::Commands,
        Group::Urls,
        Group::Identifiers,
        Group::Names,
    ]
    .into_iter()
    .find(|group| text.starts_with(group.label()))
}

fn fact_tier(source: Source) -> u8 {
    match source {
        Source::FileContent => 4,
        _ => 2,
    }
}

fn describe_path(path: &str, verbs: u8) -> String {
    let mut done = Vec::new();
    if verbs & verbs::READ != 0 {
        done.push("read");
    }
    if verbs & verbs::SEARCHED != 0 {
        done.push("searched");
    }
    if verbs & verbs::CHANGED != 0 {
        done.push("changed");
    }
    if done.is_empty() {
        path.to_owned()
    } else {
        format!("{path} ({})", done.join(", "))
    }
}

/// `text` cut to `max` characters, the cut marked with `…`.
fn cut_marked(text: &str, max: usize) -> Cow<'_, str> {
    if max == 0 {
        return Cow::Borrowed("");
    }
    match text.char_indices().nth(max - 1) {
        Some((at, _)) if text[at..].chars().nth(1).is_some() => Cow::Owned(format!("{}…", &text[..at])),
        _ => Cow::Borrowed(text),
    }
}
