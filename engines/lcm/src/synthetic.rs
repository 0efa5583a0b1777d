//! Synthetic tool-heavy sessions, deterministic from a seed: for the property tests and the
//! benchmarks, which must not depend on any transcript on disk.

use ctxhost_engine_abi::{Message, ToolCall};
use serde_json::json;

/// A tiny deterministic PRNG (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True `percent`% of the time.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "the",
    "build",
    "fails",
    "in",
    "src/lib.rs",
    "because",
    "error[E0308]:",
    "mismatched",
    "types",
    "see",
    "https://docs.rs/serde",
    "commit",
    "a1b2c3d4",
    "issue",
    "#1234",
    "version",
    "v2.1.0",
    "please",
    "don't",
    "touch",
    "Cargo.toml",
    "and",
    "always",
    "run",
    "tests",
    "ok",
    "line",
    "value",
    "config.yaml",
    "parser",
    "warehouse",
    "migration",
    "coupon",
    "rollback",
    "été",
    "日本",
];

/// `words` random words.
pub fn words(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tool output of about `chars` characters over several lines.
pub fn tool_output(rng: &mut Rng, chars: usize) -> String {
    let mut out = String::with_capacity(chars + 80);
    let mut line = 0;
    while out.len() < chars {
        line += 1;
        let n = 4 + rng.below(8);
        let text = words(rng, n);
        out.push_str(&format!("{line:>4}: {text}\n"));
    }
    out
}

/// A conversation of about `turns` turns: a system message, then user requests, assistant tool
/// calls with their results (1–2 calls a turn), and assistant answers. `output_chars` bounds a
/// tool output's size. Some messages carry unknown keys, some content parts.
pub fn conversation(seed: u64, turns: usize, output_chars: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut messages = vec![Message::system(format!(
        "You are a coding agent. {}",
        words(&mut rng, 10)
    ))];
    let mut call = 0;
    for turn in 0..turns {
        if turn == 0 || rng.chance(30) {
            let n = 5 + rng.below(30);
            let mut user = Message::user(format!("request {turn}: {}", words(&mut rng, n)));
            if rng.chance(10) {
                user.extra.insert("timestamp".into(), json!(1_700_000_000 + turn));
            }
            messages.push(user);
        }
        let calls = 1 + rng.below(2);
        let mut tool_calls = Vec::new();
        for _ in 0..calls {
            call += 1;
            let command = format!("cat file{call}.txt && {}", words(&mut rng, 2));
            tool_calls.push(ToolCall::new(
                format!("call_{call}"),
                if rng.chance(50) { "terminal" } else { "read_file" },
                json!({ "command": command }).to_string(),
            ));
        }
        let mut assistant = Message::assistant_calls(tool_calls.clone());
        if rng.chance(30) {
            assistant.content = ctxhost_engine_abi::Content::Text(words(&mut rng, 8));
        }
        messages.push(assistant);
        for tool_call in tool_calls {
            let size = 20 + rng.below(output_chars.max(1));
            let mut result = Message::tool(tool_call.id, tool_output(&mut rng, size));
            result.name = Some(tool_call.function.name);
            messages.push(result);
        }
        if rng.chance(40) {
            let n = 10 + rng.below(40);
            let mut answer = Message::assistant(words(&mut rng, n));
            if rng.chance(10) {
                answer.content = ctxhost_engine_abi::Content::Parts(vec![
                    json!({ "type": "text", "text": words(&mut rng, 6) }),
                    json!({ "type": "text", "text": words(&mut rng, 6), "cache_control": { "type": "ephemeral" } }),
                ]);
            }
            messages.push(answer);
        }
    }
    messages
}
