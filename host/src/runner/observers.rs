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
//! - So is one that gets stuck: whenever the session waits on an observer (its queue is full, a
//!   tool call, the end), it waits as long as the observer keeps finishing calls, and gives up
//!   once none has finished for the observer timeout (`context.observer_timeout`). A plugin that
//!   never returns cannot hang the host; its thread is left to itself.

use std::{
    borrow::Cow,
    collections::{BTreeSet, VecDeque},
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering},
        mpsc::{self, RecvTimeoutError},
        Arc, Condvar, Mutex, OnceLock,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use ctxhost_engine_abi::{
    observe::{EXT_INTERESTS, EXT_OBSERVE_IDLE},
    Fact, FactBody, FactKind, Message, ModelInfo, Role, SessionInfo, Usage,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::{EngineCallError, EngineHandle};

/// How many calls an observer's queue holds before the session waits for it.
pub const QUEUE_CAPACITY: usize = 1024;

/// How long the session waits on an observer that finishes no call before it detaches it
/// (`context.observer_timeout`). Generous: a store that syncs a large log to a slow disk at the
/// end of a session takes seconds, and an observer that keeps finishing calls is never cut off.
pub const DEFAULT_OBSERVER_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a session waiting on an observer looks whether it still finishes calls.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Calls go to an observer's thread this many at a time (and at once before a tool call and at
/// the end): waking a thread for every message cost a replay more than the observer's work, and
/// on a virtual machine each wake-up still cost an idle observer (usage only) about 2% of a
/// replay at 64 a bundle.
const BUNDLE: usize = 256;

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

/// A fact on its way to the observers that asked for it: its JSON is written once, by the first
/// observer that needs it, for all of them.
struct SharedFact {
    fact: Fact,
    json: OnceLock<String>,
}

impl SharedFact {
    fn json(&self) -> &str {
        self.json
            .get_or_init(|| serde_json::to_string(&self.fact).expect("facts serialise"))
    }
}

/// At most this many appended messages are handed over in one `observe` call: consecutive
/// `messages_appended` facts waiting in a queue are merged (one call, one transaction for a
/// store), which keeps an observer that fell behind from staying behind.
const MAX_BATCH: usize = 512;

enum Job {
    Lifecycle(Lifecycle),
    Fact(Arc<SharedFact>),
    Tool {
        name: String,
        arguments: Value,
        reply: mpsc::Sender<ToolAnswer>,
    },
    /// `get_status`, kept in [`Shared::status`] for the report: asked last, as the session's
    /// end asks the active engine.
    Status,
}

/// What a detached observer's tool answers (in a replay, and `ctxhost tool`) or a served
/// session's call of it says: which observer, and why it was detached.
pub fn detached_observer(observer: &str, why: &str) -> String {
    format!("observer `{observer}` was detached: {why}")
}

/// What a call to an observer's tool gave.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolAnswer {
    /// Its answer; `{"error": …}` when it failed in this call (which detached it).
    Answered(Value),
    /// Nothing: it had been detached before the call came (why), so it was never asked.
    Detached(String),
}

/// What the session shares with one observer's thread.
#[derive(Default)]
struct Shared {
    /// Set once it is detached: checked on every call, so no lock on the way.
    is_detached: AtomicBool,
    /// Why it was detached.
    reason: Mutex<Option<String>>,
    facts: AtomicU64,
    /// Calls into the engine finished so far: a session waiting on the observer sees it move.
    finished: AtomicU64,
    /// The [`Call`] it is in, for the warning when it is stuck there.
    current: AtomicU8,
    /// Set when the session stopped waiting for it: its thread is left to itself.
    is_stuck: AtomicBool,
    /// When its thread had handled every job and dropped its engine.
    finished_at: Mutex<Option<Instant>>,
    /// Its `get_status`, once asked.
    status: Mutex<Option<Value>>,
    /// Set when its engine is to be handed back once its queue is closed (retired for a swap,
    /// which may yet be refused), rather than dropped on its thread.
    keep_engine: AtomicBool,
    /// The engine, handed back.
    kept: Mutex<Option<EngineHandle>>,
    /// Calls handed over that its thread has not taken yet: the queue's length in calls, however
    /// they were bundled (`serve` hands over a bundle after every request, often of one call).
    queued: AtomicUsize,
    /// Set while the session waits for room in the queue: the thread then says when it takes one.
    room_wanted: AtomicBool,
    room: (Mutex<()>, Condvar),
}

impl Shared {
    /// Its thread took `calls` from the queue.
    fn took(&self, calls: usize) {
        self.queued.fetch_sub(calls, Ordering::AcqRel);
        if self.room_wanted.load(Ordering::Acquire) {
            let _held = self
                .room
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            self.room.1.notify_all();
        }
    }

    /// Whether `calls` more fit in the queue (any number does in an empty one).
    fn has_room_for(&self, calls: usize) -> bool {
        let queued = self.queued.load(Ordering::Acquire);
        queued == 0 || queued + calls <= QUEUE_CAPACITY
    }
}

/// A call into an observer engine, as the warning names it when the observer is stuck in it.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Call {
    /// In the host's code, between calls.
    Between,
    Observe,
    ObserveIdle,
    UpdateModel,
    SessionStart,
    Usage,
    Reset,
    SessionEnd,
    Tool,
    New,
    Interests,
    ToolSchemas,
    Status,
}

impl Call {
    const NAMES: [&'static str; 13] = [
        "none (between calls)",
        "`observe`",
        "`observe_idle`",
        "`update_model`",
        "`on_session_start`",
        "`update_from_response`",
        "`on_session_reset`",
        "`on_session_end`",
        "`handle_tool_call`",
        "`new` (loading or creating the engine)",
        "`interests`",
        "`get_tool_schemas`",
        "`get_status`",
    ];

    fn of(call: &Lifecycle) -> Self {
        match call {
            Lifecycle::UpdateModel(_) => Self::UpdateModel,
            Lifecycle::SessionStart(..) => Self::SessionStart,
            Lifecycle::Usage(_) => Self::Usage,
            Lifecycle::Reset => Self::Reset,
            Lifecycle::SessionEnd(..) => Self::SessionEnd,
        }
    }
}

impl Shared {
    fn detached(&self) -> Option<String> {
        if !self.is_detached.load(Ordering::Acquire) {
            return None;
        }
        self.reason
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn is_detached(&self) -> bool {
        self.is_detached.load(Ordering::Acquire)
    }

    fn detach(&self, reason: String) {
        self.reason
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert(reason);
        self.is_detached.store(true, Ordering::Release);
    }

    /// Runs `work`, one call into the engine, marked as `call` while it runs.
    fn calling<T>(&self, call: Call, work: impl FnOnce() -> T) -> T {
        self.current.store(call as u8, Ordering::Relaxed);
        let result = work();
        self.current.store(Call::Between as u8, Ordering::Relaxed);
        self.finished.fetch_add(1, Ordering::Release);
        result
    }

    fn is_stuck(&self) -> bool {
        self.is_stuck.load(Ordering::Acquire)
    }

    /// Detaches it as stuck: it finished no call for `stall`.
    fn give_up(&self, stall: Duration) {
        let call = Call::NAMES
            .get(usize::from(self.current.load(Ordering::Relaxed)))
            .copied()
            .unwrap_or("an unknown call");
        self.is_stuck.store(true, Ordering::Release);
        self.detach(format!(
            "it finished no call in {} s (stuck in {call}; `context.observer_timeout` sets how long the session waits)",
            stall.as_secs_f64()
        ));
    }
}

/// What one try at something the session waits on gave.
enum Try<T> {
    Done(T),
    Again,
    Gone,
}

/// Tries `attempt` (given how long it may block) until it is done, for as long as the observer's
/// thread keeps finishing calls. `None` when its thread is gone, or when it finished no call for
/// `stall`: then it is detached as stuck, and the session stops waiting for it.
fn wait_on<T>(shared: &Shared, stall: Duration, mut attempt: impl FnMut(Duration) -> Try<T>) -> Option<T> {
    let mut finished = shared.finished.load(Ordering::Acquire);
    let mut since = Instant::now();
    loop {
        let left = stall.saturating_sub(since.elapsed());
        match attempt(left.min(LOOK_EVERY)) {
            Try::Done(value) => return Some(value),
            Try::Gone => return None,
            Try::Again => {}
        }
        let now = shared.finished.load(Ordering::Acquire);
        if now != finished {
            (finished, since) = (now, Instant::now());
        } else if since.elapsed() >= stall {
            shared.give_up(stall);
            return None;
        }
    }
}

struct Worker {
    name: String,
    origin: String,
    interests: BTreeSet<FactKind>,
    tools: Vec<String>,
    schemas: Vec<Value>,
    /// What was wrong with its tool schemas, for the session to warn of.
    schema_warnings: Vec<String>,
    /// `None` once closed.
    jobs: Option<Sender<Vec<Job>>>,
    /// Calls not handed over yet.
    outbox: Vec<Job>,
    thread: Option<JoinHandle<()>>,
    /// Disconnected when the thread has returned: what closing waits on, with a timeout.
    done: Receiver<()>,
    /// How long the session waits on it while it finishes no call.
    stall: Duration,
    shared: Arc<Shared>,
    waited: Duration,
    /// How long the end of the session waited for it to handle what it was sent.
    waited_at_end: Duration,
    /// Whether the session was told it was detached.
    reported: bool,
    /// Set once it stopped observing to take over the context: its tools are the active
    /// engine's from then on.
    retired: bool,
    /// Retired for a swap that was then refused, and could not go back to observing.
    swap_refused: bool,
    /// Went back to observing after a swap to it was refused.
    resumed_after_refused_swap: bool,
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
    /// Set when it stopped observing because its engine took over the context (`/engine`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub took_over: bool,
    /// Set when it stopped observing for its engine to take over, the swap was then refused
    /// (the engine failed to start), and it could not go back to observing: it observes no more.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped_for_refused_swap: bool,
    /// Set when a swap to its engine was refused and it went on observing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kept_observing_after_refused_swap: bool,
    /// Its `get_status` when it stopped observing (at the session's end, or when its engine
    /// took over the context); `None` when it was detached first.
    pub status: Option<Value>,
    /// Time the session waited on its full queue.
    pub queue_wait_ms: f64,
    /// Time the end of the session waited for it to handle everything sent to it.
    pub end_wait_ms: f64,
}

/// The observers of one session.
pub struct Observers {
    workers: Vec<Worker>,
    /// How long the session waits on an observer that finishes no call.
    stall: Duration,
}

impl Default for Observers {
    fn default() -> Self {
        Self::with_timeout(DEFAULT_OBSERVER_TIMEOUT)
    }
}

/// The observers `lists` name, each once and in order, split into those to attach and those on
/// standby: the active engine is never attached a second time (two instances would write one
/// store); it observes once `/engine` swaps it out. Each list is the name the user knows it by
/// (`context.observers`, `--observer`) and its names. A name in two lists is one observer, given
/// twice on purpose; twice in one list is a slip, and `warn` is told.
pub fn observer_names(
    lists: &[(&str, &[String])],
    active: &str,
    mut warn: impl FnMut(String),
) -> (Vec<String>, Vec<String>) {
    let (mut attach, mut standby) = (Vec::<String>::new(), Vec::<String>::new());
    for (list, names) in lists {
        for (index, name) in names.iter().enumerate() {
            if names[..index].contains(name) {
                warn(format!("{list} names `{name}` twice; it observes once"));
            }
            let side = if name == active { &mut standby } else { &mut attach };
            if !side.contains(name) {
                side.push(name.clone());
            }
        }
    }
    (attach, standby)
}

impl Observers {
    /// No observers.
    pub fn new() -> Self {
        Self::default()
    }

    /// No observers; the session will wait at most `stall` on one that finishes no call (a zero
    /// timeout is taken as the smallest wait there is, not as no limit).
    pub fn with_timeout(stall: Duration) -> Self {
        Self {
            workers: Vec::new(),
            stall,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The observers' names, in the order they were attached.
    pub fn names(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.name.as_str()).collect()
    }

    /// Attaches `engine`, which exists already (an engine swapped out that stays on), as an
    /// observer: see [`start`](Observers::start).
    pub fn attach(&mut self, engine: EngineHandle) -> Result<(), String> {
        let name = engine.name().to_owned();
        self.start(&name, move || Ok(engine))
    }

    /// Starts an observer named `name` on a thread of its own: `create` (resolving and creating
    /// the engine) runs there, then its interests and tools are asked there, while the session
    /// waits as it waits on any call. An engine that cannot be created or fails to answer is not
    /// attached, and neither is one stuck in those calls for the observer timeout: a plugin whose
    /// `new` never returns cannot hang the session (its thread is left to itself).
    pub fn start(
        &mut self,
        name: &str,
        create: impl FnOnce() -> Result<EngineHandle, String> + Send + 'static,
    ) -> Result<(), String> {
        // Bounded by the calls in it (`Shared::queued`), not by the bundles they came in.
        let (sender, receiver) = crossbeam_channel::unbounded();
        let (ended, done) = crossbeam_channel::bounded::<()>(0);
        let (introduce, introduced) = crossbeam_channel::bounded(1);
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name(format!("observer-{name}"))
            .spawn({
                let shared = Arc::clone(&shared);
                move || {
                    let _ended = ended;
                    let started = shared.calling(Call::New, create).and_then(|mut engine| {
                        let introduction = introduction(&mut engine, &shared)?;
                        Ok((engine, introduction))
                    });
                    let (engine, introduction) = match started {
                        Ok(started) => started,
                        Err(reason) => {
                            let _ = introduce.send(Err(reason));
                            return;
                        }
                    };
                    let idle = introduction.idle;
                    // A session that gave up waiting is gone: the engine is dropped here.
                    if introduce.send(Ok(introduction)).is_ok() {
                        let engine = serve_jobs(engine, receiver, idle, &shared);
                        if shared.keep_engine.load(Ordering::Acquire) && !shared.is_detached() {
                            *shared.kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(engine);
                        } else {
                            drop(engine);
                        }
                        *shared.finished_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                    }
                }
            })
            .map_err(|error| format!("its thread could not be started: {error}"))?;
        let answered = wait_on(&shared, self.stall, |slice| {
            match introduced.recv_timeout(slice) {
                Ok(answer) => Try::Done(answer),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => Try::Again,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Try::Gone,
            }
        });
        let introduction = match answered {
            Some(answer) => answer?,
            None => {
                return Err(shared
                    .detached()
                    .unwrap_or_else(|| "its thread stopped while starting".to_owned()))
            }
        };
        self.workers.push(Worker {
            name: introduction.name,
            origin: introduction.origin,
            interests: introduction.interests,
            tools: introduction.tools,
            schemas: introduction.schemas,
            schema_warnings: introduction.warnings,
            jobs: Some(sender),
            outbox: Vec::with_capacity(BUNDLE),
            thread: Some(thread),
            done,
            stall: self.stall,
            shared,
            waited: Duration::ZERO,
            waited_at_end: Duration::ZERO,
            reported: false,
            retired: false,
            swap_refused: false,
            resumed_after_refused_swap: false,
        });
        Ok(())
    }

    /// Whether any attached observer asked for `kind`.
    pub fn wants(&self, kind: FactKind) -> bool {
        self.workers
            .iter()
            .any(|w| w.interests.contains(&kind) && !w.retired && !w.shared.is_detached())
    }

    /// Delivers the fact `build` makes to every observer that asked for `kind`; `build` runs only
    /// when one did.
    pub fn deliver(&mut self, kind: FactKind, build: impl FnOnce() -> Fact) {
        if !self.wants(kind) {
            return;
        }
        let fact = Arc::new(SharedFact {
            fact: build(),
            json: OnceLock::new(),
        });
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
            .filter(|(_, w)| !w.retired)
            .flat_map(|(index, w)| w.tools.iter().map(move |tool| (index, tool.as_str())))
    }

    /// What was wrong with the observers' tool schemas (a name offered twice, a schema without
    /// one), one warning each.
    pub fn schema_warnings(&self) -> impl Iterator<Item = &str> {
        self.workers
            .iter()
            .flat_map(|w| w.schema_warnings.iter().map(String::as_str))
    }

    /// Each observer's tool schemas, with its index, in attachment order.
    pub fn tool_schemas(&self) -> impl Iterator<Item = (usize, &Value)> {
        self.workers
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.retired)
            .flat_map(|(index, w)| w.schemas.iter().map(move |schema| (index, schema)))
    }

    /// The observers' tools the agent can be offered, each with its observer's index and name,
    /// in attachment order, and one warning for each tool left out as the agent's own (ending
    /// with `agents_calls`, what becomes of the agent's calls of it):
    /// - a detached observer's tools are not offered: it answers nothing any more;
    /// - a tool named like one of the agent's own (`agent_tools`: `terminal`) is not offered as
    ///   the observer's, and the agent's calls of it are not given to the observer.
    ///
    /// A replay's tool table and a served session's tool list both come from this.
    pub fn offerable_tools<'a>(
        &'a self,
        agent_tools: &BTreeSet<String>,
        agents_calls: &str,
    ) -> (Vec<(usize, &'a str, &'a str)>, Vec<String>) {
        let mut agents_own = Vec::new();
        let offered = self
            .tools()
            .filter(|(index, _)| !self.is_detached(*index))
            .filter(|(index, tool)| {
                let own = agent_tools.contains(*tool);
                if own {
                    agents_own.push(format!(
                        "observer `{}` offers the tool `{tool}`, which the agent has itself; {agents_calls}",
                        self.name(*index)
                    ));
                }
                !own
            })
            .map(|(index, tool)| (index, self.name(index), tool))
            .collect();
        (offered, agents_own)
    }

    /// The observer offering the tool `name`, if one does.
    pub fn tool_owner(&self, name: &str) -> Option<usize> {
        self.tools()
            .find(|(_, tool)| *tool == name)
            .map(|(index, _)| index)
    }

    /// The name of observer `index`.
    pub fn name(&self, index: usize) -> &str {
        &self.workers[index].name
    }

    /// Calls a tool of observer `index`, once it has handled everything published before; an
    /// observer that is detached, or fails now, answers `{"error": …}`.
    pub fn call_tool(&mut self, index: usize, name: &str, arguments: &Value) -> Value {
        match self.try_call_tool(index, name, arguments) {
            ToolAnswer::Answered(answer) => answer,
            ToolAnswer::Detached(why) => {
                json!({ "error": detached_observer(&self.workers[index].name, &why) })
            }
        }
    }

    /// [`Self::call_tool`], telling an observer detached before the call (never asked) from one
    /// that answered or failed in it. The call travels the observer's queue, so a failure in a
    /// fact published before it is known here however far behind the observer's thread was.
    pub fn try_call_tool(&mut self, index: usize, name: &str, arguments: &Value) -> ToolAnswer {
        let worker = &mut self.workers[index];
        if let Some(why) = worker.shared.detached() {
            return ToolAnswer::Detached(why);
        }
        let (reply, answer) = mpsc::channel();
        worker.send(Job::Tool {
            name: name.to_owned(),
            arguments: arguments.clone(),
            reply,
        });
        worker.flush();
        let answer = wait_on(&worker.shared, worker.stall, |slice| {
            match answer.recv_timeout(slice) {
                Ok(answer) => Try::Done(answer),
                Err(RecvTimeoutError::Timeout) => Try::Again,
                Err(RecvTimeoutError::Disconnected) => Try::Gone,
            }
        });
        answer.unwrap_or_else(|| {
            let why = worker
                .shared
                .detached()
                .unwrap_or_else(|| "its thread stopped".to_owned());
            ToolAnswer::Answered(json!({ "error": detached_observer(&worker.name, &why) }))
        })
    }

    /// Why observer `index` was detached, once it was.
    pub fn detached(&self, index: usize) -> Option<String> {
        self.workers[index].shared.detached()
    }

    /// Whether observer `index` was detached (its tools answer only why).
    pub fn is_detached(&self, index: usize) -> bool {
        self.workers[index].shared.is_detached()
    }

    /// One warning for each observer detached since the last call.
    pub fn newly_detached(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        for worker in &mut self.workers {
            if worker.reported || !worker.shared.is_detached() {
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

    /// Hands every observer the calls queued for it so far, without waiting for their work: a
    /// live session (`ctxhost serve`) does it after each request, so no fact waits for the next
    /// bundle to fill.
    pub fn flush(&mut self) {
        for worker in &mut self.workers {
            worker.flush();
        }
    }

    /// Waits until every observer has handled everything sent to it, then stops their threads.
    /// A stuck observer's thread is left to itself.
    pub fn close(&mut self) {
        for worker in &mut self.workers {
            if worker.jobs.is_some() {
                worker.send(Job::Status);
            }
            worker.flush();
            worker.jobs = None;
        }
        // They drain side by side: each one's wait is from the close to its own end (or to when
        // the session gave up on it).
        let closed = Instant::now();
        for worker in &mut self.workers {
            worker.wait_for_thread();
            let finished = *worker
                .shared
                .finished_at
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            worker.waited_at_end =
                finished.map_or_else(|| closed.elapsed(), |at| at.saturating_duration_since(closed));
        }
    }

    /// The observer named `name` stops observing because its engine takes over the context
    /// (`/engine NAME` while it observes): it ends the session it observed (`on_session_end` with
    /// the session's id and context, when one is under way), handles everything sent to it and
    /// stops, before the engine that takes over starts on the same session. Two instances of one
    /// engine would otherwise write one store at once. It stays in the report, its tools are no
    /// longer offered, and nothing more is sent to it (no fact is built for it). `false` when no
    /// observer of that name is attached (or it was detached already).
    pub fn retire(&mut self, name: &str, ending: Option<(&str, &[Message])>) -> bool {
        let Some(worker) = self
            .workers
            .iter_mut()
            .find(|w| w.name == name && !w.retired && !w.shared.is_detached())
        else {
            return false;
        };
        if let Some((session_id, context)) = ending {
            worker.send(Job::Lifecycle(Lifecycle::SessionEnd(
                session_id.to_owned(),
                Arc::new(context.to_vec()),
            )));
        }
        worker.send(Job::Status);
        worker.shared.keep_engine.store(true, Ordering::Release);
        worker.flush();
        worker.jobs = None;
        worker.wait_for_thread();
        worker.retired = true;
        true
    }

    /// The observer `name`, retired for its engine to take over, was not taken over by it: the
    /// swap was refused after it stopped. The same instance goes back to observing in its place
    /// (its tools routed to it as before): it observed everything published up to the swap and
    /// was given the context as it stands (`on_session_end`), as an engine swapped out is before
    /// it observes. `Err` says why it cannot (it failed while stopping, or fails to start again):
    /// then the report says it stopped for a swap that was refused.
    pub fn resume_after_refused_swap(&mut self, name: &str) -> Result<(), String> {
        let Some(index) = self.workers.iter().rposition(|w| w.name == name && w.retired) else {
            return Err("it was not observing".to_owned());
        };
        let kept = self.workers[index]
            .shared
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let started = match kept {
            Some(engine) => self.start(name, move || Ok(engine)),
            None => Err(self.workers[index]
                .shared
                .detached()
                .unwrap_or_else(|| "its engine was not handed back".to_owned())),
        };
        if let Err(reason) = started {
            self.workers[index].swap_refused = true;
            return Err(reason);
        }
        // In the old one's place: the session's tool table routes its tools by this index.
        let mut resumed = self.workers.pop().expect("just started");
        let stopped = &self.workers[index];
        resumed
            .shared
            .facts
            .fetch_add(stopped.shared.facts.load(Ordering::Relaxed), Ordering::Relaxed);
        resumed.waited += stopped.waited;
        resumed.resumed_after_refused_swap = true;
        self.workers[index] = resumed;
        Ok(())
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
                status: w
                    .shared
                    .status
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .clone(),
                took_over: w.retired && !w.swap_refused,
                stopped_for_refused_swap: w.swap_refused,
                kept_observing_after_refused_swap: w.resumed_after_refused_swap,
                queue_wait_ms: w.waited.as_secs_f64() * 1e3,
                end_wait_ms: w.waited_at_end.as_secs_f64() * 1e3,
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
    /// Waits for its thread to return once its queue is closed, as long as it keeps finishing
    /// calls; a stuck observer's thread is left to itself.
    fn wait_for_thread(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        if self.shared.is_stuck() {
            return;
        }
        let returned = wait_on(&self.shared, self.stall, |slice| {
            match self.done.recv_timeout(slice) {
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => Try::Again,
                // Nothing is ever sent: the thread returned, and its end of the channel with it.
                _ => Try::Done(()),
            }
        });
        if returned.is_some() && thread.join().is_err() {
            self.shared.detach("its thread panicked".to_owned());
        }
    }

    /// Queues `job`; it is handed over with the next bundle. Nothing is sent to a detached
    /// observer.
    fn send(&mut self, job: Job) {
        if self.retired || self.shared.is_detached() {
            return;
        }
        self.outbox.push(job);
        if self.outbox.len() >= BUNDLE {
            self.flush();
        }
    }

    /// Hands over the calls queued so far, waiting while the thread's queue is full.
    fn flush(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let bundle = std::mem::replace(&mut self.outbox, Vec::with_capacity(BUNDLE));
        let Some(jobs) = &self.jobs else { return };
        let calls = bundle.len();
        if !self.shared.has_room_for(calls) {
            let started = Instant::now();
            let shared = &self.shared;
            shared.room_wanted.store(true, Ordering::Release);
            let room = wait_on(shared, self.stall, |slice| {
                // Looked at under the lock the thread notifies under: no wake-up is missed.
                let held = shared
                    .room
                    .0
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if shared.has_room_for(calls) {
                    return Try::Done(());
                }
                let _ = shared.room.1.wait_timeout(held, slice);
                if shared.has_room_for(calls) {
                    Try::Done(())
                } else {
                    Try::Again
                }
            });
            shared.room_wanted.store(false, Ordering::Release);
            self.waited += started.elapsed();
            if room.is_none() {
                // Stuck: detached already.
                return;
            }
        }
        self.shared.queued.fetch_add(calls, Ordering::AcqRel);
        if jobs.send(bundle).is_err() {
            self.shared.detach("its thread stopped".to_owned());
        }
    }
}

/// What an observer says of itself when it is attached.
struct Introduction {
    name: String,
    origin: String,
    interests: BTreeSet<FactKind>,
    idle: Idle,
    tools: Vec<String>,
    schemas: Vec<Value>,
    /// What was wrong with its tool schemas.
    warnings: Vec<String>,
}

/// Asks `engine` what it wants and offers, on its own thread.
fn introduction(engine: &mut EngineHandle, shared: &Shared) -> Result<Introduction, String> {
    let failed = |error: EngineCallError| error.to_string();
    let interests = match shared
        .calling(Call::Interests, || engine.call_ext(EXT_INTERESTS, &Value::Null))
        .map_err(failed)?
    {
        Some(Value::Array(kinds)) => kinds
            .into_iter()
            .filter_map(|kind| serde_json::from_value::<FactKind>(kind).ok())
            .collect(),
        // Built before observers existed: the lifecycle through the contract's methods only.
        _ => BTreeSet::new(),
    };
    // Nothing is queued yet: the first "ran dry", which also tells whether it knows the call.
    let idle = match shared
        .calling(Call::ObserveIdle, || {
            engine.call_ext(EXT_OBSERVE_IDLE, &Value::Null)
        })
        .map_err(failed)?
    {
        Some(_) => Idle::Told,
        None => Idle::Unknown,
    };
    let schemas = shared
        .calling(Call::ToolSchemas, || engine.get_tool_schemas())
        .map_err(failed)?;
    let offered = crate::tools::offered_tools(engine.name(), schemas);
    let tools = offered.names().map(str::to_owned).collect();
    let (schemas, warnings) = (offered.schemas, offered.warnings);
    Ok(Introduction {
        name: engine.name().to_owned(),
        origin: engine.origin().to_string(),
        interests,
        idle,
        tools,
        schemas,
        warnings,
    })
}

/// An observer's thread: runs its jobs in order until the session closes the queue. After a
/// failure it only drains the queue (tool calls are answered with the reason).
fn serve_jobs(
    mut engine: EngineHandle,
    bundles: Receiver<Vec<Job>>,
    mut idle: Idle,
    shared: &Shared,
) -> EngineHandle {
    let mut queue = VecDeque::new();
    loop {
        if queue.is_empty() {
            let bundle = match bundles.try_recv() {
                Ok(bundle) => Ok(bundle),
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    if let Err(error) = idle.tell(&mut engine, shared) {
                        shared.detach(error.failure());
                    }
                    bundles.recv()
                }
            };
            match bundle {
                Ok(bundle) => queue.extend(bundle),
                Err(_) => break,
            }
        }
        let Some(job) = queue.pop_front() else { continue };
        shared.took(1);
        if let Some(reason) = shared.detached() {
            if let Job::Tool { reply, .. } = job {
                let _ = reply.send(ToolAnswer::Detached(reason));
            }
            continue;
        }
        let done = match job {
            Job::Lifecycle(call) => shared.calling(Call::of(&call), || run_lifecycle(&mut engine, call)),
            Job::Fact(fact) => {
                let batch = merge_appends(fact, &mut queue, &bundles, shared);
                let observed = match &batch {
                    Batch::One(fact) => shared.calling(Call::Observe, || {
                        engine.observe(fact.json(), || Cow::Borrowed(&fact.fact))
                    }),
                    Batch::Merged(facts) => {
                        let json = merged_json(facts);
                        shared.calling(Call::Observe, || {
                            engine.observe(&json, || Cow::Owned(merged_fact(facts)))
                        })
                    }
                };
                if observed.is_ok() {
                    shared.facts.fetch_add(batch.count(), Ordering::Relaxed);
                    idle.observed();
                }
                observed
            }
            Job::Tool {
                name,
                arguments,
                reply,
            } => {
                let answer = shared.calling(Call::Tool, || engine.handle_tool_call(&name, &arguments, None));
                // Detached before the answer goes back: the session reading it then knows the
                // call failed (it counts a detached observer's answer as a failure).
                if let Err(error) = &answer {
                    shared.detach(error.failure());
                }
                let _ = reply.send(ToolAnswer::Answered(match &answer {
                    Ok(answer) => answer.clone(),
                    Err(error) => json!({ "error": error.to_string() }),
                }));
                answer.map(drop)
            }
            Job::Status => shared
                .calling(Call::Status, || engine.get_status())
                .map(|status| {
                    *shared
                        .status
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(status);
                }),
        };
        if let Err(error) = done {
            shared.detach(error.failure());
        }
    }
    engine
}

/// Whether an observer is told its queue ran dry ([`EXT_OBSERVE_IDLE`]): when it is attached,
/// then once after the facts it handled, before its thread waits for more. A plugin built before
/// the capability answers "unknown method" at attach and is not asked again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Idle {
    /// Facts came since it was last told.
    Unasked,
    /// Told already, nothing observed since.
    Told,
    /// The engine does not know the capability.
    Unknown,
}

impl Idle {
    fn observed(&mut self) {
        if *self == Self::Told {
            *self = Self::Unasked;
        }
    }

    fn tell(&mut self, engine: &mut EngineHandle, shared: &Shared) -> Result<(), EngineCallError> {
        if *self != Self::Unasked || shared.is_detached() {
            return Ok(());
        }
        shared.calling(Call::ObserveIdle, || {
            engine.call_ext(EXT_OBSERVE_IDLE, &Value::Null)
        })?;
        *self = Self::Told;
        Ok(())
    }
}

/// One fact as published, or several appends of one session merged into one.
enum Batch {
    One(Arc<SharedFact>),
    /// Two or more `messages_appended` facts of one session, in order.
    Merged(Vec<Arc<SharedFact>>),
}

impl Batch {
    /// How many published facts it stands for.
    fn count(&self) -> u64 {
        match self {
            Self::One(_) => 1,
            Self::Merged(facts) => facts.len() as u64,
        }
    }
}

/// The appended messages of `facts`, in order.
fn appended_messages(facts: &[Arc<SharedFact>]) -> impl Iterator<Item = &Message> {
    facts.iter().flat_map(|shared| match &shared.fact.body {
        FactBody::MessagesAppended { messages } => messages.as_slice(),
        _ => &[],
    })
}

/// The JSON of one `messages_appended` fact holding the messages of all of `facts`, written from
/// them in place rather than from a merged copy: a batch holds up to [`MAX_BATCH`] messages,
/// each already copied once for its fact.
fn merged_json(facts: &[Arc<SharedFact>]) -> String {
    #[derive(Serialize)]
    struct MergedAppends<'a> {
        session_id: &'a str,
        at_message: u64,
        kind: FactKind,
        messages: Vec<&'a Message>,
    }
    let last = &facts.last().expect("a merged batch holds facts").fact;
    serde_json::to_string(&MergedAppends {
        session_id: &last.session_id,
        at_message: last.at_message,
        kind: FactKind::MessagesAppended,
        messages: appended_messages(facts).collect(),
    })
    .expect("facts serialise")
}

/// The same fact as data, for an engine that takes it so.
fn merged_fact(facts: &[Arc<SharedFact>]) -> Fact {
    let last = &facts.last().expect("a merged batch holds facts").fact;
    Fact {
        session_id: last.session_id.clone(),
        at_message: last.at_message,
        body: FactBody::MessagesAppended {
            messages: appended_messages(facts).cloned().collect(),
        },
    }
}

/// `first`, with the `messages_appended` facts of the same session waiting right behind it
/// (in `queue`, or in bundles already sent) merged in when it is one too.
fn merge_appends(
    first: Arc<SharedFact>,
    queue: &mut VecDeque<Job>,
    bundles: &Receiver<Vec<Job>>,
    shared: &Shared,
) -> Batch {
    let appended = |fact: &Fact| match &fact.body {
        FactBody::MessagesAppended { messages } => Some(messages.len()),
        _ => None,
    };
    let Some(mut size) = appended(&first.fact) else {
        return Batch::One(first);
    };
    let mut merged = vec![first];
    while size < MAX_BATCH {
        if queue.is_empty() {
            match bundles.try_recv() {
                Ok(bundle) => queue.extend(bundle),
                Err(_) => break,
            }
        }
        let count = match queue.front() {
            Some(Job::Fact(next)) if next.fact.session_id == merged[0].fact.session_id => {
                appended(&next.fact)
            }
            _ => None,
        };
        let Some(count) = count else { break };
        let Some(Job::Fact(next)) = queue.pop_front() else {
            unreachable!("the front was checked to be an append")
        };
        shared.took(1);
        merged.push(next);
        size += count;
    }
    if merged.len() == 1 {
        Batch::One(merged.pop().expect("one fact"))
    } else {
        Batch::Merged(merged)
    }
}

/// The messages of `after` that are not in `before` (a compaction's summaries and notes, and the
/// messages it rewrote). Looked up by role, call id and the start of the text, then compared
/// whole: no message is written out as JSON, which on a long context cost more than the
/// compaction.
pub fn inserted_messages(before: &[Message], after: &[Message]) -> Vec<Message> {
    fn key(message: &Message) -> (Role, Option<&str>, usize, String) {
        let text = message.text();
        let start: String = text.chars().take(48).collect();
        (message.role, message.tool_call_id.as_deref(), text.len(), start)
    }
    let mut known: std::collections::HashMap<_, Vec<&Message>> = std::collections::HashMap::new();
    for message in before {
        known.entry(key(message)).or_default().push(message);
    }
    after
        .iter()
        .filter(|message| {
            !known
                .get(&key(message))
                .is_some_and(|candidates| candidates.iter().any(|known| known == message))
        })
        .cloned()
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::Message;

    fn fact(session: &str, body: FactBody) -> Job {
        Job::Fact(Arc::new(SharedFact {
            fact: Fact {
                session_id: session.to_owned(),
                at_message: 0,
                body,
            },
            json: OnceLock::new(),
        }))
    }

    fn appended(session: &str, text: &str) -> Job {
        fact(
            session,
            FactBody::MessagesAppended {
                messages: vec![Message::user(text)],
            },
        )
    }

    fn texts(batch: &Batch) -> Vec<String> {
        let fact = match batch {
            Batch::One(fact) => fact.fact.clone(),
            Batch::Merged(facts) => {
                // What the engine receives, either way.
                let fact = merged_fact(facts);
                let json: Fact = serde_json::from_str(&merged_json(facts)).unwrap();
                assert_eq!(json, fact);
                fact
            }
        };
        match &fact.body {
            FactBody::MessagesAppended { messages } => {
                messages.iter().map(|m| m.text().into_owned()).collect()
            }
            _ => Vec::new(),
        }
    }

    #[test]
    fn consecutive_appends_of_one_session_are_merged_and_nothing_else_is_taken() {
        let (sender, bundles) = crossbeam_channel::bounded(4);
        // One append in hand, two queued, then a reset, then an append of another session sent
        // in a later bundle.
        let mut queue: VecDeque<Job> = [
            appended("s", "b"),
            appended("s", "c"),
            fact("s", FactBody::SessionReset),
        ]
        .into_iter()
        .collect();
        sender.send(vec![appended("t", "d")]).unwrap();
        let Job::Fact(first) = appended("s", "a") else {
            unreachable!()
        };
        let batch = merge_appends(first, &mut queue, &bundles, &Shared::default());
        assert_eq!(texts(&batch), ["a", "b", "c"]);
        assert_eq!(batch.count(), 3);
        // The reset is next, untouched; the other session's append is still in its bundle.
        assert!(matches!(queue.front(), Some(Job::Fact(f)) if f.fact.body == FactBody::SessionReset));
        assert_eq!(queue.len(), 1);
        let Job::Fact(reset) = queue.pop_front().unwrap() else {
            unreachable!()
        };
        assert!(matches!(
            merge_appends(reset, &mut queue, &bundles, &Shared::default()),
            Batch::One(_)
        ));
        assert_eq!(bundles.try_recv().unwrap().len(), 1);
    }

    #[test]
    fn an_observer_is_told_when_it_is_attached_and_when_its_queue_runs_dry() {
        use ctxhost_engine_abi::{
            linked::instantiate_linked, CompressRequest, Counters, Engine, EngineError, Host,
        };

        static CALLS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        struct Recorder(Counters);
        impl Engine for Recorder {
            const NAME: &'static str = "recorder";
            fn new(_config: &Value, _host: Host) -> Result<Self, EngineError> {
                Ok(Self(Counters::default()))
            }
            fn counters(&self) -> &Counters {
                &self.0
            }
            fn counters_mut(&mut self) -> &mut Counters {
                &mut self.0
            }
            fn compress(
                &mut self,
                messages: Vec<Message>,
                _: &CompressRequest,
            ) -> Result<Vec<Message>, EngineError> {
                Ok(messages)
            }
            fn interests(&self) -> Vec<FactKind> {
                vec![FactKind::MessagesAppended]
            }
            fn observe(&mut self, _fact: &Fact) -> Result<(), EngineError> {
                CALLS.lock().unwrap().push("observe");
                Ok(())
            }
            fn observe_idle(&mut self) -> Result<(), EngineError> {
                CALLS.lock().unwrap().push("idle");
                Ok(())
            }
        }
        let settings = crate::config::Settings::defaults(std::path::Path::new("."));
        let services = crate::services::ServiceContext::from_settings(&settings);
        let engine = instantiate_linked::<Recorder>(
            &Value::Null,
            crate::services::host_services_for("recorder", &services),
        )
        .unwrap();
        let mut observers = Observers::new();
        observers
            .attach(EngineHandle::linked(
                engine,
                "recorder",
                crate::engine::EngineOrigin::BuiltIn,
            ))
            .unwrap();
        assert_eq!(*CALLS.lock().unwrap(), ["idle"], "told at attach");
        for text in ["a", "b", "c"] {
            observers.deliver(FactKind::MessagesAppended, || Fact {
                session_id: "s".into(),
                at_message: 0,
                body: FactBody::MessagesAppended {
                    messages: vec![Message::user(text)],
                },
            });
        }
        // A tool call hands everything over and is answered after the facts.
        observers.call_tool(0, "none", &Value::Null);
        // Then the queue is dry: the observer is told so, on its thread, without anything else
        // being published. A liveness wait, not a timing.
        let deadline = Instant::now() + Duration::from_secs(30);
        let calls = loop {
            let calls = CALLS.lock().unwrap().clone();
            if calls.len() >= 3 && calls.last() == Some(&"idle") {
                break calls;
            }
            assert!(Instant::now() < deadline, "never told: {calls:?}");
            std::thread::sleep(Duration::from_millis(5));
        };
        observers.close();
        assert_eq!(calls.first(), Some(&"idle"));
        assert!(calls.contains(&"observe"), "{calls:?}");
        assert_eq!(calls.last(), Some(&"idle"), "{calls:?}");
    }

    #[test]
    fn appends_of_another_session_are_never_merged_in() {
        let (_sender, bundles) = crossbeam_channel::bounded::<Vec<Job>>(1);
        let mut queue: VecDeque<Job> = [appended("t", "x")].into_iter().collect();
        let Job::Fact(first) = appended("s", "a") else {
            unreachable!()
        };
        let batch = merge_appends(first, &mut queue, &bundles, &Shared::default());
        assert_eq!(texts(&batch), ["a"]);
        assert_eq!(queue.len(), 1);
    }

    #[test]
    fn inserted_messages_are_those_the_input_did_not_hold() {
        let before = vec![
            Message::system("s"),
            Message::user("first request, long enough to share its first forty-eight characters"),
            Message::tool("c1", "output"),
            Message::user("last request"),
        ];
        let after = vec![
            Message::system("s"),
            Message::user("[CONTEXT COMPACTION] summary"),
            // Same start and length as a message of the input, another text.
            Message::user("first request, long enough to share its first forty-eight characterz"),
            Message::tool("c1", "[stand-in]"),
            Message::user("last request"),
        ];
        let inserted: Vec<String> = inserted_messages(&before, &after)
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        assert_eq!(
            inserted,
            [
                "[CONTEXT COMPACTION] summary",
                "first request, long enough to share its first forty-eight characterz",
                "[stand-in]"
            ]
        );
    }

    /// A gate a test engine blocks on until the test opens it at its end, so that the thread the
    /// session left behind can finish.
    struct Gate {
        open: Mutex<bool>,
        opened: std::sync::Condvar,
    }

    impl Gate {
        const fn new() -> Self {
            Self {
                open: Mutex::new(false),
                opened: std::sync::Condvar::new(),
            }
        }

        fn wait(&self) {
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }

        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }
    }

    /// Where a [`Stuck`] engine gets stuck: in `observe` ([`IN_OBSERVE`]), in `on_session_end`
    /// ([`AT_THE_END`]), or nowhere ([`SLOW`]: every `update_from_response` takes 20 ms).
    const IN_OBSERVE: usize = 0;
    const AT_THE_END: usize = 1;
    const SLOW: usize = 2;
    static GATES: [Gate; 2] = [Gate::new(), Gate::new()];

    struct Stuck<const WHERE: usize>(ctxhost_engine_abi::Counters);

    impl<const WHERE: usize> ctxhost_engine_abi::Engine for Stuck<WHERE> {
        const NAME: &'static str = "stuck";
        fn new(_: &Value, _: ctxhost_engine_abi::Host) -> Result<Self, ctxhost_engine_abi::EngineError> {
            Ok(Self(Default::default()))
        }
        fn counters(&self) -> &ctxhost_engine_abi::Counters {
            &self.0
        }
        fn counters_mut(&mut self) -> &mut ctxhost_engine_abi::Counters {
            &mut self.0
        }
        fn compress(
            &mut self,
            messages: Vec<Message>,
            _: &ctxhost_engine_abi::CompressRequest,
        ) -> Result<Vec<Message>, ctxhost_engine_abi::EngineError> {
            Ok(messages)
        }
        fn interests(&self) -> Vec<FactKind> {
            vec![FactKind::MessagesAppended]
        }
        fn observe(&mut self, _: &Fact) -> Result<(), ctxhost_engine_abi::EngineError> {
            if WHERE == IN_OBSERVE {
                GATES[IN_OBSERVE].wait();
            }
            Ok(())
        }
        fn update_from_response(&mut self, _: &Usage) {
            if WHERE == SLOW {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        fn on_session_end(&mut self, _: &str, _: &[Message]) -> Result<(), ctxhost_engine_abi::EngineError> {
            if WHERE == AT_THE_END {
                GATES[AT_THE_END].wait();
            }
            Ok(())
        }
    }

    fn observing<const WHERE: usize>(stall: Duration) -> Observers {
        let settings = crate::config::Settings::defaults(std::path::Path::new("."));
        let services = crate::services::ServiceContext::from_settings(&settings);
        let engine = ctxhost_engine_abi::linked::instantiate_linked::<Stuck<WHERE>>(
            &Value::Null,
            crate::services::host_services_for("stuck", &services),
        )
        .unwrap();
        let mut observers = Observers::with_timeout(stall);
        observers
            .attach(EngineHandle::linked(
                engine,
                "stuck",
                crate::engine::EngineOrigin::BuiltIn,
            ))
            .unwrap();
        observers
    }

    fn deliver_appends(observers: &mut Observers, count: usize) {
        for index in 0..count {
            observers.deliver(FactKind::MessagesAppended, || Fact {
                session_id: "s".into(),
                at_message: index as u64,
                body: FactBody::MessagesAppended {
                    messages: vec![Message::user(format!("message {index}"))],
                },
            });
        }
    }

    fn detached_for(summary: &ObserverSummary) -> &str {
        summary.detached.as_deref().expect("it was detached")
    }

    #[test]
    fn an_observer_stuck_in_observe_is_detached_and_the_session_stops_waiting_for_it() {
        let mut observers = observing::<IN_OBSERVE>(Duration::from_millis(200));
        // More than its queue holds: without a limit, the session would wait here forever.
        deliver_appends(&mut observers, QUEUE_CAPACITY * 3);
        let warnings = observers.newly_detached();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0]
                .starts_with("observer `stuck` detached: it finished no call in 0.2 s (stuck in `observe`;"),
            "{}",
            warnings[0]
        );
        // Its tools answer the reason at once, and nothing more is sent to it.
        let answer = observers.call_tool(0, "anything", &Value::Null);
        assert!(
            answer["error"].as_str().unwrap().contains("stuck in `observe`"),
            "{answer}"
        );
        deliver_appends(&mut observers, 10);
        observers.close();
        let summary = &observers.summaries()[0];
        assert!(
            detached_for(summary).contains("stuck in `observe`"),
            "{summary:?}"
        );
        assert_eq!(summary.facts, 0, "it finished no observe call");
        GATES[IN_OBSERVE].open();
    }

    #[test]
    fn a_queue_holds_its_calls_however_they_were_handed_over_one_at_a_time_as_serve_does() {
        // Each call takes its observer 20 ms; `serve` hands over what each request brought.
        let mut observers = observing::<SLOW>(Duration::from_secs(5));
        for _ in 0..20 {
            observers.lifecycle(Lifecycle::Usage(Usage::default()));
            observers.flush();
        }
        // Twenty calls are far from the 1,024 the queue holds: the session never waited (it did
        // once four bundles were queued, however small).
        let summary = &observers.summaries()[0];
        assert_eq!(summary.queue_wait_ms, 0.0, "{summary:?}");
        observers.close();
        assert!(observers.summaries()[0].detached.is_none());
    }

    #[test]
    fn an_observer_stuck_at_the_end_of_the_session_does_not_keep_it_from_ending() {
        let mut observers = observing::<AT_THE_END>(Duration::from_millis(200));
        deliver_appends(&mut observers, 3);
        observers.lifecycle(Lifecycle::SessionEnd("s".into(), Arc::new(Vec::new())));
        observers.close();
        let summary = &observers.summaries()[0];
        assert!(
            detached_for(summary).contains("stuck in `on_session_end`"),
            "{summary:?}"
        );
        assert_eq!(summary.facts, 3, "everything before the end was observed");
        GATES[AT_THE_END].open();
    }

    #[test]
    fn observers_are_named_once_the_active_engine_is_on_standby_and_a_slip_is_said() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let (config, flags) = (
            names(&["lcm", "masking", "lcm"]),
            names(&["telemetry", "lcm", "masking"]),
        );
        let mut warnings = Vec::new();
        let (attach, standby) = observer_names(
            &[("`context.observers`", &config), ("`--observer`", &flags)],
            "masking",
            |warning| warnings.push(warning),
        );
        assert_eq!(attach, ["lcm", "telemetry"]);
        assert_eq!(standby, ["masking"]);
        assert_eq!(
            warnings,
            ["`context.observers` names `lcm` twice; it observes once"]
        );
    }

    #[test]
    fn an_observer_that_took_over_the_context_is_sent_nothing_more() {
        let mut observers = observing::<SLOW>(Duration::from_secs(5));
        deliver_appends(&mut observers, 3);
        assert!(observers.retire("stuck", None));
        assert!(!observers.retire("stuck", None), "once");
        assert!(!observers.wants(FactKind::MessagesAppended));
        let mut built = false;
        observers.deliver(FactKind::MessagesAppended, || {
            built = true;
            Fact {
                session_id: "s".into(),
                at_message: 3,
                body: FactBody::MessagesAppended { messages: Vec::new() },
            }
        });
        assert!(!built, "no fact is built for it");
        observers.close();
        let summary = &observers.summaries()[0];
        assert!(summary.took_over, "{summary:?}");
        assert_eq!((summary.facts, &summary.detached), (3, &None));
    }

    #[test]
    fn a_slow_observer_that_keeps_finishing_calls_is_never_cut_off() {
        // Forty calls of 20 ms each: the session waits for them at the end about four times the
        // observer timeout in all, never that long for one call.
        let mut observers = observing::<SLOW>(Duration::from_millis(200));
        for _ in 0..40 {
            observers.lifecycle(Lifecycle::Usage(Usage::new(100, 10)));
        }
        observers.close();
        let summary = &observers.summaries()[0];
        assert_eq!(summary.detached, None, "{summary:?}");
    }
}
