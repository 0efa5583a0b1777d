//! Claude Code's `attachment` records: what it adds to the next request besides the user's words
//! (an @-mentioned file, CLAUDE.md, a hook's context, a prompt typed while the model worked), and
//! the text of each that the model reads.

use serde_json::{Map, Value};

/// The text an attachment gives the model.
pub(super) enum AttachmentText {
    /// The user's own words: a prompt typed while the model was working.
    Prompt(String),
    /// Context Claude Code adds for the model (a `<system-reminder>`), read as a meta message.
    Meta(String),
}

/// The text of the attachment types whose content reaches the model, taken out of
/// `attachment` (its other keys stay in the message's `extra`); `None` for other types.
pub(super) fn attachment_text(kind: &str, attachment: &mut Map<String, Value>) -> Option<AttachmentText> {
    match kind {
        "queued_command" => {
            let prompt = take_text(attachment, "prompt")?;
            let mode = attachment.get("commandMode").and_then(Value::as_str);
            let origin = attachment
                .get("origin")
                .and_then(|origin| origin.get("kind"))
                .and_then(Value::as_str);
            let typed =
                mode.is_none_or(|mode| mode == "prompt") && origin.is_none_or(|origin| origin == "human");
            Some(if typed {
                AttachmentText::Prompt(prompt)
            } else {
                AttachmentText::Meta(prompt)
            })
        }
        "hook_additional_context" | "skill_listing" => {
            take_text(attachment, "content").map(AttachmentText::Meta)
        }
        "file" | "nested_memory" => {
            let path = ["filename", "path"]
                .iter()
                .find_map(|key| attachment.get(*key).and_then(Value::as_str))
                .map(str::to_owned);
            // `file` holds what the Read tool would give (`content.file.content`), `nested_memory`
            // the file's `content.content`; either may be the text itself.
            let text = match attachment.get_mut("content")? {
                Value::String(text) => std::mem::take(text),
                Value::Object(content) => {
                    let inner = match content.get_mut("file") {
                        Some(Value::Object(file)) => file,
                        _ => content,
                    };
                    match inner.get_mut("content") {
                        Some(Value::String(text)) => std::mem::take(text),
                        _ => return None,
                    }
                }
                _ => return None,
            };
            attachment.remove("content");
            Some(AttachmentText::Meta(match path {
                Some(path) => format!("Contents of {path}:\n\n{text}"),
                None => text,
            }))
        }
        _ => None,
    }
}

/// `key` of `attachment` taken out as text: a string, or a list of strings one per line.
fn take_text(attachment: &mut Map<String, Value>, key: &str) -> Option<String> {
    let text = match attachment.get(key)? {
        Value::String(text) => text.clone(),
        Value::Array(items) => {
            let lines: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            lines?.join("\n")
        }
        _ => return None,
    };
    attachment.remove(key);
    (!text.trim().is_empty()).then_some(text)
}

/// The text of a record's `rendered` (`[{"content": …}]`, what Claude Code sent for it), when
/// it holds any.
pub(super) fn rendered_text(rendered: &Value) -> Option<String> {
    let pieces: Vec<&str> = rendered
        .as_array()?
        .iter()
        .filter_map(|piece| piece.get("content").and_then(Value::as_str))
        .collect();
    let text = pieces.join("\n");
    (!text.trim().is_empty()).then_some(text)
}
