//! Observing a session: the facts a host publishes, and how an engine asks for them.
//!
//! A host runs one **active** engine, which owns the context, and any number of **observers**:
//! engines that watch the session without ever changing it (LCM recording every message, a
//! telemetry log). The host publishes [`Fact`]s as the session goes; an observer receives the
//! kinds it declared in [`Engine::interests`](crate::Engine::interests), in order, through
//! [`Engine::observe`](crate::Engine::observe).
//!
//! A later addition to interface version 1, which it leaves unchanged: both methods cross as the
//! `call_ext` capability names [`EXT_OBSERVE`] and [`EXT_INTERESTS`], so a plugin built before
//! them keeps loading. Such a plugin answers "unknown method" to both; a host then lets it observe
//! the lifecycle through the contract's own methods only (`update_model`, `on_session_start`,
//! `update_from_response`, `on_session_reset`, `on_session_end`), which every observer receives
//! anyway.
//!
//! An observer that stores what it is given can read a fact without copying it:
//! [`Engine::observe_raw`](crate::Engine::observe_raw) hands it the fact's JSON as a [`RawFact`],
//! whose [`view`](RawFact::view) reads the kind and the session and leaves each message as the
//! bytes the host wrote.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{value::RawValue, Value};

use crate::{EngineError, Message};

mod parse;

/// The `call_ext` name a host delivers one fact with (its request is the [`Fact`] as JSON).
pub const EXT_OBSERVE: &str = "observe";

/// The `call_ext` name a host tells an observer with that its queue ran dry: every fact
/// published so far has been delivered (no request; the answer is ignored). An observer that
/// batches its writes across facts writes them out here, so nothing waits in memory while the
/// session is quiet.
pub const EXT_OBSERVE_IDLE: &str = "observe.idle";

/// The `call_ext` name a host asks an engine's interests with (the answer is a JSON array of
/// [`FactKind`] names).
pub const EXT_INTERESTS: &str = "observe.interests";

/// The kinds of [`Fact`], as an observer names them in its interests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// [`FactBody::SessionStarted`].
    SessionStarted,
    /// [`FactBody::SessionReset`].
    SessionReset,
    /// [`FactBody::SessionEnded`].
    SessionEnded,
    /// [`FactBody::MessagesAppended`].
    MessagesAppended,
    /// [`FactBody::Usage`].
    Usage,
    /// [`FactBody::ThresholdCrossed`].
    ThresholdCrossed,
    /// [`FactBody::Compacted`].
    Compacted,
    /// [`FactBody::ToolCalled`].
    ToolCalled,
    /// [`FactBody::EngineSwapped`].
    EngineSwapped,
}

impl FactKind {
    /// Every kind, in the order a session can first publish them.
    pub const ALL: [FactKind; 9] = [
        Self::SessionStarted,
        Self::MessagesAppended,
        Self::Usage,
        Self::ThresholdCrossed,
        Self::Compacted,
        Self::ToolCalled,
        Self::EngineSwapped,
        Self::SessionReset,
        Self::SessionEnded,
    ];

    /// The name as it appears in JSON (`messages_appended`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStarted => "session_started",
            Self::SessionReset => "session_reset",
            Self::SessionEnded => "session_ended",
            Self::MessagesAppended => "messages_appended",
            Self::Usage => "usage",
            Self::ThresholdCrossed => "threshold_crossed",
            Self::Compacted => "compacted",
            Self::ToolCalled => "tool_called",
            Self::EngineSwapped => "engine_swapped",
        }
    }
}

/// One thing that happened in a session, as an observer receives it.
///
/// Read from JSON in one pass (see `observe/parse.rs`): the keys may come in any order, and
/// unknown keys are ignored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fact {
    /// The session it happened in.
    pub session_id: String,
    /// How many transcript (or agent) messages had been handled when it happened.
    pub at_message: u64,
    /// What happened.
    #[serde(flatten)]
    pub body: FactBody,
}

impl Fact {
    /// Its kind.
    pub fn kind(&self) -> FactKind {
        self.body.kind()
    }
}

/// What happened, by kind (`"kind"` in JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FactBody {
    /// A session started.
    SessionStarted {
        /// The active engine.
        engine: String,
        /// The model's name.
        model: String,
        /// The model's window in tokens.
        context_length: u64,
    },
    /// `/new` or `/reset`: the context restarted.
    SessionReset,
    /// The session ended, with its final context.
    SessionEnded {
        /// The final context.
        messages: Vec<Message>,
    },
    /// Messages entered the context (from the conversation, never from an engine).
    MessagesAppended {
        /// The new messages, as they entered.
        messages: Vec<Message>,
    },
    /// A model response's usage, as the active engine was given it.
    Usage {
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// Their total.
        total_tokens: u64,
        /// Whether it was recorded (by the provider) rather than estimated by the host.
        recorded: bool,
    },
    /// The context reached the active engine's threshold (once per crossing).
    ThresholdCrossed {
        /// The context's tokens.
        tokens: u64,
        /// The threshold.
        threshold: u64,
    },
    /// The active engine compacted the context.
    Compacted {
        /// The engine.
        engine: String,
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
        /// Messages before.
        messages_before: u64,
        /// Messages after.
        messages_after: u64,
        /// The messages of the result that were not in the input (the summaries, the notes).
        inserted: Vec<Message>,
    },
    /// An engine tool was called, and answered.
    ToolCalled {
        /// The engine that answered.
        engine: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// Its answer.
        answer: Value,
    },
    /// The active engine was swapped.
    EngineSwapped {
        /// The engine that owned the context until now.
        from: String,
        /// The engine that owns it from now on.
        to: String,
    },
}

impl FactBody {
    /// Its kind.
    pub fn kind(&self) -> FactKind {
        match self {
            Self::SessionStarted { .. } => FactKind::SessionStarted,
            Self::SessionReset => FactKind::SessionReset,
            Self::SessionEnded { .. } => FactKind::SessionEnded,
            Self::MessagesAppended { .. } => FactKind::MessagesAppended,
            Self::Usage { .. } => FactKind::Usage,
            Self::ThresholdCrossed { .. } => FactKind::ThresholdCrossed,
            Self::Compacted { .. } => FactKind::Compacted,
            Self::ToolCalled { .. } => FactKind::ToolCalled,
            Self::EngineSwapped { .. } => FactKind::EngineSwapped,
        }
    }
}

/// One fact as the host sent it: its JSON, not read yet.
///
/// A later addition, with [`Engine::observe_raw`](crate::Engine::observe_raw); the host
/// sends facts as it always did, so nothing changes for either side of an older build.
#[derive(Clone, Copy, Debug)]
pub struct RawFact<'a> {
    json: &'a str,
}

impl<'a> RawFact<'a> {
    /// The fact whose JSON is `json`.
    pub fn new(json: &'a str) -> Self {
        Self { json }
    }

    /// The JSON exactly as the host sent it.
    pub fn json(&self) -> &'a str {
        self.json
    }

    /// The whole fact, read into owned values (what [`Engine::observe`](crate::Engine::observe)
    /// is given). Errors of kind [`crate::ErrorKind::INVALID_INPUT`] say what is wrong with it.
    pub fn to_fact(&self) -> Result<Fact, EngineError> {
        serde_json::from_str(self.json).map_err(|error| EngineError::invalid_input(format!("fact: {error}")))
    }

    /// The fact's kind and session, and the messages it carries, each left as its JSON text: an
    /// observer that stores messages keeps the bytes it received instead of reading every string
    /// into a `Message` and writing it out again. Only the JSON's syntax is checked; a message
    /// is read when the observer reads it.
    pub fn view(&self) -> Result<FactView<'a>, EngineError> {
        serde_json::from_str(self.json).map_err(|error| EngineError::invalid_input(format!("fact: {error}")))
    }
}

/// What [`RawFact::view`] reads of a fact.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct FactView<'a> {
    /// The session it happened in.
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
    /// As [`Fact::at_message`].
    pub at_message: u64,
    /// What happened.
    pub kind: FactKind,
    /// The messages of a [`FactBody::MessagesAppended`] or a [`FactBody::SessionEnded`], each as
    /// the JSON text the host wrote (`serde_json::from_str(raw.get())` reads one into a
    /// [`Message`]); empty for the other kinds.
    #[serde(borrow, default)]
    pub messages: Vec<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_reads_as_flat_json_with_its_kind() {
        let fact = Fact {
            session_id: "s1".into(),
            at_message: 3,
            body: FactBody::MessagesAppended {
                messages: vec![Message::user("hi")],
            },
        };
        let json = serde_json::to_value(&fact).unwrap();
        assert_eq!(json["kind"], "messages_appended");
        assert_eq!(json["session_id"], "s1");
        assert_eq!(json["messages"][0]["content"], "hi");
        let back: Fact = serde_json::from_value(json).unwrap();
        assert_eq!(back, fact);
    }

    #[test]
    fn a_raw_fact_leaves_each_message_as_the_bytes_the_host_wrote() {
        let messages = vec![
            Message::user("line one\nline \"two\" é"),
            Message::tool("c1", "exit 0"),
        ];
        let fact = Fact {
            session_id: "s1".into(),
            at_message: 7,
            body: FactBody::MessagesAppended {
                messages: messages.clone(),
            },
        };
        let json = serde_json::to_string(&fact).unwrap();
        let raw = RawFact::new(&json);
        let view = raw.view().unwrap();
        assert_eq!(
            (view.session_id.as_ref(), view.at_message, view.kind),
            ("s1", 7, FactKind::MessagesAppended)
        );
        let texts: Vec<&str> = view.messages.iter().map(|raw| raw.get()).collect();
        let written: Vec<String> = messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        assert_eq!(texts, written);
        assert_eq!(raw.to_fact().unwrap(), fact);
    }

    #[test]
    fn a_raw_fact_of_another_kind_has_no_messages_and_a_broken_one_says_so() {
        let json = r#"{"session_id":"s","at_message":1,"kind":"usage","prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"recorded":true}"#;
        let view = RawFact::new(json).view().unwrap();
        assert_eq!(view.kind, FactKind::Usage);
        assert!(view.messages.is_empty());
        for broken in [
            r#"{"session_id":"s","at_message":1,"kind":"messages_appended","messages":[{"#,
            "{}",
        ] {
            let error = RawFact::new(broken).view().unwrap_err();
            assert!(error.message.starts_with("fact: "), "{}", error.message);
        }
    }

    #[test]
    fn every_kind_is_named_as_json_names_it() {
        for kind in FactKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
