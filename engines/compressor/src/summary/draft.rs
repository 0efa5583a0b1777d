//! The draft of a summary: candidate lines with a priority, chosen within a character budget,
//! then written out in the template's order.

use std::{
    borrow::Cow,
    cmp::Reverse,
    collections::{HashMap, HashSet},
};

use super::sections::{
    Section, ANSWERED_QUESTION, LATEST_ANSWERED, NONE_ITEM, PRINTED_BY, TEMPLATE_HEADINGS,
};
use crate::scan::{FastHash, FastMap};

/// Sub-lists of a section: the files of Relevant Files by what was done to them, the kinds of
/// Critical Context. Identifiers are listed compactly, comma-separated, one list per kind: a
/// reference list keeps far more of them in the same room than sentences that repeat them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Group {
    None,
    FilesChanged,
    FilesRead,
    FilesSearched,
    FilesMentioned,
    Errors,
    /// Error lines of failures a later run of the same call fixed.
    FixedErrors,
    /// Lines of files read that say `error`: source code (`catch (error) {`) as often as a log.
    FileErrorLines,
    Commands,
    /// Commands named only in the assistant's words (proposed, or told the user to run), which no
    /// call of the part summarised ran: listed as commands run, a refused `terraform force-unlock`
    /// read as done (verify33).
    CommandsMentioned,
    Urls,
    Routes,
    Hashes,
    /// Ids made of hex parts or keyed (a task's UUID, a pod's `checkout-api-7d9f8c6b5-b6589`, a
    /// log's `req_id=41649f767c45`): hashes of no commit or content, which a model told a list of
    /// hashes would read as commits (verify45, verify47).
    Ids,
    Issues,
    Versions,
    /// Hashes, issues and versions together, as summaries before these kinds were split wrote them.
    Identifiers,
    Names,
}

impl Group {
    pub(super) fn label(self) -> &'static str {
        match self {
            Group::None => "",
            Group::FilesChanged => "Changed:",
            Group::FilesRead => "Read:",
            Group::FilesSearched => "Searched:",
            Group::FilesMentioned => "Mentioned:",
            Group::Errors => "Errors:",
            Group::FixedErrors => "Errors fixed since:",
            Group::FileErrorLines => "Lines of files read that mention errors:",
            Group::Commands => "Commands:",
            Group::CommandsMentioned => "Commands mentioned:",
            Group::Urls => "URLs:",
            Group::Routes => "Routes:",
            Group::Hashes => "Hashes:",
            Group::Ids => "Ids:",
            Group::Issues => "Issues:",
            Group::Versions => "Versions:",
            Group::Identifiers => "Identifiers:",
            Group::Names => "Names:",
        }
    }

    /// Every labelled group, for reading an earlier summary back.
    pub(super) const LABELLED: [Group; 17] = [
        Group::FilesChanged,
        Group::FilesRead,
        Group::FilesSearched,
        Group::FilesMentioned,
        Group::Errors,
        Group::FixedErrors,
        Group::FileErrorLines,
        Group::Commands,
        Group::CommandsMentioned,
        Group::Urls,
        Group::Routes,
        Group::Hashes,
        Group::Ids,
        Group::Issues,
        Group::Versions,
        Group::Identifiers,
        Group::Names,
    ];

    pub(super) fn inline(self) -> bool {
        !matches!(
            self,
            Group::None
                | Group::Errors
                | Group::FixedErrors
                | Group::FileErrorLines
                | Group::Commands
                | Group::CommandsMentioned
        )
    }

    /// Commands, run or only mentioned: each in backticks on its own line.
    pub(super) fn is_commands(self) -> bool {
        matches!(self, Group::Commands | Group::CommandsMentioned)
    }

    /// Characters an item costs beyond its text.
    fn overhead(self) -> usize {
        match self {
            Group::None => 3,                                                // "- " and a newline
            Group::Errors | Group::FixedErrors | Group::FileErrorLines => 5, // "  - " and a newline
            Group::Commands | Group::CommandsMentioned => 7,                 // "  - `" "`" and a newline
            Group::Names => 4,                                               // ", `" "`"
            _ => 2,                                                          // ", "
        }
    }
}

pub(super) struct Candidate<'t> {
    pub(super) section: Section,
    pub(super) group: Group,
    pub(super) tier: u8,
    /// Larger is newer; items of an earlier summary are 0.
    pub(super) recency: usize,
    /// Order within its section: ascending.
    pub(super) display: i64,
    pub(super) text: Cow<'t, str>,
    /// The fact this item lists; skipped when a chosen line already quotes it.
    pub(super) fact: Option<usize>,
    /// Facts this line quotes verbatim.
    pub(super) covers: Vec<usize>,
    /// Always kept, cut to fit.
    pub(super) always: bool,
    /// A fact the summary keeps verbatim (an identifier, an error line, a command, a request):
    /// it may use the room beyond the prose's budget.
    pub(super) keeps_fact: bool,
    /// A line of prose that may use that room too: what blocks the work, what it achieved.
    pub(super) beyond_prose: bool,
    pub(super) focus: bool,
    /// The candidate this line belongs after and is shown only with (an answer's request, ranked
    /// at or above it): an answer alone reads as nobody's (verify22: lcm's condensed summary led
    /// with `Its answer: After. json.loads(raw) runs…` once its question gave way).
    pub(super) after: Option<usize>,
    /// A shorter line saying the same, taken when this one does not fit: a change's line without
    /// what it wrote.
    pub(super) shorter: Option<Cow<'t, str>>,
    /// The command whose output printed this error line: listed under it (`` - `make ci`
    /// printed:``), so that a later summary can tell every line of a run that passed since from
    /// the lines of runs still failing. Only a standing error line of a command's output has one.
    pub(super) under: Option<Cow<'t, str>>,
}

/// Characters a sub-list's heading adds beyond its command: ``  - `` ``, the backticks,
/// [`PRINTED_BY`] and a newline.
const SUB_LIST_OVERHEAD: usize = 4 + 2 + PRINTED_BY.len() + 1;

pub(super) struct Draft<'t> {
    pub(super) candidates: Vec<Candidate<'t>>,
    pub(super) fact_count: usize,
    pub(super) focus_words: Vec<String>,
    /// Keys of the actions that succeeded: a failure with the same key is resolved.
    pub(super) resolved: HashSet<String>,
    /// The commands of the new middle's successes, by key: one that chose another part of a
    /// suite resolves no failure of the same key.
    pub(super) passed_commands: HashMap<String, Vec<String>>,
    /// For each fact listed on its own line, its candidate.
    pub(super) fact_candidates: FastMap<usize, usize>,
    /// Decision records a later record with the same number replaced, in the middle or carried.
    pub(super) replaced_records: usize,
}

/// Shortest cut of an item that must be kept.
const MIN_ALWAYS_CHARS: usize = 80;
impl<'t> Draft<'t> {
    /// A draft for `fact_count` facts, with room for `lines` candidates: the list is large (a line
    /// for each fact), and growing it copied it into fresh memory at every doubling.
    pub(super) fn new(fact_count: usize, lines: usize, focus_words: Vec<String>) -> Self {
        Self {
            candidates: Vec::with_capacity(lines),
            fact_count,
            focus_words,
            resolved: HashSet::new(),
            passed_commands: HashMap::new(),
            fact_candidates: FastMap::with_capacity_and_hasher(fact_count, FastHash),
            replaced_records: 0,
        }
    }

    pub(super) fn push(
        &mut self,
        section: Section,
        tier: u8,
        recency: usize,
        text: Cow<'t, str>,
    ) -> &mut Candidate<'t> {
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
            keeps_fact: false,
            beyond_prose: false,
            focus: false,
            after: None,
            shorter: None,
            under: None,
        });
        self.candidates.last_mut().expect("just pushed")
    }

    /// Chooses within `max_chars` (everything) and then `fact_chars` (facts only), and writes the
    /// summary out.
    pub(super) fn render(mut self, max_chars: usize, fact_chars: usize) -> String {
        let fixed: usize = TEMPLATE_HEADINGS
            .iter()
            .map(|heading| heading.len() + 2)
            .sum::<usize>()
            + Section::ALL.len() * (NONE_ITEM.len() + 3);
        let budget = max_chars.saturating_sub(fixed);
        let fact_budget = fact_chars.saturating_sub(fixed).max(budget);
        for candidate in &mut self.candidates {
            candidate.focus |= !self.focus_words.is_empty() && {
                let lower = candidate.text.to_lowercase();
                self.focus_words.iter().any(|word| lower.contains(word.as_str()))
            };
        }
        // Ties (lines of an earlier summary all have recency 0) go to the later line, which is the
        // newer one: a short budget drops the oldest carried detail first. The position breaks
        // the remaining ties, as a stable sort would, so an unstable sort of whole keys gives the
        // same order without reading the candidates at every comparison.
        let order = follow_their_lines(&self.candidates, selection_order(&self.candidates));
        let mut chosen = Selection {
            picked: vec![false; self.candidates.len()],
            covered: vec![false; self.fact_count],
            groups: Vec::new(),
            sub_lists: Vec::new(),
            used: 0,
            followers: followers(&self.candidates),
            shortened: Vec::new(),
        };
        for &at in &order {
            if self.candidates[at].always {
                let candidate = &mut self.candidates[at];
                let room = budget.saturating_sub(chosen.used).max(MIN_ALWAYS_CHARS);
                if candidate.text.chars().count() + 3 > room {
                    candidate.text = Cow::Owned(cut_marked(&candidate.text, room - 3).into_owned());
                }
                chosen.take(&self.candidates, at, usize::MAX);
            }
        }
        // The first and the latest request are always kept: said to be answered, each has its
        // answer taken next, or it stands without what answered it (verify25: `Latest request
        // (answered): could the regression be the colspan merge (#941)?` with no answer, which
        // the next fold carried as an answered question without one).
        for &at in &order {
            let candidate = &self.candidates[at];
            if candidate.always
                && (candidate.text.starts_with(ANSWERED_QUESTION)
                    || candidate.text.starts_with(LATEST_ANSWERED))
            {
                if let Some(answer) = chosen.followers[at] {
                    chosen.take(&self.candidates, answer, fact_budget);
                }
            }
        }
        if !self.focus_words.is_empty() {
            let focus_budget = budget * 2 / 3;
            for &at in &order {
                if self.candidates[at].focus {
                    chosen.take(&self.candidates, at, focus_budget);
                }
            }
        }
        // Facts take at most half of the prose's budget first, then what the prose leaves: the
        // newest results' identifiers rank with the actions that produced them, and taking them
        // first left Progress empty (and lcm's summaries, which have no room beyond the prose's,
        // without the commands an incident's rollback ran).
        let facts_first = budget / 2;
        let mut facts_used = 0;
        for &at in &order {
            let candidate = &self.candidates[at];
            let fact = candidate.keeps_fact && !candidate.always;
            if fact && facts_used >= facts_first {
                continue;
            }
            let before = chosen.used;
            chosen.take(&self.candidates, at, budget);
            if fact {
                facts_used += chosen.used - before;
            }
            if budget.saturating_sub(chosen.used) < 8 {
                break;
            }
        }
        // What the prose left, to the facts that say something new: a log's lines of one shape,
        // beyond the newest three, fill only the facts' own room.
        for &at in &order {
            let candidate = &self.candidates[at];
            if candidate.tier < super::extractive::REPEATED_TIER {
                chosen.take(&self.candidates, at, budget);
            }
            if budget.saturating_sub(chosen.used) < 8 {
                break;
            }
        }
        // The room the engine took from the tail is the facts', and what blocks the work and what
        // it achieved: a session's listings of parquet parts outranked them when only identifiers
        // could use it (verify18: `Blocked: (none)` and no `Result:` beside 4,000 characters of
        // part names).
        if fact_budget > budget {
            for &at in &order {
                let candidate = &self.candidates[at];
                if candidate.keeps_fact || candidate.beyond_prose {
                    chosen.take(&self.candidates, at, fact_budget);
                    if fact_budget.saturating_sub(chosen.used) < 8 {
                        break;
                    }
                }
            }
        }
        if tracing::enabled!(tracing::Level::DEBUG) {
            log_choice(&self.candidates, &chosen, fact_budget);
        }
        // A line shown after another reads right after it, wherever its own place would be: a
        // carried first request reads last in Goal, and its answer, above it, read as the answer
        // to the line before (verify25).
        for at in 0..self.candidates.len() {
            if let Some(before) = self.candidates[at].after {
                if self.candidates[before].section == self.candidates[at].section {
                    self.candidates[at].display = self.candidates[before].display;
                }
            }
        }
        for &at in &chosen.shortened {
            if let Some(shorter) = self.candidates[at].shorter.take() {
                self.candidates[at].text = shorter;
            }
        }
        render_sections(&self.candidates, &chosen.picked)
    }
}

/// `order` with each line that belongs after another ([`Candidate::after`]) and would be offered
/// before it moved to just after it: offered first, it was skipped for want of its question, and
/// an answer carried at its question's tier was lost in every replay (verify23).
fn follow_their_lines(candidates: &[Candidate<'_>], order: Vec<usize>) -> Vec<usize> {
    if candidates.iter().all(|candidate| candidate.after.is_none()) {
        return order;
    }
    let mut offered = vec![false; candidates.len()];
    let mut waiting: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    let mut moved = Vec::with_capacity(order.len());
    for at in order {
        match candidates[at].after {
            Some(before) if !offered[before] => waiting.entry(before).or_default().push(at),
            _ => {
                let mut next = vec![at];
                while let Some(at) = next.pop() {
                    offered[at] = true;
                    moved.push(at);
                    if let Some(followers) = waiting.remove(&at) {
                        next.extend(followers.into_iter().rev());
                    }
                }
            }
        }
    }
    // A line whose own line is never offered (none, barring a bug) is offered last.
    moved.extend(waiting.into_values().flatten());
    moved
}

/// The candidates' positions in the order they are offered to the selection: by tier, then newest
/// first (recency, then display order, descending), then by position.
///
/// Each key is packed into one `u128` whose order is the order of the tuple
/// `(tier, Reverse(recency), Reverse(display), at)`: sorting the numbers took half the time of
/// sorting the tuples. Recencies past 32 bits or positions past 24 bits (never met: they are
/// message and line counts) sort the tuples instead.
fn selection_order(candidates: &[Candidate<'_>]) -> Vec<usize> {
    let fits = candidates.len() < 1 << 24
        && candidates
            .iter()
            .all(|candidate| u32::try_from(candidate.recency).is_ok());
    if !fits {
        let mut keyed: Vec<(u8, Reverse<usize>, Reverse<i64>, usize)> = candidates
            .iter()
            .enumerate()
            .map(|(at, candidate)| {
                (
                    candidate.tier,
                    Reverse(candidate.recency),
                    Reverse(candidate.display),
                    at,
                )
            })
            .collect();
        keyed.sort_unstable();
        return keyed.into_iter().map(|(.., at)| at).collect();
    }
    let mut keys: Vec<u128> = candidates
        .iter()
        .enumerate()
        .map(|(at, candidate)| pack_key(candidate.tier, candidate.recency, candidate.display, at))
        .collect();
    keys.sort_unstable();
    keys.into_iter()
        .map(|key| (key & ((1 << 24) - 1)) as usize)
        .collect()
}

/// `(tier, Reverse(recency), Reverse(display), at)` as one number of the same order, for a recency
/// of at most 32 bits and a position of at most 24.
fn pack_key(tier: u8, recency: usize, display: i64, at: usize) -> u128 {
    // Display order as an unsigned number of the same order, then reversed.
    let display = !((display as u64) ^ (1 << 63));
    let recency = u32::MAX - recency as u32;
    u128::from(tier) << 120 | u128::from(recency) << 88 | u128::from(display) << 24 | at as u128
}

/// What the summary kept of the middle's facts and of the earlier summary's items (`-vv`): the
/// figures that tell whether reading less of a middle could leave what the summary keeps as it is
/// (only when some of the middle's facts are dropped while none of the earlier summary's items
/// that rank below them is kept).
fn log_choice(candidates: &[Candidate<'_>], chosen: &Selection, fact_budget: usize) {
    let (mut facts, mut facts_kept, mut oldest_kept, mut newest) = (0, 0, usize::MAX, 0);
    let (mut carried, mut carried_kept, mut carried_chars) = (0, 0, 0);
    for (candidate, &picked) in candidates.iter().zip(&chosen.picked) {
        match candidate.fact {
            Some(fact) if candidate.keeps_fact => {
                facts += 1;
                newest = newest.max(candidate.recency);
                if picked || chosen.covered[fact] {
                    facts_kept += 1;
                    oldest_kept = oldest_kept.min(candidate.recency);
                }
            }
            None if candidate.recency == 0 && !candidate.always => {
                carried += 1;
                if picked {
                    carried_kept += 1;
                    carried_chars += candidate.text.chars().count();
                }
            }
            _ => {}
        }
    }
    tracing::debug!(
        "summary: {facts_kept}/{facts} facts of the middle kept, the oldest kept from message {} of {newest}; \
         {carried_kept}/{carried} items of the earlier summary kept ({carried_chars} chars); {} of {fact_budget} chars used",
        oldest_kept.min(newest),
        chosen.used
    );
}

struct Selection {
    picked: Vec<bool>,
    covered: Vec<bool>,
    groups: Vec<(Section, Group)>,
    /// The commands whose sub-list of error lines is open ([`Candidate::under`]).
    sub_lists: Vec<String>,
    used: usize,
    /// For each candidate, the line shown only after it ([`Candidate::after`]), if any.
    followers: Vec<Option<usize>>,
    /// The candidates taken in their shorter form ([`Candidate::shorter`]).
    shortened: Vec<usize>,
}

/// For each candidate, the first line that belongs after it.
fn followers(candidates: &[Candidate<'_>]) -> Vec<Option<usize>> {
    let mut followers = vec![None; candidates.len()];
    for (at, candidate) in candidates.iter().enumerate() {
        if let Some(before) = candidate.after {
            followers[before].get_or_insert(at);
        }
    }
    followers
}

impl Selection {
    /// Takes candidate `at` when it fits in `budget` and lists nothing already quoted. A line
    /// with a follower (an earlier question with its answer) is taken with it or not at all:
    /// `Answered question: which Node version does CI use?` kept without its answer told the
    /// model it was answered, and nothing of what the answer was (verify25).
    fn take(&mut self, candidates: &[Candidate<'_>], at: usize, budget: usize) {
        let candidate = &candidates[at];
        // A changed file is listed as changed though another line quotes its path: an error line
        // naming it (`gateway/ratelimit.py:52: error`) or a command reading it took the file out
        // of `Changed:`, the one file a reader needed there (verify37).
        let gives_way_to_quotes = candidate.group != Group::FilesChanged;
        if self.picked[at]
            || candidate
                .fact
                .is_some_and(|fact| self.covered[fact] && gives_way_to_quotes)
            || candidate.after.is_some_and(|before| !self.picked[before])
        {
            return;
        }
        let cost = self.cost(candidate);
        let follower = self.followers[at]
            .filter(|_| !candidate.always)
            .filter(|&follower| !self.picked[follower]);
        let follower_cost = follower.map_or(0, |follower| self.cost(&candidates[follower]));
        if self.used + cost + follower_cost > budget {
            // Said shorter, it may fit: a change's line that grew by what it wrote gave way where
            // its bare `changed …` had fitted (verify32).
            if let Some(shorter) = candidate.shorter.as_ref().filter(|_| follower.is_none()) {
                let cost = cost - candidate.text.chars().count() + shorter.chars().count();
                if self.used + cost <= budget {
                    self.pick(candidate, at, cost);
                    self.shortened.push(at);
                }
            }
            return;
        }
        self.pick(candidate, at, cost);
        if let Some(follower) = follower {
            self.pick(&candidates[follower], follower, follower_cost);
        }
    }

    /// What `candidate` adds to the summary: its text, and its group's label when it opens the
    /// group.
    fn cost(&self, candidate: &Candidate<'_>) -> usize {
        let mut cost = candidate.text.chars().count() + candidate.group.overhead();
        let key = (candidate.section, candidate.group);
        if candidate.group != Group::None && !self.groups.contains(&key) {
            cost += candidate.group.label().len() + 3;
        }
        if let Some(command) = &candidate.under {
            // Indented two more, and the sub-list's heading when this line opens it.
            cost += 2;
            if !self.sub_lists.iter().any(|open| open == command) {
                cost += command.chars().count() + SUB_LIST_OVERHEAD;
            }
        }
        cost
    }

    fn pick(&mut self, candidate: &Candidate<'_>, at: usize, cost: usize) {
        self.used += cost;
        self.picked[at] = true;
        let key = (candidate.section, candidate.group);
        if !self.groups.contains(&key) {
            self.groups.push(key);
        }
        if let Some(command) = &candidate.under {
            if !self.sub_lists.iter().any(|open| open == command) {
                self.sub_lists.push(command.to_string());
            }
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
    // The chosen lines by section, in one pass; written straight into the summary (a string per
    // item, then joined, cost as much as choosing them).
    let mut by_section: [Vec<&Candidate<'_>>; Section::ALL.len()] = Default::default();
    let mut length = 0;
    for (candidate, _) in candidates.iter().zip(picked).filter(|(_, picked)| **picked) {
        by_section[candidate.section.index()].push(candidate);
        length += candidate.text.len() + 8;
    }
    let mut out = String::with_capacity(length + 512);
    for (section, items) in Section::ALL.into_iter().zip(&mut by_section) {
        if section == Section::Done {
            out.push_str("## Progress\n");
        }
        out.push_str(section.heading());
        out.push('\n');
        items.sort_by_key(|candidate| (candidate.group, candidate.display));
        if items.is_empty() {
            out.push_str("- ");
            out.push_str(NONE_ITEM);
            out.push('\n');
        }
        for members in items.chunk_by(|a, b| a.group == b.group) {
            let group = members[0].group;
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
                    out.push_str("- ");
                    out.push_str(group.label());
                    out.push(' ');
                    for (at, item) in members.iter().enumerate() {
                        if at > 0 {
                            out.push_str(", ");
                        }
                        out.push_str(quote);
                        out.push_str(&item.text);
                        out.push_str(quote);
                    }
                    out.push('\n');
                }
                _ => {
                    out.push_str("- ");
                    out.push_str(group.label());
                    out.push('\n');
                    let quote = if group.is_commands() { "`" } else { "" };
                    for item in members.iter().filter(|item| item.under.is_none()) {
                        out.push_str("  - ");
                        out.push_str(quote);
                        out.push_str(&item.text);
                        out.push_str(quote);
                        out.push('\n');
                    }
                    write_sub_lists(&mut out, members);
                }
            }
        }
        if !matches!(section, Section::Done | Section::InProgress) {
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// The lines of `members` listed under the command that printed them, each command once, in the
/// order of its first line.
fn write_sub_lists(out: &mut String, members: &[&Candidate<'_>]) {
    let mut commands: Vec<&str> = Vec::new();
    for command in members.iter().filter_map(|item| item.under.as_deref()) {
        if !commands.contains(&command) {
            commands.push(command);
        }
    }
    for command in commands {
        out.push_str("  - `");
        out.push_str(command);
        out.push('`');
        out.push_str(PRINTED_BY);
        out.push('\n');
        for item in members
            .iter()
            .filter(|item| item.under.as_deref() == Some(command))
        {
            out.push_str("    - ");
            out.push_str(&item.text);
            out.push('\n');
        }
    }
}

/// `text` cut to at most `max` characters, at a word's end when one is within [`WORD_SLACK`]
/// bytes, the cut marked with `…`.
pub(super) fn cut_marked(text: &str, max: usize) -> Cow<'_, str> {
    if max == 0 {
        return Cow::Borrowed("");
    }
    match text.char_indices().nth(max - 1) {
        Some((at, _)) if text[at..].chars().nth(1).is_some() => {
            // At a word's end when one is near: `fmt:…` read as a name cut in two.
            let kept = &text[..at];
            let word_end = kept
                .rfind(char::is_whitespace)
                .filter(|&space| kept.len() - space <= WORD_SLACK)
                .map(|space| kept[..space].trim_end())
                .filter(|words| !words.is_empty())
                .unwrap_or(kept);
            Cow::Owned(format!("{word_end}…"))
        }
        _ => Cow::Borrowed(text),
    }
}

/// How far [`cut_marked`] backs up to a word's end, in bytes.
const WORD_SLACK: usize = 24;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::property::Rng;

    /// A cut ends at a word's end when one is near, never at nothing.
    #[test]
    fn a_cut_ends_at_a_word_and_keeps_something() {
        assert_eq!(
            cut_marked("fix: link geoserve to fmt::fmt explicitly", 30),
            "fix: link geoserve to…"
        );
        assert_eq!(cut_marked(" abcdefghijklmnop", 10), " abcdefgh…");
        assert_eq!(
            cut_marked("https://example.org/a/very/long/path", 12),
            "https://exa…"
        );
        assert_eq!(cut_marked("short", 12), "short");
    }

    /// Property: packed keys sort as the tuples they stand for, on small and extreme recencies
    /// and display orders (an earlier summary's lines sit a billion either side, a focus line at
    /// `i64::MIN`).
    #[test]
    fn packed_keys_sort_as_their_tuples() {
        let mut rng = Rng::new(5);
        let displays = [i64::MIN, i64::MAX, -1_000_000_000, 1_000_000_000, -1, 0, 1];
        for round in 0..300 {
            let count = 1 + rng.below(200);
            let tuples: Vec<(u8, Reverse<usize>, Reverse<i64>, usize)> = (0..count)
                .map(|at| {
                    let recency = match rng.below(4) {
                        0 => 0,
                        1 => u32::MAX as usize - rng.below(3),
                        _ => rng.below(50),
                    };
                    let display = match rng.below(3) {
                        0 => displays[rng.below(displays.len())],
                        1 => displays[rng.below(displays.len())].saturating_add(rng.below(100) as i64 - 50),
                        _ => rng.below(100) as i64 - 50,
                    };
                    (rng.below(6) as u8, Reverse(recency), Reverse(display), at)
                })
                .collect();
            let mut expected = tuples.clone();
            expected.sort_unstable();
            let mut keys: Vec<u128> = tuples
                .iter()
                .map(|&(tier, Reverse(recency), Reverse(display), at)| pack_key(tier, recency, display, at))
                .collect();
            keys.sort_unstable();
            let got: Vec<usize> = keys.iter().map(|key| (key & ((1 << 24) - 1)) as usize).collect();
            let expected: Vec<usize> = expected.into_iter().map(|(.., at)| at).collect();
            assert_eq!(got, expected, "round {round}");
        }
    }

    /// A question is kept with its answer or not at all, though its answer ranks below lines that
    /// would fit in its place (verify25: `Answered question: which Node version does CI use?`
    /// with no answer, while a log's paths filled the room).
    #[test]
    fn a_question_is_never_kept_without_its_answer() {
        let draft = || {
            let mut draft = Draft::new(0, 8, Vec::new());
            draft.push(
                Section::Goal,
                1,
                5,
                Cow::Borrowed("Answered question: which Node version does CI use?"),
            );
            let answer = draft.push(
                Section::Goal,
                2,
                5,
                Cow::Borrowed(
                    "Its answer: 20.11.1 for the build (web/.nvmrc); the e2e job pins 18.19.0 until the Playwright upgrade lands.",
                ),
            );
            answer.after = Some(0);
            for (at, path) in ["/api/v1/invoices/1", "/api/v1/invoices/2", "/api/v1/invoices/3"]
                .into_iter()
                .enumerate()
            {
                draft.push(Section::Files, 1, 4 - at, Cow::Borrowed(path));
            }
            draft
        };
        let mut both = 0;
        for budget in 150..700 {
            let rendered = draft().render(budget, budget);
            let asked = rendered.contains("- Answered question: which Node version");
            let answered = rendered.contains("- Its answer: 20.11.1");
            assert_eq!(asked, answered, "budget {budget}: {rendered}");
            both += usize::from(asked);
        }
        assert!(both > 0);
    }

    /// The latest request, always kept, said to be answered, keeps its answer before newer lines
    /// of the answer's rank fill the room (verify25).
    #[test]
    fn the_latest_answered_request_keeps_its_answer() {
        let draft = || {
            let mut draft = Draft::new(0, 12, Vec::new());
            let request = draft.push(
                Section::Goal,
                0,
                3,
                Cow::Borrowed("Latest request (answered): could it be the colspan merge (#941)?"),
            );
            request.always = true;
            let answer = draft.push(
                Section::Goal,
                1,
                4,
                Cow::Borrowed("Its answer: no, #941 is ruled out: an older commit already measured bad."),
            );
            answer.after = Some(0);
            for n in 0..8 {
                draft.push(
                    Section::Done,
                    1,
                    10 + n,
                    Cow::Owned(format!(
                        "[shell] ran `scripts/bench_gate.sh 1.30; git bisect good` step {n}"
                    )),
                );
            }
            draft
        };
        for budget in 400..900 {
            let rendered = draft().render(budget, budget);
            assert!(
                rendered.contains("- Its answer: no, #941 is ruled out"),
                "budget {budget}: {rendered}"
            );
        }
    }

    /// A carried answer at its question's tier, later in display and so offered first, is
    /// offered right after its question instead (verify23: answers carried were lost in replays).
    #[test]
    fn an_answer_is_offered_right_after_its_question() {
        let draft = || {
            let mut draft = Draft::new(0, 4, Vec::new());
            draft
                .push(Section::Goal, 2, 0, Cow::Borrowed("first request, carried"))
                .display = 10;
            draft
                .push(
                    Section::Goal,
                    2,
                    0,
                    Cow::Borrowed("Answered question: which Python?"),
                )
                .display = 20;
            let answer = draft.push(Section::Goal, 2, 0, Cow::Borrowed("Its answer: 3.11.9"));
            answer.display = 21;
            answer.after = Some(1);
            draft.push(
                Section::Done,
                2,
                0,
                Cow::Borrowed("[terminal] ran `mkdocs build` -> exit 0"),
            );
            draft
        };
        let candidates = draft().candidates;
        let order = follow_their_lines(&candidates, selection_order(&candidates));
        let question = order.iter().position(|&at| at == 1).unwrap();
        assert_eq!(order[question + 1], 2, "{order:?}");
        assert_eq!(order.len(), 4);
        // The answer is shorter than any line offered after it: whenever its question is kept
        // and it is not, nothing after it fitted either. Offered before its question, it gave
        // way to the first request. It is never kept alone.
        for budget in 150..450 {
            let rendered = draft().render(budget, budget);
            let asked = rendered.contains("- Answered question: which Python?");
            let answered = rendered.contains("- Its answer: 3.11.9");
            let later = rendered.contains("- first request") || rendered.contains("mkdocs build");
            assert!(asked || !answered, "budget {budget}: {rendered}");
            assert!(!asked || answered || !later, "budget {budget}: {rendered}");
        }
    }
}
