//! The transcript's own sequence problems, found as its messages stream past.
//!
//! The same rules as [`ctxhost_engine_kit::sequence::find_sequence_problems`], one message at a
//! time, so that a stream never needs its messages kept to know whether the input was valid. A
//! test holds the two to the same answers.

use std::collections::HashSet;

use ctxhost_engine_abi::{Message, Role};
use ctxhost_engine_kit::sequence::SequenceProblem;

/// Checks a sequence one message at a time.
#[derive(Debug, Default)]
pub(super) struct SequenceChecker {
    index: usize,
    seen_calls: RecentIds,
    /// The calls of the current assistant message still waiting for their result.
    open: Vec<String>,
    problems: Vec<SequenceProblem>,
}

impl SequenceChecker {
    /// Takes the next message into account.
    pub(super) fn check(&mut self, message: &Message) {
        let index = self.index;
        self.index += 1;
        if message.role == Role::Tool {
            let Some(id) = &message.tool_call_id else {
                self.problems.push(SequenceProblem::ToolResultWithoutId { index });
                return;
            };
            match self.open.iter().position(|open_id| open_id == id) {
                Some(at) => {
                    self.open.swap_remove(at);
                }
                None if self.seen_calls.contains(id) => self
                    .problems
                    .push(SequenceProblem::DuplicateId { id: id.clone() }),
                None => self.problems.push(SequenceProblem::OrphanResult {
                    id: id.clone(),
                    index,
                }),
            }
            return;
        }
        let unanswered = self
            .open
            .drain(..)
            .map(|id| SequenceProblem::UnansweredCall { id });
        self.problems.extend(unanswered);
        for call in message.calls() {
            if call.id.is_empty() || call.function.name.is_empty() {
                self.problems.push(SequenceProblem::MalformedCall { index });
            } else if !self.seen_calls.insert(&call.id) {
                self.problems
                    .push(SequenceProblem::DuplicateId { id: call.id.clone() });
            } else {
                self.open.push(call.id.clone());
            }
        }
    }

    /// Every problem, once the last message has been checked.
    pub(super) fn finish(mut self) -> Vec<SequenceProblem> {
        let unanswered = self
            .open
            .drain(..)
            .map(|id| SequenceProblem::UnansweredCall { id });
        self.problems.extend(unanswered);
        self.problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;
    use ctxhost_engine_kit::sequence::find_sequence_problems;
    use pretty_assertions::assert_eq;

    fn calls(ids: &[&str]) -> Message {
        Message::assistant_calls(ids.iter().map(|id| ToolCall::new(*id, "ls", "{}")).collect())
    }

    fn checked(messages: &[Message]) -> Vec<SequenceProblem> {
        let mut checker = SequenceChecker::default();
        messages.iter().for_each(|message| checker.check(message));
        checker.finish()
    }

    #[test]
    fn the_streaming_check_finds_what_the_kit_finds() {
        let cases = vec![
            vec![
                Message::user("hi"),
                calls(&["a"]),
                Message::tool("a", "out"),
                Message::assistant("ok"),
            ],
            vec![
                Message::tool("x", "orphan"),
                calls(&["a", "b"]),
                Message::tool("b", "out"),
                Message::user("interrupts"),
                Message::tool("a", "late"),
                calls(&["c"]),
                Message::tool("c", "out"),
                Message::tool("c", "again"),
                calls(&["c", ""]),
                Message {
                    tool_call_id: None,
                    ..Message::tool("", "no id")
                },
            ],
            vec![calls(&["end"])],
            vec![],
        ];
        for messages in cases {
            assert_eq!(checked(&messages), find_sequence_problems(&messages));
        }
    }
}

/// The tool-call ids of the last [`RecentIds::CAPACITY`] calls, as hashes: enough to catch a
/// reused id, while the memory a streamed transcript costs stays bounded however long it is.
#[derive(Debug, Default)]
pub(super) struct RecentIds {
    set: HashSet<u64>,
    order: std::collections::VecDeque<u64>,
}

impl RecentIds {
    const CAPACITY: usize = 65_536;

    fn hash(id: &str) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(id)
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.set.contains(&Self::hash(id))
    }

    /// Records `id`; false when it was seen already.
    pub(super) fn insert(&mut self, id: &str) -> bool {
        let hash = Self::hash(id);
        if !self.set.insert(hash) {
            return false;
        }
        self.order.push_back(hash);
        if self.order.len() > Self::CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
        true
    }
}
