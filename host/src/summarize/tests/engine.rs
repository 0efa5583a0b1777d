//! The built-in compressor using the host's summarizer through the host services, against the
//! canned server: what a user of `ctxhost` sees for each answer class.

use std::sync::Arc;

use ctxhost_compressor::Compressor;
use ctxhost_engine_abi::{instantiate, Host, Message, ModelInfo};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{closed_port_url, conversation, settings, CannedServer, Reply, KEY, THIN_SUMMARY};
use crate::{
    engine::{EngineHandle, EngineOrigin},
    services::{host_services_for, ServiceContext},
};

fn context_for(base_url: &str) -> Arc<ServiceContext> {
    ServiceContext::with_summarizer(&settings(base_url), |_| None)
}

/// The compressor with small budgets, created with the host's services.
fn compressor(context: &Arc<ServiceContext>) -> EngineHandle {
    let config = json!({"protect_first_n": 1, "protect_last_n": 4}).to_string();
    let object = instantiate::<Compressor>(&config, host_services_for("compressor", context)).unwrap();
    let mut engine = EngineHandle::new(object, "compressor", EngineOrigin::BuiltIn);
    engine
        .update_model(&ModelInfo {
            context_length: 8_000,
            ..ModelInfo::default()
        })
        .unwrap();
    engine
}

struct Attempt {
    result: Result<Vec<Message>, String>,
    report: Value,
    status: Value,
}

fn compress(engine: &mut EngineHandle, messages: &[Message]) -> Attempt {
    let result = engine
        .compress(messages, None, &Default::default())
        .map_err(|error| error.to_string());
    Attempt {
        result,
        report: engine.call_ext("last_compaction", &Value::Null).unwrap().unwrap(),
        status: engine.get_status().unwrap(),
    }
}

fn summary_text(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|message| message.text().into_owned())
        .find(|text| text.starts_with("[CONTEXT COMPACTION]"))
        .expect("a summary message")
}

#[test]
fn the_services_answer_the_new_names_and_keep_the_old_ones() {
    let host = Host::new(host_services_for("probe", &context_for(&closed_port_url())));
    assert_eq!(
        host.call("services", &Value::Null).unwrap(),
        json!([
            "services",
            "log.max_level",
            "summarizer.info",
            "summarize",
            "count_tokens",
            "paths"
        ])
    );
    // No config file: the current directory, and the data directory in it.
    let paths = host.paths().unwrap();
    assert_eq!(paths.config_dir, std::env::current_dir().unwrap());
    assert_eq!(paths.data_dir, paths.config_dir.join(".ctxhost"));
    assert!(host.call("log.max_level", &Value::Null).unwrap().is_string());
    assert_eq!(
        host.call("summarizer.info", &Value::Null).unwrap(),
        json!({"configured": true, "model": "tiny"})
    );
    let error = host.call("summarize", &json!({"messages": 3})).unwrap_err();
    assert_eq!(error.kind, ctxhost_engine_abi::ErrorKind::INVALID_INPUT);
    let host = Host::new(host_services_for("probe", &ServiceContext::without_model()));
    let answer = host
        .call("summarize", &json!({"messages": conversation()}))
        .unwrap();
    assert_eq!(answer["summarizer"], "extractive");
    assert!(answer["summary"]
        .as_str()
        .unwrap()
        .contains("src/coupons/apply.py"));
}

#[test]
fn a_model_summary_is_grounded_and_reported() {
    let server = CannedServer::start(vec![Reply::completion(THIN_SUMMARY)]);
    let mut engine = compressor(&context_for(&server.base_url));
    let attempt = compress(&mut engine, &conversation());
    let compacted = attempt.result.unwrap();
    let summary = summary_text(&compacted);
    assert!(summary.contains("by the model:tiny summarizer"), "{summary}");
    assert!(summary.contains("Fix the coupon discount."), "{summary}");
    assert!(summary.contains("src/coupons/apply.py"), "{summary}");
    assert!(
        summary.contains("AssertionError: expected 90.0, got 100.0"),
        "{summary}"
    );
    assert_eq!(attempt.report["outcome"], "compacted");
    assert_eq!(attempt.report["summarizer"], "model:tiny");
    assert_eq!(attempt.report["written_by"], "model:tiny");
    assert!(attempt.report["facts_added"].as_u64().unwrap() > 0);
    assert_eq!(attempt.status["summarizer"], "model:tiny");
}

#[test]
fn an_unreachable_model_aborts_and_keeps_the_context() {
    for replies in [vec![Reply::Http(401, format!("bad key {KEY}"))], vec![]] {
        let url = if replies.is_empty() {
            closed_port_url()
        } else {
            CannedServer::start(replies).base_url
        };
        let mut engine = compressor(&context_for(&url));
        let messages = conversation();
        let attempt = compress(&mut engine, &messages);
        let error = attempt.result.unwrap_err();
        assert!(error.contains("the context was kept as it was"), "{error}");
        assert!(!error.contains(KEY), "{error}");
        assert_eq!(attempt.report["outcome"], "aborted");
        assert_eq!(attempt.report["tokens_after"], attempt.report["tokens_before"]);
        assert_eq!(attempt.report["written_by"], Value::Null);
        // No cool-down after a fast refusal: the next compaction asks again.
        assert_eq!(attempt.status["cooldown_remaining_s"], 0);
        assert_eq!(engine.counters().unwrap().compression_count, 0);
    }
}

#[test]
fn a_failing_model_gets_the_fallback_summary_and_a_60_s_cool_down() {
    let server = CannedServer::start(vec![Reply::Http(500, "{}".into())]);
    let mut engine = compressor(&context_for(&server.base_url));
    let attempt = compress(&mut engine, &conversation());
    let summary = summary_text(&attempt.result.unwrap());
    assert!(summary.contains("FALLBACK"), "{summary}");
    assert!(summary.contains("answered HTTP 500"), "{summary}");
    assert!(summary.contains("src/coupons/apply.py"), "{summary}");
    assert_eq!(attempt.report["outcome"], "fallback");
    assert_eq!(attempt.report["written_by"], "extractive");
    assert_eq!(attempt.status["cooldown_remaining_s"], 60);
}

#[test]
fn a_timeout_aborts_then_the_model_is_left_alone_for_60_s() {
    let server = CannedServer::start(vec![Reply::Silence]);
    let mut engine = compressor(&context_for(&server.base_url));
    let messages = conversation();
    let first = compress(&mut engine, &messages);
    let error = first.result.unwrap_err();
    assert!(error.contains("timed out after 1 s"), "{error}");
    assert!(error.contains("not asked again for 60 s"), "{error}");
    assert_eq!(first.report["outcome"], "aborted");
    assert_eq!(first.status["cooldown_remaining_s"], 60);

    // During the cool-down the model is not asked: the fallback summary is used at once.
    let second = compress(&mut engine, &messages);
    let summary = summary_text(&second.result.unwrap());
    assert!(summary.contains("FALLBACK"), "{summary}");
    assert_eq!(second.report["outcome"], "fallback");
    assert!(
        second.report["reason"].as_str().unwrap().contains("cooling down"),
        "{}",
        second.report
    );
    assert_eq!(server.received().len(), 1);
}
