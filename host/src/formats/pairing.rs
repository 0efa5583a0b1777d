//! Tool pairing repaired as the messages stream past, and ids of the wrong type read as text.
//!
//! A transcript can be broken by itself: a result that answers no call (its call was cut off, or
//! the agent logged it twice), a call never answered (the session was interrupted), an id written
//! as a number. Replayed as it is, the engine is handed, and `--out` writes, a sequence no model
//! API accepts. So the stream repairs it the way the compressor repairs pairs after removing
//! messages — kit's [`repair_tool_pairs`], reused as it is — with one warning per repair naming
//! the record's line:
//! - the kit's repair only ever looks at the calls of the message heading a *group* (a message
//!   that is not a tool result, and the results after it), so repairing group by group gives
//!   what repairing the whole list would. The stream holds a message with calls and its results
//!   until every call is answered or the group ends, never more: a message without calls, and a
//!   group whose calls are all answered, go on at once;
//! - a result answering no open call is dropped, as the kit's repair drops it (a second result
//!   for one call too);
//! - a group that ends with calls unanswered goes through the kit's repair, which gives each a
//!   stub result right after the group's results; its text says that the transcript recorded
//!   none (rather than the kit's "removed during compaction");
//! - a call whose tool has no name is read as a call of `unnamed_tool`;
//! - calls get ids a model API takes: an empty id one made from the record's place
//!   (`empty_tool_call_id_line_4`), an id given twice in one message keeps its first call (the
//!   second is dropped, with a second result for it), an id an earlier call used a suffix naming
//!   the record's place (`call_1_reused_line_9`); the results follow their call's new id;
//! - the sequence check that follows still reports what the repair did not mend as the input's
//!   own problem (an id reused after more calls than [`RecentIds`] keeps, none in practice).

use std::{collections::VecDeque, path::Path};

use ctxhost_engine_abi::{Content, Message, Role, ToolCall};
use ctxhost_engine_kit::sequence::{repair_tool_pairs, REMOVED_RESULT_TEXT};
use serde_json::{Map, Value};

use super::{place, sequence::RecentIds, Located, TranscriptMeta};

/// The start of the id given to a call whose id is empty.
const EMPTY_CALL_ID_PREFIX: &str = "empty_tool_call_id_";

/// The name given to a call whose tool has none (a model API refuses an empty name).
const UNNAMED_TOOL: &str = "unnamed_tool";

/// The text of the result stood in for a call the transcript never answered.
pub const UNANSWERED_CALL_TEXT: &str =
    "[no result for this tool call is recorded in the transcript; ctxhost added this stand-in so that the sequence stays valid]";

/// Repairs tool pairing as messages stream past.
#[derive(Debug, Default)]
pub(super) struct PairRepair {
    /// A message with calls still waiting for results, and the results it has had; empty when no
    /// call is open.
    group: Vec<Located>,
    /// The calls of the group not answered yet.
    open: Vec<String>,
    /// The calls answered since the last message that was not a tool result.
    answered: Vec<String>,
    /// The ids of the calls before, to tell a reused id.
    seen: RecentIds,
    /// Calls of the last message that was not a result given an id of their own: the id the
    /// transcript wrote, which its results answer, and the one it is read as.
    renamed: Vec<(String, String)>,
    /// Ids given twice in the last message that was not a result, the second call dropped: a
    /// second result for such an id goes with it, its warning already said.
    twins: Vec<String>,
}

impl PairRepair {
    /// Takes the next message; the messages whose pairing is settled go to `out`.
    pub(super) fn take(
        &mut self,
        located: Located,
        path: &Path,
        meta: &mut TranscriptMeta,
        out: &mut VecDeque<Message>,
    ) {
        if located.message.role != Role::Tool {
            self.close_group(path, meta, out);
            self.answered.clear();
            self.renamed.clear();
            self.twins.clear();
            let mut located = located;
            self.fix_call_ids(&mut located, path, meta);
            self.open = located
                .message
                .calls()
                .iter()
                .map(|call| call.id.clone())
                .collect();
            if self.open.is_empty() {
                out.push_back(located.message);
            } else {
                self.group.push(located);
            }
            return;
        }
        let mut located = located;
        self.rename_result(&mut located);
        let warning = match located.message.tool_call_id.as_deref() {
            // A named result without an id is most often a legacy `function` message whose call
            // is not in the message before it: the name says which result went.
            None => match located.message.name.as_deref() {
                Some(name) => format!(
                    "{}: a result of `{name}` without a `tool_call_id` answers no call of the message before it; it is dropped",
                    located.place()
                ),
                None => format!(
                    "{}: a tool result without a `tool_call_id` answers no call; it is dropped",
                    located.place()
                ),
            },
            Some(id) => match self.open.iter().position(|open_id| open_id == id) {
                Some(at) => {
                    let id = self.open.remove(at);
                    self.answered.push(id);
                    self.group.push(located);
                    if self.open.is_empty() {
                        // Every call is answered: the group goes as it is.
                        out.extend(self.group.drain(..).map(|located| located.message));
                    }
                    return;
                }
                None if self.answered.iter().any(|answered| answered == id) => {
                    if let Some(at) = self.twins.iter().position(|twin| twin == id) {
                        // The result of the call dropped as a twin: said with the call.
                        self.twins.remove(at);
                        meta.pairing_repairs += 1;
                        return;
                    }
                    format!(
                        "{}: a second result for tool call `{id}`; it is dropped",
                        located.place()
                    )
                }
                None => format!(
                    "{}: tool result `{id}` answers no call of the message before it; it is dropped",
                    located.place()
                ),
            },
        };
        // What the kit's repair does with a result whose call is not open.
        meta.pairing_repairs += 1;
        meta.warn(path, warning);
    }

    /// Gives the calls of a message that is not a result ids a model API takes, one warning each
    /// naming the record's line: an empty id gets one made from the record's place (as a legacy
    /// call does); a second call under an id already given in the message is dropped (its second
    /// result goes with it, as a second result for one call does); an id an earlier message used
    /// gets a suffix naming the record's place, and its results follow it.
    fn fix_call_ids(&mut self, located: &mut Located, path: &Path, meta: &mut TranscriptMeta) {
        let message_place = located.place();
        let message_line = located.line;
        let lines = std::mem::take(&mut located.call_lines);
        let mut kept_lines = Vec::with_capacity(lines.len());
        let made_up = match located.column {
            Some(column) => format!("line_{}_column_{column}", located.line),
            None => format!("line_{}", located.line),
        };
        let Some(calls) = located.message.tool_calls.as_mut() else {
            return;
        };
        let mut kept: Vec<ToolCall> = Vec::with_capacity(calls.len());
        // The ids the kept calls were written with: a twin repeats one of these.
        let mut written: Vec<String> = Vec::with_capacity(calls.len());
        let mut warnings = Vec::new();
        for (number, mut call) in std::mem::take(calls).into_iter().enumerate() {
            let line = lines.get(number).copied();
            let place = match line {
                Some(line) if line != message_line => place(line, None),
                _ => message_place.clone(),
            };
            let nth = if number == 0 {
                String::new()
            } else {
                format!("_{}", number + 1)
            };
            if call.function.name.trim().is_empty() {
                warnings.push(format!(
                    "{place}: a tool call with no tool name; it is read as a call of `{UNNAMED_TOOL}`"
                ));
                call.function.name = UNNAMED_TOOL.to_owned();
            }
            if call.id.is_empty() {
                let id = format!("{EMPTY_CALL_ID_PREFIX}{made_up}{nth}");
                warnings.push(format!(
                    "{place}: a call of `{}` with an empty id; it is read as `{id}`, and a result with an empty `tool_call_id` as answering it",
                    call.function.name
                ));
                self.renamed.push((String::new(), id.clone()));
                call.id = id;
            } else if let Some(at) = written.iter().position(|id| *id == call.id) {
                warnings.push(format!(
                    "{place}: tool call id `{}` is given twice in one message; the second call is dropped, with a second result for it",
                    call.id
                ));
                self.twins.push(kept[at].id.clone());
                continue;
            } else if self.seen.contains(&call.id) {
                let id = format!("{}_reused_{made_up}{nth}", call.id);
                warnings.push(format!(
                    "{place}: tool call id `{}` was used by an earlier call; this call and its result are read as `{id}`",
                    call.id
                ));
                self.renamed
                    .push((std::mem::replace(&mut call.id, id.clone()), id));
            }
            written.push(
                self.renamed
                    .last()
                    .filter(|(_, read_as)| *read_as == call.id)
                    .map_or_else(|| call.id.clone(), |(was, _)| was.clone()),
            );
            self.seen.insert(&call.id);
            kept.push(call);
            kept_lines.extend(line);
        }
        *calls = kept;
        located.call_lines = kept_lines;
        for warning in warnings {
            meta.pairing_repairs += 1;
            meta.warn(path, warning);
        }
    }

    /// A result answering a call given an id of its own answers it under that id: the first such
    /// call still open, else (a second result) the first.
    fn rename_result(&self, located: &mut Located) {
        let Some(id) = located.message.tool_call_id.as_mut() else {
            return;
        };
        let mut renamed = self.renamed.iter().filter(|(written, _)| written == id);
        let first = renamed.clone().next();
        let open = renamed.find(|(_, read_as)| self.open.contains(read_as));
        if let Some((_, read_as)) = open.or(first) {
            id.clone_from(read_as);
        }
    }

    /// The stream has ended: the last group goes to `out`.
    pub(super) fn finish(&mut self, path: &Path, meta: &mut TranscriptMeta, out: &mut VecDeque<Message>) {
        self.close_group(path, meta, out);
    }

    /// The group ends with calls still open: the kit's repair gives each a stub result.
    fn close_group(&mut self, path: &Path, meta: &mut TranscriptMeta, out: &mut VecDeque<Message>) {
        let Some(head) = self.group.first() else {
            return;
        };
        for id in &self.open {
            meta.pairing_repairs += 1;
            let place = head.call_place(id);
            let warning =
                format!("{place}: tool call `{id}` is never answered; a stub result stands in for it");
            meta.warn(path, warning);
        }
        let messages = self.group.drain(..).map(|located| located.message).collect();
        for mut message in repair_tool_pairs(messages) {
            let is_stub = message.role == Role::Tool
                && message.text() == REMOVED_RESULT_TEXT
                && message.extra.is_empty()
                && message
                    .tool_call_id
                    .as_ref()
                    .is_some_and(|id| self.open.contains(id));
            if is_stub {
                message.content = Content::Text(UNANSWERED_CALL_TEXT.to_owned());
            }
            out.push_back(message);
        }
        self.open.clear();
    }
}

/// Reads ids of the wrong type in a message's fields: a number in `tool_call_id` or in a tool
/// call's `id` becomes its text; any other non-text `tool_call_id` is removed (the result then
/// answers no call, and the repair drops it). One description per change, for a warning.
pub(super) fn fix_id_types(fields: &mut Map<String, Value>) -> Vec<String> {
    let mut fixed = Vec::new();
    match fields.get("tool_call_id") {
        Some(Value::Number(number)) => {
            let text = number.to_string();
            fixed.push(format!(
                "`tool_call_id` is the number {text}, not text; it is read as \"{text}\""
            ));
            fields.insert("tool_call_id".to_owned(), Value::String(text));
        }
        Some(Value::String(_) | Value::Null) | None => {}
        Some(other) => {
            fixed.push(format!(
                "`tool_call_id` is {}, not text; the result is read without one",
                kind_of(other)
            ));
            fields.shift_remove("tool_call_id");
        }
    }
    if let Some(Value::Array(calls)) = fields.get_mut("tool_calls") {
        for call in calls.iter_mut() {
            if let Some(id @ Value::Number(_)) = call.get_mut("id") {
                let text = id.to_string();
                fixed.push(format!(
                    "tool call id {text} is a number, not text; it is read as \"{text}\""
                ));
                *id = Value::String(text);
            }
        }
    }
    fixed
}

/// Reports the ids `id_as_text` fixed while reading the record that ended on `line`, one warning
/// each, and counts them as repairs.
pub(super) fn report_id_fixes(meta: &mut TranscriptMeta, path: &Path, line: usize, fixes: &mut Vec<String>) {
    for fix in fixes.drain(..) {
        meta.pairing_repairs += 1;
        meta.warn(path, format!("line {line}: {fix}"));
    }
}

/// An id that should be text: text as it is, a number read as its text (what was fixed goes to
/// `fixes`, for a warning); `None` for anything else. `what` names it in the fix.
pub(super) fn id_as_text(value: Option<Value>, what: &str, fixes: &mut Vec<String>) -> Option<String> {
    match value? {
        Value::String(id) => Some(id),
        Value::Number(number) => {
            fixes.push(format!(
                "{what} is the number {number}, not text; it is read as \"{number}\""
            ));
            Some(number.to_string())
        }
        _ => None,
    }
}

/// A message from its fields, reading ids of the wrong type as [`fix_id_types`] does: the
/// message and what was fixed, or why it is not a message.
pub(super) fn message_with_fixed_ids(
    mut fields: Map<String, Value>,
) -> Result<(Message, Vec<String>), String> {
    let fixed = fix_id_types(&mut fields);
    serde_json::from_value(Value::Object(fields))
        .map(|message| (message, fixed))
        .map_err(|error| error.to_string())
}

/// "a list", "an object"…, for messages.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_kit::sequence::find_sequence_problems;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn repaired(messages: Vec<Message>) -> (Vec<Message>, TranscriptMeta) {
        let mut repair = PairRepair::default();
        let (mut meta, mut out) = (TranscriptMeta::default(), VecDeque::new());
        for (index, message) in messages.into_iter().enumerate() {
            repair.take(
                Located::new(message, index + 1),
                Path::new("t"),
                &mut meta,
                &mut out,
            );
        }
        repair.finish(Path::new("t"), &mut meta, &mut out);
        (out.into(), meta)
    }

    fn calls(ids: &[&str]) -> Message {
        Message::assistant_calls(ids.iter().map(|id| ToolCall::new(*id, "ls", "{}")).collect())
    }

    #[test]
    fn a_valid_sequence_goes_through_untouched_and_without_warnings() {
        let messages = vec![
            Message::user("hi"),
            calls(&["a", "b"]),
            Message::tool("b", "2"),
            Message::tool("a", "1"),
            Message::assistant("done"),
        ];
        let (out, meta) = repaired(messages.clone());
        assert_eq!(out, messages);
        assert_eq!((meta.warnings.len(), meta.pairing_repairs), (0, 0));
    }

    #[test]
    fn orphans_are_dropped_and_unanswered_calls_get_a_stub_each_named_by_line() {
        let messages = vec![
            Message::tool("ghost", "before anything"),
            Message::user("go"),
            calls(&["a", "b"]),
            Message::tool("b", "out"),
            Message::tool("b", "again"),
            Message {
                tool_call_id: None,
                ..Message::tool("", "no id")
            },
            Message::user("next"),
        ];
        let (out, meta) = repaired(messages);
        assert_eq!(find_sequence_problems(&out), vec![]);
        assert_eq!(
            meta.warnings,
            [
                "line 1: tool result `ghost` answers no call of the message before it; it is dropped",
                "line 5: a second result for tool call `b`; it is dropped",
                "line 6: a tool result without a `tool_call_id` answers no call; it is dropped",
                "line 3: tool call `a` is never answered; a stub result stands in for it",
            ]
        );
        assert_eq!(meta.pairing_repairs, 4);
        let texts: Vec<String> = out.iter().map(|m| m.text().into_owned()).collect();
        assert_eq!(texts, ["go", "", "out", UNANSWERED_CALL_TEXT, "next"]);
    }

    #[test]
    fn a_call_at_the_very_end_is_answered_by_a_stub() {
        let (out, meta) = repaired(vec![Message::user("go"), calls(&["last"])]);
        assert_eq!(out.last().unwrap().tool_call_id.as_deref(), Some("last"));
        assert_eq!(meta.warnings.len(), 1);
    }

    fn ids(message: &Message) -> Vec<&str> {
        message.calls().iter().map(|call| call.id.as_str()).collect()
    }

    #[test]
    fn a_call_id_given_twice_in_one_message_keeps_the_first_call_and_its_first_result() {
        let messages = vec![
            Message::user("go"),
            calls(&["a", "a", "b"]),
            Message::tool("a", "1"),
            Message::tool("a", "1 logged again"),
            Message::tool("b", "2"),
            Message::assistant("done"),
        ];
        let (out, meta) = repaired(messages);
        assert_eq!(find_sequence_problems(&out), vec![]);
        assert_eq!(ids(&out[1]), ["a", "b"]);
        let texts: Vec<String> = out.iter().map(|m| m.text().into_owned()).collect();
        assert_eq!(texts, ["go", "", "1", "2", "done"]);
        assert_eq!(
            meta.warnings,
            ["line 2: tool call id `a` is given twice in one message; the second call is dropped, with a second result for it"]
        );
        assert_eq!(meta.pairing_repairs, 2);
    }

    #[test]
    fn an_empty_call_id_gets_one_made_from_its_line_and_its_results_answer_it_in_order() {
        let messages = vec![
            Message::user("go"),
            calls(&["", ""]),
            Message::tool("", "1"),
            Message::tool("", "2"),
            Message::assistant("done"),
        ];
        let (out, meta) = repaired(messages);
        assert_eq!(find_sequence_problems(&out), vec![]);
        assert_eq!(
            ids(&out[1]),
            ["empty_tool_call_id_line_2", "empty_tool_call_id_line_2_2"]
        );
        let answered: Vec<(Option<&str>, String)> = out[2..4]
            .iter()
            .map(|m| (m.tool_call_id.as_deref(), m.text().into_owned()))
            .collect();
        assert_eq!(
            answered,
            [
                (Some("empty_tool_call_id_line_2"), "1".to_owned()),
                (Some("empty_tool_call_id_line_2_2"), "2".to_owned()),
            ]
        );
        assert_eq!(meta.warnings.len(), 2);
        assert!(meta.warnings[0].starts_with(
            "line 2: a call of `ls` with an empty id; it is read as `empty_tool_call_id_line_2`"
        ));
    }

    #[test]
    fn a_call_without_a_tool_name_is_read_as_a_call_of_unnamed_tool() {
        let mut nameless = calls(&["c1"]);
        nameless.tool_calls.as_mut().unwrap()[0].function.name = String::new();
        let messages = vec![
            Message::user("go"),
            nameless,
            Message::tool("c1", "1"),
            Message::assistant("done"),
        ];
        let (out, meta) = repaired(messages);
        assert_eq!(find_sequence_problems(&out), vec![]);
        assert_eq!(out[1].calls()[0].function.name, "unnamed_tool");
        assert_eq!(out[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(
            meta.warnings,
            ["line 2: a tool call with no tool name; it is read as a call of `unnamed_tool`"]
        );
    }

    #[test]
    fn a_call_id_reused_by_a_later_message_is_read_under_an_id_of_its_own_with_its_result() {
        let messages = vec![
            Message::user("go"),
            calls(&["a"]),
            Message::tool("a", "1"),
            calls(&["a"]),
            Message::tool("a", "2"),
            calls(&["a"]),
            Message::tool("a", "3"),
            Message::assistant("done"),
        ];
        let (out, meta) = repaired(messages);
        assert_eq!(find_sequence_problems(&out), vec![]);
        let pairs: Vec<(&str, Option<&str>)> = [1, 3, 5]
            .iter()
            .map(|&at| (ids(&out[at])[0], out[at + 1].tool_call_id.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("a", Some("a")),
                ("a_reused_line_4", Some("a_reused_line_4")),
                ("a_reused_line_6", Some("a_reused_line_6")),
            ]
        );
        assert_eq!(
            meta.warnings,
            [
                "line 4: tool call id `a` was used by an earlier call; this call and its result are read as `a_reused_line_4`",
                "line 6: tool call id `a` was used by an earlier call; this call and its result are read as `a_reused_line_6`",
            ]
        );
    }

    #[test]
    fn number_ids_are_read_as_text_and_other_types_are_removed() {
        let mut fields = json!({"role": "tool", "tool_call_id": 7, "content": "x"})
            .as_object()
            .cloned()
            .unwrap();
        let (message, fixed) = message_with_fixed_ids(fields.clone()).unwrap();
        assert_eq!(message.tool_call_id.as_deref(), Some("7"));
        assert_eq!(
            fixed,
            ["`tool_call_id` is the number 7, not text; it is read as \"7\""]
        );
        fields.insert("tool_call_id".into(), json!({"id": 1}));
        let (message, fixed) = message_with_fixed_ids(fields).unwrap();
        assert_eq!(message.tool_call_id, None);
        assert_eq!(
            fixed,
            ["`tool_call_id` is an object, not text; the result is read without one"]
        );
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": 3, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]});
        let (message, fixed) = message_with_fixed_ids(call.as_object().cloned().unwrap()).unwrap();
        assert_eq!(message.calls()[0].id, "3");
        assert_eq!(fixed.len(), 1);
    }
}
