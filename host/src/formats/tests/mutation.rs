//! Every reader against thousands of broken versions of the team's examples: bytes flipped, the
//! file cut short, lines duplicated or deleted, values of the wrong type, stray brackets. Each
//! case must end, quickly, without a panic, and any error must name a line. The cases come from
//! a fixed seed, so a failure names a case that fails again.

use std::time::{Duration, Instant};

use crate::formats::{
    fuzzing::{check_reader, detect, read_bytes},
    BadRecords,
};

use super::*;

/// How many broken versions of each example are read.
const CASES_PER_EXAMPLE: usize = 280;

/// A case taking longer than this in a debug build is taken for a hang.
const SLOW_CASE: Duration = Duration::from_secs(2);

fn example(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/transcripts")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The examples, one or more per format.
fn examples() -> Vec<(Format, String)> {
    let array = example("orders-pagination.openai-array.json");
    let legacy_codex = jsonl(&[
        serde_json::json!({"id": "5973b6c0", "timestamp": "2025-04-23T12:00:00Z", "instructions": null}),
        serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]}),
        serde_json::json!({"record_type": "state"}),
        serde_json::json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"test\"]}", "call_id": "c1"}),
        serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": "{\"output\":\"error[E0308]\"}"}),
        serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One error."}]}),
    ]);
    // OpenAI's legacy function calling, with a result that answers no call.
    let legacy_functions = [
        serde_json::json!({"role": "user", "content": "what is here?"}),
        serde_json::json!({"role": "assistant", "content": null, "function_call": {"name": "ls", "arguments": "{\"path\": \".\"}"}}),
        serde_json::json!({"role": "function", "name": "ls", "content": "error: permission denied"}),
        serde_json::json!({"role": "assistant", "content": null, "function_call": {"name": "sudo_ls", "arguments": {"path": "."}}}),
        serde_json::json!({"role": "function", "name": "sudo_ls", "content": "a.txt"}),
        serde_json::json!({"role": "function", "name": "cat", "content": "orphan"}),
        serde_json::json!({"role": "assistant", "content": "One file."}),
    ];
    vec![
        (
            Format::OpenaiObject,
            format!("{{\"model\": \"m\", \"messages\": {array}}}"),
        ),
        (Format::OpenaiArray, array),
        (
            Format::OpenaiJsonl,
            example("invoice-downgrade.openai-jsonl.jsonl"),
        ),
        (Format::Hermes, example("cron-dst.hermes.jsonl")),
        (Format::ClaudeCode, example("flaky-upload.claude-code.jsonl")),
        (Format::Codex, example("clippy-toolchain.codex.jsonl")),
        (Format::Codex, legacy_codex),
        (Format::SweAgent, example("read-table-header.swe-agent.traj")),
        (Format::Openhands, example("iso-week.openhands.json")),
        (Format::OpenaiJsonl, jsonl(&legacy_functions)),
        (
            Format::OpenaiArray,
            serde_json::to_string_pretty(&legacy_functions).unwrap(),
        ),
    ]
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

/// One broken version of `text`.
fn mutate(text: &str, random: &mut Lcg) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    match random.below(6) {
        0 => {
            let at = random.below(bytes.len());
            bytes[at] ^= 1 << random.below(8);
        }
        1 => bytes.truncate(random.below(bytes.len())),
        2 => {
            let at = random.below(lines.len());
            let mut lines = lines.clone();
            lines.insert(at, lines[at]);
            bytes = lines.concat().into_bytes();
        }
        3 => {
            let mut lines = lines.clone();
            lines.remove(random.below(lines.len()));
            bytes = lines.concat().into_bytes();
        }
        4 => {
            // A string value replaced by a value of another type.
            let starts: Vec<usize> = text.match_indices("\": \"").map(|(at, _)| at + 3).collect();
            let starts = if starts.is_empty() {
                text.match_indices("\":\"").map(|(at, _)| at + 2).collect()
            } else {
                starts
            };
            if let Some(&start) = starts.get(random.below(starts.len())) {
                let end = string_end(&bytes, start);
                let replacement = ["7", "null", "[]", "{}", "true", "-1.5"][random.below(6)];
                bytes.splice(start..end, replacement.bytes());
            }
        }
        _ => {
            let at = random.below(bytes.len());
            bytes.insert(at, b"{}[],:\"\n"[random.below(8)]);
        }
    }
    bytes
}

/// The end (exclusive) of the JSON string starting at `start` (its opening quote).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

#[test]
fn every_reader_survives_thousands_of_broken_examples_and_every_error_names_a_line() {
    let mut random = Lcg(0x5eed);
    let mut cases = 0;
    for (format, text) in examples() {
        let whole = read_bytes(format, text.as_bytes(), BadRecords::Stop);
        assert!(
            whole.error.is_none(),
            "{format}: the example itself: {:?}",
            whole.error
        );
        for case in 0..CASES_PER_EXAMPLE {
            let mut bytes = mutate(&text, &mut random);
            // The first byte chooses whether malformed records are skipped (see `check_reader`):
            // a leading space makes it the other way round, so that both are read.
            if case % 2 == 1 {
                bytes.insert(0, b' ');
            }
            let started = Instant::now();
            if case % 4 == 0 {
                let _ = detect(&String::from_utf8_lossy(&bytes));
            }
            check_reader(format, &bytes);
            let took = started.elapsed();
            assert!(took < SLOW_CASE, "{format} case {case}: {took:?}");
            cases += 1;
        }
    }
    assert!(cases >= 2_500, "{cases} cases");
}
