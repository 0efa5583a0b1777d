//! Reading conversation transcripts into OpenAI-format messages, as a stream.
//!
//! One file per format. The format is detected from the start of the file ([`detect_format`]) or
//! forced. [`open_transcript`] gives a [`TranscriptStream`]: what the transcript says about its
//! session, up front where the format records it before the messages, and then the messages one
//! at a time, so that a multi-gigabyte transcript is never held in memory, let alone twice.
//! [`read_transcript`] collects the stream.
//!
//! Every reader:
//! - reports a record that is not what the format says as one error naming the file, the line,
//!   the column and the byte offset;
//! - keeps the fields a message carries that OpenAI's format has no place for in
//!   [`Message::extra`], in their order, and the session's own fields in [`TranscriptMeta::extra`];
//! - leaves out records that are not part of what the model was sent (UI events, subagents'
//!   records, file snapshots…) and counts them in [`TranscriptMeta::skipped`];
//! - stops at a malformed record by default; with [`BadRecords::Skip`] a record that was read
//!   whole but is not what the format says is left out, with a warning naming its line, and
//!   counted in [`TranscriptMeta::bad_records_skipped`] (a break in the JSON structure itself
//!   still stops the stream: nothing after it can be placed);
//! - repairs the tool pairing of a transcript that is broken by itself, the way the compressor
//!   repairs pairs (kit's `repair_tool_pairs`): a result that answers no call is dropped, a call
//!   never answered gets a stub result, a `tool_call_id` given as a number is read as its text,
//!   an empty call id gets one, a call id given twice in a message loses its second call, a call
//!   id reused by a later message gets a suffix; each repair is one warning naming the record's
//!   line (see `pairing`), so that what the engine is given, and what `--out` writes, is a
//!   sequence a model API accepts; a system, user or tool message without content gets empty
//!   text, with a warning too;
//! - says, in a warning, when the transcript holds no message at all (`[]`, a file of interface
//!   records only): the replay is empty, which is no error, but worth a word;
//! - lists what is still not a valid sequence after that (none, barring a bug) in
//!   [`TranscriptMeta::sequence_problems`] and [`TranscriptMeta::warnings`] once the stream is
//!   exhausted, so that the host can tell an engine's mistakes from the input's own.
//!
//! Decisions per format (the details are in each reader's file):
//! - **OpenAI messages**: a JSON array, `{"messages": […]}` whose other keys go to the meta
//!   (`model`, `context_length`, `id`/`session_id` are understood), or JSONL with one message a
//!   line. Hermes's per-session transcripts are the last, with a first `session_meta` line that
//!   goes to the meta. OpenAI's legacy function calling (`function_call` on an assistant message,
//!   `role: "function"` results) is read as tool calls under ids made from the record's place,
//!   said once in a warning.
//! - **Hermes session export**: one session a line. The first session is read unless
//!   [`ReadOptions::session`] names another (the first whose id starts with it); when the file
//!   holds more, a warning says how many and which was read. The session's `system_prompt`
//!   becomes the system message when its messages have none.
//! - **Claude Code**: `tool_use` blocks become `tool_calls`, `tool_result` blocks `tool` messages,
//!   `thinking` blocks go to the message's `"thinking"` key, records of one API message (same
//!   `message.id`) become one assistant message, whose `"usage"` key holds the usage in the
//!   runner's field names. Sidechain records are a subagent's conversation, not the main one:
//!   left out and counted. `summary` records are the titles Claude Code shows in its resume list,
//!   never sent to the model: left out, their text kept in the meta.
//! - **Codex rollout**: `function_call`s of one response become one assistant message's
//!   `tool_calls`, `function_call_output`s `tool` messages, `reasoning` goes to the next assistant
//!   message's `"reasoning"` key, a `token_count` event becomes the `"usage"` of the assistant
//!   message of the response it closes.
//! - **SWE-agent trajectory**: the `history` list, with `tool_call_ids` mapped to `tool_call_id`;
//!   `trajectory` repeats it step by step and is skipped without being held.
//! - **OpenHands event stream**: a JSON list of events (or `{"trajectory": […]}`): the model's
//!   response in an action's `tool_call_metadata` becomes one assistant message with its tool
//!   calls, an observation answering a call a `tool` message, messages of the user and the agent
//!   user and assistant messages; the interface's events are left out and counted.
//! - **Pretty-printed JSON** is read like compact JSON by every JSON format: the readers walk the
//!   document value by value, whatever its line breaks.
//! - **Earlier compactions** (Claude Code's `isCompactSummary` record, Codex's `compacted`): the
//!   host replays the original conversation so that the engine under test does the compacting; a
//!   compaction the recording agent made is the output of *its* engine, not input. Its summary is
//!   left out of the messages and listed in [`TranscriptMeta::compactions`] with where it
//!   happened. The files keep the messages from before the compaction, so nothing is lost; a file
//!   that starts with such a summary (a session continued from another file) is read with a
//!   warning that what came before is elsewhere.

use std::{
    collections::{BTreeMap, VecDeque},
    fmt,
    fs::File,
    io::{BufReader, Read},
    iter::FusedIterator,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use ctxhost_engine_abi::{Content, Message, Role};
use ctxhost_engine_kit::sequence::SequenceProblem;
use serde_json::{Map, Value};

mod by_keys;
mod claude_code;
mod codex;
mod cursor;
mod detect;
mod driver;
mod hermes;
mod legacy;
mod lines;
mod openai;
mod openhands;
mod pairing;
mod parse_ahead;
mod read_ahead;
mod sequence;
mod swe_agent;

pub use detect::{detect_format, DETECTION_PREFIX_BYTES};
pub use read_ahead::ReadAhead;

use pairing::PairRepair;
use sequence::SequenceChecker;

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Format {
    /// A JSON array of OpenAI messages.
    OpenaiArray,
    /// A JSON object with a `messages` array and any other keys.
    OpenaiObject,
    /// One OpenAI message per line.
    OpenaiJsonl,
    /// Hermes Agent's session export: one session a line, each with its `messages`.
    Hermes,
    /// Claude Code's session log (`~/.claude/projects/…/<session>.jsonl`).
    ClaudeCode,
    /// Codex CLI's rollout (`~/.codex/sessions/…/rollout-….jsonl`).
    Codex,
    /// A SWE-agent trajectory (`.traj`): a JSON object with a `history` list.
    SweAgent,
    /// An OpenHands event stream: a JSON list of events (or `{"trajectory": […]}`).
    Openhands,
}

impl Format {
    /// The name `--format` takes.
    pub fn flag_name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|value| value.get_name().to_owned())
            .unwrap_or_default()
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenaiArray => "OpenAI messages (JSON array)",
            Self::OpenaiObject => "OpenAI messages (JSON object)",
            Self::OpenaiJsonl => "OpenAI messages (JSONL)",
            Self::Hermes => "Hermes session export",
            Self::ClaudeCode => "Claude Code session (JSONL)",
            Self::Codex => "Codex rollout (JSONL)",
            Self::SweAgent => "SWE-agent trajectory",
            Self::Openhands => "OpenHands event stream (JSON)",
        })
    }
}

/// How to read a transcript.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The format; detected from the content when `None`.
    pub format: Option<Format>,
    /// For a file holding several sessions (Hermes exports): the session to read, the first whose
    /// id starts with this. `None` reads the first session.
    pub session: Option<String>,
    /// What to do with a malformed record.
    pub bad_records: BadRecords,
}

/// What a reader does with a malformed record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BadRecords {
    /// Stop there: the error names the file and the line.
    #[default]
    Stop,
    /// Leave out a record that was read whole, with a warning naming its line, and go on. A break
    /// in the JSON structure itself still stops.
    Skip,
}

/// What a transcript says about its session besides the messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TranscriptMeta {
    /// The model, when recorded.
    pub model: Option<String>,
    /// The window, when recorded (Hermes's fixtures carry it, Codex's token counts too).
    pub context_length: Option<u64>,
    /// The session's id, when recorded.
    pub session_id: Option<String>,
    /// What is odd about the transcript, one line each: the input's own sequence problems, a
    /// session chosen among several, branches read in file order…
    pub warnings: Vec<String>,
    /// The transcript's own sequence problems (complete once the stream is exhausted): the host
    /// holds an engine responsible only for problems the input did not have.
    pub sequence_problems: Vec<SequenceProblem>,
    /// Records left out because they are not part of what the model was sent, by kind.
    pub skipped: BTreeMap<String, u64>,
    /// Compactions the recording agent made, whose summaries are left out of the messages.
    pub compactions: Vec<RecordedCompaction>,
    /// Malformed records left out ([`BadRecords::Skip`]); each has its warning.
    pub bad_records_skipped: u64,
    /// Tool pairing repaired: results dropped, stub results inserted, ids read as text; each has
    /// its warning.
    pub pairing_repairs: u64,
    /// The session's other fields, as recorded (a Hermes session's token counters, Codex's
    /// `session_meta`, a SWE-agent trajectory's `info`…).
    pub extra: Map<String, Value>,
}

impl TranscriptMeta {
    /// Counts one record of `kind` left out.
    pub(crate) fn skip(&mut self, kind: impl Into<String>) {
        *self.skipped.entry(kind.into()).or_default() += 1;
    }

    /// Adds a warning, and logs it (at debug level: the command line shows each warning to the
    /// user once, as it comes; see [`TranscriptStream::meta`]).
    pub(crate) fn warn(&mut self, path: &Path, warning: String) {
        tracing::debug!("{}: {warning}", path.display());
        self.warnings.push(warning);
    }
}

/// A compaction the agent that recorded the transcript made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedCompaction {
    /// The line of the record holding its summary.
    pub line: usize,
    /// How many messages of the stream come before it.
    pub messages_before: usize,
    /// The summary the agent's engine wrote, which the model saw in place of what came before.
    pub summary: String,
}

/// A transcript read into messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Transcript {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Session details it records.
    pub meta: TranscriptMeta,
}

/// A transcript that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("{}: cannot read the transcript: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record that is not what the format says.
    #[error(
        "{}:{line}{}: {message}{}",
        path.display(),
        column.map(|c| format!(":{c}")).unwrap_or_default(),
        offset.map(|o| format!(" (byte {o})")).unwrap_or_default()
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in bytes), when known.
        column: Option<usize>,
        /// 0-based byte offset in the file, when known.
        offset: Option<u64>,
        /// What is wrong.
        message: String,
        /// Whether the record was read whole, so that reading can go on after it
        /// ([`BadRecords::Skip`]); false for a break in the JSON structure.
        skippable: bool,
    },
    /// `--format` names a format the file does not look like.
    #[error(
        "`{}` does not look like {forced}; {}",
        path.display(),
        match looks_like {
            Some(format) => format!("it looks like {format} (pass --format {})", format.flag_name()),
            None => reason.clone(),
        }
    )]
    NotThatFormat {
        /// The file.
        path: PathBuf,
        /// The format asked for.
        forced: Format,
        /// The format its start shows, when it shows one.
        looks_like: Option<Format>,
        /// What was seen, when no format was recognised.
        reason: String,
    },
    /// The content matches no format this host reads.
    #[error("{}: not a transcript format ctxhost reads ({reason})", path.display())]
    Unrecognised {
        /// The file.
        path: PathBuf,
        /// What was seen.
        reason: String,
    },
    /// The session asked for is not in the file.
    #[error("{}: no session whose id starts with `{wanted}` (the file holds {})", path.display(), list_ids(seen))]
    NoSuchSession {
        /// The file.
        path: PathBuf,
        /// What was asked for.
        wanted: String,
        /// The ids of the sessions the file holds (at most the first 20).
        seen: Vec<String>,
    },
}

fn list_ids(ids: &[String]) -> String {
    if ids.is_empty() {
        return "no session".to_owned();
    }
    let quoted: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
    quoted.join(", ")
}

impl TranscriptError {
    pub(crate) fn read(path: &Path, source: std::io::Error) -> Self {
        Self::Read {
            path: path.to_owned(),
            source,
        }
    }
}

/// Opens the transcript at `path` as a stream, detecting its format unless `format` forces one.
pub fn open_transcript(path: &Path, format: Option<Format>) -> Result<TranscriptStream, TranscriptError> {
    open_transcript_with(
        path,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Opens the transcript at `path` (`-`: the standard input) as a stream, as `options` say.
///
/// Detection reads only the first [`DETECTION_PREFIX_BYTES`] bytes; a forced format is checked
/// against them too, so that a file of another format is refused up front rather than read as
/// junk. The stream is primed: it reads
/// ahead until its first assistant message (at most [`PRIME_MESSAGES`] messages), so that what the
/// format records before or around the first model call — model, window, session id — is in
/// [`TranscriptStream::meta`] before the first message is taken (an assistant message with calls
/// comes once its results have: the pairing repair holds it until then). A malformed record in
/// that stretch fails here, unless [`ReadOptions::bad_records`] skips it.
pub fn open_transcript_with(path: &Path, options: &ReadOptions) -> Result<TranscriptStream, TranscriptError> {
    if is_stdin(path) {
        return open_transcript_from(path, std::io::stdin(), 0, options);
    }
    let file = File::open(path).map_err(|source| TranscriptError::read(path, source))?;
    // A pipe's or a FIFO's length is none: 0, which the progress bar takes for unknown.
    let bytes_total = file
        .metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map_or(0, |metadata| metadata.len());
    open_transcript_from(path, file, bytes_total, options)
}

/// Whether `path` is `-`, which names the standard input (as `--out -` names the standard
/// output).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens the transcript read from `input`, as `options` say; `path` names it in every message and
/// `bytes_total` is its size (0 when unknown).
///
/// The file is read once, from start to end: detection takes its start from `input` and the
/// reader is given those bytes back before the rest, so that a pipe or a FIFO (`/dev/stdin`,
/// `<(zcat t.jsonl.gz)`), which cannot be opened again or rewound, reads as a file does.
pub fn open_transcript_from(
    path: &Path,
    input: impl Read + Send + 'static,
    bytes_total: u64,
    options: &ReadOptions,
) -> Result<TranscriptStream, TranscriptError> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let mut input = CountingReader {
        inner: input,
        read: Arc::clone(&bytes_read),
    };
    let prefix = detect::read_prefix(path, &mut input)?;
    let format = match options.format {
        Some(format) => {
            detect::check_forced(path, &prefix, format)?;
            format
        }
        None => detect::detect_file(path, &prefix)?,
    };
    let input = std::io::Cursor::new(prefix).chain(input);
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, input);
    stream_from(path, format, options, reader, (bytes_read, bytes_total))
}

/// The stream of `format` over `reader`, primed; `bytes` counts what was read of how much.
fn stream_from<R: std::io::BufRead + Send + 'static>(
    path: &Path,
    format: Format,
    options: &ReadOptions,
    reader: R,
    (bytes_read, bytes_total): (Arc<AtomicU64>, u64),
) -> Result<TranscriptStream, TranscriptError> {
    let source: Box<dyn Source> = match format {
        Format::OpenaiArray => Box::new(openai::ArrayReader::new(path, reader)),
        Format::OpenaiObject => Box::new(openai::ObjectReader::new(path, reader)),
        Format::OpenaiJsonl => Box::new(openai::JsonlReader::new(path, reader)),
        Format::Hermes => Box::new(hermes::HermesReader::new(path, reader, options.session.clone())),
        Format::ClaudeCode => Box::new(claude_code::ClaudeCodeReader::new(path, reader)),
        Format::Codex => Box::new(codex::CodexReader::new(path, reader)),
        Format::SweAgent => Box::new(swe_agent::SweAgentReader::new(path, reader)),
        Format::Openhands => Box::new(openhands::OpenhandsReader::new(path, reader)),
    };
    let mut stream = TranscriptStream {
        path: path.to_owned(),
        format,
        meta: TranscriptMeta::default(),
        source,
        primed: VecDeque::new(),
        repair: PairRepair::default(),
        repaired: VecDeque::new(),
        checker: SequenceChecker::default(),
        messages: 0,
        bad_records: options.bad_records,
        state: StreamState::Reading,
        bytes_read,
        bytes_total,
    };
    stream.prime()?;
    if format != Format::Hermes {
        if let Some(wanted) = &options.session {
            check_single_session(&mut stream, wanted)?;
        }
    }
    Ok(stream)
}

/// `--session` given for a format that holds one session: its id, when recorded, must be the one
/// asked for (as a Hermes export's would); without one, the session is read and a warning says
/// that `--session` chose nothing.
fn check_single_session(stream: &mut TranscriptStream, wanted: &str) -> Result<(), TranscriptError> {
    match stream.meta.session_id.clone() {
        Some(id) if id.starts_with(wanted) => Ok(()),
        Some(id) => Err(TranscriptError::NoSuchSession {
            path: stream.path.clone(),
            wanted: wanted.to_owned(),
            seen: vec![id],
        }),
        None => {
            let warning = format!(
                "--session `{wanted}` chose nothing: this file ({}) holds one session and records no id; it is read",
                stream.format
            );
            stream.meta.warn(&stream.path, warning);
            Ok(())
        }
    }
}

/// Reads the whole transcript at `path`, detecting its format unless `format` forces one.
pub fn read_transcript(path: &Path, format: Option<Format>) -> Result<Transcript, TranscriptError> {
    read_transcript_with(
        path,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads the whole transcript at `path`, as `options` say.
pub fn read_transcript_with(path: &Path, options: &ReadOptions) -> Result<Transcript, TranscriptError> {
    let mut stream = open_transcript_with(path, options)?;
    let messages = stream.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(Transcript {
        path: stream.path,
        format: stream.format,
        messages,
        meta: stream.meta,
    })
}

/// How many messages priming reads ahead at most, looking for the first assistant message.
pub const PRIME_MESSAGES: usize = 256;

const READ_BUFFER_BYTES: usize = 256 * 1024;

/// A message and the line of the record it came from (its first record, when several make it),
/// with the record's column where a reader knows it: in a JSON document written on one line,
/// every record is on line 1.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Located {
    pub message: Message,
    pub line: usize,
    pub column: Option<usize>,
    /// The line of each of the message's tool calls, where a message gathered from several
    /// records (Claude Code writes each block of a response on a line of its own) has calls on
    /// other lines than its first; empty when every call is on `line`.
    pub call_lines: Vec<usize>,
}

impl Located {
    pub(crate) fn new(message: Message, line: usize) -> Self {
        Self {
            message,
            line,
            column: None,
            call_lines: Vec::new(),
        }
    }

    /// A message whose record starts at `at`.
    fn at(message: Message, at: cursor::Position) -> Self {
        Self {
            column: Some(at.column),
            ..Self::new(message, at.line)
        }
    }

    /// Where the record is, for a warning: `line L` or `line L, column C`.
    pub(crate) fn place(&self) -> String {
        place(self.line, self.column)
    }

    /// Where the record of the tool call with `id` is, for a warning about that call.
    pub(crate) fn call_place(&self, id: &str) -> String {
        let index = self
            .message
            .tool_calls
            .iter()
            .flatten()
            .position(|call| call.id == id);
        match index.and_then(|index| self.call_lines.get(index)) {
            Some(&line) if line != self.line => place(line, None),
            _ => self.place(),
        }
    }
}

/// `line L`, or `line L, column C` when the column is known.
pub(super) fn place(line: usize, column: Option<usize>) -> String {
    match column {
        Some(column) => format!("line {line}, column {column}"),
        None => format!("line {line}"),
    }
}

/// One format's reader: the next message, with what it learns along the way put in the meta.
trait Source: Send {
    /// The next message, or `None` at the end of the transcript.
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError>;
}

/// Where a stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamState {
    Reading,
    /// The source is exhausted; the repaired messages are still being handed out.
    Draining,
    /// Everything is handed out and the sequence problems are reported.
    Done,
    /// An error was returned: nothing follows.
    Failed,
}

/// A transcript being read: its meta and, as an iterator, its messages.
///
/// The iterator stops after the first error. [`TranscriptStream::meta`] grows as the stream is
/// read: warnings and sequence problems are complete once it has returned `None`.
pub struct TranscriptStream {
    path: PathBuf,
    format: Format,
    meta: TranscriptMeta,
    source: Box<dyn Source>,
    primed: VecDeque<Message>,
    repair: PairRepair,
    /// Messages whose pairing is settled, waiting to be handed out.
    repaired: VecDeque<Message>,
    checker: SequenceChecker,
    /// Messages handed out so far.
    messages: usize,
    bad_records: BadRecords,
    state: StreamState,
    /// Bytes of the file read so far (in buffer-sized steps), for a progress bar.
    bytes_read: Arc<AtomicU64>,
    bytes_total: u64,
}

/// A reader that counts the bytes it reads.
struct CountingReader<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.read.fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

impl fmt::Debug for TranscriptStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TranscriptStream")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("meta", &self.meta)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl TranscriptStream {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// What the transcript has said about its session so far. Its warnings grow as the stream is
    /// read: a caller showing them as they come keeps how many it has shown.
    pub fn meta(&self) -> &TranscriptMeta {
        &self.meta
    }

    /// Bytes of the file read so far: how far the stream has got, to within the read buffer
    /// (256 KiB).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The file's size in bytes when it was opened.
    pub fn bytes_total(&self) -> u64 {
        self.bytes_total
    }

    /// The meta, once the stream is no longer needed.
    pub fn into_meta(self) -> TranscriptMeta {
        self.meta
    }

    fn prime(&mut self) -> Result<(), TranscriptError> {
        while self.primed.len() < PRIME_MESSAGES {
            match self.pull()? {
                Some(message) => {
                    let is_assistant = message.role == Role::Assistant;
                    self.primed.push_back(message);
                    if is_assistant {
                        break;
                    }
                }
                None => break,
            }
        }
        Ok(())
    }

    fn pull(&mut self) -> Result<Option<Message>, TranscriptError> {
        loop {
            if let Some(message) = self.repaired.pop_front() {
                self.checker.check(&message);
                self.messages += 1;
                return Ok(Some(message));
            }
            match self.state {
                StreamState::Reading => {}
                StreamState::Draining => {
                    self.state = StreamState::Done;
                    if self.messages == 0 {
                        // Exit 0 and "replayed 0 messages" alone read as a replay that worked.
                        let warning =
                            "the transcript holds no messages: there is nothing to replay".to_owned();
                        self.meta.warn(&self.path, warning);
                    }
                    self.report_sequence_problems();
                    return Ok(None);
                }
                StreamState::Done | StreamState::Failed => return Ok(None),
            }
            match self.source.next_message(&mut self.meta) {
                Ok(Some(mut located)) => {
                    fill_null_content(&mut located, &self.path, &mut self.meta);
                    self.repair
                        .take(located, &self.path, &mut self.meta, &mut self.repaired)
                }
                Ok(None) => {
                    self.repair.finish(&self.path, &mut self.meta, &mut self.repaired);
                    self.state = StreamState::Draining;
                }
                Err(TranscriptError::Malformed {
                    line,
                    column,
                    offset,
                    message,
                    skippable: true,
                    ..
                }) if self.bad_records == BadRecords::Skip => {
                    self.meta.bad_records_skipped += 1;
                    let place = place(line, column);
                    let byte = offset.map(|o| format!(" (byte {o})")).unwrap_or_default();
                    let warning = format!("{place}: skipped a malformed record: {message}{byte}");
                    self.meta.warn(&self.path, warning);
                }
                Err(error) => {
                    self.state = StreamState::Failed;
                    return Err(error);
                }
            }
        }
    }

    fn report_sequence_problems(&mut self) {
        const LISTED: usize = 10;
        let problems = std::mem::take(&mut self.checker).finish();
        if let Some(first) = problems.first() {
            tracing::debug!(
                "{}: the transcript itself is not a valid sequence ({} problems, the first: {first}); it is passed through as it is",
                self.path.display(),
                problems.len()
            );
        }
        let listed = problems.iter().take(LISTED);
        self.meta.warnings.extend(
            listed.map(|problem| format!("the transcript itself is not a valid sequence: {problem}")),
        );
        if problems.len() > LISTED {
            self.meta.warnings.push(format!(
                "… and {} more sequence problems",
                problems.len() - LISTED
            ));
        }
        self.meta.sequence_problems = problems;
    }
}

impl Iterator for TranscriptStream {
    type Item = Result<Message, TranscriptError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(message) = self.primed.pop_front() {
            return Some(Ok(message));
        }
        self.pull().transpose()
    }
}

impl FusedIterator for TranscriptStream {}

/// A system, user or tool message without content (`null`, or no `content` key) gets empty text,
/// with a warning naming its line: model APIs refuse such a message ("expected a string or an
/// array, got null"), and `--out` must write what they accept. An assistant message may go
/// without: its tool calls say what it did.
fn fill_null_content(located: &mut Located, path: &Path, meta: &mut TranscriptMeta) {
    let role = located.message.role;
    if role == Role::Assistant || !matches!(located.message.content, Content::Null) {
        return;
    }
    located.message.content = Content::Text(String::new());
    let warning = format!(
        "{}: a {} message with no content (`null`); it is read as empty text, which a model API accepts",
        located.place(),
        role.as_str()
    );
    meta.warn(path, warning);
}

/// Reads OpenAI's `developer` role (the chat API's newer name for the system instructions, for o1
/// and later models) as `system`: engines and plugins know four roles, and a system message is
/// what it is. The warning to give, naming `place`, when it was one.
pub(crate) fn read_developer_role(fields: &mut Map<String, Value>, place: &str) -> Option<String> {
    if fields.get("role").and_then(Value::as_str) != Some("developer") {
        return None;
    }
    fields.insert("role".to_owned(), Value::String("system".to_owned()));
    Some(format!(
        "{place}: a `developer` message (OpenAI's newer name for system instructions) is read as a system message"
    ))
}

/// Content from content parts: none is `null`, one text part is plain text, anything else stays
/// a list of parts.
pub(crate) fn content_from_parts(mut parts: Vec<Value>) -> Content {
    if parts.is_empty() {
        return Content::Null;
    }
    if let [part] = parts.as_mut_slice() {
        // Only a bare `{"type": "text", "text": …}`: a part with more keys (citations, cache
        // markers) stays a part, so that nothing is lost.
        let is_bare_text = part.get("type").and_then(Value::as_str) == Some("text")
            && part.as_object().is_some_and(|fields| fields.len() == 2);
        if let (true, Some(Value::String(text))) = (is_bare_text, part.get_mut("text")) {
            return Content::Text(std::mem::take(text));
        }
    }
    Content::Parts(parts)
}

/// A JSON value as text: strings as they are, anything else as JSON.
pub(crate) fn value_as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
