//! Observer engines: engines that watch a session without ever changing its context.
//!
//! - Each observer runs on a thread of its own, fed through a bounded queue, in order. The
//!   session never waits for an observer's work, except when a queue is full (back-pressure, the
//!   time is reported): nothing is ever dropped.
//! - Every observer receives the lifecycle through the contract's own methods (`update_model`,
//!   `on_session_start`, `update_from_response`, `on_session_reset`, `on_session_end`), so an
//!   engine built before observers existed can observe too. An engine that declares interests
//!   ([`ctxhost_engine_abi::Engine::interests`]) also receives those kinds of fact through
//!   `observe`, and only those: a fact nobody asked for is never even built.
//! - A tool call to an observer travels through the same queue, so it is answered after every
//!   fact published before it; it is answered from what the observer stored (never handed the
//!   active engine's context, which is not the observer's).
//! - An observer that fails or panics is detached: it receives nothing more, its tools answer an
//!   error, and the session goes on exactly as if it had never been attached.

use std::{
    collections::BTreeSet,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc::{self, Receiver, SyncSender, TrySendError},
        Arc, Mutex,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use ctxhost_engine_abi::{
    observe::{EXT_INTERESTS, EXT_OBSERVE},
    Fact, FactKind, Message, ModelInfo, SessionInfo, Usage,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::{EngineCallError, EngineHandle};

/// How many calls an observer's queue holds before the session waits for it.
pub const QUEUE_CAPACITY: usize = 1024;

/// A lifecycle call every observer receives, whatever its interests.
#[derive(Clone, Debug)]
pub enum Lifecycle {
    /// `update_model`.
    UpdateModel(ModelInfo),
    /// `on_session_start`.
    SessionStart(String, SessionInfo),
    /// `update_from_response`.
    Usage(Usage),
    /// `on_session_reset`.
    Reset,
    /// `on_session_end` with the final context.
    SessionEnd(String, Arc<Vec<Message>>),
}

enum Job {
    Lifecycle(Lifecycle),
    Fact(Arc<Fact>),
    Tool {
        name: String,
        arguments: Value,
        reply: mpsc::Sender<Value>,
    },
}

/// What the session shares with one observer's thread.
#[derive(Default)]
struct Shared {
    /// Why it was detached, once it was.
    detached: Mutex<Option<String>>,
    facts: AtomicU64,
}

impl Shared {
    fn detached(&self) -> Option<String> {
        self.detached
            .lock()
            .expect("never poisoned: no panic while held")
            .clone()
    }

    fn detach(&self, reason: String) {
        self.detached
            .lock()
            .expect("never poisoned: no panic while held")
            .get_or_insert(reason);
    }
}

struct Worker {
    name: String,
    origin: String,
    interests: BTreeSet<FactKind>,
    tools: Vec<String>,
    /// `None` once closed.
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    waited: Duration,
    /// Whether the session was told it was detached.
    reported: bool,
}

/// What one observer did, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObserverSummary {
    /// The engine's name.
    pub name: String,
    /// Where it came from.
    pub origin: String,
    /// The kinds of fact it asked for.
    pub interests: Vec<FactKind>,
    /// Facts it received through `observe`.
    pub facts: u64,
    /// Its tools, as the session routes them.
    pub tools: Vec<String>,
    /// Why it was detached, when it was.
    pub detached: Option<String>,
    /// Time the session waited on its full queue.
    pub queue_wait_ms: f64,
}

/// The observers of one session.
#[derive(Default)]
pub struct Observers {
    workers: Vec<Worker>,
}

impl Observers {
    /// No observers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The observers' names, in the order they were attached.
    pub fn names(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.name.as_str()).collect()
    }

    /// Attaches `engine` as an observer: asks its interests and tools here, then hands it to a
    /// thread of its own. An engine that fails to answer is not attached.
    pub fn attach(&mut self, mut engine: EngineHandle) -> Result<(), EngineCallError> {
        let interests = match engine.call_ext(EXT_INTERESTS, &Value::Null)? {
            Some(Value::Array(kinds)) => kinds
                .into_iter()
                .filter_map(|kind| serde_json::from_value::<FactKind>(kind).ok())
                .collect(),
            // Built before observers existed: the lifecycle through the contract's methods only.
            _ => BTreeSet::new(),
        };
        let tools = engine
            .get_tool_schemas()?
            .iter()
            .filter_map(|schema| schema.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let (sender, receiver) = mpsc::sync_channel(QUEUE_CAPACITY);
        let shared = Arc::new(Shared::default());
        let name = engine.name().to_owned();
        let origin = engine.origin().to_string();
        let thread = std::thread::Builder::new()
            .name(format!("observer-{name}"))
            .spawn({
                let shared = Arc::clone(&shared);
                move || serve_jobs(engine, receiver, &shared)
            })
            .expect("a thread can be spawned");
        self.workers.push(Worker {
            name,
            origin,
            interests,
            tools,
            jobs: Some(sender),
            thread: Some(thread),
            shared,
            waited: Duration::ZERO,
            reported: false,
        });
        Ok(())
    }

    /// Whether any attached observer asked for `kind`.
    pub fn wants(&self, kind: FactKind) -> bool {
        self.workers
            .iter()
            .any(|w| w.interests.contains(&kind) && w.shared.detached().is_none())
    }

    /// Delivers the fact `build` makes to every observer that asked for `kind`; `build` runs only
    /// when one did.
    pub fn deliver(&mut self, kind: FactKind, build: impl FnOnce() -> Fact) {
        if !self.wants(kind) {
            return;
        }
        let fact = Arc::new(build());
        for worker in &mut self.workers {
            if worker.interests.contains(&kind) {
                worker.send(Job::Fact(Arc::clone(&fact)));
            }
        }
    }

    /// Delivers a lifecycle call to every observer.
    pub fn lifecycle(&mut self, call: Lifecycle) {
        for worker in &mut self.workers {
            worker.send(Job::Lifecycle(call.clone()));
        }
    }

    /// Each observer's tools, with its index, in attachment order.
    pub fn tools(&self) -> impl Iterator<Item = (usize, &str)> {
        self.workers
            .iter()
            .enumerate()
            .flat_map(|(index, w)| w.tools.iter().map(move |tool| (index, tool.as_str())))
    }

    /// The name of observer `index`.
    pub fn name(&self, index: usize) -> &str {
        &self.workers[index].name
    }

    /// Calls a tool of observer `index`, once it has handled everything published before; an
    /// observer that is detached, or fails now, answers `{"error": …}`.
    pub fn call_tool(&mut self, index: usize, name: &str, arguments: &Value) -> Value {
        let worker = &mut self.workers[index];
        let (reply, answer) = mpsc::channel();
        worker.send(Job::Tool {
            name: name.to_owned(),
            arguments: arguments.clone(),
            reply,
        });
        answer.recv().unwrap_or_else(|_| {
            let why = worker
                .shared
                .detached()
                .unwrap_or_else(|| "its thread stopped".to_owned());
            json!({ "error": format!("observer `{}` was detached: {why}", worker.name) })
        })
    }

    /// One warning for each observer detached since the last call.
    pub fn newly_detached(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        for worker in &mut self.workers {
            if worker.reported {
                continue;
            }
            if let Some(reason) = worker.shared.detached() {
                worker.reported = true;
                warnings.push(format!(
                    "observer `{}` detached: {reason}; the session goes on without it",
                    worker.name
                ));
            }
        }
        warnings
    }

    /// Waits until every observer has handled everything sent to it, then stops their threads.
    pub fn close(&mut self) {
        for worker in &mut self.workers {
            worker.jobs = None;
        }
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                if thread.join().is_err() {
                    worker.shared.detach("its thread panicked".to_owned());
                }
            }
        }
    }

    /// What each observer did.
    pub fn summaries(&self) -> Vec<ObserverSummary> {
        self.workers
            .iter()
            .map(|w| ObserverSummary {
                name: w.name.clone(),
                origin: w.origin.clone(),
                interests: w.interests.iter().copied().collect(),
                facts: w.shared.facts.load(Ordering::Relaxed),
                tools: w.tools.clone(),
                detached: w.shared.detached(),
                queue_wait_ms: w.waited.as_secs_f64() * 1e3,
            })
            .collect()
    }
}

impl Drop for Observers {
    fn drop(&mut self) {
        self.close();
    }
}

impl Worker {
    /// Queues `job`, waiting while the queue is full; nothing is sent to a detached observer.
    fn send(&mut self, job: Job) {
        if self.shared.detached().is_some() {
            return;
        }
        let Some(jobs) = &self.jobs else { return };
        let job = match jobs.try_send(job) {
            Ok(()) => return,
            Err(TrySendError::Full(job)) => job,
            Err(TrySendError::Disconnected(_)) => {
                self.shared.detach("its thread stopped".to_owned());
                return;
            }
        };
        let started = Instant::now();
        if jobs.send(job).is_err() {
            self.shared.detach("its thread stopped".to_owned());
        }
        self.waited += started.elapsed();
    }
}

/// An observer's thread: runs its jobs in order until the session closes the queue. After a
/// failure it only drains the queue (tool calls are answered with the reason).
fn serve_jobs(mut engine: EngineHandle, jobs: Receiver<Job>, shared: &Shared) {
    for job in jobs {
        if let Some(reason) = shared.detached() {
            if let Job::Tool { reply, .. } = job {
                let _ = reply
                    .send(json!({ "error": format!("observer `{}` was detached: {reason}", engine.name()) }));
            }
            continue;
        }
        let done = match job {
            Job::Lifecycle(call) => run_lifecycle(&mut engine, call),
            Job::Fact(fact) => {
                let request = serde_json::to_value(&*fact).expect("facts serialise");
                let observed = engine.call_ext(EXT_OBSERVE, &request).map(drop);
                if observed.is_ok() {
                    shared.facts.fetch_add(1, Ordering::Relaxed);
                }
                observed
            }
            Job::Tool {
                name,
                arguments,
                reply,
            } => {
                let answer = engine.handle_tool_call(&name, &arguments, None);
                let _ = reply.send(match &answer {
                    Ok(answer) => answer.clone(),
                    Err(error) => json!({ "error": error.to_string() }),
                });
                answer.map(drop)
            }
        };
        if let Err(error) = done {
            shared.detach(error.to_string());
        }
    }
}

fn run_lifecycle(engine: &mut EngineHandle, call: Lifecycle) -> Result<(), EngineCallError> {
    match call {
        Lifecycle::UpdateModel(model) => engine.update_model(&model),
        Lifecycle::SessionStart(session_id, info) => engine.on_session_start(&session_id, &info),
        Lifecycle::Usage(usage) => engine.update_from_response(usage),
        Lifecycle::Reset => engine.on_session_reset(),
        Lifecycle::SessionEnd(session_id, messages) => engine.on_session_end(&session_id, &messages),
    }
}
