//! Freeing a large context off the caller's path.
//!
//! A context of thousands of tool outputs is thousands of allocations: freeing the one a compaction
//! replaced took a sixth of a compaction of a 2-million-token transcript, and longer than the
//! compaction itself in the host's replay. Both the compressor (its input) and the host (the
//! context it replaced) hand such a list to a thread of its own.

use ctxhost_engine_abi::{part_text, Content, Message};

/// Lists with at least this many bytes of text are freed on a thread of their own; smaller ones
/// here, where starting a thread would cost more.
pub const BACKGROUND_RELEASE_BYTES: usize = 1_000_000;

/// Frees `messages` on a thread named `thread` when they hold at least
/// [`BACKGROUND_RELEASE_BYTES`] of text, here otherwise.
pub fn release_in_background(messages: Vec<Message>, thread: &str) {
    let bytes: usize = messages.iter().map(|message| text_bytes(&message.content)).sum();
    if bytes < BACKGROUND_RELEASE_BYTES {
        return;
    }
    // When no thread can be started, the closure, and the messages with it, are dropped here.
    let _ = std::thread::Builder::new()
        .name(thread.to_owned())
        .spawn(move || drop(messages));
}

fn text_bytes(content: &Content) -> usize {
    match content {
        Content::Null => 0,
        Content::Text(text) => text.len(),
        Content::Parts(parts) => parts.iter().filter_map(part_text).map(str::len).sum(),
    }
}
