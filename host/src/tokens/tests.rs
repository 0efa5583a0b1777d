use super::*;
use ctxhost_engine_abi::ToolCall;
use pretty_assertions::assert_eq;

const O200K: TokenCounter = TokenCounter::new(TokenizerKind::O200kBase);
const CL100K: TokenCounter = TokenCounter::new(TokenizerKind::Cl100kBase);

/// A deterministic generator (xorshift64*), so property-style tests repeat exactly.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "cargo",
    "test",
    "é",
    "{\"path\":",
    "src/mod.rs",
    "\n",
    "  ",
    "Привет",
    "お誕生日",
    "42",
    "—",
    "ok",
    "error[E0308]",
    "<|endoftext|>",
    "",
];

fn generated_text(rng: &mut Rng) -> String {
    let words = rng.below(40);
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// One generated message of any shape the counters distinguish: plain text, text and image parts,
/// tool calls, tool results.
pub(crate) fn generated_message(rng: &mut Rng) -> Message {
    match rng.below(5) {
        0 => Message::user(generated_text(rng)),
        1 => Message::assistant(generated_text(rng)),
        2 => {
            let calls = (0..=rng.below(2))
                .map(|i| {
                    ToolCall::new(
                        format!("call_{}_{i}", rng.below(1000)),
                        "terminal",
                        generated_text(rng),
                    )
                })
                .collect();
            Message::assistant_calls(calls)
        }
        3 => Message::tool(format!("call_{}", rng.below(1000)), generated_text(rng)),
        _ => {
            let mut parts = vec![json!({"type": "text", "text": generated_text(rng)})];
            for _ in 0..rng.below(3) {
                parts.push(json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}));
            }
            parts.push(json!({"type": "text", "text": generated_text(rng)}));
            serde_json::from_value(json!({"role": "user", "content": parts})).unwrap()
        }
    }
}

pub(crate) fn generated_messages(rng: &mut Rng, n: usize) -> Vec<Message> {
    (0..n).map(|_| generated_message(rng)).collect()
}

// Token ids checked against the cookbook "How to count tokens with tiktoken" where it gives them
// ("tiktoken is great!" → [83, 1609, 5963, 374, 2294, 0] in cl100k; "お誕生日おめでとう" 9 tokens in
// cl100k, 8 in o200k); the others are tiktoken-rs's own answers, pinned so a vocabulary change shows.
#[test]
fn counts_agree_with_tiktoken_on_known_strings() {
    let cases = [
        // (text, o200k_base, cl100k_base)
        ("hello world", 2, 2),
        ("", 0, 0),
        ("tiktoken is great!", 6, 6),
        ("antidisestablishmentarianism", 6, 6),
        ("2 + 2 = 4", 7, 7),
        ("お誕生日おめでとう", 8, 9),
        ("Привет, мир", 4, 6),
        ("{\"path\":\"src/mod_1.rs\",\"offset\":1}", 13, 13),
        // Ordinary text: a user typing the end-of-text marker does not produce the special token.
        ("<|endoftext|>", 7, 7),
    ];
    for (text, o200k, cl100k) in cases {
        assert_eq!(
            (text, O200K.count_text(text), CL100K.count_text(text)),
            (text, o200k, cl100k)
        );
    }
}

#[test]
fn the_rough_counter_is_kits_estimate() {
    let mut rng = Rng::new(7);
    let rough = TokenCounter::rough();
    for message in generated_messages(&mut rng, 300) {
        assert_eq!(rough.count_message(&message), estimate_message_tokens(&message));
        let text = message.text();
        assert_eq!(rough.count_text(&text), estimate_text_tokens(&text));
    }
}

/// The BPE counters read exactly what kit's rough estimate reads: the same texts under the
/// character rule give kit's figure.
#[test]
fn the_real_counters_cover_what_the_rough_estimate_covers() {
    let mut rng = Rng::new(11);
    for message in generated_messages(&mut rng, 300) {
        let mut chars = 0u64;
        let images = for_each_counted_text(&message, |text| chars += text.chars().count() as u64);
        assert_eq!(
            chars.div_ceil(4) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS,
            estimate_message_tokens(&message),
            "{message:?}"
        );
    }
}

#[test]
fn a_message_counts_content_calls_ids_framing_and_images() {
    let call = Message::assistant_calls(vec![ToolCall::new(
        "call_42",
        "terminal",
        "{\"command\":\"cargo test -p mod_3\"}",
    )]);
    let expected = O200K.count_text("call_42")
        + O200K.count_text("terminal")
        + O200K.count_text("{\"command\":\"cargo test -p mod_3\"}")
        + MESSAGE_OVERHEAD_TOKENS;
    assert_eq!(O200K.count_message(&call), expected);
    assert_eq!(O200K.count_message(&call), 3 + 1 + 11 + MESSAGE_OVERHEAD_TOKENS);

    let result = Message::tool("call_42", "hello world");
    assert_eq!(CL100K.count_message(&result), 2 + 3 + MESSAGE_OVERHEAD_TOKENS);

    let picture: Message = serde_json::from_value(json!({"role": "user", "content": [
        {"type": "text", "text": "hello world"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]}))
    .unwrap();
    assert_eq!(
        O200K.count_message(&picture),
        2 + IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS
    );
    assert_eq!(
        O200K.count_messages(&[call.clone(), picture.clone()]),
        O200K.count_message(&call) + O200K.count_message(&picture)
    );
}

#[test]
fn tokenizer_names_round_trip_and_unknown_ones_list_the_allowed() {
    for kind in TokenizerKind::ALL {
        assert_eq!(kind.name().parse::<TokenizerKind>(), Ok(kind));
        assert_eq!(TokenCounter::new(kind).name(), kind.name());
    }
    assert_eq!(TokenCounter::default().kind(), TokenizerKind::Rough);
    assert_eq!(
        "o200k".parse::<TokenizerKind>().unwrap_err().to_string(),
        "unknown tokenizer `o200k`; expected one of rough, o200k_base, cl100k_base"
    );
}

#[test]
fn the_service_answers_one_count_per_text_then_per_message_and_the_total() {
    let request = json!({
        "texts": ["hello world", "お誕生日おめでとう"],
        "messages": [{"role": "tool", "tool_call_id": "call_42", "content": "hello world"}],
    });
    let answer = count_tokens_service(&CL100K, &request).unwrap();
    let message_tokens = 2 + 3 + MESSAGE_OVERHEAD_TOKENS;
    assert_eq!(
        answer,
        json!({"counter": "cl100k_base", "tokens": [2, 9, message_tokens], "total": 11 + message_tokens})
    );
    let answer = count_tokens_service(&TokenCounter::rough(), &json!({"texts": ["abcdefgh"]})).unwrap();
    assert_eq!(answer, json!({"counter": "rough", "tokens": [2], "total": 2}));
    let answer = count_tokens_service(&O200K, &json!({"messages": []})).unwrap();
    assert_eq!(answer, json!({"counter": "o200k_base", "tokens": [], "total": 0}));
}

#[test]
fn the_service_refuses_malformed_requests_as_invalid_input() {
    let cases = [
        (json!("hello"), "must be an object"),
        (json!({}), "neither `texts` nor `messages`"),
        (json!({"texts": "hello"}), "`texts` must be an array"),
        (json!({"texts": ["a", 3]}), "`texts[1]` is not a string"),
        (
            json!({"messages": {"role": "user"}}),
            "`messages` must be an array",
        ),
        (json!({"messages": [{"content": "no role"}]}), "`messages[0]`"),
    ];
    for (request, expected) in cases {
        let error = count_tokens_service(&TokenCounter::rough(), &request).unwrap_err();
        assert_eq!(
            error.kind,
            ctxhost_engine_abi::ErrorKind::INVALID_INPUT,
            "{request}"
        );
        assert!(error.message.contains(expected), "{request}: {}", error.message);
    }
}
