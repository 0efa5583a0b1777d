//! Cutting text where a character starts, and reading the lines of a JSON document as the text
//! inside its strings.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// The largest char boundary of `text` at or below `at` (`str::floor_char_boundary`, which
/// needs a newer Rust than the workspace's 1.86).
pub fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or above `at`.
pub fn ceil_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Whether `text` is a JSON object or list, as many tools answer (Codex's
/// `{"output": "…", "metadata": {"exit_code": 2}}`, a terminal tool's `{"output": …,
/// "exit_code": 1}`): its lines, split at the `\n` escapes, are then read with
/// [`within_json_string`].
pub fn is_json_document(text: &str) -> bool {
    let text = text.trim();
    let bracketed =
        (text.starts_with('{') && text.ends_with('}')) || (text.starts_with('[') && text.ends_with(']'));
    bracketed && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// A line of a JSON document's text, split at its `\n` escapes, as the string it is part of
/// reads: the document's structure before the string (`{"output": "`, on its first line, which
/// `opens_document` says) and after it (`", "metadata": {…}}`, on its last) left out, and the
/// escapes decoded (`\"`, `\\`, `\u2716`). `Found 36 errors in 9 files.", "metadata":
/// {"exit_code": 2}}` reads `Found 36 errors in 9 files.`, and a JSON log line inside the string
/// (`{\"level\": \"ERROR\"}`) reads as the log wrote it (`{"level": "ERROR"}`).
pub fn within_json_string(line: &str, opens_document: bool) -> Cow<'_, str> {
    let bytes = line.as_bytes();
    // The line that opens the document starts inside its structure: the text starts after the
    // first string value's opening quote.
    let mut start = 0;
    if opens_document {
        match string_value_start(line) {
            Some(at) => start = at,
            None => return Cow::Borrowed(line),
        }
    }
    let mut end = line.len();
    let mut escaped = false;
    let mut at = start;
    while at < bytes.len() {
        match bytes[at] {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => {
                end = at;
                break;
            }
            _ => {}
        }
        at += 1;
    }
    let text = &line[start..end];
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(unescape(text))
}

/// The lines of `text` as it reads: a JSON document's ([`is_json_document`]) split at its `\n`
/// escapes and read with [`within_json_string`], any other text's as they are.
pub fn reading_lines(text: &str) -> Box<dyn Iterator<Item = Cow<'_, str>> + '_> {
    if !is_json_document(text) {
        return Box::new(text.lines().map(Cow::Borrowed));
    }
    let text = text.trim();
    let mut pieces = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut at) = (0, 0);
    while at + 1 < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        // `\n` and `\r` end a line; another escape (`\"`, `\\`) is kept whole, so that the `n`
        // of an escaped backslash's `\\n` ends none.
        if matches!(bytes[at + 1], b'n' | b'r') {
            pieces.push(&text[start..at]);
            start = at + 2;
        }
        at += 2;
    }
    pieces.push(&text[start..]);
    Box::new(
        pieces
            .into_iter()
            .enumerate()
            .map(|(index, line)| within_json_string(line, index == 0)),
    )
}

/// Where the first string value of a JSON document's opening line starts: after `"key": "`.
fn string_value_start(line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(colon) = line[from..].find("\":") {
        let after = from + colon + 2;
        let value = line[after..].trim_start();
        if value.starts_with('"') {
            return Some(line.len() - value.len() + 1);
        }
        from = after;
    }
    // A list of strings: `["first line`.
    let rest = line[1..].trim_start();
    rest.starts_with('"').then(|| line.len() - rest.len() + 1)
}

/// JSON string escapes decoded; an escape that is not one is kept as written.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('/') => out.push('/'),
            Some('t') => out.push('\t'),
            Some('n' | 'r') => out.push(' '),
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) if hex.len() == 4 => {
                        out.push(decoded);
                        chars.nth(3);
                    }
                    _ => out.push_str("\\u"),
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `text` without the terminal's colour and cursor codes a tool printed (`\x1b[31mFAILED\x1b[0m`),
/// nor what is left of them when an export dropped the escape character (`[2m…[22m`): they cost
/// tokens and say nothing to a model. A range in brackets is no colour code: PromQL's `[5m]` and
/// `[5m:1m]` stay.
pub fn without_terminal_codes(text: &str) -> Cow<'_, str> {
    static CODES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:\x1b\[[0-9;?]*[A-Za-z]|\[[0-9]{1,3}(?:;[0-9]{1,3})*m)+")
            .expect("the terminal code pattern compiles")
    });
    let mut plain = String::new();
    let mut kept_to = 0;
    for codes in CODES.find_iter(text) {
        let escaped = codes.as_str().contains('\x1b');
        let a_range = text[codes.end()..].starts_with([']', ':']);
        if escaped || !a_range {
            plain.push_str(&text[kept_to..codes.start()]);
            kept_to = codes.end();
        }
    }
    if kept_to == 0 {
        return Cow::Borrowed(text);
    }
    plain.push_str(&text[kept_to..]);
    Cow::Owned(plain)
}

/// `text`'s words on one line, one space between them.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` when it has at most `max` characters, else its start and its end, about half each,
/// around `…`: an answer opens with what was asked and often ends with what it comes to
/// (`Platform total ~$4,230/month`).
pub fn head_and_tail(text: &str, max: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= max {
        return Cow::Borrowed(text);
    }
    let half = max / 2;
    let head_end = text.char_indices().nth(half).map_or(text.len(), |(at, _)| at);
    let tail_from = text
        .char_indices()
        .nth(count - half)
        .map_or(text.len(), |(at, _)| at);
    // The start ends at a word's end, when one ends soon before: a number cut in two reads as
    // another (verify33: `int8 scalar quantization is 20 … GB` for 20.48 GB). A long word cut
    // (a URL, a path) is kept whole when it ends soon after (verify41: `(https://appstoreconnect
    // .apple.com/apps/1588822101/testf …`).
    let head = if text[head_end..].starts_with(char::is_whitespace) {
        &text[..head_end]
    } else {
        match text[..head_end].rfind(char::is_whitespace) {
            Some(space) if space >= head_end / 2 => &text[..space],
            _ => {
                let word_end = text[head_end..]
                    .find(char::is_whitespace)
                    .map_or(text.len(), |at| head_end + at);
                if word_end - head_end > WORD_SLACK {
                    &text[..head_end]
                } else if word_end >= tail_from {
                    return Cow::Borrowed(text);
                } else {
                    &text[..word_end]
                }
            }
        }
    };
    let tail = &text[tail_from..];
    // The end starts at a word, when one starts in its first half; else at the start of the long
    // word it cuts, when that starts soon before.
    let starts_a_word = text[..tail_from].ends_with(char::is_whitespace);
    let tail = match tail.find(char::is_whitespace) {
        _ if starts_a_word => tail,
        Some(space) if space < tail.len() / 2 => tail[space..].trim_start(),
        _ => {
            let word_start = text[..tail_from]
                .rfind(char::is_whitespace)
                .map_or(0, |space| space + 1);
            if tail_from - word_start <= WORD_SLACK && word_start > head.len() {
                &text[word_start..]
            } else {
                tail
            }
        }
    };
    Cow::Owned(format!("{} … {tail}", head.trim_end()))
}

/// How far past its half [`head_and_tail`] reaches for the rest of a long word it would cut.
const WORD_SLACK: usize = 80;

/// `path` (a slice of `text`) with the partition folders before it that the tokens split at their
/// `=`: `orders/dt=2024-03-17/part-00000.parquet`, not `2024-03-17/part-00000.parquet`, which is
/// no path a continuing agent can open (verify18). Only a column's name after a `/`, or a
/// lowercase one opening the word (`dt=2024-03-17/…`), counts: not an option's
/// (`--config=conf/x.yaml`), nor a variable given an absolute path (`PATH=/usr/bin`).
pub fn with_partition_prefix<'a>(text: &'a str, path: &'a str) -> &'a str {
    let bytes = text.as_bytes();
    let Some(start) = (path.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
        return path;
    };
    if path.starts_with('/') || start > bytes.len() {
        return path;
    }
    let is_path_byte = |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'@' | b'-');
    let mut at = start;
    while at > 1 && bytes[at - 1] == b'=' {
        let key_end = at - 1;
        let mut key = key_end;
        while key > 0 && (bytes[key - 1].is_ascii_alphanumeric() || bytes[key - 1] == b'_') {
            key -= 1;
        }
        if key == key_end {
            break;
        }
        if key > 0 && bytes[key - 1] == b'/' {
            // The folders before the column, up to the word's start or the previous column.
            let mut folder = key - 1;
            while folder > 0 && (is_path_byte(bytes[folder - 1]) || bytes[folder - 1] == b'/') {
                folder -= 1;
            }
            at = folder;
        } else {
            let opens_word = key == 0 || !(is_path_byte(bytes[key - 1]) || bytes[key - 1] == b'/');
            if opens_word && bytes[key..key_end].iter().all(|byte| !byte.is_ascii_uppercase()) {
                at = key;
            }
            break;
        }
    }
    if at == start || bytes[at] == b'-' {
        return path;
    }
    &text[at..start + path.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Colour codes go, with or without their escape character; a list index or a count in
    /// brackets stays.
    #[test]
    fn terminal_codes_are_dropped_and_brackets_kept() {
        assert_eq!(
            without_terminal_codes("\x1b[1m\x1b[31mFAILED\x1b[0m tests/test_api.py::test_login"),
            "FAILED tests/test_api.py::test_login"
        );
        assert_eq!(
            without_terminal_codes("[2m Test Files [22m [1m[31m1 failed[39m[22m"),
            " Test Files  1 failed"
        );
        let plain = "rows[2] = 3; [2 images sent with it] [m] rate(http_requests_total[5m]) [5m:1m]";
        assert_eq!(without_terminal_codes(plain), plain);
    }

    /// A long answer keeps its start and its end, each cut between words: a number is kept whole
    /// or not at all (verify33: `int8 scalar quantization is 20 … GB` for 20.48 GB).
    #[test]
    fn head_and_tail_cuts_between_words() {
        let answer = "Answer: with 1536-dim float32 vectors the index needs 81.92 GB of RAM; with int8 scalar quantization it is 20.48 GB, which fits the 32 GB plan with room for growth.";
        assert_eq!(head_and_tail(answer, 400), answer);
        for max in 30..answer.len() {
            let cut = head_and_tail(answer, max);
            let (head, tail) = cut.split_once(" … ").expect("cut");
            assert!(answer.starts_with(head), "{cut}");
            assert!(answer.ends_with(tail), "{cut}");
            for part in [head, tail] {
                for word in part.split_whitespace() {
                    assert!(
                        answer.split_whitespace().any(|whole| whole == word),
                        "{max}: {word} in {cut}"
                    );
                }
            }
        }
    }

    /// A URL the cut would split is kept whole when it ends soon after (verify41).
    #[test]
    fn head_and_tail_keeps_a_url_whole() {
        let answer = "iOS 4.12.0 (4120) is uploaded to TestFlight (https://appstoreconnect.apple.com/apps/1588822101/testflight/ios). The signing step now works with certificate 7HX2M9QP4R. The Crashlytics dSYM upload still fails with HTTP 403, so crash reports will not be symbolicated.";
        let cut = head_and_tail(answer, 200);
        assert!(
            cut.contains("(https://appstoreconnect.apple.com/apps/1588822101/testflight/ios)."),
            "{cut}"
        );
        assert!(cut.ends_with("will not be symbolicated."), "{cut}");
    }

    #[test]
    fn a_partitioned_path_keeps_its_partition_folders() {
        let with = |text: &str, path: &str| {
            let at = text.rfind(path).unwrap();
            with_partition_prefix(text, &text[at..at + path.len()]).to_owned()
        };
        assert_eq!(
            with(
                "2024-04-01 00:10:22 49.0 MiB orders/dt=2024-03-16/part-00000-b6589fc6.snappy.parquet",
                "2024-03-16/part-00000-b6589fc6.snappy.parquet"
            ),
            "orders/dt=2024-03-16/part-00000-b6589fc6.snappy.parquet"
        );
        assert_eq!(
            with(
                "ls lake/events/year=2024/month=03/part-1.parquet",
                "03/part-1.parquet"
            ),
            "lake/events/year=2024/month=03/part-1.parquet"
        );
        assert_eq!(
            with("dt=2024-03-16/part-0.parquet", "2024-03-16/part-0.parquet"),
            "dt=2024-03-16/part-0.parquet"
        );
        // An option's value, a variable's absolute path, an upper-case variable: as they were.
        assert_eq!(
            with("dbt --config=conf/staging.yaml", "conf/staging.yaml"),
            "conf/staging.yaml"
        );
        assert_eq!(with("PATH=/usr/local/bin", "/usr/local/bin"), "/usr/local/bin");
        assert_eq!(
            with("OUT_DIR=target/debug/out", "target/debug/out"),
            "target/debug/out"
        );
    }

    #[test]
    fn a_json_documents_lines_read_as_their_strings() {
        let document = r#"{"output": "src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'.\nFound 36 errors in 9 files.", "metadata": {"exit_code": 2, "duration_seconds": 1.2}}"#;
        assert!(is_json_document(document));
        let lines: Vec<&str> = document.split("\\n").collect();
        assert_eq!(
            within_json_string(lines[0], true),
            "src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'."
        );
        assert_eq!(within_json_string(lines[1], false), "Found 36 errors in 9 files.");
        assert_eq!(
            within_json_string(
                r#"{"exit_code": 1, "output": "\u2716 15 problems (9 errors)"#,
                true
            ),
            "\u{2716} 15 problems (9 errors)"
        );
        assert_eq!(
            within_json_string(r#"["Traceback (most recent call last):"#, true),
            "Traceback (most recent call last):"
        );
        assert_eq!(
            within_json_string("KeyError: 'tenure_months'", false),
            "KeyError: 'tenure_months'"
        );
        // A JSON log line inside the output's string, past its first line, reads as logged.
        assert_eq!(
            within_json_string(
                r#"{\"ts\": \"03:12:13Z\", \"level\": \"ERROR\", \"msg\": \"HikariPool-1 timed out\"}"#,
                false
            ),
            r#"{"ts": "03:12:13Z", "level": "ERROR", "msg": "HikariPool-1 timed out"}"#
        );
    }

    #[test]
    fn text_that_only_looks_like_json_is_no_document() {
        assert!(!is_json_document("{ not json }"));
        assert!(!is_json_document("ERROR: {\"a\": 1}"));
        assert!(is_json_document(" [\"a\", \"b\"]\n"));
    }
}
