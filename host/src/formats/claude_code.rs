//! Claude Code's session log: JSONL records with `type` (`user`, `assistant`, `system`,
//! `summary`, `file-history-snapshot`…), `uuid`/`parentUuid`, `isSidechain`, and in `message` an
//! Anthropic-style message whose `content` is text or blocks.
//!
//! - `user` and `assistant` records are the conversation. `text` blocks become text content,
//!   `tool_use {id, name, input}` a tool call whose arguments are the JSON text of `input`,
//!   `tool_result {tool_use_id, content}` a `tool` message (a list content stays a list of parts;
//!   `is_error` is kept, and written `false` where Claude Code left it out: it flags every
//!   failure). Tool results come first when a user record also holds text.
//! - `thinking` and `redacted_thinking` blocks are kept aside, in the message's `"thinking"` key:
//!   they are the model's own, never sent back as content. Other blocks (images, server tools'
//!   blocks) stay content parts.
//! - Claude Code writes one record per content block, so consecutive assistant records of one API
//!   message (the same `message.id`) become one assistant message, even with the results of its
//!   first tool calls written between them. Its `"usage"` key holds the last record's usage in
//!   the runner's names: prompt tokens are input + cache reads + cache writes, as the model was
//!   charged for them. The API message's other fields are kept under `"message"`, the record's
//!   (`uuid`, `parentUuid`, `timestamp`, `cwd`…) at the top level.
//! - A record's `toolUseResult` is Claude Code's copy of a tool's output for its own interface
//!   (a command's stdout again, an edited file's whole original): the model never saw it, and it
//!   is left out, unread. Kept, it doubled every tool result in memory and in every engine's input.
//! - An `attachment` record is what Claude Code adds to the next request besides the user's
//!   words. The types whose text the model reads become `user` messages in place: a prompt typed
//!   while the model worked (`queued_command` from a person) the user's own; an @-mentioned
//!   `file`, CLAUDE.md (`nested_memory`), a hook's `hook_additional_context` and a
//!   `skill_listing` meta messages (`isMeta`), the attachment's other fields kept. A record's
//!   `rendered` text, what Claude Code sent for it, is read before its fields. Other types are
//!   left out, counted by type.
//! - `isSidechain` records are a subagent's conversation, not the main one: left out, counted.
//!   A file whose first conversation record is a sidechain is a subagent's own log (Claude Code
//!   writes each subagent's conversation to an `agent-<id>.jsonl`, every record a sidechain): its
//!   sidechain records are read as the subagent's conversation, with one warning, and a record
//!   that is not one (none in such a file) is left out and counted, with a warning.
//! - An assistant record Claude Code wrote itself (`isApiErrorMessage`, the model `<synthetic>`:
//!   "API Error: 529 …" when a request failed) was never the model's output, and Claude Code does
//!   not send it back: left out, counted. Replayed, it was a model call with a recorded prompt of
//!   0 tokens.
//! - A `user` record with `isCompactSummary` is the summary of a compaction Claude Code made: left
//!   out, listed in [`TranscriptMeta::compactions`] (see the module docs of `formats`).
//! - `summary` records are the titles Claude Code shows in its resume list (`leafUuid` names the
//!   message they describe); the model never saw them. Left out; their text is kept in the meta's
//!   `"summaries"`. `system` records (compaction boundaries, hook output, API errors) are the
//!   interface's log, not messages: left out, counted by subtype.
//! - Records are read in file order. A user or assistant record whose `parentUuid` is neither the
//!   conversation record before it nor an interface record since marks a branch (a rewind, an
//!   edited prompt): the count is reported as a warning, since the abandoned branch is read too.
//!   Parallel tool calls are no branch: Claude Code 2.x writes a response's calls one record each
//!   and links each result to the record of its own call (`sourceToolAssistantUUID`), not to the
//!   record before it, so a result whose parent is any record of the last API message continues
//!   the chain. A record refused as malformed (left out under `--skip-bad-records`) is never read,
//!   so its `uuid` is unknown: a record naming an unknown parent after one is no branch, since
//!   that parent may well be the refused record.
//!   Rebuilding the active branch would need the whole file's `uuid` links before the first
//!   message; file order keeps the reader a single pass.

use std::{io::BufRead, path::Path};

use ctxhost_engine_abi::{Content, Message, Role, ToolCall};
use serde_json::{Map, Value};

mod attachment;
mod record;

use attachment::{attachment_text, rendered_text, AttachmentText};
use record::{ApiMessage, Block, Body, Fields, Record};

use super::{
    content_from_parts,
    driver::{next_queued, Queue, QueuedRecords},
    lines::{JsonLines, LineAt},
    pairing::{id_as_text, report_id_fixes},
    value_as_text, Located, RecordedCompaction, Source, TranscriptError, TranscriptMeta,
};

pub(super) struct ClaudeCodeReader<R> {
    lines: JsonLines<R, Record>,
    queue: Queue,
    /// Whose conversation the file holds.
    log: Log,
    turn: Option<Turn>,
    /// The last conversation record, and the interface's records since.
    last_uuid: Option<String>,
    between: Vec<String>,
    /// The last assistant API message's `message.id`, and the uuids of its records.
    api_message: Option<String>,
    api_records: Vec<String>,
    /// Records that do not continue the chain, and the line of the first.
    branches: u64,
    first_branch_line: Option<usize>,
    /// Records refused so far (their error skipped, or the read would have stopped), and how many
    /// had been when the records a parent may be (`last_uuid`, `between`, `api_records`) began.
    refused: u64,
    refused_before_chain: u64,
    /// Ids of the wrong type read as text in the last record, for warnings.
    id_fixes: Vec<String>,
}

/// Whose conversation the file holds, as its first conversation record tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Log {
    /// No conversation record read yet.
    Unknown,
    /// A session's: its sidechain records are its subagents' conversations, left out.
    Session,
    /// A subagent's own (`agent-<id>.jsonl`): its sidechain records are its conversation.
    Subagent,
}

/// What a record is to the `parentUuid` chain.
#[derive(Clone, Copy, Debug)]
enum Link<'a> {
    /// The interface's, or left out: it may sit in the chain between two conversation records.
    Interface,
    /// A record of the assistant API message with this `message.id`.
    Assistant(Option<&'a str>),
    /// A user record answering tool calls.
    Results,
    /// Any other user record.
    Prompt,
}

impl<'a> Link<'a> {
    fn of(kind: &str, message: Option<&'a ApiMessage>, synthetic: bool) -> Self {
        match kind {
            "assistant" if !synthetic => {
                Link::Assistant(message.and_then(|m| m.fields.get("id")).and_then(Value::as_str))
            }
            "user" if message.is_some_and(holds_results) => Link::Results,
            "user" => Link::Prompt,
            _ => Link::Interface,
        }
    }
}

/// Whether a user message holds a `tool_result` block.
fn holds_results(message: &ApiMessage) -> bool {
    match &message.content {
        Some(Body::Blocks(blocks)) => blocks
            .iter()
            .filter_map(Block::fields)
            .any(|block| block_type(block) == Some("tool_result")),
        _ => false,
    }
}

/// How the sidechain records of a session's log are counted among the records left out.
const SIDECHAIN: &str = "sidechain (a subagent's record)";

/// How the main session's records in a subagent's log are counted among the records left out.
const NOT_THE_SUBAGENTS: &str = "main session's record in a subagent's log";

/// An assistant message being gathered from its records, with the results that arrived for it.
struct Turn {
    /// The line of its first record.
    line: usize,
    message_id: Option<String>,
    parts: Vec<Value>,
    calls: Vec<ToolCall>,
    /// The line of each call's record.
    call_lines: Vec<usize>,
    thinking: Vec<Value>,
    /// The first record's fields.
    fields: Fields,
    /// The API message's fields besides role and content, from the last record.
    message_fields: Fields,
    merged_uuids: Vec<Value>,
    /// The results, with their records' lines.
    results: Vec<(Message, usize)>,
    /// Attachments written while calls were unanswered, which follow the results.
    after_results: Vec<(Message, usize)>,
}

impl Turn {
    fn answers_all(&self, results: &[Message]) -> bool {
        results.iter().all(|result| {
            let id = result.tool_call_id.as_deref();
            let called = self.calls.iter().any(|call| Some(call.id.as_str()) == id);
            let answered = self
                .results
                .iter()
                .any(|(seen, _)| seen.tool_call_id.as_deref() == id);
            called && !answered
        })
    }

    /// Whether a call of the message has no result yet.
    fn awaits_results(&self) -> bool {
        self.calls.iter().any(|call| {
            !self
                .results
                .iter()
                .any(|(result, _)| result.tool_call_id.as_deref() == Some(call.id.as_str()))
        })
    }

    fn into_messages(self) -> impl Iterator<Item = Located> {
        let usage = self.message_fields.get("usage").and_then(usage_in_runner_terms);
        // The keys added to the first record's, so that its map is sized once.
        let added = [
            usage.is_some(),
            !self.message_fields.is_empty(),
            !self.thinking.is_empty(),
            !self.merged_uuids.is_empty(),
        ];
        let mut extra = self.fields.into_map(added.iter().filter(|added| **added).count());
        if let Some(usage) = usage {
            extra.insert("usage".to_owned(), usage);
        }
        if !self.message_fields.is_empty() {
            extra.insert(
                "message".to_owned(),
                Value::Object(self.message_fields.into_map(0)),
            );
        }
        if !self.thinking.is_empty() {
            extra.insert("thinking".to_owned(), Value::Array(self.thinking));
        }
        if !self.merged_uuids.is_empty() {
            extra.insert("merged_uuids".to_owned(), Value::Array(self.merged_uuids));
        }
        let assistant = Message {
            role: Role::Assistant,
            content: content_from_parts(self.parts),
            tool_calls: (!self.calls.is_empty()).then_some(self.calls),
            tool_call_id: None,
            name: None,
            extra,
        };
        let assistant = Located {
            call_lines: self.call_lines,
            ..Located::new(assistant, self.line)
        };
        let located = |(message, line)| Located::new(message, line);
        std::iter::once(assistant)
            .chain(self.results.into_iter().map(located))
            .chain(self.after_results.into_iter().map(located))
    }
}

/// Anthropic's usage in the names the runner reads (`recorded_usage`).
pub(super) fn usage_in_runner_terms(usage: &Value) -> Option<Value> {
    let input = usage.get("input_tokens")?.as_u64()?;
    let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = field("cache_read_input_tokens");
    let cache_write = field("cache_creation_input_tokens");
    let counts = [
        ("prompt_tokens", input + cache_read + cache_write),
        ("completion_tokens", field("output_tokens")),
        ("cache_read_tokens", cache_read),
        ("cache_write_tokens", cache_write),
    ];
    // Sized once, as every assistant message keeps it (`json!` grows a map from empty).
    let mut terms = Map::with_capacity(counts.len());
    for (name, count) in counts {
        terms.insert(name.to_owned(), Value::from(count));
    }
    Some(Value::Object(terms))
}

impl<R: BufRead> ClaudeCodeReader<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            lines: JsonLines::new(path, reader),
            queue: Queue::default(),
            log: Log::Unknown,
            turn: None,
            last_uuid: None,
            between: Vec::new(),
            api_message: None,
            api_records: Vec::new(),
            branches: 0,
            first_branch_line: None,
            refused: 0,
            refused_before_chain: 0,
            id_fixes: Vec::new(),
        }
    }

    fn flush_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            for located in turn.into_messages() {
                self.queue.push_located(located);
            }
        }
    }

    /// Reads one record; false at the end of the file.
    fn read_one(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError> {
        let Some((record, at)) = self.lines.next_record()? else {
            return Ok(false);
        };
        let Record {
            kind,
            message,
            mut fields,
        } = record;
        let Some(kind) = kind else {
            return Err(self.lines.error_at(at, "a Claude Code record without a `type`"));
        };
        let sidechain = fields.get("isSidechain") == Some(&Value::Bool(true));
        let conversation = matches!(kind.as_str(), "user" | "assistant");
        if conversation && self.log == Log::Unknown {
            // A session's log starts with its user's prompt, never with a subagent's record: a
            // file that does is a subagent's own, which users open on purpose to study what that
            // subagent's model saw.
            self.log = if sidechain { Log::Subagent } else { Log::Session };
            if sidechain {
                let warning = format!(
                    "line {}: the file starts with a sidechain record (`isSidechain`), as a subagent's own log \
                     (Claude Code's `agent-<id>.jsonl`) does: its sidechain records are read as that subagent's conversation",
                    at.line
                );
                meta.warn(self.lines.path(), warning);
            }
        }
        match (self.log, sidechain) {
            (Log::Unknown | Log::Session, true) => {
                meta.skip(SIDECHAIN);
                return Ok(true);
            }
            (Log::Subagent, false) if conversation => {
                meta.skip(NOT_THE_SUBAGENTS);
                return Ok(true);
            }
            _ => {}
        }
        let synthetic = (kind == "assistant")
            .then(|| synthetic_kind(&fields, message.as_ref()))
            .flatten();
        // Left out, a synthetic record is one of the interface's in the chain: the prompt after
        // it names it as its parent.
        let link = Link::of(&kind, message.as_ref(), synthetic.is_some());
        self.follow_chain(&fields, link, at.line);
        if meta.session_id.is_none() {
            meta.session_id = fields.get("sessionId").and_then(Value::as_str).map(str::to_owned);
        }
        if let Some(synthetic) = synthetic {
            meta.skip(synthetic);
            return Ok(true);
        }
        match kind.as_str() {
            "user" | "assistant" => {
                let Some(message) = message else {
                    return Err(self
                        .lines
                        .error_at(at, format!("a `{kind}` record without a `message` object")));
                };
                if kind == "user" {
                    self.read_user(fields, message.fields, message.content, at, meta)?;
                } else {
                    self.read_assistant(fields, message.fields, message.content, at, meta)?;
                }
            }
            "summary" => {
                if let Some(summary) = fields.take("summary") {
                    let summaries = meta
                        .extra
                        .entry("summaries")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(summaries) = summaries {
                        summaries.push(summary);
                    }
                }
                meta.skip("summary (a title for the resume list)");
            }
            "system" => {
                let subtype = fields
                    .get("subtype")
                    .and_then(Value::as_str)
                    .unwrap_or("no subtype");
                meta.skip(format!("system ({subtype})"));
            }
            "attachment" => self.read_attachment(fields, at, meta),
            other => meta.skip(other),
        }
        Ok(true)
    }

    /// An `attachment` record: what Claude Code adds to the next request besides the user's words
    /// (an @-mentioned file, CLAUDE.md, a hook's context, a prompt typed while the model worked).
    /// One with text the model reads becomes a user message in place; any other is counted.
    fn read_attachment(&mut self, mut fields: Fields, at: LineAt, meta: &mut TranscriptMeta) {
        let rendered = fields.take("rendered");
        fields.take("renderedRole");
        let mut attachment = match fields.take("attachment") {
            Some(Value::Object(attachment)) => attachment,
            _ => {
                meta.skip("attachment (no `attachment` object)");
                return;
            }
        };
        let kind = attachment
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("no type")
            .to_owned();
        // What Claude Code rendered for the model is read before what ctxhost would make of the
        // attachment's fields, except for the user's own words.
        let from_fields = attachment_text(&kind, &mut attachment);
        let read = match (from_fields, rendered.as_ref().and_then(rendered_text)) {
            (Some(AttachmentText::Prompt(text)), _) => Some(AttachmentText::Prompt(text)),
            (_, Some(text)) => Some(AttachmentText::Meta(text)),
            (from_fields, None) => from_fields,
        };
        let Some(read) = read else {
            meta.skip(format!("attachment ({kind}: no text ctxhost replays)"));
            return;
        };
        let mut extra = fields.into_map(2);
        let text = match read {
            AttachmentText::Prompt(text) => text,
            AttachmentText::Meta(text) => {
                extra.insert("isMeta".to_owned(), Value::Bool(true));
                text
            }
        };
        extra.insert("attachment".to_owned(), Value::Object(attachment));
        let message = Message {
            extra,
            ..Message::user(text)
        };
        // Between a call and its result nothing may stand: what a hook added there follows the
        // results.
        match &mut self.turn {
            Some(turn) if turn.awaits_results() => turn.after_results.push((message, at.line)),
            _ => {
                self.flush_turn();
                self.queue.push(message, at.line);
            }
        }
    }

    /// Counts conversation records that do not continue the one before them. Records of the
    /// interface (`system`, `progress`…) may sit in the chain between two of them, and a result
    /// or a further record of the last API message may name any of its records.
    fn follow_chain(&mut self, record: &Fields, link: Link, line: usize) {
        let Some(uuid) = record.get("uuid").and_then(Value::as_str) else {
            return;
        };
        if matches!(link, Link::Interface) {
            self.between.push(uuid.to_owned());
            return;
        }
        let same_message =
            matches!(link, Link::Assistant(Some(id)) if self.api_message.as_deref() == Some(id));
        let parent = record.get("parentUuid").and_then(Value::as_str);
        // Whether the parent may be a refused record, whose uuid was never read.
        let mut parent_unknown = false;
        if let (Some(parent), Some(last)) = (parent, &self.last_uuid) {
            let of_the_message = |uuid: &str| self.api_records.iter().any(|record| record == uuid);
            let call_record = record.get("sourceToolAssistantUUID").and_then(Value::as_str);
            let joins_the_message = (same_message || matches!(link, Link::Results))
                && (of_the_message(parent) || call_record.is_some_and(of_the_message));
            let continues =
                parent == last || self.between.iter().any(|between| between == parent) || joins_the_message;
            if !continues {
                if self.refused > self.refused_before_chain {
                    parent_unknown = true;
                } else {
                    self.branches += 1;
                    self.first_branch_line.get_or_insert(line);
                }
            }
        }
        match link {
            Link::Assistant(id) => {
                if !same_message {
                    self.api_message = id.map(str::to_owned);
                    self.api_records.clear();
                }
                self.api_records.push(uuid.to_owned());
            }
            Link::Prompt => {
                self.api_message = None;
                self.api_records.clear();
            }
            Link::Results | Link::Interface => {}
        }
        // The records a parent may be now start here, unless this record hangs from a refused one:
        // that one may be a record of the same API message, which later results name as their
        // call's. Results name the message's records, so they keep its start.
        let starts_anew = match link {
            Link::Assistant(_) => !same_message,
            Link::Prompt => true,
            Link::Results => self.api_message.is_none(),
            Link::Interface => false,
        };
        if starts_anew && !parent_unknown {
            self.refused_before_chain = self.refused;
        }
        self.last_uuid = Some(uuid.to_owned());
        self.between.clear();
    }

    fn read_user(
        &mut self,
        fields: Fields,
        message: Fields,
        content: Option<Body>,
        at: LineAt,
        meta: &mut TranscriptMeta,
    ) -> Result<(), TranscriptError> {
        if fields.get("isCompactSummary") == Some(&Value::Bool(true)) {
            self.flush_turn();
            let summary = content.map(content_to_text).unwrap_or_default();
            meta.compactions.push(RecordedCompaction {
                line: at.line,
                messages_before: self.queue.queued(),
                summary,
            });
            if self.queue.queued() == 0 {
                let warning = "the transcript starts with the summary of an earlier compaction: what came before it is \
                               not in this file, and the summary is not replayed (see the meta's compactions)"
                    .to_owned();
                meta.warn(self.lines.path(), warning);
            }
            return Ok(());
        }
        let mut extra = fields.into_map(message.len());
        message.insert_into(&mut extra);
        let blocks = match content {
            Some(Body::Text(text)) => {
                self.flush_turn();
                let message = Message {
                    extra,
                    ..Message::user(text)
                };
                self.queue.push(message, at.line);
                return Ok(());
            }
            Some(Body::Blocks(blocks)) => blocks,
            _ => {
                return Err(self.lines.error_at(
                    at,
                    "a user message whose `content` is neither text nor a list of blocks",
                ))
            }
        };
        let mut results = Vec::new();
        let mut rest = Vec::new();
        for block in blocks {
            let Block::Object(block) = block else {
                return Err(self.lines.error_at(at, "a content block that is not an object"));
            };
            if block_type(&block) == Some("tool_result") {
                results.push(self.tool_result(block, at)?);
            } else {
                rest.push(Value::Object(block.into_map(0)));
            }
        }
        // Each result carries the record's fields before its block's own. The last message made
        // from the record takes them, the others a copy: copies are what a record holds in
        // several results, rarely.
        let mut fields = Some(extra);
        let last_result = results.len().wrapping_sub(1);
        for (index, result) in results.iter_mut().enumerate() {
            let mut extra = if index == last_result && rest.is_empty() {
                fields.take().expect("the record's fields are taken once")
            } else {
                fields.clone().expect("the record's fields are taken last")
            };
            extra.append(&mut result.extra);
            result.extra = extra;
        }
        if !results.is_empty() {
            match &mut self.turn {
                Some(turn) if turn.answers_all(&results) => turn
                    .results
                    .extend(results.into_iter().map(|result| (result, at.line))),
                _ => {
                    self.flush_turn();
                    results
                        .into_iter()
                        .for_each(|result| self.queue.push(result, at.line));
                }
            }
        }
        if !rest.is_empty() {
            self.flush_turn();
            let message = Message {
                role: Role::User,
                content: content_from_parts(rest),
                tool_calls: None,
                tool_call_id: None,
                name: None,
                extra: fields.expect("the record's fields stay for its own message"),
            };
            self.queue.push(message, at.line);
        }
        Ok(())
    }

    /// A `tool_result` block as a `tool` message whose `extra` holds the block's other keys.
    fn tool_result(&mut self, mut block: Fields, at: LineAt) -> Result<Message, TranscriptError> {
        let id = block.take("tool_use_id");
        let Some(id) = id_as_text(id, "a `tool_result`'s `tool_use_id`", &mut self.id_fixes) else {
            return Err(self
                .lines
                .error_at(at, "a `tool_result` block without a `tool_use_id`"));
        };
        block.take("type");
        let content = match block.take("content") {
            // Anthropic's API takes a result without content (a command that printed nothing):
            // nothing to warn about, but OpenAI's needs text.
            None | Some(Value::Null) => Content::Text(String::new()),
            Some(Value::Array(parts)) if parts.is_empty() => Content::Text(String::new()),
            Some(Value::String(text)) => Content::Text(text),
            Some(Value::Array(parts)) => content_from_parts(parts),
            Some(_) => {
                return Err(self
                    .lines
                    .error_at(at, "a `tool_result` whose `content` is neither text nor a list"))
            }
        };
        let mut extra = block.into_map(1);
        // Claude Code flags every failure (`is_error: true`) and most successes (`false`); a
        // result without the flag succeeded too. Said outright, an engine need not know which
        // agent wrote the log to tell a command that printed an `ERROR` line from one that failed.
        extra.entry("is_error").or_insert(Value::Bool(false));
        Ok(Message {
            content,
            extra,
            ..Message::tool(id, "")
        })
    }

    fn read_assistant(
        &mut self,
        fields: Fields,
        message: Fields,
        content: Option<Body>,
        at: LineAt,
        meta: &mut TranscriptMeta,
    ) -> Result<(), TranscriptError> {
        let blocks = match content {
            Some(Body::Blocks(blocks)) => blocks,
            Some(Body::Text(text)) => vec![Block::text(text)],
            _ => {
                return Err(self.lines.error_at(
                    at,
                    "an assistant message whose `content` is neither text nor a list of blocks",
                ))
            }
        };
        if meta.model.is_none() {
            // Claude Code writes `<synthetic>` on messages it made up itself (API errors).
            let model = message
                .get("model")
                .and_then(Value::as_str)
                .filter(|model| !model.starts_with('<'));
            meta.model = model.map(str::to_owned);
        }
        let message_id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        let continues = matches!((&self.turn, &message_id), (Some(turn), Some(id)) if turn.message_id.as_deref() == Some(id.as_str()));
        if continues {
            let turn = self.turn.as_mut().expect("checked");
            turn.merged_uuids.extend(fields.get("uuid").cloned());
        } else {
            self.flush_turn();
            self.turn = Some(Turn {
                line: at.line,
                message_id,
                parts: Vec::new(),
                calls: Vec::new(),
                call_lines: Vec::new(),
                thinking: Vec::new(),
                fields,
                message_fields: Fields::default(),
                merged_uuids: Vec::new(),
                results: Vec::new(),
                after_results: Vec::new(),
            });
        }
        let turn = self.turn.as_mut().expect("just set");
        turn.message_fields = message;
        for block in blocks {
            let Block::Object(block) = block else {
                return Err(self.lines.error_at(at, "a content block without a `type`"));
            };
            match block_type(&block) {
                Some("tool_use") => {
                    let id = id_as_text(
                        block.get("id").cloned(),
                        "a `tool_use`'s `id`",
                        &mut self.id_fixes,
                    );
                    let (Some(id), Some(name)) = (id, block.get("name").and_then(Value::as_str)) else {
                        return Err(self
                            .lines
                            .error_at(at, "a `tool_use` block without an `id` and a `name`"));
                    };
                    let arguments = block
                        .get("input")
                        .map_or_else(|| "{}".to_owned(), Value::to_string);
                    turn.calls.push(ToolCall::new(id, name, arguments));
                    turn.call_lines.push(at.line);
                }
                Some("thinking" | "redacted_thinking") => {
                    turn.thinking.push(Value::Object(block.into_map(0)))
                }
                Some(_) => turn.parts.push(Value::Object(block.into_map(0))),
                None => return Err(self.lines.error_at(at, "a content block without a `type`")),
            }
        }
        Ok(())
    }
}

/// What an assistant record is when Claude Code wrote it itself, not the model; `None` for the
/// model's.
fn synthetic_kind(fields: &Fields, message: Option<&ApiMessage>) -> Option<&'static str> {
    let model = message.and_then(|message| message.fields.get("model"));
    if fields.get("isApiErrorMessage") == Some(&Value::Bool(true)) {
        Some("api error (written by Claude Code, not the model)")
    } else if model.and_then(Value::as_str) == Some("<synthetic>") {
        Some("synthetic assistant message (written by Claude Code, not the model)")
    } else {
        None
    }
}

/// A content block's `type`, when it is text.
fn block_type(block: &Fields) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The text of a content (a string, or the text of its text blocks).
fn content_to_text(content: Body) -> String {
    match content {
        Body::Text(text) => text,
        Body::Blocks(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(Block::fields)
                .filter(|block| block_type(block) == Some("text"))
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect();
            texts.join("\n")
        }
        Body::Other(other) => value_as_text(&other),
    }
}

impl<R: BufRead> QueuedRecords for ClaudeCodeReader<R> {
    fn queue(&mut self) -> &mut Queue {
        &mut self.queue
    }

    fn read_record(&mut self, meta: &mut TranscriptMeta) -> Result<bool, TranscriptError> {
        let more = self.read_one(meta);
        if more.is_err() {
            // The stream goes on past a skippable error only to skip the record, and stops on any
            // other: either way, the record is not read.
            self.refused += 1;
        }
        report_id_fixes(
            meta,
            self.lines.path(),
            self.lines.last_line(),
            &mut self.id_fixes,
        );
        more
    }

    fn end_of_file(&mut self, meta: &mut TranscriptMeta) {
        self.flush_turn();
        if let Some(count) = meta.skipped.get(NOT_THE_SUBAGENTS).copied() {
            let warning = format!(
                "{count} conversation records are not sidechains, though the file started as a subagent's log: they are left out"
            );
            meta.warn(self.lines.path(), warning);
        }
        if let Some(first) = self.first_branch_line {
            let (count, verb, them) = match self.branches {
                1 => ("1 record".to_owned(), "does", "it"),
                many => (format!("{many} records"), "do", "them"),
            };
            let warning = format!(
                "{count} {verb} not continue the record before {them} (a rewind or an edited prompt): \
                 the transcript is read in file order, abandoned branches included (the first at line {first})"
            );
            meta.warn(self.lines.path(), warning);
        }
    }
}

impl<R: BufRead + Send> Source for ClaudeCodeReader<R> {
    fn next_message(&mut self, meta: &mut TranscriptMeta) -> Result<Option<Located>, TranscriptError> {
        next_queued(self, meta)
    }
}
