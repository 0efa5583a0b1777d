//! Observers of a served session (`session/open` with `observers`).
//!
//! Over the wire the agent owns the context and sends it whole with each call, so the server
//! tells its observers what the replay's run loop publishes from what the calls carry:
//! - `messages_appended`: the messages of a call beyond the context the server last saw (after a
//!   `compress`, the engine's result);
//! - the lifecycle (`update_model`, `on_session_start`, `update_from_response`,
//!   `on_session_reset`, `on_session_end`) as the agent calls it, with the matching facts;
//! - `compacted` after a `compress` that changed the context, `engine_swapped` after a `swap`.
//!
//! Observers never change what the agent gets back; their tools are offered next to the active
//! engine's (the active engine keeps a name both offer).

use std::sync::Arc;

use ctxhost_engine_abi::{FactBody, FactKind, Message, ModelInfo, SessionInfo, Usage};
use serde_json::Value;

use crate::{
    engine::EngineHandle,
    runner::{
        observers::{inserted_messages, Lifecycle, ToolAnswer},
        Observers,
    },
};

/// The observers of one served session, and what they were told.
pub struct Watch {
    observers: Observers,
    /// The context as the observers know it.
    seen: Vec<Message>,
    /// The agent's session id once started (facts name it), else the wire session's.
    session_id: String,
}

impl Watch {
    /// Observers for the wire session `id`.
    pub fn new(id: &str, observers: Observers) -> Self {
        Self {
            observers,
            seen: Vec::new(),
            session_id: id.to_owned(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.observers.is_empty()
    }

    /// The observers, to read their tools.
    pub fn observers(&self) -> &Observers {
        &self.observers
    }

    /// The observers, to mark one.
    pub fn observers_mut(&mut self) -> &mut Observers {
        &mut self.observers
    }

    /// What was wrong with the observers' tool schemas, one warning each.
    pub fn schema_warnings(&self) -> Vec<String> {
        self.observers.schema_warnings().map(str::to_owned).collect()
    }

    /// Calls observer `index`'s tool once it has handled everything told before; one detached
    /// before it came to the call is not asked.
    pub fn call_tool(&mut self, index: usize, name: &str, arguments: &Value) -> ToolAnswer {
        let answer = self.observers.try_call_tool(index, name, arguments);
        self.warn_detached();
        answer
    }

    fn publish(&mut self, kind: FactKind, body: impl FnOnce() -> FactBody) {
        let (session_id, at_message) = (self.session_id.clone(), self.seen.len() as u64);
        self.observers.deliver(kind, || ctxhost_engine_abi::Fact {
            session_id,
            at_message,
            body: body(),
        });
        self.warn_detached();
    }

    /// One warning for each observer detached since the last (in the session's span, which names
    /// it).
    fn warn_detached(&mut self) -> Vec<String> {
        let warnings = self.observers.newly_detached();
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        warnings
    }

    /// A call carried `messages`: the ones beyond what the observers know are appended.
    pub fn saw(&mut self, messages: &[Message]) {
        if self.is_empty() {
            return;
        }
        // Most calls extend the last context: its last message still in place says so without
        // comparing the whole prefix.
        let known = self.seen.len();
        let extends = known <= messages.len() && (known == 0 || messages[known - 1] == self.seen[known - 1]);
        let common = if extends {
            known
        } else {
            self.seen
                .iter()
                .zip(messages)
                .take_while(|(seen, given)| seen == given)
                .count()
        };
        let new = &messages[common..];
        self.seen.truncate(common);
        self.seen.extend_from_slice(new);
        if !new.is_empty() {
            self.publish(FactKind::MessagesAppended, || FactBody::MessagesAppended {
                messages: new.to_vec(),
            });
        }
    }

    /// `update_model`.
    pub fn update_model(&mut self, model: &ModelInfo) {
        self.observers.lifecycle(Lifecycle::UpdateModel(model.clone()));
    }

    /// `on_session_start`.
    ///
    /// Hermes starts the session again after each of its compactions (`boundary_reason:
    /// "compression"`, under the same id or a new one continuing the old): the conversation goes
    /// on, and what the observers know of it stays known, or the messages the compaction kept
    /// would reach them a second time.
    pub fn session_started(&mut self, session_id: &str, info: &SessionInfo, engine: &str) {
        let continues = info.boundary_reason.as_deref() == Some("compression")
            && (session_id == self.session_id
                || info.old_session_id.as_deref() == Some(self.session_id.as_str()));
        if !continues {
            self.seen.clear();
        }
        self.session_id = session_id.to_owned();
        self.observers
            .lifecycle(Lifecycle::SessionStart(session_id.to_owned(), info.clone()));
        let (engine, model, context_length) = (engine.to_owned(), info.model.clone(), info.context_length);
        self.publish(FactKind::SessionStarted, || FactBody::SessionStarted {
            engine,
            model,
            context_length,
        });
    }

    /// `update_from_response`.
    pub fn usage(&mut self, usage: Usage) {
        self.publish(FactKind::Usage, || FactBody::Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            recorded: true,
        });
        self.observers.lifecycle(Lifecycle::Usage(usage));
    }

    /// `on_session_reset`.
    pub fn reset(&mut self) {
        self.observers.lifecycle(Lifecycle::Reset);
        self.publish(FactKind::SessionReset, || FactBody::SessionReset);
        self.seen.clear();
    }

    /// A `compress` by `engine` turned `before` into `after`.
    pub fn compacted(&mut self, engine: &str, before: &[Message], after: &[Message], tokens: (u64, u64)) {
        if self.is_empty() {
            return;
        }
        let engine = engine.to_owned();
        let inserted = inserted_messages(before, after);
        let (messages_before, messages_after) = (before.len() as u64, after.len() as u64);
        self.publish(FactKind::Compacted, || FactBody::Compacted {
            engine,
            tokens_before: tokens.0,
            tokens_after: tokens.1,
            messages_before,
            messages_after,
            inserted,
        });
        self.seen = after.to_vec();
    }

    /// The observer `name` stops observing: its engine is about to take over the context (see
    /// [`Observers::retire`]).
    pub fn retire(&mut self, name: &str, ending: Option<(&str, &[Message])>) -> bool {
        self.observers.retire(name, ending)
    }

    /// The engine `engine`, swapped out, observes the session from here on.
    pub fn attach(&mut self, engine: EngineHandle) -> Result<(), String> {
        self.observers.attach(engine)
    }

    /// `swap` handed the session from `from` to `to`.
    pub fn swapped(&mut self, from: &str, to: &str) {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.publish(FactKind::EngineSwapped, || FactBody::EngineSwapped { from, to });
    }

    /// `on_session_end` with the final context.
    pub fn session_ended(&mut self, session_id: &str, messages: &[Message]) {
        // Every served session ends here: the final context is copied only for observers.
        if self.is_empty() {
            return;
        }
        self.saw(messages);
        let final_context = Arc::new(messages.to_vec());
        self.publish(FactKind::SessionEnded, || FactBody::SessionEnded {
            messages: final_context.to_vec(),
        });
        self.observers
            .lifecycle(Lifecycle::SessionEnd(session_id.to_owned(), final_context));
    }

    /// Hands the observers what they were told so far (after each request).
    pub fn flush(&mut self) {
        self.observers.flush();
    }

    /// Waits until every observer has handled everything told, and stops them.
    /// Returns the observers detached while they finished, each as its warning.
    pub fn close(&mut self) -> Vec<String> {
        self.observers.close();
        self.warn_detached()
    }
}
