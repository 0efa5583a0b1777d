//! A regex tried on a stored message's raw JSON before its text is read: where it finds nothing
//! in the JSON, it can find nothing in the search text, and the row is skipped unread.
//!
//! Reading the search text out of the JSON is most of what a scan costs (the regex on the raw
//! bytes is about ten times cheaper). The skip is safe only when every match in the search text
//! is also a match in the JSON, which holds when all of these do:
//! - The pattern has no assertion (`^`, `$`, `\b`, …): the context of a match differs between the
//!   two.
//! - It cannot match a character JSON writes as a two-character escape (`\n`, `\t`, `\r`, `"`,
//!   `\\`, backspace, form feed), nor U+FFFD (what a byte that is not UTF-8 is read as). A match
//!   then lies within one string value of the JSON, in a run written as itself.
//! - The row has no `\u` or `\/` escape, which could write any character.
//! - The search text is made of whole string values of the row: the row has no tool call whose
//!   `arguments` is not a string (it is searched re-serialised); and, when the pattern can match a
//!   space, no tool calls at all (the search text joins a call's name and arguments with one).
//!   The search text's other separator is a newline, which such a pattern cannot match.
//!
//! A pattern that fails the first two is simply checked on every row's text.

use memchr::memmem::Finder;
use regex::bytes::{Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};

use crate::search::REGEX_SIZE_LIMIT;

/// Characters JSON writes escaped (or the reading makes up), which a pattern must not match.
const NEVER: [char; 8] = ['\n', '\t', '\r', '"', '\\', '\u{8}', '\u{c}', '\u{fffd}'];

/// A pattern's skip test on raw JSON rows.
#[derive(Clone, Debug)]
pub struct RawFilter {
    raw: BytesRegex,
    /// The pattern can match a space.
    space: bool,
    finders: Finders,
}

/// The byte strings looked for in every row, each searcher built once.
#[derive(Clone, Debug)]
struct Finders {
    unicode: Finder<'static>,
    slash: Finder<'static>,
    tool_calls: Finder<'static>,
    arguments: Finder<'static>,
}

impl RawFilter {
    /// The filter for `pattern`, or `None` when a match in the search text need not show in the
    /// JSON.
    pub fn new(pattern: &str) -> Option<Self> {
        let hir = regex_syntax::ParserBuilder::new().build().parse(pattern).ok()?;
        let mut space = false;
        if !plain(&hir, &mut space) {
            return None;
        }
        let raw = BytesRegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(4 * REGEX_SIZE_LIMIT)
            .build()
            .ok()?;
        Some(Self {
            raw,
            space,
            finders: Finders {
                unicode: Finder::new(br"\u"),
                slash: Finder::new(br"\/"),
                tool_calls: Finder::new(br#""tool_calls""#),
                arguments: Finder::new(br#""arguments""#),
            },
        })
    }

    /// Whether the pattern surely does not match the search text of the stored message `json`.
    pub fn rules_out(&self, json: &[u8]) -> bool {
        let may_match = self.raw.is_match(json)
            || has_wide_escape(json, &self.finders)
            || (self.space && self.finders.tool_calls.find(json).is_some())
            || has_unquoted_arguments(json, &self.finders);
        !may_match
    }
}

/// Whether no match of `hir` holds an assertion or a character of [`NEVER`]; `space` is set when
/// a match can hold a space.
fn plain(hir: &Hir, space: &mut bool) -> bool {
    match hir.kind() {
        HirKind::Empty => true,
        HirKind::Look(_) => false,
        HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
            Ok(text) => {
                *space |= text.contains(' ');
                !text.contains(NEVER)
            }
            Err(_) => false,
        },
        HirKind::Class(Class::Unicode(class)) => class.ranges().iter().all(|range| {
            let holds = |c: char| range.start() <= c && c <= range.end();
            *space |= holds(' ');
            !NEVER.into_iter().any(holds)
        }),
        HirKind::Class(Class::Bytes(class)) => class.ranges().iter().all(|range| {
            let holds = |c: char| u32::from(range.start()) <= c as u32 && c as u32 <= u32::from(range.end());
            *space |= holds(' ');
            range.end() < 0x80 && !NEVER.into_iter().any(holds)
        }),
        HirKind::Repetition(repetition) => plain(&repetition.sub, space),
        HirKind::Capture(capture) => plain(&capture.sub, space),
        HirKind::Concat(all) | HirKind::Alternation(all) => {
            let mut every = true;
            for sub in all {
                every &= plain(sub, space);
            }
            every
        }
    }
}

/// Whether `json` may hold a `\u` or `\/` escape (an escaped backslash before a `u` counts too,
/// which errs towards reading the row).
fn has_wide_escape(json: &[u8], finders: &Finders) -> bool {
    finders.unicode.find(json).is_some() || finders.slash.find(json).is_some()
}

/// Whether some `"arguments"` in `json` is followed by a value that is not a string. Every
/// occurrence counts, even one inside a string value, which errs towards reading the row.
fn has_unquoted_arguments(json: &[u8], finders: &Finders) -> bool {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    finders.arguments.find_iter(json).any(|at| {
        let mut rest = json[at + b"\"arguments\"".len()..]
            .iter()
            .skip_while(|b| blank(b));
        match rest.next() {
            Some(b':') => rest.find(|b| !blank(b)) != Some(&b'"'),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{search::compile_regex, stored_text::search_text_into};

    #[test]
    fn only_patterns_whose_matches_show_in_the_json_are_filtered() {
        for pattern in [
            r"[A-Z]{8}-[A-Z]{5}",
            r"(?i)error rollback",
            r"\d{3}-\d+",
            "é+x",
            "a|b c",
        ] {
            assert!(RawFilter::new(pattern).is_some(), "{pattern}");
        }
        for pattern in [
            r"^error",
            r"\berror\b",
            r"a.b",
            r"a\sb",
            r"[^a]",
            "say \"hi\"",
            r"a\\b",
            "a\nb",
            r"\p{Any}",
        ] {
            assert!(RawFilter::new(pattern).is_none(), "{pattern}");
        }
    }

    /// Rows where the search text and the JSON differ in every way the module names.
    fn rows() -> Vec<Vec<u8>> {
        let mut rows: Vec<Vec<u8>> = [
            r#"{"role":"user","content":"deploy ABCDEFGH-IJKLM now"}"#,
            r#"{"role":"user","content":"line\nABCDEFGH-IJKLM\t\"quoted\" back\\slash"}"#,
            r#"{"role":"user","content":"wide \u0041BCDEFGH-IJKLM"}"#,
            r#"{"role":"user","content":"slash ABCDEFGH\/IJKLM"}"#,
            r#"{"role":"assistant","content":"error","tool_calls":[{"id":"c","type":"function","function":{"name":"error","arguments":"rollback now"}}]}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"run","arguments":{"x":"ABCDEFGH-IJKLM","n":[1, 2]}}}]}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"run","arguments" : {"n":123}}}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"error"},{"type":"text","text":"rollback"}]}"#,
            r#"{"role":"user","content":"error rollback 123-45"}"#,
            r#"{"content":"no role: ABCDEFGH-IJKLM"}"#,
            r#"{"role":"user","content":"ends with a backslash \\"}"#,
        ]
        .iter()
        .map(|row| row.as_bytes().to_vec())
        .collect();
        rows.push(b"{\"role\":\"user\",\"content\":\"bad \xff byte ABCDEFGH-IJKLM\"}".to_vec());
        rows.extend(
            crate::synthetic::conversation(5, 200, 2_000)
                .iter()
                .map(|m| serde_json::to_vec(m).unwrap()),
        );
        rows
    }

    #[test]
    fn a_row_ruled_out_never_matches_its_search_text() {
        let mut text = String::new();
        let mut skipped = 0;
        for pattern in [
            r"[A-Z]{8}-[A-Z]{5}",
            r"(?i)error rollback",
            r"error rollback",
            r"\d{2}-\d+",
            r"run 123",
            r"ABC",
            r"1,2",
            "bad",
            "x*",
            r"(?i)FILE\d+",
        ] {
            let regex = compile_regex(pattern).unwrap();
            let filter = RawFilter::new(pattern).unwrap();
            for row in rows() {
                search_text_into(&row, &mut text);
                if filter.rules_out(&row) {
                    skipped += 1;
                    assert!(
                        !regex.is_match(&text),
                        "{pattern} on {}",
                        String::from_utf8_lossy(&row)
                    );
                }
            }
        }
        assert!(skipped > 1_000, "the filter skips rows: {skipped}");
    }
}
