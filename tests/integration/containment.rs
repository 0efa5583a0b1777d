//! A plugin that panics or misbehaves never takes the host down, and never costs the user context.

use std::fs;

use ctxhost_engine_abi::{messages_from_json, Message};
use ctxhost_engine_kit::sequence::find_sequence_problems;

use crate::support::{example, example_transcript, texts, PluginDir};

fn example_messages() -> Vec<Message> {
    let text = fs::read_to_string(example("transcripts/coupon-fix.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(value["messages"].clone()).unwrap()
}

/// Runs the example through the faulty engine configured with `block`; returns the report, stderr
/// and the final context.
fn run_faulty(block: &str) -> (String, String, Vec<Message>) {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!(
        "context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n{block}"
    ));
    let out = tree.root().join("final.json");
    let output = tree.run(&["run", &example_transcript(), "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "the host survives: {stderr}");
    let context = messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    (stdout, stderr, context)
}

#[test]
fn a_panic_in_any_engine_method_is_contained_and_reported() {
    let methods = [
        "update_model",
        "on_session_start",
        "update_from_response",
        "should_compress",
        "should_compress_preflight",
        "compress",
        "counters",
        "call_ext",
        "get_status",
        "on_session_end",
    ];
    for method in methods {
        let (stdout, stderr, context) = run_faulty(&format!("  panic_in: {method}\n"));
        assert!(
            stdout.contains("errors"),
            "{method}: the report lists the errors:\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains(&format!("`{method}` panicked")),
            "{method}:\n{stdout}"
        );
        assert!(
            find_sequence_problems(&context).is_empty(),
            "{method}: the final context is valid"
        );
    }
}

#[test]
fn a_panicking_compress_keeps_the_context_as_it_was() {
    let (stdout, _, context) = run_faulty("  panic_in: compress\n");
    assert!(stdout.contains("KEPT the context as it was"), "{stdout}");
    assert_eq!(context, example_messages(), "nothing was lost");
}

#[test]
fn invalid_results_are_refused_and_the_context_kept() {
    let cases = [
        ("orphan_result", "not a valid sequence"),
        ("unanswered_call", "not a valid sequence"),
        ("drop_system", "the system message was lost"),
        ("drop_last_user", "the last user message was lost"),
        ("empty", "it is empty"),
    ];
    for (kind, reason) in cases {
        let (stdout, _, context) = run_faulty(&format!("  invalid_output: {kind}\n"));
        assert!(
            stdout.contains("returned an invalid result from `compress`"),
            "{kind}:\n{stdout}"
        );
        assert!(
            stdout.contains(reason),
            "{kind}: expected {reason:?} in\n{stdout}"
        );
        assert_eq!(context, example_messages(), "{kind}: nothing was lost");
    }
}

#[test]
fn a_plugins_log_lines_reach_the_hosts_log_labelled_with_the_engine() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("context:\n  engine: faulty\n");
    let (_, stderr) = texts(&tree.run(&["-v", "run", &example_transcript()]));
    let line = stderr
        .lines()
        .find(|line| line.contains("faulty engine created"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains("engine=\"faulty\"") || line.contains("engine=faulty"),
        "{line}"
    );
}
