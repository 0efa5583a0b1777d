//! Reasoning models wrap their thoughts in `<think>…</think>` and similar tags; a chain of thought
//! is never kept as a summary (llm.md).
//!
//! [`strip_reasoning`], in order:
//!
//! - text before a closing tag whose opening tag is missing goes (chat templates often open the
//!   block in the prompt, so the answer starts inside it);
//! - every `<tag>…</tag>` block goes, the tags matched without regard to case, with or without
//!   attributes;
//! - an opening tag that is never closed takes everything after it (the model ran out of tokens
//!   while thinking: nothing after it is a summary).

/// Tag names that hold reasoning, lowercase.
const REASONING_TAGS: [&str; 7] = [
    "think",
    "thinking",
    "reasoning",
    "reflection",
    "thought",
    "scratchpad",
    "analysis",
];

/// `text` without its reasoning blocks, trimmed.
pub fn strip_reasoning(text: &str) -> String {
    // ASCII lowercasing keeps every byte offset, so positions found in `lower` cut `text`.
    let mut text = text.to_owned();
    if let Some(end) = find_orphan_close(&text) {
        text.replace_range(..end, "");
    }
    while let Some((start, end)) = find_block(&text) {
        text.replace_range(start..end, "");
    }
    text.trim().to_owned()
}

/// A tag found in text: where it starts and ends, and whether it closes.
#[derive(Clone, Copy, Debug)]
struct Tag {
    start: usize,
    end: usize,
    name: &'static str,
    closing: bool,
}

/// Every reasoning tag in `text`, in order.
fn find_tags(text: &str) -> Vec<Tag> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut tags = Vec::new();
    let mut at = 0;
    while let Some(offset) = lower[at..].find('<') {
        let start = at + offset;
        at = start + 1;
        let closing = bytes.get(start + 1) == Some(&b'/');
        let name_start = start + 1 + usize::from(closing);
        let Some(name) = REASONING_TAGS
            .iter()
            .filter(|name| lower[name_start..].starts_with(**name))
            .max_by_key(|name| name.len())
        else {
            continue;
        };
        let after = name_start + name.len();
        // `<think>`, `<think attr="…">`; not `<thinker>`.
        let end = match bytes.get(after) {
            Some(b'>') => after + 1,
            Some(b' ' | b'\t' | b'\n') if !closing => match lower[after..].find('>') {
                Some(close) => after + close + 1,
                None => continue,
            },
            _ => continue,
        };
        tags.push(Tag {
            start,
            end,
            name,
            closing,
        });
        at = end;
    }
    tags
}

/// The end of a closing tag before which no tag of its name opened.
fn find_orphan_close(text: &str) -> Option<usize> {
    let mut open: Vec<&str> = Vec::new();
    for tag in find_tags(text) {
        if !tag.closing {
            open.push(tag.name);
        } else if let Some(at) = open.iter().rposition(|name| *name == tag.name) {
            open.truncate(at);
        } else {
            return Some(tag.end);
        }
    }
    None
}

/// The first reasoning block: from an opening tag to its closing tag, or to the end of the text
/// when it is never closed.
fn find_block(text: &str) -> Option<(usize, usize)> {
    let tags = find_tags(text);
    let (position, first) = tags.iter().enumerate().find(|(_, tag)| !tag.closing)?;
    let mut depth = 0;
    for tag in &tags[position..] {
        if tag.name != first.name {
            continue;
        }
        if tag.closing {
            depth -= 1;
            if depth == 0 {
                return Some((first.start, tag.end));
            }
        } else {
            depth += 1;
        }
    }
    Some((first.start, text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_think_block_is_removed() {
        assert_eq!(
            strip_reasoning("<think>\nThe user wants…\n</think>\n\n## Goal\n- fix it"),
            "## Goal\n- fix it"
        );
    }

    #[test]
    fn other_tags_in_any_case_and_with_attributes_are_removed() {
        let text = "<THINKING>a</THINKING>## Goal\n<reasoning effort=\"high\">b\n</reasoning>- x\n<Reflection>c</Reflection>- y";
        assert_eq!(strip_reasoning(text), "## Goal\n- x\n- y");
    }

    #[test]
    fn nested_blocks_go_whole() {
        assert_eq!(
            strip_reasoning("<think>a <think>b</think> c</think>## Goal"),
            "## Goal"
        );
    }

    #[test]
    fn an_unclosed_leading_block_leaves_nothing() {
        assert_eq!(strip_reasoning("<think>\nLet me see, the files are"), "");
        assert_eq!(
            strip_reasoning("## Goal\n- x\n<thinking>wait, maybe"),
            "## Goal\n- x"
        );
    }

    #[test]
    fn text_before_an_orphan_closing_tag_is_reasoning() {
        assert_eq!(
            strip_reasoning("the template opened the block\n</think>\n## Goal\n- x"),
            "## Goal\n- x"
        );
    }

    #[test]
    fn similar_words_and_other_tags_are_kept() {
        let text = "## Goal\n- keep <thinker> and <b>bold</b> and `a < b`";
        assert_eq!(strip_reasoning(text), text);
    }

    #[test]
    fn non_ascii_text_around_blocks_survives() {
        assert_eq!(
            strip_reasoning("<think>é</think>## Goal\n- café ✓"),
            "## Goal\n- café ✓"
        );
    }
}
