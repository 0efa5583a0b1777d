//! Finding what a summary must keep: requests, constraints, tool actions and their outcomes, error
//! lines, and every path, command, URL and identifier.
//!
//! One pass over the middle, linear in its size: every body is scanned at most to the
//! serialisation cap (its first 4,000 and last 1,500 bytes), tokens are classified by hand, and
//! the few regexes (error markers, constraint and decision words, code spans) are compiled once.

use std::{borrow::Cow, sync::LazyLock};

use ctxhost_engine_abi::{part_text, Content, Message, Role, ToolCall};
use ctxhost_engine_kit::stand_in::describe_tool_output;
use regex::Regex;
use serde_json::Value;

use super::is_summary_text;
use crate::scan::{
    capped_pieces, classify_token, for_each_token, line_around, sentence_around, tool_kind, FastMap, ToolKind,
};

/// What kind of identifier a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FactKind {
    Path,
    Url,
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
}

#[derive(Clone, Debug)]
pub(crate) struct Request<'a> {
    pub index: usize,
    pub text: Cow<'a, str>,
    /// An assistant answered it in text before the next request.
    pub answered: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Sentence<'a> {
    pub index: usize,
    pub text: &'a str,
}

#[derive(Clone, Debug)]
pub(crate) struct Action<'a> {
    pub index: usize,
    /// One line, built like a stand-in: ``[terminal] ran `make` -> exit 2, 14 lines output``.
    pub line: String,
    pub failed: bool,
    /// Tool and main argument: a later success with the same key resolves a failure.
    pub key: String,
    pub first_error: Option<&'a str>,
    /// The result arrived (a call whose result is gone has none).
    pub answered: bool,
    /// Described on its own line; older actions beyond the scan budget are only counted.
    pub itemised: bool,
    /// The tool's name.
    pub tool: &'a str,
    /// The facts this action names: its command, its path, its first error.
    pub fact_ids: Vec<usize>,
}

/// Everything [`extract_facts`] found, in the order it appeared.
#[derive(Debug, Default)]
pub(crate) struct Facts<'a> {
    pub requests: Vec<Request<'a>>,
    pub constraints: Vec<Sentence<'a>>,
    pub decisions: Vec<Sentence<'a>>,
    pub actions: Vec<Action<'a>>,
    pub facts: Vec<Fact<'a>>,
    by_text: FastMap<Cow<'a, str>, usize>,
    /// The latest request is still being worked on when the middle ends; the actions from
    /// `in_progress_from` on belong to it.
    pub open_at_end: bool,
    pub in_progress_from: usize,
    /// For each message: whether it is about the focus topic (empty without one).
    pub focus: Vec<bool>,
}

static ERROR_MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        "error|Error|ERROR|Exception|exception|Traceback|FAILED|FAIL:|failed|Failed|failure|panicked|\
         fatal|Fatal|FATAL|No such file|not found|Not found|denied|refused|Segmentation fault|\
         Cannot |cannot |undefined|Undefined|timed out|Timeout|non-zero",
    )
    .expect("error marker pattern compiles")
});

static CONSTRAINT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:must|mustn't|don't|do not|never|always|prefer|avoid|make sure|ensure|shouldn't|should not|no more than|at most|at least|without|only)\b",
    )
    .expect("constraint pattern compiles")
});

static DECISION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:decided|decide to|chose|going with|go with|will use|I'll use|we'll use|switch(?:ed)? to|instead of|root cause|the fix|fixed by|the (?:problem|issue|bug) (?:is|was)|turns out|caused by|because)\b",
    )
    .expect("decision pattern compiles")
});

static CODE_SPAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{2,160})`").expect("code span pattern compiles"));

/// Words a command line starts with, to tell a command in a code span from a name.
const COMMAND_WORDS: &[&str] = &[
    "cargo",
    "git",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "python",
    "python3",
    "pytest",
    "make",
    "cmake",
    "go",
    "rustc",
    "rustup",
    "node",
    "deno",
    "bun",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "ls",
    "cd",
    "cat",
    "grep",
    "rg",
    "find",
    "sed",
    "awk",
    "curl",
    "wget",
    "ssh",
    "chmod",
    "mkdir",
    "rm",
    "mv",
    "cp",
    "tar",
    "uv",
    "poetry",
    "bundle",
    "gradle",
    "mvn",
    "dotnet",
    "gcc",
    "clang",
    "sudo",
    "apt",
    "apt-get",
    "brew",
    "systemctl",
    "journalctl",
    "export",
    "bash",
    "sh",
    "tox",
    "ruff",
    "mypy",
    "eslint",
    "tsc",
    "jest",
    "vitest",
    "gh",
];

/// The longest constraint or decision sentence kept, in bytes.
const MAX_SENTENCE: usize = 300;
/// The longest error line kept, in bytes.
const MAX_ERROR_LINE: usize = 300;
/// Argument lists up to this long are read even beyond the scan budget.
const MAX_UNSCANNED_ARGUMENTS: usize = 1_000;
/// Argument strings longer than this are content (a file being written), not identifiers.
const MAX_ARGUMENT_SCANNED: usize = 400;

impl<'a> Facts<'a> {
    /// Whether message `index` is about the focus topic.
    pub(crate) fn is_focus(&self, index: usize) -> bool {
        self.focus.get(index).copied().unwrap_or(false)
    }

    fn add(&mut self, kind: FactKind, text: Cow<'a, str>, source: Source, index: usize) -> usize {
        let focus = self.is_focus(index);
        if let Some(&at) = self.by_text.get(text.as_ref()) {
            let fact = &mut self.facts[at];
            fact.last_seen = fact.last_seen.max(index);
            fact.source = fact.source.min(source);
            fact.focus |= focus;
            return at;
        }
        let at = self.facts.len();
        self.by_text.insert(text.clone(), at);
        self.facts.push(Fact {
            kind,
            text,
            source,
            last_seen: index,
            verbs: 0,
            focus,
        });
        at
    }

    fn add_verb(&mut self, path: &str, verb: u8, index: usize) -> usize {
        let at = self.add(
            FactKind::Path,
            Cow::Owned(path.to_owned()),
            Source::Arguments,
            index,
        );
        self.facts[at].verbs |= verb;
        at
    }

    /// Whether some fact reads exactly `text`.
    pub(crate) fn contains_text(&self, text: &str) -> bool {
        self.by_text.contains_key(text)
    }

    /// The fact that reads exactly `text`.
    pub(crate) fn id_of(&self, text: &str) -> Option<usize> {
        self.by_text.get(text).copied()
    }

    /// Paths, URLs, hashes, issue numbers and versions in `text`.
    fn scan_identifiers(&mut self, text: &'a str, source: Source, index: usize) {
        for_each_token(text, |token| {
            if let Some((kind, fact)) = classify_token(token) {
                self.add(kind, Cow::Borrowed(fact), source, index);
            }
        });
    }

    /// Error lines in `text`, each once; returns the most telling (an `…Error: …` line over a
    /// `Traceback` or summary line).
    fn scan_errors(&mut self, text: &'a str, source: Source, index: usize) -> Option<&'a str> {
        let mut best: Option<(u8, &'a str)> = None;
        let mut from = 0;
        while let Some(found) = ERROR_MARKERS.find_at(text, from) {
            let (line, line_end) = line_around(text, found.start(), found.end());
            from = line_end.max(found.end());
            let line = cut_at(line.trim(), MAX_ERROR_LINE);
            if line.len() < 6 || is_false_alarm(line) {
                continue;
            }
            self.add(FactKind::Error, Cow::Borrowed(line), source, index);
            let score = error_line_score(line);
            if best.is_none_or(|(best_score, _)| score > best_score) {
                best = Some((score, line));
            }
        }
        best.map(|(_, line)| line)
    }

    /// Commands and names written in code spans, and `$ command` lines.
    fn scan_code(&mut self, text: &'a str, source: Source, index: usize) {
        for span in CODE_SPAN.captures_iter(text) {
            let code = span.get(1).map_or("", |code| code.as_str()).trim();
            if code.len() < 2 {
                continue;
            }
            let first_word = code.split_whitespace().next().unwrap_or("");
            if COMMAND_WORDS.contains(&first_word) || first_word.starts_with("./") {
                self.add(FactKind::Command, Cow::Borrowed(code), source, index);
            } else if code.split_whitespace().count() <= 3 {
                self.add(FactKind::Name, Cow::Borrowed(code), source, index);
            }
        }
        for line in text.lines() {
            if let Some(command) = line.trim_start().strip_prefix("$ ") {
                let command = command.trim();
                if !command.is_empty() {
                    self.add(FactKind::Command, Cow::Borrowed(command), source, index);
                }
            }
        }
    }

    fn sentences(text: &'a str, words: &Regex, index: usize, into: &mut Vec<Sentence<'a>>) {
        let mut from = 0;
        while let Some(found) = words.find_at(text, from) {
            let (sentence, end) = sentence_around(text, found.start(), found.end(), MAX_SENTENCE);
            from = end.max(found.end());
            let sentence = sentence.trim();
            if sentence.len() >= 12 && !into.iter().rev().take(8).any(|seen| seen.text == sentence) {
                into.push(Sentence {
                    index,
                    text: sentence,
                });
            }
        }
    }

    fn on_user(&mut self, index: usize, message: &'a Message) {
        let text = message.text();
        if text.trim().is_empty() || is_summary_text(&text) {
            return;
        }
        self.requests.push(Request {
            index,
            text,
            answered: false,
        });
        self.open_at_end = true;
        self.in_progress_from = self.actions.len();
        for piece in capped_pieces(message) {
            self.scan_identifiers(piece, Source::User, index);
            self.scan_errors(piece, Source::User, index);
            self.scan_code(piece, Source::User, index);
            Self::sentences(piece, &CONSTRAINT_WORDS, index, &mut self.constraints);
        }
    }

    fn on_assistant(
        &mut self,
        index: usize,
        message: &'a Message,
        slots: &mut FastMap<&'a str, usize>,
        scan: bool,
    ) {
        let answers = !message.has_tool_calls() && !message.text().trim().is_empty();
        if answers {
            if let Some(request) = self.requests.last_mut() {
                request.answered = true;
            }
            self.open_at_end = false;
        }
        if scan {
            for piece in capped_pieces(message) {
                // Error words in the assistant's prose are explanations, not error lines.
                self.scan_identifiers(piece, Source::Assistant, index);
                self.scan_code(piece, Source::Assistant, index);
                Self::sentences(piece, &DECISION_WORDS, index, &mut self.decisions);
            }
        }
        for call in message.calls() {
            slots.insert(call.id.as_str(), self.actions.len());
            let action = self.on_call(index, call, scan);
            self.actions.push(action);
        }
    }

    fn on_call(&mut self, index: usize, call: &'a ToolCall, scan: bool) -> Action<'a> {
        let name = call.function.name.as_str();
        let kind = tool_kind(name);
        // Beyond the scan budget only small argument lists are read (for the command or path).
        let readable = scan || call.function.arguments.len() <= MAX_UNSCANNED_ARGUMENTS;
        let arguments: Option<Value> = readable
            .then(|| serde_json::from_str(&call.function.arguments).ok())
            .flatten();
        let string_arg = |keys: &[&str]| -> Option<String> {
            let object = arguments.as_ref()?.as_object()?;
            keys.iter()
                .filter_map(|key| object.get(*key)?.as_str())
                .find(|value| !value.trim().is_empty())
                .map(str::to_owned)
        };
        let command = (kind == ToolKind::Shell)
            .then(|| string_arg(&["command", "cmd", "script", "input"]))
            .flatten();
        let path = string_arg(&["path", "file_path", "filename", "file", "target_file"]);
        let mut fact_ids = Vec::new();
        if let Some(command) = &command {
            fact_ids.push(self.add(
                FactKind::Command,
                Cow::Owned(command.clone()),
                Source::Arguments,
                index,
            ));
        }
        if let Some(path) = path
            .as_deref()
            .filter(|path| !matches!(*path, "." | "./" | "/" | "~"))
        {
            let verb = match kind {
                ToolKind::Read => verbs::READ,
                ToolKind::Write => verbs::CHANGED,
                ToolKind::Search => verbs::SEARCHED,
                _ => 0,
            };
            fact_ids.push(self.add_verb(path, verb, index));
        }
        // Identifiers inside short argument values (long ones are content being written).
        if let Some(arguments) = arguments.as_ref().filter(|_| scan) {
            let mut strings = Vec::new();
            collect_short_strings(arguments, &mut strings);
            for text in strings {
                for_each_token(text, |token| {
                    if let Some((kind, fact)) = classify_token(token) {
                        self.add(kind, Cow::Owned(fact.to_owned()), Source::Arguments, index);
                    }
                });
            }
        }
        let key = match &command {
            Some(command) => format!("{name}\u{0}{}", program_of(command)),
            None => format!(
                "{name}\u{0}{}",
                path.as_deref().unwrap_or(&call.function.arguments)
            ),
        };
        Action {
            index,
            line: format!("[{name}] called; its result is not kept"),
            failed: false,
            key,
            first_error: None,
            answered: false,
            fact_ids,
            itemised: scan,
            tool: name,
        }
    }

    fn on_result(
        &mut self,
        index: usize,
        message: &'a Message,
        call: Option<&'a ToolCall>,
        slot: Option<usize>,
        scan: bool,
    ) {
        if !scan {
            if let Some(slot) = slot {
                self.actions[slot].answered = true;
            }
            return;
        }
        let output = message.text();
        let kind = call.map_or(ToolKind::Other, |call| tool_kind(&call.function.name));
        let line = action_line(call, kind, &output);
        let source = if kind == ToolKind::Read {
            Source::FileContent
        } else {
            Source::ToolOutput
        };
        let mut first_error = None;
        for piece in capped_pieces(message) {
            self.scan_identifiers(piece, source, index);
            let error = self.scan_errors(piece, source, index);
            first_error = match (first_error, error) {
                (Some(kept), Some(new)) if error_line_score(new) > error_line_score(kept) => Some(new),
                (kept, new) => kept.or(new),
            };
        }
        let failed = match exit_code_in(&line) {
            Some(code) => code != 0,
            None if kind == ToolKind::Read => false,
            None if kind == ToolKind::Shell => first_error.is_some(),
            None => starts_with_failure(&output),
        };
        let error_id = first_error.and_then(|error| self.id_of(error));
        match slot {
            Some(slot) => {
                let action = &mut self.actions[slot];
                action.line = line;
                action.failed = failed;
                action.first_error = first_error;
                action.answered = true;
                action.fact_ids.extend(error_id);
            }
            None => self.actions.push(Action {
                index,
                line,
                failed,
                key: format!("orphan{index}"),
                first_error,
                answered: true,
                fact_ids: error_id.into_iter().collect(),
                itemised: true,
                tool: call.map_or("tool", |call| call.function.name.as_str()),
            }),
        }
    }
}

/// One line for a tool action and its outcome: kit's stand-in for shell, read and search tools;
/// for the others, what they acted on and, when it is short, what they answered.
fn action_line(call: Option<&ToolCall>, kind: ToolKind, output: &str) -> String {
    let Some(call) = call.filter(|_| matches!(kind, ToolKind::Write | ToolKind::Other)) else {
        return describe_tool_output(call, output);
    };
    let name = &call.function.name;
    let arguments: Option<Value> = serde_json::from_str(&call.function.arguments).ok();
    let keys = [
        "path",
        "file_path",
        "url",
        "query",
        "name",
        "id",
        "target",
        "q",
        "topic",
    ];
    let target = arguments.as_ref().and_then(Value::as_object).and_then(|object| {
        keys.iter()
            .filter_map(|key| object.get(*key)?.as_str())
            .find(|value| !value.trim().is_empty() && value.len() <= 200 && !value.contains('\n'))
    });
    let verb = if kind == ToolKind::Write { "changed " } else { "" };
    let target = target
        .map(|target| format!(" {verb}{target}"))
        .unwrap_or_default();
    let output = output.trim();
    if output.len() <= 120 && !output.contains('\n') && !output.is_empty() {
        format!("[{name}]{target} -> {output}")
    } else {
        format!("[{name}]{target} -> {} chars of output", output.chars().count())
    }
}

/// Collects every fact of `middle` (the messages before pruning); `focus_words` (lowercase) mark
/// the messages about a focus topic.
///
/// User messages are always read. The assistant's text and the tool output are read from the
/// newest back until `scan_budget` bytes (at most 5,500 per body) are spent: a summary has room for
/// only so many facts, the newest are worth most, and the cost stays bounded on huge middles.
pub(crate) fn extract_facts<'a>(
    middle: &'a [Message],
    focus_words: &[String],
    scan_budget: usize,
) -> Facts<'a> {
    let mut facts = Facts {
        // With no request in the middle, the work continues one from before it.
        open_at_end: true,
        focus: focus_flags(middle, focus_words),
        ..Facts::default()
    };
    let scan_from = scan_start(middle, scan_budget);
    let mut slots: FastMap<&str, usize> = FastMap::default();
    let mut calls: FastMap<&str, &ToolCall> = FastMap::default();
    for (index, message) in middle.iter().enumerate() {
        let scan = index >= scan_from;
        match message.role {
            Role::User => facts.on_user(index, message),
            Role::Assistant => {
                calls.extend(message.calls().iter().map(|call| (call.id.as_str(), call)));
                facts.on_assistant(index, message, &mut slots, scan);
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or("");
                let slot = slots.remove(id);
                facts.on_result(index, message, calls.get(id).copied(), slot, scan);
            }
            Role::System => {}
        }
    }
    facts
}

/// The first message whose body is read: the newest bodies until `budget` bytes are spent.
fn scan_start(middle: &[Message], budget: usize) -> usize {
    let mut spent = 0;
    for (index, message) in middle.iter().enumerate().rev() {
        if message.role == Role::User {
            continue;
        }
        spent += content_pieces(&message.content)
            .map(|piece| piece.len().min(crate::scan::SCAN_HEAD + crate::scan::SCAN_TAIL))
            .sum::<usize>();
        spent += message
            .calls()
            .iter()
            .map(|call| call.function.arguments.len())
            .sum::<usize>();
        if spent > budget {
            return index + 1;
        }
    }
    0
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

/// Every string in `value` short enough to be an identifier rather than content.
fn collect_short_strings<'v>(value: &'v Value, into: &mut Vec<&'v str>) {
    match value {
        Value::String(text) if text.len() <= MAX_ARGUMENT_SCANNED => into.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_short_strings(item, into)),
        Value::Object(map) => map.values().for_each(|item| collect_short_strings(item, into)),
        _ => {}
    }
}

/// The program a command runs, for telling a retry: its first two words that are not options
/// (`python -m pytest -q tests/x.py` and `python -m pytest` are both `python pytest`).
fn program_of(command: &str) -> String {
    command
        .split_whitespace()
        .filter(|word| !word.starts_with('-'))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The exit code a stand-in line reports (`-> exit 1, …`).
fn exit_code_in(line: &str) -> Option<i64> {
    let rest = line.rsplit_once("-> exit ")?.1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

/// Whether a non-shell tool's output opens with a failure.
fn starts_with_failure(output: &str) -> bool {
    let start: String = output.chars().take(200).collect::<String>().to_ascii_lowercase();
    let start = start.trim_start();
    start.starts_with("error")
        || start.starts_with("failed")
        || start.starts_with("exception")
        || start.contains("\"error\":")
        || start.contains("\"success\": false")
        || start.contains("\"success\":false")
}

/// How telling an error line is: a named error with its message beats a bare marker.
fn error_line_score(line: &str) -> u8 {
    if line.contains("Error:")
        || line.contains("Exception:")
        || line.contains("error[")
        || line.contains("error:")
    {
        3
    } else if line.contains("panicked") || line.contains("FAILED") || line.contains("fatal") {
        2
    } else if line.starts_with("Traceback") {
        0
    } else {
        1
    }
}

/// Lines that mention errors to say there are none.
fn is_false_alarm(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "0 failed",
        "0 errors",
        "0 error",
        "no errors",
        "error: 0",
        "errors: 0",
        "without error",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase))
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

/// The text of a message's content, piece by piece, borrowed.
pub(crate) fn content_pieces(content: &Content) -> impl Iterator<Item = &str> {
    let (text, parts) = match content {
        Content::Null => (None, &[][..]),
        Content::Text(text) => (Some(text.as_str()), &[][..]),
        Content::Parts(parts) => (None, parts.as_slice()),
    };
    text.into_iter().chain(parts.iter().filter_map(part_text))
}
