//! What the model sees: the system message with a fixed note, one message holding the summaries,
//! then the fresh tail.
//!
//! - The note is the same text every time, appended once, so a provider's prompt cache of the
//!   system message survives every compaction.
//! - The summary message is an *assistant* message: a user-role message would be taken by hosts
//!   for the person's last words. It starts with [`SUMMARY_HEADER`] and ends with an
//!   `Expandable:` line listing its summary ids, which is how the next compaction recognises it.
//! - Summaries are shown highest depth first (the oldest, most condensed history), each headed with
//!   its id, depth and time range.

use ctxhost_engine_abi::{Content, Message, Role};
use serde_json::json;

use crate::{store::SummaryRow, time::format_iso};

/// Appended to the system message, always the same.
pub const SYSTEM_NOTE: &str = "[lcm] Earlier parts of this conversation may be replaced by summaries \
(ids `sum_…`). Nothing is lost: every original message is stored. Use lcm_grep to search the whole \
history, lcm_expand to get a summary's sources or a message's exact original, lcm_describe for a \
summary's lineage, lcm_status for the store.";

/// The first line of the summary message.
pub const SUMMARY_HEADER: &str =
    "[lcm] Summaries of the earlier conversation, oldest and most condensed first.";

const EXPANDABLE: &str = "Expandable:";

const NOTE_SEPARATOR: &str = "\n\n";

/// The system message with the note appended (once).
pub fn with_note(system: &Message) -> Message {
    let mut system = system.clone();
    if has_note(&system) {
        return system;
    }
    system.content = match system.content {
        Content::Null => Content::Text(SYSTEM_NOTE.to_owned()),
        Content::Text(text) if text.is_empty() => Content::Text(SYSTEM_NOTE.to_owned()),
        Content::Text(text) => Content::Text(format!("{text}{NOTE_SEPARATOR}{SYSTEM_NOTE}")),
        Content::Parts(mut parts) => {
            parts.push(json!({ "type": "text", "text": SYSTEM_NOTE }));
            Content::Parts(parts)
        }
    };
    system
}

fn has_note(system: &Message) -> bool {
    match &system.content {
        Content::Text(text) => text.ends_with(SYSTEM_NOTE),
        Content::Parts(parts) => parts
            .last()
            .and_then(|part| part.get("text"))
            .is_some_and(|text| text == SYSTEM_NOTE),
        Content::Null => false,
    }
}

/// The system message as it was before [`with_note`] (unchanged when it has no note).
pub fn without_note(system: &Message) -> Message {
    let mut original = system.clone();
    if !has_note(system) {
        return original;
    }
    original.content = match &system.content {
        Content::Text(text) if text.as_str() == SYSTEM_NOTE => Content::Text(String::new()),
        Content::Text(text) => {
            let cut = text.len() - SYSTEM_NOTE.len();
            let body = &text[..cut];
            Content::Text(body.strip_suffix(NOTE_SEPARATOR).unwrap_or(body).to_owned())
        }
        Content::Parts(parts) => Content::Parts(parts[..parts.len() - 1].to_vec()),
        Content::Null => Content::Null,
    };
    original
}

/// One summary as shown in the context: its time range, or when its messages were stored when
/// they carry no time (a replayed transcript's range is the seconds of its replay, no span of
/// the session's).
pub fn render_summary(summary: &SummaryRow) -> String {
    let stored = if summary.dated { "" } else { "stored " };
    format!(
        "## {} ({}, depth {}, {stored}{} to {}, {} messages)\n{}",
        summary.id,
        summary.kind.as_str(),
        summary.depth,
        format_iso(summary.earliest_at),
        format_iso(summary.latest_at),
        summary.descendant_count,
        summary.text.trim_end()
    )
}

/// The summary message for `summaries` (in the order given: highest depth first). `pinned` is
/// the newest user message, when it is kept right after the summaries while work that followed
/// it was summarised (see [`crate::compact`]).
pub fn summary_message(summaries: &[SummaryRow], pinned: Option<i64>) -> Message {
    let mut text = String::from(SUMMARY_HEADER);
    for summary in summaries {
        text.push_str("\n\n");
        text.push_str(&render_summary(summary));
    }
    let ids: Vec<&str> = summaries.iter().map(|summary| summary.id.as_str()).collect();
    text.push_str(&format!(
        "\n\n{EXPANDABLE} {} (lcm_expand gives a summary's sources, down to the exact original messages)",
        ids.join(", ")
    ));
    if let Some(id) = pinned {
        text.push_str(&format!("{PINNED}msg_{id}"));
    }
    Message::new(Role::Assistant, text)
}

/// Names the request kept right after the summaries. Not "the latest": the user may send more
/// before the next compaction writes this message again (verify20: the label pointed at a
/// decision the user had reversed three messages later).
const PINNED: &str = "; the user's request the summarised work followed comes next: ";
/// How earlier versions named it, still read.
const PINNED_BEFORE: &str = "; the user's latest request follows: ";

/// The row id of the user message a summary message says follows it, kept out of order.
pub fn parse_pinned(message: &Message) -> Option<i64> {
    let last = message.text().lines().next_back()?.to_owned();
    let (_, id) = last
        .rsplit_once(PINNED)
        .or_else(|| last.rsplit_once(PINNED_BEFORE))?;
    id.strip_prefix("msg_")?.parse().ok()
}

/// The summary ids listed by a summary message, or `None` when `message` is not one.
pub fn parse_summary_message(message: &Message) -> Option<Vec<String>> {
    if message.role != Role::Assistant || message.has_tool_calls() {
        return None;
    }
    let Content::Text(text) = &message.content else {
        return None;
    };
    if !text.starts_with(SUMMARY_HEADER) {
        return None;
    }
    let last = text.lines().next_back()?;
    let list = last.strip_prefix(EXPANDABLE)?;
    let list = list.split(" (").next().unwrap_or("");
    Some(
        list.split(',')
            .map(str::trim)
            .filter(|id| is_summary_id(id))
            .map(str::to_owned)
            .collect(),
    )
}

/// Whether `id` looks like `sum_` + 16 hex digits.
pub fn is_summary_id(id: &str) -> bool {
    id.strip_prefix("sum_")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SummaryKind;

    fn summary(id: &str) -> SummaryRow {
        SummaryRow {
            id: id.to_owned(),
            kind: SummaryKind::Leaf,
            depth: 0,
            method: "extractive".into(),
            text: "## Goal\nfix it\nExpandable: not this".into(),
            tokens: 5,
            earliest_at: 0,
            latest_at: 1000,
            descendant_count: 3,
            descendant_tokens: 30,
            last_seq: 3,
            dated: true,
        }
    }

    #[test]
    fn the_note_is_added_once_and_removed_exactly() {
        let system = Message::system("be brief");
        let noted = with_note(&system);
        assert_eq!(with_note(&noted), noted);
        assert!(noted.text().starts_with("be brief"));
        assert_eq!(without_note(&noted), system);
        assert_eq!(without_note(&system), system);
    }

    #[test]
    fn a_summary_message_lists_its_ids() {
        let ids = ["sum_0123456789abcdef", "sum_fedcba9876543210"];
        let message = summary_message(&[summary(ids[0]), summary(ids[1])], None);
        assert_eq!(parse_summary_message(&message).unwrap(), ids);
        assert_eq!(parse_pinned(&message), None);
        let pinned = summary_message(&[summary(ids[0])], Some(42));
        assert_eq!(parse_summary_message(&pinned).unwrap(), ids[..1]);
        assert_eq!(parse_pinned(&pinned), Some(42));
        // It does not call the request the latest: more may follow before the next compaction.
        assert!(!pinned.text().contains("latest"), "{}", pinned.text());
        let earlier = Message::assistant(format!(
            "{SUMMARY_HEADER}\n\n{EXPANDABLE} sum_0123456789abcdef; the user's latest request follows: msg_7"
        ));
        assert_eq!(parse_pinned(&earlier), Some(7));
        assert_eq!(parse_summary_message(&Message::assistant("hello")), None);
    }
}
