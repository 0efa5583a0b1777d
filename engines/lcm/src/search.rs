//! `lcm_grep`: regular expressions and full-text search over the store, newest first.
//!
//! - Full text: whatever the person typed, each word quoted for FTS5 (hyphens, digits, quotes and
//!   operators are then plain text), all words required, in the contentless `messages_fts` index.
//! - Regex: compiled by the `regex` crate (linear time, with size limits). The literals every
//!   match must contain are extracted from the pattern; the whole words among them become an
//!   FTS5 query that narrows the candidates, which the regex then checks. A pattern without such
//!   a word is checked against every message, newest first, stopping at the limit.
//! - Stored messages are read newest first for a time budget ([`crate::walk`]); a search that
//!   runs out of time answers what it found and how far it got.

use std::time::{Duration, Instant};

use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{
    literal::{ExtractKind, Extractor},
    Class, Hir, HirKind,
};
use rusqlite::{params, types::Type, Connection, Row};
use serde_json::{json, Value};

use crate::{
    raw_filter::RawFilter,
    store::{self, StoreResult},
    stored_text, text,
    walk::{self, Candidates, Reached},
};

/// How long one `lcm_grep` call searches stored messages, by default (`lcm.grep_budget_ms`):
/// with the answer built after it, under the 100 ms a search of a million messages is held to.
pub const GREP_BUDGET_MS: u64 = 60;

/// The largest compiled regex, in bytes.
pub(crate) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Characters of a snippet.
const SNIPPET_CHARS: usize = 200;

/// How `pattern` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A regular expression.
    Regex,
    /// Words, all required, matched as whole words (case-insensitive).
    FullText,
}

/// What is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Stored messages.
    Messages,
    /// Summaries.
    Summaries,
    /// Both.
    Both,
}

/// A search.
#[derive(Clone, Debug)]
pub struct Query {
    /// The pattern as given.
    pub pattern: String,
    /// How to read it.
    pub mode: Mode,
    /// Where to look.
    pub scope: Scope,
    /// At most this many matches.
    pub limit: usize,
    /// Only what was written at or after (unix ms; a message's time, [`crate::time::message_time`]).
    pub since: Option<i64>,
    /// Only what was written before (unix ms).
    pub before: Option<i64>,
    /// Only this session (`None`: every session).
    pub session: Option<i64>,
    /// Only messages with a smaller id (continuing a search that ran out of time).
    pub before_id: Option<i64>,
    /// No message, and only summaries with a smaller number: continuing a search that searched
    /// every message and ran out of time among the summaries.
    pub before_summary: Option<i64>,
    /// How long to search stored messages before answering with what was found.
    pub budget: Duration,
}

/// One match.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// `msg_<n>` or `sum_…`.
    pub id: String,
    /// The message's role, or `summary`.
    pub role: String,
    /// When it was stored (unix ms).
    pub time: i64,
    /// Around the match.
    pub snippet: String,
}

/// A compiled regex, or the one-line reason it is not one.
pub fn compile_regex(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(4 * REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| {
            let text = error.to_string();
            let last = text
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("");
            format!(
                "invalid regex `{pattern}`: {}",
                last.trim().trim_start_matches("error: ")
            )
        })
}

/// `text` as an FTS5 query that matches it as plain words: each whitespace-separated piece a
/// quoted string (quotes doubled), all required. `None` when there is no word at all.
pub fn quote_full_text(text: &str) -> Option<String> {
    let pieces: Vec<String> = text
        .split_whitespace()
        .filter(|piece| piece.chars().any(char::is_alphanumeric))
        .map(|piece| format!("\"{}\"", piece.replace('"', "\"\"")))
        .collect();
    (!pieces.is_empty()).then(|| pieces.join(" "))
}

/// How a regex search narrows its candidates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prefilter {
    /// Every message is a candidate (checked newest first, up to the limit).
    Scan,
    /// Only the messages this FTS5 query matches can match.
    Fts(String),
    /// No stored text can match (a required literal holds a word the store never saw).
    Nothing,
}

/// At most this many stored words may contain a literal for the prefilter to use them.
const MAX_CONTAINING_TERMS: usize = 256;

/// An FTS5 query every text matching `pattern` also matches, derived from the literals each match
/// must contain. In a literal, a run of ASCII letters and digits bounded on both sides is a whole
/// word; bounded on the left only, the start of a word (`"run"*`); otherwise part of a word, and
/// `containing(run)` lists the stored words holding it (`None`: too many to help).
pub fn regex_prefilter(pattern: &str, vocabulary: &mut dyn Vocabulary) -> Prefilter {
    let Ok(hir) = regex_syntax::ParserBuilder::new().build().parse(pattern) else {
        return Prefilter::Scan;
    };
    let hir = fold_ascii_case(hir);
    let mut best = Prefilter::Scan;
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        let mut extractor = Extractor::new();
        extractor.kind(kind);
        let seq = extractor.extract(&hir);
        let Some(literals) = seq.literals().filter(|literals| !literals.is_empty()) else {
            continue;
        };
        let mut alternatives = Vec::new();
        let mut unconstrained = false;
        for literal in literals {
            match literal_query(literal.as_bytes(), vocabulary) {
                LiteralQuery::Impossible => {}
                LiteralQuery::Unconstrained => unconstrained = true,
                LiteralQuery::Words(words) => alternatives.push(words),
            }
        }
        if unconstrained {
            continue;
        }
        if alternatives.is_empty() {
            return Prefilter::Nothing;
        }
        alternatives.sort();
        alternatives.dedup();
        let query = alternatives
            .iter()
            .map(|words| format!("({words})"))
            .collect::<Vec<_>>()
            .join(" OR ");
        // The longer query names more words: the narrower.
        if !matches!(&best, Prefilter::Fts(b) if b.len() >= query.len()) {
            best = Prefilter::Fts(query);
        }
    }
    best
}

/// `hir` with each class of exactly an ASCII letter's two cases (what `(?i)` makes of a letter)
/// as the lowercase letter: the index ignores ASCII case, and the literals of `(?i)Error Rollback`
/// are then one word pair instead of 2^13 spellings, too many for the extractor to list.
/// Classes that also hold a non-ASCII character (`(?i)k` holds the Kelvin sign) stay classes.
fn fold_ascii_case(hir: Hir) -> Hir {
    let pair = |a: u32, b: u32, c: u32, d: u32| {
        (a == b && c == d)
            .then(|| char::from_u32(a).zip(char::from_u32(c)))
            .flatten()
            .filter(|(upper, lower)| upper.is_ascii_uppercase() && upper.to_ascii_lowercase() == *lower)
            .map(|(_, lower)| Hir::literal(lower.to_string().into_bytes()))
    };
    match hir.into_kind() {
        HirKind::Class(Class::Unicode(class)) => match class.ranges() {
            [a, b] => pair(a.start().into(), a.end().into(), b.start().into(), b.end().into()),
            _ => None,
        }
        .unwrap_or_else(|| Hir::class(Class::Unicode(class))),
        HirKind::Class(Class::Bytes(class)) => match class.ranges() {
            [a, b] => pair(a.start().into(), a.end().into(), b.start().into(), b.end().into()),
            _ => None,
        }
        .unwrap_or_else(|| Hir::class(Class::Bytes(class))),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(fold_ascii_case).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(fold_ascii_case).collect()),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(fold_ascii_case(*repetition.sub));
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(fold_ascii_case(*capture.sub));
            Hir::capture(capture)
        }
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => Hir::literal(literal.0),
        HirKind::Look(look) => Hir::look(look),
    }
}

/// The stored words, as the regex prefilter asks about them; `None`: too many to narrow anything.
pub trait Vocabulary {
    /// The words that start with `prefix`.
    fn starting(&mut self, prefix: &str) -> Option<Vec<String>>;
    /// The words that contain `part`.
    fn containing(&mut self, part: &str) -> Option<Vec<String>>;
}

/// The `terms` table.
struct StoredWords<'a>(&'a Connection);

impl Vocabulary for StoredWords<'_> {
    fn starting(&mut self, prefix: &str) -> Option<Vec<String>> {
        // Words are lowercased, and so is the prefix: a range over the primary key.
        let upper = format!("{prefix}{}", char::MAX);
        words_where(self.0, "term >= ?1 AND term < ?2", prefix, &upper)
    }

    fn containing(&mut self, part: &str) -> Option<Vec<String>> {
        words_where(self.0, "instr(term, ?1) > 0 AND ?2 IS NOT NULL", part, "")
    }
}

fn words_where(conn: &Connection, condition: &str, a: &str, b: &str) -> Option<Vec<String>> {
    let sql = format!("SELECT term FROM terms WHERE {condition} LIMIT ?3");
    let mut statement = conn.prepare_cached(&sql).ok()?;
    let rows = statement
        .query_map(params![a, b, MAX_CONTAINING_TERMS as i64 + 1], |row| row.get(0))
        .ok()?;
    let terms: Vec<String> = rows.collect::<Result<_, _>>().ok()?;
    (terms.len() <= MAX_CONTAINING_TERMS).then_some(terms)
}

enum LiteralQuery {
    Impossible,
    Unconstrained,
    Words(String),
}

/// What one run of ASCII letters and digits of a literal allows of the word holding it.
enum Slot {
    /// The word is one of these.
    Words(Vec<String>),
    /// The word starts with this (too many stored words do to list them).
    Prefix(String),
    /// Anything: too many stored words hold the run to narrow anything.
    Any,
}

/// At most this many phrases stand for one chain of adjacent words (the alternatives of its
/// partial words multiplied); beyond it, the chain's words are required one by one.
const MAX_PHRASES: usize = 64;

/// The FTS5 query of the words `literal` guarantees: each word, and each run of words the literal
/// shows side by side (only ASCII separators between them) as a phrase. A phrase is what narrows
/// typed text made of common words: `error rollback` in a store where every message says
/// `error` and `rollback` somewhere, but only one says them together.
fn literal_query(literal: &[u8], vocabulary: &mut dyn Vocabulary) -> LiteralQuery {
    // Slots, each with whether it follows the previous one as the next word of the text.
    let mut slots: Vec<(Slot, bool)> = Vec::new();
    let mut previous_end = None;
    for run in text::ascii_word_ranges(literal) {
        let (start, end) = (run.start, run.end);
        // Bounded by an ASCII separator inside the literal: the run starts (ends) a word.
        let starts_word = start > 0 && literal[start - 1].is_ascii();
        let ends_word = end < literal.len() && literal[end].is_ascii();
        // Only ASCII separators since the last run, which ended a word: the next word.
        let follows = previous_end.is_some_and(|last: usize| literal[last..start].is_ascii()) && starts_word;
        previous_end = ends_word.then_some(end);
        let word = String::from_utf8_lossy(&literal[start..end]).to_ascii_lowercase();
        let slot = match (starts_word, ends_word) {
            (true, true) => Slot::Words(vec![word]),
            // A prefix query makes FTS5 merge every matching word's whole list before the first
            // row comes out; the words themselves, OR-ed, stream newest first.
            (true, false) => match vocabulary.starting(&word) {
                Some(terms) if terms.is_empty() => return LiteralQuery::Impossible,
                Some(terms) => Slot::Words(terms),
                None => Slot::Prefix(word),
            },
            _ => match vocabulary.containing(&word) {
                Some(terms) if terms.is_empty() => return LiteralQuery::Impossible,
                Some(terms) => Slot::Words(terms),
                None => Slot::Any,
            },
        };
        slots.push((slot, follows));
    }
    let mut clauses = Vec::new();
    let mut chain: Vec<&Slot> = Vec::new();
    for (slot, follows) in &slots {
        if !follows || matches!(slot, Slot::Any) {
            clauses.extend(chain_query(&chain));
            chain.clear();
        }
        if !matches!(slot, Slot::Any) {
            chain.push(slot);
        }
    }
    clauses.extend(chain_query(&chain));
    clauses.sort();
    clauses.dedup();
    if clauses.is_empty() {
        LiteralQuery::Unconstrained
    } else {
        LiteralQuery::Words(clauses.join(" AND "))
    }
}

/// The clauses for words that follow one another in the text: one phrase, or a few OR-ed when
/// some of the words are known only by part; the words one by one when those would be too many.
fn chain_query(chain: &[&Slot]) -> Vec<String> {
    let one_by_one = || {
        chain
            .iter()
            .map(|slot| match slot {
                Slot::Words(terms) if terms.len() == 1 => quoted(&terms[0]),
                Slot::Words(terms) => any_of(terms),
                Slot::Prefix(word) => format!("{}*", quoted(word)),
                Slot::Any => unreachable!("a chain holds no unconstrained word"),
            })
            .collect()
    };
    let phrase_count = chain.iter().try_fold(1usize, |count, slot| match slot {
        Slot::Words(terms) => count.checked_mul(terms.len()).filter(|&n| n <= MAX_PHRASES),
        _ => Some(count),
    });
    if chain.len() < 2 || phrase_count.is_none() {
        return one_by_one();
    }
    let mut phrases: Vec<String> = vec![String::new()];
    for slot in chain {
        let words: &[String] = match slot {
            Slot::Words(terms) => terms,
            Slot::Prefix(word) => std::slice::from_ref(word),
            Slot::Any => unreachable!("a chain holds no unconstrained word"),
        };
        phrases = phrases
            .iter()
            .flat_map(|phrase| {
                words.iter().map(move |word| {
                    if phrase.is_empty() {
                        word.clone()
                    } else {
                        format!("{phrase} {word}")
                    }
                })
            })
            .collect();
    }
    // Only the chain's last word can be known by its start alone (a word that does not end
    // inside the literal is followed by nothing): FTS5 takes `*` after a phrase for its last word.
    let star = if matches!(chain.last(), Some(Slot::Prefix(_))) {
        "*"
    } else {
        ""
    };
    let phrases: Vec<String> = phrases
        .iter()
        .map(|phrase| format!("{}{star}", quoted(phrase)))
        .collect();
    if phrases.len() == 1 {
        phrases
    } else {
        vec![format!("({})", phrases.join(" OR "))]
    }
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

fn any_of(terms: &[String]) -> String {
    let terms: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
    format!("({})", terms.join(" OR "))
}

/// What a search found, and how far it got.
#[derive(Clone, Debug)]
pub struct Found {
    /// Matches, newest first, at most the query's limit.
    pub hits: Vec<Hit>,
    /// Stored messages a regex was checked against.
    pub checked: u64,
    /// How far the search of stored messages got in its budget.
    pub reached: Reached,
    /// Where the search of summaries stopped when it ran out of time; `None` when it was not
    /// reached or finished.
    pub summaries_stopped: Option<SummariesStopped>,
}

/// The summaries a search had searched when its time ran out, newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummariesStopped {
    /// The newest summary searched.
    pub newest: String,
    /// The oldest summary searched: a later search continues below it.
    pub oldest: String,
    /// How many summaries were searched.
    pub searched: u64,
}

/// Runs `query` over the store: matches newest first, at most `query.limit`. Stored messages are
/// searched newest first for `query.budget`; summaries only once every message was searched, in
/// what is left of it.
///
/// The messages stored since the last search are indexed first ([`store::index_backlog`]).
pub fn grep(conn: &Connection, query: &Query) -> Result<Found, String> {
    let mut hits = Vec::new();
    let mut checked = 0u64;
    let mut reached = Reached::Everything;
    let mut summaries_stopped = None;
    let sql = |error: rusqlite::Error| format!("search failed: {error}");
    // A continued search that reached the summaries has searched every message already.
    let messages = query.scope != Scope::Summaries && query.before_summary.is_none();
    if messages {
        // Whole, and before the budget starts: an index missing the newest rows would leave
        // them out of the answer without saying so (a partial answer says what it searched).
        store::index_backlog(conn)
            .map_err(|error| format!("cannot index the messages stored since the last search: {error}"))?;
    }
    let started = Instant::now();
    let deadline = started.checked_add(query.budget);
    match query.mode {
        Mode::Regex => {
            let regex = compile_regex(&query.pattern)?;
            if messages {
                let prefilter = regex_prefilter(&query.pattern, &mut StoredWords(conn));
                let candidates = match &prefilter {
                    Prefilter::Scan => Some(Candidates::Every),
                    Prefilter::Fts(fts) => Some(Candidates::Matching(fts)),
                    Prefilter::Nothing => None,
                };
                if let Some(candidates) = candidates {
                    reached = grep_messages_regex(conn, query, &regex, candidates, &mut hits, &mut checked)
                        .map_err(sql)?;
                }
            }
            if query.scope != Scope::Messages && hits.len() < query.limit && reached == Reached::Everything {
                summaries_stopped =
                    grep_summaries(conn, query, Some(&regex), None, deadline, &mut hits).map_err(sql)?;
            }
        }
        Mode::FullText => {
            let fts = quote_full_text(&query.pattern)
                .ok_or_else(|| format!("`{}` holds no word to search for", query.pattern))?;
            let finder = first_word_finder(&query.pattern);
            if messages {
                reached = grep_messages_fts(conn, query, &fts, finder.as_ref(), &mut hits).map_err(sql)?;
            }
            if query.scope != Scope::Messages && hits.len() < query.limit && reached == Reached::Everything {
                summaries_stopped =
                    grep_summaries(conn, query, finder.as_ref(), Some(&fts), deadline, &mut hits)
                        .map_err(sql)?;
            }
        }
    }
    hits.truncate(query.limit);
    Ok(Found {
        hits,
        checked,
        reached,
        summaries_stopped,
    })
}

/// Finds the first word of a full-text pattern in a text, for the snippet.
fn first_word_finder(pattern: &str) -> Option<Regex> {
    let word: String = pattern
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())?
        .to_owned();
    RegexBuilder::new(&regex::escape(&word))
        .case_insensitive(true)
        .build()
        .ok()
}

fn hit_for(id: String, role: String, time: i64, text: &str, finder: Option<&Regex>) -> Hit {
    let (start, end) = finder
        .and_then(|regex| regex.find(text))
        .map_or((0, 0), |found| (found.start(), found.end()));
    Hit {
        id,
        role,
        time,
        snippet: text::snippet(text, start, end, SNIPPET_CHARS),
    }
}

/// The JSON of a row of [`walk::COLUMNS`].
fn row_json<'r>(row: &'r Row<'_>) -> rusqlite::Result<&'r [u8]> {
    row.get_ref(3)?
        .as_bytes()
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(3, Type::Text, Box::new(error)))
}

fn message_hit(row: &Row<'_>, text: &str, finder: Option<&Regex>) -> rusqlite::Result<Hit> {
    let id: i64 = row.get(0)?;
    Ok(hit_for(
        format!("msg_{id}"),
        row.get(1)?,
        row.get(2)?,
        text,
        finder,
    ))
}

fn grep_messages_regex(
    conn: &Connection,
    query: &Query,
    regex: &Regex,
    candidates: Candidates<'_>,
    hits: &mut Vec<Hit>,
    checked: &mut u64,
) -> rusqlite::Result<Reached> {
    let mut text = String::new();
    let raw = RawFilter::new(&query.pattern);
    walk::newest_first(conn, query, candidates, query.budget, &mut |row| {
        *checked += 1;
        let json = row_json(row)?;
        if raw.as_ref().is_some_and(|raw| raw.rules_out(json)) {
            return Ok(true);
        }
        stored_text::search_text_into(json, &mut text);
        if regex.is_match(&text) {
            hits.push(message_hit(row, &text, Some(regex))?);
        }
        Ok(hits.len() < query.limit)
    })
}

fn grep_messages_fts(
    conn: &Connection,
    query: &Query,
    fts: &str,
    finder: Option<&Regex>,
    hits: &mut Vec<Hit>,
) -> rusqlite::Result<Reached> {
    let mut text = String::new();
    walk::newest_first(conn, query, Candidates::Matching(fts), query.budget, &mut |row| {
        stored_text::search_text_into(row_json(row)?, &mut text);
        hits.push(message_hit(row, &text, finder)?);
        Ok(hits.len() < query.limit)
    })
}

/// Searches summaries newest first (below `query.before_summary`) until the limit, the last one,
/// or `deadline` (`None`: none). At least one summary is searched, so that a search continued
/// call after call ends; it stops for the deadline only while another one is waiting.
fn grep_summaries(
    conn: &Connection,
    query: &Query,
    regex: Option<&Regex>,
    fts: Option<&str>,
    deadline: Option<Instant>,
    hits: &mut Vec<Hit>,
) -> rusqlite::Result<Option<SummariesStopped>> {
    let filters = "(?1 IS NULL OR s.session_id = ?1) AND (?2 IS NULL OR s.latest_at >= ?2) \
                   AND (?3 IS NULL OR s.earliest_at < ?3) AND (?5 IS NULL OR s.num < ?5)";
    let sql = match fts {
        Some(_) => format!(
            "SELECT s.id, s.latest_at, s.text FROM summaries_fts f JOIN summaries s ON s.num = f.rowid \
             WHERE summaries_fts MATCH ?4 AND {filters} ORDER BY s.num DESC"
        ),
        // `?4`, the full-text query, is NULL here: bound all the same, so one call binds both.
        None => format!(
            "SELECT s.id, s.latest_at, s.text FROM summaries s WHERE ?4 IS NULL AND {filters} \
             ORDER BY s.num DESC"
        ),
    };
    let mut statement = conn.prepare_cached(&sql)?;
    let mut rows = statement.query(params![
        query.session,
        query.since,
        query.before,
        fts,
        query.before_summary
    ])?;
    // What was searched so far, which is what the answer says if time runs out.
    let mut searched: Option<SummariesStopped> = None;
    while hits.len() < query.limit {
        let Some(row) = rows.next()? else { break };
        if searched.is_some() && deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Ok(searched);
        }
        let id: String = row.get(0)?;
        let time: i64 = row.get(1)?;
        let text: String = row.get(2)?;
        match &mut searched {
            Some(searched) => {
                searched.oldest.clone_from(&id);
                searched.searched += 1;
            }
            None => {
                searched = Some(SummariesStopped {
                    newest: id.clone(),
                    oldest: id.clone(),
                    searched: 1,
                })
            }
        }
        if fts.is_none() && !regex.is_some_and(|regex| regex.is_match(&text)) {
            continue;
        }
        hits.push(hit_for(id, "summary".to_owned(), time, &text, regex));
    }
    Ok(None)
}

/// The answer's JSON for `hits`.
pub fn hits_json(hits: &[Hit], covering: impl Fn(&str) -> StoreResult<Value>) -> StoreResult<Vec<Value>> {
    hits.iter()
        .map(|hit| {
            Ok(json!({
                "id": hit.id,
                "role": hit.role,
                "time": crate::time::format_iso(hit.time),
                "snippet": hit.snippet,
                "summary": covering(&hit.id)?,
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_text_is_quoted_for_fts5() {
        assert_eq!(
            quote_full_text("coupon-code 42 \"x\" OR NOT"),
            Some("\"coupon-code\" \"42\" \"\"\"x\"\"\" \"OR\" \"NOT\"".to_owned())
        );
        assert_eq!(quote_full_text(" -- ** "), None);
    }

    #[test]
    fn the_prefilter_keeps_only_words_a_match_must_contain() {
        struct Words(&'static [&'static str]);
        impl Vocabulary for Words {
            fn starting(&mut self, prefix: &str) -> Option<Vec<String>> {
                Some(
                    self.0
                        .iter()
                        .filter(|t| t.starts_with(prefix))
                        .map(|t| t.to_string())
                        .collect(),
                )
            }
            fn containing(&mut self, part: &str) -> Option<Vec<String>> {
                Some(
                    self.0
                        .iter()
                        .filter(|t| t.contains(part))
                        .map(|t| t.to_string())
                        .collect(),
                )
            }
        }
        let mut words = Words(&["coupon", "coupons", "recoup", "staging", "7f3a", "7f3b"]);
        let mut prefilter = |pattern: &str| regex_prefilter(pattern, &mut words);
        assert_eq!(
            prefilter(r" x-7f3"),
            Prefilter::Fts("((\"x 7f3a\" OR \"x 7f3b\"))".to_owned()),
            "words side by side in the literal are a phrase"
        );
        assert_eq!(
            prefilter(r"SENTINEL-7f3a"),
            Prefilter::Nothing,
            "no stored word holds `sentinel`"
        );
        assert_eq!(
            prefilter(r" error: timeout "),
            Prefilter::Fts("(\"error timeout\")".to_owned())
        );
        assert_eq!(
            prefilter(" error é timeout "),
            Prefilter::Fts("(\"error\" AND \"timeout\")".to_owned()),
            "a word of its own may stand between them: not a phrase"
        );
        assert_eq!(
            prefilter(r" rollback (always|never) "),
            Prefilter::Fts("(\"rollback always\") OR (\"rollback never\")".to_owned())
        );
        assert_eq!(
            prefilter(r"oupon"),
            Prefilter::Fts("((\"coupon\" OR \"coupons\"))".to_owned())
        );
        assert_eq!(
            prefilter(r"(?i)Staging-\d+"),
            Prefilter::Fts("(\"staging\")".to_owned())
        );
        assert_eq!(
            prefilter(r"(?i) Error: TIMEOUT "),
            Prefilter::Fts("(\"error timeout\")".to_owned()),
            "a case-insensitive phrase is one phrase, not one per spelling"
        );
        assert_eq!(prefilter(r".*"), Prefilter::Scan);
        assert_eq!(
            prefilter(r"a|coupon"),
            Prefilter::Fts("((\"coupon\" OR \"coupons\")) OR ((\"staging\" OR \"7f3a\"))".to_owned())
        );
    }

    #[test]
    fn a_bad_regex_is_one_line() {
        let error = compile_regex("(unclosed").unwrap_err();
        assert!(!error.contains('\n'), "{error}");
        assert!(error.starts_with("invalid regex `(unclosed`"), "{error}");
    }
}
