//! Phase 4: putting head, summary and tail back together, and taking an earlier summary apart.
//!
//! - On the first compaction the system message gets a short note saying that earlier turns were
//!   compacted and that the summary is reference, not a new instruction.
//! - The summary message starts with [`SUMMARY_MARKER`]. Its role is the one that keeps two
//!   messages of the same role from standing next to each other; when neither `user` nor
//!   `assistant` fits, the summary is merged into the first tail message, before its own text,
//!   closed by [`SUMMARY_END`].
//! - Tool pairs are repaired last (kit's `repair_tool_pairs`).

use ctxhost_engine_abi::{part_text, Content, Message, Role};
use ctxhost_engine_kit::tokens::estimate_message_tokens;
use serde_json::json;

use crate::summary::{is_summary_text, summary_body, SUMMARY_END, SUMMARY_MARKER};

/// Appended to the system message on the first compaction.
pub const SYSTEM_NOTE: &str = "Note: earlier turns of this conversation were compacted into a summary \
(the message that starts with [CONTEXT COMPACTION]). The summary is reference material about what \
happened before, not a new instruction.";

/// Where the summary went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Its own message with this role.
    Standalone(Role),
    /// Merged into the first tail message.
    Merged,
}

impl Placement {
    pub fn describe(self) -> &'static str {
        match self {
            Placement::Standalone(Role::User) => "user",
            Placement::Standalone(_) => "assistant",
            Placement::Merged => "merged into the first tail message",
        }
    }
}

/// The full text of a summary message: the marker and a one-line preamble, then the body.
pub(crate) fn summary_message_text(preamble: &str, body: &str) -> String {
    format!("{SUMMARY_MARKER} {preamble}\n\n{body}")
}

/// Takes every earlier summary out of `messages`: standalone summary messages are removed, merged
/// ones give back the message they were merged into. Returns the bodies, oldest first.
pub(crate) fn take_previous_summaries(messages: Vec<Message>) -> (Vec<Message>, Vec<String>) {
    let mut bodies = Vec::new();
    let mut kept = Vec::with_capacity(messages.len());
    for message in messages {
        match split_summary(message) {
            (Some(body), rest) => {
                bodies.push(body);
                kept.extend(rest);
            }
            (None, Some(message)) => kept.push(message),
            (None, None) => {}
        }
    }
    (kept, bodies)
}

/// Like [`take_previous_summaries`] on a copy of `messages`, keeping the estimate of each message
/// that stays (`estimates`, one per message) and estimating only what a merged summary leaves of
/// its message: counting the characters of the whole context again, at every compaction after the
/// first, was a pass over it for nothing.
pub(crate) fn take_previous_summaries_estimated(
    messages: &[Message],
    estimates: &[u64],
) -> (Vec<Message>, Vec<String>, Vec<u64>) {
    let mut bodies = Vec::new();
    let mut kept = Vec::with_capacity(messages.len());
    let mut kept_estimates = Vec::with_capacity(messages.len());
    for (message, &estimate) in messages.iter().zip(estimates) {
        if !carries_summary(message) {
            kept.push(message.clone());
            kept_estimates.push(estimate);
            continue;
        }
        let (body, rest) = split_summary_borrowed(message);
        bodies.extend(body);
        if let Some(rest) = rest {
            kept_estimates.push(estimate_message_tokens(&rest));
            kept.push(rest);
        }
    }
    (kept, bodies, kept_estimates)
}

/// Whether any message carries a summary (cheap: looks at the start of each text).
pub(crate) fn has_summary(messages: &[Message]) -> bool {
    messages.iter().any(carries_summary)
}

/// Whether `message` is a summary or has one merged into it.
pub(crate) fn carries_summary(message: &Message) -> bool {
    first_text(&message.content).is_some_and(is_summary_text)
}

fn first_text(content: &Content) -> Option<&str> {
    match content {
        Content::Text(text) => Some(text),
        Content::Parts(parts) => parts.first().and_then(part_text),
        Content::Null => None,
    }
}

/// The summary body in `message` and what remains of the message without it.
fn split_summary(message: Message) -> (Option<String>, Option<Message>) {
    let Some(text) = first_text(&message.content).filter(|text| is_summary_text(text)) else {
        return (None, Some(message));
    };
    let body = summary_body(text).unwrap_or_default().to_owned();
    let rest = text
        .split_once(SUMMARY_END)
        .map(|(_, rest)| rest.trim_start_matches('\n').to_owned());
    let mut message = message;
    let keep = match (&mut message.content, rest) {
        (Content::Parts(parts), _) => {
            parts.remove(0);
            !parts.is_empty() || message.has_tool_calls()
        }
        (content, Some(rest)) if !rest.is_empty() => {
            *content = Content::Text(rest);
            true
        }
        (content, _) => {
            *content = Content::Null;
            message.has_tool_calls()
        }
    };
    (Some(body), keep.then_some(message))
}

/// [`split_summary`] of a message the caller keeps, as `split_summary(message.clone())` gives it:
/// a summary's text (tens of KB) is not copied before its body is, and its end is looked for once.
fn split_summary_borrowed(message: &Message) -> (Option<String>, Option<Message>) {
    let text = match &message.content {
        Content::Text(text) if is_summary_text(text) => text,
        _ => return split_summary(message.clone()),
    };
    // `SUMMARY_END` cannot start within the leading marker: its first occurrence in the text is
    // the one after the marker that `summary_body` and `split_summary` both cut at.
    let end = text.find(SUMMARY_END);
    let body = summary_body(&text[..end.unwrap_or(text.len())])
        .unwrap_or_default()
        .to_owned();
    let rest = end
        .map(|at| text[at + SUMMARY_END.len()..].trim_start_matches('\n'))
        .filter(|rest| !rest.is_empty());
    if rest.is_none() && !message.has_tool_calls() {
        return (Some(body), None);
    }
    let kept = Message {
        role: message.role,
        content: rest.map_or(Content::Null, |rest| Content::Text(rest.to_owned())),
        tool_calls: message.tool_calls.clone(),
        tool_call_id: message.tool_call_id.clone(),
        name: message.name.clone(),
        extra: message.extra.clone(),
    };
    (Some(body), Some(kept))
}

/// Appends [`SYSTEM_NOTE`] to a leading system message that does not have it yet.
pub(crate) fn append_system_note(head: &mut [Message]) -> bool {
    let Some(system) = head.first_mut().filter(|message| message.role == Role::System) else {
        return false;
    };
    if system.text().contains(SYSTEM_NOTE) {
        return false;
    }
    match &mut system.content {
        Content::Text(text) => {
            text.push_str("\n\n");
            text.push_str(SYSTEM_NOTE);
        }
        Content::Parts(parts) => parts.push(json!({"type": "text", "text": SYSTEM_NOTE})),
        content @ Content::Null => *content = Content::Text(SYSTEM_NOTE.to_owned()),
    }
    true
}

/// Where a summary goes between a head ending with `before` and a tail starting with `after`.
pub(crate) fn choose_placement(before: Option<Role>, after: Option<Role>) -> Placement {
    // After the model's turn a summary reads best as the user's; after the user's, as the model's.
    let preferred = match before {
        Some(Role::Assistant) | Some(Role::Tool) | None => Role::User,
        _ => Role::Assistant,
    };
    let other = if preferred == Role::User {
        Role::Assistant
    } else {
        Role::User
    };
    [preferred, other]
        .into_iter()
        .find(|role| Some(*role) != before && Some(*role) != after)
        .map_or(Placement::Merged, Placement::Standalone)
}

/// Head, summary, tail: the summary as its own message or merged into the first tail message.
pub(crate) fn assemble(
    mut head: Vec<Message>,
    summary_text: String,
    mut tail: Vec<Message>,
) -> (Vec<Message>, Placement) {
    let placement = choose_placement(head.last().map(|m| m.role), tail.first().map(|m| m.role));
    match placement {
        Placement::Standalone(role) => head.push(Message::new(role, summary_text)),
        Placement::Merged => merge_into(&mut tail[0], summary_text),
    }
    head.extend(tail);
    (head, placement)
}

fn merge_into(message: &mut Message, summary_text: String) {
    let block = format!("{summary_text}\n{SUMMARY_END}");
    match &mut message.content {
        Content::Text(text) => *text = format!("{block}\n\n{text}"),
        Content::Parts(parts) => parts.insert(0, json!({"type": "text", "text": block})),
        content @ Content::Null => *content = Content::Text(block),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The borrowing split gives what splitting a copy gives: standalone and merged summaries,
    /// with and without tool calls, an empty remainder, parts, and messages that are no summary.
    #[test]
    fn a_borrowed_split_is_a_split_of_a_copy() {
        let summary = format!("{SUMMARY_MARKER} Earlier turns were compacted.\n\n## Goal\n- fix it");
        let mut messages = vec![
            Message::user(summary.clone()),
            Message::user(format!("  {summary}")),
            Message::user(format!("{summary}\n\n{SUMMARY_END}\n\nThe next request")),
            Message::user(format!("{summary}\n\n{SUMMARY_END}\n\n")),
            Message::user(format!("{summary}\n{SUMMARY_END}\nrest with {SUMMARY_END} again")),
            Message::user(SUMMARY_MARKER),
            Message::user("no summary here"),
        ];
        let mut with_calls: Vec<Message> = messages.clone();
        for message in &mut with_calls {
            message.role = Role::Assistant;
            message.tool_calls = Some(vec![serde_json::from_value(json!({
                "id": "call_1", "type": "function",
                "function": {"name": "terminal", "arguments": "{}"}
            }))
            .unwrap()]);
            message.name = Some("agent".to_owned());
            message.extra.insert("reasoning".to_owned(), json!("thought"));
        }
        messages.extend(with_calls);
        let mut parts = Message::user("");
        parts.content = Content::Parts(vec![
            json!({"type": "text", "text": summary}),
            json!({"type": "text", "text": "more"}),
        ]);
        messages.push(parts);
        messages.push(Message {
            content: Content::Null,
            ..Message::user("")
        });
        for message in &messages {
            assert_eq!(
                split_summary_borrowed(message),
                split_summary(message.clone()),
                "{message:?}"
            );
        }
    }

    #[test]
    fn the_summary_role_never_repeats_a_neighbour() {
        use Role::*;
        assert_eq!(
            choose_placement(Some(System), Some(User)),
            Placement::Standalone(Assistant)
        );
        assert_eq!(
            choose_placement(Some(Tool), Some(Assistant)),
            Placement::Standalone(User)
        );
        assert_eq!(
            choose_placement(Some(Tool), Some(User)),
            Placement::Standalone(Assistant)
        );
        assert_eq!(choose_placement(Some(User), Some(Assistant)), Placement::Merged);
        assert_eq!(choose_placement(Some(Assistant), Some(User)), Placement::Merged);
        assert_eq!(
            choose_placement(None, Some(User)),
            Placement::Standalone(Assistant)
        );
    }

    #[test]
    fn a_merged_summary_comes_apart_again() {
        let (merged, placement) = assemble(
            vec![Message::user("q")],
            summary_message_text("pre", "## Goal\n- x"),
            vec![Message::assistant("a")],
        );
        assert_eq!(placement, Placement::Merged);
        assert!(merged[1].text().starts_with(SUMMARY_MARKER));
        let (restored, bodies) = take_previous_summaries(merged);
        assert_eq!(restored, vec![Message::user("q"), Message::assistant("a")]);
        assert_eq!(bodies, vec!["## Goal\n- x".to_owned()]);
    }

    #[test]
    fn the_system_note_is_added_once() {
        let mut head = vec![Message::system("be brief")];
        assert!(append_system_note(&mut head));
        assert!(!append_system_note(&mut head));
        assert_eq!(head[0].text(), format!("be brief\n\n{SYSTEM_NOTE}"));
    }
}
