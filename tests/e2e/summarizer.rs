//! The summarizer against the real model: a model-written, grounded summary; each useless answer
//! falling back; a server gone mid-session aborting with the context unchanged; a refused key
//! aborting without the key showing anywhere.

use ctxhost_engine_abi::Message;
use serde_json::Value;

use crate::support::{debugging_session, ModelServer, Workspace, IN_TEMPLATE, MODEL};

/// Facts of [`debugging_session`]'s middle that a grounded summary keeps, whatever the model wrote.
const FACTS: [&str; 5] = [
    "src/coupons/apply.py",
    "src/coupons/rules.py",
    "pytest -q tests/test_coupons.py",
    "AssertionError: expected 90.0, got 100.0",
    "keep the signature of apply_coupon unchanged",
];

fn model_name() -> String {
    format!("model:{MODEL}")
}

fn details(compaction: &Value) -> &Value {
    &compaction["details"]
}

#[test]
fn a_replayed_transcript_gets_a_grounded_summary_written_by_the_model() {
    let server = ModelServer::start();
    let workspace = Workspace::new(&server.base_url, IN_TEMPLATE);
    let transcript = workspace.write_transcript("session.json", &debugging_session(14));
    let run = workspace.ctxhost("run", &transcript, &["--context-length", "5000"], &[]);

    let compactions = run.compactions();
    assert!(!compactions.is_empty(), "no compaction:\n{}", run.printed);
    let last = compactions.last().unwrap();
    assert_eq!(last["outcome"]["status"], "applied", "{last}\n{}", server.log());
    assert_eq!(details(last)["summarizer"], model_name(), "{last}");
    assert_eq!(details(last)["outcome"], "compacted", "{}", run.printed);
    assert_eq!(details(last)["written_by"], model_name(), "{last}");
    assert_eq!(run.report["status"]["summarizer"], model_name());

    let summary = run.summary();
    assert!(
        summary.contains(&format!("by the {} summarizer", model_name())),
        "{summary}"
    );
    for fact in FACTS {
        assert!(summary.contains(fact), "{fact} is missing:\n{summary}");
    }
    assert!(!summary.contains("FALLBACK"), "{summary}");
}

#[test]
fn useless_answers_fall_back_to_the_extractive_summary() {
    let server = ModelServer::start();
    // A small transcript: its middle is a few hundred tokens, over the 400 worth a summary and
    // well under the 1,500 tokens the last case makes the model write.
    let messages = debugging_session(4);
    for (extra, why) in [
        // One token ("###"): no heading of the template.
        (
            "{temperature: 0, max_tokens: 1}",
            "the summary has none of the template's headings",
        ),
        // The end-of-turn token first: nothing.
        (
            "{temperature: 0, logit_bias: {'2': 100}}",
            "the summary came back blank",
        ),
        // A heading, then no end-of-turn token at all: longer than the middle it summarises. (The
        // grammar holds the heading: whether a 135M model writes one by itself changes with the
        // prompt.)
        (
            r###"{temperature: 0, max_tokens: 1500, logit_bias: {'2': -100, '0': -100}, grammar: "root ::= \"## Goal\\n\" [a-z ]+"}"###,
            "is not shorter than its input",
        ),
    ] {
        let workspace = Workspace::new(&server.base_url, &format!("    extra: {extra}\n"));
        let transcript = workspace.write_transcript("small.json", &messages);
        let run = workspace.ctxhost("compress", &transcript, &["--context-length", "3000"], &[]);
        let compaction = &run.compactions()[0];
        let details = details(compaction);
        assert_eq!(
            details["outcome"], "fallback",
            "{why}: {compaction}\n{}",
            run.printed
        );
        assert_eq!(details["summarizer"], model_name(), "{why}");
        assert_eq!(details["written_by"], "extractive", "{why}");
        let reason = details["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{why}: {reason}");
        let summary = run.summary();
        assert!(summary.contains("FALLBACK summary"), "{why}: {summary}");
        assert!(summary.contains(why), "{why}: {summary}");
        // The window is tiny (3,000 tokens), so is the fallback's budget: the latest request stays.
        assert!(
            summary.contains("## Goal\n- Latest request (answered): Go on with step"),
            "{why}: {summary}"
        );
    }
}

fn messages_of(values: &[Value]) -> Vec<Message> {
    serde_json::from_value(Value::Array(values.to_vec())).unwrap()
}

#[test]
fn a_server_gone_mid_session_aborts_and_keeps_the_context() {
    let server = ModelServer::start();
    let workspace = Workspace::new(&server.base_url, IN_TEMPLATE);
    let transcript = workspace.write_transcript("session.json", &debugging_session(10));
    let first = workspace.ctxhost("compress", &transcript, &["--context-length", "5000"], &[]);
    assert_eq!(
        details(&first.compactions()[0])["outcome"],
        "compacted",
        "{}",
        first.printed
    );
    assert!(first.summary().contains(&model_name()));

    server.stop();
    // The session goes on: new turns after the compacted context, then a compaction again.
    let mut context = first.context.clone();
    context.extend(debugging_session(6).into_iter().skip(2));
    let transcript = workspace.write_transcript("later.json", &context);
    let second = workspace.ctxhost("compress", &transcript, &["--context-length", "5000"], &[]);
    let compaction = &second.compactions()[0];
    assert_eq!(details(compaction)["outcome"], "aborted", "{compaction}");
    let kept = compaction["outcome"]["reason"].as_str().unwrap();
    assert!(kept.contains("cannot reach"), "{kept}");
    assert!(kept.contains("the context was kept as it was"), "{kept}");
    assert_eq!(compaction["tokens_after"], compaction["tokens_before"]);
    assert_eq!(messages_of(&second.context), messages_of(&context));
}

#[test]
fn a_refused_key_aborts_and_the_key_shows_nowhere() {
    const RIGHT: &str = "right-key-e2e-7781";
    const WRONG: &str = "wrong-key-e2e-5519";
    let server = ModelServer::start_with_key(RIGHT);
    let messages = debugging_session(10);
    let from_file = Workspace::new(
        &server.base_url,
        &format!("    api_key: {WRONG}\n    max_tokens: 200\n"),
    );
    let from_env = Workspace::new(
        &server.base_url,
        &format!("    api_key_env: E2E_SUMMARIZER_KEY\n{IN_TEMPLATE}"),
    );
    for (workspace, env) in [(&from_file, None), (&from_env, Some(WRONG))] {
        let transcript = workspace.write_transcript("session.json", &messages);
        let env: Vec<(&str, &str)> = env.map(|key| ("E2E_SUMMARIZER_KEY", key)).into_iter().collect();
        let run = workspace.ctxhost("compress", &transcript, &["--context-length", "5000"], &env);
        let compaction = &run.compactions()[0];
        assert_eq!(details(compaction)["outcome"], "aborted", "{compaction}");
        let reason = details(compaction)["reason"].as_str().unwrap();
        assert!(reason.contains("refused the request (HTTP 401)"), "{reason}");
        assert!(
            !run.printed.contains(WRONG),
            "the key was printed:\n{}",
            run.printed
        );
        assert!(!run.written.contains(WRONG), "the key was written");
        assert_eq!(messages_of(&run.context), messages_of(&messages));
    }

    // The right key, from the environment, is accepted.
    let transcript = from_env.write_transcript("session.json", &messages);
    let run = from_env.ctxhost(
        "compress",
        &transcript,
        &["--context-length", "5000"],
        &[("E2E_SUMMARIZER_KEY", RIGHT)],
    );
    assert_eq!(
        details(&run.compactions()[0])["outcome"],
        "compacted",
        "{}",
        run.printed
    );
    assert!(
        !run.printed.contains(RIGHT),
        "the key was printed:\n{}",
        run.printed
    );
    assert!(!run.written.contains(RIGHT), "the key was written");
}
