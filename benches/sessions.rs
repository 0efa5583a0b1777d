//! Made-up, deterministic agent sessions shaped like real ones, shared by the benchmarks
//! (`benches/support.rs`), `cargo xtask bench`, `cargo xtask gen-heavy` and the compressor's
//! retention tests (each includes this file with `#[path]`; it needs only the engine ABI and
//! serde_json).
//!
//! - [`heavy_session`]: a long coding-agent session, tool outputs of several KB (logs, listings,
//!   diffs, fetched pages) mixed with short turns; ~1.7 KB of JSON a message, so 5,000 messages
//!   are ~8.7 MB and ~2 million rough tokens.
//! - [`tool_heavy_conversation`]: the replay and observer benchmarks' session, lighter: requests,
//!   tool calls and 1–3 KB outputs (test runs, file reads, searches); 10,000 messages are ~10 MB.
//! - [`corpus`]: the retention corpus, a few hundred messages each: web research (search results
//!   and fetched pages full of URLs), debugging (long logs, error lines, tracebacks) and multi-file
//!   edits (diffs, commit hashes, issue numbers).
//!
//! Nothing here is tuned to a summarizer: the sessions are written the way agents and tools write,
//! with a pseudo-random generator seeded per session, so every run builds the same bytes.
#![allow(dead_code)] // each includer uses a different part

use ctxhost_engine_abi::{Message, ToolCall};
use serde_json::json;

/// SplitMix64: small, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `true` with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// `len` lowercase hex digits (a commit hash when 7 or 40).
    pub fn hex(&mut self, len: usize) -> String {
        let mut out = String::with_capacity(len);
        while out.len() < len {
            out.push_str(&format!("{:016x}", self.next_u64()));
        }
        out.truncate(len);
        out
    }
}

const WORDS: &[&str] = &[
    "request",
    "handler",
    "session",
    "cache",
    "token",
    "retry",
    "timeout",
    "buffer",
    "config",
    "worker",
    "queue",
    "schema",
    "migration",
    "router",
    "payload",
    "index",
    "cursor",
    "batch",
    "stream",
    "client",
    "server",
    "plugin",
    "report",
    "export",
    "parser",
    "window",
    "budget",
    "summary",
    "context",
    "layout",
];
const MODULES: &[&str] = &[
    "auth",
    "billing",
    "orders",
    "search",
    "users",
    "inventory",
    "payments",
    "notify",
    "reports",
    "sync",
    "gateway",
    "storage",
    "metrics",
    "scheduler",
    "webhooks",
];
const DIRS: &[&str] = &[
    "src",
    "src/api",
    "src/core",
    "lib",
    "app/models",
    "app/services",
    "tests",
    "pkg/internal",
];
const EXTS: &[&str] = &["py", "rs", "ts", "go"];
const SITES: &[&str] = &[
    "https://docs.python.org/3/library",
    "https://github.com",
    "https://stackoverflow.com/questions",
    "https://developer.mozilla.org/en-US/docs/Web/API",
    "https://docs.rs",
    "https://pkg.go.dev",
    "https://www.postgresql.org/docs/16",
    "https://kubernetes.io/docs/concepts",
    "https://blog.cloudflare.com",
    "https://engineering.example.org/posts",
    "https://arxiv.org/abs",
    "https://news.ycombinator.com/item?id=",
];
const ERRORS: &[&str] = &[
    "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'",
    "KeyError: 'customer_id'",
    "AttributeError: 'Session' object has no attribute 'expires_at'",
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "error[E0382]: borrow of moved value: `config`",
    "error[E0308]: mismatched types",
    "panic: runtime error: index out of range [3] with length 3",
    "psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"orders_pkey\"",
    "TimeoutError: operation timed out after 30000 ms",
    "AssertionError: expected 200, got 500",
    "ModuleNotFoundError: No module named 'yaml'",
];

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.below(WORDS.len())]
}

fn path(rng: &mut Rng) -> String {
    let ext = rng.pick(EXTS);
    format!(
        "{}/{}/{}_{}.{ext}",
        rng.pick(DIRS),
        rng.pick(MODULES),
        word(rng),
        rng.below(40)
    )
}

fn url(rng: &mut Rng) -> String {
    let site = *rng.pick(SITES);
    if site.ends_with('=') {
        return format!("{site}{}", 30_000_000 + rng.below(9_000_000));
    }
    let slug = format!("{}-{}-{}", word(rng), word(rng), rng.below(1_000));
    match rng.below(3) {
        0 => format!("{site}/{}/{slug}", rng.pick(MODULES)),
        1 => format!("{site}/{slug}.html"),
        _ => format!("{site}/{}/{slug}#section-{}", word(rng), rng.below(20)),
    }
}

fn version(rng: &mut Rng) -> String {
    format!("{}.{}.{}", rng.below(5), rng.below(30), rng.below(20))
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(if rng.chance(30) { "the" } else { word(rng) });
    }
    out
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> Message {
    Message::assistant_calls(vec![ToolCall::new(id, name, arguments.to_string())])
}

// ---------------------------------------------------------------------------------------------
// The heavy session.

/// A long coding-agent session of `n` messages (about; a last assistant call without its result
/// is dropped): ~1.7 KB of JSON a message on average, tool outputs of several KB (test logs,
/// directory listings, diffs, fetched pages) mixed with short outputs, short user turns every
/// dozen messages and short assistant notes.
pub fn heavy_session(n: usize) -> Vec<Message> {
    let mut rng = Rng::new(0x4ea7_5e55);
    let mut messages = vec![Message::system(
        "You are a coding agent working in /srv/app. Use the tools; keep changes small and run the tests.",
    )];
    let mut step = 0usize;
    while messages.len() < n {
        if step.is_multiple_of(6) {
            messages.push(Message::user(format!(
                "Next: fix issue #{} in {} and run the tests again.",
                1_000 + step,
                path(&mut rng)
            )));
        }
        let id = format!("call_{step}");
        let (name, arguments, output) = heavy_step(&mut rng, step);
        messages.push(call(&id, name, arguments));
        messages.push(Message::tool(id, output));
        if step % 3 == 2 {
            messages.push(Message::assistant(format!(
                "Step {step}: {}.",
                sentence(&mut rng, 12)
            )));
        }
        step += 1;
    }
    messages.truncate(n.max(2));
    if messages.last().is_some_and(|m| m.has_tool_calls()) {
        messages.pop();
    }
    messages
}

fn heavy_step(rng: &mut Rng, step: usize) -> (&'static str, serde_json::Value, String) {
    match rng.below(10) {
        0 | 1 => {
            let command = format!("pytest -q tests/test_{}.py", rng.pick(MODULES));
            let lines = rng.between(45, 125);
            ("terminal", json!({ "command": command }), test_log(rng, lines))
        }
        2 => {
            let entries = rng.between(34, 80);
            (
                "terminal",
                json!({ "command": "ls -la src/" }),
                listing(rng, entries),
            )
        }
        3 | 4 => {
            let file = path(rng);
            let lines = rng.between(45, 136);
            (
                "read_file",
                json!({ "path": file, "offset": 1 }),
                source_file(rng, lines),
            )
        }
        5 => {
            let files = rng.between(2, 5);
            ("terminal", json!({ "command": "git diff" }), diff(rng, files))
        }
        6 => {
            let address = url(rng);
            let paragraphs = rng.between(28, 68);
            ("web_extract", json!({ "urls": [address] }), page(rng, paragraphs))
        }
        7 => {
            let query = format!("{} {}", word(rng), word(rng));
            ("web_search", json!({ "query": query }), search_results(rng, 6))
        }
        8 => {
            let file = path(rng);
            let lines = rng.between(8, 20);
            let content = source_file(rng, lines);
            (
                "write_file",
                json!({ "path": file, "content": content }),
                format!("{{\"success\": true, \"bytes_written\": {}}}", 200 + step % 900),
            )
        }
        _ => {
            let command = format!("git log --oneline -n {}", rng.between(3, 8));
            let lines = rng.between(3, 8);
            let output = (0..lines)
                .map(|_| format!("{} {}\n", rng.hex(7), sentence(rng, 6)))
                .collect();
            ("terminal", json!({ "command": command }), output)
        }
    }
}

fn test_log(rng: &mut Rng, lines: usize) -> String {
    let mut out =
        String::from("============================= test session starts ==============================\n");
    let module = *rng.pick(MODULES);
    for line in 0..lines {
        out.push_str(&format!(
            "tests/test_{module}.py::test_{}_{line} PASSED                                [{:3}%]\n",
            word(rng),
            line * 100 / lines.max(1)
        ));
    }
    if rng.chance(40) {
        out.push_str(&format!(
            "FAILED tests/test_{module}.py::test_{} - {}\n",
            word(rng),
            rng.pick(ERRORS)
        ));
        out.push_str(
            "=========================== 1 failed in 2.31s ===========================\nExit code: 1\n",
        );
    } else {
        out.push_str(&format!(
            "=========================== {lines} passed in 1.92s ===========================\n"
        ));
    }
    out
}

fn listing(rng: &mut Rng, entries: usize) -> String {
    let mut out = format!("total {}\n", entries * 8);
    for _ in 0..entries {
        out.push_str(&format!(
            "-rw-r--r--  1 agent agent {:6} Nov 23 10:{:02} {}_{}.{}\n",
            rng.between(200, 90_000),
            rng.below(60),
            word(rng),
            rng.below(50),
            rng.pick(EXTS)
        ));
    }
    out
}

fn source_file(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for line in 1..=lines {
        let text = match rng.below(6) {
            0 => format!("def {}_{}(self, {}):", word(rng), line, word(rng)),
            1 => format!("    return self.{}.get({:?}, None)", word(rng), word(rng)),
            2 => format!("    # {}", sentence(rng, 8)),
            _ => format!(
                "    {} = {}({}, timeout={})",
                word(rng),
                word(rng),
                word(rng),
                rng.below(60)
            ),
        };
        out.push_str(&format!("{line:5}\t{text}\n"));
    }
    out
}

fn diff(rng: &mut Rng, files: usize) -> String {
    let mut out = String::new();
    for _ in 0..files {
        let file = path(rng);
        out.push_str(&format!(
            "diff --git a/{file} b/{file}\nindex {}..{} 100644\n--- a/{file}\n+++ b/{file}\n@@ -{},7 +{},9 @@\n",
            rng.hex(7),
            rng.hex(7),
            rng.between(10, 400),
            rng.between(10, 400)
        ));
        for _ in 0..rng.between(8, 20) {
            let mark = *rng.pick(&[" ", " ", "+", "-"]);
            out.push_str(&format!(
                "{mark}    {} = {}({})\n",
                word(rng),
                word(rng),
                word(rng)
            ));
        }
    }
    out
}

/// A patch tool's unified diff of one file (difflib's, without git's `index` line).
fn patch_diff(rng: &mut Rng, file: &str) -> String {
    let line = rng.between(10, 400);
    let mut out = format!("--- a/{file}\n+++ b/{file}\n@@ -{line},7 +{line},8 @@\n");
    for _ in 0..rng.between(8, 20) {
        let mark = *rng.pick(&[" ", " ", "+", "-"]);
        out.push_str(&format!(
            "{mark}    {} = {}({})\n",
            word(rng),
            word(rng),
            word(rng)
        ));
    }
    out
}

fn page(rng: &mut Rng, paragraphs: usize) -> String {
    let mut out = format!("# {}\n\n", sentence(rng, 6));
    for _ in 0..paragraphs {
        let words = rng.between(15, 30);
        out.push_str(&sentence(rng, words));
        if rng.chance(25) {
            out.push_str(&format!(" See [{}]({}).", word(rng), url(rng)));
        }
        out.push_str("\n\n");
    }
    out
}

fn search_results(rng: &mut Rng, count: usize) -> String {
    let results: Vec<serde_json::Value> = (0..count)
        .map(|_| {
            json!({
                "title": sentence(rng, 6),
                "url": url(rng),
                "description": sentence(rng, 22),
            })
        })
        .collect();
    json!({ "success": true, "data": { "web": results } }).to_string()
}

// ---------------------------------------------------------------------------------------------
// The retention corpus.

/// The retention corpus: `(name, messages)` for two sessions of each shape (web research,
/// debugging, multi-file edits), a few hundred messages each.
pub fn corpus() -> Vec<(String, Vec<Message>)> {
    vec![
        ("research-a".to_owned(), research_session(11, 260)),
        ("research-b".to_owned(), research_session(12, 340)),
        ("debugging-a".to_owned(), debugging_session(21, 240)),
        ("debugging-b".to_owned(), debugging_session(22, 320)),
        ("edits-a".to_owned(), edits_session(31, 220)),
        ("edits-b".to_owned(), edits_session(32, 300)),
    ]
}

/// How a session's tools print: Hermes wraps shell output in JSON (`{"output": …}`, newlines
/// escaped), SWE-agent-like tools print plain text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Json,
    Plain,
}

fn shell_output(style: Style, output: &str, exit_code: i32) -> String {
    match style {
        Style::Json => json!({ "output": output, "exit_code": exit_code, "error": null }).to_string(),
        Style::Plain => format!("{output}\nExit code: {exit_code}"),
    }
}

/// A session being written: messages, call ids, the user's turn rhythm.
struct Writer {
    messages: Vec<Message>,
    calls: usize,
}

impl Writer {
    fn new(system: &str) -> Self {
        Self {
            messages: vec![Message::system(system)],
            calls: 0,
        }
    }

    fn tool(&mut self, name: &str, arguments: serde_json::Value, output: String) {
        let id = format!("call_{:04}", self.calls);
        self.calls += 1;
        self.messages.push(call(&id, name, arguments));
        self.messages.push(Message::tool(id, output));
    }

    fn say(&mut self, text: String) {
        self.messages.push(Message::assistant(text));
    }

    fn ask(&mut self, text: String) {
        self.messages.push(Message::user(text));
    }

    fn len(&self) -> usize {
        self.messages.len()
    }

    /// The messages, ending with a user request that the tail keeps.
    fn finish(mut self, last_request: String) -> Vec<Message> {
        self.ask(last_request);
        self.messages
    }
}

const TOPICS: &[&str] = &[
    "connection pooling in PostgreSQL",
    "rate limiting with token buckets",
    "WebSocket reconnection strategies",
    "structured logging for Python services",
    "zero-downtime schema migrations",
    "OpenTelemetry tracing in Go",
    "prompt caching for LLM APIs",
    "SQLite WAL mode under concurrency",
];

/// Web research: searches whose results overlap, fetched pages with a few links each, notes
/// written to a file, the user steering every twenty-odd messages.
pub fn research_session(seed: u64, n: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let topic = *rng.pick(TOPICS);
    // The web this session can reach: results overlap between related queries.
    let pool: Vec<String> = (0..70).map(|_| url(&mut rng)).collect();
    let mut w = Writer::new(
        "You are a research assistant with web_search, web_extract, read_file and write_file tools. \
         Cite sources as URLs.",
    );
    w.ask(format!(
        "Research {topic} for our team wiki. Collect the main approaches, their trade-offs and \
         links to primary sources; write notes to notes/{}.md as you go.",
        topic.split(' ').next().unwrap_or("notes").to_lowercase()
    ));
    let mut turn = 0;
    while w.len() < n - 1 {
        turn += 1;
        for _ in 0..rng.between(2, 4) {
            let query = format!("{topic} {} {}", word(&mut rng), word(&mut rng));
            let results: Vec<serde_json::Value> = (0..5)
                .map(|_| {
                    json!({
                        "title": sentence(&mut rng, 7),
                        "url": rng.pick(&pool).clone(),
                        "description": sentence(&mut rng, 30),
                    })
                })
                .collect();
            w.tool(
                "web_search",
                json!({ "query": query }),
                json!({ "success": true, "data": { "web": results } }).to_string(),
            );
        }
        for _ in 0..rng.between(1, 3) {
            let address = rng.pick(&pool).clone();
            let mut content = format!("# {}\n\n", sentence(&mut rng, 6));
            for _ in 0..rng.between(10, 22) {
                let words = rng.between(25, 50);
                content.push_str(&sentence(&mut rng, words));
                if rng.chance(15) {
                    content.push_str(&format!(" ([source]({}))", rng.pick(&pool)));
                }
                if rng.chance(8) {
                    content.push_str(&format!(" Requires version {} or later.", version(&mut rng)));
                }
                content.push_str("\n\n");
            }
            w.tool(
                "web_extract",
                json!({ "urls": [address.clone()] }),
                json!({ "results": [{ "url": address, "title": sentence(&mut rng, 5), "content": content }] })
                    .to_string(),
            );
        }
        if turn % 3 == 0 {
            let notes = format!("notes/{}.md", word(&mut rng));
            let body = format!(
                "## {}\n\n{}\n\nSources: {}\n",
                sentence(&mut rng, 4),
                sentence(&mut rng, 60),
                rng.pick(&pool)
            );
            w.tool(
                "write_file",
                json!({ "path": notes, "content": body }),
                json!({ "success": true, "bytes_written": body.len() }).to_string(),
            );
        }
        w.say(format!(
            "So far: {}. The most useful source is {}.",
            sentence(&mut rng, 25),
            rng.pick(&pool)
        ));
        if turn % 3 == 0 {
            w.ask(format!(
                "Good. Now look into {} {} and how it interacts with {}; keep the notes short.",
                word(&mut rng),
                word(&mut rng),
                word(&mut rng)
            ));
        }
    }
    w.finish("Now write the final summary for the wiki page, with every source you used.".to_owned())
}

/// A failing test suite tracked down: long test logs with tracebacks and error lines, reads,
/// searches, small edits, dependency pins, commits.
pub fn debugging_session(seed: u64, n: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let style = if seed.is_multiple_of(2) {
        Style::Json
    } else {
        Style::Plain
    };
    let files: Vec<String> = (0..22).map(|_| path(&mut rng)).collect();
    let errors: Vec<&str> = (0..5).map(|_| *rng.pick(ERRORS)).collect();
    let mut history: Vec<(String, String)> = (0..6).map(|_| (rng.hex(7), sentence(&mut rng, 5))).collect();
    let issue = 200 + rng.below(700);
    let mut w = Writer::new(
        "You are a coding agent in /srv/app with terminal, read_file, search_files and patch tools.",
    );
    w.ask(format!(
        "CI is red since this morning (issue #{issue}): `pytest tests/` fails with\n{}\nFind the cause \
         and fix it. Don't change the public API, and don't upgrade Django.",
        errors[0]
    ));
    let mut turn = 0;
    while w.len() < n - 1 {
        turn += 1;
        let module = *rng.pick(MODULES);
        let failing = rng.pick(&files).clone();
        let error = *rng.pick(&errors);
        let mut log = String::from("============================= test session starts ==============================\nplatform linux -- Python 3.11.6, pytest-7.4.3, pluggy-1.3.0\nrootdir: /srv/app\n");
        let cases = rng.between(40, 90);
        for case in 0..cases {
            log.push_str(&format!(
                "tests/test_{module}.py::test_{}_{case} PASSED                                  [{:3}%]\n",
                word(&mut rng),
                case * 100 / cases
            ));
        }
        let failed = turn % 4 != 0;
        if failed {
            let line = rng.between(20, 400);
            log.push_str(&format!(
                "=================================== FAILURES ===================================\n\
                 Traceback (most recent call last):\n  File \"/srv/app/{failing}\", line {line}, in {}\n    \
                 result = {}(payload)\n  File \"/srv/app/{}\", line {}, in {}\n    return self.{}[key]\n{error}\n\
                 FAILED tests/test_{module}.py::test_{} - {error}\n\
                 ========================= 1 failed, {} passed in 3.{}s =========================",
                word(&mut rng),
                word(&mut rng),
                rng.pick(&files),
                rng.between(10, 300),
                word(&mut rng),
                word(&mut rng),
                word(&mut rng),
                cases - 1,
                rng.below(100),
            ));
        } else {
            log.push_str(&format!(
                "============================== {cases} passed in 2.{}s ==============================",
                rng.below(100)
            ));
        }
        w.tool(
            "terminal",
            json!({ "command": format!("python -m pytest -q tests/test_{module}.py") }),
            shell_output(style, &log, i32::from(failed)),
        );
        let lines = rng.between(60, 140);
        w.tool(
            "read_file",
            json!({ "path": failing.clone(), "offset": rng.between(1, 200) }),
            source_file(&mut rng, lines),
        );
        if rng.chance(50) {
            let pattern = format!("{}_{}", word(&mut rng), word(&mut rng));
            let hits: String = (0..rng.between(4, 12))
                .map(|_| {
                    format!(
                        "{}:{}:    {} = {}({})\n",
                        rng.pick(&files),
                        rng.between(1, 500),
                        word(&mut rng),
                        pattern,
                        word(&mut rng)
                    )
                })
                .collect();
            w.tool("search_files", json!({ "pattern": pattern, "path": "src" }), hits);
        }
        if rng.chance(30) {
            let package = *rng.pick(&["requests", "urllib3", "sqlalchemy", "pydantic", "celery", "redis"]);
            let pinned = version(&mut rng);
            w.tool(
                "terminal",
                json!({ "command": format!("pip install {package}=={pinned}") }),
                shell_output(
                    style,
                    &format!("Collecting {package}=={pinned}\n  Downloading {package}-{pinned}-py3-none-any.whl (94 kB)\nSuccessfully installed {package}-{pinned}"),
                    0,
                ),
            );
        }
        if turn % 2 == 0 {
            let old = format!("self.{}[key]", word(&mut rng));
            let new = format!("self.{}.get(key)", word(&mut rng));
            w.tool(
                "patch",
                json!({ "path": failing.clone(), "old_string": old, "new_string": new }),
                json!({ "success": true, "diff": format!("--- a/{failing}\n+++ b/{failing}\n@@ -{0},1 +{0},1 @@\n-{old}\n+{new}\n", rng.between(10, 300)) }).to_string(),
            );
        }
        if turn % 5 == 0 {
            let hash = rng.hex(7);
            let message = format!("fix: {} in {module} (#{issue})", sentence(&mut rng, 4));
            history.push((hash.clone(), message.clone()));
            w.tool(
                "terminal",
                json!({ "command": format!("git commit -am \"{message}\"") }),
                shell_output(
                    style,
                    &format!(
                        "[fix/{module} {hash}] {message}\n 1 file changed, 3 insertions(+), 2 deletions(-)"
                    ),
                    0,
                ),
            );
            let log: String = history
                .iter()
                .rev()
                .take(8)
                .map(|(hash, message)| format!("{hash} {message}\n"))
                .collect();
            w.tool(
                "terminal",
                json!({ "command": "git log --oneline -n 8" }),
                shell_output(style, &log, 0),
            );
        }
        w.say(format!(
            "The failure in {failing} comes from {}; {}.",
            sentence(&mut rng, 8),
            sentence(&mut rng, 12)
        ));
        if turn % 4 == 0 {
            w.ask(format!(
                "Still failing on my machine with `{}`. Check {} too, and keep the fix minimal.",
                rng.pick(&errors),
                rng.pick(&files)
            ));
        }
    }
    w.finish(format!(
        "Run the whole suite once more and, if it is green, open a PR that closes #{issue}."
    ))
}

/// Multi-file edits: reads, patches with their diffs, builds with compiler errors, issues looked
/// up, commits and their hashes.
pub fn edits_session(seed: u64, n: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let style = if seed.is_multiple_of(2) {
        Style::Plain
    } else {
        Style::Json
    };
    let files: Vec<String> = (0..26).map(|_| path(&mut rng)).collect();
    // The workspace's dependencies: the same names and versions in every build.
    let dependencies: Vec<(String, String)> = (0..30)
        .map(|_| {
            (
                format!("{}-{}", word(&mut rng), word(&mut rng)),
                version(&mut rng),
            )
        })
        .collect();
    let related: Vec<usize> = (0..5).map(|_| 1_000 + rng.below(3_000)).collect();
    let mut w = Writer::new(
        "You are a coding agent in /work/service with terminal, read_file, write_file and patch tools.",
    );
    let issue = 1_000 + rng.below(3_000);
    w.ask(format!(
        "Implement issue #{issue}: rename `{}` to `{}` across the service, update the callers and \
         the docs, and keep every commit small. Target release v{}.",
        word(&mut rng),
        word(&mut rng),
        version(&mut rng)
    ));
    let mut turn = 0;
    while w.len() < n - 1 {
        turn += 1;
        let file = rng.pick(&files).clone();
        let lines = rng.between(50, 130);
        w.tool(
            "read_file",
            json!({ "path": file.clone() }),
            source_file(&mut rng, lines),
        );
        let patch_files = rng.between(1, 3);
        for _ in 0..patch_files {
            let target = rng.pick(&files).clone();
            let hunks = patch_diff(&mut rng, &target);
            w.tool(
                "patch",
                json!({ "path": target.clone(), "old_string": word(&mut rng), "new_string": word(&mut rng) }),
                json!({ "success": true, "diff": hunks }).to_string(),
            );
        }
        let broken = rng.chance(35);
        let mut build = String::new();
        let start = rng.below(dependencies.len());
        for (name, pinned) in dependencies.iter().cycle().skip(start).take(rng.between(10, 30)) {
            build.push_str(&format!("   Compiling {name} v{pinned}\n"));
        }
        if broken {
            build.push_str(&format!(
                "error[E0425]: cannot find value `{}` in this scope\n --> {}:{}:{}\n",
                word(&mut rng),
                rng.pick(&files),
                rng.between(1, 400),
                rng.between(1, 80)
            ));
            build.push_str("error: could not compile `service` (lib) due to 1 previous error");
        } else {
            build.push_str(&format!(
                "    Finished `dev` profile [unoptimized + debuginfo] target(s) in {}.{}s",
                rng.between(2, 40),
                rng.below(100)
            ));
        }
        w.tool(
            "terminal",
            json!({ "command": "cargo build" }),
            shell_output(style, &build, i32::from(broken)),
        );
        if rng.chance(20) {
            let other = *rng.pick(&related);
            w.tool(
                "terminal",
                json!({ "command": format!("gh issue view {other}") }),
                shell_output(
                    style,
                    &format!(
                        "title:\t{}\nstate:\tOPEN\nnumber:\t{other}\nurl:\thttps://github.com/acme/service/issues/{other}\n--\n{}",
                        sentence(&mut rng, 6),
                        sentence(&mut rng, 60)
                    ),
                    0,
                ),
            );
        }
        if !broken && turn % 2 == 0 {
            let hash = rng.hex(7);
            w.tool(
                "terminal",
                json!({ "command": format!("git commit -am \"{} (#{issue})\"", sentence(&mut rng, 4)) }),
                shell_output(
                    style,
                    &format!(
                        "[rename {hash}] {}\n {} files changed",
                        sentence(&mut rng, 4),
                        patch_files
                    ),
                    0,
                ),
            );
        }
        w.say(format!("Updated {file}: {}.", sentence(&mut rng, 14)));
        if turn % 4 == 0 {
            w.ask(format!(
                "Also update the callers in {} and mention the change in docs/CHANGELOG.md.",
                rng.pick(&files)
            ));
        }
    }
    w.finish(format!(
        "Push the branch and open the PR for #{issue}; list every commit in its description."
    ))
}

/// A conversation of about `n` messages: a system prompt, then turns of a user request, assistant
/// tool calls with 1–3 KB outputs (shell runs, file reads, searches), and assistant replies.
pub fn tool_heavy_conversation(n: usize) -> Vec<Message> {
    let mut messages = vec![Message::system(
        "You are a coding agent in /srv/app. Use the tools.",
    )];
    let mut step = 0usize;
    while messages.len() < n {
        if step.is_multiple_of(25) {
            messages.push(Message::user(format!(
                "Step {step}: please fix issue #{} in src/mod_{step}.rs",
                100 + step
            )));
        }
        let id = format!("call_{step}");
        let (name, arguments, output) = match step % 3 {
            0 => (
                "terminal",
                format!(r#"{{"command":"cargo test -p mod_{step}"}}"#),
                test_run_output(step),
            ),
            1 => (
                "read_file",
                format!(r#"{{"path":"src/mod_{step}.rs","offset":1}}"#),
                listing_output(step),
            ),
            _ => (
                "search_files",
                format!(r#"{{"pattern":"fn handle_{step}","path":"src"}}"#),
                hits_output(step),
            ),
        };
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            id.clone(),
            name,
            arguments,
        )]));
        messages.push(Message::tool(id, output));
        if step % 5 == 4 {
            messages.push(Message::assistant(format!(
                "Checked step {step}; moving on to the next module."
            )));
        }
        step += 1;
    }
    messages.truncate(n.max(2));
    if messages.last().is_some_and(|m| m.has_tool_calls()) {
        messages.pop();
    }
    messages
}

fn test_run_output(step: usize) -> String {
    let mut out = String::new();
    for line in 0..30 + step % 20 {
        out.push_str(&format!("test mod_{step}::case_{line} ... ok (0.{line:02}s)\n"));
    }
    out.push_str(&format!(
        "error[E0308]: mismatched types in src/mod_{step}.rs:{}\nExit code: 1\n",
        10 + step % 90
    ));
    out
}

fn listing_output(step: usize) -> String {
    (1..=40 + step % 30)
        .map(|line| format!("{line:4}| let value_{line} = compute_{step}(input, {line});\n"))
        .collect()
}

fn hits_output(step: usize) -> String {
    (0..20 + step % 25)
        .map(|hit| {
            format!(
                "src/mod_{hit}.rs:{}: fn handle_{step}(req: Request) -> Response\n",
                hit * 7
            )
        })
        .collect()
}
