//! The rough token estimate: characters ÷ 4, rounded up, over what the model receives.
//!
//! It needs no tokenizer and no start-up, which makes it the figure every engine can afford on
//! every turn. It under-counts JSON and logs; a real tokenizer is the host's to offer.

use ctxhost_engine_abi::{is_image_part, part_text, Content, Message};

/// Tokens charged for each message's framing (role, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Tokens charged for an image part, whatever its size.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Rough tokens of a text: Unicode scalar values ÷ 4, rounded up.
pub fn estimate_text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Rough tokens of one message: its content, tool-call names, arguments and ids, plus framing.
pub fn estimate_message_tokens(message: &Message) -> u64 {
    tokens_by(message, |text| text.chars().count())
}

/// Rough tokens of a whole context.
pub fn estimate_messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

/// Whether the rough estimate of `messages` is at least `threshold`: the same answer as
/// `estimate_messages_tokens(messages) >= threshold`, usually without reading a single text.
///
/// A text has at least as many bytes as characters, so its byte length (known without reading it)
/// bounds its estimate from above; only when that bound reaches the threshold are the characters
/// counted. A check made before every model call then costs a few nanoseconds a message instead
/// of a pass over the whole context (it was a quarter of a replay's time).
pub fn estimate_reaches(messages: &[Message], threshold: u64) -> bool {
    let upper_bound: u64 = messages.iter().map(estimate_message_tokens_bound).sum();
    upper_bound >= threshold && estimate_messages_tokens(messages) >= threshold
}

/// An upper bound of [`estimate_message_tokens`] that reads no text: byte lengths for character
/// counts (a character takes at least one byte).
pub fn estimate_message_tokens_bound(message: &Message) -> u64 {
    tokens_by(message, str::len)
}

/// The rough tokens of `message`, with `length` measuring each text in characters (or a bound).
fn tokens_by(message: &Message, length: impl Fn(&str) -> usize) -> u64 {
    let mut chars = 0u64;
    let mut images = 0u64;
    match &message.content {
        Content::Null => {}
        Content::Text(text) => chars += length(text) as u64,
        Content::Parts(parts) => {
            for part in parts {
                if is_image_part(part) {
                    images += 1;
                } else if let Some(text) = part_text(part) {
                    chars += length(text) as u64;
                }
            }
        }
    }
    for call in message.calls() {
        chars += (length(&call.id) + length(&call.function.name)) as u64;
        chars += length(&call.function.arguments) as u64;
    }
    if let Some(id) = &message.tool_call_id {
        chars += length(id) as u64;
    }
    chars.div_ceil(4) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;

    #[test]
    fn text_counts_characters_not_bytes() {
        assert_eq!(estimate_text_tokens("ééééé"), 2);
        assert_eq!(estimate_text_tokens(""), 0);
    }

    #[test]
    fn a_message_counts_content_calls_and_framing() {
        let message = Message::assistant_calls(vec![ToolCall::new("id12", "ls", "{\"p\":1}")]);
        // "id12" + "ls" + "{\"p\":1}" = 4 + 2 + 7 = 13 chars -> 4 tokens, plus framing.
        assert_eq!(estimate_message_tokens(&message), 4 + MESSAGE_OVERHEAD_TOKENS);
    }

    #[test]
    fn an_image_part_costs_a_fixed_amount() {
        let message: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:..."}}]}"#,
        )
        .unwrap();
        assert_eq!(
            estimate_message_tokens(&message),
            IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS
        );
    }

    #[test]
    fn reaching_a_threshold_agrees_with_the_estimate_on_multibyte_text() {
        // 40 characters of two bytes each: 10 tokens + framing by characters, 20 + framing by bytes.
        let messages = vec![Message::user("é".repeat(40)), Message::tool("c1", "ok")];
        let estimate = estimate_messages_tokens(&messages);
        assert_eq!(estimate, 10 + 1 + 2 * MESSAGE_OVERHEAD_TOKENS);
        for threshold in [1, estimate - 1, estimate] {
            assert!(estimate_reaches(&messages, threshold), "{threshold}");
        }
        // Between the estimate and the byte bound (29) the characters decide.
        for threshold in [estimate + 1, 25, 29, 30, 1_000] {
            assert!(!estimate_reaches(&messages, threshold), "{threshold}");
        }
    }
}
