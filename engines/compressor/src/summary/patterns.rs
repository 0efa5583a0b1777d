//! The words and markers the extractive summarizer looks for, compiled once: error lines,
//! constraints the user states, decisions the assistant states, code spans.

use std::{borrow::Cow, sync::LazyLock};

use regex::Regex;

use super::facts::{cut_at, FactKind, Facts, Sentence, Source};
use crate::scan::{classify_token, for_each_token, line_around, sentence_around};

static ERROR_MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        "error|Error|ERROR|Exception|exception|Traceback|FAILED|FAIL:|failed|Failed|failure|panicked|\
         fatal|Fatal|FATAL|No such file|not found|Not found|denied|refused|Segmentation fault|\
         Cannot |cannot |undefined|Undefined|timed out|Timeout|non-zero",
    )
    .expect("error marker pattern compiles")
});

pub(super) static CONSTRAINT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i-u)\b(?:must|mustn't|don't|do not|never|always|prefer|avoid|make sure|ensure|shouldn't|should not|no more than|at most|at least|without|only)\b",
    )
    .expect("constraint pattern compiles")
});

pub(super) static DECISION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i-u)\b(?:decided|decide to|chose|going with|go with|will use|I'll use|we'll use|switch(?:ed)? to|instead of|root cause|the fix|fixed by|the (?:problem|issue|bug) (?:is|was)|turns out|caused by|because)\b",
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

impl<'a> Facts<'a> {
    /// Paths, URLs, hashes, issue numbers and versions in `text`.
    pub(super) fn scan_identifiers(&mut self, text: &'a str, source: Source, index: usize) {
        for_each_token(text, |token| {
            if let Some((kind, fact)) = classify_token(token) {
                self.add(kind, Cow::Borrowed(fact), source, index);
            }
        });
    }

    /// Error lines in `text`, each once; returns the most telling (an `…Error: …` line over a
    /// `Traceback` or summary line).
    pub(super) fn scan_errors(&mut self, text: &'a str, source: Source, index: usize) -> Option<&'a str> {
        let mut best: Option<(u8, &'a str)> = None;
        let mut from = 0;
        while let Some(found) = ERROR_MARKERS.find_at(text, from) {
            // `"error": null` in a tool's JSON answer says there was none.
            let after = &text[found.end()..];
            if found.as_str() == "error" && (after.starts_with("\": null") || after.starts_with("\":null")) {
                from = found.end();
                continue;
            }
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
    pub(super) fn scan_code(&mut self, text: &'a str, source: Source, index: usize) {
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

    pub(super) fn sentences(text: &'a str, words: &Regex, index: usize, into: &mut Vec<Sentence<'a>>) {
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
}

/// How telling an error line is: a named error with its message beats a bare marker.
pub(super) fn error_line_score(line: &str) -> u8 {
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
