//! Choosing which tool outputs (and long call arguments) to mask, and recognising outputs that
//! already are stand-ins.

use std::collections::HashMap;

use ctxhost_engine_abi::{is_image_part, Content, Message, Role, ToolCall};
use ctxhost_engine_kit::{
    sequence::REMOVED_RESULT_TEXT,
    stand_in::{describe_tool_result_noting_errors, FIRST_ERROR_NOTE},
    tokens,
};
use serde_json::Value;

use crate::MaskingConfig;

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

/// How a masked argument value starts: `[masked: 12345 chars]`.
const MASKED_VALUE: &str = "[masked: ";

/// One tool call and its result that can be masked: the result replaced by a stand-in, the long
/// values of the call's arguments by a note of their length, or both.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mask {
    /// The tool message's position in the sequence.
    pub index: usize,
    /// Its position among the sequence's tool results, oldest first.
    pub ordinal: usize,
    /// The one-line replacement of the result; `None` when the result stays (it is short).
    pub stand_in: Option<String>,
    /// The call's arguments with their long values masked: the assistant message's position, the
    /// call's position in it, and the new arguments.
    pub arguments: Option<(usize, usize, String)>,
    /// Rough tokens the replacements save.
    pub saved_tokens: u64,
}

/// Every tool result (with its call) that masking could change, oldest first, and how many tool
/// results the sequence holds in all (masked or not).
///
/// A result is a candidate when its output is at least `min_chars` characters long (or holds an
/// image) and is not already a stand-in, or, with `mask_arguments`, when a value of its call's
/// arguments is at least `min_argument_chars` characters long (a file written through a call).
pub(crate) fn find_mask_candidates(messages: &[Message], config: &MaskingConfig) -> (Vec<Mask>, usize) {
    let min_chars = config.min_chars;
    let calls: HashMap<&str, (usize, usize, &ToolCall)> = messages
        .iter()
        .enumerate()
        .flat_map(|(at, message)| {
            message
                .calls()
                .iter()
                .enumerate()
                .map(move |(position, call)| (call.id.as_str(), (at, position, call)))
        })
        .collect();
    let mut candidates = Vec::new();
    let mut ordinal = 0;
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            continue;
        }
        let this_ordinal = ordinal;
        ordinal += 1;
        let found = message
            .tool_call_id
            .as_deref()
            .and_then(|id| calls.get(id).copied());
        let call = found.map(|(_, _, call)| call);
        let text = message.text();
        let has_image = matches!(&message.content, Content::Parts(parts) if parts.iter().any(is_image_part));
        let mut saved_tokens = 0;
        let stand_in = if is_stand_in(&text, call) || (!has_image && text.chars().count() < min_chars) {
            None
        } else {
            let stand_in = describe_tool_result_noting_errors(call, message);
            let masked_tokens = tokens::estimate_message_tokens(&with_text(message, &stand_in));
            saved_tokens += tokens::estimate_message_tokens(message).saturating_sub(masked_tokens);
            Some(stand_in)
        };
        let arguments = found
            .filter(|_| config.mask_arguments)
            .and_then(|(at, position, call)| {
                let masked = masked_arguments(&call.function.arguments, config.min_argument_chars)?;
                saved_tokens += tokens::estimate_text_tokens(&call.function.arguments)
                    .saturating_sub(tokens::estimate_text_tokens(&masked));
                Some((at, position, masked))
            });
        if stand_in.is_none() && arguments.is_none() {
            continue;
        }
        candidates.push(Mask {
            index,
            ordinal: this_ordinal,
            stand_in,
            arguments,
            saved_tokens,
        });
    }
    (candidates, ordinal)
}

/// `arguments` (a call's JSON) with each string value of at least `min_chars` characters replaced
/// by `[masked: N chars]`, keys and shorter values kept (`path`, `command`); `None` when no value
/// is that long. Arguments that are not JSON (a freeform tool's input: Codex's `apply_patch`)
/// and are that long keep their first lines, which name what the call did (`*** Add File:
/// docs/cli.md`), before the note.
fn masked_arguments(arguments: &str, min_chars: usize) -> Option<String> {
    // A short call has no value that long: not parsed.
    if arguments.len() < min_chars {
        return None;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(mut value) => mask_long_strings(&mut value, min_chars).then(|| value.to_string()),
        Err(_) => masked_text(arguments, min_chars),
    }
}

/// Lines of a freeform call's input kept before its note.
const KEPT_INPUT_LINES: usize = 2;
/// The longest of those lines kept, in characters.
const KEPT_INPUT_LINE_CHARS: usize = 120;

/// A freeform input of at least `min_chars` characters: its first lines, then `[masked: N more
/// chars]` for the rest; `None` when shorter, or masked already.
fn masked_text(text: &str, min_chars: usize) -> Option<String> {
    let total = text.chars().count();
    if total < min_chars || text.contains(MASKED_VALUE) {
        return None;
    }
    let mut kept = String::new();
    let mut kept_chars = 0;
    for piece in text.split_inclusive('\n').take(KEPT_INPUT_LINES) {
        let line = piece.trim_end_matches(['\n', '\r']);
        let shown: String = line.chars().take(KEPT_INPUT_LINE_CHARS).collect();
        let shown_chars = shown.chars().count();
        // Counted as in the text: the part of the line shown, and its line break (if it has one)
        // when the whole line is.
        kept_chars += match shown_chars == line.chars().count() {
            true => piece.chars().count(),
            false => shown_chars,
        };
        kept.push_str(&shown);
        kept.push('\n');
    }
    Some(format!(
        "{kept}{MASKED_VALUE}{} more chars]",
        total.saturating_sub(kept_chars)
    ))
}

/// Masks the long strings of `value`, recursively; whether any was.
fn mask_long_strings(value: &mut Value, min_chars: usize) -> bool {
    let children: Box<dyn Iterator<Item = &mut Value>> = match value {
        Value::String(text) => {
            let long = !text.starts_with(MASKED_VALUE) && text.chars().count() >= min_chars;
            if long {
                *text = format!("{MASKED_VALUE}{} chars]", text.chars().count());
            }
            return long;
        }
        Value::Array(items) => Box::new(items.iter_mut()),
        Value::Object(fields) => Box::new(fields.values_mut()),
        _ => return false,
    };
    // Every child is visited: a short-circuiting `any` would stop at the first masked.
    let mut masked = false;
    for child in children {
        masked |= mask_long_strings(child, min_chars);
    }
    masked
}

/// Rough tokens of the last `keep` tool results of `messages`.
pub(crate) fn newest_results_tokens(messages: &[Message], keep: usize) -> u64 {
    messages
        .iter()
        .rev()
        .filter(|message| message.role == Role::Tool)
        .take(keep)
        .map(tokens::estimate_message_tokens)
        .sum()
}

/// The candidates outside a window of the last `keep` tool results.
pub(crate) fn outside_window(candidates: &[Mask], result_count: usize, keep: usize) -> &[Mask] {
    let first_kept = result_count.saturating_sub(keep);
    let end = candidates.partition_point(|mask| mask.ordinal < first_kept);
    &candidates[..end]
}

/// Replaces the content of each masked tool result by its stand-in and the arguments of each
/// masked call; everything else, including the messages' other keys, stays as it was.
pub(crate) fn apply_masks(messages: &mut [Message], masks: &[Mask]) {
    for mask in masks {
        if let Some(stand_in) = &mask.stand_in {
            messages[mask.index].content = Content::Text(stand_in.clone());
        }
        if let Some((at, position, arguments)) = &mask.arguments {
            if let Some(call) = messages[*at]
                .tool_calls
                .as_mut()
                .and_then(|calls| calls.get_mut(*position))
            {
                call.function.arguments = arguments.clone();
            }
        }
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
    // One that quotes its command's first error line ends with that line (verify20: masked
    // again, it read `-> 1 lines output`, the failure gone).
    after_name.is_some_and(|rest| {
        STAND_IN_ENDINGS.iter().any(|ending| rest.ends_with(ending))
            || rest
                .split_once(FIRST_ERROR_NOTE)
                .is_some_and(|(outcome, _)| outcome.ends_with("lines output"))
    })
}

/// A copy of `message` as the model would see it with `text` as its content, for estimates.
fn with_text(message: &Message, text: &str) -> Message {
    Message {
        tool_call_id: message.tool_call_id.clone(),
        ..Message::new(message.role, text)
    }
}
