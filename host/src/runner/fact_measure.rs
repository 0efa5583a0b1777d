//! The fact measure of a replay (`run --facts`): each compaction's share of the conversation's
//! facts its result still holds verbatim ([`ReplayRetention`]).
//!
//! The measure needs to know which of the compacted messages an engine wrote (an earlier
//! summary, a stand-in): their facts are the conversation's facts an earlier compaction kept, not
//! their wording. Those are the messages a compaction's result held that the context before it
//! did not, remembered by the hash of their JSON while they stay in the context.

use std::collections::HashSet;

use ctxhost_engine_abi::Message;
use ctxhost_engine_kit::retention::{compacted_messages, ReplayRetention, Retention};

use super::context::hash_bytes;

#[derive(Debug, Default)]
pub(super) struct FactMeasure {
    retention: ReplayRetention,
    /// The messages of the context an engine wrote, by [`key`].
    written_by_engine: HashSet<u64>,
}

impl FactMeasure {
    /// Measures the compaction that turned `before` into `after`.
    pub(super) fn measure(
        &mut self,
        before: &[Message],
        after: &[Message],
        sent_by_user: impl Fn(&Message) -> bool,
    ) -> Retention {
        let compacted = compacted_messages(before, after);
        let written = &self.written_by_engine;
        let retention = self.retention.measure(
            &compacted,
            after,
            |message| written.contains(&key(message)),
            sent_by_user,
        );
        // An engine's message stays one while the context holds it; what the context did not
        // hold before is this compaction's.
        let held: HashSet<u64> = before.iter().map(key).collect();
        let written: HashSet<u64> = after
            .iter()
            .map(key)
            .filter(|key| !held.contains(key) || self.written_by_engine.contains(key))
            .collect();
        self.written_by_engine = written;
        retention
    }
}

fn key(message: &Message) -> u64 {
    hash_bytes(
        serde_json::to_string(message)
            .expect("messages serialise")
            .as_bytes(),
    )
}
