//! The prompt a model summarizer gets (compressor.md, phase 3). Its text is `prompt.md`, in parts
//! marked `<!-- part: NAME -->`:
//!
//! - `system`: the role (summarise, never answer or continue);
//! - `instructions`: the template's headings in order, what goes under each, and the target
//!   length;
//! - `update` and `earlier`: on iterative compaction, the earlier summary and the instruction to
//!   update it rather than start over;
//! - `focus`: a focus topic gets about two thirds of the budget;
//! - `turns`: the serialised middle.
//!
//! Placeholders (`{target_tokens}`…) are filled in each part before the conversation's own text is
//! inserted, so text in the conversation is never taken for a placeholder.

use super::client::ChatMessage;

const PROMPT: &str = include_str!("prompt.md");

/// What goes into a prompt.
#[derive(Clone, Copy, Debug)]
pub struct PromptInput<'a> {
    /// The middle, serialised (`[USER]: …`).
    pub transcript: &'a str,
    /// An earlier summary to update.
    pub previous_summary: Option<&'a str>,
    /// What to spend most of the budget on.
    pub focus_topic: Option<&'a str>,
    /// The summary's target length in tokens.
    pub target_tokens: u64,
}

/// The chat messages asking for a summary of `input`: a system message and one user message.
pub fn build_prompt(input: &PromptInput<'_>) -> Vec<ChatMessage> {
    let target = input.target_tokens.to_string();
    let words = (input.target_tokens * 3 / 4).to_string();
    let mut user = fill(
        part("instructions"),
        &[("target_tokens", &target), ("target_words", &words)],
    );
    let previous = input
        .previous_summary
        .filter(|summary| !summary.trim().is_empty());
    if previous.is_some() {
        user.push_str("\n\n");
        user.push_str(part("update"));
    }
    if let Some(focus) = input.focus_topic.filter(|focus| !focus.trim().is_empty()) {
        let focus_tokens = (input.target_tokens * 2 / 3).to_string();
        user.push_str("\n\n");
        user.push_str(&fill(
            part("focus"),
            &[("focus", focus.trim()), ("focus_tokens", &focus_tokens)],
        ));
    }
    if let Some(previous) = previous {
        user.push_str("\n\n");
        user.push_str(&part("earlier").replace("{previous_summary}", previous.trim()));
    }
    user.push_str("\n\n");
    user.push_str(&part("turns").replace("{transcript}", input.transcript.trim_end()));
    vec![
        ChatMessage {
            role: "system",
            content: part("system").to_owned(),
        },
        ChatMessage {
            role: "user",
            content: user,
        },
    ]
}

/// The part `name` of `prompt.md`, trimmed.
fn part(name: &str) -> &'static str {
    let marker = format!("<!-- part: {name} -->");
    let start = PROMPT
        .find(&marker)
        .map(|at| at + marker.len())
        .unwrap_or_else(|| panic!("prompt.md has no part `{name}`"));
    let end = PROMPT[start..]
        .find("<!-- part: ")
        .map_or(PROMPT.len(), |at| start + at);
    PROMPT[start..end].trim()
}

/// `template` with each `{name}` replaced by its value.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values.iter().fold(template.to_owned(), |text, (name, value)| {
        text.replace(&format!("{{{name}}}"), value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_compressor::summary::TEMPLATE_HEADINGS;

    fn prompt(input: PromptInput<'_>) -> (String, String) {
        let messages = build_prompt(&input);
        assert_eq!(
            messages.iter().map(|m| m.role).collect::<Vec<_>>(),
            ["system", "user"]
        );
        (messages[0].content.clone(), messages[1].content.clone())
    }

    const PLAIN: PromptInput<'static> = PromptInput {
        transcript: "[USER]: fix src/app.py\n\n",
        previous_summary: None,
        focus_topic: None,
        target_tokens: 2_000,
    };

    #[test]
    fn the_prompt_lists_the_template_headings_in_order_and_the_target() {
        let (system, user) = prompt(PLAIN);
        assert!(system.contains("never answer"), "{system}");
        let mut at = 0;
        for heading in TEMPLATE_HEADINGS {
            let line = format!("\n{heading}\n");
            let found = user[at..]
                .find(&line)
                .unwrap_or_else(|| panic!("{heading} missing or out of order:\n{user}"));
            at += found + heading.len();
        }
        assert!(
            user.contains("at most about 2000 tokens (about\n1500 words)"),
            "{user}"
        );
        assert!(
            user.contains("TURNS TO SUMMARISE:\n<<<\n[USER]: fix src/app.py\n>>>"),
            "{user}"
        );
        assert!(!user.contains("EARLIER SUMMARY"), "{user}");
        assert!(!user.contains("FOCUS TOPIC"), "{user}");
        assert!(!user.contains('{'), "every placeholder is filled:\n{user}");
    }

    #[test]
    fn an_earlier_summary_comes_with_the_instruction_to_update_it() {
        let (_, user) = prompt(PromptInput {
            previous_summary: Some("## Goal\n- ship v2\n"),
            ..PLAIN
        });
        assert!(
            user.contains("Update the\nearlier summary instead of starting over"),
            "{user}"
        );
        assert!(
            user.contains("move work that is now finished from In Progress to Done"),
            "{user}"
        );
        assert!(user.contains("drop what is obsolete"), "{user}");
        assert!(
            user.contains("EARLIER SUMMARY:\n<<<\n## Goal\n- ship v2\n>>>"),
            "{user}"
        );
        assert!(user.find("EARLIER SUMMARY:").unwrap() < user.find("TURNS TO SUMMARISE:").unwrap());
    }

    #[test]
    fn a_focus_topic_gets_two_thirds_of_the_budget() {
        let (_, user) = prompt(PromptInput {
            focus_topic: Some(" the database migration "),
            target_tokens: 3_000,
            ..PLAIN
        });
        assert!(
            user.contains("FOCUS TOPIC: the database migration. Spend about two thirds of the summary (about 2000 tokens)"),
            "{user}"
        );
    }

    #[test]
    fn placeholders_inside_the_conversation_are_left_alone() {
        let (_, user) = prompt(PromptInput {
            transcript: "[USER]: print {target_tokens} and {focus}",
            ..PLAIN
        });
        assert!(
            user.contains("[USER]: print {target_tokens} and {focus}"),
            "{user}"
        );
    }
}
