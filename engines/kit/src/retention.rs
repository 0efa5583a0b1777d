//! Fact retention: of the identifiers in the part of a conversation an engine compacted, the share
//! still present verbatim in its result.
//!
//! The facts are what a person would need to carry on: file paths, commands, error lines, URLs,
//! hashes, numbered issues and security advisories (`CVE-…`, `GHSA-…`), versions, and the user's
//! own requests. The measure is independent of any engine or summarizer, so it can compare them:
//! a summary that paraphrases `src/app.py` as "the app module" has lost the fact.

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet},
    ops::Range,
    sync::LazyLock,
};

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use ctxhost_engine_abi::{Message, Role};
use regex::Regex;
use serde::Serialize;

use crate::{
    stand_in::ToolKind,
    text::{is_json_document, with_partition_prefix, within_json_string},
};

/// What kind of fact an identifier is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// A file path such as `src/app.py` or `/etc/hosts`.
    Path,
    /// A command the agent ran.
    Command,
    /// A line reporting an error.
    Error,
    /// A URL.
    Url,
    /// A commit or content hash.
    Hash,
    /// A numbered issue or pull request, `#482`.
    Issue,
    /// A version, `2.4.1` or `v2.4.1`.
    Version,
    /// A request the user made, as they wrote it (its first line, cut to 200 characters).
    Request,
}

/// One fact found in the compacted messages.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Fact {
    /// What it is.
    pub kind: FactKind,
    /// Its text, as it must appear verbatim.
    pub text: String,
}

/// The measure for one compaction.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Retention {
    /// Distinct facts in the compacted messages.
    pub total: usize,
    /// Of those, how many the result still holds verbatim.
    pub kept: usize,
    /// `kept / total` (1.0 when there was nothing to keep).
    pub share: f64,
    /// The facts lost, for the report (at most [`MAX_LISTED_LOSSES`]).
    pub lost: Vec<Fact>,
    /// The facts lost beyond those listed in `lost`.
    pub lost_unlisted: usize,
    /// How many facts of each kind were lost, all of them (`{"hash": 212, "path": 9}`): what an
    /// engine gives up, where `lost` shows only the first few.
    pub lost_by_kind: BTreeMap<FactKind, usize>,
}

/// How many lost facts a [`Retention`] lists.
pub const MAX_LISTED_LOSSES: usize = 20;

/// Longest fact text kept, in characters; longer lines are cut (at a character boundary).
const MAX_FACT_CHARS: usize = 200;

// Every body is read whole, as an outside checker would: a fact in the middle of a long fetched
// page counts as much as one in its first lines.

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\.{0,2}/)?(?:[A-Za-z0-9_.@-]+/)+[A-Za-z0-9_.@-]+\.[A-Za-z0-9]{1,8}\b|(?:[A-Za-z0-9_.@-]+)?/(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+")
        .expect("path pattern compiles")
});
/// A file named without its folder, by the extensions code and docs use.
static FILE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Za-z0-9_][A-Za-z0-9_.-]*\.(?:py|rs|ts|tsx|js|jsx|go|rb|java|kt|c|h|cc|cpp|hpp|cs|php|swift|md|mdc|txt|json|jsonl|toml|yaml|yml|ini|cfg|lock|sh|sql|html|css|xml|csv|log|ipynb)\b")
        .expect("file name pattern compiles")
});
/// A URL of the schemes the compressor keeps as URLs: the web's, object stores' and data lakes'
/// (`s3://bucket/model.json` is no path `/bucket/model.json`), and package URLs
/// (`pkg:npm/bytes@3.1.2`, an SBOM's, no path `npm/bytes@3.1.2`). An IPv6 host
/// (`http://[::1]:8080/healthz`) and a template's placeholders (`…/rollup_{period}/export`) are
/// part of the URL, as the compressor reads them.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\b(?:(?:https?|ftp|sftp|ssh|git|file|wss?|s3a?|gs|az|abfss?|wasbs?|hdfs|dbfs)://(?:\[[0-9A-Fa-f.]*:[0-9A-Fa-f.:]*\](?:[^\s<>"'`)\[\]\\{}|^]|\{[A-Za-z_][A-Za-z0-9_.]*\})*|(?:[^\s<>"'`)\[\]\\{}|^]|\{[A-Za-z_][A-Za-z0-9_.]*\})+)|pkg:[a-z]+/[^\s<>"'`)\[\]\\{}|^]+)"#,
    )
    .expect("url pattern compiles")
});
static HASH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[0-9a-f]{7,64}\b").expect("hash pattern compiles"));
/// An issue number (`#123`), a security advisory's id (`CVE-2024-45590`,
/// `GHSA-qwcr-r2fm-qrc7`, `RUSTSEC-2024-0421`, `PYSEC-2024-60`, `GO-2024-3321`) or a tracker's
/// key (`INC-4471`, `PLAT-5120`; see [`is_ticket_key`]).
static ISSUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"#[0-9]{1,7}\b|\b(?:CVE-[0-9]{4}-[0-9]{4,7}|GHSA(?:-[0-9a-z]{4}){3}|(?:RUSTSEC|GO)-[0-9]{4}-[0-9]{4}|PYSEC-[0-9]{4}-[0-9]{1,7})\b|\b[A-Z][A-Z0-9]{1,9}-[0-9]{2,6}\b",
    )
    .expect("issue pattern compiles")
});
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bv?[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.]+)?\b").expect("version pattern compiles")
});
/// A line reporting an error: a named error or exception, a compiler's `error:`, a failed test,
/// a traceback, a panic, the usual shell and tool failures, and logrus's error levels (`ERRO[0901]
/// thresholds on metrics 'http_req_failed' have been crossed`, as k6 prints them).
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\bError:|\berror(?:\[E[0-9]+\])?:|\bERROR\b|\bFAILED\b|\bFAIL\b|\bTraceback\b|\bpanicked at\b|\bfatal:|\bFatal\b|No such file or directory|command not found|Permission denied|Segmentation fault|npm ERR!|\b(?:ERRO|FATA)\[",
    )
    .expect("error pattern compiles")
});

/// The first line of `text` that names an error as the measure counts them (`│ Error: …`,
/// `FAILED tests/…`, `npm ERR!`), not one that reports none.
pub fn first_error_line(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(found) = ERROR_LINE.find_at(text, from) {
        let start = text[..found.start()].rfind('\n').map_or(0, |at| at + 1);
        let end = text[found.end()..]
            .find('\n')
            .map_or(text.len(), |at| found.end() + at);
        let line = text[start..end].trim();
        if !reports_no_error(line) {
            return Some(line);
        }
        from = end;
    }
    None
}

/// Whether a user-role message is the agent's own note rather than something the user asked:
/// Claude Code's interruption marker (`[Request interrupted by user for tool use]`), or a message
/// it marks `isMeta` (an @-mentioned file's text, CLAUDE.md, a hook's context); Codex's
/// `<environment_context>` and `<user_instructions>` (AGENTS.md). `text` is the message's text.
/// Its identifiers are facts; it is no request.
pub fn is_agent_note(message: &Message, text: &str) -> bool {
    let text = text.trim();
    message.extra.get("isMeta") == Some(&serde_json::Value::Bool(true))
        || (text.starts_with("[Request interrupted by user") && text.ends_with(']') && !text.contains('\n'))
        || ["environment_context", "user_instructions"].iter().any(|tag| {
            text.strip_prefix('<')
                .and_then(|rest| rest.strip_prefix(tag))
                .is_some_and(|rest| rest.starts_with('>'))
                && text
                    .strip_suffix('>')
                    .and_then(|rest| rest.strip_suffix(tag))
                    .is_some_and(|rest| rest.ends_with("</"))
        })
}

/// Every distinct fact in `messages`.
pub fn find_facts(messages: &[Message]) -> BTreeSet<Fact> {
    find_facts_of(messages, |_| true)
}

/// [`find_facts`], taking a user-role message's first line for a request of the user's only when
/// `sent_by_user` says the user sent it: an engine's summary or note is no request, and its
/// heading, written anew at every compaction, would count as one lost every time.
pub fn find_facts_of(messages: &[Message], sent_by_user: impl Fn(&Message) -> bool) -> BTreeSet<Fact> {
    find_facts_in(messages, sent_by_user)
}

fn find_facts_in<'m>(
    messages: impl IntoIterator<Item = &'m Message>,
    sent_by_user: impl Fn(&Message) -> bool,
) -> BTreeSet<Fact> {
    let mut facts = BTreeSet::new();
    for message in messages {
        let text = message.text();
        collect_text_facts(&text, &mut facts);
        if message.role == Role::User && sent_by_user(message) && !is_agent_note(message, &text) {
            if let Some(request) = text.lines().map(str::trim).find(|line| !line.is_empty()) {
                facts.insert(fact(FactKind::Request, request));
            }
        }
        for call in message.calls() {
            collect_text_facts(&call.function.arguments, &mut facts);
            if let Some(command) = command_of(&call.function.name, &call.function.arguments) {
                facts.insert(fact(FactKind::Command, &command));
            }
        }
    }
    facts
}

/// Measures how many facts of `compacted` (the messages an engine replaced or dropped) survive
/// verbatim somewhere in `result`.
pub fn measure_retention(compacted: &[Message], result: &[Message]) -> Retention {
    measure_retention_of(compacted, result, |_| true)
}

/// [`measure_retention`], where `sent_by_user` tells the user's messages from user-role messages
/// an engine wrote ([`find_facts_of`]).
pub fn measure_retention_of(
    compacted: &[Message],
    result: &[Message],
    sent_by_user: impl Fn(&Message) -> bool,
) -> Retention {
    let facts: Vec<Fact> = find_facts_of(compacted, sent_by_user).into_iter().collect();
    // One pass of every fact over the result, rather than one search of the result per fact:
    // thousands of facts over a result of 100 KB took most of a compaction's accounting.
    let found = find_all(&facts, &searchable_text(result));
    tally(&facts, &found)
}

/// The measure of a replay's compactions, one after another. The facts are the conversation's:
/// what a compaction replaced of the messages the conversation appended, and of an earlier
/// engine's messages (a summary, a stand-in) only the facts an earlier compaction kept that they
/// still hold verbatim. A summary's own wording (its headings, an action's line, a list's
/// markers) is no fact: written anew at every compaction, it would count as lost each time the
/// new summary words the same fact differently.
#[derive(Debug, Default)]
pub struct ReplayRetention {
    /// The facts the last compaction kept.
    carried: Vec<Fact>,
}

impl ReplayRetention {
    /// Measures one compaction: of `compacted` (what it replaced or dropped), `written_by_engine`
    /// tells an engine's messages from the conversation's, and `sent_by_user` the user's own
    /// user-role messages ([`find_facts_of`]).
    pub fn measure(
        &mut self,
        compacted: &[Message],
        result: &[Message],
        written_by_engine: impl Fn(&Message) -> bool,
        sent_by_user: impl Fn(&Message) -> bool,
    ) -> Retention {
        let (engine, conversation): (Vec<&Message>, Vec<&Message>) =
            compacted.iter().partition(|message| written_by_engine(message));
        let mut facts = find_facts_in(conversation, sent_by_user);
        if !engine.is_empty() && !self.carried.is_empty() {
            let written = searchable_text(engine);
            let still_held = find_all(&self.carried, &written);
            facts.extend(
                self.carried
                    .iter()
                    .zip(still_held)
                    .filter(|(_, held)| *held)
                    .map(|(fact, _)| fact.clone()),
            );
        }
        let facts: Vec<Fact> = facts.into_iter().collect();
        let found = find_all(&facts, &searchable_text(result));
        let retention = tally(&facts, &found);
        self.carried = facts
            .into_iter()
            .zip(found)
            .filter_map(|(fact, found)| found.then_some(fact))
            .collect();
        retention
    }
}

/// The measure of `facts`, `found[i]` telling whether the result holds `facts[i]`.
fn tally(facts: &[Fact], found: &[bool]) -> Retention {
    let mut kept = 0;
    let mut lost = Vec::new();
    let mut lost_by_kind = BTreeMap::new();
    for (fact, &found) in facts.iter().zip(found) {
        if found {
            kept += 1;
            continue;
        }
        *lost_by_kind.entry(fact.kind).or_insert(0) += 1;
        if lost.len() < MAX_LISTED_LOSSES {
            lost.push(fact.clone());
        }
    }
    let share = if facts.is_empty() {
        1.0
    } else {
        kept as f64 / facts.len() as f64
    };
    let lost_unlisted = facts.len() - kept - lost.len();
    Retention {
        total: facts.len(),
        kept,
        share,
        lost,
        lost_unlisted,
        lost_by_kind,
    }
}

/// For each fact, whether its text occurs in `haystack`.
fn find_all(facts: &[Fact], haystack: &str) -> Vec<bool> {
    let mut found = vec![false; facts.len()];
    let patterns = facts.iter().map(|fact| fact.text.as_str());
    match AhoCorasick::builder()
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(patterns)
    {
        Ok(automaton) => {
            for hit in automaton.find_overlapping_iter(haystack) {
                found[hit.pattern().as_usize()] = true;
            }
        }
        // Too many or too long patterns for an automaton: one search per fact.
        Err(_) => {
            for (fact, found) in facts.iter().zip(&mut found) {
                *found = haystack.contains(fact.text.as_str());
            }
        }
    }
    found
}

/// The messages of `before` that are not in `after` unchanged: what a compaction replaced or
/// dropped.
pub fn compacted_messages(before: &[Message], after: &[Message]) -> Vec<Message> {
    // Compared by their JSON, hashed, so that the cost stays linear in the context's size.
    let kept: std::collections::HashSet<String> = after.iter().map(json_of).collect();
    before
        .iter()
        .filter(|message| !kept.contains(&json_of(message)))
        .cloned()
        .collect()
}

fn json_of(message: &Message) -> String {
    serde_json::to_string(message).expect("messages serialise")
}

fn collect_text_facts(text: &str, facts: &mut BTreeSet<Fact>) {
    // Each pattern runs once over the whole text, where the regex engine's literal prefilters
    // pay off; the escapes become real line ends first, so no match spans one.
    let original = text;
    let text = unescape_line_ends(text);
    let text = text.as_ref();
    let mut json_document = None;
    let mut holds_hunk = None;
    // A diff's added or removed line is a file's text, not an error printed.
    let mut in_diff =
        |line: &str| is_diff_line(line) && *holds_hunk.get_or_insert_with(|| text.contains("@@"));
    // So is a row of a query's result.
    let mut table_rows = None;
    let mut in_query_result = |at: usize| {
        table_rows
            .get_or_insert_with(|| query_result_rows(text))
            .iter()
            .any(|rows: &Range<usize>| rows.contains(&at))
    };
    let mut from = 0;
    while let Some(found) = ERROR_LINE.find_at(text, from) {
        let start = text[from..found.start()]
            .rfind('\n')
            .map_or(from, |at| from + at + 1);
        let end = text[found.end()..]
            .find('\n')
            .map_or(text.len(), |at| found.end() + at);
        let line = &text[start..end];
        if reports_no_error(line) || in_diff(line) || in_query_result(start) {
            from = end;
            continue;
        }
        // A tool's JSON answer: the error line is the text of its string, not the JSON around.
        if *json_document.get_or_insert_with(|| is_json_document(original)) {
            let opens_document = start == text.len() - text.trim_start().len();
            let line = within_json_string(line, opens_document);
            if !reports_no_error(&line) && !in_diff(&line) {
                insert_trimmed(facts, FactKind::Error, &line);
            }
        } else {
            insert_trimmed(facts, FactKind::Error, line);
        }
        from = end;
    }
    let urls: Vec<(usize, usize)> = URL
        .find_iter(text)
        .map(|found| {
            let url = found
                .as_str()
                .trim_end_matches(['.', ',', ';', ':', '!', '?', '*']);
            facts.insert(fact(FactKind::Url, url));
            (found.start(), found.end())
        })
        .collect();
    // The URLs are in order and never overlap: the last one starting at or before `start`.
    let inside_url = |start: usize, end: usize| {
        let before = urls.partition_point(|&(s, _)| s <= start);
        before > 0 && urls[before - 1].1 >= end
    };
    for found in PATH.find_iter(text) {
        let path = found.as_str();
        // `03/15/2026` is a date; `application/vnd.oci.image.index.v1+json` a media type.
        let named = path.bytes().any(|byte| byte.is_ascii_alphabetic());
        let media_type = is_media_type(token_at(text, found.start(), found.end()));
        if named && !media_type && !inside_url(found.start(), found.end()) {
            // A partitioned path whole (`orders/dt=2024-03-16/part-0.parquet`), as the compressor
            // lists it.
            let path = without_diff_prefix(with_partition_prefix(text, path));
            if !is_stream_device(path) {
                insert_trimmed(facts, FactKind::Path, path);
            }
        }
    }
    for found in FILE_NAME.find_iter(text) {
        let after_slash = text[..found.start()].ends_with('/');
        if !after_slash && !inside_url(found.start(), found.end()) {
            insert_trimmed(facts, FactKind::Path, found.as_str());
        }
    }
    for found in HASH.find_iter(text) {
        let hash = found.as_str();
        if hash.bytes().any(|b| b.is_ascii_alphabetic()) && hash.bytes().any(|b| b.is_ascii_digit()) {
            facts.insert(fact(FactKind::Hash, hash));
        }
    }
    for found in ISSUE.find_iter(text) {
        let id = found.as_str();
        let known = id.starts_with('#')
            || ["CVE-", "GHSA-", "RUSTSEC-", "PYSEC-", "GO-"]
                .iter()
                .any(|database| id.starts_with(database))
            || is_ticket_key(id);
        let step = id.starts_with('#') && numbers_a_step(text, found.start(), id.len());
        if known && !step && !inside_url(found.start(), found.end()) {
            facts.insert(fact(FactKind::Issue, id));
        }
    }
    for found in VERSION.find_iter(text) {
        // `10.0.7` of the address `10.0.7.1` is no version.
        let rest = &text[found.end()..];
        let address = rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit());
        if !address {
            insert_trimmed(facts, FactKind::Version, found.as_str());
        }
    }
}

/// `text` with the escaped `\n`, `\r` and `\t` of JSON text that tools print as their output
/// (Hermes wraps shell output in JSON) turned into two real line ends each: same length, same
/// offsets, and a line or a path after an escape reads as the tool printed it.
fn unescape_line_ends(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    let mut at = 0;
    while at + 1 < bytes.len() {
        if bytes[at] == b'\\' {
            if matches!(bytes[at + 1], b'n' | b'r' | b't') {
                bytes[at] = b'\n';
                bytes[at + 1] = b'\n';
            }
            // Another escape (`\"`, `\\`): its second byte is not a line end.
            at += 2;
        } else {
            at += 1;
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes.
    Cow::Owned(String::from_utf8(bytes).expect("still UTF-8"))
}

/// Whether `line` reads as a line a diff adds or removes (`+## Error codes {#error-codes}`,
/// `-    except ValueError`; not a file's `---`/`+++` heading): in a text holding a diff's hunk
/// (`@@`), a file's text changed, not an error printed (verify19). The compressor lists no such
/// line, and the measure counts none.
pub fn is_diff_line(line: &str) -> bool {
    line.starts_with(['+', '-']) && !line.starts_with("+++") && !line.starts_with("---")
}

/// The byte ranges of `text`'s rows of a query's result as psql prints them: the lines under a
/// header and its `------+-------` rule, their columns separated by ` | `, up to the first line
/// without one (`(9 rows)`). A row is data a query read (a `wait_event_type` of `Timeout`, a
/// job's `ConnectionError`), not an error printed; the compressor lists none, and the measure
/// counts none (verify46: 233 rows of `pg_stat_activity` under Errors in one session). So is a
/// row of a listing printed the same way under a `=====+=====` rule (`airflow dags list-runs`: an
/// old run's `failed` state is history, not the error of the run just triggered; verify47).
pub fn query_result_rows(text: &str) -> Vec<Range<usize>> {
    let mut rows = Vec::new();
    if !text.contains("-+-") && !text.contains("=+=") {
        return rows;
    }
    let is_rule = |line: &str| {
        (line.contains("-+-") || line.contains("=+="))
            && line.bytes().all(|byte| matches!(byte, b'-' | b'=' | b'+'))
    };
    let (mut at, mut header, mut table) = (0, false, None);
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if let Some(from) = table {
            if line.contains('|') {
                continue;
            }
            rows.push(from..start);
            table = None;
        }
        if header && is_rule(line.trim()) {
            table = Some(at);
        }
        header = line.contains('|');
    }
    if let Some(from) = table {
        rows.push(from..text.len());
    }
    rows
}

/// Whether `line` is a row of a tab-separated listing whose status column says how a job ended
/// (`gh run view --json jobs`'s `test (3.12, 3)\tfailure\thttps://…`): a listing of jobs, not
/// the error line of one; the job's log says why it failed (verify18).
fn is_status_row(line: &str) -> bool {
    const STATUSES: [&str; 6] = ["failure", "failed", "fail", "error", "cancelled", "timed_out"];
    line.bytes().filter(|&byte| byte == b'\t').count() >= 2
        && line.split('\t').any(|field| {
            STATUSES
                .iter()
                .any(|status| field.trim().eq_ignore_ascii_case(status))
        })
}

/// Whether `line` is a file's line as a viewer numbers it (`cat -n`, Claude Code's `Read` and
/// `Edit` results: `     3\t-dontwarn com.google.errorprone…`), or as a compiler quotes it under
/// its diagnostic (`5 | pub enum ApiError {`): a file's text shown, not an error printed
/// (verify21, verify31).
fn is_numbered_file_line(line: &str) -> bool {
    let number = line.trim_start_matches(' ');
    let digits = number.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=7).contains(&digits) {
        return false;
    }
    // A compiler quoting the source it points at (`5 | pub enum ApiError {`, rustc's and
    // clippy's, TypeScript's): the code, not an error; a table's row has more than one column.
    let quoted_source = number[digits..]
        .trim_start_matches(' ')
        .strip_prefix("| ")
        .is_some_and(|code| !code.contains(" | "));
    number.as_bytes().get(digits) == Some(&b'\t') || quoted_source
}

/// Whether `line` is a warning a run printed and went on after (Python's `ConvergenceWarning:
/// lbfgs failed to converge`, `DeprecationWarning: … will raise an error`), with no error class
/// named beside it.
fn is_warning(line: &str) -> bool {
    let named_warning = line.split_whitespace().any(|word| {
        word.strip_suffix("Warning:").is_some_and(|class| {
            class
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_uppercase())
        })
    });
    named_warning && !line.contains("Error")
}

/// Words that name an error, lowercase, as parts of words.
const ERROR_WORDS: [&str; 10] = [
    "error",
    "fail",
    "fatal",
    "exception",
    "panic",
    "denied",
    "refused",
    "cannot",
    "undefined",
    "traceback",
];

/// Whether `line` names errors only inside a command's options or a setting's name: a command
/// echoed (`cargo build -v`'s ``Running `rustc --crate-name bytes … --error-format=json …` ``,
/// `gcc -Werror`), a probe's configuration (`kubectl describe pod`'s `Liveness: http-get
/// http://:8080/healthz delay=10s … #failure=3`), not an error printed (verify22: twenty such
/// lines under `Errors:` in a Rust session; verify23: a pod's probes in an on-call session).
fn names_errors_only_in_options(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let names_error = |word: &str| ERROR_WORDS.iter().any(|error| word.contains(error));
    let (options, words): (Vec<&str>, Vec<&str>) = lower
        .split_whitespace()
        .partition(|word| word.len() > 1 && (word.starts_with('-') || word.starts_with('#')));
    options.iter().any(|option| names_error(option)) && !words.iter().any(|word| names_error(word))
}

/// Whether `line` is a scanner's count of a kind it found none of (bandit's `Undefined: 0`,
/// `Total errors: 0`): a word or two, a colon, a zero; or a JSON or YAML field counting none
/// (verify46: ECS's `"failedTasks": 0,` listed under Errors).
fn counts_none_of_a_kind(line: &str) -> bool {
    let line = line.trim().trim_end_matches(',');
    line.split_once(':').is_some_and(|(label, count)| {
        let label = label
            .strip_prefix('"')
            .and_then(|label| label.strip_suffix('"'))
            .unwrap_or(label);
        !label.is_empty()
            && label
                .bytes()
                .all(|byte| byte.is_ascii_alphabetic() || byte == b' ' || byte == b'_')
            && label.split_whitespace().count() <= 2
            && is_zero(count.trim())
    })
}

/// Whether the `#12` at `at..at + len` of `text` numbers a step of a build or a test run: it opens
/// a line of Docker BuildKit's output (`#12 [builder 6/6] RUN pnpm build`, `#12 DONE 88.4s`,
/// `#14 exporting to image`), or CTest's (`10/40 Test #10: wkb_parse …`). No issue (verify43:
/// `Issues: #12, #14` from a build log; verify44: `#10, #11, …, #40` from a test run). Nor does
/// a place's number (`Binary XML file line #12`, `row #3`; verify48: the only issue of a release).
pub fn numbers_a_step(text: &str, at: usize, len: usize) -> bool {
    const STEP: [&str; 16] = [
        "[",
        "DONE ",
        "CACHED",
        "ERROR",
        "CANCELED",
        "sha256:",
        "exporting ",
        "naming ",
        "writing ",
        "resolve ",
        "transferring ",
        "load ",
        "extracting ",
        "unpacking ",
        "pushing ",
        "preparing ",
    ];
    const PLACES: [&str; 4] = ["line ", "row ", "column ", "col "];
    let before = text.get(at.saturating_sub(8)..at).unwrap_or_default();
    if before.ends_with("Test ")
        || PLACES.iter().any(|place| {
            before
                .get(before.len().saturating_sub(place.len())..)
                .is_some_and(|end| end.eq_ignore_ascii_case(place))
        })
    {
        return true;
    }
    let opens_line = at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n');
    let is_number = |word: &str| !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_digit());
    let Some(rest) = text.get(at + len..).and_then(|rest| rest.strip_prefix(' ')) else {
        return false;
    };
    opens_line
        && (STEP.iter().any(|step| rest.starts_with(step))
            // A step's timed output: `#12 4.213 vite v5.4.2 building for production...`.
            || rest.split(' ').next().is_some_and(|time| {
                time.split_once('.')
                    .is_some_and(|(whole, part)| is_number(whole) && is_number(part))
            }))
}

/// Whether every failure word of `lower` (`failed`, `failures`, `errors`) is counted zero before
/// it, its kind between them (`0 tests failed`, `0 failed`), and there is one.
fn counts_no_failure_before(lower: &str) -> bool {
    const KINDS: [&str; 6] = ["test", "tests", "examples", "specs", "checks", "cases"];
    let mut counted = false;
    for word in ["failed", "failures", "errors"] {
        for (at, _) in lower.match_indices(word) {
            let mut before = lower[..at].split_whitespace().rev();
            let zero = match (before.next(), before.next()) {
                (Some("0"), _) => true,
                (Some(kind), Some("0")) => KINDS.contains(&kind),
                _ => false,
            };
            if !zero {
                return false;
            }
            counted = true;
        }
    }
    counted
}

/// A test run's tally that counts no failure (pytest's `==== 1188 passed, 14 skipped, 1 xfailed
/// in 41.2s ====`): a test expected to fail that did (`xfailed`) is no error (verify33: the
/// passing run's tally listed first among the errors).
fn is_passing_tally(trimmed: &str) -> bool {
    const PASSING: &[&str] = &[
        "passed",
        "skipped",
        "xfailed",
        "xpassed",
        "deselected",
        "warning",
        "warnings",
        "rerun",
    ];
    // Most error lines hold no tally: one search is cheaper than splitting each.
    if !trimmed.contains("passed") && !trimmed.contains("xfailed") {
        return false;
    }
    let tally = trimmed.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let tally = tally.rsplit_once(" in ").map_or(tally, |(counts, _)| counts);
    let mut counts = 0;
    for part in tally.split(", ") {
        let mut words = part.split_whitespace();
        let (Some(number), Some(kind), None) = (words.next(), words.next(), words.next()) else {
            return false;
        };
        if !number.bytes().all(|b| b.is_ascii_digit()) || !PASSING.contains(&kind) {
            return false;
        }
        counts += 1;
    }
    counts > 0
}

/// A table's header naming a column for errors (`target recall@10 p50_ms p95_ms p99_ms qps
/// errors`, `NAME READY STATUS RESTARTS ERRORS`): column names, two of them or more in a name's
/// snake or `@` form or all in capitals, the error word not first (verify33: a benchmark's
/// header listed as its run's error, and the results under it lost).
fn is_column_header(trimmed: &str) -> bool {
    let error_word = |column: &str| {
        ["error", "errors", "failed", "failures", "failure", "fail"]
            .iter()
            .any(|word| column.eq_ignore_ascii_case(word))
    };
    let names = |column: &str| {
        column
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'@' | b'%' | b'/' | b'-' | b'.'))
            && column.bytes().any(|b| b.is_ascii_alphabetic())
    };
    let (mut columns, mut named, mut capitals, mut errors) = (0, 0, true, false);
    for column in trimmed.split_whitespace() {
        if !names(column) || (columns == 0 && error_word(column)) {
            return false;
        }
        columns += 1;
        named += usize::from(column.contains(['_', '@']));
        capitals &= !column.bytes().any(|b| b.is_ascii_lowercase());
        errors |= error_word(column);
    }
    columns >= 4 && (named >= 2 || capitals) && errors
}

/// A line a tool checks off as done (`✓ Requested rerun (failed jobs) of run 9413380112`,
/// fastlane's `▸ ✓ FeedModelTests.test_error_state`), with no mark of a failure (verify27).
fn is_checked_off(trimmed: &str) -> bool {
    trimmed.contains(['✓', '✔', '✅']) && !trimmed.contains(['✗', '✘', '❌', '×'])
}

/// A heading a test runner prints before its list of failures (`failures:`, `ERRORS:`): it says
/// nothing of its own (verify25: cargo's `failures:` listed as an error line).
fn is_bare_heading(trimmed: &str) -> bool {
    let word = trimmed.trim_end().trim_end_matches(':').trim_matches('=').trim();
    // RSpec's `Failed examples:` heads the failed examples' commands.
    [
        "failures",
        "failed",
        "errors",
        "error",
        "failure",
        "failed examples",
    ]
    .iter()
    .any(|heading| word.eq_ignore_ascii_case(heading))
}

/// A compiler's annotation under the source line it quotes (`   |     ^^^^^^^^^^ method not found in
/// `Arena``, `  |  -------- expected due to this`): the error is the diagnostic's first line.
fn is_caret_annotation(trimmed: &str) -> bool {
    trimmed
        .strip_prefix('|')
        .map(str::trim_start)
        .is_some_and(|rest| rest.starts_with('^') || rest.starts_with("--"))
}

/// Whether an error line says there was none: `0 failed`, `no errors`, k6's
/// `http_req_failed: 0.00%`, dbt's `PASS=41 WARN=0 ERROR=0`; or names none itself: a traceback's
/// header and the source lines it quotes (`raise MergeError(msg)`), which every Python error
/// shares and its last line names; a release note's issue fixed (`SPR49897: Resolved an issue
/// where profiles failed with error …`); nor is a listing's status column (`…\tfailure\t…`). The
/// compressor lists no such line, and the measure counts none.
pub fn reports_no_error(line: &str) -> bool {
    if is_status_row(line)
        || counts_none_of_a_kind(line)
        || is_numbered_file_line(line)
        || is_warning(line)
        || names_errors_only_in_options(line)
    {
        return true;
    }
    let trimmed = line.trim_start();
    if is_commit_subject(trimmed) || is_passing_tally(trimmed) || is_column_header(trimmed) {
        return true;
    }
    if trimmed.starts_with("Traceback (most recent call last)")
        // The header after a command's own output on its line (`Applying
        // accounts.0057_customer_email_expand...Traceback (most recent call last):`), and the
        // lines that chain one exception to the next: the error is the traceback's last line.
        || trimmed.ends_with("Traceback (most recent call last):")
        || trimmed.starts_with("The above exception was the direct cause of the following exception")
        || trimmed.starts_with("During handling of the above exception, another exception occurred")
        || trimmed.starts_with("raise ")
        || trimmed.starts_with("throw ")
        || is_bare_heading(trimmed)
        || is_caret_annotation(trimmed)
        || is_checked_off(trimmed)
    {
        return true;
    }
    let lower = line.to_ascii_lowercase();
    if [
        "resolved an issue",
        "fixed an issue",
        "fixes an issue",
        "resolves an issue",
        "fixed a bug",
        "resolved a bug",
        "fixed a crash",
        "fixed an error",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase))
    {
        return true;
    }
    // A load test's count or rate of failures, none: k6's `http_req_failed......: 0.00%`,
    // pgbench's `number of failed transactions: 0 (0.000%)`.
    if let Some(at) = lower.find("failed") {
        let rest = lower[at + "failed".len()..]
            .trim_start_matches(|c: char| c.is_ascii_lowercase() || c == ' ' || c == '_');
        let count = rest.trim_start_matches(|c: char| c == '.' || c == ':' || c.is_whitespace());
        if rest.len() > count.len() && is_zero(count) {
            return true;
        }
    }
    // A tally that counts no failure before its word: CTest's `100% tests passed, 0 tests failed
    // out of 12` (verify44: the passing run listed under Blocked, its failure still open).
    if counts_no_failure_before(&lower) {
        return true;
    }
    // A column or a section named for failures, which lists none by itself: pgbench's `statement
    // latencies in milliseconds and failures:`.
    if line.trim_end().ends_with(':') && (lower.contains(" and failures") || lower.contains(" and errors")) {
        return true;
    }
    // `No lint errors`, `no type errors found`.
    if lower.match_indices("no ").any(|(at, _)| {
        let at_word = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let mut words = lower[at + 3..].split_whitespace();
        at_word && (words.next().is_some_and(counts_none) || words.next().is_some_and(counts_none))
    }) {
        return true;
    }
    [
        "0 failed",
        "0 failures",
        "0 errors",
        "0 error",
        "no errors",
        "error: 0",
        "errors: 0",
        "error=0",
        "errors=0",
        "failed=0",
        "failures=0",
        "without error",
        // A fixer's tally of what it fixed: ruff's `Found 2 errors (2 fixed, 0 remaining).`
        // (verify36: listed under Errors for the rest of a replay).
        "0 remaining",
    ]
    .iter()
    .any(|phrase| holds_whole_number(&lower, phrase))
}

/// Whether `line` is a commit's subject as `git log --oneline` lists it (`5d02e8a middleware: log
/// tenant on auth failure (#1176)`): its words name a change, not an error the work hit.
fn is_commit_subject(line: &str) -> bool {
    let Some((hash, subject)) = line.split_once(' ') else {
        return false;
    };
    let abbreviated = (7..=12).contains(&hash.len()) || hash.len() == 40;
    let hex = hash
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mixed = hash.bytes().any(|b| b.is_ascii_digit()) && hash.bytes().any(|b| b.is_ascii_lowercase());
    // A log line keyed by a hex id names its level next (`3f9a2c1 ERROR db timeout`).
    let level = subject
        .split_whitespace()
        .next()
        .is_some_and(|word| word.len() > 2 && word.bytes().all(|b| b.is_ascii_uppercase() || b == b':'));
    abbreviated && hex && mixed && !level
}

/// Whether `text` opens with a zero that is a whole number or a rate (`0`, `0 (0.000%)`, `0.00%`),
/// not the start of another number (`0.5%`, `07`).
fn is_zero(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('0') else {
        return false;
    };
    let decimals = rest.strip_prefix('.').map(|rest| rest.trim_start_matches('0'));
    match decimals {
        Some(after) => after.starts_with('%'),
        // `0 passed` after `3 failed:` counts something else.
        // Airflow's progress line separates its counts with ` | ` (`failed: 0 | skipped: 0`).
        None => {
            rest.trim().is_empty()
                || rest.starts_with(" (")
                || rest.starts_with(" |")
                || rest.starts_with(['%', ',', ';', '|'])
        }
    }
}

/// Whether `word` names errors or failures, of which the word before says there are none.
fn counts_none(word: &str) -> bool {
    matches!(
        word.trim_end_matches(|c: char| !c.is_ascii_alphabetic()),
        "errors" | "failures"
    )
}

/// Whether `text` holds `phrase` with its zero a whole number: `10 errors` and `errors: 0.5%`
/// hold `0 errors` and `errors: 0` only as parts of other numbers.
fn holds_whole_number(text: &str, phrase: &str) -> bool {
    let number = |byte: Option<&u8>| byte.is_some_and(|byte| byte.is_ascii_digit() || *byte == b'.');
    text.match_indices(phrase).any(|(at, _)| {
        let bytes = text.as_bytes();
        let before = at.checked_sub(1).and_then(|before| bytes.get(before));
        let after = bytes.get(at + phrase.len());
        // A zero the phrase opens with starts its number; one it ends with ends it.
        let whole_from_its_start = !phrase.starts_with('0') || !number(before);
        let whole_to_its_end = !phrase.ends_with('0') || !number(after);
        whole_from_its_start && whole_to_its_end
    })
}

/// Whether `token` is a media type (`application/vnd.oci.image.index.v1+json`,
/// `text/x-python`): no path, though it has a slash and dots.
pub fn is_media_type(token: &str) -> bool {
    let Some((kind, subtype)) = token.split_once('/') else {
        return false;
    };
    let registered = matches!(
        kind,
        "application" | "audio" | "font" | "image" | "message" | "model" | "multipart" | "text" | "video"
    );
    registered
        && !subtype.contains('/')
        && (subtype.starts_with("vnd.")
            || subtype.starts_with("x-")
            || subtype.starts_with("prs.")
            || subtype.contains('+'))
}

/// Whether `token` is an issue tracker's key (`INC-4471`, `PLAT-5120`, `SEC-880`): capitals, a
/// dash and a number of two digits or more, unless the capitals name a standard, an encoding or
/// a class (`SHA-256`, `UTF-16`, `ISO-8601`, `RFC-7231`, ACME's `DNS-01`, the weakness `CWE-400`,
/// `COVID-19`).
pub fn is_ticket_key(token: &str) -> bool {
    let Some((project, number)) = token.split_once('-') else {
        return false;
    };
    let project_ok = (2..=10).contains(&project.len())
        && project.as_bytes()[0].is_ascii_uppercase()
        && project
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit());
    let number_ok = (2..=6).contains(&number.len()) && number.bytes().all(|byte| byte.is_ascii_digit());
    project_ok
        && number_ok
        && !matches!(
            project,
            "SHA"
                | "MD"
                | "UTF"
                | "UCS"
                | "ISO"
                | "IEC"
                | "IEEE"
                | "RFC"
                | "ANSI"
                | "ECMA"
                | "AES"
                | "DES"
                | "RSA"
                | "ECDSA"
                | "CRC"
                | "TLS"
                | "SSL"
                | "HTTP"
                | "DNS"
                | "CWE"
                | "ARM"
                | "AMD"
                | "UTC"
                | "GMT"
                | "COVID"
                | "IPV"
                | "INT"
                | "UINT"
                | "FP"
                | "BF"
                | "ES"
                | "CVE"
                | "GHSA"
                | "RUSTSEC"
                | "PYSEC"
                | "GO"
                | "X"
        )
}

/// The whitespace-delimited token around `start..end` of `text`.
fn token_at(text: &str, start: usize, end: usize) -> &str {
    let boundary =
        |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | ')' | '[' | ']' | ',' | ';');
    let from = text[..start].rfind(boundary).map_or(0, |at| at + 1);
    let to = text[end..].find(boundary).map_or(text.len(), |at| end + at);
    &text[from..to]
}

/// A path as git's diff headers write it (`--- a/src/app.py`, `+++ b/src/app.py`) without its
/// prefix: the file is `src/app.py`, and the compressor lists it so. A top folder named `a` or
/// `b` holding a path reads the same way, a rare name next to every diff's.
pub fn without_diff_prefix(path: &str) -> &str {
    match path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")) {
        Some(rest) if !rest.starts_with('/') && rest.contains(['.', '/']) => rest,
        _ => path,
    }
}

/// Whether `path` is one of the streams a shell redirects to (`2>/dev/null`, `tee /dev/stderr`):
/// no file of the work, and in every other command.
pub fn is_stream_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/stdin"
            | "/dev/tty"
            | "/dev/zero"
            | "/dev/urandom"
    )
}

fn insert_trimmed(facts: &mut BTreeSet<Fact>, kind: FactKind, text: &str) {
    let text = text.trim().trim_end_matches(['.', ',', ';', ':']);
    if !text.is_empty() {
        facts.insert(fact(kind, text));
    }
}

/// The shell command in the arguments of a call to `tool`, when it has one.
fn command_of(tool: &str, arguments: &str) -> Option<String> {
    let serde_json::Value::Object(arguments) = serde_json::from_str(arguments).ok()? else {
        return None;
    };
    // The `command` of a tool named as an editor (`str_replace_editor`: `view`, `str_replace`)
    // says what to do to a file, and a shell's `apply_patch` writes its patch: nothing ran.
    if ToolKind::of(tool) == ToolKind::Write || ToolKind::of_call(tool, &arguments) == ToolKind::Write {
        return None;
    }
    // Not `input`, which a shell tool may take its command under, but many other tools their text.
    crate::stand_in::command_under(&arguments, &["command", "cmd", "script"])
        .map(|command| command.trim().to_owned())
}

fn fact(kind: FactKind, text: &str) -> Fact {
    let text = match text.char_indices().nth(MAX_FACT_CHARS) {
        Some((cut, _)) => &text[..cut],
        None => text,
    };
    Fact {
        kind,
        text: text.trim().to_owned(),
    }
}

/// Everything the model reads in `messages`, tool-call arguments included, in one string.
fn searchable_text<'m>(messages: impl IntoIterator<Item = &'m Message>) -> String {
    let mut text = String::new();
    for message in messages {
        text.push_str(&message.text());
        text.push('\n');
        for call in message.calls() {
            text.push_str(&call.function.arguments);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;
    use pretty_assertions::assert_eq;

    /// A row of a query's result is data, not an error printed; a line after the table is
    /// output again (verify46).
    #[test]
    fn a_query_results_rows_are_no_error_lines() {
        let found = kinds(&[Message::tool(
            "t1",
            " id | status | last_error\n----+--------+----------------------------\n  7 | failed | ConnectionError: reset by peer\n  8 | ok     |\n(2 rows)\n\nERROR:  relation \"jobz\" does not exist",
        )]);
        let errors: Vec<&str> = found
            .iter()
            .filter(|(kind, _)| *kind == FactKind::Error)
            .map(|(_, text)| text.as_str())
            .collect();
        assert_eq!(errors, ["ERROR:  relation \"jobz\" does not exist"]);
    }

    /// So is a row of a listing under a `=====+=====` rule: an old run's `failed` state is
    /// history (verify47: `airflow dags list-runs` after a manual run succeeded).
    #[test]
    fn a_listings_rows_under_a_double_rule_are_a_querys_result() {
        let text = "dag_id       | run_id                               | state\n=============+======================================+========\norders_daily | manual__2026-04-05T09:44:02+00:00    | success\norders_daily | scheduled__2026-04-03T02:00:00+00:00 | failed\nError: DAG orders_daily is paused";
        let rows: Vec<&str> = query_result_rows(text)
            .into_iter()
            .map(|rows| &text[rows])
            .collect();
        assert_eq!(
            rows,
            ["orders_daily | manual__2026-04-05T09:44:02+00:00    | success\norders_daily | scheduled__2026-04-03T02:00:00+00:00 | failed\n"]
        );
    }

    #[test]
    fn a_diffs_added_and_removed_lines_are_no_error_lines() {
        let found = kinds(&[Message::tool(
            "t1",
            "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n-    except KeyError:\n+    except ValueError:\n Traceback (most recent call last)\nE   AssertionError: 1 != 2",
        )]);
        let errors: Vec<&str> = found
            .iter()
            .filter(|(kind, _)| *kind == FactKind::Error)
            .map(|(_, text)| text.as_str())
            .collect();
        assert_eq!(errors, ["E   AssertionError: 1 != 2"]);
    }

    #[test]
    fn a_partitioned_path_is_one_fact_whole() {
        let found = kinds(&[Message::tool(
            "t1",
            "2024-04-01 00:10:22 49.0 MiB orders/dt=2024-03-16/part-00000-b6589fc6.snappy.parquet",
        )]);
        assert!(
            found.contains(&(
                FactKind::Path,
                "orders/dt=2024-03-16/part-00000-b6589fc6.snappy.parquet".to_owned()
            )),
            "{found:?}"
        );
        assert!(
            !found.contains(&(
                FactKind::Path,
                "2024-03-16/part-00000-b6589fc6.snappy.parquet".to_owned()
            )),
            "{found:?}"
        );
    }

    #[test]
    fn codexs_context_and_instructions_are_the_agents_notes() {
        let note = |text: &str| is_agent_note(&Message::user(text), text);
        assert!(note(
            "<environment_context>\n  <cwd>/home/dev/work</cwd>\n</environment_context>"
        ));
        assert!(note(
            "<user_instructions>\nRun clippy first.\n</user_instructions>"
        ));
        assert!(note("[Request interrupted by user for tool use]"));
        // A request that quotes one is the user's.
        assert!(!note("Why does <environment_context> list the wrong cwd?"));
        assert!(!note(
            "<environment_context> is stale </environment_context> fix it"
        ));
        assert!(!note("Backfill March."));
    }

    fn kinds(messages: &[Message]) -> Vec<(FactKind, String)> {
        find_facts(messages)
            .into_iter()
            .map(|fact| (fact.kind, fact.text))
            .collect()
    }

    #[test]
    fn the_facts_a_person_needs_are_found() {
        let messages = vec![
            Message::user("The checkout tests fail since 9f3c2ab (refs #482). Please fix.\nDetails follow."),
            Message::assistant_calls(vec![ToolCall::new("c1", "terminal", r#"{"command":"pytest tests/checkout -q"}"#)]),
            Message::tool(
                "c1",
                "FAILED tests/checkout/test_totals.py::test_discount - AssertionError: expected 90\nsee https://ci.example.com/run/7.",
            ),
            Message::assistant("Bumped to v2.4.1 in pyproject.toml."),
        ];
        let found = kinds(&messages);
        let expect = |kind, text: &str| {
            assert!(
                found.contains(&(kind, text.to_owned())),
                "{kind:?} {text:?} in {found:#?}"
            )
        };
        expect(
            FactKind::Request,
            "The checkout tests fail since 9f3c2ab (refs #482). Please fix.",
        );
        expect(FactKind::Hash, "9f3c2ab");
        expect(FactKind::Issue, "#482");
        expect(FactKind::Command, "pytest tests/checkout -q");
        expect(FactKind::Path, "tests/checkout/test_totals.py");
        expect(
            FactKind::Error,
            "FAILED tests/checkout/test_totals.py::test_discount - AssertionError: expected 90",
        );
        expect(FactKind::Url, "https://ci.example.com/run/7");
        expect(FactKind::Version, "v2.4.1");
    }

    #[test]
    fn a_command_given_as_an_argument_list_is_a_command() {
        let messages = vec![Message::assistant_calls(vec![ToolCall::new(
            "c1",
            "shell",
            r#"{"command":["bash","-lc","cargo test -q"],"workdir":"/w"}"#,
        )])];
        let found = kinds(&messages);
        assert!(
            found.contains(&(FactKind::Command, "cargo test -q".to_owned())),
            "{found:#?}"
        );
    }

    #[test]
    fn an_editors_sub_command_is_not_a_command_that_ran() {
        // `str_replace_editor` (OpenHands, SWE-agent) says what to do to a file under `command`.
        let messages = vec![Message::assistant_calls(vec![
            ToolCall::new(
                "c1",
                "str_replace_editor",
                r#"{"command":"view","path":"/workspace/src/app.py"}"#,
            ),
            ToolCall::new(
                "c2",
                "str_replace_editor",
                r#"{"command":"str_replace","path":"/workspace/src/app.py","old_str":"a","new_str":"b"}"#,
            ),
        ])];
        assert_eq!(
            kinds(&messages),
            vec![(FactKind::Path, "/workspace/src/app.py".to_owned())]
        );
    }

    /// A shell running Codex's `apply_patch` writes its patch: no command ran.
    #[test]
    fn a_patch_applied_through_the_shell_is_no_command() {
        let patch = serde_json::json!({"command": ["apply_patch", "*** Begin Patch\n*** Update File: Dockerfile\n*** End Patch\n"]});
        let messages = vec![Message::assistant_calls(vec![
            ToolCall::new("c1", "shell", patch.to_string()),
            ToolCall::new("c2", "shell", r#"{"command":["bash","-lc","npm test"]}"#),
        ])];
        assert_eq!(kinds(&messages), vec![(FactKind::Command, "npm test".to_owned())]);
    }

    /// A shell writing a here-document to a file changes the file: no command ran, and a shell's
    /// streams are no files.
    #[test]
    fn a_here_document_written_to_a_file_is_no_command() {
        let write = serde_json::json!({"command": "cat > notes.md <<'EOF'\nretries: 5\nEOF"});
        let messages = vec![Message::assistant_calls(vec![
            ToolCall::new("c1", "shell", write.to_string()),
            ToolCall::new("c2", "shell", r#"{"command":"npm test 2>/dev/null"}"#),
        ])];
        assert_eq!(
            kinds(&messages),
            vec![
                (FactKind::Path, "notes.md".to_owned()),
                (FactKind::Command, "npm test 2>/dev/null".to_owned())
            ]
        );
    }

    #[test]
    fn a_long_body_is_read_whole_and_escaped_lines_are_lines() {
        let middle = format!(
            "{}see https://example.org/a/b.html and fix #77\n{}",
            "filler text. ".repeat(2_000),
            "more filler. ".repeat(2_000)
        );
        let json_output = r#"{"output": "Compiling x\nerror: cannot pull with rebase: You have unstaged changes.\nsrc/app.py:3", "exit_code": 1}"#;
        let found = kinds(&[Message::tool("a", middle), Message::tool("b", json_output)]);
        assert_eq!(
            found,
            vec![
                (FactKind::Path, "src/app.py".to_owned()),
                (
                    FactKind::Error,
                    "error: cannot pull with rebase: You have unstaged changes".to_owned()
                ),
                (FactKind::Url, "https://example.org/a/b.html".to_owned()),
                (FactKind::Issue, "#77".to_owned()),
            ]
        );
    }

    #[test]
    fn an_object_stores_uri_is_a_url_not_a_path() {
        assert_eq!(
            kinds(&[Message::tool(
                "a",
                "model saved to s3://ana-ml-artifacts/churn/xgb/29e6/model.json"
            )]),
            vec![(
                FactKind::Url,
                "s3://ana-ml-artifacts/churn/xgb/29e6/model.json".to_owned()
            )]
        );
    }

    #[test]
    fn a_diffs_file_is_its_path_without_the_a_and_b_prefixes() {
        let diff = "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x\n+y\n--- a/Cargo.toml\n+++ b/Cargo.toml";
        assert_eq!(
            kinds(&[Message::tool("a", diff)]),
            vec![
                (FactKind::Path, "Cargo.toml".to_owned()),
                (FactKind::Path, "src/app.py".to_owned()),
            ]
        );
        assert_eq!(without_diff_prefix("a/b"), "a/b");
        assert_eq!(without_diff_prefix("b//etc/hosts"), "b//etc/hosts");
    }

    #[test]
    fn an_advisory_id_is_an_issue() {
        assert_eq!(
            kinds(&[Message::tool(
                "a",
                "CVE-2024-45590 (GHSA-qwcr-r2fm-qrc7) in body-parser; see https://github.com/advisories/GHSA-qwcr-r2fm-qrc7"
            )]),
            vec![
                (FactKind::Url, "https://github.com/advisories/GHSA-qwcr-r2fm-qrc7".to_owned()),
                (FactKind::Issue, "CVE-2024-45590".to_owned()),
                (FactKind::Issue, "GHSA-qwcr-r2fm-qrc7".to_owned()),
            ]
        );
    }

    /// A build's or a test run's step number (`#12 [builder 6/6] …`, CTest's `Test #10:`) is no
    /// issue; one named in prose is (verify43, verify44).
    #[test]
    fn a_steps_number_is_no_issue() {
        let issues = |text: &str| -> Vec<String> {
            kinds(&[Message::tool("a", text)])
                .into_iter()
                .filter(|(kind, _)| *kind == FactKind::Issue)
                .map(|(_, id)| id)
                .collect()
        };
        assert_eq!(
            issues("#12 [builder 6/6] RUN pnpm build\n#12 DONE 88.4s\n10/40 Test #10: wkb_parse ... Passed\nBinary XML file line #12 in app.tallybook:layout/row, Row #3\nfixes #4521"),
            ["#4521"]
        );
    }

    /// A report of no errors is no error line; ten errors are.
    #[test]
    fn a_report_of_no_errors_is_none_and_ten_errors_are_errors() {
        for none in [
            "0 failed, 12 passed",
            "Found 0 errors.",
            "PASS=41 WARN=0 ERROR=0",
            "errors: 0",
            "Traceback (most recent call last):",
            "  Applying accounts.0057_customer_email_expand...Traceback (most recent call last):",
            "The above exception was the direct cause of the following exception:",
            "During handling of the above exception, another exception occurred:",
            "    raise MergeError(msg)",
            "Executed 43 tests, with 0 failures (0 unexpected) in 12.204 seconds",
            "SPR49897: Resolved an issue where StageNow profiles failed with error 'Feature not supported'.",
            "- Fixed a crash when the config has no `error` key",
            "number of failed transactions: 0 (0.000%)",
            "5d02e8a middleware: log tenant on auth failure (#1176)",
            "5d02e8a (HEAD -> main) fix: retry the failed upload",
            "[2024-07-12 04:20:44] {backfill_job_runner.py:446} INFO - [backfill progress] | finished run 4 of 4 | tasks waiting: 0 | succeeded: 38 | running: 0 | failed: 0 | skipped: 0 | deadlocked: 0 | not ready: 0",
            "http_req_failed................: 0.00%  ✓ 0  ✗ 1200",
            "statement latencies in milliseconds and failures:",
            "✨ No lint errors",
            "Found 2 errors (2 fixed, 0 remaining).",
            "no type errors found",
            "test (3.12, 1)\tfailure\thttps://github.com/acme/payments/actions/runs/9876598643/job/27311115723",
            "\t\tUndefined: 0",
            "Total errors: 0",
            "    \"failedTasks\": 0",
            "  \"error_count\": 0,",
            "     3\t-dontwarn com.google.errorprone.annotations.CanIgnoreReturnValue",
            "1\t## Error codes",
            "    12\t        raise HTTPException(401, detail=\"token expired\")",
            "/opt/venv/lib/python3.11/site-packages/sklearn/linear_model/_logistic.py:469: ConvergenceWarning: lbfgs failed to converge (status=1):",
            "DeprecationWarning: `np.bool` is deprecated and will raise an error in 2.0",
            "     Running `rustc --crate-name bytes --edition=2021 src/lib.rs --error-format=json --json=diagnostic-rendered-ansi`",
            "+ gcc -Wall -Werror -c parser.c",
            "    Liveness:   http-get http://:8080/healthz delay=10s timeout=1s period=10s #success=1 #failure=3",
            "failures:",
            "=== FAILURES ===",
            "✓ Requested rerun (failed jobs) of run 9413380112",
            "[10:03:09]: ▸ ✓ HarborKitTests.FeedModelTests.test_error_state",
            "    |     ^^^^^^^^^^ method not found in `Arena`",
            "5 | pub enum ApiError {",
            "  12 |     return Err(ApiError::NotFound);",
            "  |  -------- expected due to this",
            "================ 1188 passed, 14 skipped, 1 xfailed in 41.20s ================",
            "3 passed, 1 xpassed, 2 warnings",
            "target        recall@10  p50_ms  p95_ms  p99_ms   qps  errors",
            "NAME    READY   STATUS    RESTARTS   ERRORS",
            "100% tests passed, 0 tests failed out of 12",
            "Failed examples:",
            "12 passed, 0 failed",
        ] {
            assert!(reports_no_error(none), "{none}");
        }
        for some in [
            "Found 10 errors in 9 files.",
            "110 failed, 2 passed",
            "errors: 0.5%",
            "ERROR=07",
            "number of failed transactions: 12 (0.400%)",
            "http_req_failed................: 0.52%",
            "Found no config; 3 errors in 2 files",
            "Error: no route to host",
            "3 tests failed: 0 passed",
            "3 | FAILED | tests/test_api.py::test_retry",
            "3f9a2c1 ERROR db timeout after 30s",
            "finished run 4 of 4 | succeeded: 30 | failed: 8 | skipped: 0",
            "2024-05-10T10:10:00Z\tE   AssertionError: 3 != 4\tfailed at retry.py:88",
            "3 failed\tin 2.1s",
            "12345678\tfailed",
            "UserWarning: fallback failed; ValueError: bad shape",
            "warning: failed to resolve host",
            "cc1: all warnings being treated as errors (-Werror)",
            "FAILED tests/test_api.py::test_retry - AssertionError: 3 != 4",
            "error: could not compile `shopd` (bin \"shopd\") due to 3 previous errors; --error-format=json",
            "error[E0599]: no method named `alloc_node` found for struct `Arena` in the current scope",
            "failures: 3",
            "    \"failedTasks\": 2",
            "==== 1 failed, 1186 passed, 1 xfailed in 3.41s ====",
            "1 error, 12 passed",
            "ERROR CONNECTING TO THE DATABASE SERVER",
            "failed to connect to upstream_host db_primary",
            "qdrant_ivf recall@10 p50_ms errors: 12",
            "92% tests passed, 1 tests failed out of 12",
            "0 tests failed, 2 errors",
        ] {
            assert!(!reports_no_error(some), "{some}");
        }
    }

    /// A tracker's key is an issue; a standard's, an encoding's or a class's number is not.
    #[test]
    fn only_a_trackers_key_is_a_ticket() {
        for key in ["INC-4471", "OPS-3302", "PLAT-5120", "DS-1187"] {
            assert!(is_ticket_key(key), "{key}");
        }
        for not_a_key in [
            "SHA-256", "UTF-16", "DNS-01", "HTTP-01", "CWE-400", "ISO-8601", "ARM-64",
        ] {
            assert!(!is_ticket_key(not_a_key), "{not_a_key}");
        }
    }

    /// A date is no path, a media type neither; a path without an extension is read whole; a
    /// tracker's key is an issue, a standard's number is not; a report of no errors is no error.
    #[test]
    fn what_looks_like_a_fact_and_is_not() {
        assert_eq!(
            kinds(&[Message::tool(
                "a",
                "on 03/15/2026 INC-4471 hit packages/app-0/node_modules/braces as \
                 application/vnd.oci.image.index.v1+json per SHA-256\n\
                 10:58:02  Done. PASS=41 WARN=0 ERROR=0 SKIP=0 TOTAL=41\n\
                 http_req_failed................: 0.00%   ✓ 0         ✗ 2356\nERROR: relation \"invoices\" does not exist"
            )]),
            vec![
                (FactKind::Path, "packages/app-0/node_modules/braces".to_owned()),
                (FactKind::Error, "ERROR: relation \"invoices\" does not exist".to_owned()),
                (FactKind::Issue, "INC-4471".to_owned()),
            ]
        );
    }

    #[test]
    fn a_package_url_is_a_url_not_a_path() {
        assert_eq!(
            kinds(&[Message::tool("a", "\"purl\": \"pkg:npm/bytes@3.1.2\"")]),
            vec![
                (FactKind::Url, "pkg:npm/bytes@3.1.2".to_owned()),
                (FactKind::Version, "3.1.2".to_owned()),
            ]
        );
    }

    #[test]
    fn a_json_answers_error_line_is_its_strings_text() {
        let output = r#"{"output": "Traceback (most recent call last):\n  File \"train.py\", line 3\nKeyError: \"tenure_months\"", "exit_code": 1, "error": null}"#;
        assert_eq!(
            kinds(&[Message::tool("a", output)]),
            vec![
                (FactKind::Path, "train.py".to_owned()),
                (FactKind::Error, "KeyError: \"tenure_months\"".to_owned()),
            ]
        );
    }

    #[test]
    fn an_address_is_no_version() {
        let found = kinds(&[Message::tool("a", "client: 10.0.7.1 upgraded to 2.31.0")]);
        assert_eq!(found, vec![(FactKind::Version, "2.31.0".to_owned())]);
    }

    #[test]
    fn bare_file_names_count_and_url_parts_do_not() {
        let found = kinds(&[Message::assistant(
            "Open fields.py, then https://github.com/a/b/blob/main/setup.py#L12 and docs/x.md. Source: **https://bold.example/x**",
        )]);
        assert_eq!(
            found,
            vec![
                (FactKind::Path, "docs/x.md".to_owned()),
                (FactKind::Path, "fields.py".to_owned()),
                (FactKind::Url, "https://bold.example/x".to_owned()),
                (
                    FactKind::Url,
                    "https://github.com/a/b/blob/main/setup.py#L12".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_url_keeps_its_ipv6_host_and_its_placeholders() {
        let found = kinds(&[Message::tool(
            "a",
            "url = f\"https://m.example.com/v2/rollup_{period}/export?fmt={fmt}\"\n\
             health = \"http://[::1]:8080/healthz\" or https://q.example.com/?f[a]=1",
        )]);
        let urls: Vec<&str> = found
            .iter()
            .filter(|(kind, _)| *kind == FactKind::Url)
            .map(|(_, url)| url.as_str())
            .collect();
        assert_eq!(
            urls,
            [
                "http://[::1]:8080/healthz",
                "https://m.example.com/v2/rollup_{period}/export?fmt={fmt}",
                "https://q.example.com/?f",
            ]
        );
    }

    #[test]
    fn retention_counts_facts_kept_verbatim_and_lists_the_lost() {
        let compacted = vec![Message::user("Fix src/app.py and src/db.py (see #12)")];
        let result = vec![Message::assistant("Summary: working on src/app.py for #12.")];
        let retention = measure_retention(&compacted, &result);
        assert_eq!(retention.total, 4, "{retention:?}");
        assert_eq!(retention.kept, 2);
        assert_eq!(retention.share, 0.5);
        let lost: Vec<&str> = retention.lost.iter().map(|fact| fact.text.as_str()).collect();
        assert_eq!(lost, ["src/db.py", "Fix src/app.py and src/db.py (see #12)"]);
        assert_eq!(
            retention.lost_by_kind,
            BTreeMap::from([(FactKind::Path, 1), (FactKind::Request, 1)])
        );
    }

    /// More losses than are listed: the count of the rest says the list was cut.
    #[test]
    fn losses_beyond_the_list_are_counted() {
        let ids: Vec<String> = (0..30).map(|n| format!("req-{n:02}a7f3c9e1b2d4")).collect();
        let compacted = vec![Message::tool("c1", ids.join("\n"))];
        let retention = measure_retention(&compacted, &[Message::user("nothing kept")]);
        assert_eq!(retention.total, 30, "{retention:?}");
        assert_eq!(retention.lost.len(), MAX_LISTED_LOSSES);
        assert_eq!(retention.lost_unlisted, 30 - MAX_LISTED_LOSSES);
        assert_eq!(retention.lost_by_kind.values().sum::<usize>(), 30);
    }

    #[test]
    fn nothing_compacted_is_full_retention() {
        assert_eq!(measure_retention(&[], &[Message::user("x")]).share, 1.0);
    }

    #[test]
    fn the_compacted_part_is_what_the_result_no_longer_holds_unchanged() {
        let before = vec![
            Message::system("s"),
            Message::user("old"),
            Message::assistant("a"),
            Message::user("new"),
        ];
        let after = vec![
            Message::system("s"),
            Message::assistant("[summary]"),
            Message::user("new"),
        ];
        assert_eq!(
            compacted_messages(&before, &after),
            vec![Message::user("old"), Message::assistant("a")]
        );
    }

    /// In a replay, an earlier summary's facts are the conversation's facts it holds, not its
    /// lines: a later summary that words the same error differently keeps it; one that drops a
    /// fact loses it.
    #[test]
    fn a_replay_counts_the_conversations_facts_an_earlier_summary_holds_not_its_wording() {
        let conversation = vec![
            Message::user("make the upload retry"),
            Message::tool("c1", "npm ERR! code ELIFECYCLE\nsee /w/logs/npm-debug.log"),
        ];
        let first_summary = Message::user(
            "## Goal\n- make the upload retry\n## Progress\n### Blocked\n- [Bash] ran `npm test` -> exit 1 — npm ERR! code ELIFECYCLE\n- /w/logs/npm-debug.log",
        );
        let mut measure = ReplayRetention::default();
        let first = measure.measure(
            &conversation,
            std::slice::from_ref(&first_summary),
            |_| false,
            |_| true,
        );
        assert_eq!((first.kept, first.total), (first.total, 3), "{first:?}");
        // The next compaction replaces the first summary: the error is now under Done, worded
        // anew, and the log's path is gone.
        let second_summary = Message::user(
            "## Goal\n- make the upload retry\n## Progress\n### Done\n- [Bash] ran `npm test` (×2)\n## Critical Context\n- Errors:\n  - npm ERR! code ELIFECYCLE",
        );
        let second = measure.measure(
            std::slice::from_ref(&first_summary),
            std::slice::from_ref(&second_summary),
            |message| *message == first_summary,
            |_| true,
        );
        assert_eq!((second.kept, second.total), (2, 3), "{second:?}");
        assert_eq!(second.lost_unlisted, 0);
        assert_eq!(
            second.lost,
            vec![Fact {
                kind: FactKind::Path,
                text: "/w/logs/npm-debug.log".to_owned()
            }]
        );
        // Taken as the conversation's, the first summary's wording was a lost error line.
        let worded = measure_retention_of(
            std::slice::from_ref(&first_summary),
            std::slice::from_ref(&second_summary),
            |_| true,
        );
        assert!(
            worded.lost.iter().any(|fact| fact.text.contains("[Bash] ran")),
            "{worded:?}"
        );
    }
}
