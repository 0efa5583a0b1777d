//! The summary contract: what counts as a failure, how the middle is serialised for a model, and
//! how a summary is recognised again.

use std::borrow::Cow;

use ctxhost_engine_abi::{Message, ToolCall};
use pretty_assertions::assert_eq;

use super::*;

#[test]
fn blank_headless_or_long_summaries_are_failures() {
    let reason = |body: &str, input_tokens| match check_summary(body, input_tokens) {
        Err(SummaryError::Failed(reason)) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(" \n ", 100), "the summary came back blank");
    assert_eq!(
        reason("All good, nothing to add.", 100),
        "the summary has none of the template's headings"
    );
    assert_eq!(
        reason("## Goal\n- fix the build", 5),
        "the summary (6 tokens) is not shorter than its input (5 tokens)"
    );
    assert_eq!(check_summary("## Goal\n- fix the build", 100), Ok(()));
}

#[test]
fn the_transcript_names_roles_calls_and_results_and_cuts_long_bodies() {
    let middle = vec![
        Message::user("run it"),
        Message::assistant_calls(vec![ToolCall::new("c1", "terminal", r#"{"command":"make"}"#)]),
        Message::tool(
            "c1",
            format!("{}{}{}", "a".repeat(4_000), "b".repeat(3_000), "c".repeat(1_500)),
        ),
    ];
    let pruned: Vec<Cow<'_, Message>> = middle.iter().map(Cow::Borrowed).collect();
    let request = SummaryRequest {
        middle: &middle,
        pruned_middle: &pruned,
        previous_summary: None,
        focus_topic: None,
        target_tokens: 2_000,
        input_tokens: 3_000,
    };
    let transcript = request.transcript();
    assert!(transcript.starts_with("[USER]: run it\n\n[ASSISTANT]: \nterminal({\"command\":\"make\"})\n\n"));
    let result = transcript.split("[TOOL RESULT c1]: ").nth(1).unwrap();
    assert!(result.starts_with(&"a".repeat(4_000)));
    assert!(result.contains("\n…[3000 characters omitted]…\n"));
    assert!(result.trim_end().ends_with(&"c".repeat(1_500)));
    assert!(!result.contains('b'));
}

#[test]
fn a_summary_is_recognised_by_its_marker_alone_or_merged() {
    let standalone = format!("{SUMMARY_MARKER} preamble\n\n## Goal\n- x");
    assert!(is_summary_text(&standalone));
    assert_eq!(summary_body(&standalone), Some("## Goal\n- x"));
    let merged = format!("{standalone}\n{SUMMARY_END}\n\nthe user's own words");
    assert_eq!(summary_body(&merged), Some("## Goal\n- x"));
    assert!(!is_summary_text(
        "Note: see the message that starts with [CONTEXT COMPACTION]."
    ));
    assert_eq!(summary_body("hello"), None);
}
