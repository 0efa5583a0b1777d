//! `/engine NAME`: another engine takes over the context at a turn boundary.

use ctxhost_engine_abi::{FactBody, FactKind};

use super::{timed, Replayer};
use crate::{
    engine::EngineHandle,
    runner::{facts::Fact, SWAP_REASON},
};

impl Replayer<'_> {
    /// Hands the context to `engine`, at a turn boundary:
    /// - an observer of the same engine stops observing first
    ///   ([`Observers::retire`](crate::runner::observers::Observers::retire));
    /// - the new engine gets `update_model`, then `on_session_start` with the same session id
    ///   (`boundary_reason` `engine_swap`); if either fails, it is dropped, with one warning, and
    ///   the old engine stays;
    /// - the old engine gets `on_session_end` with the current context; on standby
    ///   ([`Watchers::standby`]) and not the one taking over, it then stays on as an observer;
    /// - the new engine owns the context from here on; the tools are read again.
    pub fn swap_engine(&mut self, mut engine: EngineHandle) {
        let to = engine.name().to_owned();
        // An engine observing the session stops observing before its new instance starts on it:
        // two instances would write one store. It goes back to observing if swapped out later.
        let retired = self
            .observers
            .retire(&to, Some((&self.session_id, self.context.messages())));
        if retired && !self.standby.contains(&to) {
            self.standby.push(to.clone());
        }
        let model = self.options.model.clone();
        let info = self.session_info(Some(SWAP_REASON), None);
        let started = engine
            .update_model(&model)
            .and_then(|()| engine.on_session_start(&self.session_id, &info));
        if let Err(error) = started {
            let mut reason = error.to_string();
            if retired {
                // Dropped first: the instance that failed must not hold the store the observing
                // one goes back to writing.
                drop(engine);
                match self.observers.resume_after_refused_swap(&to) {
                    Ok(()) => reason.push_str(&format!(" (`{to}` keeps observing the session)")),
                    Err(why) => {
                        reason.push_str(&format!(" (`{to}` no longer observes the session: {why})"));
                    }
                }
            }
            return self.refuse_swap(&to, reason);
        }
        let mut old = std::mem::replace(&mut *self.engine, engine);
        self.engine.keep_detached_from(&mut old);
        let from = old.name().to_owned();
        // Its time in charge ends with the context as it stands: an engine that stores messages
        // when it compacts (lcm) stores those of the turns since, or they would never be stored.
        let (session_id, context) = (&self.session_id, &self.context);
        let ended = timed(&mut self.engine_time, || {
            old.on_session_end(session_id, context.messages())
        });
        self.record(ended);
        // `/engine` naming the engine in charge starts it afresh (a rebuilt library runs as the
        // new code): the instance it replaces ends, or two would share one store.
        if self.standby.contains(&from) && from != to {
            if let Err(reason) = self.observers.attach(old) {
                self.warn(format!("`{from}` cannot stay on as an observer: {reason}"));
            }
        }
        self.handed_over_from(from);
    }

    /// The engine in the handle owns the context from here on, after `from` (a swap, or the
    /// built-in compressor put in place of an isolated engine that crashed once too often): the
    /// context's JSON kept for it or not, its threshold and tools read, the handover published.
    pub(super) fn handed_over_from(&mut self, from: String) {
        self.context.set_keeping_json(self.engine.wants_json());
        self.threshold = self.call(|engine| engine.counters()).map(|c| c.threshold_tokens);
        self.above_threshold = false;
        self.hygiene_failed_at = None;
        let warnings = self.read_tools();
        let to = self.engine.name().to_owned();
        self.publish(Fact::EngineSwap {
            message_index: self.position,
            from: from.clone(),
            to: to.clone(),
            origin: Some(self.engine.origin().to_string()),
            refused: None,
            tools: self.tools(),
        });
        self.observe(FactKind::EngineSwapped, || FactBody::EngineSwapped { from, to });
        for warning in warnings {
            self.warn(warning);
        }
    }

    pub(super) fn refuse_swap(&mut self, to: &str, reason: String) {
        self.warn(format!(
            "cannot swap to engine `{to}`: {reason}; `{}` stays in charge",
            self.engine.name()
        ));
        self.publish(Fact::EngineSwap {
            message_index: self.position,
            from: self.engine.name().to_owned(),
            to: to.to_owned(),
            origin: None,
            refused: Some(reason),
            tools: self.tools(),
        });
    }
}
