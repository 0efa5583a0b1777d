//! When lcm stops trying: compactions that change nothing are not counted and pause automatic
//! compaction; a summarizer that timed out is left alone for a while (compressor.md, "Failure and
//! anti-thrash rules"; explore-hermes FINDINGS.md, findings 2 and 3).

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RErr, RResult, RStr, RString},
};
use ctxhost_engine_abi::{
    ffi::{HostServices, HostServices_TO, LogLevel},
    CompressRequest, Engine, EngineError, ErrorKind, Host, Message, ModelInfo, SessionInfo, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{assert_valid_compaction, engine};
use crate::Lcm;

/// A host whose model summarizer never answers in time, counting how often it is asked.
#[derive(Clone, Default)]
struct TimingOutHost {
    asked: Arc<AtomicUsize>,
}

impl HostServices for TimingOutHost {
    fn log(&self, _level: LogLevel, _target: RStr<'_>, _message: RStr<'_>) {}

    fn call(&self, service: RStr<'_>, _request: RStr<'_>) -> RResult<RString, EngineError> {
        match service.as_str() {
            "summarize" => {
                self.asked.fetch_add(1, Ordering::SeqCst);
                RErr(EngineError::unavailable("timed out after 120 s"))
            }
            other => RErr(EngineError::unknown_method(other)),
        }
    }
}

/// A system message, then `turns` user questions of about 100 tokens each with short answers.
fn chat(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are terse.")];
    for i in 0..turns {
        messages.push(Message::user(format!("question {i}: {}", "words ".repeat(65))));
        messages.push(Message::assistant(format!("answer {i}")));
    }
    messages.push(Message::user("the last question"));
    messages
}

/// A context over the threshold that lcm cannot make smaller: one long user message.
fn nothing_to_compact() -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("a very long request ".repeat(400)),
    ]
}

fn compress(engine: &mut Lcm, messages: Vec<Message>) -> Result<Vec<Message>, EngineError> {
    engine.compress(messages, &CompressRequest::default())
}

fn pause(engine: &mut Lcm) {
    for _ in 0..2 {
        let context = nothing_to_compact();
        assert_eq!(compress(engine, context.clone()).unwrap(), context);
    }
    assert!(engine.is_paused());
}

#[test]
fn a_compress_that_changes_nothing_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    engine.on_session_start("s1", &SessionInfo::default()).unwrap();
    let input = chat(40);
    let once = compress(&mut engine, input.clone()).unwrap();
    assert_valid_compaction(&input, &once);
    assert_eq!(engine.counters().compression_count, 1);
    for _ in 0..3 {
        assert_eq!(compress(&mut engine, once.clone()).unwrap(), once);
    }
    assert_eq!(
        engine.counters().compression_count,
        1,
        "Hermes warns from this count; only the compaction that changed the context counts"
    );
}

#[test]
fn two_compactions_that_change_nothing_pause_automatic_compaction_until_a_prompt_fits() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 1_000, json!({}));
    engine.on_session_start("s1", &SessionInfo::default()).unwrap();
    let over = Some(/*prompt_tokens*/ 5_000);
    assert!(engine.should_compress(over));
    pause(&mut engine);
    assert!(!engine.should_compress(over));
    assert!(!engine.should_compress_preflight(&nothing_to_compact()));
    assert_eq!(engine.get_status()["paused"], true);

    // Still over the threshold: the pause holds.
    engine.update_from_response(&Usage {
        prompt_tokens: 5_000,
        ..Usage::default()
    });
    assert!(!engine.should_compress(over));
    engine.update_from_response(&Usage {
        prompt_tokens: 100,
        ..Usage::default()
    });
    assert!(engine.should_compress(over));
    assert_eq!(engine.get_status()["paused"], false);
}

#[test]
fn a_manual_compress_a_model_switch_or_a_new_session_lifts_the_pause() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 1_000, json!({}));
    engine.on_session_start("s1", &SessionInfo::default()).unwrap();
    let over = Some(/*prompt_tokens*/ 5_000);

    pause(&mut engine);
    let answer = engine.call_ext("resume_auto_compaction", &Value::Null).unwrap();
    assert_eq!(answer, json!({ "paused": false, "was_paused": true }));
    assert!(engine.should_compress(over));

    pause(&mut engine);
    engine.update_model(&ModelInfo {
        context_length: 2_000,
        ..ModelInfo::default()
    });
    assert!(engine.should_compress(over));

    pause(&mut engine);
    engine.on_session_reset();
    assert!(engine.should_compress(over));

    pause(&mut engine);
    engine.on_session_start("s2", &SessionInfo::default()).unwrap();
    assert!(engine.should_compress(over));
}

#[test]
fn after_a_summarizer_timeout_lcm_truncates_without_asking_until_the_cooldown_ends() {
    let dir = tempfile::tempdir().unwrap();
    let fake = TimingOutHost::default();
    let host = Host::new(HostServices_TO::from_ptr(RArc::new(fake.clone()), TD_Opaque));
    let config = json!({ "database": dir.path().join("lcm.sqlite"), "fresh_tail": 4 });
    let mut engine = Lcm::new(&config, host).unwrap();
    engine.update_model(&ModelInfo {
        context_length: 4_000,
        ..ModelInfo::default()
    });
    engine.on_session_start("s1", &SessionInfo::default()).unwrap();

    // The first timeout aborts: nothing is written and the host keeps the context.
    let input = chat(40);
    let error = compress(&mut engine, input.clone()).unwrap_err();
    assert_eq!(error.kind, ErrorKind::UNAVAILABLE);
    assert!(
        error.message.contains("not asked again for 60 s"),
        "{}",
        error.message
    );
    assert_eq!(fake.asked.load(Ordering::SeqCst), 1);
    let status = engine.get_status();
    assert_eq!(status["last_summarizer_failure"], "timed out after 120 s");
    assert!(status["cooldown_until"].is_u64());

    // While it cools down the model is not asked; the context still shrinks, by truncations
    // that lcm_expand undoes.
    let compacted = compress(&mut engine, input.clone()).unwrap();
    assert_valid_compaction(&input, &compacted);
    assert!(compacted.len() < input.len());
    assert_eq!(fake.asked.load(Ordering::SeqCst), 1);
    let report = engine.call_ext("last_compaction", &Value::Null).unwrap();
    assert_eq!(report["summarizer"], "truncation");
    assert!(report["summarizer_skipped"]
        .as_str()
        .unwrap()
        .starts_with("the summarizer is cooling down for"));
    assert_eq!(engine.counters().compression_count, 1);

    // Once it has ended the model is asked again, and a second timeout waits longer.
    engine.expire_cooldown_for_test();
    let mut grown = compacted;
    grown.extend(chat(40).into_iter().skip(1));
    let error = compress(&mut engine, grown).unwrap_err();
    assert!(
        error.message.contains("not asked again for 300 s"),
        "{}",
        error.message
    );
    assert_eq!(fake.asked.load(Ordering::SeqCst), 2);
}
