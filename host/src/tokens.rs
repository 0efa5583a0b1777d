//! Token counts of what the model receives: the rough estimate, or a real BPE tokenizer.
//!
//! [`TokenCounter`] is chosen by `context.tokenizer` in `config.yaml`:
//! - `rough` (the default): characters ÷ 4 over what the model receives, exactly kit's
//!   [`estimate_message_tokens`]; no start-up cost.
//! - `o200k_base`, `cl100k_base`: tiktoken's encodings (through `tiktoken-rs`, vocabularies
//!   bundled, no network). Each is loaded on first use, once per process, and shared by every
//!   counter; loading o200k takes ~150–350 ms.
//!
//! Both kinds cover the same parts of a message, so they differ only in the counting rule:
//! - the content's text (a string, or every text part), an image part at [`IMAGE_TOKENS`];
//! - each tool call's id, name and arguments; a tool result's `tool_call_id`;
//! - [`MESSAGE_OVERHEAD_TOKENS`] of framing per message.
//!
//! These are estimates: the usage a model reports for a call always wins over them (the runner
//! hands recorded usage to `update_from_response` as is).
//!
//! ```
//! use ctxhost::tokens::{TokenCounter, TokenizerKind};
//!
//! let counter = TokenCounter::new(TokenizerKind::Cl100kBase);
//! assert_eq!(counter.count_text("hello world"), 2);
//! assert_eq!(TokenCounter::default().name(), "rough");
//! ```

use std::{fmt, str::FromStr};

use ctxhost_engine_abi::{is_image_part, part_text, Content, EngineError, Message};
use ctxhost_engine_kit::tokens::{
    estimate_message_tokens, estimate_text_tokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tiktoken_rs::{cl100k_base_singleton, o200k_base_singleton, CoreBPE};

/// Which counting rule a [`TokenCounter`] uses (`context.tokenizer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum TokenizerKind {
    /// Characters ÷ 4, rounded up: kit's estimate.
    #[default]
    #[serde(rename = "rough")]
    Rough,
    /// tiktoken's `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    #[serde(rename = "o200k_base")]
    O200kBase,
    /// tiktoken's `cl100k_base` (GPT-4, GPT-3.5).
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl TokenizerKind {
    /// Every kind, in the order config errors list them.
    pub const ALL: [Self; 3] = [Self::Rough, Self::O200kBase, Self::Cl100kBase];

    /// The name `config.yaml` and reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Rough => "rough",
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The allowed names, for error messages: `rough, o200k_base, cl100k_base`.
    pub fn allowed_names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl fmt::Display for TokenizerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tokenizer name that is none of [`TokenizerKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown tokenizer `{0}`; expected one of {allowed}", allowed = TokenizerKind::allowed_names())]
pub struct UnknownTokenizer(pub String);

impl FromStr for TokenizerKind {
    type Err = UnknownTokenizer;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| UnknownTokenizer(name.to_owned()))
    }
}

/// Counts the tokens of texts and messages with one rule. Cheap to copy: a BPE vocabulary is a
/// process-wide singleton, loaded the first time a counter of its kind counts something.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenCounter {
    kind: TokenizerKind,
}

impl TokenCounter {
    /// A counter of `kind`; nothing is loaded yet.
    pub const fn new(kind: TokenizerKind) -> Self {
        Self { kind }
    }

    /// The rough counter (characters ÷ 4).
    pub const fn rough() -> Self {
        Self::new(TokenizerKind::Rough)
    }

    /// Its kind.
    pub const fn kind(&self) -> TokenizerKind {
        self.kind
    }

    /// Its name in config and reports (`rough`, `o200k_base`, `cl100k_base`).
    pub const fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Loads the vocabulary now rather than on the first count (a no-op for `rough`, and after the
    /// first time), so that a caller can keep the start-up out of what it times.
    pub fn preload(&self) {
        let _ = self.bpe();
    }

    /// Tokens of a text.
    pub fn count_text(&self, text: &str) -> u64 {
        match self.bpe() {
            None => estimate_text_tokens(text),
            Some(bpe) => count_bpe(bpe, text),
        }
    }

    /// Tokens of what the model receives of one message (see the module docs for what counts).
    pub fn count_message(&self, message: &Message) -> u64 {
        let Some(bpe) = self.bpe() else {
            return estimate_message_tokens(message);
        };
        let mut tokens = MESSAGE_OVERHEAD_TOKENS;
        let images = for_each_counted_text(message, |text| tokens += count_bpe(bpe, text));
        tokens + images * IMAGE_TOKENS
    }

    /// Tokens of a whole context, counting every message.
    pub fn count_messages(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|message| self.count_message(message)).sum()
    }

    fn bpe(&self) -> Option<&'static CoreBPE> {
        match self.kind {
            TokenizerKind::Rough => None,
            TokenizerKind::O200kBase => Some(o200k_base_singleton()),
            TokenizerKind::Cl100kBase => Some(cl100k_base_singleton()),
        }
    }
}

// Text sent as a message is ordinary text to the model: "<|endoftext|>" typed by a user is not the
// special token, so special tokens are not recognised.
fn count_bpe(bpe: &CoreBPE, text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    bpe.encode_ordinary(text).len() as u64
}

/// Calls `visit` with every text of `message` the model receives, in the order kit's rough
/// estimate reads them, and returns the number of image parts.
fn for_each_counted_text(message: &Message, mut visit: impl FnMut(&str)) -> u64 {
    let mut images = 0;
    match &message.content {
        Content::Null => {}
        Content::Text(text) => visit(text),
        Content::Parts(parts) => {
            for part in parts {
                if is_image_part(part) {
                    images += 1;
                } else if let Some(text) = part_text(part) {
                    visit(text);
                }
            }
        }
    }
    for call in message.calls() {
        visit(&call.id);
        visit(&call.function.name);
        visit(&call.function.arguments);
    }
    if let Some(id) = &message.tool_call_id {
        visit(id);
    }
    images
}

/// The `count_tokens` host service: counts `{"texts": [str…]}` and/or `{"messages": [OpenAI
/// messages]}` with `counter`, answering `{"counter": name, "tokens": [n…], "total": n}`.
///
/// - `tokens` holds one count per text, then one per message, each in the order given;
/// - a message's count includes its framing and images, as the runner counts it;
/// - a request with neither key, or with a key of the wrong shape, is `invalid_input`.
pub fn count_tokens_service(counter: &TokenCounter, request: &Value) -> Result<Value, EngineError> {
    let fields = request.as_object().ok_or_else(|| {
        EngineError::invalid_input(
            "count_tokens: the request must be an object with `texts` and/or `messages`",
        )
    })?;
    let texts = fields.get("texts");
    let messages = fields.get("messages");
    if texts.is_none() && messages.is_none() {
        return Err(EngineError::invalid_input(
            "count_tokens: the request has neither `texts` nor `messages`",
        ));
    }
    let mut tokens = Vec::new();
    if let Some(texts) = texts {
        let texts = texts
            .as_array()
            .ok_or_else(|| EngineError::invalid_input("count_tokens: `texts` must be an array of strings"))?;
        for (index, text) in texts.iter().enumerate() {
            let text = text.as_str().ok_or_else(|| {
                EngineError::invalid_input(format!("count_tokens: `texts[{index}]` is not a string"))
            })?;
            tokens.push(counter.count_text(text));
        }
    }
    if let Some(messages) = messages {
        let messages = messages.as_array().ok_or_else(|| {
            EngineError::invalid_input("count_tokens: `messages` must be an array of messages")
        })?;
        for (index, message) in messages.iter().enumerate() {
            let message = Message::deserialize(message).map_err(|error| {
                EngineError::invalid_input(format!("count_tokens: `messages[{index}]`: {error}"))
            })?;
            tokens.push(counter.count_message(&message));
        }
    }
    let total: u64 = tokens.iter().sum();
    Ok(json!({"counter": counter.name(), "tokens": tokens, "total": total}))
}

#[cfg(test)]
pub(crate) mod tests;
