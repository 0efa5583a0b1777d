//! Choosing which tool outputs to mask, and recognising outputs that already are stand-ins.

use std::collections::HashMap;

use ctxhost_engine_abi::{is_image_part, Content, Message, Role, ToolCall};
use ctxhost_engine_kit::{sequence::REMOVED_RESULT_TEXT, stand_in::describe_tool_result, tokens};

/// How every stand-in `kit::stand_in` writes ends; with the `[<tool>] ` prefix, this is how an
/// output masked earlier (by this engine or the built-in compressor) is recognised.
const STAND_IN_ENDINGS: [&str; 6] = [
    "lines output",
    "lines output so far",
    "matching lines",
    " chars)",
    " chars of output cleared)",
    "see the later copy)",
];

/// One tool result that can be replaced by a stand-in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mask {
    /// The tool message's position in the sequence.
    pub index: usize,
    /// Its position among the sequence's tool results, oldest first.
    pub ordinal: usize,
    /// The one-line replacement.
    pub stand_in: String,
    /// Rough tokens the replacement saves.
    pub saved_tokens: u64,
}

/// Every tool result that masking could replace, oldest first, and how many tool results the
/// sequence holds in all (masked or not).
///
/// A result is a candidate when its output is at least `min_chars` characters long (or holds an
/// image) and is not already a stand-in.
pub(crate) fn find_mask_candidates(messages: &[Message], min_chars: usize) -> (Vec<Mask>, usize) {
    let calls: HashMap<&str, &ToolCall> = messages
        .iter()
        .flat_map(Message::calls)
        .map(|call| (call.id.as_str(), call))
        .collect();
    let mut candidates = Vec::new();
    let mut ordinal = 0;
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            continue;
        }
        let this_ordinal = ordinal;
        ordinal += 1;
        let call = message
            .tool_call_id
            .as_deref()
            .and_then(|id| calls.get(id).copied());
        let text = message.text();
        let has_image = matches!(&message.content, Content::Parts(parts) if parts.iter().any(is_image_part));
        if is_stand_in(&text, call) || (!has_image && text.chars().count() < min_chars) {
            continue;
        }
        let stand_in = describe_tool_result(call, message);
        let masked_tokens = tokens::estimate_message_tokens(&with_text(message, &stand_in));
        let saved_tokens = tokens::estimate_message_tokens(message).saturating_sub(masked_tokens);
        candidates.push(Mask {
            index,
            ordinal: this_ordinal,
            stand_in,
            saved_tokens,
        });
    }
    (candidates, ordinal)
}

/// The candidates outside a window of the last `keep` tool results.
pub(crate) fn outside_window(candidates: &[Mask], result_count: usize, keep: usize) -> &[Mask] {
    let first_kept = result_count.saturating_sub(keep);
    let end = candidates.partition_point(|mask| mask.ordinal < first_kept);
    &candidates[..end]
}

/// Replaces the content of each masked tool result by its stand-in; everything else, including
/// the message's other keys, stays as it was.
pub(crate) fn apply_masks(messages: &mut [Message], masks: &[Mask]) {
    for mask in masks {
        messages[mask.index].content = Content::Text(mask.stand_in.clone());
    }
}

/// Whether a tool output is a stand-in already: one line, `[<tool>] …` with one of the endings
/// `kit::stand_in` writes, or the stub result `kit::sequence` inserts for a lost output.
pub fn is_stand_in(text: &str, call: Option<&ToolCall>) -> bool {
    if text == REMOVED_RESULT_TEXT {
        return true;
    }
    if text.contains('\n') {
        return false;
    }
    let Some(rest) = text.strip_prefix('[') else {
        return false;
    };
    // `[tool]` is what kit writes when the call was not found; accept it for any call.
    let names = [call.map(|call| call.function.name.as_str()), Some("tool")];
    let after_name = names
        .into_iter()
        .flatten()
        .find_map(|name| rest.strip_prefix(name)?.strip_prefix("] "));
    after_name.is_some_and(|rest| STAND_IN_ENDINGS.iter().any(|ending| rest.ends_with(ending)))
}

/// A copy of `message` as the model would see it with `text` as its content, for estimates.
fn with_text(message: &Message, text: &str) -> Message {
    Message {
        tool_call_id: message.tool_call_id.clone(),
        ..Message::new(message.role, text)
    }
}
