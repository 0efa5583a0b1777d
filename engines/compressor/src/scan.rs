//! Cheap text scanning: capping bodies, splitting them into tokens, finding the line or sentence
//! around a match, and the fast hash the per-token maps use.
//!
//! A byte loop with a lookup table rather than a regex: the scan runs over the tool output of the
//! middle, where a regex without a literal prefix is several times slower. Every look-around is
//! bounded, so the cost stays linear in the text.

use std::hash::{BuildHasher, Hasher};

use ctxhost_engine_abi::{Message, ToolCall};
use ctxhost_engine_kit::{
    stand_in::{command_under, COMMAND_KEYS},
    text::floor_char_boundary,
};

pub(crate) use crate::identify::{classify_token, Shape};
use crate::summary::facts::content_pieces;

/// Bodies longer than this are scanned only at their ends: a fetched page or a log of a few
/// dozen KB is read whole (its facts count as much as those of its first lines)…
pub(crate) const SCAN_MAX: usize = 32_000;
/// …their first bytes…
pub(crate) const SCAN_HEAD: usize = 24_000;
/// …and their last bytes.
pub(crate) const SCAN_TAIL: usize = 8_000;
/// How far a line or sentence is looked for around a match, in bytes…
const LOOK_AROUND: usize = 400;
/// …but for the end of an error line: why a cloud API refused often ends a line of 600 bytes.
const LINE_END_AROUND: usize = 1_000;

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

pub(crate) use ctxhost_engine_kit::stand_in::ToolKind;

/// What a call to a tool does.
pub(crate) fn tool_kind(call: &ToolCall) -> ToolKind {
    ToolKind::of_call_json(&call.function.name, &call.function.arguments)
}

/// What a call prints when it prints files and does nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FilesPrinted {
    /// It does something else, or more.
    None,
    /// Files of any other kind (`cat docs/notes.txt`, `head -50 build.log`): a log's error lines
    /// are a run's.
    Other,
    /// Source or configuration files only, or a read tool's file.
    Source,
}

/// Whether `call`, of `kind`, reads files: a read tool, or a shell command that only prints source or
/// configuration files (`cat src/error.rs`, `sed -n '1,200p' crates/api/src/error.rs`, `head -n
/// 80 Cargo.toml`). Its output is the files' text, not a run's: no line of it is an error
/// printed (verify22: `use thiserror::Error;` under `Errors:` in Codex sessions, which read
/// files with `sed -n`).
pub(crate) fn reads_files(call: &ToolCall, kind: ToolKind) -> bool {
    files_printed(call, kind) == FilesPrinted::Source
}

/// What files `call`, of `kind`, prints and does nothing else with ([`FilesPrinted`]).
pub(crate) fn files_printed(call: &ToolCall, kind: ToolKind) -> FilesPrinted {
    match kind {
        ToolKind::Read => FilesPrinted::Source,
        ToolKind::Shell => shell_prints_files(&call.function.arguments),
        _ => FilesPrinted::None,
    }
}

/// Programs that print files, as a shell command's first word.
const FILE_PRINTERS: [&str; 5] = ["cat ", "nl ", "bat ", "head ", "sed "];

fn shell_prints_files(arguments: &str) -> FilesPrinted {
    if !FILE_PRINTERS.iter().any(|program| arguments.contains(program)) {
        return FilesPrinted::None;
    }
    let Ok(arguments) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(arguments) else {
        return FilesPrinted::None;
    };
    command_under(&arguments, &COMMAND_KEYS).map_or(FilesPrinted::None, |command| prints_files(&command))
}

/// Whether `command` prints files and does nothing else ([`prints_files`]).
pub(crate) fn command_prints_files(command: &str) -> bool {
    prints_files(command) != FilesPrinted::None
}

/// What files `command` prints, when it is one program and nothing chained or redirected, piped
/// through `head` or `tail` at most, that prints files and does nothing else.
fn prints_files(command: &str) -> FilesPrinted {
    // What `head` or `tail` keeps of a file printed is the file's (`cat -n src/api/client.ts |
    // head -40`; verify41: its `throw new SyncError(…)` listed under Errors).
    let mut stages = command.split('|');
    let command = stages.next().unwrap_or_default();
    // So is what `sed -n '35,42p'` keeps.
    let trimmed_only = stages.all(|stage| {
        let mut words = stage.split_whitespace();
        let trims = match words.next() {
            Some("head" | "tail") => true,
            Some("sed") => {
                words.next() == Some("-n")
                    && words.next().is_some_and(is_print_script)
                    && words.next().is_none()
            }
            _ => false,
        };
        trims && !stage.contains(['>', '<', '&', ';', '$', '`', '\n'])
    });
    if !trimmed_only || command.contains([';', '>', '<', '&', '$', '`', '\n']) {
        return FilesPrinted::None;
    }
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or("");
    // A file as a revision holds it (`git show release/0.10:crates/pgpool/src/inner.rs`; verify47:
    // its `-> Result<Conn, PoolError>` listed under Errors).
    if program == "git" && words.next() == Some("show") {
        let files: Vec<&str> = words
            .filter(|word| !word.starts_with('-'))
            .filter_map(|word| word.split_once(':').map(|(_, file)| file))
            .collect();
        return match files.as_slice() {
            [] => FilesPrinted::None,
            files if files.iter().all(|file| is_source_path(file)) => FilesPrinted::Source,
            _ => FilesPrinted::Other,
        };
    }
    let rest: Vec<&str> = words.collect();
    let mut files = Vec::new();
    let mut skip_next = false;
    let mut printing = !matches!(program, "sed");
    for word in &rest {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match (program, *word) {
            // `head -n 80` and `head -c 512` take a count.
            ("head", "-n" | "-c") => skip_next = true,
            ("sed", "-n") => printing = true,
            // `sed -n '1,200p'`: the script, which prints lines and changes nothing.
            ("sed", script) if is_print_script(script) => {}
            (_, option) if option.starts_with('-') => {}
            (_, file) => files.push(file),
        }
    }
    if !matches!(program, "cat" | "nl" | "bat" | "head" | "sed") || !printing || files.is_empty() {
        FilesPrinted::None
    } else if files.iter().all(|file| is_source_path(file)) {
        FilesPrinted::Source
    } else {
        FilesPrinted::Other
    }
}

/// A `sed` script that prints a range of lines: `'1,200p'`, `"40,80p"`, `12p`.
fn is_print_script(script: &str) -> bool {
    let script = script.trim_matches(['\'', '"']);
    script
        .strip_suffix('p')
        .is_some_and(|range| !range.is_empty() && range.bytes().all(|b| b.is_ascii_digit() || b == b','))
}

/// Extensions of the files a program's source and configuration are written in: never a log or
/// a run's output saved to a file, whose error lines are the run's.
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "go", "java", "kt", "kts", "swift", "c", "h", "cc", "cpp",
    "hpp", "cs", "rb", "php", "scala", "sql", "toml", "yaml", "yml", "json", "md", "ini", "cfg", "conf",
    "gradle", "pro", "xml", "html", "css", "scss", "sh", "tf", "proto", "vue",
];

fn is_source_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(name, "Dockerfile" | "Makefile")
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, extension)| !stem.is_empty() && SOURCE_EXTENSIONS.contains(&extension))
}

/// A message's text pieces, each cut to its first [`SCAN_HEAD`] and last [`SCAN_TAIL`] bytes when
/// over [`SCAN_MAX`].
pub(crate) fn capped_pieces(message: &Message) -> impl Iterator<Item = &str> {
    capped_pieces_of_bodies(message).map(|(piece, _)| piece)
}

/// [`capped_pieces`], each with the whole body it was cut from: whether a body is a JSON
/// document is a question about all of it, not about its first 24 KB.
pub(crate) fn capped_pieces_of_bodies(message: &Message) -> impl Iterator<Item = (&str, &str)> {
    content_pieces(&message.content).flat_map(|body| {
        let (head, tail) = cap(body);
        std::iter::once((head, body)).chain(tail.map(|tail| (tail, body)))
    })
}

fn cap(text: &str) -> (&str, Option<&str>) {
    if text.len() <= SCAN_MAX {
        return (text, None);
    }
    let head_end = floor_char_boundary(text, SCAN_HEAD);
    let tail_start = floor_char_boundary(text, text.len() - SCAN_TAIL);
    (&text[..head_end], Some(&text[tail_start..]))
}

/// A byte that ends a token: whitespace, quotes, brackets, commas, a JSON escape's backslash.
const DELIMITER: u16 = 1 << 15;

/// For each byte: [`DELIMITER`], or the [`Shape`] bits it gives the token holding it.
const fn byte_flags() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = Shape::of_byte(byte as u8).bits();
        byte += 1;
    }
    let delimiters = b" \t\r\n\"'`()<>[]{},;|\\";
    let mut i = 0;
    while i < delimiters.len() {
        table[delimiters[i] as usize] = DELIMITER;
        i += 1;
    }
    table
}

static BYTE_FLAGS: [u16; 256] = byte_flags();

/// Bytes that can make a token worth classifying: identifier punctuation, digits, capitals.
const fn interesting_bytes() -> [bool; 256] {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = Shape::of_byte(byte as u8).is_marked() || (byte as u8).is_ascii_uppercase();
        byte += 1;
    }
    table
}

static INTERESTING: [bool; 256] = interesting_bytes();

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that lies strictly between `low` and `high` (both at most
/// 128), and of no other: no carry or borrow crosses from one byte to the next.
const fn bytes_between(word: u64, low: u64, high: u64) -> u64 {
    let low_bits = word & (ONES * 127);
    (ONES * (127 + high)).wrapping_sub(low_bits) & !word & (low_bits + ONES * (127 - low)) & HIGH_BITS
}

/// The high bit of each byte of `word` equal to `byte`; a byte above a match may be marked too
/// (a borrow), never one below it, so the lowest mark is exact.
const fn bytes_equal(word: u64, byte: u64) -> u64 {
    let word = word ^ (ONES * byte);
    word.wrapping_sub(ONES) & !word & HIGH_BITS
}

/// Where the first of [`INTERESTING`] is in `bytes` from `from` on, eight bytes at a time: `-./0-9:`,
/// `@A-Z`, `#` and `=`.
fn find_interesting(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let found = bytes_between(word, 0x2c, 0x3b)
            | bytes_between(word, 0x3f, 0x5b)
            | bytes_equal(word, u64::from(b'#'))
            | bytes_equal(word, u64::from(b'='));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&byte| INTERESTING[usize::from(byte)])
        .map(|found| at + found)
}

/// Calls `f` with every token of `text` that may be an identifier, and its [`Shape`]: runs between
/// whitespace, quotes, brackets, commas and JSON escapes (`\n` inside a JSON string ends a token
/// too) that hold a digit or identifier punctuation (`/.#:@-=`), or start with a capital
/// (`Makefile`). Plain words, most of any text, never reach `f`.
///
/// Plain words are passed over without finding where they end: the scan jumps from one byte that
/// could make a token worth classifying (a mark or a capital, about one byte in seven of an agent's
/// tool output) to the next, and reads tokens only from the last delimiter before it. Every token
/// boundary was a mispredicted branch of the byte loop. Within a token one table lookup per byte
/// gives both where it ends and what it is made of, so the classifier never reads a token's bytes
/// again to reject it. The byte after a backslash is a delimiter too when it is ASCII (the escaped
/// character of `\n`, `\"`…): it is passed over with its backslash, so no escape is pending at a
/// token's start; nor after any other delimiter, which is where reading resumes.
pub(crate) fn for_each_token<'a>(text: &'a str, mut f: impl FnMut(&'a str, Shape)) {
    let bytes = text.as_bytes();
    let mut emit = |start: usize, end: usize, flags: u16| {
        let shape = Shape::from_bits(flags);
        if end - start >= 3 && (shape.is_marked() || bytes[start].is_ascii_uppercase()) {
            let token = &text[start..end];
            // A git range names two commits (`index 93bb240..a8929d1`, `git log v1..HEAD`'s
            // `5d02e8a..9c75bd7`): each is a hash of its own.
            let range = (flags & Shape::PUNCTUATION == Shape::DOT)
                .then(|| commit_range(token))
                .flatten();
            match range {
                Some((from, to)) => {
                    f(from, Shape::of(from));
                    f(to, Shape::of(to));
                }
                None => f(token, shape),
            }
        }
    };
    let is_delimiter = |byte: u8| BYTE_FLAGS[usize::from(byte)] & DELIMITER != 0;
    // Where a token may start with no escape pending.
    let mut from = 0;
    while let Some(found) = find_interesting(bytes, from) {
        let mut at = bytes[from..found]
            .iter()
            .rposition(|&byte| byte != b'\\' && is_delimiter(byte))
            .map_or(from, |delimiter| from + delimiter + 1);
        let (mut start, mut flags) = (at, 0u16);
        loop {
            let Some(&byte) = bytes.get(at) else {
                emit(start, at, flags);
                return;
            };
            let class = BYTE_FLAGS[usize::from(byte)];
            if class & DELIMITER == 0 {
                flags |= class;
                at += 1;
                continue;
            }
            if matches!(byte, b'{' | b'[') && flags & Shape::COLON != 0 {
                let group = url_group(bytes, start, at);
                if group > 0 {
                    flags = bytes[at..at + group]
                        .iter()
                        .fold(flags, |bits, &byte| bits | Shape::of_byte(byte).bits());
                    at += group;
                    continue;
                }
            }
            emit(start, at, flags);
            if byte == b'\\' && bytes.get(at + 1).is_some_and(u8::is_ascii) {
                at += 1;
            }
            at += 1;
            if at > found {
                break;
            }
            start = at;
            flags = 0;
        }
        from = at;
    }
}

/// Longest bracketed group read as part of a URL.
const URL_GROUP_MAX: usize = 64;

/// The length of the bracketed group at `at` that belongs to the URL of `bytes[start..at]`, or 0:
/// an IPv6 host right after the scheme (`http://[::1]:8080/healthz`) or a template's placeholder
/// (`https://…/rollup_{period}/export?fmt={fmt}`, `s3://${BUCKET}/…`). Brackets end tokens
/// everywhere else; cut there, the summary kept `…/api/v2/rollup_` as if it were the address
/// (verify44).
pub(crate) fn url_group(bytes: &[u8], start: usize, at: usize) -> usize {
    let token = &bytes[start..at];
    let Some(scheme) = token.windows(3).position(|window| window == b"://") else {
        return 0;
    };
    let rest = &bytes[at..bytes.len().min(at + URL_GROUP_MAX)];
    let (inner, close): (fn(u8) -> bool, u8) = match rest.first() {
        // Only the host can be an IPv6 address: right after `://`.
        Some(b'[') if scheme + 3 == token.len() => (
            |byte| byte.is_ascii_hexdigit() || matches!(byte, b':' | b'.'),
            b']',
        ),
        Some(b'{') => (
            |byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.'),
            b'}',
        ),
        _ => return 0,
    };
    let Some(length) = rest[1..].iter().position(|&byte| !inner(byte)) else {
        return 0;
    };
    let group = &rest[1..=length];
    let well_formed = match close {
        b']' => group.contains(&b':'),
        _ => group
            .first()
            .is_some_and(|byte| byte.is_ascii_alphabetic() || *byte == b'_'),
    };
    if rest[1 + length] == close && well_formed {
        length + 2
    } else {
        0
    }
}

/// The two commits of a git range of abbreviated or whole hashes (`93bb240..a8929d1`, three dots
/// too), for a token whose only punctuation is dots.
fn commit_range(token: &str) -> Option<(&str, &str)> {
    // It opens with a commit: most tokens are told at once.
    const SHORTEST: usize = 7 + 2 + 7;
    if token.len() < SHORTEST {
        return None;
    }
    let bytes = token.as_bytes();
    let hex = |byte: &u8| matches!(byte, b'0'..=b'9' | b'a'..=b'f');
    let from_end = bytes.iter().position(|byte| !hex(byte))?;
    let dots = bytes[from_end..].iter().take_while(|&&byte| byte == b'.').count();
    let (from, to) = (&token[..from_end], &token[from_end + dots..]);
    let commit = |part: &str| {
        (7..=40).contains(&part.len())
            && part.bytes().all(|byte| hex(&byte))
            && part.bytes().any(|byte| byte.is_ascii_digit())
    };
    (matches!(dots, 2 | 3) && commit(from) && commit(to)).then_some((from, to))
}

/// The line around bytes `start..end` of `text` (a real newline or a JSON `\n` ends it), looked for
/// at most [`LOOK_AROUND`] bytes before and [`LINE_END_AROUND`] after, and the byte offset where
/// it ends.
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
    let ceiling = (end + LINE_END_AROUND).min(bytes.len());
    let mut line_end = end;
    while line_end < ceiling {
        let byte = bytes[line_end];
        if byte == b'\n' || (byte == b'\\' && bytes.get(line_end + 1) == Some(&b'n')) {
            break;
        }
        line_end += 1;
    }
    let line_start = floor_char_boundary(text, line_start);
    let line_end = floor_char_boundary(text, line_end);
    (&text[line_start..line_end], line_end)
}

/// Whether `rest` opens with an item's number in brackets, `(2) ` or `2) `.
fn opens_an_inline_item(rest: &[u8]) -> bool {
    let rest = rest.strip_prefix(b"(").unwrap_or(rest);
    matches!(rest, [b'1'..=b'9', b')', b' ', ..])
}

/// The sentence around bytes `start..end` of `text`, at most `max` bytes, and where it ends.
pub(crate) fn sentence_around(text: &str, start: usize, end: usize, max: usize) -> (&str, usize) {
    let bytes = text.as_bytes();
    // A quotation's closing mark ends the sentence it ends (`… does not need it.' We never …`).
    let ends_sentence = |at: usize| {
        let closes = match bytes[at] {
            b'.' | b'!' | b'?' => true,
            b'\'' | b'"' | b')' => at > 0 && matches!(bytes[at - 1], b'.' | b'!' | b'?'),
            _ => false,
        };
        // An item of a list inline, `Two things: (1) reduce … to 100; (2) don't change …`, is a
        // sentence of its own: a rule in one item is not the other's (verify42: the overruled
        // `(1)` listed as a rule with `(2)`).
        let item = bytes[at] == b' ' && opens_an_inline_item(&bytes[at + 1..]);
        bytes[at] == b'\n'
            || item
            || (closes && bytes.get(at + 1).is_none_or(|next| next.is_ascii_whitespace()))
    };
    // The sentence's start, as far back as the match still fits; failing that, half of `max`
    // back, from a word's start (`pdating the prod lockfile …` read as a word of its own).
    let floor = start.saturating_sub(max.saturating_sub(end - start));
    let mut sentence_start = start;
    while sentence_start > floor && !ends_sentence(sentence_start - 1) {
        sentence_start -= 1;
    }
    if sentence_start == floor && floor > 0 && !ends_sentence(floor - 1) {
        sentence_start = start.saturating_sub(max / 2);
        if sentence_start > 0 && !bytes[sentence_start - 1].is_ascii_whitespace() {
            if let Some(space) = bytes[sentence_start..start]
                .iter()
                .position(u8::is_ascii_whitespace)
            {
                sentence_start += space;
            }
        }
    }
    let ceiling = (sentence_start + max).min(bytes.len());
    let mut sentence_end = end;
    while sentence_end < ceiling && !ends_sentence(sentence_end) {
        sentence_end += 1;
    }
    if sentence_end < bytes.len() && bytes[sentence_end] != b'\n' {
        sentence_end += 1;
    }
    let sentence_start = floor_char_boundary(text, sentence_start);
    let sentence_end = floor_char_boundary(text, sentence_end.min(bytes.len()));
    (&text[sentence_start..sentence_end], sentence_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_only_prints_source_files_reads_them() {
        for reads in [
            "cat src/error.rs",
            "sed -n '1,200p' crates/shopd-api/src/error.rs",
            "head -n 80 Cargo.toml",
            "nl -ba app/models.py",
            "cat Dockerfile docker-compose.yml",
            "cat -n src/api/client.ts | head -5",
            "nl -ba app/models.py | tail -n 40",
            "git show release/0.10:crates/pgpool/src/inner.rs | sed -n 35,42p",
            "git show HEAD~3:src/app.py",
        ] {
            assert_eq!(prints_files(reads), FilesPrinted::Source, "{reads}");
        }
        for other in [
            "cat build.log",
            "head -n 80 target/test-output.txt",
            "cat docs/notes-4.txt | head -20",
        ] {
            assert_eq!(prints_files(other), FilesPrinted::Other, "{other}");
        }
        for runs in [
            "sed -i 's/a/b/' src/lib.rs",
            "sed -n '1,200p' src/lib.rs | grep error",
            "cat src/lib.rs > /tmp/copy.rs",
            "cat src/lib.rs | head -5 > /tmp/top.rs",
            "cat src/lib.rs | wc -l",
            "git show 4c9e2a1",
            "git show --stat HEAD",
            "cat src/lib.rs | sed -n '/fn main/,$p'",
            "cargo build",
            "cat",
        ] {
            assert_eq!(prints_files(runs), FilesPrinted::None, "{runs}");
        }
    }
    use pretty_assertions::assert_eq;

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
        let text = "Play said: 'Your app does not need it.' We never added it. Fix it.";
        let at = text.find("never").unwrap();
        assert_eq!(sentence_around(text, at, at + 5, 300).0, " We never added it.");
        let text = format!(
            "Lock {} needs 5.62.0. Updating the lockfile needs an init, which the reader role is blocked on.",
            "x".repeat(400)
        );
        let at = text.find("blocked").unwrap();
        assert_eq!(
            sentence_around(&text, at, at + 7, 300).0,
            " Updating the lockfile needs an init, which the reader role is blocked on."
        );
        let long = format!("{} role is blocked on it.", "word ".repeat(80));
        let at = long.find("blocked").unwrap();
        assert!(sentence_around(&long, at, at + 7, 300)
            .0
            .starts_with(" word word"));
        let text = "He said \"stop.\" Then left (as asked.) Done";
        let at = text.find("Then").unwrap();
        assert_eq!(sentence_around(text, at, at + 4, 300).0, " Then left (as asked.)");
    }

    /// Property: the eight-byte search finds the first byte the table marks, on every byte value
    /// at every position of a word, after any prefix.
    #[test]
    fn the_word_search_finds_the_first_interesting_byte() {
        let mut rng = crate::tests::property::Rng::new(3);
        for _ in 0..50_000 {
            let length = rng.below(40);
            let bytes: Vec<u8> = (0..length)
                .map(|_| match rng.below(3) {
                    0 => b'a' + rng.below(26) as u8,
                    1 => b' ',
                    _ => rng.below(256) as u8,
                })
                .collect();
            let from = rng.below(length + 1);
            let expected = bytes[from..]
                .iter()
                .position(|&byte| INTERESTING[usize::from(byte)])
                .map(|found| from + found);
            assert_eq!(
                find_interesting(&bytes, from),
                expected,
                "in {bytes:?} from {from}"
            );
        }
    }

    #[test]
    fn long_bodies_are_scanned_at_both_ends() {
        let text = format!(
            "{}{}{}",
            "a".repeat(SCAN_HEAD),
            "b".repeat(10_000),
            "c".repeat(SCAN_TAIL)
        );
        let (head, tail) = cap(&text);
        assert_eq!(head, "a".repeat(SCAN_HEAD));
        assert_eq!(tail, Some("c".repeat(SCAN_TAIL).as_str()));
    }
}
