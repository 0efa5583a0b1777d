//! Behaviour tests: what a user of the engine would notice.

mod corpus;
mod lifecycle;
mod phases;
pub(crate) mod property;
mod reference_scan;
mod retention;
mod story;
mod summarizers;

use std::collections::BTreeSet;
use std::sync::LazyLock;

use ctxhost_engine_abi::{CompressRequest, Engine, Message, ModelInfo, Role, ToolCall};
use ctxhost_engine_kit::sequence::find_sequence_problems;
use regex::Regex;
use serde_json::json;

use crate::{CompactionReport, Compressor, CompressorConfig, SUMMARY_MARKER};

/// 8,000-token window: threshold 4,000, tail budget 800, summaries up to 400 tokens.
pub(crate) const SMALL_WINDOW: u64 = 8_000;

pub(crate) fn text_of(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| message.text().into_owned())
        .collect()
}

/// An engine with small budgets: `context_length` tokens of window, the given protections.
pub(crate) fn engine(context_length: u64, protect_first_n: usize, protect_last_n: usize) -> Compressor {
    let mut engine = Compressor::with_config(CompressorConfig {
        protect_first_n,
        protect_last_n,
        ..CompressorConfig::default()
    });
    engine.update_model(&ModelInfo {
        context_length,
        ..ModelInfo::default()
    });
    engine
}

pub(crate) fn compress(engine: &mut Compressor, messages: Vec<Message>) -> Vec<Message> {
    engine
        .compress(messages, &CompressRequest::default())
        .expect("compress succeeds")
}

pub(crate) fn report(engine: &mut Compressor) -> CompactionReport {
    engine
        .last_compaction()
        .cloned()
        .expect("a compaction was reported")
}

pub(crate) fn assert_valid(messages: &[Message]) {
    let problems = find_sequence_problems(messages);
    assert!(problems.is_empty(), "invalid sequence: {problems:?}");
}

pub(crate) fn summary_of(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|message| message.text().into_owned())
        .find(|text| text.trim_start().starts_with(SUMMARY_MARKER))
        .expect("the output holds a summary")
}

pub(crate) fn shell(id: &str, command: &str) -> Message {
    Message::assistant_calls(vec![ToolCall::new(
        id,
        "terminal",
        json!({ "command": command }).to_string(),
    )])
}

/// A long conversation of user turns and tool groups, `turns` of each, about `size` chars each.
pub(crate) fn long_conversation(turns: usize, size: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a coding agent.")];
    for turn in 0..turns {
        messages.push(Message::user(format!(
            "request {turn}: {}",
            "please look at this. ".repeat(size / 40)
        )));
        messages.push(shell(&format!("t{turn}"), &format!("cargo test -p crate{turn}")));
        messages.push(Message::tool(
            format!("t{turn}"),
            format!("running tests for crate{turn}\n{}", "test ok\n".repeat(size / 8)),
        ));
        messages.push(Message::assistant(format!(
            "turn {turn} done: {}",
            "fine. ".repeat(size / 60)
        )));
    }
    messages
}

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w*|\b[\w-]+\.(?:py|rs|toml|md|txt|json|yaml|cfg)\b").unwrap()
});
static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"https?://[^\s)\]>'"]+"#).unwrap());
static HASH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
static ISSUE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"#\d+\b").unwrap());
static VERSION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bv?\d+\.\d+\.\d+\b").unwrap());
static ERROR_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Error|error|FAILED|Traceback|Exception").unwrap());

/// The facts of `middle` a measurement of retention would count, found independently of the
/// engine's own scanner: paths, commands, error lines, URLs, hashes, issue numbers, versions and
/// the user's requests.
pub(crate) fn middle_facts(middle: &[Message]) -> BTreeSet<String> {
    let mut facts = BTreeSet::new();
    for message in middle {
        let mut texts = vec![message.text().into_owned()];
        for call in message.calls() {
            texts.push(call.function.arguments.clone());
            if let Ok(arguments) = serde_json::from_str::<serde_json::Value>(&call.function.arguments) {
                if let Some(command) = arguments.get("command").and_then(|c| c.as_str()) {
                    facts.insert(command.to_owned());
                }
            }
        }
        if message.role == Role::User {
            facts.insert(message.text().trim().to_owned());
        }
        for text in &texts {
            for regex in [&*PATH, &*URL, &*ISSUE, &*VERSION] {
                facts.extend(
                    regex
                        .find_iter(text)
                        .map(|found| found.as_str().trim_end_matches('.').to_owned()),
                );
            }
            facts.extend(
                HASH.find_iter(text)
                    .map(|found| found.as_str())
                    .filter(|hash| {
                        hash.bytes().any(|b| b.is_ascii_digit())
                            && hash.bytes().any(|b| b.is_ascii_alphabetic())
                    })
                    .map(str::to_owned),
            );
            if message.role == Role::Tool {
                facts.extend(
                    text.lines()
                        .filter(|line| ERROR_LINE.is_match(line))
                        .map(|line| line.trim().to_owned())
                        .filter(|line| !line.is_empty()),
                );
            }
        }
    }
    facts
}

/// The share of `facts` present verbatim in `summary`, and the missing ones.
pub(crate) fn retention(facts: &BTreeSet<String>, summary: &str) -> (f64, Vec<String>) {
    let missing: Vec<String> = facts
        .iter()
        .filter(|fact| !summary.contains(fact.as_str()))
        .cloned()
        .collect();
    let share = 1.0 - missing.len() as f64 / facts.len().max(1) as f64;
    (share, missing)
}
