//! Properties over many generated conversations, and the speed of a large compaction.

use ctxhost_engine_abi::{CompressRequest, Content, Engine, Message, Role, ToolCall};
use ctxhost_engine_kit::tokens::estimate_messages_tokens;
use serde_json::json;

use super::{assert_valid, engine};
use crate::{report::Outcome, SUMMARY_MARKER};

/// A tiny deterministic PRNG (xorshift64*), so that every run sees the same conversations.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn chance(&mut self, percent: usize) -> bool {
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
];

fn text(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn tool_output(rng: &mut Rng, size: usize) -> String {
    let mut out = String::with_capacity(size + 80);
    let mut line = 0;
    while out.len() < size {
        line += 1;
        match rng.below(12) {
            0 => out.push_str(&format!(
                "src/module_{}.rs:{line}: error: cannot find value `x{line}`\n",
                rng.below(50)
            )),
            1 => out.push_str(&format!("test tests::case_{line} ... FAILED\n")),
            _ => out.push_str(&format!("{:>5} | {}\n", line, text(rng, 8))),
        }
    }
    out.push_str(&format!("Exit code: {}\n", rng.below(2)));
    out
}

/// A tool-heavy agent conversation of about `count` messages: a system message, user requests
/// every few turns, tool calls (sometimes two at once) with outputs of 100–6,000 characters.
pub(crate) fn agent_conversation(seed: u64, count: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut messages = vec![Message::system("You are a coding agent.")];
    let mut call_id = 0;
    while messages.len() < count {
        let words = 5 + rng.below(40);
        messages.push(Message::user(text(&mut rng, words)));
        for _ in 0..1 + rng.below(5) {
            let calls: Vec<ToolCall> = (0..1 + usize::from(rng.chance(20)))
                .map(|_| {
                    call_id += 1;
                    let id = format!("call_{call_id}");
                    match rng.below(4) {
                        0 => ToolCall::new(
                            id,
                            "terminal",
                            json!({"command": format!("cargo test -p crate{}", rng.below(30))}).to_string(),
                        ),
                        1 => ToolCall::new(
                            id,
                            "read_file",
                            json!({"path": format!("src/file_{}.rs", rng.below(200))}).to_string(),
                        ),
                        2 => ToolCall::new(
                            id,
                            "search_files",
                            json!({"pattern": WORDS[rng.below(WORDS.len())], "path": "src"}).to_string(),
                        ),
                        _ => {
                            let path = format!("src/out_{}.rs", rng.below(100));
                            let words = 20 + rng.below(300);
                            let arguments = json!({"path": path, "content": text(&mut rng, words)});
                            ToolCall::new(id, "write_file", arguments.to_string())
                        }
                    }
                })
                .collect();
            let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
            messages.push(Message::assistant_calls(calls));
            for id in ids {
                let size = [100, 400, 1_500, 3_000, 6_000][rng.below(5)];
                messages.push(Message::tool(id, tool_output(&mut rng, size)));
            }
        }
        let words = 10 + rng.below(30);
        messages.push(Message::assistant(text(&mut rng, words)));
    }
    messages
}

/// Random damage a host or a transcript may carry: orphaned results, unanswered calls.
fn damage(rng: &mut Rng, messages: &mut Vec<Message>) {
    for _ in 0..rng.below(3) {
        let at = 1 + rng.below(messages.len() - 1);
        match rng.below(2) {
            0 => {
                messages.insert(at, Message::tool(format!("orphan_{at}"), "lost result"));
            }
            _ => {
                if messages[at].role == Role::Tool {
                    messages.remove(at);
                }
            }
        }
    }
}

#[test]
fn random_conversations_stay_valid_keep_system_and_last_user_and_never_grow() {
    for seed in 0..300u64 {
        let mut rng = Rng::new(seed);
        let mut messages = agent_conversation(seed, 10 + rng.below(120));
        if rng.chance(30) {
            damage(&mut rng, &mut messages);
            messages = ctxhost_engine_kit::sequence::repair_tool_pairs(messages);
        }
        let context_length = [2_000, 8_000, 30_000, 200_000][rng.below(4)];
        let mut engine = engine(context_length, rng.below(5), rng.below(25));
        let last_user = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .cloned()
            .unwrap();
        let before = estimate_messages_tokens(&messages);
        let focus = rng.chance(20).then(|| "cargo test".to_owned());
        let mut output = messages.clone();
        // Compact twice: the second run updates the first summary.
        for _ in 0..2 {
            let request = CompressRequest {
                current_tokens: None,
                focus_topic: focus.clone(),
            };
            output = engine.compress(output, &request).unwrap();
        }
        assert_valid(&output);
        assert_eq!(output[0].role, Role::System, "seed {seed}");
        assert!(
            output[0].text().starts_with("You are a coding agent."),
            "seed {seed}"
        );
        assert!(
            output
                .iter()
                .any(|m| m.role == Role::User && m.text().contains(last_user.text().as_ref())),
            "seed {seed}: the last user message is lost"
        );
        let after = estimate_messages_tokens(&output);
        assert!(after <= before, "seed {seed}: grew from {before} to {after}");
        let summaries = output
            .iter()
            .filter(|m| m.text().trim_start().starts_with(SUMMARY_MARKER))
            .count();
        assert!(summaries <= 1, "seed {seed}: {summaries} summaries");
    }
}

/// Property: a conversation that ends on outputs no tail can hold (lines or none, multibyte text,
/// JSON answers, one or several results) comes back valid, under the result cap, with those
/// outputs after the summary under their call, each cut short at character boundaries, its first
/// and last characters kept; compacted again, it stays valid.
#[test]
fn outputs_too_big_for_any_tail_stay_cut_and_valid() {
    const PIECES: [&str; 6] = ["ok ", "line\n", "é", "日本語 ", "[ERROR] x\n", "GET /a 503 1ms\n"];
    let mut cut_cases = 0;
    for seed in 0..120u64 {
        let mut rng = Rng::new(seed);
        let mut messages = agent_conversation(seed, 6 + rng.below(60));
        messages.push(Message::user("read the logs"));
        let results = 1 + rng.below(3);
        let calls: Vec<ToolCall> = (0..results)
            .map(|n| {
                ToolCall::new(
                    format!("big{n}"),
                    "terminal",
                    json!({ "command": format!("cat log{n}") }).to_string(),
                )
            })
            .collect();
        messages.push(Message::assistant_calls(calls));
        let context_length = [4_000, 8_000, 16_000, 30_000][rng.below(4)];
        let mut outputs = Vec::new();
        for n in 0..results {
            let size = context_length as usize * (2 + rng.below(8));
            let mut text = String::new();
            while text.len() < size {
                text.push_str(PIECES[rng.below(PIECES.len())]);
            }
            let text = if rng.chance(30) {
                json!({ "output": text, "metadata": { "exit_code": 0 } }).to_string()
            } else {
                text
            };
            outputs.push(text.clone());
            messages.push(Message::tool(format!("big{n}"), text));
        }
        let mut engine = engine(context_length, rng.below(4), rng.below(25));
        let output = engine
            .compress(messages.clone(), &CompressRequest::default())
            .unwrap();
        assert_valid(&output);
        let threshold = context_length / 2;
        let after = estimate_messages_tokens(&output);
        assert!(
            after < threshold,
            "seed {seed}: {after} tokens at a {context_length}-token window"
        );
        // Where half the tail's budget leaves each result too little, the group is summarised only.
        if super::report(&mut engine).cut_outputs == 0 {
            assert!(
                context_length <= 8_000,
                "seed {seed}: nothing cut at {context_length}"
            );
            continue;
        }
        cut_cases += 1;
        let kept = &output[output.len() - results..];
        for (n, (result, original)) in kept.iter().zip(&outputs).enumerate() {
            let text = result.text();
            assert_eq!(
                result.tool_call_id.as_deref(),
                Some(format!("big{n}").as_str()),
                "seed {seed}"
            );
            assert!(text.len() < original.len(), "seed {seed}: not cut");
            assert_eq!(text.chars().next(), original.chars().next(), "seed {seed}");
            assert_eq!(text.chars().last(), original.chars().last(), "seed {seed}");
            if original.starts_with('{') {
                let answer: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
                assert_eq!(answer["metadata"]["exit_code"], 0, "seed {seed}");
            }
        }
        // Compacted again, as the next turn's compaction would: still valid.
        let again = engine.compress(output, &CompressRequest::default()).unwrap();
        assert_valid(&again);
    }
    assert!(
        cut_cases >= 60,
        "only {cut_cases} of 120 conversations kept a cut output"
    );
}

#[test]
fn a_damaged_transcript_comes_back_repaired() {
    let mut rng = Rng::new(7);
    let mut messages = agent_conversation(7, 200);
    messages.insert(20, Message::tool("ghost", "orphaned output"));
    let at = messages.iter().position(|m| m.role == Role::Tool).unwrap();
    messages.remove(at);
    damage(&mut rng, &mut messages);
    let mut engine = engine(8_000, 3, 10);
    let output = engine.compress(messages, &CompressRequest::default()).unwrap();
    assert_eq!(engine.last_compaction().unwrap().outcome, Outcome::Compacted);
    assert_valid(&output);
}

#[test]
fn content_parts_survive_compaction() {
    let mut messages = agent_conversation(3, 80);
    messages.push(Message {
        content: Content::Parts(vec![
            json!({"type": "text", "text": "look at this"}),
            json!({"type": "image_url", "image_url": {"url": "data:x"}}),
        ]),
        ..Message::user("")
    });
    let mut engine = engine(8_000, 3, 4);
    let output = engine
        .compress(messages.clone(), &CompressRequest::default())
        .unwrap();
    assert_eq!(output.last(), messages.last());
}
