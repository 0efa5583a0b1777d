//! Valid message sequences.
//!
//! A sequence is valid when every tool result answers a tool call made by the nearest assistant
//! message before it (results follow their call, before anything else is said), every tool call is
//! answered exactly once, and no message is malformed. Providers reject anything else, so an engine
//! must never return it.

use std::collections::{HashMap, HashSet};
use std::fmt;

use ctxhost_engine_abi::{Message, Role};

/// One way a sequence is not valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SequenceProblem {
    /// A tool message with no `tool_call_id`.
    ToolResultWithoutId {
        /// Position in the sequence.
        index: usize,
    },
    /// A tool result whose call is not in the assistant message just before it.
    OrphanResult {
        /// The id it claims to answer.
        id: String,
        /// Position in the sequence.
        index: usize,
    },
    /// A tool call nothing answers.
    UnansweredCall {
        /// The call's id.
        id: String,
    },
    /// Two calls, or two results, with the same id.
    DuplicateId {
        /// The repeated id.
        id: String,
    },
    /// An assistant tool call with an empty id or function name.
    MalformedCall {
        /// Position in the sequence.
        index: usize,
    },
}

impl SequenceProblem {
    /// What the problem is about, independent of positions, to compare two sequences' problems.
    pub fn subject(&self) -> String {
        match self {
            Self::ToolResultWithoutId { .. } => "tool result without id".to_owned(),
            Self::OrphanResult { id, .. } => format!("orphan result {id}"),
            Self::UnansweredCall { id } => format!("unanswered call {id}"),
            Self::DuplicateId { id } => format!("duplicate id {id}"),
            Self::MalformedCall { .. } => "malformed call".to_owned(),
        }
    }
}

impl fmt::Display for SequenceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ToolResultWithoutId { index } => {
                write!(f, "message {index}: tool result without tool_call_id")
            }
            Self::OrphanResult { id, index } => {
                write!(
                    f,
                    "message {index}: tool result `{id}` answers no preceding tool call"
                )
            }
            Self::UnansweredCall { id } => write!(f, "tool call `{id}` is never answered"),
            Self::DuplicateId { id } => write!(f, "tool call id `{id}` is used twice"),
            Self::MalformedCall { index } => {
                write!(f, "message {index}: tool call with an empty id or name")
            }
        }
    }
}

/// Every problem in `messages`, in order of appearance; empty when the sequence is valid.
pub fn find_sequence_problems(messages: &[Message]) -> Vec<SequenceProblem> {
    let mut problems = Vec::new();
    let mut seen_calls = HashSet::new();
    // The calls of the current assistant message still waiting for their result.
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role == Role::Tool {
            let Some(id) = &message.tool_call_id else {
                problems.push(SequenceProblem::ToolResultWithoutId { index });
                continue;
            };
            match open.iter().position(|open_id| open_id == id) {
                Some(at) => {
                    open.swap_remove(at);
                }
                None if seen_calls.contains(id) => {
                    problems.push(SequenceProblem::DuplicateId { id: id.clone() })
                }
                None => problems.push(SequenceProblem::OrphanResult {
                    id: id.clone(),
                    index,
                }),
            }
            continue;
        }
        problems.extend(open.drain(..).map(|id| SequenceProblem::UnansweredCall { id }));
        for call in message.calls() {
            if call.id.is_empty() || call.function.name.is_empty() {
                problems.push(SequenceProblem::MalformedCall { index });
            } else if !seen_calls.insert(call.id.clone()) {
                problems.push(SequenceProblem::DuplicateId { id: call.id.clone() });
            } else {
                open.push(call.id.clone());
            }
        }
    }
    problems.extend(open.into_iter().map(|id| SequenceProblem::UnansweredCall { id }));
    problems
}

/// Whether `messages` is a valid sequence.
pub fn is_valid_sequence(messages: &[Message]) -> bool {
    find_sequence_problems(messages).is_empty()
}

/// The text of the stub result inserted for a call whose output is gone.
pub const REMOVED_RESULT_TEXT: &str =
    "[tool output removed during context compaction; the call was made but its result is not kept]";

/// Repairs tool pairs after messages were removed: drops tool results whose call is gone (or that
/// no longer directly follow it) and inserts a stub result for every call left unanswered, right
/// after the results its assistant message still has.
pub fn repair_tool_pairs(messages: Vec<Message>) -> Vec<Message> {
    let mut repaired = Vec::with_capacity(messages.len());
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        if message.role == Role::Tool {
            let answers_open = message
                .tool_call_id
                .as_ref()
                .and_then(|id| open.iter().position(|open_id| open_id == id));
            if let Some(at) = answers_open {
                open.remove(at);
                repaired.push(message);
            }
            continue;
        }
        close_open_calls(&mut repaired, &mut open);
        open.extend(message.calls().iter().map(|call| call.id.clone()));
        repaired.push(message);
    }
    close_open_calls(&mut repaired, &mut open);
    repaired
}

fn close_open_calls(repaired: &mut Vec<Message>, open: &mut Vec<String>) {
    for id in open.drain(..) {
        repaired.push(Message::tool(id, REMOVED_RESULT_TEXT));
    }
}

/// For each tool result, the index of the assistant message whose call it answers.
pub fn result_owners(messages: &[Message]) -> HashMap<usize, usize> {
    let mut owners = HashMap::new();
    let mut owner = None;
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::Tool => {
                if let Some(owner) = owner {
                    owners.insert(index, owner);
                }
            }
            _ => owner = message.has_tool_calls().then_some(index),
        }
    }
    owners
}

/// Moves `cut` back so that it does not fall inside a tool group: if `messages[cut]` is a tool
/// result, the cut moves to the assistant message that made the call.
pub fn align_start_to_group(messages: &[Message], mut cut: usize) -> usize {
    while cut > 0 && cut < messages.len() && messages[cut].role == Role::Tool {
        cut -= 1;
    }
    cut
}

/// Moves `end` (exclusive) forward past any tool results that belong to the assistant message
/// just before it, so a group is never split at the end of a span.
pub fn align_end_to_group(messages: &[Message], mut end: usize) -> usize {
    while end < messages.len() && messages[end].role == Role::Tool {
        end += 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;
    use pretty_assertions::assert_eq;

    fn call(id: &str) -> Message {
        Message::assistant_calls(vec![ToolCall::new(id, "ls", "{}")])
    }

    #[test]
    fn a_call_followed_by_its_result_is_valid() {
        let messages = vec![
            Message::user("hi"),
            call("a"),
            Message::tool("a", "out"),
            Message::assistant("ok"),
        ];
        assert!(is_valid_sequence(&messages));
    }

    #[test]
    fn orphans_unanswered_calls_and_duplicates_are_found() {
        let messages = vec![
            Message::tool("x", "out"),
            call("a"),
            Message::user("interrupts"),
            Message::tool("a", "late"),
            call("b"),
            Message::tool("b", "out"),
            call("b"),
        ];
        assert_eq!(
            find_sequence_problems(&messages),
            vec![
                SequenceProblem::OrphanResult {
                    id: "x".into(),
                    index: 0
                },
                SequenceProblem::UnansweredCall { id: "a".into() },
                SequenceProblem::DuplicateId { id: "a".into() },
                SequenceProblem::DuplicateId { id: "b".into() },
            ]
        );
    }

    #[test]
    fn repair_drops_orphans_and_stubs_missing_results() {
        let messages = vec![
            Message::tool("gone", "orphan"),
            Message::assistant_calls(vec![
                ToolCall::new("a", "ls", "{}"),
                ToolCall::new("b", "cat", "{}"),
            ]),
            Message::tool("b", "kept"),
            Message::user("next"),
        ];
        let repaired = repair_tool_pairs(messages);
        assert!(
            is_valid_sequence(&repaired),
            "{:?}",
            find_sequence_problems(&repaired)
        );
        assert_eq!(repaired.len(), 4);
        assert_eq!(repaired[1].tool_call_id.as_deref(), Some("b"));
        assert_eq!(repaired[2].tool_call_id.as_deref(), Some("a"));
        assert_eq!(repaired[2].text(), REMOVED_RESULT_TEXT);
    }

    #[test]
    fn cuts_never_fall_inside_a_tool_group() {
        let messages = vec![
            Message::user("u"),
            call("a"),
            Message::tool("a", "1"),
            Message::assistant("done"),
        ];
        assert_eq!(align_start_to_group(&messages, 2), 1);
        assert_eq!(align_end_to_group(&messages, 2), 3);
        assert_eq!(result_owners(&messages), HashMap::from([(2, 1)]));
    }
}
