//! The token scanner and classifier as they were before the fused scanner (commit 5d43599), kept
//! as the oracle of a property test: the fast scanner must find the same facts, byte for byte.
//! Only what was rewritten is kept here; the helpers that did not change are identify's own.

#![allow(dead_code)]

use crate::identify::{find_scheme_end, is_digits, is_hash, trim_token};
use crate::summary::facts::FactKind;

/// A byte that is part of a word.
const WORD: u8 = 0;
/// A byte that ends a token: whitespace, quotes, brackets, commas, a JSON escape's backslash.
const DELIMITER: u8 = 1;
/// A byte only identifiers carry: path and URL punctuation, `#`, `@`, `=`, digits.
const MARK: u8 = 2;

const fn byte_classes() -> [u8; 256] {
    let mut table = [WORD; 256];
    let delimiters = b" \t\r\n\"'`()<>[]{},;|\\";
    let mut i = 0;
    while i < delimiters.len() {
        table[delimiters[i] as usize] = DELIMITER;
        i += 1;
    }
    let marks = b"/.#:@-=0123456789";
    let mut i = 0;
    while i < marks.len() {
        table[marks[i] as usize] = MARK;
        i += 1;
    }
    table
}

static BYTE_CLASSES: [u8; 256] = byte_classes();

/// Calls `f` with every token of `text` that may be an identifier: runs between whitespace,
/// quotes, brackets, commas and JSON escapes (`\n` inside a JSON string ends a token too) that
/// hold a digit or identifier punctuation, or start with a capital (`Makefile`). Plain words,
/// most of any text, never reach `f`.
pub(crate) fn for_each_token<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut marked = false;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        match BYTE_CLASSES[byte as usize] {
            DELIMITER => {
                // Since the fused scanner: an IPv6 host or a template's placeholder in brackets
                // goes on with the URL it is part of.
                if matches!(byte, b'{' | b'[') && text[start..i].contains(':') {
                    let group = crate::scan::url_group(bytes, start, i);
                    if group > 0 {
                        marked = true;
                        i += group;
                        continue;
                    }
                }
                if i - start >= 3 && (marked || bytes[start].is_ascii_uppercase()) {
                    f(&text[start..i]);
                }
                i += 1;
                // Skip the escaped character of `\n`, `\"`, `\t`… (ASCII only, to stay on a boundary).
                if byte == b'\\' && i < bytes.len() && bytes[i].is_ascii() {
                    i += 1;
                }
                start = i;
                marked = false;
            }
            class => {
                marked |= class == MARK;
                i += 1;
            }
        }
    }
    if bytes.len() - start >= 3 && (marked || bytes[start].is_ascii_uppercase()) {
        f(&text[start..]);
    }
}

/// Extensions that make a bare word a file name, sorted for a binary search.
const FILE_EXTENSIONS: &[&str] = &[
    "bash", "c", "cc", "cfg", "cjs", "conf", "cpp", "cs", "css", "csv", "db", "diff", "dll", "env", "ex",
    "exs", "go", "gradle", "gz", "h", "hpp", "hs", "html", "ini", "ipynb", "java", "jpg", "js", "json",
    "jsonl", "jsx", "kt", "lock", "log", "lua", "md", "mjs", "ml", "nix", "patch", "pdf", "php", "png",
    "proto", "py", "pyi", "rb", "rs", "scala", "scss", "sh", "so", "sql", "sqlite", "svelte", "svg", "swift",
    "tf", "toml", "ts", "tsx", "txt", "vue", "wasm", "whl", "xml", "yaml", "yml", "zip", "zsh",
];

fn is_file_extension(ext: &str) -> bool {
    FILE_EXTENSIONS.binary_search(&ext).is_ok()
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
    if is_hash(token) {
        return Some((FactKind::Hash, token));
    }
    if shape.hash {
        if let Some(number) = token.strip_prefix('#') {
            if is_hash(number) {
                return Some((FactKind::Hash, number));
            }
            return (is_digits(number) && number.len() <= 7).then_some((FactKind::Issue, token));
        }
        if let Some((repository, number)) = token.split_once('#') {
            if is_hash(number) {
                return Some((FactKind::Hash, number));
            }
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
        // Since kept: a Maven coordinate is a version with its name (identify's own rule).
        if shape.dot && !shape.slash && crate::identify::is_maven_coordinate(token) {
            return Some((FactKind::Version, token));
        }
    }
    if shape.slash && crate::identify::is_doi(token) {
        return Some((FactKind::Url, token));
    }
    // Since kept: a media type is no path (identify's own rule).
    if (shape.slash || shape.dot) && !ctxhost_engine_kit::retention::is_media_type(token) {
        if let Some(path) = as_path(token) {
            // Since kept: a diff's `a/` and `b/` prefixes left out (identify's own rule).
            return Some((
                FactKind::Path,
                ctxhost_engine_kit::retention::without_diff_prefix(path),
            ));
        }
    }
    // Since kept: a security advisory's id or a tracker's key (identify's own rule).
    if shape.at_or_dash
        && shape.digit
        && (crate::identify::is_advisory_id(token) || ctxhost_engine_kit::retention::is_ticket_key(token))
    {
        return Some((FactKind::Issue, token));
    }
    // `pytest-7.4.0`, `serde@1.0.210`: a name with its version.
    if shape.at_or_dash && shape.digit && !shape.dot && token.split('-').any(is_hash) {
        return Some((FactKind::Hash, token));
    }
    if shape.digit && shape.dot && shape.at_or_dash {
        let (name, version) = token.rsplit_once(['-', '@'])?;
        return (!name.is_empty() && is_version(version)).then_some((FactKind::Version, token));
    }
    None
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
    let ipv4 = !prefixed && core.len() == rest.len() && crate::identify::is_ipv4(token);
    numeric && suffix_ok && (parts >= 3 || (prefixed && parts == 2)) && !ipv4
}

/// The path in `token` (without a `:line:column` suffix), when it is one.
fn as_path(token: &str) -> Option<&str> {
    // `src/app.py:42`, `src/app.py:42:5`, `docs/a.md:40:text` (grep): the path before the line.
    let path = match token.split_once(':') {
        Some((path, position)) if is_digits(position.split(':').next().unwrap_or("")) => path,
        Some(_) => return None,
        None => token,
    };
    let path = match path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")) {
        Some(absolute) if absolute.starts_with('/') => absolute,
        _ => path,
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
        return (extension.is_some_and(is_file_extension) && !crate::identify::is_hcl_reference(path))
            .then_some(path);
    }
    if path.contains("//") || (path.contains("..") && !path.starts_with("../")) {
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
    let ok = ok && !crate::identify::is_date(path);
    // Since the fused scanner: a shell's streams are no files.
    let ok = ok && !ctxhost_engine_kit::retention::is_stream_device(path);
    ok.then_some(path)
}

mod properties {
    use pretty_assertions::assert_eq;

    use crate::{identify::Shape, scan, tests::property::Rng};

    /// Every token the reference scanner found, with what the reference classifier made of it.
    fn reference(text: &str) -> Vec<(&str, Option<(FactKind, &str)>)> {
        let mut found = Vec::new();
        super::for_each_token(text, |token| {
            // Since the fused scanner: a git range's two commits are tokens of their own.
            for token in commits_of_range(token).unwrap_or_else(|| vec![token]) {
                found.push((token, super::classify_token(token)));
            }
        });
        found
    }

    /// `a..b` or `a...b` of two hex commits of 7 to 40 digits, each holding a decimal digit.
    fn commits_of_range(token: &str) -> Option<Vec<&str>> {
        let at = token.find("..")?;
        let from = &token[..at];
        let to = token[at..].trim_start_matches('.');
        let dots = token.len() - from.len() - to.len();
        let commit = |part: &str| {
            part.len() >= 7
                && part.len() <= 40
                && part
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
                && part.chars().any(|c| c.is_ascii_digit())
        };
        (matches!(dots, 2 | 3) && commit(from) && commit(to)).then(|| vec![from, to])
    }

    fn fused(text: &str) -> Vec<(&str, Option<(FactKind, &str)>)> {
        let mut found = Vec::new();
        scan::for_each_token(text, |token, shape| {
            assert_eq!(shape, Shape::of(token), "the shape of {token:?}");
            found.push((token, crate::identify::classify_token(token, shape)));
        });
        found
    }

    use super::FactKind;

    /// Pieces that make tokens of every kind and every near miss: delimiters, JSON escapes,
    /// multibyte characters after a backslash, paths, versions, hashes, URLs, issue numbers.
    const PIECES: &[&str] = &[
        " ",
        "\n",
        "\\",
        "\\n",
        "\\\"",
        "\\é",
        "\"",
        "'",
        "`",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ";",
        "|",
        "\t",
        "é",
        "/",
        "//",
        ".",
        "..",
        "../",
        "./",
        "~/",
        ":",
        "::",
        "#",
        "@",
        "-",
        "--",
        "=",
        "+",
        "*",
        ">",
        "!",
        "?",
        "_",
        "0",
        "7",
        "42",
        "1.2",
        "1.2.3",
        "v",
        "V",
        "v1.2",
        "-beta.1",
        "+build",
        "a",
        "f",
        "3f2a9c1b",
        "deadbeef12",
        "src",
        "app",
        ".py",
        ".rs",
        ".toml",
        ".tar.gz",
        ".x",
        "README",
        "Makefile",
        "Dockerfile",
        "http",
        "https",
        "://",
        "www.",
        "example.com",
        "org/repo",
        "issues",
        "x",
        "Z",
        "PASSED",
        "-rw-r--r--",
        "%",
        "ftp",
        "git@github.com:a/b.git",
        "=a/b.toml",
        "CVE-2024-45590",
        "GHSA-qwcr-r2fm-qrc7",
        "INC-4471",
        "SHA-256",
        "application/vnd.oci.image.index.v1+json",
        "a/",
    ];

    /// Property: the fused scanner and classifier find the tokens the reference found, with the
    /// same kinds and kept parts, in the same order.
    #[test]
    fn the_fused_scanner_finds_what_the_reference_found() {
        let mut rng = Rng::new(7);
        for round in 0..20_000 {
            let pieces = 1 + rng.below(if round % 10 == 0 { 200 } else { 24 });
            let text: String = (0..pieces).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            assert_eq!(fused(&text), reference(&text), "in {text:?}");
        }
    }

    /// The same on real text: the bundled examples, read whole (logs, diffs, JSON with escapes).
    #[test]
    fn the_fused_scanner_agrees_with_the_reference_on_the_examples() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/transcripts");
        let mut read = 0;
        for entry in std::fs::read_dir(&folder).expect("the examples folder") {
            let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("an example");
            assert_eq!(fused(&text), reference(&text));
            read += text.len();
        }
        assert!(read > 100_000, "only {read} bytes of examples");
    }

    /// A git range's commits are hashes of their own; a parent directory's `..`, a range of
    /// versions and hex words without a digit are not split.
    #[test]
    fn a_git_ranges_commits_are_hashes_of_their_own() {
        let text = "index 93bb240..a8929d1 100644, git log 5d02e8a...9c75bd7 ../src/app.py v1.2..v1.3 \
                    1.2.3..1.2.4 deadbee..cafe123 a/b/../c.py";
        let found = fused(text);
        assert_eq!(found, reference(text));
        let hashes: Vec<&str> = found
            .iter()
            .filter_map(|(_, fact)| {
                fact.filter(|(kind, _)| *kind == FactKind::Hash)
                    .map(|(_, text)| text)
            })
            .collect();
        assert_eq!(hashes, ["93bb240", "a8929d1", "5d02e8a", "9c75bd7"]);
        assert!(
            found.iter().any(|(token, _)| *token == "../src/app.py"),
            "{found:?}"
        );
        assert!(
            found.iter().any(|(token, _)| *token == "deadbee..cafe123"),
            "{found:?}"
        );
    }

    /// Every extension and extensionless file name the reference knew, and near misses.
    #[test]
    fn the_fused_classifier_knows_the_reference_file_names() {
        let mut texts: Vec<String> = super::FILE_NAMES.iter().map(|name| (*name).to_owned()).collect();
        for ext in super::FILE_EXTENSIONS {
            texts.extend([format!("app.{ext}"), format!("app.{ext}x"), format!("app.x{ext}")]);
        }
        texts.extend(["Makefiles", "Dockerfil", "a.YAML", "a.Py"].map(str::to_owned));
        for text in texts {
            assert_eq!(fused(&text), reference(&text), "{text}");
        }
    }
}
