//! Every answer class of the endpoint, over real HTTP exchanges with the canned server.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{closed_port_url, request, summarizer, CannedServer, Reply, KEY, THIN_SUMMARY};
use crate::summarize::{CallError, Summarizer};

fn failure_of(replies: Vec<Reply>) -> CallError {
    let server = CannedServer::start(replies);
    summarizer(&server.base_url)
        .summarize(&request())
        .expect_err("the summary fails")
}

#[test]
fn a_good_answer_is_grounded_and_says_which_model_wrote_it() {
    let server = CannedServer::start(vec![Reply::completion(&format!(
        "<think>They want a summary.</think>\n{THIN_SUMMARY}"
    ))]);
    let answer = summarizer(&server.base_url).summarize(&request()).unwrap();
    assert_eq!(answer.summarizer, "model:tiny");
    assert!(answer.facts_added > 5, "{answer:?}");
    let summary = &answer.summary;
    assert!(
        summary.starts_with("## Goal\nFix the coupon discount.\n"),
        "{summary}"
    );
    assert!(!summary.contains("They want"), "{summary}");
    for fact in [
        "src/coupons/apply.py",
        "src/coupons/rules.py",
        "pytest -q tests/test_coupons.py",
        "AssertionError: expected 90.0, got 100.0",
        "Go on (step 7), and keep the API of apply_coupon unchanged.",
    ] {
        assert!(summary.contains(fact), "{fact} is missing:\n{summary}");
    }

    let received = server.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert!(
        request.head.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        request.head
    );
    assert!(
        request.head.contains(&format!("authorization: Bearer {KEY}"))
            || request.head.contains(&format!("Authorization: Bearer {KEY}")),
        "{}",
        request.head
    );
    assert_eq!(request.body["model"], "tiny");
    assert_eq!(request.body["max_tokens"], 300);
    assert_eq!(request.body["temperature"], 0);
    assert_eq!(request.body["stop"], json!(["</s>"]));
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let prompt = messages[1]["content"].as_str().unwrap();
    assert!(prompt.contains("[USER]: Go on (step 7)"), "{prompt}");
    assert!(prompt.contains("pytest -q tests/test_coupons.py"), "{prompt}");
}

#[test]
fn without_a_model_the_extractive_summary_answers_and_nothing_is_sent() {
    let answer = Summarizer::default().summarize(&request()).unwrap();
    assert_eq!(answer.summarizer, "extractive");
    assert_eq!(answer.facts_added, 0);
    assert!(
        answer.summary.contains("src/coupons/apply.py"),
        "{}",
        answer.summary
    );
    assert_eq!(
        Summarizer::default().info(),
        json!({"configured": false, "model": ""})
    );
    assert_eq!(
        summarizer(&closed_port_url()).info(),
        json!({"configured": true, "model": "tiny"})
    );
}

#[test]
fn useless_answers_are_failures() {
    for (content, why) in [
        (
            "Sure! The user wants the coupon fixed.",
            "none of the template's headings",
        ),
        ("", "blank"),
        ("<think>only thinking, never closed", "blank"),
        (
            &*format!("## Goal\n{}", "the coupon is wrong. ".repeat(600)),
            "not shorter than its input",
        ),
    ] {
        match failure_of(vec![Reply::completion(content)]) {
            CallError::Failed(reason) => {
                assert!(reason.contains(why), "{why}: {reason}");
            }
            other => panic!("{why}: {other:?}"),
        }
    }
}

#[test]
fn server_errors_and_malformed_answers_are_failures() {
    for (reply, why) in [
        (
            Reply::Http(500, r#"{"error": "out of memory"}"#.into()),
            "answered HTTP 500: `{\"error\": \"out of memory\"}`",
        ),
        (Reply::Http(404, "no such model".into()), "answered HTTP 404"),
        (
            Reply::Http(200, "{\"choices\": [".into()),
            "answered malformed JSON",
        ),
        (
            Reply::Http(200, r#"{"choices": []}"#.into()),
            "without choices[0].message.content",
        ),
        (
            Reply::Http(200, r#"{"choices": [{"message": {"content": null}}]}"#.into()),
            "without choices[0].message.content",
        ),
    ] {
        match failure_of(vec![reply]) {
            CallError::Failed(reason) => assert!(reason.contains(why), "{why}: {reason}"),
            other => panic!("{why}: {other:?}"),
        }
    }
}

#[test]
fn refused_authentication_means_unavailable_and_never_shows_the_key() {
    for status in [401, 403] {
        let echo = format!(r#"{{"error": "invalid key {KEY}"}}"#);
        match failure_of(vec![Reply::Http(status, echo)]) {
            CallError::Unavailable(reason) => {
                assert!(
                    reason.contains(&format!("refused the request (HTTP {status})")),
                    "{reason}"
                );
                assert!(!reason.contains(KEY), "{reason}");
            }
            other => panic!("{status}: {other:?}"),
        }
    }
}

#[test]
fn an_error_body_that_echoes_the_key_is_scrubbed() {
    let echo = format!(r#"{{"error": "bad header Bearer {KEY}"}}"#);
    match failure_of(vec![Reply::Http(500, echo)]) {
        CallError::Failed(reason) => {
            assert!(!reason.contains(KEY), "{reason}");
            assert!(reason.contains("Bearer [redacted]"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_never_answers_times_out() {
    let started = std::time::Instant::now();
    match failure_of(vec![Reply::Silence]) {
        CallError::TimedOut(reason) => {
            assert!(
                reason.starts_with("timed out after 1 s waiting for http://127.0.0.1:"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let waited = started.elapsed().as_secs_f64();
    assert!((0.9..5.0).contains(&waited), "waited {waited} s");
}

#[test]
fn a_closed_port_is_unavailable() {
    let url = closed_port_url();
    match summarizer(&url).summarize(&request()).unwrap_err() {
        CallError::Unavailable(reason) => {
            assert!(
                reason.starts_with(&format!("cannot reach {url}/chat/completions")),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_client_never_shows_the_key_in_debug_output() {
    let shown = format!("{:?}", summarizer(&closed_port_url()));
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
}
