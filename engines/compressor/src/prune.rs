//! Phase 1: pruning old tool output, without a model.
//!
//! - A tool result over 200 characters outside the tail becomes a one-line stand-in built from
//!   the call that produced it and how it ended (kit's `describe_tool_result`).
//! - Identical long tool outputs anywhere (the tail included, the verbatim head excepted): the
//!   newest stays, older copies become a "duplicate of a more recent result" line.
//! - Tool-call arguments over 500 characters: each long string inside the JSON is cut to its first
//!   200 characters with a marked cut; the arguments stay valid JSON (invalid JSON is left alone).
//! - Image parts in old tool results become a short text placeholder.
//! - The newest tool results, when no tail can hold them (a 90 KB log the agent has just read),
//!   are kept cut to half the tail's budget: their start and end, and a line saying what was cut.

use std::borrow::Cow;

use ctxhost_engine_abi::{is_image_part, Content, Message, Role, ToolCall};
use ctxhost_engine_kit::{
    retention::first_error_line,
    sequence::align_start_to_group,
    stand_in::{describe_duplicate_output, describe_tool_result, group_thousands},
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::scan::FastMap;

/// Tool output at or above this many characters is "long".
pub const LONG_OUTPUT_CHARS: usize = 200;
/// Arguments above this many characters are shortened.
pub const LONG_ARGUMENTS_CHARS: usize = 500;
/// What a long string inside arguments keeps.
pub const KEPT_ARGUMENT_CHARS: usize = 200;
/// Strings are only cut when that saves at least this much (the cut marker costs ~25).
const MIN_ARGUMENT_SAVING: usize = 60;
/// What an image part of an old tool result becomes.
pub const IMAGE_PLACEHOLDER: &str = "[image removed during context compaction]";

/// What phase 1 changed, for the compaction report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PruneStats {
    /// Long tool results replaced by a stand-in.
    pub pruned_outputs: usize,
    /// Older copies of a repeated long output replaced.
    pub deduplicated_outputs: usize,
    /// Tool calls whose arguments were shortened.
    pub shortened_arguments: usize,
    /// Image parts replaced by a placeholder.
    pub images_replaced: usize,
    /// The newest tool results, too big for any tail, kept cut ([`cut_newest_group`]).
    pub cut_outputs: usize,
}

/// Every tool call in `messages`, by id.
pub(crate) fn calls_by_id(messages: &[Message]) -> FastMap<&str, &ToolCall> {
    messages
        .iter()
        .flat_map(|message| message.calls())
        .map(|call| (call.id.as_str(), call))
        .collect()
}

/// A cheap key for a long output: its length and its first and last 64 bytes.
type OutputKey<'m> = (usize, &'m [u8], &'m [u8]);

/// For each message from `from` on: whether it is a tool result repeated verbatim, at least
/// [`LONG_OUTPUT_CHARS`] long, by a later tool result.
pub(crate) fn find_older_duplicates(messages: &[Message], from: usize) -> Vec<bool> {
    let mut older = vec![false; messages.len()];
    // Cheap key first (length and both ends); full comparison only when keys collide.
    let mut newer: FastMap<OutputKey<'_>, Vec<usize>> = FastMap::default();
    for index in (from..messages.len()).rev() {
        let message = &messages[index];
        let Content::Text(text) = &message.content else {
            continue;
        };
        if message.role != Role::Tool || text.len() < LONG_OUTPUT_CHARS {
            continue;
        }
        if text.chars().count() < LONG_OUTPUT_CHARS {
            continue;
        }
        let bytes = text.as_bytes();
        let key = (
            bytes.len(),
            &bytes[..64.min(bytes.len())],
            &bytes[bytes.len().saturating_sub(64)..],
        );
        let seen = newer.entry(key).or_default();
        if seen
            .iter()
            .any(|&later| messages[later].content == message.content)
        {
            older[index] = true;
        } else {
            seen.push(index);
        }
    }
    older
}

/// The middle after phase 1, borrowing every message it leaves alone.
pub(crate) fn prune_middle<'m>(
    middle: &'m [Message],
    older_duplicate: &[bool],
    calls: &FastMap<&str, &ToolCall>,
    stats: &mut PruneStats,
) -> Vec<Cow<'m, Message>> {
    middle
        .iter()
        .zip(older_duplicate)
        .map(|(message, &duplicate)| match message.role {
            Role::Tool => prune_result(message, duplicate, calls, stats),
            Role::Assistant if message.has_tool_calls() => match shorten_calls(message) {
                Some((shortened, count)) => {
                    stats.shortened_arguments += count;
                    Cow::Owned(shortened)
                }
                None => Cow::Borrowed(message),
            },
            _ => Cow::Borrowed(message),
        })
        .collect()
}

fn prune_result<'m>(
    message: &'m Message,
    duplicate: bool,
    calls: &FastMap<&str, &ToolCall>,
    stats: &mut PruneStats,
) -> Cow<'m, Message> {
    let call = message
        .tool_call_id
        .as_deref()
        .and_then(|id| calls.get(id).copied());
    if duplicate {
        stats.deduplicated_outputs += 1;
        let chars = message.text().chars().count();
        return Cow::Owned(with_text(message, describe_duplicate_output(call, chars)));
    }
    let text = message.text();
    if text.len() >= LONG_OUTPUT_CHARS && text.chars().count() > LONG_OUTPUT_CHARS {
        stats.pruned_outputs += 1;
        let images = count_images(&message.content);
        stats.images_replaced += images;
        let mut stand_in = describe_tool_result(call, message);
        if images > 0 {
            stand_in.push_str(&format!(" [{images} image(s) removed]"));
        }
        return Cow::Owned(with_text(message, stand_in));
    }
    match replace_images(&message.content) {
        Some((content, images)) => {
            stats.images_replaced += images;
            Cow::Owned(Message {
                content,
                ..with_text(message, String::new())
            })
        }
        None => Cow::Borrowed(message),
    }
}

/// What [`prune_middle`] would change, counted without building anything (for summarizers that
/// read the messages themselves).
pub(crate) fn count_prunable(middle: &[Message], stats: &mut PruneStats) {
    for message in middle {
        match message.role {
            Role::Tool => {
                let long = content_len(&message.content) > LONG_OUTPUT_CHARS;
                stats.pruned_outputs += usize::from(long);
                stats.images_replaced += count_images(&message.content);
            }
            Role::Assistant => {
                stats.shortened_arguments += message
                    .calls()
                    .iter()
                    .filter(|call| call.function.arguments.len() > LONG_ARGUMENTS_CHARS)
                    .count();
            }
            _ => {}
        }
    }
}

fn content_len(content: &Content) -> usize {
    match content {
        Content::Null => 0,
        Content::Text(text) => text.len(),
        Content::Parts(parts) => parts
            .iter()
            .filter_map(ctxhost_engine_abi::part_text)
            .map(str::len)
            .sum(),
    }
}

/// Replaces the older copies of repeated long outputs in `messages` (the tail), in place.
pub(crate) fn replace_duplicates_in_place(
    messages: &mut [Message],
    older_duplicate: &[bool],
    calls: &FastMap<&str, &ToolCall>,
) -> usize {
    let mut replaced = 0;
    for (message, &duplicate) in messages.iter_mut().zip(older_duplicate) {
        if duplicate {
            let call = message
                .tool_call_id
                .as_deref()
                .and_then(|id| calls.get(id).copied());
            let chars = message.text().chars().count();
            message.content = Content::Text(describe_duplicate_output(call, chars));
            replaced += 1;
        }
    }
    replaced
}

/// The least room a cut result is kept in; with less, the group is summarised only.
const MIN_CUT_CHARS: usize = 400;

/// The tool group that ends `messages` (starting at `from` or later), its results cut to share
/// `budget_tokens` (rough, 4 characters a token): the assistant's calls as they were, each result
/// over its share cut by [`cut_output`]. `None` when `messages` does not end with tool results,
/// when a share would be under [`MIN_CUT_CHARS`], or when none is over its share (the group is big
/// for other reasons: cutting would not help).
///
/// For the group no tail can hold: summarised with the middle, it would leave the agent
/// answering an output it no longer sees (verify37: a 89 KB `kubectl logs` read just after the
/// user's request, its call and result gone, its decisive line quoted cut mid-line).
pub(crate) fn cut_newest_group(
    messages: &[Message],
    from: usize,
    budget_tokens: u64,
    stats: &mut PruneStats,
) -> Option<Vec<Message>> {
    if messages.last()?.role != Role::Tool {
        return None;
    }
    let start = align_start_to_group(messages, messages.len() - 1);
    if start < from || !messages[start].has_tool_calls() {
        return None;
    }
    let group = &messages[start..];
    let results = group.iter().filter(|message| message.role == Role::Tool).count();
    let share = usize::try_from(budget_tokens.saturating_mul(4)).unwrap_or(usize::MAX) / results.max(1);
    // Less would be a line or two of each: the summary tells more.
    if share < MIN_CUT_CHARS {
        return None;
    }
    let mut cut = 0;
    let copy = group
        .iter()
        .map(|message| match message.role {
            Role::Tool => cut_output(message, share).map_or_else(
                || message.clone(),
                |kept| {
                    cut += 1;
                    kept
                },
            ),
            _ => message.clone(),
        })
        .collect();
    stats.cut_outputs += cut;
    (cut > 0).then_some(copy)
}

/// `result` cut to about `max_chars` ([`cut_text`]); a JSON answer (Codex's `{"output": "…",
/// "metadata": …}`) by the text it holds, staying valid JSON. `None` when it fits.
fn cut_output(result: &Message, max_chars: usize) -> Option<Message> {
    let text = result.text();
    // Bytes: never fewer than characters, so a text that fits by them fits.
    if text.len() <= max_chars {
        return None;
    }
    let images = count_images(&result.content);
    let cut = cut_json_answer(&text, max_chars).or_else(|| cut_text(&text, max_chars, images))?;
    Some(with_text(result, cut))
}

/// A JSON object whose one long string holds most of it (a tool's answer wrapping its output),
/// that string cut by [`cut_text`] to what the rest leaves of `max_chars`, written back.
fn cut_json_answer(text: &str, max_chars: usize) -> Option<String> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let (key, longest) = answer
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.len())))
        .max_by_key(|&(_, len)| len)?;
    // Most of the answer, or what is cut is not the output.
    if longest * 5 < text.len() * 4 {
        return None;
    }
    let inner = answer.get(&key)?.as_str()?;
    // The room the rest of the answer leaves, in the string's characters: written out, its
    // quotes and line ends are escaped (`\"`, `\n`), which an access log has on every line.
    let written = serde_json::to_string(inner).ok()?.len();
    let room = max_chars.saturating_sub(text.len().saturating_sub(written)) * longest / written.max(1);
    let cut = cut_text(inner, room.max(MIN_CUT_CHARS), 0)?;
    answer.insert(key, Value::String(cut));
    serde_json::to_string(&Value::Object(answer)).ok()
}

/// How the line saying what was cut of an output ends, before what follows it…
const CUT_MARKER: &str = " of this output cut by context compaction";
/// …and the line before the output's kept end, when notable lines sit between.
const LAST_LINES_MARKER: &str = "[… and the output's last lines:]";

/// Whether `line` is one a cut copy wrote ([`cut_text`]), not the output's: read by the next
/// compaction, its `… read as errors, warnings or failed requests:]` is no error line.
pub(crate) fn is_cut_marker(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("[… ") && (line == LAST_LINES_MARKER || line.contains(CUT_MARKER))
}

/// Lines of a cut part kept for what they say, at most.
const NOTABLE_LINES: usize = 12;
/// Characters a kept line of a cut part keeps, at most.
const NOTABLE_LINE_CHARS: usize = 300;

/// `text` cut to about `max_chars`: its first lines and its last, cut at line ends where one is
/// near, and between them a line saying how much was cut, followed by the lines of the cut part
/// that read as errors, warnings or failed requests (a quarter of the room at most, one of each
/// shape): the one `503` of an access log of `200`s is what the agent was asked about
/// (verify38). `images` counts the image parts dropped with it. `None` when it fits.
pub(crate) fn cut_text(text: &str, max_chars: usize, images: usize) -> Option<String> {
    if text.len() <= max_chars {
        return None;
    }
    let (head_end, end_start) = cut_points(text, (max_chars - max_chars / 4) / 2)?;
    let notable = notable_lines(&text[head_end..end_start], max_chars / 4);
    // Nothing notable between: the room is the start's and the end's.
    let (head_end, end_start) = if notable.is_empty() {
        cut_points(text, max_chars / 2)?
    } else {
        (head_end, end_start)
    };
    let (head, cut, end) = (&text[..head_end], &text[head_end..end_start], &text[end_start..]);
    let images = if images > 0 {
        format!(" and {images} image(s)")
    } else {
        String::new()
    };
    let separator = if head.ends_with('\n') { "" } else { "\n" };
    let lines = group_thousands(cut.lines().count());
    let chars = group_thousands(cut.chars().count());
    let mut kept = format!("{head}{separator}[… {lines} lines ({chars} characters){images}{CUT_MARKER}");
    if notable.is_empty() {
        kept.push_str(" …]\n");
    } else {
        kept.push_str(&format!(
            "; {} of them that read as errors, warnings or failed requests:]\n",
            notable.len()
        ));
        for line in notable {
            kept.push_str(line);
            kept.push('\n');
        }
        kept.push_str(LAST_LINES_MARKER);
        kept.push('\n');
    }
    kept.push_str(end);
    Some(kept)
}

/// Where the kept start of `text` ends and its kept end starts, `half` bytes each, moved to a line
/// end when one is within half of that; `None` when they would meet.
fn cut_points(text: &str, half: usize) -> Option<(usize, usize)> {
    let mut head_end = text.floor_char_boundary(half);
    if let Some(newline) = text[..head_end].rfind('\n').filter(|&at| at >= half / 2) {
        head_end = newline + 1;
    }
    let mut end_start = text.ceil_char_boundary(text.len().saturating_sub(half));
    if let Some(newline) = text[end_start..].find('\n').filter(|&at| at <= half / 2) {
        end_start += newline + 1;
    }
    (end_start > head_end).then_some((head_end, end_start))
}

/// The lines of `cut` worth keeping ([`is_notable`]), in order, one of each shape (their digits
/// aside: a dozen `ECONNREFUSED` lines that differ by their time are one), long ones cut, within
/// `room` bytes.
fn notable_lines(cut: &str, room: usize) -> Vec<&str> {
    let mut shapes: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    let mut used = 0;
    for line in cut.lines().map(str::trim_end).filter(|line| is_notable(line)) {
        let line = &line[..line.floor_char_boundary(NOTABLE_LINE_CHARS)];
        let shape: String = line.chars().filter(|c| !c.is_ascii_digit()).collect();
        if shapes.contains(&shape) {
            continue;
        }
        if used + line.len() + 1 > room || kept.len() == NOTABLE_LINES {
            break;
        }
        used += line.len() + 1;
        shapes.push(shape);
        kept.push(line);
    }
    kept
}

/// Whether a line of a long output reads unlike its routine lines: an error as the summary and the
/// retention measure read one (kit's [`first_error_line`]), a log's warning, or a request
/// answered with a 4xx or 5xx status ([`fails_a_request`]).
fn is_notable(line: &str) -> bool {
    first_error_line(line).is_some()
        || ["WARN", "Warning", "warning:"]
            .iter()
            .any(|word| line.contains(word))
        || fails_a_request(line)
}

/// Whether an access log's line tells of a request answered with an error status: a 4xx or 5xx
/// code where the common formats put the status, around the request's method (`GET /v2/quotes
/// 503`, nginx's `"GET /x HTTP/1.1" 503 12`, an AWS load balancer's `503 503 0 0 "GET …`), not
/// a size that happens to read like one.
fn fails_a_request(line: &str) -> bool {
    const METHODS: [&str; 6] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"];
    const STATUSES: [&str; 17] = [
        "400", "401", "403", "404", "405", "408", "409", "410", "413", "422", "429", "499", "500", "501",
        "502", "503", "504",
    ];
    if !METHODS.iter().any(|method| line.contains(method)) {
        return false;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    words.iter().enumerate().any(|(at, word)| {
        METHODS.contains(&word.trim_start_matches('"'))
            && [at.checked_sub(4), at.checked_sub(3), Some(at + 2), Some(at + 3)]
                .into_iter()
                .flatten()
                .filter_map(|near| words.get(near))
                .any(|near| STATUSES.contains(near))
    })
}

/// A copy of `message` (role, ids, calls, unknown keys) with `text` as its content.
fn with_text(message: &Message, text: String) -> Message {
    Message {
        role: message.role,
        content: Content::Text(text),
        tool_calls: message.tool_calls.clone(),
        tool_call_id: message.tool_call_id.clone(),
        name: message.name.clone(),
        extra: message.extra.clone(),
    }
}

pub(crate) fn count_images(content: &Content) -> usize {
    match content {
        Content::Parts(parts) => parts.iter().filter(|part| is_image_part(part)).count(),
        _ => 0,
    }
}

fn replace_images(content: &Content) -> Option<(Content, usize)> {
    let images = count_images(content);
    let Content::Parts(parts) = content else {
        return None;
    };
    if images == 0 {
        return None;
    }
    let parts = parts
        .iter()
        .map(|part| {
            if is_image_part(part) {
                json!({"type": "text", "text": IMAGE_PLACEHOLDER})
            } else {
                part.clone()
            }
        })
        .collect();
    Some((Content::Parts(parts), images))
}

/// `message` with every long argument list shortened, and how many calls changed.
fn shorten_calls(message: &Message) -> Option<(Message, usize)> {
    let mut count = 0;
    let calls: Vec<ToolCall> = message
        .calls()
        .iter()
        .map(|call| match shorten_arguments(&call.function.arguments) {
            Some(arguments) => {
                count += 1;
                let mut call = call.clone();
                call.function.arguments = arguments;
                call
            }
            None => call.clone(),
        })
        .collect();
    (count > 0).then(|| {
        let mut shortened = message.clone();
        shortened.tool_calls = Some(calls);
        (shortened, count)
    })
}

/// The arguments with each long string cut, still valid JSON; `None` when they are short, not
/// JSON, or nothing inside is long enough to cut.
pub fn shorten_arguments(arguments: &str) -> Option<String> {
    if arguments.len() <= LONG_ARGUMENTS_CHARS || arguments.chars().count() <= LONG_ARGUMENTS_CHARS {
        return None;
    }
    let mut value: Value = serde_json::from_str(arguments).ok()?;
    shorten_strings(&mut value).then(|| value.to_string())
}

fn shorten_strings(value: &mut Value) -> bool {
    match value {
        Value::String(text) => {
            let chars = text.chars().count();
            if chars < KEPT_ARGUMENT_CHARS + MIN_ARGUMENT_SAVING {
                return false;
            }
            let kept: String = text.chars().take(KEPT_ARGUMENT_CHARS).collect();
            let cut = chars - KEPT_ARGUMENT_CHARS;
            *text = format!("{kept}…[{} more characters cut]", group_thousands(cut));
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| shorten_strings(item) | changed),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, item| shorten_strings(item) | changed),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// An access log's failed request is told by its status where the formats put it, not by a
    /// size that reads like one.
    #[test]
    fn a_failed_request_is_told_by_its_status_not_its_size() {
        for line in [
            "2026-11-30T14:56:00Z GET /v2/quotes 503 0ms upstream=-",
            r#"10.0.0.1 - - [30/Nov/2026:14:56:00 +0000] "GET /v2/quotes HTTP/1.1" 429 12 "-" "curl""#,
            r#"https 2026-11-30T14:58:17Z app/alb 1.2.3.4:1 - 0.000 -1 0.000 503 503 468 4424 "GET https://api.example.com:443/v2/quotes HTTP/1.1" "okhttp""#,
        ] {
            assert!(fails_a_request(line), "{line}");
        }
        for line in [
            r#"https 2026-11-30T14:52:16Z app/alb 1.2.3.4:1 10.20.3.143:8080 0.000 0.244 0.000 200 200 455 3656 "GET https://api.example.com:443/healthz HTTP/1.1" "okhttp""#,
            "GET /v2/orders/404 200 10ms",
            "worker pid=503 latency_ms=404",
        ] {
            assert!(!fails_a_request(line), "{line}");
        }
    }

    /// A cut keeps the lines between that read as errors, one of each shape, and says so; a JSON
    /// answer is cut inside its output and stays valid JSON.
    #[test]
    fn a_cut_keeps_the_notable_lines_between_and_a_json_answer_stays_json() {
        let mut log: String = (0..400)
            .map(|n| format!("14:{:02}:{:02} GET /v2/orders/{n} 200 12ms\n", n / 60, n % 60))
            .collect();
        let middle = log[log.len() / 2..].find('\n').unwrap() + log.len() / 2 + 1;
        log.insert_str(middle, "14:03:20 [ERROR] redis: connect ECONNREFUSED 10.20.3.44:6379\n14:03:21 [ERROR] redis: connect ECONNREFUSED 10.20.3.44:6379\n14:03:22 GET /v2/quotes 503 0ms\n");
        let cut = cut_text(&log, 3_000, 0).unwrap();
        assert!(cut.len() < 3_400, "{cut}");
        let kept: Vec<&str> = cut.lines().collect();
        let marker = kept.iter().position(|line| line.starts_with("[… ")).unwrap();
        assert!(
            kept[marker].ends_with("of this output cut by context compaction; 2 of them that read as errors, warnings or failed requests:]"),
            "{cut}"
        );
        assert_eq!(
            kept[marker + 1..marker + 4],
            [
                "14:03:20 [ERROR] redis: connect ECONNREFUSED 10.20.3.44:6379",
                "14:03:22 GET /v2/quotes 503 0ms",
                "[… and the output's last lines:]",
            ]
        );
        assert_eq!(kept.first(), log.lines().next().as_ref());
        assert_eq!(kept.last(), log.lines().last().as_ref());

        let answer = json!({"output": log, "metadata": {"exit_code": 0}}).to_string();
        let cut: Value = serde_json::from_str(&cut_json_answer(&answer, 3_000).unwrap()).unwrap();
        assert_eq!(cut["metadata"], json!({"exit_code": 0}));
        let output = cut["output"].as_str().unwrap();
        assert!(output.contains("14:03:22 GET /v2/quotes 503 0ms\n"), "{output}");
        assert!(output.len() < 3_000, "{output}");
    }

    #[test]
    fn long_arguments_stay_valid_json_with_the_cut_marked() {
        let arguments = json!({"path": "a.txt", "content": "x".repeat(2_000), "n": 3}).to_string();
        let shortened = shorten_arguments(&arguments).unwrap();
        let value: Value = serde_json::from_str(&shortened).unwrap();
        assert_eq!(value["path"], "a.txt");
        assert_eq!(value["n"], 3);
        let content = value["content"].as_str().unwrap();
        assert!(content.starts_with(&"x".repeat(200)));
        assert!(content.ends_with("…[1,800 more characters cut]"), "{content}");
        assert_eq!(
            shorten_arguments(&format!("{{\"broken\": \"{}", "y".repeat(600))),
            None
        );
        assert_eq!(shorten_arguments("{\"short\": 1}"), None);
    }

    #[test]
    fn only_older_copies_of_long_outputs_are_duplicates() {
        let long = "same output line\n".repeat(20);
        let messages = vec![
            Message::tool("a", long.clone()),
            Message::tool("b", "short"),
            Message::tool("c", "short"),
            Message::tool("d", long.clone()),
            Message::tool("e", long),
        ];
        assert_eq!(
            find_older_duplicates(&messages, 0),
            vec![true, false, false, true, false]
        );
        assert_eq!(
            find_older_duplicates(&messages, 1),
            vec![false, false, false, true, false]
        );
    }
}
