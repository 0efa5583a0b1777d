//! The tools' answers, and every bad input as a one-line JSON error.

use ctxhost_engine_abi::{Engine, Message, SessionInfo};
use serde_json::{json, Value};

use super::{engine, replay};
use crate::{synthetic, Lcm};

fn compacted_engine(dir: &std::path::Path) -> (Lcm, Vec<Message>) {
    let mut engine = engine(dir, 4_000, json!({ "fresh_tail": 4, "fan_in": 2 }));
    engine.on_session_start("tools", &SessionInfo::default()).unwrap();
    let mut messages = synthetic::conversation(21, 60, 1_200);
    messages.insert(
        1,
        Message::user("first request: fix coupon-code WH-2024-17 \"quoted\" OR NOT"),
    );
    let (context, compactions) = replay(&mut engine, &messages);
    assert!(compactions >= 2);
    (engine, context)
}

fn error_of(answer: &Value) -> &str {
    answer["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn bad_inputs_are_one_line_json_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = compacted_engine(dir.path());
    let cases = [
        ("lcm_grep", json!({ "pattern": "(unclosed" }), "invalid regex"),
        ("lcm_grep", json!({}), "needs a `pattern`"),
        ("lcm_grep", json!({ "pattern": "x", "mode": "fuzzy" }), "`mode`"),
        ("lcm_grep", json!({ "pattern": "x", "limit": 1000 }), "`limit`"),
        (
            "lcm_grep",
            json!({ "pattern": "x", "since": "yesterday" }),
            "`since`",
        ),
        (
            "lcm_grep",
            json!({ "pattern": "x{1000}{1000}{1000}" }),
            "invalid regex",
        ),
        (
            "lcm_grep",
            json!({ "pattern": "---", "mode": "full_text" }),
            "no word",
        ),
        (
            "lcm_expand",
            json!({ "id": "sum_0000000000000000" }),
            "no `sum_0000000000000000` in this store",
        ),
        ("lcm_expand", json!({ "id": "banana" }), "unknown id"),
        (
            "lcm_expand",
            json!({ "id": "msg_99999999" }),
            "no `msg_99999999` in this store",
        ),
        ("lcm_describe", json!({ "id": "sum_zz" }), "unknown id"),
        ("lcm_expand", json!({ "id": 7 }), "must be a string"),
        ("lcm_status", json!([1]), "must be a JSON object"),
        ("lcm_nothing", json!({}), "Unknown context engine tool"),
    ];
    for (tool, arguments, expected) in cases {
        let answer = engine.handle_tool_call(tool, &arguments, None);
        let error = error_of(&answer);
        assert!(error.contains(expected), "{tool} {arguments}: {error}");
        assert!(
            !error.contains('\n'),
            "{tool} {arguments}: more than one line: {error}"
        );
    }
}

#[test]
fn a_page_past_the_end_is_an_error_and_pages_cover_every_source() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = compacted_engine(dir.path());
    let overview = engine.handle_tool_call("lcm_describe", &json!({}), None);
    let id = overview["context"]["summaries"][0].as_str().unwrap().to_owned();
    let described = engine.handle_tool_call("lcm_describe", &json!({ "id": id }), None);
    let total = described["sources"].as_array().unwrap().len();
    let mut seen = 0;
    let mut cursor = 0;
    loop {
        let page = engine.handle_tool_call(
            "lcm_expand",
            &json!({ "id": id, "max_tokens": 1, "cursor": cursor }),
            None,
        );
        assert!(page.get("error").is_none(), "{page}");
        seen += page["sources"].as_array().unwrap().len();
        match page["next_cursor"].as_u64() {
            Some(next) => {
                assert!(page["note"].as_str().unwrap().contains("cursor"));
                cursor = next;
            }
            None => break,
        }
    }
    assert_eq!(seen, total);
    let past = engine.handle_tool_call("lcm_expand", &json!({ "id": id, "cursor": total }), None);
    assert!(error_of(&past).contains("past the end"));
}

#[test]
fn full_text_accepts_whatever_the_user_types() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = compacted_engine(dir.path());
    for typed in [
        "coupon-code WH-2024-17",
        "\"quoted\" OR NOT",
        "WH-2024-17",
        "2024",
        "first request:",
    ] {
        let answer = engine.handle_tool_call(
            "lcm_grep",
            &json!({ "pattern": typed, "mode": "full_text" }),
            None,
        );
        let matches = answer["matches"]
            .as_array()
            .unwrap_or_else(|| panic!("{typed}: {answer}"));
        assert!(!matches.is_empty(), "{typed}: {answer}");
    }
}

#[test]
fn grep_names_the_summary_that_covers_an_old_message() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = compacted_engine(dir.path());
    let answer = engine.handle_tool_call("lcm_grep", &json!({ "pattern": "WH-2024-17" }), None);
    let hit = &answer["matches"][0];
    assert!(
        hit["snippet"].as_str().unwrap().contains("WH-2024-17"),
        "{answer}"
    );
    let leaf = hit["summary"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let expanded = engine.handle_tool_call("lcm_expand", &json!({ "id": leaf, "max_tokens": 100000 }), None);
    let jsons: Vec<&str> = expanded["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["json"].as_str().unwrap())
        .collect();
    assert!(jsons.iter().any(|json| json.contains("WH-2024-17")), "{expanded}");
    let summaries = engine.handle_tool_call(
        "lcm_grep",
        &json!({ "pattern": ".", "scope": "summaries", "limit": 3 }),
        None,
    );
    assert_eq!(summaries["matches"].as_array().unwrap().len(), 3, "{summaries}");
}

#[test]
fn status_reports_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = compacted_engine(dir.path());
    let status = engine.handle_tool_call("lcm_status", &json!({}), None);
    assert!(status["bytes_on_disk"].as_u64().unwrap() > 0, "{status}");
    assert!(status["messages"].as_u64().unwrap() > 60, "{status}");
    assert!(
        !status["summaries_by_depth"].as_array().unwrap().is_empty(),
        "{status}"
    );
    assert!(status["compression_ratio"].as_f64().unwrap() > 1.0, "{status}");
    assert_eq!(engine.get_tool_schemas().len(), 4);
}

#[test]
fn typed_words_found_together_are_searched_as_a_phrase() {
    use ctxhost_engine_abi::{Fact, FactBody};
    let dir = tempfile::tempdir().unwrap();
    let mut engine = super::engine(dir.path(), 1_000_000, json!({}));
    engine
        .on_session_start("phrases", &SessionInfo::default())
        .unwrap();
    // Every message says `error` and `rollback`, never side by side, except one old message.
    let mut messages: Vec<Message> = (0..2_000)
        .map(|n| Message::user(format!("build {n}: error in module {n}, rollback of release {n}")))
        .collect();
    messages[17] = Message::user("the deploy failed: error rollback needed on release 17");
    engine
        .observe(&Fact {
            session_id: "phrases".into(),
            at_message: 0,
            body: FactBody::MessagesAppended { messages },
        })
        .unwrap();
    let answer = engine.handle_tool_call("lcm_grep", &json!({ "pattern": "error rollback" }), None);
    let matches = answer["matches"].as_array().unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(matches.len(), 1, "{answer}");
    assert!(matches[0]["snippet"]
        .as_str()
        .unwrap()
        .contains("error rollback needed"));
    // Only the message holding the two words together was read: not the 2,000 holding both.
    assert_eq!(answer["checked"], 1, "{answer}");
}

/// A message larger than `max_tokens` is read back page by page by its id, the pages together
/// its exact JSON; a leaf summary lists it with a note rather than overrun the answer.
#[test]
fn a_message_larger_than_max_tokens_is_read_back_in_pages() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = super::engine(dir.path(), 8_000, json!({}));
    engine.on_session_start("big", &SessionInfo::default()).unwrap();
    let log = "2026-03-10T02:00:00Z ERROR build step 7 failed: exit 2\n".repeat(900);
    let mut messages = vec![Message::user("Why did the build fail?")];
    for turn in 0..4 {
        let id = format!("b{turn}");
        messages.push(Message::assistant_calls(vec![ctxhost_engine_abi::ToolCall::new(
            &id,
            "terminal",
            r#"{"command":"cat build.log"}"#,
        )]));
        messages.push(Message::tool(&id, format!("run {turn}\n{log}")));
    }
    messages.push(Message::assistant("The build step 7 fails."));
    let (_, compactions) = replay(&mut engine, &messages);
    assert!(compactions >= 1);
    let found = engine.handle_tool_call("lcm_grep", &json!({ "pattern": "run 0" }), None);
    let message_id = found["matches"][0]["id"].as_str().expect("found").to_owned();
    let original = serde_json::to_string(&messages[2]).unwrap();
    let (mut pages, mut cursor) = (String::new(), 0);
    loop {
        let page = engine.handle_tool_call(
            "lcm_expand",
            &json!({ "id": message_id, "max_tokens": 1_000, "cursor": cursor }),
            None,
        );
        let part = page["json_part"].as_str().unwrap_or_else(|| panic!("{page}"));
        assert!(part.chars().count() <= 4_000, "{}", part.len());
        pages.push_str(part);
        match page["next_cursor"].as_u64() {
            Some(next) => cursor = next as usize,
            None => break,
        }
    }
    assert_eq!(pages, original);
    // Whole when it fits.
    let whole = engine.handle_tool_call(
        "lcm_expand",
        &json!({ "id": message_id, "max_tokens": 100_000 }),
        None,
    );
    assert_eq!(whole["json"].as_str(), Some(original.as_str()));
    // The leaf holding it names it instead of overrunning its answer.
    let leaf = found["matches"][0]["summary"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no leaf covers it: {found}"));
    let (mut cursor, mut noted) = (0, false);
    loop {
        let page = engine.handle_tool_call(
            "lcm_expand",
            &json!({ "id": leaf, "max_tokens": 1_000, "cursor": cursor }),
            None,
        );
        let text = page.to_string();
        assert!(text.len() < 4 * 1_000 + 2_000, "{} characters", text.len());
        noted |= text.contains("page by page");
        match page["next_cursor"].as_u64() {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert!(noted, "the large message is named on a page of its leaf");
}

/// The same conversation replayed into one store at two windows: the second replay's summaries
/// cover the same messages as the first's. The status counts the summaries under the current
/// context, whose leaves cover no more than the messages, and says how many others there are
/// (verify12 F7: 101,394 tokens covered of 51,631 after three replays).
#[test]
fn status_counts_the_current_dag_once_after_replays_at_two_windows() {
    let dir = tempfile::tempdir().unwrap();
    let messages = synthetic::conversation(21, 60, 1_200);
    let mut replays = 0;
    for window in [6_000, 4_000] {
        let mut engine = engine(dir.path(), window, json!({ "fresh_tail": 4, "fan_in": 2 }));
        engine
            .on_session_start("replayed", &SessionInfo::default())
            .unwrap();
        let (_, compactions) = replay(&mut engine, &messages);
        assert!(compactions >= 1);
        replays += 1;
        let status = engine.handle_tool_call("lcm_status", &json!({}), None);
        let message_tokens = status["message_tokens"].as_u64().unwrap();
        let depths = status["summaries_by_depth"].as_array().unwrap();
        let leaves = depths.iter().find(|depth| depth["depth"] == 0).unwrap();
        let covered = leaves["covered_tokens"].as_u64().unwrap();
        assert!(covered <= message_tokens, "replay {replays}: {status}");
        let in_dag: u64 = depths.iter().map(|depth| depth["count"].as_u64().unwrap()).sum();
        let in_session = status["summaries_in_session"].as_u64().unwrap();
        match replays {
            1 => assert!(
                in_session == in_dag && status.get("summaries_note").is_none(),
                "{status}"
            ),
            _ => {
                assert!(in_session > in_dag, "{status}");
                let note = status["summaries_note"].as_str().unwrap();
                assert!(
                    note.starts_with(&format!("{} of the session's", in_session - in_dag)),
                    "{note}"
                );
            }
        }
    }
}

/// A summary of messages that carry no time says its times are when they were stored, in the
/// context and in `lcm_describe`: a replayed transcript's range is the seconds of its replay,
/// and read as the session's it told a three-hour incident lasted no time. Dated messages give
/// their own range.
#[test]
fn a_summary_of_undated_messages_says_its_times_are_when_they_were_stored() {
    for dated in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(dir.path(), 4_000, json!({ "fresh_tail": 4, "fan_in": 2 }));
        engine.on_session_start("times", &SessionInfo::default()).unwrap();
        let mut messages = synthetic::conversation(21, 60, 1_200);
        if !dated {
            for message in &mut messages {
                message.extra.remove("timestamp");
            }
        }
        let (context, compactions) = replay(&mut engine, &messages);
        assert!(compactions >= 1);
        let summary = context
            .iter()
            .find_map(|message| crate::assemble::parse_summary_message(message).map(|ids| (message, ids)))
            .expect("a summary message");
        let header = summary
            .0
            .text()
            .lines()
            .find(|line| line.starts_with("## sum_"))
            .unwrap()
            .to_owned();
        assert_eq!(header.contains(", stored "), !dated, "{header}");
        let described = engine.handle_tool_call("lcm_describe", &json!({ "id": summary.1[0] }), None);
        assert_eq!(
            described["time_is"],
            if dated { "written" } else { "stored" },
            "{described}"
        );
    }
}
