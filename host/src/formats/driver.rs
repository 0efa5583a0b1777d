//! The read loop of the JSONL readers whose messages are gathered from several records (Claude
//! Code, Codex): a ready queue, then one more record, then, at the end of the file, a flush.
//!
//! A record may complete no message (a UI event), one, or several (an assistant message and the
//! results that arrived for it); a message may wait for records after its own (the rest of one
//! API response). So each reader queues what it completes, and [`next_queued`] hands the queue
//! out, reading records only when it is empty.

use std::collections::VecDeque;

use ctxhost_engine_abi::Message;

use super::{Located, TranscriptError, TranscriptMeta};

/// Messages completed and not yet handed out.
#[derive(Debug, Default)]
pub(super) struct Queue {
    ready: VecDeque<Located>,
    /// Messages queued so far, handed out or not.
    queued: usize,
    finished: bool,
}

impl Queue {
    /// Queues `message`, which came from the record on `line`.
    pub(super) fn push(&mut self, message: Message, line: usize) {
        self.push_located(Located::new(message, line));
    }

    /// Queues a message with where its records are.
    pub(super) fn push_located(&mut self, located: Located) {
        self.queued += 1;
        self.ready.push_back(located);
    }

    /// How many messages were queued so far.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }
}

/// A reader that turns records into queued messages.
pub(super) trait QueuedRecords {
    /// Its queue.
    fn queue(&mut self) -> &mut Queue;

    /// Reads one record, queueing the messages it completes; false at the end of the file.
    fn read_record(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError>;

    /// The file has ended: queues what is still being gathered and says what is left over.
    fn end_of_file(&mut self, meta: &mut TranscriptMeta);
}

/// The next message of `reader`: from its queue, reading records until one is queued.
pub(super) fn next_queued(
    reader: &mut impl QueuedRecords,
    meta: &mut TranscriptMeta,
) -> Result<Option<Located>, TranscriptError> {
    loop {
        let queue = reader.queue();
        if let Some(next) = queue.ready.pop_front() {
            return Ok(Some(next));
        }
        if queue.finished {
            return Ok(None);
        }
        if !reader.read_record(meta)? {
            reader.queue().finished = true;
            reader.end_of_file(meta);
        }
    }
}
