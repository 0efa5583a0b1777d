//! One session: its engine, its settings, and what the server remembers between calls.
//!
//! The server keeps no context of its own (the agent owns it); it remembers only what the contract
//! needs between calls:
//! - the agent's session id and start info, to end the session (`on_session_end`) at shutdown and
//!   to start it again on a swapped-in engine;
//! - the last context a call carried, handed to `on_session_end` when the client gives none;
//! - which user-role messages it returned from a `compress` that were not in that call's input
//!   (summaries, notes an engine wrote), so that it can tell the user's last message apart.

use std::collections::{BTreeSet, HashSet};

use ctxhost_engine_abi::{messages_from_json, Message, ModelInfo, Role, SessionInfo};
use ctxhost_protocol::{CompactionRecord, EngineInfo, Fallback};

use serde_json::{value::RawValue, Value};

use super::watch::Watch;
use crate::{
    config::Settings,
    engine::EngineHandle,
    resolution::Resolution,
    runner::{
        tools::{merge_tool_owners, ToolOwner},
        Observers,
    },
    tokens::TokenCounter,
    tools::{offered_tools, tool_name, OfferedTools},
};

/// An open session.
pub struct Session {
    /// Its id on the wire (`s1`, `s2`…).
    pub id: String,
    /// Its engine.
    pub engine: EngineHandle,
    /// The settings its engine was resolved with (a swap resolves the next one with them too).
    pub settings: Settings,
    /// How the host counts the context's tokens for the compaction record.
    pub tokens: TokenCounter,
    /// The model, once `update_model` was called.
    pub model: Option<ModelInfo>,
    /// The agent's session, between `on_session_start` and `on_session_end`.
    pub started: Option<(String, SessionInfo)>,
    /// The last context a call carried.
    pub last_messages: LastContext,
    /// Every `compress` of the session.
    pub records: Vec<CompactionRecord>,
    /// Its observers.
    pub watch: Watch,
    /// Engines that go back to observing when a swap hands the context away from them: those
    /// asked to observe that are (or were swapped in as) the engine.
    pub standby: Vec<String>,
    /// The tools the agent has itself (`session/open`'s `agent_tools`): an observer offering one
    /// of those names is not offered as its owner, nor given the agent's calls of it.
    pub agent_tools: BTreeSet<String>,
    engine_written: HashSet<String>,
}

impl Session {
    /// A session running the engine of `resolution`.
    pub fn new(id: String, resolution: Resolution, settings: Settings) -> (Self, Option<Fallback>) {
        let fallback = resolution.fallback.map(|fallback| Fallback {
            requested: fallback.requested,
            reason: fallback.reason,
        });
        let session = Self {
            id: id.clone(),
            engine: resolution.engine,
            tokens: TokenCounter::new(settings.tokenizer),
            watch: Watch::new(&id, Observers::with_timeout(settings.observer_timeout)),
            settings,
            model: None,
            started: None,
            last_messages: LastContext::default(),
            records: Vec::new(),
            standby: Vec::new(),
            agent_tools: BTreeSet::new(),
            engine_written: HashSet::new(),
        };
        (session, fallback)
    }

    /// What a client is told about the session's engine; what was wrong with its tools is in
    /// `warnings` (and the log).
    pub fn engine_info(&mut self, fallback: Option<Fallback>) -> EngineInfo {
        // An engine whose schemas cannot be read offers no tools; its failure shows in the log.
        let offered = self.offered_tools().unwrap_or_else(|error| {
            tracing::warn!("{error}; the engine offers no tools");
            self.with_observer_tools(OfferedTools::default())
        });
        for warning in &offered.warnings {
            tracing::warn!("{warning}");
        }
        EngineInfo {
            session: self.id.clone(),
            engine: self.engine.name().to_owned(),
            origin: self.engine.origin().to_string(),
            fallback,
            tools: offered.schemas,
            warnings: offered.warnings,
        }
    }

    /// The tools offered: the engine's, then its observers', read as a replay reads them
    /// ([`crate::tools`]).
    pub fn tool_schemas(&mut self) -> Result<Vec<Value>, crate::engine::EngineCallError> {
        self.offered_tools().map(|offered| offered.schemas)
    }

    /// The engine's tools, then its observers' (a name offered already stays the first's, with a
    /// warning, as in a replay), and what was wrong with the others.
    fn offered_tools(&mut self) -> Result<OfferedTools, crate::engine::EngineCallError> {
        let schemas = self.engine.get_tool_schemas()?;
        let offered = offered_tools(self.engine.name(), schemas);
        Ok(self.with_observer_tools(offered))
    }

    /// `offered` (the engine's), then each observer's tool that no one before offers, named as a
    /// replay names them ([`merge_tool_owners`]).
    fn with_observer_tools(&self, mut offered: OfferedTools) -> OfferedTools {
        offered.warnings.extend(self.watch.schema_warnings());
        let active = offered.names().map(str::to_owned).collect();
        let (owners, warnings) = self.tool_owners(active);
        offered.warnings.extend(warnings);
        let observers = self.watch.observers();
        let mut taken = HashSet::new();
        for (index, schema) in observers.tool_schemas() {
            let name = tool_name(schema).unwrap_or_default();
            let owned = owners
                .iter()
                .any(|(tool, owner)| tool == name && *owner == ToolOwner::Observer(index));
            if owned && taken.insert(name.to_owned()) {
                offered.schemas.push(schema.clone());
            }
        }
        offered
    }

    /// Which engine answers each tool offered: the engine's (`active`), then each observer's
    /// that a replay would offer ([`Observers::offerable_tools`]: none of a detached
    /// observer, none the agent has itself); the warnings about those left out.
    fn tool_owners(&self, active: Vec<String>) -> (Vec<(String, ToolOwner)>, Vec<String>) {
        let (offerable, agents_own) = self.watch.observers().offerable_tools(
            &self.agent_tools,
            "it is not offered as the observer's, and the agent's calls of it are not given to the observer",
        );
        let (owners, mut warnings) = merge_tool_owners(active, offerable.into_iter());
        warnings.extend(agents_own);
        (owners, warnings)
    }

    /// Who answers a call of the tool `name`: the observer it is offered as, else the engine (a
    /// tool it does not offer, the agent's own included, gets the engine's own answer), unless a
    /// detached observer offered it.
    pub fn route_tool_call(&mut self, name: &str) -> ToolRoute {
        // An engine whose schemas cannot be read offers no tools (its failure is in the log).
        let active = match self.engine.get_tool_schemas() {
            Ok(schemas) => offered_tools(self.engine.name(), schemas)
                .names()
                .map(str::to_owned)
                .collect(),
            Err(_) => Vec::new(),
        };
        let (owners, _) = self.tool_owners(active);
        match owners
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, owner)| *owner)
        {
            Some(ToolOwner::Observer(index)) => ToolRoute::Observer(index),
            Some(ToolOwner::Active) => ToolRoute::Engine,
            None if self.agent_tools.contains(name) => ToolRoute::Engine,
            None => {
                let observers = self.watch.observers();
                let detached = observers
                    .tool_owner(name)
                    .and_then(|index| Some((observers.name(index).to_owned(), observers.detached(index)?)));
                match detached {
                    Some((observer, why)) => ToolRoute::Detached { observer, why },
                    None => ToolRoute::Engine,
                }
            }
        }
    }

    /// The user's last message in `messages`: the last user-role message that this server did
    /// not itself return from an earlier `compress` as an engine's own text. The replay knows it
    /// by provenance (it appended it); over the wire only the content tells, so a user who types
    /// exactly an earlier summary's text is not told apart from it (the check is then skipped
    /// for that message and applies to the user message before it).
    pub fn find_user_message<'m>(&self, messages: &'m [Message]) -> Option<&'m Message> {
        messages
            .iter()
            .rev()
            .filter(|message| message.role == Role::User)
            .find(|message| !self.engine_written.contains(&content_key(message)))
    }

    /// Remembers the user-role messages of `output` that were not in `input`: an engine wrote them.
    pub fn note_engine_written(&mut self, input: &[Message], output: &[Message]) {
        let given: HashSet<String> = input
            .iter()
            .filter(|message| message.role == Role::User)
            .map(content_key)
            .collect();
        let written: Vec<String> = output
            .iter()
            .filter(|message| message.role == Role::User)
            .map(content_key)
            .filter(|key| !given.contains(key))
            .collect();
        self.engine_written.extend(written);
    }
}

/// Who answers a call of a tool ([`Session::route_tool_call`]).
#[derive(Debug, PartialEq)]
pub enum ToolRoute {
    /// The session's engine.
    Engine,
    /// Observer number `n`, in attachment order.
    Observer(usize),
    /// No one: the observer that offered it was detached (why).
    Detached {
        /// Its name.
        observer: String,
        /// Why it was detached.
        why: String,
    },
}

/// The last context a call carried: messages, or the JSON of an unchecked `compress`'s answer,
/// read only if a session end needs it (the client that asked for it seldom lets that happen: it
/// ends the session itself, with its own context).
#[derive(Debug)]
pub enum LastContext {
    /// Read messages.
    Messages(Vec<Message>),
    /// An engine's answer as it wrote it.
    Json(Box<RawValue>),
}

impl Default for LastContext {
    fn default() -> Self {
        Self::Messages(Vec::new())
    }
}

impl From<Vec<Message>> for LastContext {
    fn from(messages: Vec<Message>) -> Self {
        Self::Messages(messages)
    }
}

impl LastContext {
    /// The messages, read from the JSON the first time they are asked for.
    pub fn messages(&mut self) -> &[Message] {
        if let Self::Json(json) = self {
            *self = Self::Messages(read_last_json(json));
        }
        match self {
            Self::Messages(messages) => messages,
            Self::Json(_) => &[],
        }
    }

    /// The messages, taken out.
    pub fn take(&mut self) -> Vec<Message> {
        match std::mem::take(self) {
            Self::Messages(messages) => messages,
            Self::Json(json) => read_last_json(&json),
        }
    }
}

/// JSON that does not read as messages (an answer the client refused) counts as no context.
fn read_last_json(json: &RawValue) -> Vec<Message> {
    messages_from_json(json.get()).unwrap_or_else(|error| {
        tracing::warn!("the last context an engine returned is not messages ({error}); none is kept");
        Vec::new()
    })
}

fn content_key(message: &Message) -> String {
    serde_json::to_string(&message.content).expect("message content serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        config::Settings,
        resolution::{resolve_engine, Registry},
    };

    fn session() -> Session {
        let settings = Settings::defaults(std::path::Path::new("."));
        let resolution = resolve_engine("compressor", &settings, &Registry::default());
        Session::new("s1".into(), resolution, settings).0
    }

    #[test]
    fn the_users_last_message_is_the_last_one_no_compress_returned_as_engine_text() {
        let mut session = session();
        let request = Message::user("migrate the orders table");
        let input = vec![Message::system("s"), request.clone(), Message::assistant("on it")];
        assert_eq!(session.find_user_message(&input), Some(&request));
        let summary = Message::user("[CONTEXT COMPACTION] the user asked for a migration");
        let output = vec![
            input[0].clone(),
            request.clone(),
            summary.clone(),
            input[2].clone(),
        ];
        session.note_engine_written(&input, &output);
        // The summary comes after the request but is the engine's: the request is still the one.
        assert_eq!(session.find_user_message(&output), Some(&request));
        let mut later = output.clone();
        let next = Message::user("now the invoices table");
        later.push(next.clone());
        assert_eq!(session.find_user_message(&later), Some(&next));
        // A user message kept verbatim by a compress stays the user's.
        session.note_engine_written(&later, &later);
        assert_eq!(session.find_user_message(&later), Some(&next));
    }
}
