//! Telling identifiers apart: paths, URLs, commit hashes, issue numbers and versions, from one
//! token at a time.
//!
//! Hand-written rather than one regex per kind: classification runs on every token the scan meets,
//! and most tokens are rejected by the shape the scanner gathered while finding them, without
//! reading their bytes again.

use std::borrow::Cow;

use ctxhost_engine_kit::retention::{is_media_type, is_stream_device, is_ticket_key, without_diff_prefix};

use crate::summary::facts::FactKind;

/// Whether `ext` is an extension that makes a bare word a file name. A `match` rather than a
/// binary search of a sorted list: the compiler switches on the length and the bytes, where the
/// search compared whole strings at every step.
fn is_file_extension(ext: &str) -> bool {
    matches!(
        ext,
        "bash"
            | "c"
            | "cc"
            | "cfg"
            | "cjs"
            | "conf"
            | "cpp"
            | "cs"
            | "css"
            | "csv"
            | "db"
            | "diff"
            | "dll"
            | "env"
            | "ex"
            | "exs"
            | "go"
            | "gradle"
            | "gz"
            | "h"
            | "hpp"
            | "hs"
            | "html"
            | "ini"
            | "ipynb"
            | "java"
            | "jpg"
            | "js"
            | "json"
            | "jsonl"
            | "jsx"
            | "kt"
            | "lock"
            | "log"
            | "lua"
            | "md"
            | "mjs"
            | "ml"
            | "nix"
            | "patch"
            | "pdf"
            | "php"
            | "png"
            | "proto"
            | "py"
            | "pyi"
            | "rb"
            | "rs"
            | "scala"
            | "scss"
            | "sh"
            | "so"
            | "sql"
            | "sqlite"
            | "svelte"
            | "svg"
            | "swift"
            | "tf"
            | "toml"
            | "ts"
            | "tsx"
            | "txt"
            | "vue"
            | "wasm"
            | "whl"
            | "xml"
            | "yaml"
            | "yml"
            | "zip"
            | "zsh"
    )
}

/// Whether `token` names a file that has no extension.
fn is_file_name(token: &str) -> bool {
    matches!(
        token,
        "Makefile" | "Dockerfile" | "Gemfile" | "Rakefile" | "Justfile" | "Procfile"
    )
}

/// What a token is made of: which identifier punctuation and digits it holds, and whether it is
/// all lowercase hex. The scanner builds it while finding the token (`scan::for_each_token`), one
/// table lookup per byte, so that most tokens are rejected without reading their bytes again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shape(u16);

impl Shape {
    const SLASH: u16 = 1;
    pub(crate) const DOT: u16 = 1 << 1;
    pub(crate) const COLON: u16 = 1 << 2;
    const HASH: u16 = 1 << 3;
    const AT_OR_DASH: u16 = 1 << 4;
    const EQUALS: u16 = 1 << 5;
    const DIGIT: u16 = 1 << 6;
    /// A byte outside `0-9a-f`.
    const NOT_HEX: u16 = 1 << 7;
    /// The bytes only identifiers carry: path and URL punctuation, `#`, `@`, `=`, digits.
    const MARKS: u16 =
        Self::SLASH | Self::DOT | Self::COLON | Self::HASH | Self::AT_OR_DASH | Self::EQUALS | Self::DIGIT;
    pub(crate) const PUNCTUATION: u16 = Self::MARKS & !Self::DIGIT;

    /// What one byte adds to a token's shape.
    pub(crate) const fn of_byte(byte: u8) -> Self {
        let mark = match byte {
            b'/' => Self::SLASH,
            b'.' => Self::DOT,
            b':' => Self::COLON,
            b'#' => Self::HASH,
            b'@' | b'-' => Self::AT_OR_DASH,
            b'=' => Self::EQUALS,
            b'0'..=b'9' => Self::DIGIT,
            _ => 0,
        };
        let hex = matches!(byte, b'0'..=b'9' | b'a'..=b'f');
        Self(mark | if hex { 0 } else { Self::NOT_HEX })
    }

    /// The shape of a whole token.
    pub(crate) fn of(token: &str) -> Self {
        Self(token.bytes().fold(0, |bits, byte| bits | Self::of_byte(byte).0))
    }

    pub(crate) const fn bits(self) -> u16 {
        self.0
    }

    /// The shape made of `bits` (from [`bits`](Self::bits), or'ed together; others are ignored).
    pub(crate) const fn from_bits(bits: u16) -> Self {
        Self(bits & (Self::MARKS | Self::NOT_HEX))
    }

    /// Holds a digit or identifier punctuation.
    pub(crate) const fn is_marked(self) -> bool {
        self.0 & Self::MARKS != 0
    }

    /// Holds a digit and a dot, as a version or an address does.
    pub(crate) const fn has_digit_and_dot(self) -> bool {
        self.0 & Self::DIGIT != 0 && self.0 & Self::DOT != 0
    }

    fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// The kind of identifier `token` is, and the part of it to keep; `shape` is the token's (as
/// [`Shape::of`] gives it).
pub(crate) fn classify_token(token: &str, shape: Shape) -> Option<(FactKind, &str)> {
    let has = |bit| shape.has(bit);
    // Most tokens are plain words: reject them before any real work.
    if !has(Shape::PUNCTUATION) {
        let capitalised = token.as_bytes().first().is_some_and(u8::is_ascii_uppercase);
        return if !has(Shape::NOT_HEX) && has(Shape::DIGIT) && is_hash(token) {
            Some((FactKind::Hash, token))
        } else if capitalised && is_file_name(token) {
            Some((FactKind::Path, token))
        } else {
            None
        };
    }
    let token = trim_token(token);
    if token.len() < 3 || token.len() > 300 {
        return None;
    }
    if has(Shape::COLON) {
        // A package URL (`pkg:npm/body-parser@1.20.2`, an SBOM's): no path of this repository.
        if token.starts_with("pkg:") && token[4..].contains('/') {
            return Some((FactKind::Url, token));
        }
        if let Some(scheme_end) = find_scheme_end(token) {
            let scheme = &token[..scheme_end];
            let known = matches!(
                scheme,
                "http" | "https" | "ftp" | "sftp" | "ssh" | "git" | "file" | "ws" | "wss"
                    // Object stores and data lakes: a model's `s3://bucket/…/model.json`.
                    | "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "wasb" | "wasbs" | "hdfs" | "dbfs"
            );
            return (known && token.len() > scheme_end + 4).then_some((FactKind::Url, token));
        }
    }
    if has(Shape::DOT) && token.starts_with("www.") && token.len() > 7 {
        return Some((FactKind::Url, token));
    }
    // `--manifest-path=a/b.toml`: the value is what matters.
    let token = if has(Shape::EQUALS) {
        split_last(token, |byte| byte == b'=').map_or(token, |(_, value)| value)
    } else {
        token
    };
    // Prose ends a hash with its sentence: `see commit 0454f31.`
    if is_hash(token) {
        return Some((FactKind::Hash, token));
    }
    if has(Shape::HASH) {
        if let Some(number) = token.strip_prefix('#') {
            if is_hash(number) {
                return Some((FactKind::Hash, number));
            }
            return (is_digits(number) && number.len() <= 7).then_some((FactKind::Issue, token));
        }
        if let Some((repository, number)) = split_first(token, b'#') {
            if is_hash(number) {
                return Some((FactKind::Hash, number));
            }
            return (repository.bytes().any(|byte| byte == b'/') && is_digits(number))
                .then_some((FactKind::Issue, token));
        }
    }
    let digit_and_dot = has(Shape::DIGIT) && has(Shape::DOT);
    if digit_and_dot && is_version(token) {
        return Some((FactKind::Version, token));
    }
    if has(Shape::DIGIT) && has(Shape::COLON) {
        let hex = split_last(token, |byte| byte == b':').map_or(token, |(_, hex)| hex);
        if is_hash(hex) {
            return Some((FactKind::Hash, hex));
        }
        // Not a path's `src/app.py:42`, most such tokens: told by the shape alone.
        if digit_and_dot && !has(Shape::SLASH) && is_maven_coordinate(token) {
            return Some((FactKind::Version, token));
        }
    }
    // A DOI, `10.48550/arXiv.2409.14558`: a citation, listed with the links.
    if has(Shape::SLASH) && is_doi(token) {
        return Some((FactKind::Url, token));
    }
    if has(Shape::SLASH) || has(Shape::DOT) {
        if let Some(path) = as_path(token).filter(|_| !is_media_type(token)) {
            return Some((FactKind::Path, without_diff_prefix(path)));
        }
    }
    // A security advisory (`CVE-2024-45590`, `GHSA-qwcr-r2fm-qrc7`): the issue an audit is
    // about; a tracker's key (`INC-4471`): the incident or ticket a session is about.
    if has(Shape::AT_OR_DASH) && has(Shape::DIGIT) && (is_advisory_id(token) || is_ticket_key(token)) {
        return Some((FactKind::Issue, token));
    }
    // `req-0bcc497650320680`, `enricher-09bd12095b-6c84b`: an id whose parts are hashes.
    if has(Shape::AT_OR_DASH) && has(Shape::DIGIT) && !has(Shape::DOT) && token.split('-').any(is_hash) {
        return Some((FactKind::Hash, token));
    }
    // `pytest-7.4.0`, `serde@1.0.210`: a name with its version.
    if digit_and_dot && has(Shape::AT_OR_DASH) {
        let (name, version) = split_last(token, |byte| matches!(byte, b'-' | b'@'))?;
        return (!name.is_empty() && is_version(version)).then_some((FactKind::Version, token));
    }
    None
}

/// `token` without the punctuation that surrounds identifiers in prose and markdown.
/// `CVE-2024-45590`, `GHSA-qwcr-r2fm-qrc7`, `RUSTSEC-2024-0421`, `PYSEC-2024-60`,
/// `GO-2024-3321`: the ids advisory databases give, as the fact measure reads them
/// (`ctxhost_engine_kit::retention`).
pub(crate) fn is_advisory_id(token: &str) -> bool {
    // Every token with a dash and a digit (a date, a pod's name) is asked: the databases' names
    // rule most out before the parts are read, and the parts are read without collecting them.
    let Some((database, rest)) = split_first(token, b'-') else {
        return false;
    };
    if !matches!(database, "CVE" | "GHSA" | "RUSTSEC" | "GO" | "PYSEC") {
        return false;
    }
    let mut parts = rest.split('-');
    let parts = [parts.next(), parts.next(), parts.next(), parts.next()];
    let digits =
        |part: &str, least: usize, most: usize| (least..=most).contains(&part.len()) && is_digits(part);
    match (database, parts) {
        ("CVE", [Some(year), Some(number), None, None]) => digits(year, 4, 4) && digits(number, 4, 7),
        ("GHSA", [Some(a), Some(b), Some(c), None]) => [a, b, c].iter().all(|part| {
            part.len() == 4
                && part
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
        }),
        ("RUSTSEC" | "GO", [Some(year), Some(number), None, None]) => {
            digits(year, 4, 4) && digits(number, 4, 4)
        }
        ("PYSEC", [Some(year), Some(number), None, None]) => digits(year, 4, 4) && digits(number, 1, 7),
        _ => false,
    }
}

pub(crate) fn trim_token(token: &str) -> &str {
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

/// `text` before and after the first `byte` (ASCII), as `split_once` with that character gives
/// it: tokens are short, and a byte loop costs less than setting up `memchr` for each.
fn split_first(text: &str, byte: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|found| found == byte)?;
    Some((&text[..at], &text[at + 1..]))
}

/// `text` before and after the last byte (ASCII) `is_split` accepts, as `rsplit_once` gives it.
fn split_last(text: &str, is_split: impl Fn(u8) -> bool) -> Option<(&str, &str)> {
    let at = text.bytes().rposition(is_split)?;
    Some((&text[..at], &text[at + 1..]))
}

/// Where `://` starts in `token`.
pub(crate) fn find_scheme_end(token: &str) -> Option<usize> {
    let bytes = token.as_bytes();
    let colon = bytes.iter().position(|&byte| byte == b':')?;
    bytes[colon..].starts_with(b"://").then_some(colon)
}

pub(crate) fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// `v1.2`, `1.2.3`, `v0.11.3-beta.1`, `2.0.0+build`: two parts with a `v`, three without.
fn is_version(token: &str) -> bool {
    let (prefixed, rest) = match token.as_bytes() {
        [b'v' | b'V', rest @ ..] => (true, rest),
        bytes => (false, bytes),
    };
    // The core (up to a `-` or `+`) is numbers joined by dots, none of them empty.
    let core_end = rest
        .iter()
        .position(|&byte| matches!(byte, b'-' | b'+'))
        .unwrap_or(rest.len());
    let (mut parts, mut digits) = (1, 0);
    for &byte in &rest[..core_end] {
        match byte {
            b'0'..=b'9' => digits += 1,
            b'.' if digits > 0 => (parts, digits) = (parts + 1, 0),
            _ => return false,
        }
    }
    let suffix_ok = rest[core_end..]
        .iter()
        .all(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.'));
    digits > 0
        && suffix_ok
        && (parts >= 3 || (prefixed && parts == 2))
        && !(!prefixed && core_end == rest.len() && is_ipv4(token))
}

/// Words that come before a version without naming what it is the version of (`moved from 3.15.0
/// to 3.16.1`, `Version 2.4.1`), lowercase.
const NOT_PACKAGE_NAMES: &[&str] = &[
    "a",
    "about",
    "after",
    "all",
    "also",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "back",
    "be",
    "been",
    "before",
    "between",
    "both",
    "build",
    "bump",
    "bumped",
    "but",
    "by",
    "current",
    "currently",
    "downgrade",
    "downgraded",
    "either",
    "for",
    "from",
    "get",
    "got",
    "in",
    "install",
    "installed",
    "into",
    "is",
    "its",
    "keep",
    "kept",
    "latest",
    "like",
    "moved",
    "need",
    "needs",
    "new",
    "newer",
    "no",
    "not",
    "now",
    "of",
    "old",
    "older",
    "on",
    "only",
    "onto",
    "or",
    "over",
    "per",
    "pin",
    "pinned",
    "release",
    "released",
    "remains",
    "require",
    "required",
    "requires",
    // vitest's banner: ` RUN  v1.6.0 /repo` (verify46).
    "run",
    "set",
    "since",
    "stay",
    "stays",
    "still",
    "tag",
    "tagged",
    "than",
    "that",
    "the",
    "then",
    "this",
    "to",
    "under",
    "until",
    "update",
    "updated",
    "upgrade",
    "upgraded",
    "use",
    "uses",
    "using",
    "v",
    "version",
    "versions",
    "via",
    "vs",
    "was",
    "were",
    "with",
];

/// `version` (a slice of `text`) with the package it is the version of, when `text` names one
/// just before it: `requests==2.31.0`, `RNCAsyncStorage (1.23.1)`, `Compiling serde v1.0.210`'s
/// `serde v1.0.210`, `Python 3.11.7`, a listing's `numpy     1.26.4` as `numpy 1.26.4`; `version`
/// itself when no name comes before it (verify41: `Versions: 1.23.1` told a model nothing of a pod
/// update).
///
/// A version moved on says so with the one it moved to (`google.golang.org/grpc v1.62.1 =>
/// v1.66.2`, `AGP 8.3.2 -> 8.5.1`): both listed bare, a summary did not say which is current
/// (verify45).
pub(crate) fn with_package_name<'a>(text: &'a str, version: &'a str) -> Cow<'a, str> {
    let named = named_version(text, version);
    // A listing's columns, one space apart as the summary lists them.
    let shown = match named.strip_suffix(version).map(str::trim_end) {
        Some(name) if name.len() + 1 < named.len() - version.len() && !name.ends_with('(') => {
            Cow::Owned(format!("{name} {version}"))
        }
        _ => Cow::Borrowed(named),
    };
    match version_moved_to(text, version) {
        Some((arrow, to)) => Cow::Owned(format!("{shown} {arrow} {to}")),
        None => shown,
    }
}

/// The arrow and the version `version` (a slice of `text`) moved to, when `text` says one right
/// after it: `v1.62.1 => v1.66.2`, `8.3.2 -> 8.5.1`, `1.6.0 → 1.7.1`.
fn version_moved_to<'a>(text: &'a str, version: &str) -> Option<(&'a str, &'a str)> {
    let start = (version.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let rest = text.get(start + version.len()..)?;
    let rest = rest.strip_prefix(' ')?;
    let arrow = ["=>", "->", "→"]
        .into_iter()
        .find(|arrow| rest.starts_with(arrow))?;
    let rest = rest[arrow.len()..].strip_prefix(' ')?;
    let to = rest
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | '(' | '`'))
        .next()?
        .trim_end_matches('.');
    is_version(to).then_some((&text[start + version.len() + 1..][..arrow.len()], to))
}

/// [`with_package_name`]'s slice of `text`.
fn named_version<'a>(text: &'a str, version: &'a str) -> &'a str {
    let Some(start) = (version.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
        return version;
    };
    // `pytest-7.4.0`, `serde@1.0.210`: named already.
    if start > text.len()
        || version
            .bytes()
            .skip(1)
            .any(|byte| byte.is_ascii_alphabetic() && byte != b'v')
    {
        return version;
    }
    let bytes = text.as_bytes();
    let end = start + version.len();
    let is_name_byte = |byte: u8| {
        byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'/' | b'@' | b'[' | b']')
    };
    let name_start = |name_end: usize| {
        let mut at = name_end;
        while at > 0 && name_end - at < 80 && is_name_byte(bytes[at - 1]) {
            at -= 1;
        }
        let name = &text[at..name_end];
        // A whole word that ends as a name does, not a sentence (`Upgrade done. 3.2.1 is live`).
        // Not another version: `checkout-web-1.10.0 2.10.0` is a chart's and its app's.
        let names = (at == 0 || !is_name_byte(bytes[at - 1]))
            && !is_version(name.rsplit(['-', '@']).next().unwrap_or(name))
            && name
                .bytes()
                .last()
                .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b']')
            && name.bytes().any(|byte| byte.is_ascii_alphabetic())
            && !NOT_PACKAGE_NAMES.contains(&name.to_ascii_lowercase().as_str());
        names.then_some(at)
    };
    let before = &text[..start];
    // A pin: `requests==2.31.0`, `django>=4.2.0`, `httpx~=0.27.0`.
    let pinned = before.len() - before.trim_end_matches(['=', '>', '<', '~', '!']).len();
    if pinned > 0 {
        return match name_start(start - pinned) {
            Some(at) if at < start - pinned => &text[at..end],
            _ => version,
        };
    }
    // `RNCAsyncStorage (1.23.1)`: a package manager's listing.
    let (name_end, end) = match before.strip_suffix('(') {
        Some(opened) if bytes.get(end) == Some(&b')') => (opened.trim_end_matches(' ').len(), end + 1),
        Some(_) => return version,
        // `serde v1.0.210`, a listing's columns: spaces only (a tab parts a table's columns,
        // `checkout-web-1.10.0\t2.10.0` in `helm history`, verify43).
        None => {
            let name_end = before.trim_end_matches(' ').len();
            if name_end == start || start - name_end > 40 {
                return version;
            }
            (name_end, end)
        }
    };
    match name_start(name_end) {
        Some(at) if at < name_end => &text[at..end],
        // `urllib3 version 1.26.5`: the name is the word before.
        _ => {
            let word = &before[before[..name_end].rfind([' ', '\t', '\n']).map_or(0, |at| at + 1)..name_end];
            if !word.eq_ignore_ascii_case("version") {
                return version;
            }
            let name_end = before[..name_end - word.len()].trim_end_matches(' ').len();
            match name_start(name_end) {
                Some(at) if at < name_end => &text[at..end],
                _ => version,
            }
        }
    }
}

/// A version of four numbers in brackets after a package's name, `token` being a slice of
/// `text` (a Gemfile's `rails (7.1.3.2)`): what [`classify_token`] takes for an address alone
/// (verify44: the framework's version missing from `Versions:`).
pub(crate) fn bracketed_four_part_version<'a>(text: &'a str, token: &'a str) -> Option<&'a str> {
    let version = trim_token(token);
    let at = (version.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let bracketed = text[..at].ends_with(" (") && text[at + version.len()..].starts_with(')');
    (bracketed && is_ipv4(version)).then_some(version)
}

/// Whether `token` is an IPv4 address (`10.0.7.1`): four numbers up to 255, a client's address
/// in a log rather than a version.
pub(crate) fn is_ipv4(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|part| (1..=3).contains(&part.len()) && part.parse::<u16>().is_ok_and(|n| n <= 255))
}

/// Whether `token` is a DOI: `10.`, a registrant code of four to nine digits, `/`, a suffix.
pub(crate) fn is_doi(token: &str) -> bool {
    let Some((prefix, suffix)) = split_first(token, b'/') else {
        return false;
    };
    prefix
        .strip_prefix("10.")
        .is_some_and(|code| (4..=9).contains(&code.len()) && is_digits(code))
        && !suffix.is_empty()
}

/// A commit or content hash: 7–64 lowercase hex digits with both a digit and a letter.
pub(crate) fn is_hash(token: &str) -> bool {
    (7..=64).contains(&token.len())
        && token
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        && token.bytes().any(|byte| byte.is_ascii_digit())
        && token.bytes().any(|byte| byte.is_ascii_alphabetic())
}

/// The path in `token` (without a `:line:column` suffix), when it is one.
///
/// One pass over the path's bytes gathers what the rules ask about: the scan meets a candidate
/// path in most lines of a log.
fn as_path(token: &str) -> Option<&str> {
    // `src/app.py:42`, `src/app.py:42:5`, `docs/a.md:40:text` (grep): the path before the line.
    let path = match split_first(token, b':') {
        Some((path, position))
            if is_digits(split_first(position, b':').map_or(position, |(line, _)| line)) =>
        {
            path
        }
        Some(_) => return None,
        None => token,
    };
    // A diff of absolute paths (`git diff --no-index`): `a//home/u/x.py` is `/home/u/x.py`.
    let path = match path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")) {
        Some(absolute) if absolute.starts_with('/') => absolute,
        _ => path,
    };
    if path.len() < 3 {
        return None;
    }
    let (mut alphabetic, mut slashes, mut segments, mut dot_dot) = (false, 0, 0, false);
    let (mut last_slash, mut last_dot) = (None, None);
    let mut previous = b'/';
    for (at, &byte) in path.as_bytes().iter().enumerate() {
        match byte {
            b'/' => (slashes, last_slash) = (slashes + 1, Some(at)),
            b'.' => (dot_dot, last_dot) = (dot_dot || previous == b'.', Some(at)),
            b'_' | b'-' | b'~' | b'@' | b'+' | b'0'..=b'9' => {}
            _ if byte.is_ascii_alphabetic() => alphabetic = true,
            _ => return None,
        }
        segments += usize::from(byte != b'/' && previous == b'/');
        previous = byte;
    }
    if !alphabetic {
        return None;
    }
    // After the last dot of the last segment, when something stands before that dot.
    let last_start = last_slash.map_or(0, |slash| slash + 1);
    let extension = last_dot
        .filter(|&dot| dot > last_start)
        .map(|dot| &path[dot + 1..]);
    if slashes == 0 {
        return (extension.is_some_and(is_file_extension) && !is_hcl_reference(path)).then_some(path);
    }
    // An empty folder is no path's: a JVM's stack frame (`app//org.junit.jupiter.api.Assertions.fail`,
    // verify42: listed among the files mentioned).
    if path.contains("//") || (dot_dot && !path.starts_with("../")) {
        return None;
    }
    let anchored =
        path.starts_with('/') || path.starts_with("~/") || path.starts_with("./") || path.starts_with("../");
    let looks_like_file = extension.is_some_and(|ext| {
        !ext.is_empty() && ext.len() <= 10 && ext.bytes().any(|b| b.is_ascii_alphabetic())
    });
    let ok = (anchored && segments >= 2) || looks_like_file || slashes >= 2;
    (ok && !is_date(path) && !is_stream_device(path)).then_some(path)
}

/// Whether `token` is a Maven coordinate, `group:artifact:version` (`androidx.core:core-ktx:1.12.0`,
/// as Gradle's dependency tree prints them): a version with its package's name (verify46: the
/// summary listed `1.7.1, 1.9.23` bare, and a tree's other versions not at all).
pub(crate) fn is_maven_coordinate(token: &str) -> bool {
    let name = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b'_'))
            && part.bytes().any(|byte| byte.is_ascii_alphabetic())
    };
    // A log's timestamps (`10:00:01.000`) are most tokens with colons and dots: told by their
    // first byte, with nothing gathered.
    if !token.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return false;
    }
    let mut parts = token.splitn(4, ':');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(group), Some(artifact), Some(version), None) => {
            group.contains('.') && name(group) && name(artifact) && is_version(version)
        }
        _ => false,
    }
}

/// Whether `name`, a dotted word, is a reference in Terraform's language (`var.env`,
/// `local.tags.json`, `data.aws_iam_policy_document.assume.json`), not a file (verify41: listed
/// among the files mentioned).
pub(crate) fn is_hcl_reference(name: &str) -> bool {
    let Some((first, rest)) = name.split_once('.') else {
        return false;
    };
    match first {
        "var" | "local" | "module" | "each" | "count" | "self" | "terraform" => true,
        // `data.json` is a file; a data source names its type and its name.
        "data" => rest.matches('.').count() >= 2,
        _ => false,
    }
}

/// Whether `path` is a date written with slashes (`29/Nov/2026` in an access log, `2026/11/29`):
/// three parts, numbers or a month's three letters, two of them numbers.
pub(crate) fn is_date(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() == 3
        && parts
            .iter()
            .filter(|part| is_digits(part) && (1..=4).contains(&part.len()))
            .count()
            >= 2
        && parts
            .iter()
            .all(|part| is_digits(part) || (part.len() == 3 && part.bytes().all(|b| b.is_ascii_alphabetic())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::for_each_token;
    use pretty_assertions::assert_eq;

    fn kinds(text: &str) -> Vec<(FactKind, String)> {
        let mut found = Vec::new();
        for_each_token(text, |token, shape| {
            if let Some((kind, fact)) = classify_token(token, shape) {
                found.push((kind, fact.to_owned()));
            }
        });
        found
    }

    /// Each version of `text` as the summary lists it.
    fn versions(text: &str) -> Vec<String> {
        let mut found = Vec::new();
        for_each_token(text, |token, shape| {
            if let Some((FactKind::Version, version)) = classify_token(token, shape) {
                found.push(with_package_name(text, version).into_owned());
            }
        });
        found
    }

    #[test]
    fn a_version_keeps_the_name_before_it() {
        assert_eq!(
            versions(
                "Using RNCAsyncStorage (1.23.1)\nInstalling RNReanimated (3.16.1) (was 3.15.0)\n\
                 Collecting requests==2.31.0 and uvicorn[standard]>=0.30.1\n   Compiling serde v1.0.210\n\
                 numpy        1.26.4\nPython 3.11.7 found; urllib3 version 1.26.5 is vulnerable"
            ),
            [
                "RNCAsyncStorage (1.23.1)",
                "RNReanimated (3.16.1)",
                "3.15.0",
                "requests==2.31.0",
                "uvicorn[standard]>=0.30.1",
                "serde v1.0.210",
                "numpy 1.26.4",
                "Python 3.11.7",
                "urllib3 version 1.26.5",
            ]
        );
        // Words that name nothing, a sentence's end, a line before, a named version.
        assert_eq!(
            versions(
                "moved from 3.15.0 to 3.16.1. Version 2.4.1 is out. Upgrade done. 3.2.1 is live\n\
                 4.0.0 and pytest-7.4.0, serde@1.0.210, = 5.1.0"
            ),
            [
                "3.15.0",
                "3.16.1",
                "2.4.1",
                "3.2.1",
                "4.0.0",
                "pytest-7.4.0",
                "serde@1.0.210",
                "5.1.0"
            ]
        );
        // A version moved on, with the one it moved to; that one is listed with it.
        assert_eq!(
            versions("go: upgraded google.golang.org/grpc v1.62.1 => v1.66.2\nAGP 8.3.2 -> 8.5.1, tokio 1.36.0 → 1.41.1.\n1.2.3 -> later"),
            [
                "google.golang.org/grpc v1.62.1 => v1.66.2",
                "v1.66.2",
                "AGP 8.3.2 -> 8.5.1",
                "8.5.1",
                "tokio 1.36.0 → 1.41.1",
                "1.41.1",
                "1.2.3",
            ]
        );
        // A runner's banner names no package (vitest's ` RUN  v1.6.0 /repo`).
        assert_eq!(versions(" RUN  v1.6.0 /repo/packages/web"), ["v1.6.0"]);
        // A table's columns: a chart's version and its app's (`helm history`).
        assert_eq!(
            versions("42\tsuperseded\tcheckout-web-1.10.0\t2.10.0\tUpgrade complete\nweb-1.11.0 2.11.0\ningress-nginx\t4.11.2"),
            ["checkout-web-1.10.0", "2.10.0", "web-1.11.0", "2.11.0", "4.11.2"]
        );
    }

    #[test]
    fn a_maven_coordinate_is_a_version_with_its_name() {
        let found = kinds(
            "+--- androidx.core:core-ktx:1.12.0\n|    +--- androidx.annotation:annotation:1.6.0 -> 1.7.1\n\
             not db.internal:5432 nor a:b:1.2.3 nor org.x:y:latest",
        );
        assert_eq!(
            found,
            vec![
                (FactKind::Version, "androidx.core:core-ktx:1.12.0".to_owned()),
                (
                    FactKind::Version,
                    "androidx.annotation:annotation:1.6.0".to_owned()
                ),
                (FactKind::Version, "1.7.1".to_owned()),
            ]
        );
    }

    #[test]
    fn a_url_keeps_its_ipv6_host_and_its_placeholders() {
        let urls: Vec<String> = kinds(
            "url = f\"https://metrics.example.com/api/v2/rollup_{period}/export?fmt={fmt}\"\n\
             health = \"http://[::1]:8080/healthz\"; s3://${BUCKET}/raw/{date.year}/x.parquet\n\
             not {\"url\":\"https://a.example.com/x\"} nor http://[bad]/x nor https://b.example.com/{ 1 }",
        )
        .into_iter()
        .filter(|(kind, _)| *kind == FactKind::Url)
        .map(|(_, url)| url)
        .collect();
        assert_eq!(
            urls,
            [
                "https://metrics.example.com/api/v2/rollup_{period}/export?fmt={fmt}",
                "http://[::1]:8080/healthz",
                "s3://${BUCKET}/raw/{date.year}/x.parquet",
                "https://a.example.com/x",
                "https://b.example.com/",
            ]
        );
    }

    #[test]
    fn identifiers_are_told_apart() {
        let found = kinds(
            "see https://github.com/a/b/issues/12?x=1, fix #123 in src/app.py:42 (commit 3f2a9c1b) \
             for v1.2.3 and 0.11.3; not and/or, 1/2 or e.g. or application/json. Reverted in \
             commit 0454f31. Trace req-0bcc497650320680, not req-42 or a well-known-name; \
             hash=deadbeef12 id#abcdef567. Client 10.0.7.1 ran 1.2.3.4567. See 10.48550/arXiv.2409.14558. \
             [29/Nov/2026:09:40:00 +0000] on 2026/11/29.",
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
                (FactKind::Hash, "0454f31".to_owned()),
                (FactKind::Hash, "req-0bcc497650320680".to_owned()),
                (FactKind::Hash, "deadbeef12".to_owned()),
                (FactKind::Hash, "abcdef567".to_owned()),
                (FactKind::Version, "1.2.3.4567".to_owned()),
                (FactKind::Url, "10.48550/arXiv.2409.14558".to_owned()),
            ]
        );
    }

    /// An audit's advisories are its issues; ids of their shape from elsewhere are not.
    #[test]
    fn an_advisory_id_is_an_issue() {
        assert_eq!(
            kinds(
                "CVE-2024-45590: body-parser (GHSA-qwcr-r2fm-qrc7), RUSTSEC-2024-0421, PYSEC-2024-60 \
                 and GO-2024-3321. Not CVE-24-1, GHSA-QWCR-R2FM-QRC7 or SHA-256."
            ),
            vec![
                (FactKind::Issue, "CVE-2024-45590".to_owned()),
                (FactKind::Issue, "GHSA-qwcr-r2fm-qrc7".to_owned()),
                (FactKind::Issue, "RUSTSEC-2024-0421".to_owned()),
                (FactKind::Issue, "PYSEC-2024-60".to_owned()),
                (FactKind::Issue, "GO-2024-3321".to_owned()),
            ]
        );
    }

    /// A tracker's key is the ticket a session is about; a standard's name with its number, or a
    /// media type with its dots, is no issue and no path.
    #[test]
    fn a_trackers_key_is_an_issue_and_a_media_type_no_path() {
        assert_eq!(
            kinds(
                "INC-4471 (PLAT-5120, SEC-880): pinned by sha256 per SHA-256, UTF-16 and ISO-8601 as \
                 application/vnd.oci.image.index.v1+json in charts/app/values.yaml"
            ),
            vec![
                (FactKind::Issue, "INC-4471".to_owned()),
                (FactKind::Issue, "PLAT-5120".to_owned()),
                (FactKind::Issue, "SEC-880".to_owned()),
                (FactKind::Path, "charts/app/values.yaml".to_owned()),
            ]
        );
    }

    #[test]
    fn an_object_stores_uri_is_a_url_not_a_path() {
        let found =
            kinds("model saved to s3://ana-ml-artifacts/churn/xgb/29e6/model.json and gs://b/k.parquet");
        assert_eq!(
            found,
            vec![
                (
                    FactKind::Url,
                    "s3://ana-ml-artifacts/churn/xgb/29e6/model.json".to_owned()
                ),
                (FactKind::Url, "gs://b/k.parquet".to_owned()),
            ]
        );
    }

    /// Listed once, as the file it is: a diff's `a/` and `b/` copies listed it twice, under
    /// names no file has.
    #[test]
    fn a_diffs_file_is_its_path_without_the_a_and_b_prefixes() {
        assert_eq!(
            kinds("diff --git a/src/app.py b/src/app.py\n--- a/Cargo.toml\n+++ b/Cargo.toml\n--- a//home/u/x.py"),
            vec![
                (FactKind::Path, "src/app.py".to_owned()),
                (FactKind::Path, "src/app.py".to_owned()),
                (FactKind::Path, "Cargo.toml".to_owned()),
                (FactKind::Path, "Cargo.toml".to_owned()),
                (FactKind::Path, "/home/u/x.py".to_owned()),
            ]
        );
    }

    /// Terraform's references name variables and data sources, not files; `data.json` is one.
    #[test]
    fn a_terraform_reference_is_no_file() {
        assert_eq!(
            kinds("var.env and local.settings.json, data.aws_iam_policy_document.assume.json; data.json main.tf"),
            vec![
                (FactKind::Path, "data.json".to_owned()),
                (FactKind::Path, "main.tf".to_owned()),
            ]
        );
    }

    /// A JVM's stack frame names a class loader and a method, not a file (verify42).
    #[test]
    fn a_stack_frame_with_an_empty_folder_is_no_path() {
        assert_eq!(
            kinds(
                "\tat app//org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:152)\n\
                 see src//main.rs and src/main.rs"
            ),
            vec![
                (FactKind::Path, "AssertionFailureBuilder.java".to_owned()),
                (FactKind::Path, "src/main.rs".to_owned()),
            ]
        );
    }

    #[test]
    fn a_package_url_is_a_url_not_a_path() {
        assert_eq!(
            kinds("bom-ref pkg:npm/body-parser@1.20.2 and pkg:pypi/requests@2.31.0"),
            vec![
                (FactKind::Url, "pkg:npm/body-parser@1.20.2".to_owned()),
                (FactKind::Url, "pkg:pypi/requests@2.31.0".to_owned()),
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
}
