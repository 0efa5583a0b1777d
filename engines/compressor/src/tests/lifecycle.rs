//! Across compactions and turns: updating the summary, placing it, pausing and resuming, config,
//! status and the report.

use ctxhost_engine_abi::{Engine, ErrorKind, Host, Message, ModelInfo, Usage};
use ctxhost_engine_kit::tokens::estimate_messages_tokens;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{assert_valid, compress, engine, long_conversation, report, summary_of, SMALL_WINDOW};
use crate::{report::Outcome, Compressor, CompressorConfig, SUMMARY_END, SUMMARY_MARKER, SYSTEM_NOTE};

#[test]
fn a_second_compaction_updates_the_summary_instead_of_nesting_it() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    let mut messages = long_conversation(20, 400);
    messages[5] = Message::user("Keep the error in `src/parser.rs:42` in mind, see issue #314.");
    let first = compress(&mut engine, messages);
    let mut second_input = first;
    second_input.extend(long_conversation(20, 400).into_iter().skip(1));
    let second = compress(&mut engine, second_input);
    let report = report(&mut engine);
    assert!(report.updated_previous_summary);
    let summaries: Vec<&Message> = second
        .iter()
        .filter(|m| m.text().contains(SUMMARY_MARKER))
        .collect();
    assert_eq!(summaries.len(), 2, "the system note and one summary");
    let summary = summary_of(&second);
    assert_eq!(summary.matches(SUMMARY_MARKER).count(), 1, "{summary}");
    assert!(
        summary.contains("#314") && summary.contains("src/parser.rs"),
        "{summary}"
    );
    assert_eq!(second[0].text().matches(SYSTEM_NOTE).count(), 1);
    assert_valid(&second);
}

#[test]
fn the_summary_never_stands_next_to_a_message_of_its_own_role() {
    for (first_n, last_n) in [(1, 4), (2, 4), (3, 3), (0, 5), (4, 6)] {
        let mut engine = engine(SMALL_WINDOW, first_n, last_n);
        let compacted = compress(&mut engine, long_conversation(20, 400));
        let at = compacted
            .iter()
            .position(|m| m.text().starts_with(SUMMARY_MARKER));
        match at {
            Some(at) => {
                let role = compacted[at].role;
                assert!(at == 0 || compacted[at - 1].role != role, "{first_n}/{last_n}");
                assert!(
                    compacted.get(at + 1).is_none_or(|next| next.role != role),
                    "{first_n}/{last_n}"
                );
            }
            // Merged into the first tail message, clearly delimited.
            None => assert!(
                compacted.iter().any(|m| m.text().contains(SUMMARY_END)),
                "{first_n}/{last_n}"
            ),
        }
    }
}

#[test]
fn a_summary_merged_into_the_first_tail_message_is_delimited_and_found_again() {
    // The head ends with the user and only assistant messages follow: no role fits a summary.
    let mut messages = vec![
        Message::system("s"),
        Message::user("Write the report, section by section."),
    ];
    for n in 0..8 {
        messages.push(Message::assistant(format!(
            "section {n}: {}",
            "words ".repeat(400)
        )));
    }
    let mut engine = engine(SMALL_WINDOW, 1, 1);
    let first = compress(&mut engine, messages.clone());
    assert_valid(&first);
    assert_eq!(
        report(&mut engine).summary_placement.as_deref(),
        Some("merged into the first tail message")
    );
    let merged = first.last().unwrap();
    let text = merged.text();
    assert!(text.starts_with(SUMMARY_MARKER), "{text}");
    let (_, original) = text.split_once(SUMMARY_END).unwrap();
    assert_eq!(original.trim_start(), messages.last().unwrap().text());

    let mut again = first;
    for n in 8..16 {
        again.push(Message::assistant(format!(
            "section {n}: {}",
            "words ".repeat(400)
        )));
    }
    let second = compress(&mut engine, again);
    assert!(report(&mut engine).updated_previous_summary);
    let carrying = second
        .iter()
        .filter(|m| m.text().trim_start().starts_with(SUMMARY_MARKER))
        .count();
    assert_eq!(carrying, 1);
    assert_valid(&second);
}

#[test]
fn two_ineffective_compactions_pause_automatic_compaction_until_a_prompt_fits() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    assert!(engine.should_compress(Some(4_000)), "equality fires");
    for _ in 0..2 {
        compress(&mut engine, long_conversation(20, 400));
        engine.update_from_response(&Usage::new(/*prompt_tokens*/ 4_500, 100));
    }
    assert!(engine.is_paused());
    assert!(!engine.should_compress(Some(9_000)));
    assert_eq!(engine.get_status()["paused"], true);
    // A prompt under the threshold lifts the pause by itself.
    engine.update_from_response(&Usage::new(3_000, 100));
    assert!(engine.should_compress(Some(4_000)));
}

#[test]
fn the_pause_lifts_on_reset_model_switch_and_manual_resume() {
    let pause = |engine: &mut Compressor| {
        for _ in 0..2 {
            compress(engine, long_conversation(3, 100));
        }
        assert!(engine.is_paused());
    };
    let mut engine = engine(SMALL_WINDOW, 3, 20);
    pause(&mut engine);
    let answer = engine.call_ext("resume_auto_compaction", &Value::Null).unwrap();
    assert_eq!(answer, json!({"paused": false, "was_paused": true}));
    pause(&mut engine);
    engine.on_session_reset();
    assert!(!engine.is_paused());
    pause(&mut engine);
    engine.update_model(&ModelInfo {
        context_length: 16_000,
        ..ModelInfo::default()
    });
    assert!(!engine.is_paused() && engine.should_compress(Some(8_000)));
}

#[test]
fn disabled_compaction_never_fires_but_a_manual_compress_still_works() {
    let mut engine =
        Compressor::new(&json!({"enabled": false, "protect_last_n": 4}), Host::detached()).unwrap();
    engine.update_model(&ModelInfo {
        context_length: SMALL_WINDOW,
        ..ModelInfo::default()
    });
    let messages = long_conversation(20, 400);
    assert!(!engine.should_compress(Some(1_000_000)));
    assert!(!engine.should_compress_preflight(&messages));
    compress(&mut engine, messages);
    assert_eq!(report(&mut engine).outcome, Outcome::Compacted);
}

#[test]
fn nothing_fires_before_the_window_is_known() {
    let mut engine = Compressor::with_config(CompressorConfig::default());
    assert!(!engine.should_compress(Some(1_000_000)));
    assert!(!engine.should_compress_preflight(&long_conversation(50, 400)));
    engine.update_model(&ModelInfo {
        context_length: SMALL_WINDOW,
        ..ModelInfo::default()
    });
    assert!(engine.should_compress_preflight(&long_conversation(50, 400)));
    assert!(!engine.should_compress_preflight(&long_conversation(2, 100)));
}

/// The preflight given the host's rough estimate answers as the one that counts it, on contexts
/// either side of the threshold, before the window is known and with compaction disabled.
#[test]
fn the_estimated_preflight_answers_as_the_counted_one() {
    let disabled = Compressor::new(&json!({"enabled": false}), Host::detached()).unwrap();
    for mut engine in [Compressor::with_config(CompressorConfig::default()), disabled] {
        for known in [false, true] {
            if known {
                engine.update_model(&ModelInfo {
                    context_length: SMALL_WINDOW,
                    ..ModelInfo::default()
                });
            }
            for turns in [1, 2, 5, 10, 20, 30, 50] {
                let messages = long_conversation(turns, 400);
                let rough = estimate_messages_tokens(&messages);
                assert_eq!(
                    engine.should_compress_preflight_estimated(&messages, rough),
                    engine.should_compress_preflight(&messages),
                    "{turns} turns, window known: {known}"
                );
            }
        }
    }
}

#[test]
fn an_impossible_config_value_is_refused_with_its_key() {
    let error = Compressor::new(&json!({"threshold": 3}), Host::detached())
        .err()
        .unwrap();
    assert_eq!(error.kind, ErrorKind::CONFIG);
    assert_eq!(
        error.message.as_str(),
        "threshold: must be between 0 and 1, got 3"
    );
    let error = Compressor::new(&json!({"protect_first_n": "three"}), Host::detached())
        .err()
        .unwrap();
    assert_eq!(
        error.message.as_str(),
        "protect_first_n: must be a whole number ≥ 0, got \"three\""
    );
    assert!(Compressor::new(&json!({"future_key": 1}), Host::detached()).is_ok());
}

#[test]
fn status_shows_the_contract_fields_and_the_compressors_own() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    engine.update_from_response(&Usage::new(2_000, 10));
    let status = engine.get_status();
    assert_eq!(status["last_prompt_tokens"], 2_000);
    assert_eq!(status["threshold_tokens"], 4_000);
    assert_eq!(status["context_length"], SMALL_WINDOW);
    assert_eq!(status["usage_percent"], 25.0);
    assert_eq!(status["compression_count"], 0);
    assert_eq!(status["paused"], false);
    assert_eq!(status["summarizer"], "extractive");
    assert_eq!(status["cooldown_until"], Value::Null);
    // What a model is asked for, and the room an extractive summary may fill: both named.
    assert_eq!(status["max_model_summary_tokens"], 400);
    assert_eq!(status["summary_room_tokens"], 2_000);
    assert_eq!(
        engine.ext_methods(),
        vec!["resume_auto_compaction", "last_compaction", "budgets"]
    );
    assert_eq!(
        engine.call_ext("budgets", &Value::Null).unwrap()["tail_token_budget"],
        800
    );
    assert_eq!(
        engine.call_ext("nope", &Value::Null).unwrap_err().kind,
        ErrorKind::UNKNOWN_METHOD
    );
}

#[test]
fn the_last_compaction_report_has_the_documented_shape() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    assert_eq!(
        engine.call_ext("last_compaction", &Value::Null).unwrap(),
        Value::Null
    );
    let mut messages = long_conversation(20, 400);
    // A screenshot sent with an early request: summarised, named, not kept.
    messages[5].content = ctxhost_engine_abi::Content::Parts(vec![
        json!({"type": "text", "text": "the checkout screen crashes, see both screenshots"}),
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}),
    ]);
    let compacted = compress(&mut engine, messages.clone());
    let report = engine.call_ext("last_compaction", &Value::Null).unwrap();
    assert_eq!(report["images_summarized"], 2);
    assert_eq!(report["images_replaced"], 0);
    let keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "summarizer",
            "written_by",
            "facts_added",
            "outcome",
            "reason",
            "focus_topic",
            "tokens_before",
            "tokens_after",
            "messages_before",
            "messages_after",
            "head_messages",
            "middle_messages",
            "tail_messages",
            "pruned_outputs",
            "deduplicated_outputs",
            "shortened_arguments",
            "images_replaced",
            "cut_outputs",
            "images_summarized",
            "summary_tokens",
            "updated_previous_summary",
            "summary_placement",
            "duration_ms",
        ]
    );
    assert_eq!(report["outcome"], "compacted");
    assert_eq!(report["written_by"], "extractive");
    assert_eq!(report["messages_before"], messages.len());
    assert_eq!(report["messages_after"], compacted.len());
    assert_eq!(report["tokens_after"], estimate_messages_tokens(&compacted));
    assert_eq!(engine.counters().compression_count, 1);
}

#[test]
fn a_reset_forgets_the_remembered_summary() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    compress(&mut engine, long_conversation(20, 400));
    engine.on_session_reset();
    assert_eq!(engine.counters().compression_count, 0);
    assert_eq!(engine.counters().threshold_tokens, 4_000);
    compress(&mut engine, long_conversation(20, 400));
    assert!(!report(&mut engine).updated_previous_summary);
}

/// The head is where the conversation started, compaction after compaction: what an earlier
/// compaction placed after its head (the request pinned there, the turns its tail kept) is never
/// taken into the head of a later one and frozen there before the summary of older work.
#[test]
fn the_head_stays_where_the_conversation_started_compaction_after_compaction() {
    use ctxhost_engine_abi::{Role, ToolCall};
    let call = |id: String, command: &str| {
        Message::assistant_calls(vec![ToolCall::new(
            &id,
            "terminal",
            json!({ "command": command }).to_string(),
        )])
    };
    let log = "2026-03-10T02:00:00Z INFO ledger.reconcile.batch batch=7 rows=912\n".repeat(160);
    let source = "    1|     return self._pool.getconn()\n".repeat(200);
    let mut turns = Vec::new();
    for run in 0..14 {
        if run == 6 {
            turns.push(Message::user(
                "Note: the staging DB is pg-staging-03.internal:5433.",
            ));
        }
        if run == 10 {
            // A short result: small enough for a head counted afresh to take it in.
            turns.push(call("git".to_owned(), "git log --oneline -3"));
            turns.push(Message::tool(
                "git",
                "6bbc76a session tz fix\n450e743 cursor: add prepare flag",
            ));
        }
        let (logs, read) = (format!("log{run}"), format!("read{run}"));
        turns.push(call(
            logs.clone(),
            &format!("kubectl logs job/ledger-reconcile-{run}"),
        ));
        turns.push(Message::tool(&logs, log.clone()));
        turns.push(call(read.clone(), "cat -n ledger/db/cursor_pool.py"));
        turns.push(Message::tool(&read, source.clone()));
    }
    let mut engine = engine(SMALL_WINDOW, 3, 6);
    let mut context = vec![
        Message::system("You are a coding agent."),
        Message::user("The nightly job crashes since the psycopg bump (issue #4821)."),
    ];
    let mut heads = Vec::new();
    for message in turns {
        if message.role == Role::Assistant && engine.should_compress(Some(estimate_messages_tokens(&context)))
        {
            context = compress(&mut engine, context);
            assert_valid(&context);
            let summary_at = context
                .iter()
                .position(|m| m.role != Role::System && m.text().contains(SUMMARY_MARKER))
                .expect("a summary");
            heads.push(
                context[..summary_at]
                    .iter()
                    .map(|m| m.text().chars().take(20).collect::<String>())
                    .collect::<Vec<_>>(),
            );
        }
        context.push(message);
    }
    assert!(heads.len() >= 3, "{heads:?}");
    // The system message, the first request, and the newest request when it is pinned.
    for head in &heads {
        assert!(head.len() <= 3, "{heads:?}");
        assert!(head[1].starts_with("The nightly job"), "{heads:?}");
    }
}

/// What follows an earlier summary is no part of the head, however much it weighs: a heavy message
/// of the user's after the summary (a pasted log, a screenshot) shrank the head to the system
/// message, and the first request was summarised away while a later one stood verbatim in its
/// place (verify18).
#[test]
fn a_heavy_message_after_the_summary_does_not_push_the_first_request_out_of_the_head() {
    let mut engine = engine(SMALL_WINDOW, 3, 4);
    // Its first turn reads too much for the head: the head is the system message and the request.
    let mut context = compress(&mut engine, long_conversation(12, 4_800));
    assert!(context[1].text().starts_with("request 0"), "{:?}", context[1]);
    context.push(Message::user(format!(
        "here is the CI log: {}",
        "E   assert [1, 2, 8, 4] == [1, 2, 4, 8]\n".repeat(280)
    )));
    context.extend(long_conversation(6, 400).into_iter().skip(1));
    let context = compress(&mut engine, context);
    assert_valid(&context);
    assert!(context[1].text().starts_with("request 0"), "{:?}", &context[..3]);
}

/// A summary counts every turn it stands for, an earlier summary's included: a session repeating
/// its calls could otherwise get a summary identical to the one it replaces, placed after the
/// newest request, which the host reads as an older message moved past it.
#[test]
fn a_summary_counts_the_turns_of_the_summary_it_replaces() {
    let turns_in = |messages: &[Message]| -> usize {
        let text = summary_of(messages);
        let rest = text.split_once("Earlier turns (").expect("a preamble").1;
        rest.split_once(" messages)").unwrap().0.parse().unwrap()
    };
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    let first = compress(&mut engine, long_conversation(20, 400));
    let first_turns = turns_in(&first);
    assert_eq!(first_turns, report(&mut engine).middle_messages);
    let mut second_input = first;
    second_input.extend(long_conversation(20, 400).into_iter().skip(1));
    let second = compress(&mut engine, second_input);
    assert_eq!(
        turns_in(&second),
        first_turns + report(&mut engine).middle_messages
    );
}
