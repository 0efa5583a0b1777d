//! Cheap text scanning: splitting bodies into tokens, telling paths, URLs, hashes, issue numbers and
//! versions apart, and finding the line or sentence around a match.
//!
//! Hand-written rather than one regex per kind: the scan runs over every tool output of the
//! middle, and a byte loop with a lookup table is several times faster than a regex without a
//! literal prefix. Every look-around is bounded, so the cost stays linear in the text.

use std::hash::{BuildHasher, Hasher};

use ctxhost_engine_abi::Message;

use crate::summary::facts::{content_pieces, FactKind};

/// Bodies longer than this are scanned only at their ends (the serialisation rule)…
const SCAN_MAX: usize = 6_000;
/// …their first bytes…
pub(crate) const SCAN_HEAD: usize = 4_000;
/// …and their last bytes.
pub(crate) const SCAN_TAIL: usize = 1_500;
/// How far a line or sentence is looked for around a match, in bytes.
const LOOK_AROUND: usize = 400;

/// A fast, non-cryptographic hash (the Fx hash of rustc) for the maps filled per token: SipHash
/// cost a third of the scan. The inputs are the user's own transcript, so flooding is no concern.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FastHash;

impl BuildHasher for FastHash {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ rest.len() as u64);
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map with [`FastHash`].
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastHash>;

/// What a tool does, read from its name (the same reading as kit's stand-ins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolKind {
    Shell,
    Read,
    Search,
    Write,
    Other,
}

pub(crate) fn tool_kind(name: &str) -> ToolKind {
    let name = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|word| name.contains(word));
    if has(&["terminal", "bash", "shell", "exec", "command", "run"]) {
        ToolKind::Shell
    } else if has(&["search", "grep", "find", "glob", "lookup"]) {
        ToolKind::Search
    } else if has(&["read", "open", "view", "cat", "scroll", "goto"]) {
        ToolKind::Read
    } else if has(&["write", "edit", "patch", "create", "replace", "insert"]) {
        ToolKind::Write
    } else {
        ToolKind::Other
    }
}

/// A message's text pieces, each cut to its first 4,000 and last 1,500 bytes when over 6,000.
pub(crate) fn capped_pieces(message: &Message) -> impl Iterator<Item = &str> {
    content_pieces(&message.content).flat_map(|piece| {
        let (head, tail) = cap(piece);
        std::iter::once(head).chain(tail)
    })
}

fn cap(text: &str) -> (&str, Option<&str>) {
    if text.len() <= SCAN_MAX {
        return (text, None);
    }
    let head_end = floor_boundary(text, SCAN_HEAD);
    let tail_start = floor_boundary(text, text.len() - SCAN_TAIL);
    (&text[..head_end], Some(&text[tail_start..]))
}

pub(crate) fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

const fn delimiter_table() -> [bool; 256] {
    let mut table = [false; 256];
    let delimiters = b" \t\r\n\"'`()<>[]{},;|";
    let mut i = 0;
    while i < delimiters.len() {
        table[delimiters[i] as usize] = true;
        i += 1;
    }
    table
}

static DELIMITERS: [bool; 256] = delimiter_table();

/// Calls `f` with every token of `text`: runs between whitespace, quotes, brackets, commas and
/// JSON escapes (`\n` inside a JSON string ends a token too).
pub(crate) fn for_each_token<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if DELIMITERS[byte as usize] || byte == b'\\' {
            if i - start >= 3 {
                f(&text[start..i]);
            }
            i += 1;
            // Skip the escaped character of `\n`, `\"`, `\t`… (ASCII only, to stay on a boundary).
            if byte == b'\\' && i < bytes.len() && bytes[i].is_ascii() {
                i += 1;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    if bytes.len() - start >= 3 {
        f(&text[start..]);
    }
}

/// Whether `ext` is an extension that makes a bare word a file name.
fn is_file_extension(ext: &str) -> bool {
    matches!(
        ext,
        "rs" | "py"
            | "pyi"
            | "js"
            | "mjs"
            | "cjs"
            | "ts"
            | "tsx"
            | "jsx"
            | "go"
            | "java"
            | "kt"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "hpp"
            | "cs"
            | "rb"
            | "php"
            | "swift"
            | "md"
            | "txt"
            | "toml"
            | "yaml"
            | "yml"
            | "json"
            | "jsonl"
            | "lock"
            | "cfg"
            | "ini"
            | "conf"
            | "sh"
            | "bash"
            | "zsh"
            | "sql"
            | "html"
            | "css"
            | "scss"
            | "vue"
            | "svelte"
            | "xml"
            | "csv"
            | "log"
            | "env"
            | "proto"
            | "lua"
            | "ex"
            | "exs"
            | "hs"
            | "ml"
            | "scala"
            | "ipynb"
            | "tf"
            | "nix"
            | "gradle"
            | "patch"
            | "diff"
            | "so"
            | "dll"
            | "wasm"
            | "pdf"
            | "png"
            | "jpg"
            | "svg"
            | "gz"
            | "zip"
            | "db"
            | "sqlite"
            | "whl"
    )
}

/// Names that are files without an extension.
const FILE_NAMES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Gemfile",
    "Rakefile",
    "Justfile",
    "Procfile",
];

/// What a token is made of, from one pass over its bytes.
#[derive(Default)]
struct Shape {
    slash: bool,
    dot: bool,
    colon: bool,
    hash: bool,
    at_or_dash: bool,
    equals: bool,
    digit: bool,
    /// Every byte is `0-9a-f`.
    hex: bool,
}

impl Shape {
    fn of(token: &str) -> Self {
        let mut shape = Shape {
            hex: true,
            ..Shape::default()
        };
        for &byte in token.as_bytes() {
            match byte {
                b'/' => shape.slash = true,
                b'.' => shape.dot = true,
                b':' => shape.colon = true,
                b'#' => shape.hash = true,
                b'@' | b'-' => shape.at_or_dash = true,
                b'=' => shape.equals = true,
                b'0'..=b'9' => shape.digit = true,
                _ => {}
            }
            shape.hex &= matches!(byte, b'0'..=b'9' | b'a'..=b'f');
        }
        shape
    }
}

/// The kind of identifier `token` is, and the part of it to keep.
pub(crate) fn classify_token(token: &str) -> Option<(FactKind, &str)> {
    let shape = Shape::of(token);
    // Most tokens are plain words: reject them before any real work.
    let plain = !(shape.slash || shape.dot || shape.colon || shape.hash || shape.at_or_dash || shape.equals);
    if plain {
        let capitalised = token.as_bytes().first().is_some_and(u8::is_ascii_uppercase);
        return if shape.hex && shape.digit && is_hash(token) {
            Some((FactKind::Hash, token))
        } else if capitalised && FILE_NAMES.contains(&token) {
            Some((FactKind::Path, token))
        } else {
            None
        };
    }
    let token = trim_token(token);
    if token.len() < 3 || token.len() > 300 {
        return None;
    }
    if shape.colon {
        if let Some(scheme_end) = find_scheme_end(token) {
            let scheme = &token[..scheme_end];
            let known = matches!(
                scheme,
                "http" | "https" | "ftp" | "ssh" | "git" | "file" | "ws" | "wss"
            );
            return (known && token.len() > scheme_end + 4).then_some((FactKind::Url, token));
        }
    }
    if shape.dot && token.starts_with("www.") && token.len() > 7 {
        return Some((FactKind::Url, token));
    }
    // `--manifest-path=a/b.toml`: the value is what matters.
    let token = if shape.equals {
        token.rsplit_once('=').map_or(token, |(_, value)| value)
    } else {
        token
    };
    if shape.hash {
        if let Some(number) = token.strip_prefix('#') {
            return (is_digits(number) && number.len() <= 7).then_some((FactKind::Issue, token));
        }
        if let Some((repository, number)) = token.split_once('#') {
            return (repository.contains('/') && is_digits(number)).then_some((FactKind::Issue, token));
        }
    }
    if shape.digit && shape.dot && is_version(token) {
        return Some((FactKind::Version, token));
    }
    if shape.digit && shape.colon {
        let hex = token.rsplit_once(':').map_or(token, |(_, hex)| hex);
        if is_hash(hex) {
            return Some((FactKind::Hash, hex));
        }
    }
    if shape.slash || shape.dot {
        if let Some(path) = as_path(token) {
            return Some((FactKind::Path, path));
        }
    }
    // `pytest-7.4.0`, `serde@1.0.210`: a name with its version.
    if shape.digit && shape.dot && shape.at_or_dash {
        let (name, version) = token.rsplit_once(['-', '@'])?;
        return (!name.is_empty() && is_version(version)).then_some((FactKind::Version, token));
    }
    None
}

/// `token` without the punctuation that surrounds identifiers in prose and markdown.
fn trim_token(token: &str) -> &str {
    let bytes = token.as_bytes();
    let mut start = 0;
    let mut end = bytes.len();
    while start < end && matches!(bytes[start], b'*' | b'>' | b'!' | b'+') {
        start += 1;
    }
    while end > start && matches!(bytes[end - 1], b'.' | b',' | b':' | b';' | b'!' | b'?' | b'*') {
        end -= 1;
    }
    &token[start..end]
}

/// Where `://` starts in `token`.
fn find_scheme_end(token: &str) -> Option<usize> {
    let bytes = token.as_bytes();
    let colon = bytes.iter().position(|&byte| byte == b':')?;
    bytes[colon..].starts_with(b"://").then_some(colon)
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// `v1.2`, `1.2.3`, `v0.11.3-beta.1`, `2.0.0+build`: two parts with a `v`, three without.
fn is_version(token: &str) -> bool {
    let (prefixed, rest) = match token.strip_prefix(['v', 'V']) {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let core = rest.split(['-', '+']).next().unwrap_or("");
    let parts = core.split('.').count();
    let numeric = core.split('.').all(is_digits);
    let suffix_ok = rest[core.len()..]
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.'));
    numeric && suffix_ok && (parts >= 3 || (prefixed && parts == 2))
}

/// A commit or content hash: 7–64 lowercase hex digits with both a digit and a letter.
fn is_hash(token: &str) -> bool {
    (7..=64).contains(&token.len())
        && token
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        && token.bytes().any(|byte| byte.is_ascii_digit())
        && token.bytes().any(|byte| byte.is_ascii_alphabetic())
}

/// The path in `token` (without a `:line:column` suffix), when it is one.
fn as_path(token: &str) -> Option<&str> {
    // `src/app.py:42`, `src/app.py:42:5`, `docs/a.md:40:text` (grep): the path before the line.
    let path = match token.split_once(':') {
        Some((path, position)) if is_digits(position.split(':').next().unwrap_or("")) => path,
        Some(_) => return None,
        None => token,
    };
    let allowed = |byte: u8| {
        byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'/' | b'~' | b'@' | b'+')
    };
    if path.len() < 3 || !path.bytes().all(allowed) || !path.bytes().any(|byte| byte.is_ascii_alphabetic()) {
        return None;
    }
    let last = path.rsplit('/').next().unwrap_or(path);
    let extension = last
        .rsplit_once('.')
        .filter(|(stem, _)| !stem.is_empty())
        .map(|(_, ext)| ext);
    if !path.contains('/') {
        return extension.is_some_and(is_file_extension).then_some(path);
    }
    if path.starts_with("//") || (path.contains("..") && !path.starts_with("../")) {
        return None;
    }
    let anchored =
        path.starts_with('/') || path.starts_with("~/") || path.starts_with("./") || path.starts_with("../");
    let segments = path.split('/').filter(|segment| !segment.is_empty()).count();
    let slashes = path.bytes().filter(|byte| *byte == b'/').count();
    let looks_like_file = extension.is_some_and(|ext| {
        !ext.is_empty() && ext.len() <= 10 && ext.bytes().any(|b| b.is_ascii_alphabetic())
    });
    let ok = (anchored && segments >= 2) || looks_like_file || slashes >= 2;
    ok.then_some(path)
}

/// The line around bytes `start..end` of `text` (a real newline or a JSON `\n` ends it), looked for
/// at most [`LOOK_AROUND`] bytes either side, and the byte offset where it ends.
pub(crate) fn line_around(text: &str, start: usize, end: usize) -> (&str, usize) {
    let bytes = text.as_bytes();
    let floor = start.saturating_sub(LOOK_AROUND);
    let mut line_start = start;
    while line_start > floor {
        let byte = bytes[line_start - 1];
        if byte == b'\n' {
            break;
        }
        if byte == b'n' && line_start >= 2 && bytes[line_start - 2] == b'\\' {
            break;
        }
        line_start -= 1;
    }
    let ceiling = (end + LOOK_AROUND).min(bytes.len());
    let mut line_end = end;
    while line_end < ceiling {
        let byte = bytes[line_end];
        if byte == b'\n' || (byte == b'\\' && bytes.get(line_end + 1) == Some(&b'n')) {
            break;
        }
        line_end += 1;
    }
    let line_start = floor_boundary(text, line_start);
    let line_end = floor_boundary(text, line_end);
    (&text[line_start..line_end], line_end)
}

/// The sentence around bytes `start..end` of `text`, at most `max` bytes, and where it ends.
pub(crate) fn sentence_around(text: &str, start: usize, end: usize, max: usize) -> (&str, usize) {
    let bytes = text.as_bytes();
    let ends_sentence = |at: usize| {
        bytes[at] == b'\n'
            || (matches!(bytes[at], b'.' | b'!' | b'?')
                && bytes.get(at + 1).is_none_or(|next| next.is_ascii_whitespace()))
    };
    let floor = start.saturating_sub(max / 2);
    let mut sentence_start = start;
    while sentence_start > floor && !ends_sentence(sentence_start - 1) {
        sentence_start -= 1;
    }
    let ceiling = (sentence_start + max).min(bytes.len());
    let mut sentence_end = end;
    while sentence_end < ceiling && !ends_sentence(sentence_end) {
        sentence_end += 1;
    }
    if sentence_end < bytes.len() && bytes[sentence_end] != b'\n' {
        sentence_end += 1;
    }
    let sentence_start = floor_boundary(text, sentence_start);
    let sentence_end = floor_boundary(text, sentence_end.min(bytes.len()));
    (&text[sentence_start..sentence_end], sentence_end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn kinds(text: &str) -> Vec<(FactKind, String)> {
        let mut found = Vec::new();
        for_each_token(text, |token| {
            if let Some((kind, fact)) = classify_token(token) {
                found.push((kind, fact.to_owned()));
            }
        });
        found
    }

    #[test]
    fn identifiers_are_told_apart() {
        let found = kinds(
            "see https://github.com/a/b/issues/12?x=1, fix #123 in src/app.py:42 (commit 3f2a9c1b) \
             for v1.2.3 and 0.11.3; not and/or, 1/2 or e.g. or application/json",
        );
        assert_eq!(
            found,
            vec![
                (FactKind::Url, "https://github.com/a/b/issues/12?x=1".to_owned()),
                (FactKind::Issue, "#123".to_owned()),
                (FactKind::Path, "src/app.py".to_owned()),
                (FactKind::Hash, "3f2a9c1b".to_owned()),
                (FactKind::Version, "v1.2.3".to_owned()),
                (FactKind::Version, "0.11.3".to_owned()),
            ]
        );
    }

    #[test]
    fn json_escapes_end_tokens() {
        let found = kinds(r#"{"content": "line\n/usr/lib/python3.11/site.py\nCargo.toml"}"#);
        assert_eq!(
            found,
            vec![
                (FactKind::Path, "/usr/lib/python3.11/site.py".to_owned()),
                (FactKind::Path, "Cargo.toml".to_owned()),
            ]
        );
    }

    #[test]
    fn lines_and_sentences_are_found_around_a_match() {
        let text = "ok\nE   AssertionError: 1 != 2\nmore";
        let at = text.find("Error").unwrap();
        assert_eq!(line_around(text, at, at + 5).0, "E   AssertionError: 1 != 2");
        let text = "Hello there. You must not touch the API. Thanks";
        let at = text.find("must").unwrap();
        assert_eq!(
            sentence_around(text, at, at + 4, 300).0,
            " You must not touch the API."
        );
    }

    #[test]
    fn long_bodies_are_scanned_at_both_ends() {
        let text = format!("{}{}{}", "a".repeat(4_000), "b".repeat(10_000), "c".repeat(1_500));
        let (head, tail) = cap(&text);
        assert_eq!(head, "a".repeat(4_000));
        assert_eq!(tail, Some("c".repeat(1_500).as_str()));
    }
}
