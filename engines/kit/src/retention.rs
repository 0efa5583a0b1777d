//! Fact retention: of the identifiers in the part of a conversation an engine compacted, the share
//! still present verbatim in its result.
//!
//! The facts are what a person would need to carry on: file paths, commands, error lines, URLs,
//! hashes, numbered issues, versions, and the user's own requests. The measure is independent of
//! any engine or summarizer, so it can compare them: a summary that paraphrases `src/app.py` as
//! "the app module" has lost the fact.

use std::{collections::BTreeSet, sync::LazyLock};

use ctxhost_engine_abi::{Message, Role};
use regex::Regex;
use serde::Serialize;

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
}

/// How many lost facts a [`Retention`] lists.
pub const MAX_LISTED_LOSSES: usize = 20;

/// Longest fact text kept, in characters; longer lines are cut (at a character boundary).
const MAX_FACT_CHARS: usize = 200;

/// Bodies over this many characters are read as their first 4,000 and last 1,500, as the
/// compressor serialises them for a summarizer: it bounds the cost on huge outputs.
const BODY_CUT_CHARS: usize = 6_000;

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\.{0,2}/)?(?:[A-Za-z0-9_.@-]+/)+[A-Za-z0-9_.@-]+\.[A-Za-z0-9]{1,8}\b|/(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+")
        .expect("path pattern compiles")
});
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"https?://[^\s<>"'`)\]]+"#).expect("url pattern compiles"));
static HASH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[0-9a-f]{7,40}\b").expect("hash pattern compiles"));
static ISSUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#[0-9]{1,7}\b").expect("issue pattern compiles"));
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bv?[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.]+)?\b").expect("version pattern compiles")
});
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^.*(?:\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\berror(?:\[E[0-9]+\])?:|\bFAILED\b|\bTraceback\b|\bpanicked at\b|\bfatal:).*$")
        .expect("error pattern compiles")
});

/// Every distinct fact in `messages`.
pub fn find_facts(messages: &[Message]) -> BTreeSet<Fact> {
    let mut facts = BTreeSet::new();
    for message in messages {
        let text = message.text();
        let body = cut_body(&text);
        collect_text_facts(&body, &mut facts);
        if message.role == Role::User {
            if let Some(request) = body.lines().map(str::trim).find(|line| !line.is_empty()) {
                facts.insert(fact(FactKind::Request, request));
            }
        }
        for call in message.calls() {
            collect_text_facts(&call.function.arguments, &mut facts);
            if let Some(command) = command_of(&call.function.arguments) {
                facts.insert(fact(FactKind::Command, &command));
            }
        }
    }
    facts
}

/// Measures how many facts of `compacted` (the messages an engine replaced or dropped) survive
/// verbatim somewhere in `result`.
pub fn measure_retention(compacted: &[Message], result: &[Message]) -> Retention {
    let facts = find_facts(compacted);
    let haystack = searchable_text(result);
    let mut kept = 0;
    let mut lost = Vec::new();
    for fact in &facts {
        if haystack.contains(fact.text.as_str()) {
            kept += 1;
        } else if lost.len() < MAX_LISTED_LOSSES {
            lost.push(fact.clone());
        }
    }
    let share = if facts.is_empty() {
        1.0
    } else {
        kept as f64 / facts.len() as f64
    };
    Retention {
        total: facts.len(),
        kept,
        share,
        lost,
    }
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
    let patterns: [(&Regex, FactKind); 6] = [
        (&URL, FactKind::Url),
        (&PATH, FactKind::Path),
        (&HASH, FactKind::Hash),
        (&ISSUE, FactKind::Issue),
        (&VERSION, FactKind::Version),
        (&ERROR_LINE, FactKind::Error),
    ];
    for (pattern, kind) in patterns {
        for found in pattern.find_iter(text) {
            let found = found.as_str().trim();
            let is_url_part = kind == FactKind::Path && found.contains("://");
            let is_plain_number = kind == FactKind::Hash && !found.bytes().any(|b| b.is_ascii_alphabetic());
            let is_word = kind == FactKind::Hash && !found.bytes().any(|b| b.is_ascii_digit());
            if !found.is_empty() && !is_url_part && !is_plain_number && !is_word {
                facts.insert(fact(kind, found.trim_end_matches(['.', ',', ';', ':'])));
            }
        }
    }
}

/// The shell command in a tool call's arguments, when it has one.
fn command_of(arguments: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    ["command", "cmd"]
        .iter()
        .find_map(|key| Some(value.get(*key)?.as_str()?.trim().to_owned()))
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

fn cut_body(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= BODY_CUT_CHARS || text.chars().count() <= BODY_CUT_CHARS {
        return std::borrow::Cow::Borrowed(text);
    }
    let head: String = text.chars().take(4_000).collect();
    let tail: String = text
        .chars()
        .rev()
        .take(1_500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    std::borrow::Cow::Owned(format!("{head}\n{tail}"))
}

/// Everything the model reads in `messages`, tool-call arguments included, in one string.
fn searchable_text(messages: &[Message]) -> String {
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
    fn retention_counts_facts_kept_verbatim_and_lists_the_lost() {
        let compacted = vec![Message::user("Fix src/app.py and src/db.py (see #12)")];
        let result = vec![Message::assistant("Summary: working on src/app.py for #12.")];
        let retention = measure_retention(&compacted, &result);
        assert_eq!(retention.total, 4, "{retention:?}");
        assert_eq!(retention.kept, 2);
        assert_eq!(retention.share, 0.5);
        let lost: Vec<&str> = retention.lost.iter().map(|fact| fact.text.as_str()).collect();
        assert_eq!(lost, ["src/db.py", "Fix src/app.py and src/db.py (see #12)"]);
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
}
