//! The tools offered to the agent: `lcm_grep`, `lcm_describe`, `lcm_expand`, `lcm_status`.
//!
//! JSON in, JSON out. Every bad input (a bad regex, an unknown id, a page past the end, a wrong
//! type) is a one-line error, `{"error": …}`, never a panic.

use std::time::Duration;

use serde_json::{json, Value};

use crate::{
    assemble::is_summary_id,
    search::{self, Mode, Query, Scope, SummariesStopped},
    store::{MessageRow, Store, StoreError, SummaryKind},
    time::{format_iso, parse_time},
    walk::Reached,
    Lcm,
};

/// The tools' names.
pub const NAMES: &[&str] = &["lcm_grep", "lcm_describe", "lcm_expand", "lcm_status"];

const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 200;
const DEFAULT_EXPAND_TOKENS: u64 = 4_000;

/// The schemas `get_tool_schemas` offers.
pub fn schemas() -> Vec<Value> {
    vec![
        json!({
            "name": "lcm_grep",
            "description": "Search the whole stored history of this conversation, including everything summarised away. Matches come newest first with a snippet and the summary that covers each. Each call searches for a bounded time, newest first; when that is not enough to reach the oldest message (or summary), the answer says `partial: true`, how far it searched, and the `next_before_id` that continues the search.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "description": "A regular expression (mode regex) or plain words (mode full_text)." },
                    "mode": { "type": "string", "enum": ["regex", "full_text"], "default": "regex" },
                    "scope": { "type": "string", "enum": ["messages", "summaries", "both"], "default": "messages" },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT },
                    "since": { "type": ["string", "number"], "description": "Only what was written at or after this time (ISO 8601 or unix seconds)." },
                    "before": { "type": ["string", "number"], "description": "Only what was written before this time." },
                    "all_sessions": { "type": "boolean", "default": false },
                    "before_id": { "type": ["string", "integer"], "description": "Continues a search that answered `partial: true`: the `next_before_id` it gave (a msg_… id: only older messages; a sum_… id: every message was searched, only older summaries). Call again with the same arguments and that before_id." }
                },
                "required": ["pattern"]
            }
        }),
        json!({
            "name": "lcm_describe",
            "description": "Describe a summary (kind, depth, tokens, time range, sources, parents) or a message; without an id, an overview of this session's summaries.",
            "parameters": {
                "type": "object",
                "properties": { "id": { "type": "string", "description": "sum_… or msg_…" } }
            }
        }),
        json!({
            "name": "lcm_expand",
            "description": "Expand a summary into its sources: for a leaf, the original messages exactly as stored; for a condensed summary, its child summaries. msg_… gives that one message.",
            "parameters": {
                "type": "object",
                "properties": {
                    "id": { "type": "string" },
                    "max_tokens": { "type": "integer", "minimum": 1, "default": DEFAULT_EXPAND_TOKENS },
                    "cursor": { "type": "integer", "minimum": 0, "description": "From a truncated answer's next_cursor." }
                },
                "required": ["id"]
            }
        }),
        json!({
            "name": "lcm_status",
            "description": "The store: size on disk, messages, summaries by depth, compression ratio, thresholds.",
            "parameters": { "type": "object", "properties": {} }
        }),
    ]
}

type ToolResult = Result<Value, String>;

fn store_failure(error: StoreError) -> String {
    format!("store: {error}")
}

/// Answers tool `name`; the error is the one-line message of `{"error": …}`.
pub fn handle(engine: &mut Lcm, name: &str, arguments: &Value) -> ToolResult {
    if !arguments.is_object() && !arguments.is_null() {
        return Err(format!("{name}: the arguments must be a JSON object"));
    }
    engine.load_session().map_err(|error| error.message.to_string())?;
    let session = engine.session.id;
    match name {
        "lcm_grep" => grep(engine, session, arguments),
        "lcm_describe" => describe(engine, session, arguments),
        "lcm_expand" => expand(engine, arguments),
        "lcm_status" => status(engine, session),
        other => Err(format!("Unknown context engine tool: {other}")),
    }
}

fn string_arg<'a>(arguments: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("`{key}` must be a string, got {other}")),
    }
}

fn count_arg(arguments: &Value, key: &str, default: u64, max: u64) -> Result<u64, String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!("`{key}` must be an integer from 1 to {max}, got {value}")),
        },
    }
}

fn grep(engine: &mut Lcm, session: Option<i64>, arguments: &Value) -> ToolResult {
    let pattern = string_arg(arguments, "pattern")?.ok_or("lcm_grep needs a `pattern`")?;
    if pattern.is_empty() {
        return Err("`pattern` is empty".to_owned());
    }
    let mode = match string_arg(arguments, "mode")? {
        None | Some("regex") => Mode::Regex,
        Some("full_text") => Mode::FullText,
        Some(other) => return Err(format!("`mode` must be regex or full_text, got `{other}`")),
    };
    let scope = match string_arg(arguments, "scope")? {
        None | Some("messages") => Scope::Messages,
        Some("summaries") => Scope::Summaries,
        Some("both") => Scope::Both,
        Some(other) => {
            return Err(format!(
                "`scope` must be messages, summaries or both, got `{other}`"
            ))
        }
    };
    let limit = count_arg(arguments, "limit", DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let time = |key: &str| -> Result<Option<i64>, String> {
        match arguments.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => parse_time(value)
                .map(Some)
                .map_err(|error| format!("`{key}`: {error}")),
        }
    };
    let all_sessions = arguments
        .get("all_sessions")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // A message id continues the search of messages; a summary id, which a partial answer gives
    // once every message was searched, continues the search of summaries.
    let before = match arguments.get("before_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if is_summary_id(id) => Some(Before::Summary(id.clone())),
        Some(value) => Some(Before::Message(
            value
                .as_str()
                .and_then(parse_message_id)
                .or_else(|| value.as_i64().filter(|n| *n > 0))
                .ok_or_else(|| {
                    format!("`before_id` must be a message id (msg_<number>) or a summary id a partial answer gave, got {value}")
                })?,
        )),
    };
    let budget = Duration::from_millis(engine.config.grep_budget_ms);
    let store = engine.store().map_err(|error| error.message.to_string())?;
    let (before_id, before_summary) = match before {
        None => (None, None),
        Some(Before::Message(id)) => (Some(id), None),
        Some(Before::Summary(id)) => {
            let num = store
                .summary_num(&id)
                .map_err(store_failure)?
                .ok_or_else(|| format!("`before_id`: {}", unknown_id(&id)))?;
            (None, Some(num))
        }
    };
    let query = Query {
        pattern: pattern.to_owned(),
        mode,
        scope,
        limit,
        since: time("since")?,
        before: time("before")?,
        session: if all_sessions {
            None
        } else {
            Some(session.unwrap_or(-1))
        },
        before_id,
        before_summary,
        budget,
    };
    let started = std::time::Instant::now();
    let found = search::grep(store.connection(), &query)?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let matches = search::hits_json(&found.hits, |id| covering(store, id)).map_err(store_failure)?;
    let mut answer = json!({
        "pattern": pattern,
        "mode": if mode == Mode::Regex { "regex" } else { "full_text" },
        "matches": matches,
        "truncated": found.hits.len() >= limit,
        "checked": found.checked,
        "elapsed_ms": elapsed_ms,
    });
    if let Reached::Deadline {
        newest,
        oldest,
        stored,
    } = found.reached
    {
        let searched = newest - oldest + 1;
        answer["partial"] = json!(true);
        answer["searched"] = json!({
            "newest": format!("msg_{newest}"),
            "oldest": format!("msg_{oldest}"),
            "messages": searched,
            "stored": stored,
        });
        answer["next_before_id"] = json!(format!("msg_{oldest}"));
        answer["note"] = json!(format!(
            "partial: searched the {searched} stored messages from msg_{newest} down to msg_{oldest} \
             (of {stored} in the store) in the {} ms budget; call lcm_grep again with the same \
             arguments and \"before_id\": \"msg_{oldest}\" to search the older ones",
            query.budget.as_millis()
        ));
    }
    if let Some(stopped) = &found.summaries_stopped {
        let SummariesStopped {
            newest,
            oldest,
            searched,
        } = stopped;
        answer["partial"] = json!(true);
        answer["searched"] = json!({
            "every_message": true,
            "summaries": { "newest": newest, "oldest": oldest, "count": searched },
        });
        answer["next_before_id"] = json!(oldest);
        answer["note"] = json!(format!(
            "partial: every stored message was searched, and the {searched} summaries from {newest} \
             down to {oldest} in the {} ms budget; call lcm_grep again with the same arguments and \
             \"before_id\": \"{oldest}\" to search the older summaries",
            query.budget.as_millis()
        ));
    }
    Ok(answer)
}

/// The chain of summaries covering `id`, from the leaf up: `null` for a message no summary
/// covers yet (it is in the context verbatim).
fn covering(store: &Store, id: &str) -> Result<Value, StoreError> {
    let mut chain = Vec::new();
    let mut current = match parse_message_id(id) {
        Some(message) => store.leaves_covering(message)?.into_iter().next(),
        None => store.summary_parents(id)?.into_iter().next(),
    };
    while let Some(summary) = current {
        current = store.summary_parents(&summary)?.into_iter().next();
        chain.push(summary);
        if chain.len() > 64 {
            break;
        }
    }
    Ok(match chain.first() {
        None => Value::Null,
        Some(first) => json!({ "id": first, "ancestors": &chain[1..] }),
    })
}

/// Where a continued `lcm_grep` goes on from.
enum Before {
    /// Below this message id.
    Message(i64),
    /// Every message searched; below this summary.
    Summary(String),
}

fn parse_message_id(id: &str) -> Option<i64> {
    id.strip_prefix("msg_")?.parse().ok().filter(|n: &i64| *n > 0)
}

/// The error for an id the store does not hold: one that is well formed is simply not there (a
/// different store, or a session of its own); anything else is not an id at all.
fn unknown_id(id: &str) -> String {
    if parse_message_id(id).is_some() || is_summary_id(id) {
        format!("no `{id}` in this store: use an id that lcm_grep or lcm_describe gave for this store")
    } else {
        format!("unknown id `{id}`: expected sum_ followed by 16 hex digits, or msg_<number>, as lcm_grep and lcm_describe give them")
    }
}

/// The stored message `msg_<message_id>` (`id`), or the error for an id the store does not hold.
fn stored_message(store: &Store, id: &str, message_id: i64) -> Result<MessageRow, String> {
    store
        .message(message_id)
        .map_err(store_failure)?
        .ok_or_else(|| unknown_id(id))
}

fn describe(engine: &mut Lcm, session: Option<i64>, arguments: &Value) -> ToolResult {
    let store = engine.store().map_err(|error| error.message.to_string())?;
    let Some(id) = string_arg(arguments, "id")? else {
        return overview(store, session);
    };
    if let Some(message_id) = parse_message_id(id) {
        let message = stored_message(store, id, message_id)?;
        return Ok(json!({
            "id": id,
            "type": "message",
            "session": message.session,
            "seq": message.seq,
            "role": message.role,
            "tokens": message.tokens,
            "time": format_iso(message.created_at),
            "time_is": time_is(message.dated),
            "summary": covering(store, id).map_err(store_failure)?,
        }));
    }
    if !is_summary_id(id) {
        return Err(unknown_id(id));
    }
    let summary = store
        .summary(id)
        .map_err(store_failure)?
        .ok_or_else(|| unknown_id(id))?;
    let sources: Vec<String> = match summary.kind {
        SummaryKind::Leaf => store
            .summary_messages(id)
            .map_err(store_failure)?
            .into_iter()
            .map(|m| format!("msg_{m}"))
            .collect(),
        SummaryKind::Condensed => store.summary_sources(id).map_err(store_failure)?,
    };
    Ok(json!({
        "id": summary.id,
        "type": "summary",
        "kind": summary.kind.as_str(),
        "depth": summary.depth,
        "method": summary.method,
        "tokens": summary.tokens,
        "earliest": format_iso(summary.earliest_at),
        "latest": format_iso(summary.latest_at),
        "time_is": time_is(summary.dated),
        "descendant_count": summary.descendant_count,
        "descendant_tokens": summary.descendant_tokens,
        "sources": sources,
        "parents": store.summary_parents(id).map_err(store_failure)?,
    }))
}

fn overview(store: &Store, session: Option<i64>) -> ToolResult {
    let Some(session) = session else {
        return Ok(
            json!({ "messages": 0, "summaries": [], "context": null, "note": "nothing stored in this session yet" }),
        );
    };
    let (messages, tokens) = store.message_totals(Some(session)).map_err(store_failure)?;
    let (context, compactions) = store.session_context(session).map_err(store_failure)?;
    let mut answer = json!({
        "messages": messages,
        "message_tokens": tokens,
        "compactions": compactions,
        "context": context,
    });
    add_summary_counts(store, Some(session), &mut answer)?;
    Ok(answer)
}

/// The current DAG's summaries per depth (`summaries_by_depth`), its leaves' compression ratio,
/// and how many of the session's summaries are outside it, with a note saying why.
fn add_summary_counts(store: &Store, session: Option<i64>, answer: &mut Value) -> Result<(), String> {
    let by_depth = store.summaries_by_depth(session).map_err(store_failure)?;
    let in_session = store.summary_count(session).map_err(store_failure)?;
    let in_dag: u64 = by_depth.iter().map(|(_, count, ..)| count).sum();
    let ratio = by_depth
        .iter()
        .find(|(depth, _, tokens, _)| *depth == 0 && *tokens > 0)
        .map(|(_, _, tokens, covered)| *covered as f64 / *tokens as f64);
    answer["summaries_by_depth"] = by_depth
        .iter()
        .map(|(depth, count, tokens, covered)| {
            json!({ "depth": depth, "count": count, "tokens": tokens, "covered_tokens": covered })
        })
        .collect();
    answer["compression_ratio"] = json!(ratio);
    answer["summaries_in_session"] = json!(in_session);
    if in_session > in_dag {
        answer["summaries_note"] = json!(format!(
            "{} of the session's {in_session} summaries are not under its current context (an earlier replay of \
             the same messages at another window makes such summaries); summaries_by_depth counts those under \
             it, and lcm_grep and lcm_expand still find them all",
            in_session - in_dag
        ));
    }
    Ok(())
}

fn expand(engine: &mut Lcm, arguments: &Value) -> ToolResult {
    let id = string_arg(arguments, "id")?.ok_or("lcm_expand needs an `id`")?;
    let max_tokens = count_arg(arguments, "max_tokens", DEFAULT_EXPAND_TOKENS, u64::MAX)?;
    let cursor = match arguments.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(value) => value
            .as_u64()
            .ok_or_else(|| format!("`cursor` must be a non-negative integer, got {value}"))?
            as usize,
    };
    let store = engine.store().map_err(|error| error.message.to_string())?;
    if let Some(message_id) = parse_message_id(id) {
        let message = stored_message(store, id, message_id)?;
        let mut answer = json!({
            "id": id,
            "type": "message",
            "role": message.role,
            "seq": message.seq,
            "time": format_iso(message.created_at),
            "time_is": time_is(message.dated),
        });
        page_message(&mut answer, &message.json, max_tokens, cursor)?;
        return Ok(answer);
    }
    if !is_summary_id(id) {
        return Err(unknown_id(id));
    }
    let summary = store
        .summary(id)
        .map_err(store_failure)?
        .ok_or_else(|| unknown_id(id))?;
    let total = match summary.kind {
        SummaryKind::Leaf => store.summary_messages(id).map_err(store_failure)?.len(),
        SummaryKind::Condensed => store.summary_sources(id).map_err(store_failure)?.len(),
    };
    if cursor >= total {
        return Err(format!(
            "cursor {cursor} is past the end: `{id}` has {total} sources (cursors 0 to {})",
            total - 1
        ));
    }
    let mut items = Vec::new();
    let mut used = 0u64;
    let mut next = cursor;
    match summary.kind {
        SummaryKind::Leaf => {
            for message_id in &store.summary_messages(id).map_err(store_failure)?[cursor..] {
                let message = store
                    .message(*message_id)
                    .map_err(store_failure)?
                    .ok_or_else(|| format!("store: msg_{message_id} of `{id}` is missing"))?;
                if !items.is_empty() && used + message.tokens > max_tokens {
                    break;
                }
                next += 1;
                let message_id = format!("msg_{}", message.id);
                let mut item = json!({
                    "id": message_id,
                    "role": message.role,
                    "seq": message.seq,
                    "time": format_iso(message.created_at),
                });
                if message.tokens > max_tokens {
                    // Alone larger than the answer may be: read by its own id, page by page.
                    item["tokens"] = json!(message.tokens);
                    item["note"] = json!(format!(
                        "larger than max_tokens {max_tokens}: call lcm_expand with {{\"id\": \"{message_id}\"}} to read it page by page"
                    ));
                } else {
                    used += message.tokens;
                    item["json"] = json!(message.json);
                }
                items.push(item);
            }
        }
        SummaryKind::Condensed => {
            for source in &store.summary_sources(id).map_err(store_failure)?[cursor..] {
                let child = store
                    .summary(source)
                    .map_err(store_failure)?
                    .ok_or_else(|| format!("store: source `{source}` of `{id}` is missing"))?;
                if !items.is_empty() && used + child.tokens > max_tokens {
                    break;
                }
                used += child.tokens;
                next += 1;
                items.push(json!({
                    "id": child.id,
                    "kind": child.kind.as_str(),
                    "depth": child.depth,
                    "earliest": format_iso(child.earliest_at),
                    "latest": format_iso(child.latest_at),
                    "time_is": time_is(child.dated),
                    "descendant_count": child.descendant_count,
                    "text": child.text,
                }));
            }
        }
    }
    let truncated = next < total;
    let mut answer = json!({
        "id": id,
        "kind": summary.kind.as_str(),
        "depth": summary.depth,
        "sources": items,
        "shown": format!("{} to {} of {total}", cursor, next - 1),
        "truncated": truncated,
    });
    if truncated {
        answer["next_cursor"] = json!(next);
        answer["note"] = json!(format!(
            "truncated at max_tokens {max_tokens}: {} more sources; call lcm_expand with {{\"id\": \"{id}\", \"cursor\": {next}}} for the rest",
            total - next
        ));
    }
    Ok(answer)
}

/// The characters of a stored message's JSON a page of `max_tokens` holds (the rough count's
/// four characters a token).
const CHARS_PER_TOKEN: u64 = 4;

/// Puts a stored message's JSON into `answer`: whole (`json`) when it fits in `max_tokens` and
/// no `cursor` asks for a later page, otherwise the page of its characters starting at `cursor`
/// (`json_part`), with `next_cursor` while more follows. The pages put together are the exact
/// original, so a message larger than the window can still be read back.
fn page_message(answer: &mut Value, json: &str, max_tokens: u64, cursor: usize) -> Result<(), String> {
    let max_chars = usize::try_from(max_tokens.saturating_mul(CHARS_PER_TOKEN)).unwrap_or(usize::MAX);
    let total = json.chars().count();
    if cursor == 0 && total <= max_chars {
        answer["json"] = json!(json);
        return Ok(());
    }
    if cursor >= total {
        return Err(format!(
            "cursor {cursor} is past the end: the message's JSON has {total} characters (cursors 0 to {})",
            total - 1
        ));
    }
    let part: String = json.chars().skip(cursor).take(max_chars).collect();
    let end = cursor + part.chars().count();
    answer["json_part"] = json!(part);
    answer["shown"] = json!(format!("characters {cursor} to {} of {total}", end - 1));
    answer["truncated"] = json!(end < total);
    if end < total {
        let id = answer["id"].as_str().unwrap_or_default().to_owned();
        answer["next_cursor"] = json!(end);
        answer["note"] = json!(format!(
            "truncated at max_tokens {max_tokens}: {} more characters; call lcm_expand with {{\"id\": \"{id}\", \"cursor\": {end}}} for the rest",
            total - end
        ));
    }
    Ok(())
}

fn status(engine: &mut Lcm, session: Option<i64>) -> ToolResult {
    let counters = engine.counters;
    let config = engine.config.clone();
    let name = engine.session.name.clone();
    let store = engine.store().map_err(|error| error.message.to_string())?;
    let (messages, message_tokens) = store
        .message_totals(session.or(Some(-1)))
        .map_err(store_failure)?;
    let (all_messages, _) = store.message_totals(None).map_err(store_failure)?;
    let observed = store
        .observed_compactions(session.or(Some(-1)))
        .map_err(store_failure)?;
    let bytes = store.bytes_on_disk();
    let mut answer = json!({
        "database": store.path().display().to_string(),
        "bytes_on_disk": bytes,
        "bytes_per_message": bytes.checked_div(all_messages).unwrap_or(0),
        "schema_version": crate::store::SCHEMA_VERSION,
        "session": name,
        "messages": messages,
        "message_tokens": message_tokens,
        "messages_in_store": all_messages,
        "threshold_tokens": counters.threshold_tokens,
        "context_length": counters.context_length,
        "compression_count": counters.compression_count,
        "observed_compactions": observed,
        "fresh_tail": config.fresh_tail,
        "leaf_chunk_tokens": config.leaf_chunk_tokens,
        "fan_in": config.fan_in,
        "max_depth": config.max_depth,
    });
    add_summary_counts(store, session.or(Some(-1)), &mut answer)?;
    Ok(answer)
}

/// What a stored time is: when the message was written (its transcript's `timestamp`), or when
/// it was stored (a transcript without times, replayed in seconds).
fn time_is(dated: bool) -> &'static str {
    if dated {
        "written"
    } else {
        "stored"
    }
}
