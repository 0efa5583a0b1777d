//! The report's subscriber: folds a session's facts into a [`ReplayOutcome`].
//!
//! Everything the terminal report, `--json` and `compare` show comes from here, so the report
//! can only say what the session published.

use super::{
    facts::{Fact, Subscriber},
    CommandRecord, EngineFault, EngineSpan, ReplayOutcome, SessionCommand, WindowOverrun,
};
use crate::runner::UsageSource;

/// Builds a [`ReplayOutcome`] from facts.
#[derive(Debug, Default)]
pub struct Tally {
    outcome: ReplayOutcome,
}

impl Tally {
    /// What the facts so far add up to (the final context is not a fact: the caller sets it).
    pub fn outcome(&self) -> &ReplayOutcome {
        &self.outcome
    }

    /// The outcome, taken.
    pub fn into_outcome(self) -> ReplayOutcome {
        self.outcome
    }

    /// Opens `engine`'s span at message `at`. A session started again by the engine in charge
    /// (`/new`) goes on in its span; a swap opens a new one, also to an engine of the same name
    /// (`/engine NAME` with `NAME` in charge loads it afresh).
    fn open_span(&mut self, engine: &str, at: usize, swapped: bool) {
        if let Some(last) = self.outcome.engine_spans.last_mut() {
            if !swapped && last.engine == engine && last.until_message.is_none() {
                return;
            }
            last.until_message.get_or_insert(at);
        }
        self.outcome.engine_spans.push(EngineSpan {
            engine: engine.to_owned(),
            from_message: at,
            until_message: None,
        });
    }
}

impl Subscriber for Tally {
    fn receive(&mut self, fact: &Fact) {
        let outcome = &mut self.outcome;
        match fact {
            Fact::SessionStart {
                message_index,
                session_id,
                engine,
                tools,
                boundary_reason,
                ..
            } => {
                outcome.session_id.clone_from(session_id);
                outcome.tools.clone_from(tools);
                if boundary_reason.is_some() {
                    if let Some(last) = outcome
                        .commands
                        .last_mut()
                        .filter(|c| c.command == SessionCommand::New && c.message_index == *message_index)
                    {
                        last.session_id.clone_from(session_id);
                    }
                }
                let (engine, at) = (engine.clone(), *message_index);
                self.open_span(&engine, at, false);
            }
            Fact::Warning { message, .. } => outcome.warnings.push(message.clone()),
            Fact::Command {
                message_index,
                command,
                source,
            } => outcome.commands.push(CommandRecord {
                message_index: *message_index,
                command: command.clone(),
                source: *source,
                session_id: outcome.session_id.clone(),
            }),
            Fact::ModelCall { prompt_tokens, .. } => {
                outcome.model_calls += 1;
                outcome.peak_tokens = outcome.peak_tokens.max(*prompt_tokens);
            }
            Fact::Usage {
                source,
                prompt_tokens,
                ..
            } => {
                match source {
                    UsageSource::Recorded => outcome.usage_recorded += 1,
                    UsageSource::Estimated => outcome.usage_estimated += 1,
                    UsageSource::Calibrated => outcome.usage_calibrated += 1,
                }
                if *source != UsageSource::Estimated {
                    outcome.peak_told_tokens = outcome.peak_told_tokens.max(*prompt_tokens);
                }
            }
            Fact::OverWindow {
                message_index,
                tokens,
                window,
                at_end,
                with_overhead,
            } => {
                let overrun = outcome.over_window.get_or_insert(WindowOverrun {
                    window: *window,
                    first_at_message: *message_index,
                    first_tokens: *tokens,
                    times: 0,
                    with_overhead: 0,
                    final_tokens: None,
                });
                if *at_end {
                    overrun.final_tokens = Some(*tokens);
                } else {
                    overrun.times += 1;
                    overrun.with_overhead += usize::from(*with_overhead);
                }
            }
            Fact::ToolDispatch(dispatch) => outcome.tool_dispatches.push(dispatch.clone()),
            Fact::Compaction(event) => outcome.compactions.push(event.record.clone()),
            Fact::Error {
                at_message, message, ..
            } => outcome.faults.push(EngineFault {
                at_message: *at_message,
                message: message.clone(),
            }),
            Fact::EngineSwap {
                message_index,
                to,
                refused: None,
                tools,
                ..
            } => {
                outcome.tools.clone_from(tools);
                let (to, at) = (to.clone(), *message_index);
                self.open_span(&to, at, true);
            }
            Fact::ReplayEnd {
                messages_replayed,
                final_tokens,
                final_messages,
                engine_time_ms,
                counters,
                status,
                observers,
                detached_tools,
                standby,
                ..
            } => {
                // Offered no more: the report names them apart, with the observer detached.
                outcome
                    .tools
                    .retain(|tool| !detached_tools.iter().any(|detached| detached.tool == *tool));
                outcome.detached_tools.clone_from(detached_tools);
                outcome.messages_replayed = *messages_replayed;
                outcome.final_tokens = *final_tokens;
                outcome.final_messages = *final_messages;
                outcome.peak_tokens = outcome.peak_tokens.max(*final_tokens);
                outcome.engine_time_ms = *engine_time_ms;
                outcome.counters = *counters;
                outcome.status.clone_from(status);
                outcome.observers.clone_from(observers);
                outcome.standby.clone_from(standby);
                if let Some(last) = outcome.engine_spans.last_mut() {
                    last.until_message.get_or_insert(*messages_replayed);
                }
            }
            Fact::EngineSwap { .. }
            | Fact::MessagesAppended { .. }
            | Fact::ThresholdCrossed { .. }
            | Fact::SessionReset { .. }
            | Fact::SessionEnd { .. } => {}
        }
    }
}
