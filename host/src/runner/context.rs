//! The live context during a replay: the messages, their JSON, and their tokens.
//!
//! Between compactions the context only grows by appending, so the JSON text handed to the engine
//! and the token total are kept up to date per message: a turn costs work in proportion to the new
//! messages, not to the whole context. That matters with a real tokenizer, which reads ~20 MB/s:
//! recounting a 200,000-token context would cost tens of milliseconds every turn.
//!
//! The JSON is kept only for an engine that takes its messages as JSON (a plugin): a linked engine
//! is handed the messages themselves, and then no JSON is written at all.
//!
//! With a real tokenizer, token counts are cached by a hash of each message's JSON (the rough
//! estimate is cheaper than the hash, so it is simply recounted):
//! - a pushed message is counted once, and its count kept beside it;
//! - after a compaction, [`LiveContext::replace`] counts only the messages it has not seen (a
//!   summary, a stand-in); the protected head and tail the engine kept verbatim are looked up;
//! - the cache holds the messages of the current context only, so it never outgrows it: after a
//!   replace, entries of messages the engine dropped are gone.
//!
//! It also knows which message is the user's newest by provenance: the last user message that was
//! [pushed](LiveContext::push) (appended from the conversation), never a user-role message an
//! engine wrote into a [replaced](LiveContext::replace) context.

use std::{
    collections::{HashMap, HashSet},
    hash::{DefaultHasher, Hasher},
};

use ctxhost_engine_abi::{messages_to_json, Message, Role};

use ctxhost_engine_kit::{release::release_in_background, tokens::estimate_message_tokens};

use crate::tokens::{TokenCounter, TokenizerKind};

/// The context the model would receive next.
#[derive(Clone, Debug)]
pub struct LiveContext {
    counter: TokenCounter,
    messages: Vec<Message>,
    /// Each message's tokens, index for index with `messages`.
    counts: Vec<u64>,
    /// The messages as a JSON array, when kept.
    json: Option<String>,
    tokens: u64,
    /// The rough estimate of the whole context, whatever the counter: session hygiene is defined
    /// on it (runner.md), and it costs a character count per message.
    rough_tokens: u64,
    /// Tokens by the hash of a message's JSON, for the messages of the current context.
    known: HashMap<u64, u64>,
    /// Messages run through the counter (cache misses), since the context was made.
    counted: u64,
    /// The newest user message appended from the conversation.
    user_message: Option<Message>,
    /// The hash of the text of every user message appended from the conversation: a user-role
    /// message of a compacted context whose text is not among them is an engine's.
    user_texts: HashSet<u64>,
}

impl Default for LiveContext {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveContext {
    /// An empty context counted with the rough estimate.
    pub fn new() -> Self {
        Self::with_counter(TokenCounter::rough())
    }

    /// An empty context counted with `counter`.
    pub fn with_counter(counter: TokenCounter) -> Self {
        Self {
            counter,
            messages: Vec::new(),
            counts: Vec::new(),
            json: Some("[]".to_owned()),
            tokens: 0,
            rough_tokens: 0,
            known: HashMap::new(),
            counted: 0,
            user_message: None,
            user_texts: HashSet::new(),
        }
    }

    /// Keeps the JSON of the messages up to date (`true`, the default), or writes none: for an
    /// engine that takes its messages as they are.
    pub fn keeping_json(mut self, keep: bool) -> Self {
        self.json = keep.then(|| messages_to_json(&self.messages));
        self
    }

    /// [`Self::keeping_json`] on a live context (the engine changed: `/engine NAME`).
    pub fn set_keeping_json(&mut self, keep: bool) {
        if keep != self.json.is_some() {
            self.json = keep.then(|| messages_to_json(&self.messages));
        }
    }

    /// Whether counts go through the cache: only a real tokenizer costs more than a hash.
    fn caches_counts(&self) -> bool {
        self.counter.kind() != TokenizerKind::Rough
    }

    /// Appends one message of the conversation and returns its tokens.
    pub fn push(&mut self, message: Message) -> u64 {
        if message.role == Role::User {
            self.user_texts.insert(text_hash(&message));
            self.user_message = Some(message.clone());
        }
        let rough = estimate_message_tokens(&message);
        self.rough_tokens += rough;
        let tokens = if self.json.is_some() || self.caches_counts() {
            let json = serde_json::to_string(&message).expect("messages serialise");
            let tokens = if self.caches_counts() {
                self.count_once(&message, json.as_bytes())
            } else {
                self.counted += 1;
                rough
            };
            if let Some(all) = &mut self.json {
                all.pop();
                if !self.messages.is_empty() {
                    all.push(',');
                }
                all.push_str(&json);
                all.push(']');
            }
            tokens
        } else {
            self.counted += 1;
            rough
        };
        self.messages.push(message);
        self.counts.push(tokens);
        self.tokens += tokens;
        tokens
    }

    /// Starts over from `messages` of the conversation (a transcript taken whole, or the system
    /// message after `/new`): the user's newest message is the last user message among them.
    pub fn restart(&mut self, messages: Vec<Message>) {
        self.user_message = messages.iter().rev().find(|m| m.role == Role::User).cloned();
        self.user_texts
            .extend(messages.iter().filter(|m| m.role == Role::User).map(text_hash));
        self.replace(messages);
    }

    /// The newest message the user sent, as it was appended; `None` when there is none.
    pub fn user_message(&self) -> Option<&Message> {
        self.user_message.as_ref()
    }

    /// Whether `message` is one the conversation appended, not an engine's: every role but
    /// `user` is taken as the conversation's, since only its user-role messages are told apart.
    pub fn sent_by_user(&self, message: &Message) -> bool {
        message.role != Role::User || self.user_texts.contains(&text_hash(message))
    }

    /// Replaces the whole context with an engine's result (after a compaction), counting only
    /// messages it has not seen. The user's newest message stays the one appended last.
    pub fn replace(&mut self, messages: Vec<Message>) {
        self.replace_written(messages, None);
    }

    /// [`Self::replace`] with `messages` as an engine wrote them (`json`, when it answered in
    /// JSON): without a tokenizer's cache to fill, that text is kept as the context's JSON
    /// instead of writing the messages again, a whole context's worth at every compaction of a
    /// plugin engine.
    pub fn replace_written(&mut self, messages: Vec<Message>, json: Option<String>) {
        let rough: Vec<u64> = messages.iter().map(estimate_message_tokens).collect();
        self.rough_tokens = rough.iter().sum();
        // `push` appends before the closing bracket, so the text must end with it.
        let adoptable = json.filter(|json| {
            self.json.is_some() && !self.caches_counts() && json.starts_with('[') && json.ends_with(']')
        });
        let counts = match adoptable {
            Some(json) => {
                self.json = Some(json);
                self.counted += messages.len() as u64;
                rough
            }
            None if self.json.is_some() || self.caches_counts() => {
                self.replace_json_and_counts(&messages, rough)
            }
            None => {
                self.counted += messages.len() as u64;
                rough
            }
        };
        self.tokens = counts.iter().sum();
        self.counts = counts;
        // Freeing the context a compaction replaced took longer than the compaction.
        release_in_background(std::mem::replace(&mut self.messages, messages), "context-drop");
    }

    /// Writes the JSON of `messages` (kept when wanted) and takes their counts from the cache or
    /// the counter.
    fn replace_json_and_counts(&mut self, messages: &[Message], rough: Vec<u64>) -> Vec<u64> {
        let caches = self.caches_counts();
        let mut previous = std::mem::take(&mut self.known);
        let mut json = Vec::with_capacity(self.json.as_ref().map_or(0, String::len));
        let mut counts = Vec::with_capacity(messages.len());
        json.push(b'[');
        for (message, rough) in messages.iter().zip(rough) {
            if !counts.is_empty() {
                json.push(b',');
            }
            let start = json.len();
            serde_json::to_writer(&mut json, message).expect("messages serialise");
            let tokens = if caches {
                let key = hash_bytes(&json[start..]);
                let tokens = match previous.remove(&key).or_else(|| self.known.get(&key).copied()) {
                    Some(tokens) => tokens,
                    None => {
                        self.counted += 1;
                        self.counter.count_message(message)
                    }
                };
                self.known.insert(key, tokens);
                tokens
            } else {
                self.counted += 1;
                rough
            };
            counts.push(tokens);
        }
        json.push(b']');
        if self.json.is_some() {
            self.json = Some(String::from_utf8(json).expect("serde_json writes UTF-8"));
        }
        counts
    }

    /// The message's count from the cache, or from the counter (then cached).
    fn count_once(&mut self, message: &Message, json: &[u8]) -> u64 {
        let counter = self.counter;
        let counted = &mut self.counted;
        *self.known.entry(hash_bytes(json)).or_insert_with(|| {
            *counted += 1;
            counter.count_message(message)
        })
    }

    /// The rough estimate (characters ÷ 4) of the whole context, whatever the counter.
    pub fn rough_tokens(&self) -> u64 {
        self.rough_tokens
    }

    /// The counter its tokens come from.
    pub fn counter(&self) -> TokenCounter {
        self.counter
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Each message's tokens, index for index with [`Self::messages`].
    pub fn message_tokens(&self) -> &[u64] {
        &self.counts
    }

    /// The messages as a JSON array, when kept ([`Self::keeping_json`]).
    pub fn json(&self) -> Option<&str> {
        self.json.as_deref()
    }

    /// Tokens of the whole context, by its counter.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// How many messages have been run through the counter since the context was made; the rest
    /// came from the cache.
    pub fn messages_counted(&self) -> u64 {
        self.counted
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

// SipHash with fixed keys: deterministic across runs. Two different messages of one context
// sharing a 64-bit hash (odds ~n²/2⁶⁴) would only share a token estimate.
pub(super) fn hash_bytes(json: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(json);
    hasher.finish()
}

/// A user message's text, hashed: what tells it from a message an engine wrote.
fn text_hash(message: &Message) -> u64 {
    hash_bytes(message.text().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{
        tests::{generated_message, generated_messages, Rng},
        TokenizerKind,
    };
    use ctxhost_engine_abi::messages_to_json;
    use ctxhost_engine_kit::tokens::estimate_message_tokens;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_json_and_the_tally_follow_every_append_and_replace() {
        let mut context = LiveContext::new();
        assert_eq!(context.json(), Some("[]"));
        context.push(Message::user("hello"));
        context.push(Message::assistant("hi"));
        assert_eq!(
            context.json(),
            Some(messages_to_json(context.messages()).as_str())
        );
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
        assert_eq!(context.json(), Some(r#"[{"role":"user","content":"x"}]"#));
        assert!(context.tokens() < tally);
        context.replace(Vec::new());
        assert_eq!((context.json(), context.tokens()), (Some("[]"), 0));
    }

    #[test]
    fn a_plugin_answer_is_kept_as_the_json_and_messages_appended_after_it_stay_valid() {
        let mut context = LiveContext::new();
        context.push(Message::user("hello"));
        // Spaces no serialiser here writes: only the adopted text has them.
        let answer = r#"[ {"role": "user", "content": "x"} ]"#.to_owned();
        context.replace_written(vec![Message::user("x")], Some(answer.clone()));
        assert_eq!(context.json(), Some(answer.as_str()));
        assert_eq!(context.tokens(), estimate_message_tokens(&Message::user("x")));
        context.push(Message::assistant("y"));
        let appended: Vec<Message> = serde_json::from_str(context.json().unwrap()).unwrap();
        assert_eq!(appended, [Message::user("x"), Message::assistant("y")]);
        // Not a JSON array's text as `push` needs it: written again.
        context.replace_written(
            vec![Message::user("z")],
            Some("[{\"role\":\"user\",\"content\":\"z\"}]\n".to_owned()),
        );
        assert_eq!(context.json(), Some(r#"[{"role":"user","content":"z"}]"#));
    }

    #[test]
    fn with_a_tokenizer_an_answer_is_written_again_so_its_counts_are_cached() {
        let counter = TokenCounter::new(TokenizerKind::Cl100kBase);
        let mut context = LiveContext::with_counter(counter).keeping_json(true);
        let answer = r#"[ {"role": "user", "content": "x"} ]"#.to_owned();
        context.replace_written(vec![Message::user("x")], Some(answer));
        assert_eq!(context.json(), Some(r#"[{"role":"user","content":"x"}]"#));
    }

    /// What a compaction engine may return: some messages kept verbatim, some dropped, some new
    /// (a summary, a stand-in), in a possibly different order.
    fn compacted(rng: &mut Rng, messages: &[Message]) -> Vec<Message> {
        let mut result = Vec::new();
        for message in messages {
            match rng.below(4) {
                0 => {}
                1 => result.push(generated_message(rng)),
                _ => result.push(message.clone()),
            }
        }
        if rng.below(2) == 0 && result.len() > 1 {
            let at = rng.below(result.len() as u64) as usize;
            result.swap(0, at);
        }
        result
    }

    /// Property: after any sequence of pushes and replaces, the cached totals equal a recount of
    /// every message, for every counter, and the JSON equals a fresh serialisation.
    #[test]
    fn cached_counts_equal_a_recount_after_pushes_and_replaces() {
        for kind in TokenizerKind::ALL {
            let counter = TokenCounter::new(kind);
            for seed in 1..=8 {
                let mut rng = Rng::new(seed);
                let mut context = LiveContext::with_counter(counter);
                for _ in 0..8 {
                    let pushes = rng.below(15) as usize;
                    for message in generated_messages(&mut rng, pushes) {
                        let expected = counter.count_message(&message);
                        assert_eq!(context.push(message), expected);
                    }
                    if rng.below(3) == 0 {
                        let next = compacted(&mut rng, context.messages());
                        context.replace(next);
                    }
                    let recount: Vec<u64> = context
                        .messages()
                        .iter()
                        .map(|m| counter.count_message(m))
                        .collect();
                    assert_eq!(context.message_tokens(), recount.as_slice(), "{kind} seed {seed}");
                    assert_eq!(
                        context.tokens(),
                        recount.iter().sum::<u64>(),
                        "{kind} seed {seed}"
                    );
                    assert_eq!(
                        context.json(),
                        Some(messages_to_json(context.messages()).as_str())
                    );
                    assert!(context.known.len() <= context.len());
                }
            }
        }
    }

    #[test]
    fn a_replace_counts_only_the_messages_it_has_not_seen() {
        let mut rng = Rng::new(3);
        let mut context = LiveContext::with_counter(TokenCounter::new(TokenizerKind::O200kBase));
        let messages = generated_messages(&mut rng, 50);
        for message in messages.clone() {
            context.push(message);
        }
        let distinct = context.known.len() as u64;
        assert_eq!(context.messages_counted(), distinct);
        // Keep the head and the tail, put a summary in between: one new message.
        let mut kept = messages[..5].to_vec();
        kept.push(Message::user("## Goal\nsummary of the middle"));
        kept.extend_from_slice(&messages[40..]);
        context.replace(kept);
        assert_eq!(context.messages_counted(), distinct + 1);
        // A second replace with the same list counts nothing.
        let same = context.messages().to_vec();
        context.replace(same);
        assert_eq!(context.messages_counted(), distinct + 1);
    }
}
