//! The live context during a replay: the messages, their JSON, and their estimated tokens.
//!
//! Between compactions the context only grows by appending, so the JSON text handed to the engine
//! and the token total are kept up to date per message: a turn costs work in proportion to the new
//! messages, not to the whole context.

use ctxhost_engine_abi::{messages_to_json, Message};
use ctxhost_engine_kit::tokens::estimate_message_tokens;

/// The context the model would receive next.
#[derive(Debug, Default)]
pub struct LiveContext {
    messages: Vec<Message>,
    json: String,
    tokens: u64,
}

impl LiveContext {
    /// An empty context.
    pub fn new() -> Self {
        Self {
            messages: Vec::new(),
            json: "[]".to_owned(),
            tokens: 0,
        }
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        self.tokens += estimate_message_tokens(&message);
        self.json.pop();
        if self.messages.is_empty() {
            self.json
                .push_str(&serde_json::to_string(&message).expect("messages serialise"));
        } else {
            self.json.push(',');
            self.json
                .push_str(&serde_json::to_string(&message).expect("messages serialise"));
        }
        self.json.push(']');
        self.messages.push(message);
    }

    /// Replaces the whole context (after a compaction).
    pub fn replace(&mut self, messages: Vec<Message>) {
        self.tokens = messages.iter().map(estimate_message_tokens).sum();
        self.json = messages_to_json(&messages);
        self.messages = messages;
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages as a JSON array.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// Rough tokens of the whole context.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether it holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Takes the messages out.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_and_the_tally_follow_every_append_and_replace() {
        let mut context = LiveContext::new();
        assert_eq!(context.json(), "[]");
        context.push(Message::user("hello"));
        context.push(Message::assistant("hi"));
        assert_eq!(context.json(), messages_to_json(context.messages()));
        let tally = context.tokens();
        assert_eq!(
            tally,
            context
                .messages()
                .iter()
                .map(estimate_message_tokens)
                .sum::<u64>()
        );
        context.replace(vec![Message::user("x")]);
        assert_eq!(context.json(), r#"[{"role":"user","content":"x"}]"#);
        assert!(context.tokens() < tally);
    }
}
