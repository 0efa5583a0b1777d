//! The summary contract: what counts as a failure, how the middle is serialised for a model, and
//! how a summary is recognised again.

use std::borrow::Cow;

use ctxhost_engine_abi::{Message, Role, ToolCall};

use crate::tests::shell;
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
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
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

/// The read rule the README states: a middle under 1 MB is read whole, because while an earlier
/// summary's items are kept, every fact the middle yields outranks them. Here a middle of 150 tool
/// groups (about 330 KB), each naming a URL, a path and a hash of its own, and an earlier summary
/// listing far more URLs than the room holds: every fact of the middle is in the summary, down to
/// the oldest message, and the earlier summary's items fill only what is left. A read that stopped
/// early, or a cap on it, would drop the oldest and fail this.
#[test]
fn every_fact_of_the_middle_outranks_the_earlier_summarys_items() {
    let mut middle = vec![Message::user("keep the page fetcher working")];
    let fact_of = |at: usize| {
        [
            format!("https://mirror.example.net/r/{at}/index.html"),
            format!("src/pages/page_{at}.html"),
            format!("{:07x}", 0xabc_0000 + at),
        ]
    };
    for at in 0..150 {
        let id = format!("c{at}");
        let command = serde_json::json!({ "command": format!("fetch {at}") }).to_string();
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            &id, "terminal", command,
        )]));
        let [url, path, hash] = fact_of(at);
        middle.push(Message::tool(
            &id,
            format!(
                "fetched {url} into {path} at {hash}\n{}",
                "plain words of the page body ".repeat(70)
            ),
        ));
    }
    let earlier: Vec<String> = (0..3_000)
        .map(|at| format!("https://old.example.com/item/{at}"))
        .collect();
    let previous = format!(
        "## Goal\n- keep the page fetcher working\n\n## Critical Context\n- URLs: {}",
        earlier.join(", ")
    );
    let summary = summarize_within(&middle, Some(&previous), 40_000, 48_000);
    for at in 0..150 {
        for fact in fact_of(at) {
            assert!(
                summary.contains(&fact),
                "{fact} (message {}) is missing",
                2 * at + 2
            );
        }
    }
    let carried = summary.matches("https://old.example.com/item/").count();
    assert!(
        (100..2_000).contains(&carried),
        "{carried} of the earlier summary's 3,000 URLs kept"
    );
}

/// A replay compacts again and again, each time folding the earlier summary into the new one.
/// The earlier summary's identifiers are facts still: when the prose's budget (the target) is
/// short and the room for facts is not, they stay. Kept to the prose's budget, a long session's
/// summary ended up holding only its last turns' URLs.
#[test]
fn an_earlier_summarys_identifiers_use_the_room_for_facts() {
    let middle = vec![
        Message::user("now compare the queue libraries"),
        Message::assistant_calls(vec![ToolCall::new(
            "c1",
            "web_search",
            r#"{"query":"bullmq vs hatchet"}"#,
        )]),
        Message::tool(
            "c1",
            "see https://docs.bullmq.io/guide/rate-limiting (bullmq 5.12.0)",
        ),
    ];
    let earlier: Vec<String> = (0..40)
        .map(|at| format!("https://research.example.org/topic/{at}/notes"))
        .collect();
    let previous = format!(
        "## Goal\n- survey job queues for tenant fairness\n\n## Critical Context\n- URLs: {}",
        earlier.join(", ")
    );
    let request = SummaryRequest {
        middle: &middle,
        pruned_middle: &[],
        previous_summary: Some(&previous),
        focus_topic: None,
        target_tokens: 100,
        input_tokens: 3_000,
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    // A target of 400 characters, room for 8,000 of facts.
    let summary = ExtractiveSummarizer.summarize_with_limits(&request, 400, 8_000);
    assert!(
        summary.contains("https://docs.bullmq.io/guide/rate-limiting"),
        "{summary}"
    );
    let missing: Vec<&String> = earlier
        .iter()
        .filter(|url| !summary.contains(url.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of 40 earlier URLs lost: {summary}",
        missing.len()
    );
    assert!(
        summary.contains("survey job queues for tenant fairness"),
        "{summary}"
    );
}

/// An edit that failed or that the user refused changed nothing: the summary says how it ended
/// and does not list the file as changed; a later edit that succeeded does.
#[test]
fn a_failed_or_refused_edit_is_not_a_change() {
    let edit = |id: &str, path: &str| {
        Message::assistant_calls(vec![ToolCall::new(
            id,
            "Edit",
            serde_json::json!({"file_path": path, "old_string": "a", "new_string": "b"}).to_string(),
        )])
    };
    let failed = |id: &str, text: &str| Message {
        extra: serde_json::json!({"is_error": true})
            .as_object()
            .cloned()
            .unwrap(),
        ..Message::tool(id, text)
    };
    let middle = vec![
        Message::user("fix the proration in billing"),
        edit("c1", "/w/billing/proration.py"),
        failed(
            "c1",
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        ),
        edit("c2", "/w/src/lib.rs"),
        failed(
            "c2",
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
        ),
        edit("c3", "/w/src/main.rs"),
        Message::tool("c3", "The file /w/src/main.rs has been updated."),
    ];
    let summary = summarize_within(&middle, None, 8_000, 8_000);
    let changed = summary
        .lines()
        .find(|line| line.contains("Changed:"))
        .unwrap_or_default();
    assert!(changed.contains("/w/src/main.rs"), "{summary}");
    assert!(!changed.contains("/w/src/lib.rs"), "{summary}");
    assert!(!changed.contains("proration.py"), "{summary}");
    assert!(
        summary.contains("[Edit] /w/billing/proration.py -> rejected by the user, did not run"),
        "{summary}"
    );
    assert!(
        summary.contains("[Edit] /w/src/lib.rs -> failed: String to replace not found in file."),
        "{summary}"
    );
}

/// The Relevant Files line that starts with `label` (`Changed:`), or nothing.
fn files_line<'s>(summary: &'s str, label: &str) -> &'s str {
    summary
        .lines()
        .find(|line| line.trim_start_matches("- ").starts_with(label))
        .unwrap_or_default()
}

fn summarize(middle: &[Message]) -> String {
    summarize_before(middle, None, false, None)
}

/// The extractive summary of `middle` (folding `previous` in) where the user's next request
/// stands after it: in the tail (`request_follows`), or pinned after the head from `pinned_at`.
fn summarize_before(
    middle: &[Message],
    previous: Option<&str>,
    request_follows: bool,
    pinned_request_at: Option<usize>,
) -> String {
    summarize_pinned(middle, previous, request_follows, pinned_request_at, None)
}

/// [`summarize_before`], the request kept after the head given too.
fn summarize_pinned(
    middle: &[Message],
    previous: Option<&str>,
    request_follows: bool,
    pinned_request_at: Option<usize>,
    pinned_request: Option<&Message>,
) -> String {
    let request = SummaryRequest {
        middle,
        pruned_middle: &[],
        previous_summary: previous,
        focus_topic: None,
        target_tokens: 2_000,
        input_tokens: 3_000,
        request_follows,
        pinned_request_at,
        pinned_request,
        tail: &[],
        head_request: None,
    };
    ExtractiveSummarizer.summarize_with_limits(&request, 8_000, 8_000)
}

/// The extractive summary of `middle` with `tail` kept verbatim after it.
fn summarize_with_tail(middle: &[Message], tail: &[Message]) -> String {
    let request = SummaryRequest {
        middle,
        pruned_middle: &[],
        previous_summary: None,
        focus_topic: None,
        target_tokens: 2_000,
        input_tokens: 3_000,
        request_follows: tail.iter().any(|message| message.role == Role::User),
        pinned_request_at: None,
        pinned_request: None,
        tail,
        head_request: None,
    };
    ExtractiveSummarizer.summarize_with_limits(&request, 8_000, 8_000)
}

/// The extractive summary of `middle`, folding `previous` in, within `max_chars` of prose and
/// `fact_chars` in all.
fn summarize_within(
    middle: &[Message],
    previous: Option<&str>,
    max_chars: usize,
    fact_chars: usize,
) -> String {
    let request = SummaryRequest {
        middle,
        pruned_middle: &[],
        previous_summary: previous,
        focus_topic: None,
        target_tokens: 300,
        input_tokens: 8_000,
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    ExtractiveSummarizer.summarize_with_limits(&request, max_chars, fact_chars)
}

fn failed_result(id: &str, text: &str) -> Message {
    Message {
        extra: serde_json::json!({"is_error": true})
            .as_object()
            .cloned()
            .unwrap(),
        ..Message::tool(id, text)
    }
}

/// Two parallel edits of one file, one failing: the file was changed by the other, in either
/// order; an edit whose result never came is still taken as a change.
#[test]
fn a_file_is_changed_when_any_edit_of_it_succeeded() {
    let edit = |id: &str| {
        ToolCall::new(
            id,
            "Edit",
            serde_json::json!({"file_path": "/r/src/cfg.py", "old_string": id, "new_string": "b"})
                .to_string(),
        )
    };
    let not_found = "<tool_use_error>String to replace not found in file.</tool_use_error>";
    let updated = "The file /r/src/cfg.py has been updated.";
    for failing_first in [true, false] {
        let (first, second) = if failing_first {
            (failed_result("e1", not_found), Message::tool("e2", updated))
        } else {
            (Message::tool("e1", updated), failed_result("e2", not_found))
        };
        let middle = vec![
            Message::user("fix the config"),
            Message::assistant_calls(vec![edit("e1"), edit("e2")]),
            first,
            second,
        ];
        let summary = summarize(&middle);
        assert!(
            files_line(&summary, "Changed:").contains("/r/src/cfg.py"),
            "failing first: {failing_first}\n{summary}"
        );
    }
    let unanswered = vec![
        Message::user("fix the config"),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "Edit",
            serde_json::json!({"file_path": "/r/src/other.py", "old_string": "a", "new_string": "b"})
                .to_string(),
        )]),
    ];
    let summary = summarize(&unanswered);
    assert!(
        files_line(&summary, "Changed:").contains("/r/src/other.py"),
        "{summary}"
    );
}

/// A read or a search that failed did not read or search its path: the path is still named
/// (it is an identifier of the conversation), but not as read or searched.
#[test]
fn a_failed_read_or_search_is_not_listed_as_done() {
    let call = |id: &str, name: &str, path: &str| {
        Message::assistant_calls(vec![ToolCall::new(
            id,
            name,
            serde_json::json!({"path": path, "pattern": "round"}).to_string(),
        )])
    };
    let middle = vec![
        Message::user("find where the ledger rounds"),
        call("r1", "Read", "/srv/tally/src/ledger/round.ts"),
        failed_result("r1", "<tool_use_error>File does not exist.</tool_use_error>"),
        call("s1", "Grep", "/srv/tally/vendor"),
        failed_result(
            "s1",
            "<tool_use_error>Path does not exist: /srv/tally/vendor</tool_use_error>",
        ),
        call("r2", "Read", "/srv/tally/src/ledger/sum.ts"),
        Message::tool(
            "r2",
            "export function sum(a: number, b: number) { return a + b; }",
        ),
        call("s2", "Grep", "/srv/tally/src/ledger/index.ts"),
        Message::tool("s2", "12: export { round } from \"./round\";"),
    ];
    let summary = summarize(&middle);
    let read = files_line(&summary, "Read:");
    let searched = files_line(&summary, "Searched:");
    assert!(read.contains("/srv/tally/src/ledger/sum.ts"), "{summary}");
    assert!(!read.contains("round.ts"), "{summary}");
    assert!(searched.contains("/srv/tally/src/ledger/index.ts"), "{summary}");
    assert!(!searched.contains("/srv/tally/vendor"), "{summary}");
    assert!(summary.contains("/srv/tally/src/ledger/round.ts"), "{summary}");
    assert!(summary.contains("/srv/tally/vendor"), "{summary}");
}

/// A blocked action's line already quoting its error is not followed by the same error again.
#[test]
fn a_failure_is_told_once_in_blocked() {
    let middle = vec![
        Message::user("read the rounding docs"),
        Message::assistant_calls(vec![ToolCall::new(
            "w1",
            "WebFetch",
            serde_json::json!({"url": "https://mikemcl.github.io/decimal.js/#rounding-modes"}).to_string(),
        )]),
        failed_result("w1", "Request failed with status code 404"),
    ];
    let summary = summarize(&middle);
    let blocked = summary
        .lines()
        .find(|line| line.contains("[WebFetch]"))
        .unwrap_or_default();
    assert!(
        blocked.contains("failed: Request failed with status code 404"),
        "{summary}"
    );
    assert_eq!(blocked.matches("status code 404").count(), 1, "{summary}");
}

/// The lines under `heading` (`### Blocked`), up to the next heading.
fn section<'s>(summary: &'s str, heading: &str) -> Vec<&'s str> {
    summary
        .lines()
        .skip_while(|line| line.trim() != heading)
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .collect()
}

/// A command whose result is flagged a success printed its `ERROR` lines, it did not fail; an
/// unflagged one that printed them still reads as failed, unless it prints what it reads (a
/// log's tail).
#[test]
fn a_command_flagged_a_success_is_not_blocked_by_the_errors_it_printed() {
    let logs = |id: &str| {
        ToolCall::new(
            id,
            "Bash",
            serde_json::json!({"command": format!("./ingest.sh --replay ingest-{id}")}).to_string(),
        )
    };
    let printed = "INFO start\nERROR req-91 upstream timeout after 30s\nINFO retry ok";
    let succeeded = Message {
        extra: serde_json::json!({"is_error": false})
            .as_object()
            .cloned()
            .unwrap(),
        ..Message::tool("k1", printed)
    };
    let middle = vec![
        Message::user("why did ingest stall?"),
        Message::assistant_calls(vec![logs("k1"), logs("k2")]),
        succeeded,
        Message::tool("k2", printed),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("ingest-k1")),
        "{summary}"
    );
    assert!(blocked.iter().any(|line| line.contains("ingest-k2")), "{summary}");
    assert!(summary.contains("ERROR req-91 upstream timeout"), "{summary}");
    for command in [
        "ssh checkout-api-2.eu1.internal 'sudo tail -n 150 /var/log/nginx/checkout.access.log'",
        "tail -n 220 /var/log/gw/error.log",
        "kubectl -n prod logs ingest-0 | grep -v DEBUG",
        "cd /srv && journalctl -u gw --since today",
    ] {
        let middle = vec![
            Message::user("why did ingest stall?"),
            Message::assistant_calls(vec![ToolCall::new(
                "v1",
                "terminal",
                serde_json::json!({ "command": command }).to_string(),
            )]),
            Message::tool("v1", printed),
        ];
        let summary = summarize(&middle);
        assert_eq!(section(&summary, "### Blocked")[0], "- (none)", "{summary}");
    }
}

/// Claude Code's interruption marker and its meta messages are not what the user asked.
#[test]
fn an_interruption_marker_or_a_meta_message_is_no_goal() {
    let claude_md = Message {
        extra: serde_json::json!({"isMeta": true}).as_object().cloned().unwrap(),
        ..Message::user("Contents of /w/CLAUDE.md:\nUse pnpm, never npm.")
    };
    let middle = vec![
        Message::user("[Request interrupted by user for tool use]"),
        claude_md,
        Message::user("add rounding modes to the ledger"),
        Message::assistant("Done: ROUND_HALF_EVEN is the default."),
    ];
    let summary = summarize(&middle);
    let goal = section(&summary, "## Goal");
    assert!(
        goal.iter()
            .any(|line| line.contains("add rounding modes to the ledger")),
        "{summary}"
    );
    assert!(!summary.contains("[Request interrupted"), "{summary}");
    assert!(!goal.iter().any(|line| line.contains("CLAUDE.md")), "{summary}");
    assert!(summary.contains("/w/CLAUDE.md"), "{summary}");
}

/// Jest's and npm's failure lines are error lines, as the retention measure takes them.
#[test]
fn jest_and_npm_failure_lines_are_errors() {
    let middle = vec![
        Message::user("run the tests"),
        Message::assistant_calls(vec![ToolCall::new("t1", "terminal", r#"{"command":"npm test"}"#)]),
        Message::tool(
            "t1",
            "> shop@1.0.0 test\n> jest\n\nFAIL src/cart.test.ts\n  ● total rounds half up\n\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1",
        ),
    ];
    let summary = summarize(&middle);
    assert!(summary.contains("FAIL src/cart.test.ts"), "{summary}");
    assert!(summary.contains("npm ERR! code ELIFECYCLE"), "{summary}");
}

/// A log's repeated lines, differing only in numbers, rank below the other facts: an earlier
/// summary's files and a distinct error keep their place in a summary with little room.
#[test]
fn a_logs_repeated_lines_give_way_to_other_facts() {
    let line = |n: usize| {
        format!(
            "2026-11-21T09:{n:02}:00Z upstream timed out (110: Connection timed out) while reading response header from upstream, client: 10.0.1.{n}, request: \"GET /v2/orders?page={n} HTTP/1.1\""
        )
    };
    let log: Vec<String> = (0..110).map(line).collect();
    let middle = vec![
        Message::user("The gateway times out under load: find why."),
        Message::assistant_calls(vec![
            ToolCall::new(
                "l1",
                "terminal",
                r#"{"command":"tail -n 110 /var/log/gw/error.log"}"#,
            ),
            ToolCall::new("c1", "read_file", r#"{"path":"/etc/nginx/conf.d/api0.conf"}"#),
        ]),
        Message::tool("l1", log.join("\n")),
        Message::tool(
            "c1",
            "proxy_read_timeout 5s;\nModuleNotFoundError: No module named 'lua_resty'",
        ),
    ];
    let request = SummaryRequest {
        middle: &middle,
        pruned_middle: &[],
        previous_summary: Some(
            "## Relevant Files\n- Read: /etc/nginx/conf.d/api9.conf, /etc/gw/limits.yaml\n",
        ),
        focus_topic: None,
        target_tokens: 400,
        input_tokens: 9_000,
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    let summary = ExtractiveSummarizer.summarize_with_limits(&request, 2_400, 2_400);
    for kept in [
        "/etc/nginx/conf.d/api9.conf",
        "/etc/gw/limits.yaml",
        "/etc/nginx/conf.d/api0.conf",
        "ModuleNotFoundError: No module named 'lua_resty'",
    ] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
    assert!(summary.contains("upstream timed out"), "{summary}");
    assert!(summary.matches("upstream timed out").count() < 10, "{summary}");
}

/// An access log's request ids, one a line, rank below other facts beyond three: the failing
/// request's error line and the commands keep their place.
#[test]
fn an_access_logs_ids_give_way_to_the_error_and_the_commands() {
    let mut log: Vec<String> = (0..200)
        .map(|n| {
            format!(
                "10.42.3.{} - - \"GET /v2/checkout HTTP/1.1\" 200 512 request_id=req-{n:04}a7f3c9e1",
                n % 250
            )
        })
        .collect();
    log.insert(
        120,
        "[error] upstream timed out while reading response header, upstream: \"https://10.50.3.21:8443/v2/checkout\", request_id=req-7f3a9c2e11b0".to_owned(),
    );
    let middle = vec![
        Message::user("Checkout p99 is at 4.2s: find the slow upstream."),
        Message::assistant_calls(vec![ToolCall::new(
            "k1",
            "terminal",
            r#"{"command":"kubectl -n payments get pods -o wide"}"#,
        )]),
        Message::tool("k1", "checkout-api-1 Running 10.50.3.21"),
        Message::assistant_calls(vec![ToolCall::new(
            "l1",
            "terminal",
            r#"{"command":"tail -n 200 /var/log/nginx/checkout.access.log"}"#,
        )]),
        Message::tool("l1", log.join("\n")),
    ];
    let summary = summarize_within(&middle, None, 1_800, 1_800);
    for kept in ["req-7f3a9c2e11b0", "kubectl -n payments get pods -o wide"] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
}

/// An error line longer than the summary keeps whole keeps its start and its end, each of whole
/// tokens: cut inside the id it ends with, it read as another id (`req-7f3a9c2e` for
/// `req-7f3a9c2e11b0`); cut at 300 bytes, an AWS error lost the permission it was missing
/// (verify16: `… api error AccessDenied: User:`).
#[test]
fn a_long_error_line_keeps_its_start_and_its_end() {
    let padding = "x".repeat(276);
    let line = format!("[error] {padding} request_id=req-7f3a9c2e11b0 upstream=10.50.3.21:8443");
    assert!(line.find("req-").unwrap() < 300 && line.find("11b0").unwrap() > 300);
    let middle = vec![
        Message::user("find the slow upstream"),
        Message::assistant_calls(vec![ToolCall::new(
            "t1",
            "terminal",
            r#"{"command":"tail -n 50 /var/log/nginx/error.log"}"#,
        )]),
        Message::tool("t1", line.clone()),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains(&format!("  - [error] {}", &padding[..200])),
        "{summary}"
    );
    assert!(
        summary.contains("x … request_id=req-7f3a9c2e11b0 upstream=10.50.3.21:8443\n"),
        "{summary}"
    );

    let denied = "│ Error: updating IAM OIDC Provider (arn:aws:iam::318204617552:oidc-provider/token.actions.githubusercontent.com) \
                  thumbprint: operation error IAM: UpdateOpenIDConnectProviderThumbprint, https response error StatusCode: 403, \
                  RequestID: 5b0e9c1f-3d2a-4c7e-9f11-6a8d2e4b7c90, api error AccessDenied: User: \
                  arn:aws:sts::318204617552:assumed-role/tf-staging-applier/infra-live-staging is not authorized to perform: \
                  iam:UpdateOpenIDConnectProviderThumbprint on resource: arn:aws:iam::318204617552:oidc-provider/token.actions.githubusercontent.com \
                  because no identity-based policy allows the iam:UpdateOpenIDConnectProviderThumbprint action";
    let middle = vec![
        Message::user("apply staging"),
        shell("a1", "terraform apply tfplan"),
        Message::tool("a1", format!("{denied}\n│\nExit code: 1")),
        Message::assistant("The applier role is missing a permission."),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains("StatusCode: … no identity-based policy allows the iam:UpdateOpenIDConnectProviderThumbprint action"),
        "{summary}"
    );
}

/// Folding earlier summaries (lcm condenses one summary and the next leaf, again and again), an
/// access log's ids the earlier summary listed give way to its error line, the failing
/// request's id and the commands, as the new middle's ids do. Carried whole, 300 ids filled the
/// condensed summary and those were lost within two condensations.
#[test]
fn an_earlier_summarys_log_ids_give_way_to_its_error_and_commands() {
    let failing = "req-7f3a9c2e11b0";
    let ids = |host: u32| -> Vec<String> { (0..150).map(|n| format!("req-{host:02}{n:04}c9e1a7")).collect() };
    let mut earlier_ids = ids(1);
    earlier_ids.insert(75, failing.to_owned());
    let previous = format!(
        "## Goal\n- (none)\n\n## Progress\n### In Progress\n- [terminal] ran `ssh checkout-api-1 'sudo tail -n 150 /var/log/nginx/checkout.access.log'` -> 151 lines output\n\n\
         ## Critical Context\n- Errors:\n  - [error] upstream timed out while reading response header, upstream: \"https://10.50.3.21:8443/v2/checkout\", request_id={failing}\n\
         - Commands:\n  - `ssh checkout-api-1 'sudo tail -n 150 /var/log/nginx/checkout.access.log'`\n- Hashes: {}",
        earlier_ids.join(", ")
    );
    let log: Vec<String> = ids(2)
        .iter()
        .map(|id| format!("10.42.3.7 - - \"GET /v2/checkout HTTP/1.1\" 200 512 request_id={id}"))
        .collect();
    let middle = vec![
        Message::assistant_calls(vec![ToolCall::new(
            "l2",
            "terminal",
            r#"{"command":"ssh checkout-api-2 'sudo tail -n 150 /var/log/nginx/checkout.access.log'"}"#,
        )]),
        Message::tool("l2", log.join("\n")),
    ];
    let summary = summarize_within(&middle, Some(&previous), 1_800, 1_800);
    for kept in [
        format!("request_id={failing}"),
        "ssh checkout-api-1 'sudo tail".to_owned(),
        "ssh checkout-api-2 'sudo tail".to_owned(),
    ] {
        assert!(summary.contains(&kept), "{kept} lost:\n{summary}");
    }
}

/// A request to make the build pass, and one `npx tsc` run that answered `output`.
fn build_run(output: impl Into<String>) -> Vec<Message> {
    vec![
        Message::user("make the build pass"),
        shell("t1", "npx tsc --noEmit"),
        Message::tool("t1", output),
    ]
}

/// A tool that answers JSON (Codex's `{"output": "…", "metadata": {…}}`): the summary quotes the
/// error lines of its output as they read, not the JSON around them nor its escapes.
#[test]
fn a_json_answers_error_lines_are_quoted_as_its_output_reads() {
    let output = r#"{"output": "src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'.\nFound 36 errors in 9 files.", "metadata": {"exit_code": 2, "duration_seconds": 1.2}}"#;
    let middle = build_run(output);
    let summary = summarize(&middle);
    assert!(
        summary.contains("src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'."),
        "{summary}"
    );
    for leaked in ["\\\"", "\"metadata\"", "{\"output\""] {
        assert!(!summary.contains(leaked), "{leaked} in:\n{summary}");
    }
}

/// The same over 32 KB, where the output is read at its ends only: whether it is a JSON
/// document is decided on the whole answer, so the error lines of its first and last pieces read
/// as its text too. Decided on the first 24 KB, which is no document, they kept `\"` and the
/// closing `", "metadata": {…}}` while the host's fact measure decoded them.
#[test]
fn a_long_json_answers_error_lines_are_quoted_as_its_output_reads() {
    let progress: String = (0..900)
        .map(|n| format!("[{n:04}/1200] type-checked, no change since the last build\\n"))
        .collect();
    let output = format!(
        r#"{{"output": "src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'.\n{progress}Found 36 errors in 9 files.", "metadata": {{"exit_code": 2}}}}"#
    );
    assert!(output.len() > 32_000, "{} bytes", output.len());
    assert!(ctxhost_engine_kit::text::is_json_document(&output));
    let middle = build_run(output);
    let summary = summarize(&middle);
    for kept in [
        "src/cart.ts(12,5): error TS2305: Module '\"@/store/cartSlice\"' has no exported member 'selectCartTotal'.",
        "Found 36 errors in 9 files.",
    ] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
    for leaked in ["\\\"", "\"metadata\"", "{\"output\""] {
        assert!(!summary.contains(leaked), "{leaked} in:\n{summary}");
    }
}

/// An access log's request lines name routes, not files: they are listed as routes, the files
/// read stay files, and a later summary folding this one keeps them apart.
#[test]
fn a_requests_route_is_listed_as_a_route_not_a_file() {
    // The last line is what the command's line quotes (`; last line: …`), which covers a route.
    let log = "10.42.3.7 - - [29/Nov/2026:10:01:02] \"GET /v2/checkout/summary HTTP/1.1\" 504 0\n\
               10.42.3.8 - - [29/Nov/2026:10:01:03] \"POST /api/orders/confirm HTTP/1.1\" 200 88\n\
               tail: done";
    let middle = vec![
        Message::user("why does checkout time out?"),
        shell("l1", "tail -n 2 /var/log/nginx/checkout.access.log"),
        Message::tool("l1", log),
    ];
    let summary = summarize(&middle);
    let routes = files_line(&summary, "Routes:");
    for route in ["/v2/checkout/summary", "/api/orders/confirm"] {
        assert!(routes.contains(route), "{route} not a route:\n{summary}");
        assert!(
            !files_line(&summary, "Mentioned:").contains(route),
            "{route} a file:\n{summary}"
        );
    }
    assert!(
        summary.contains("/var/log/nginx/checkout.access.log"),
        "{summary}"
    );

    let folded = summarize_within(&[Message::user("and the retries?")], Some(&summary), 4_000, 4_000);
    let routes = files_line(&folded, "Routes:");
    for route in ["/v2/checkout/summary", "/api/orders/confirm"] {
        assert!(routes.contains(route), "{route} lost as a route:\n{folded}");
    }
}

/// A request the assistant acted on is in progress, not unanswered, and what was done for it
/// stays in Progress though its results hold hundreds of identifiers: listed first, they took the
/// prose's whole budget and went on into their own room, and the summary told a model to start a
/// rollback that had already run.
#[test]
fn a_request_acted_on_is_in_progress_with_its_actions_listed() {
    let log: Vec<String> = (0..300)
        .map(|n| {
            format!(
                "10.42.3.7 - - \"GET /v2/orders/{} HTTP/1.1\" 200 512 req_id={:016x}",
                4_000_000 + n * 7,
                0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(n + 1)
            )
        })
        .collect();
    let middle = vec![
        Message::user("Decision: roll back to revision 141 (d1a872f). Go."),
        shell(
            "r1",
            "argocd app rollback orders-api 141 && argocd app wait orders-api --health",
        ),
        Message::tool("r1", "Sync Revision: d1a872f\nHealth Status: Healthy"),
        shell(
            "l1",
            "kubectl -n orders exec deploy/ingress-nginx -- tail -n 300 /var/log/nginx/access.log",
        ),
        Message::tool("l1", log.join("\n")),
    ];
    let summary = summarize_within(&middle, None, 1_500, 6_000);
    assert!(
        summary.contains("- Request in progress: Decision: roll back to revision 141 (d1a872f). Go."),
        "{summary}"
    );
    assert!(!summary.contains("Unanswered request"), "{summary}");
    let in_progress = summary
        .split("### In Progress")
        .nth(1)
        .and_then(|rest| rest.split("### Blocked").next())
        .unwrap_or_default();
    assert!(
        in_progress.contains("argocd app rollback orders-api 141"),
        "{summary}"
    );
    // How it ended: the command's last line.
    assert!(
        in_progress.contains("; last line: Health Status: Healthy"),
        "{summary}"
    );

    // With no room beyond the prose's (lcm's summaries), the same.
    let summary = summarize_within(&middle, None, 1_500, 1_500);
    assert!(
        summary.contains("argocd app rollback orders-api 141"),
        "{summary}"
    );

    // Folded into the next summary with little room, the command stays over the log's ids.
    let folded = summarize_within(&[Message::user("status?")], Some(&summary), 900, 900);
    assert!(folded.contains("argocd app rollback orders-api 141"), "{folded}");

    // An earlier summary's command outranks the ids it lists after it: the later line won the
    // tie, and lcm's condensed summary of an incident kept a log's request ids, not its rollback.
    let ids: Vec<String> = (0..120_u64)
        .map(|n| format!("{:016x}", 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(n + 1)))
        .collect();
    let earlier = format!(
        "## Critical Context\n- Commands:\n  - `argocd app rollback orders-api 141`\n- Hashes: {}\n",
        ids.join(", ")
    );
    let folded = summarize_within(&[Message::user("status?")], Some(&earlier), 900, 900);
    assert!(
        folded.contains("`argocd app rollback orders-api 141`"),
        "{folded}"
    );

    // Nothing done for it yet: unanswered.
    let asked = summarize_within(&middle[..1], None, 1_500, 6_000);
    assert!(
        asked.contains("- Unanswered request: Decision: roll back"),
        "{asked}"
    );
}

/// The error lines of a failure that a later run of the same command fixed give way to the
/// error of the failure still standing: a refactor's compiler errors, all fixed, had filled
/// half of its summary while nothing said they were fixed.
#[test]
fn errors_fixed_later_give_way_to_the_failure_still_standing() {
    let tsc = |id: &str| shell(id, "npx tsc -p tsconfig.strict.json");
    // Forty different messages, not one message at forty places (which give way anyway).
    let names = [
        "avatar", "email", "role", "team", "badge", "status", "title", "phone",
    ];
    let types = ["UserProps", "CardProps", "ListProps", "RowProps", "BadgeProps"];
    let errors: Vec<String> = names
        .iter()
        .flat_map(|name| types.iter().map(move |kind| (name, kind)))
        .map(|(name, kind)| {
            format!("src/components/Card.tsx(12,5): error TS2339: Property '{name}' does not exist on type '{kind}'.")
        })
        .collect();
    // The test failure came first and still stands; the compiler's errors came after it, and
    // the next run of the compiler passed.
    let middle = vec![
        Message::user("make the tests and the strict build pass"),
        shell("v1", "npx vitest run src/components"),
        Message::tool(
            "v1",
            "FAIL src/components/ProfileCard.test.tsx > renders the avatar\nAssertionError: expected null to be truthy\nExit code: 1",
        ),
        tsc("t1"),
        Message::tool("t1", format!("{}\nFound 40 errors.\nExit code: 2", errors.join("\n"))),
        tsc("t2"),
        Message::tool("t2", "Exit code: 0"),
    ];
    let summary = summarize_within(&middle, None, 1_200, 1_200);
    assert!(
        summary.contains("AssertionError: expected null to be truthy"),
        "{summary}"
    );
    let fixed = summary.matches("error TS2339").count();
    assert!(fixed < 5, "{fixed} fixed errors listed:\n{summary}");
    // With room for them, they are listed as fixed, and stay so when a later summary folds this.
    let roomy = summarize_within(&middle, None, 1_200, 8_000);
    let listed = roomy.split("- Errors fixed since:").nth(1).unwrap_or_default();
    assert!(listed.contains("error TS2339"), "{roomy}");
    let folded = summarize_within(&[Message::user("and now?")], Some(&roomy), 1_200, 8_000);
    assert!(
        folded.contains("- Errors fixed since:\n  - src/components/Card.tsx(12,5): error TS2339"),
        "{folded}"
    );
}

/// The error a log names as its cause ranks with the commands, above newer, vaguer lines: a
/// short summary kept the pool's `Exception during pool initialization` and newer results' ids,
/// and lost `FATAL: password authentication failed`.
#[test]
fn the_most_telling_error_of_a_result_outranks_newer_facts() {
    let log = "2026-11-29T14:51:19.884Z ERROR 1 --- [main] HikariPool-1 - Exception during pool initialization.\n\
               org.postgresql.util.PSQLException: FATAL: password authentication failed for user \"checkout\"\n\
               2026-11-29T14:51:20.433Z ERROR 1 --- [main] o.s.boot.SpringApplication : Application run failed";
    let mut middle = vec![
        Message::user("why does checkout-api crash on staging?"),
        shell(
            "l1",
            "kubectl -n shop-staging logs checkout-api-5f8d7c9b4-69f4c --previous",
        ),
        Message::tool("l1", log),
    ];
    for n in 0..6 {
        let id = format!("g{n}");
        middle.push(shell(
            &id,
            &format!("kubectl -n shop-staging get pods -o wide --selector=batch-{n}"),
        ));
        let pods: Vec<String> = (0..12)
            .map(|pod| format!("checkout-api-{n}f8d7c9b4-{pod:05x}a   0/1   CrashLoopBackOff   node-{pod}.eu-west1.internal"))
            .collect();
        middle.push(Message::tool(&id, pods.join("\n")));
    }
    let summary = summarize_within(&middle, None, 1_000, 1_000);
    assert!(
        summary.contains("PSQLException: FATAL: password authentication failed"),
        "{summary}"
    );
}

/// Twenty `head -n N` of one file differ only in their count: beyond three they give way to
/// the commands, errors and files that say something new.
#[test]
fn commands_differing_only_in_numbers_give_way_to_others() {
    let mut middle = vec![Message::user("the AUC dropped after the Q3 refresh: find why")];
    for (at, lines) in (40..60).enumerate() {
        let id = format!("h{at}");
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"head -n {lines} data/raw/churn_2026q3.csv"}}"#),
        )]));
        middle.push(Message::tool(
            &id,
            "customer_id,tenure_months,total_charges\n1,3,29.85",
        ));
    }
    for (id, command, output) in [
        (
            "p1",
            "pytest tests/test_features.py -v",
            "E   AssertionError: assert 0 == 3",
        ),
        (
            "t1",
            "python -m churn.train --config configs/xgb_v4.yaml",
            "model saved to s3://ana-ml-artifacts/churn/xgb/29e6/model.json",
        ),
    ] {
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            id,
            "terminal",
            format!(r#"{{"command":"{command}"}}"#),
        )]));
        middle.push(Message::tool(id, output));
    }
    middle.push(Message::assistant("Done with the first pass."));
    let summary = summarize_within(&middle, None, 900, 900);
    for kept in [
        "pytest tests/test_features.py -v",
        "python -m churn.train --config configs/xgb_v4.yaml",
        "s3://ana-ml-artifacts/churn/xgb/29e6/model.json",
    ] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
}

/// A compiler's one message at many places is one shape: the place it opens with is left out.
#[test]
fn a_compilers_message_at_many_places_is_one_shape() {
    use super::extractive::error_shape;
    let at = |place: &str| {
        error_shape(&format!(
            "{place} error TS2339: Property 'total' does not exist on type 'CartState'."
        ))
    };
    assert_eq!(
        at("src/cart/Total.tsx(12,5):"),
        at("src/checkout/Summary.tsx(3,17):")
    );
    assert_eq!(at("app/models.py:42:"), at("lib/x.py:7:"));
    assert_ne!(
        at("src/cart/Total.tsx(12,5):"),
        error_shape(
            "src/cart/Total.tsx(12,5): error TS2305: Module has no exported member 'selectCartTotal'."
        )
    );
}

/// The user's standing constraints, folded from an earlier summary, stay when the new middle is
/// a long session's worth of compiler errors.
#[test]
fn an_earlier_summarys_constraints_outlast_new_error_lines() {
    let previous = "## Goal\n- migrate the checkout to the new cart store\n\n## Constraints & Preferences\n- Don't bump react itself, we stay on react@18.3.1.\n- eslint must pass with --max-warnings 0.\n";
    let errors: Vec<String> = (0..60)
        .map(|n| {
            format!(
                "src/components/checkout/Step{n}.tsx({},{}): error TS{}: Property 'item{n}' does not exist on type 'CartState{n}'.",
                n + 3,
                n % 7 + 1,
                2300 + n
            )
        })
        .collect();
    let middle = vec![
        Message::assistant_calls(vec![ToolCall::new(
            "t1",
            "terminal",
            r#"{"command":"npx tsc --noEmit"}"#,
        )]),
        Message::tool("t1", errors.join("\n")),
    ];
    let summary = summarize_within(&middle, Some(previous), 900, 1_200);
    for kept in ["react@18.3.1", "--max-warnings 0"] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
}

/// A long request cut to its start keeps the decision the user recorded at its end: the
/// conversation builds on the decision, and the cut left `Let's record it: Deci…`.
#[test]
fn a_cut_request_keeps_the_decision_recorded_at_its_end() {
    let mut middle = Vec::new();
    for turn in 0..20 {
        middle.push(Message::user(format!(
            "About the SLO for checkout latency, round {turn}: finance asked for a number by Friday and the payments lead pushed back on the timeline; I am worried the estimate is too optimistic, so let's assume a 20% buffer.\nLet's record it: Decision {turn}: the SLO -> staged rollout (PLAT-{}).",
            4400 + turn
        )));
        middle.push(Message::assistant(format!(
            "Noted: a staged rollout, round {turn}."
        )));
    }
    let summary = summarize(&middle);
    for turn in 0..20 {
        let decision = format!(
            "Decision {turn}: the SLO -> staged rollout (PLAT-{})",
            4400 + turn
        );
        assert!(summary.contains(&decision), "{decision} lost:\n{summary}");
    }
}

/// Tool output older than what the summarizer reads for identifiers is still read for its error
/// lines: a session's compiler errors a few hundred kilobytes back outrank its last turns' logs.
#[test]
fn an_error_older_than_the_scan_budget_is_still_found() {
    let mut middle = vec![
        Message::user("get the build green"),
        Message::assistant_calls(vec![ToolCall::new(
            "b0",
            "terminal",
            r#"{"command":"cargo build"}"#,
        )]),
        Message::tool(
            "b0",
            "   Compiling app v0.1.0\nerror[E0308]: mismatched types\n --> src/sync/engine.rs:201:9\n",
        ),
        // A file's contents, as old: its `raise` is no error of a run.
        Message::assistant_calls(vec![ToolCall::new(
            "r0",
            "read_file",
            r#"{"path":"app/check.py"}"#,
        )]),
        Message::tool("r0", "def check(x):\n    raise ValueError(\"bad input\")\n"),
    ];
    for at in 1..60 {
        let id = format!("l{at}");
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            &id,
            "terminal",
            r#"{"command":"tail -n 80 /var/log/app.log"}"#,
        )]));
        let log: String = (0..80)
            .map(|line| format!("2026-11-19 14:{at:02}:{line:02} INFO sync tick {line} done in 12 ms\n"))
            .collect();
        middle.push(Message::tool(&id, log));
    }
    let summary = summarize_within(&middle, None, 800, 2_000);
    assert!(summary.contains("error[E0308]: mismatched types"), "{summary}");
    assert!(!summary.contains("raise ValueError"), "{summary}");
}

/// The lines of the summary's section under `heading`, up to the next heading of any level.
fn section_lines<'s>(summary: &'s str, heading: &str) -> Vec<&'s str> {
    summary
        .lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// The lines under Critical Context's `Errors:` (not `Errors fixed since:`), as one text.
fn standing_errors(summary: &str) -> &str {
    summary
        .split("- Errors:\n")
        .nth(1)
        .map(|errors| errors.split("\n- ").next().unwrap_or_default())
        .unwrap_or_default()
}

/// A planning chat: the assistant keeps numbered decisions and revises two of them later. Key
/// Decisions lists each as it stands, in the numbers' order, so that a model asked which warehouse
/// was chosen cannot read the reversed `Decision 1` as the current one.
fn planning_middle() -> Vec<Message> {
    vec![
        Message::user("Decision: Snowflake. Note it down."),
        Message::assistant("Noted. Decision 1: warehouse = Snowflake Enterprise, AWS eu-central-1."),
        Message::user("Owners: Priya owns ingestion, Marco the dbt port."),
        Message::assistant("Decision 2: owners: ingestion = Priya; dbt port = Marco."),
        Message::user("No CDC, nightly loads."),
        Message::assistant("Decision 3: no CDC in this project; nightly incremental loads."),
        Message::user("Reverse decision 1: we go BigQuery. Snowflake is off."),
        Message::assistant(
            "That changes the masking too.\n**Decision 1 reversed:** warehouse = BigQuery, europe-west3.\nKnock-on: masking moves to policy tags.",
        ),
        Message::user("Priya leaves in February: Marco owns ingestion."),
        Message::assistant("- Decision 2 revised: owners: ingestion = Marco; dbt port = Marco after February."),
    ]
}

#[test]
fn a_revised_decision_record_replaces_the_one_it_revises() {
    let summary = summarize(&planning_middle());
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        [
            "- **Decision 1 reversed:** warehouse = BigQuery, europe-west3.",
            "- Decision 2 revised: owners: ingestion = Marco; dbt port = Marco after February.",
            "- Decision 3: no CDC in this project; nightly incremental loads.",
            "- (2 earlier records were replaced by the revisions listed here)",
        ],
        "{summary}"
    );
    assert!(!summary.contains("warehouse = Snowflake"), "{summary}");
}

/// Folded into the next summary, a record stands until a later record with its number replaces
/// it, and the count of replaced records goes on from the earlier summary's.
#[test]
fn a_folded_summary_keeps_the_records_no_revision_replaced() {
    let previous = summarize(&planning_middle());
    let previous = summary_body(&previous).unwrap_or(&previous).to_owned();
    let middle = vec![
        Message::user("Drop nightly loads for invoices: CDC for them."),
        Message::assistant(
            "Decision 3 revised: CDC via Datastream for erp.invoices only; the rest stays nightly.",
        ),
    ];
    let summary = summarize_within(&middle, Some(&previous), 8_000, 8_000);
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        [
            "- **Decision 1 reversed:** warehouse = BigQuery, europe-west3.",
            "- Decision 2 revised: owners: ingestion = Marco; dbt port = Marco after February.",
            "- Decision 3 revised: CDC via Datastream for erp.invoices only; the rest stays nightly.",
            "- (3 earlier records were replaced by the revisions listed here)",
        ],
        "{summary}"
    );
}

/// `Decision` starts a record only at the start of a line or of a sentence, followed by its number
/// and a colon: prose that mentions a decision is no record.
#[test]
fn only_a_line_that_starts_with_a_decision_label_is_a_record() {
    let mut records = Vec::new();
    let text = "The decision: we wait.\nWe made Decision 4: nothing.\n  * Decision #12 updated: keep Looker.\nDecision 5:\n1. DECISION 6: cap = $15,000/month\nNoted. Decision 7: no staging.\n";
    super::patterns::decision_records(text, 0, &mut records);
    let found: Vec<(Option<u32>, &str)> = records
        .iter()
        .map(|r| (r.key.map(|key| key.number), r.text))
        .collect();
    assert_eq!(
        found,
        [
            (Some(12), "Decision #12 updated: keep Looker."),
            (Some(6), "DECISION 6: cap = $15,000/month"),
            (Some(7), "Decision 7: no staging."),
        ]
    );
}

/// A carried question read as the conversation's first request reads last in Goal; its answer
/// reads right after it, not above it, where it read as the answer to the line before (verify25:
/// `Its answer: no, #941 is ruled out` under the answer to the request kept before the summary).
#[test]
fn a_carried_answer_reads_right_after_its_question() {
    let previous = "## Goal\n- Latest request (answered): Question: could the regression be the colspan merge (#941)?\n- Its answer: No. #941 is ruled out: step 1 already measured an older commit as bad.\n";
    let middle = vec![
        Message::user("Patch forward: keep the dedup, make the table per document."),
        Message::assistant("Done: SlugTable is owned by the Renderer now."),
    ];
    let summary = summarize_within(&middle, Some(previous), 8_000, 8_000);
    let goal = section_lines(&summary, "## Goal");
    let question = goal
        .iter()
        .position(|line| line.contains("colspan merge (#941)?"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        goal.get(question + 1)
            .is_some_and(|line| line.starts_with("- Its answer: No. #941 is ruled out")),
        "{summary}"
    );
}

/// What a hunt found, stated under a label (`Culprit: …`, `Root cause: …`), is kept under Done,
/// though a log of commits crowds the room (verify25: a bisect's culprit survived only among 230
/// hashes). A label inside a sentence is none.
#[test]
fn a_labelled_finding_is_kept_under_done() {
    let log: String = (0..120)
        .map(|n| {
            format!(
                "{:010x}{:030x} core: change {n} (#{})\n",
                n * 7919 + 11,
                n,
                800 + n
            )
        })
        .collect();
    let middle = vec![
        Message::user("find the commit that made render/large_doc slower"),
        shell("g1", "git log --oneline v0.18.0..main"),
        Message::tool("g1", log),
        shell("b1", "git bisect run scripts/bench_gate.sh 1.30"),
        Message::tool(
            "b1",
            "7c4e91a2d05b3f68e1a9c2b47d0f5e83a6b1c920 is the first bad commit\nbisect found first bad commit\nExit code: 0",
        ),
        Message::assistant(
            "Culprit: 7c4e91a2d05b3f68e1a9c2b47d0f5e83a6b1c920 (core: intern heading slugs through a global Mutex<HashMap>, #897). render/large_doc: 1.2169 ms on its parent vs 1.6664 ms on it.\nThat was not the cause: the arena change (#895).",
        ),
        Message::user("don't revert it; patch forward"),
        Message::assistant("Patching forward with a per-document slug table."),
    ];
    let summary = summarize_within(&middle, None, 1_500, 3_000);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.iter().any(|line| line
            .starts_with("- Culprit: 7c4e91a2d05b3f68e1a9c2b47d0f5e83a6b1c920 (core: intern heading slugs")),
        "{summary}"
    );
    assert!(
        !done.iter().any(|line| line.contains("the arena change")),
        "{summary}"
    );
}

/// A finding's label may follow a dash or say `the`, mid-paragraph (verify40: an ML session's
/// root cause was lost in one compaction, a listing of 62 checkpoints beside it).
#[test]
fn a_finding_after_a_dash_or_the_is_kept() {
    let listing: String = (0..80)
        .map(|n| {
            format!(
                "gs://acme-ml/runs/llama-ft-0{}/checkpoints/step-{:05}/model.safetensors\n",
                n % 4,
                n * 250
            )
        })
        .collect();
    let middle = vec![
        Message::user("why did run 3 diverge?"),
        shell("l1", "gsutil ls -r gs://acme-ml/runs/"),
        Message::tool("l1", listing),
        Message::assistant(
            "Compared the two configs and the loss curves side by side. Loss went NaN at step 1200 — root cause: fp16 overflow in the attention logits after a81c3de dropped the 1/sqrt(d) scale. I'll restore it and rerun from step-01000.",
        ),
        Message::assistant(
            "Checked the dataloader too. The cause: warmup_steps was 0 after the config refactor in 3f9a2c1, so the first steps ran at full LR.",
        ),
        Message::user("ok, restore both"),
        Message::assistant("Restoring."),
    ];
    let summary = summarize_within(&middle, None, 1_500, 3_000);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.iter()
            .any(|line| line.starts_with("- root cause: fp16 overflow in the attention logits after a81c3de")),
        "{summary}"
    );
    assert!(
        done.iter()
            .any(|line| line
                .starts_with("- The cause: warmup_steps was 0 after the config refactor in 3f9a2c1")),
        "{summary}"
    );
}

/// A blocker that waits on someone the sentence before it named (`until he does`) is said with
/// that sentence, and lifted by a go-ahead naming them and what they did; the failure it held is
/// then fixed by the rerun that passed (verify41: both stayed under Blocked beside `Apply
/// complete!`).
#[test]
fn a_blocker_waiting_on_someone_named_before_is_lifted_by_their_news() {
    let apply = "terraform apply -target=module.reports.aws_kms_key.reports -auto-approve";
    let middle = vec![
        Message::user("Apply the reports module to staging."),
        shell("t1", apply),
        Message::tool(
            "t1",
            "Error: creating KMS Key: AccessDeniedException: not authorized to perform: kms:CreateKey with an explicit deny in a service control policy\nExit code: 1",
        ),
        Message::user(
            "That's the SCP, owned by security. I've asked Marco to add an exception. We're blocked on KMS until he does.",
        ),
        Message::assistant("Understood, waiting on Marco for KMS."),
        Message::user("Marco says the SCP exception is in place now -- KMS should work, go ahead."),
        shell("t2", apply),
        Message::tool(
            "t2",
            "module.reports.aws_kms_key.reports: Creation complete after 21s [id=6b1f0e2c]\n\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\nExit code: 0",
        ),
        Message::assistant("KMS key created; the SCP exception works."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert!(
        !standing_errors(&summary).contains("AccessDeniedException"),
        "{summary}"
    );
    // Still blocked, it is said with who it waits on.
    let waiting = summarize(&middle[..5]);
    assert!(
        section_lines(&waiting, "### Blocked")
            .iter()
            .any(|line| line
                .contains("I've asked Marco to add an exception. We're blocked on KMS until he does.")),
        "{waiting}"
    );
}

/// A database client given its statement runs that statement: another statement passing does
/// not retry a denied one (verify41: `SELECT pg_stat_statements_reset()` denied, then `CREATE
/// INDEX` passing, read `passed on a later run`).
#[test]
fn another_statement_passing_does_not_retry_a_denied_one() {
    let middle = vec![
        Message::user("Restore the orders index on staging."),
        shell("q1", "psql \"$STAGING_RW\" -c \"SELECT pg_stat_statements_reset()\""),
        Message::tool(
            "q1",
            "ERROR:  permission denied for function pg_stat_statements_reset\nExit code: 1",
        ),
        shell(
            "q2",
            "psql \"$STAGING_RW\" -c \"CREATE INDEX CONCURRENTLY idx_orders_customer_created ON orders (customer_id, created_at DESC)\"",
        ),
        Message::tool("q2", "CREATE INDEX\nExit code: 0"),
        Message::assistant("Index created."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("passed on a later run"), "{summary}");
    // The same statement after another set-up retries it.
    let retried = vec![
        Message::user("Create the index on staging."),
        shell(
            "b1",
            "psql \"$STAGING_RW\" -c \"BEGIN; CREATE INDEX CONCURRENTLY idx_orders_customer_created ON orders (customer_id, created_at DESC); COMMIT;\"",
        ),
        Message::tool(
            "b1",
            "ERROR:  CREATE INDEX CONCURRENTLY cannot run inside a transaction block\nExit code: 1",
        ),
        shell(
            "b2",
            "psql \"$STAGING_RW\" -c \"SET statement_timeout = 0; CREATE INDEX CONCURRENTLY idx_orders_customer_created ON orders (customer_id, created_at DESC);\"",
        ),
        Message::tool("b2", "SET\nCREATE INDEX\nExit code: 0"),
        Message::assistant("Index created."),
    ];
    let retried = summarize(&retried);
    assert!(retried.contains("passed on a later run"), "{retried}");
    assert!(
        !standing_errors(&retried).contains("cannot run inside a transaction block"),
        "{retried}"
    );
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("permission denied for function pg_stat_statements_reset")),
        "{summary}"
    );
}

/// A forge's listing of runs or issues records the past, and a file printed through `head` is
/// the file's: neither is an error of the session (verify41: a run list's `failure` rows and a
/// client's `throw new SyncError(…)` listed under Errors).
#[test]
fn a_forges_listing_and_a_file_printed_through_head_hold_no_errors() {
    let middle = vec![
        Message::user("The cart badge e2e test is flaky; find when it started."),
        shell(
            "r1",
            "gh run list --workflow e2e.yml --limit 4 --json headSha,conclusion -q '.[] | \"\\(.headSha[0:9]) \\(.conclusion)\"'",
        ),
        Message::tool(
            "r1",
            "2026-11-29T12:00:00Z 7873a59e0 failure\n2026-11-28T11:00:00Z 1e8fa462d success\n2026-11-27T17:00:00Z f7a139d6f failure\nExit code: 0",
        ),
        shell("c1", "cat -n src/api/client.ts | head -5"),
        Message::tool(
            "c1",
            "     1  const RETRY_CODES = [502, 503, 504];\n     2  export async function sync(id: string) {\n     3    const res = await fetch(`/v2/sync/${id}`);\n     4    if (!res.ok) throw new SyncError(`sync failed: ${res.status}`);\n     5  }\nExit code: 0",
        ),
        Message::assistant("Failures start on 2026-11-27; the client throws SyncError on any non-2xx."),
    ];
    let summary = summarize(&middle);
    let errors = standing_errors(&summary);
    assert!(!errors.contains("7873a59e0 failure"), "{summary}");
    assert!(!errors.contains("SyncError"), "{summary}");
}

/// A compiler's diagnostic is fixed by that compiler passing, whatever command printed it; a CI
/// log's failures by a whole log or a run list showing passes (verify41: a `git apply` printing
/// `error TS2345` stayed blocked after `pnpm exec tsc --noEmit` passed, and a firefox
/// `NS_ERROR_CONNECTION_REFUSED` under Errors after `599 passed`).
#[test]
fn a_compilers_error_and_a_ci_failure_are_fixed_by_their_own_passes() {
    let middle = vec![
        Message::user("Fix the cart badge race."),
        shell("a1", "git apply <<'EOF'\n--- a/src/features/cart/useCart.ts\n+++ b/src/features/cart/useCart.ts\n@@ -16,5 +16,9 @@\nEOF"),
        Message::tool(
            "a1",
            "src/features/cart/useCart.ts(19,7): error TS2345: Argument of type '(c: Cart) => Cart' is not assignable to parameter of type 'SetStateAction<Cart | null>'.\nExit code: 2",
        ),
        shell(
            "a2",
            "sed -i 's/setCart(c => {/setCart((c) => { if (!c) return c;/' src/features/cart/useCart.ts && pnpm exec tsc --noEmit && echo TSC_OK",
        ),
        Message::tool("a2", "TSC_OK\nExit code: 0"),
        shell("l1", "gh run view 11920431 --log-failed 2>&1 | tail -60"),
        Message::tool(
            "l1",
            "e2e (firefox)\tRun tests\t2026-12-01T09:31:40Z     Error: page.goto: NS_ERROR_CONNECTION_REFUSED\ne2e (firefox)\tRun tests\t2026-12-01T09:31:41Z   1 failed\nExit code: 0",
        ),
        shell("l2", "gh run view 11931877 --log | grep -E 'passed|flaky' | tail -5"),
        Message::tool("l2", "e2e-stress\tRun\t  599 passed (8.9m)\nExit code: 0"),
        Message::assistant("Type-checks, and the stress run passed."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    let errors = standing_errors(&summary);
    assert!(!errors.contains("NS_ERROR_CONNECTION_REFUSED"), "{summary}");
    assert!(!errors.contains("TS2345"), "{summary}");
}

/// SWE-agent's environment ends what it sends with its state and prompt; a request is quoted
/// without it, on one line (verify25: every request read `… (Open file: n/a)` over four lines).
#[test]
fn a_request_is_quoted_without_swe_agents_prompt() {
    let prompt = "\n\n(Open file: n/a)\n(Current directory: /repo)\nbash-$";
    let middle = vec![
        Message::user(format!("Bump requests to 2.32.3 (CVE-2024-35195).{prompt}")),
        Message::assistant("Bumped."),
        Message::user(format!("Quick question: which Node version does CI use?{prompt}")),
        Message::assistant("Node 20.11.1, from web/.nvmrc."),
        Message::user(format!("Now the release note.{prompt}")),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("Open file"), "{summary}");
    assert!(!summary.contains("bash-$"), "{summary}");
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.contains(&"- Answered question: Quick question: which Node version does CI use?"),
        "{summary}"
    );
}

/// A team's own keys (`BC-1`, `ADR-7`) make records under a heading that says it lists decisions,
/// or with a word that revises; a ticket's key opening a line (`OPS-3302: restart the pods`) is
/// no record.
#[test]
fn a_keyed_line_is_a_record_under_a_heading_of_decisions_or_when_it_revises() {
    let mut records = Vec::new();
    let text = "OPS-3302: restart the pods after the deploy.
Decisions recorded:
- BC-1: camelCase field names in v2.
- BC-2: cursor pagination, max 100.

Action items:
- AI-1: publish the spec.

Tickets waiting on this decision:
- OPS-3310: rotate the redis password.
";
    super::patterns::decision_records(text, 0, &mut records);
    let found: Vec<&str> = records.iter().map(|r| r.text).collect();
    assert_eq!(
        found,
        [
            "BC-1: camelCase field names in v2.",
            "BC-2: cursor pagination, max 100."
        ]
    );
    for revision in [
        "Reverse BC-1: v2 keeps snake_case.",
        "BC-1 revised: v2 keeps snake_case field names.",
        "**ADR-7 superseded:** Postgres for the queue too.",
    ] {
        let mut records = Vec::new();
        super::patterns::decision_records(revision, 0, &mut records);
        assert!(
            records.len() == 1 && records[0].revises && records[0].key.is_some(),
            "{revision}: {records:?}"
        );
    }
    let mut records = Vec::new();
    super::patterns::decision_records("PLAT-3391 updated: the fix ships Friday.", 0, &mut records);
    assert!(records.is_empty(), "{records:?}");
}

/// A keyed record's revision replaces it, in the summary that reads both and when the record was
/// folded from an earlier summary (verify22: `BC-1 revised: v2 keeps snake_case` stood beside
/// `BC-1: camelCase field names in v2` in every summary of an API review).
#[test]
fn a_keyed_decision_revised_later_is_replaced() {
    let recorded = Message::assistant(
        "Decisions recorded:\n- BC-1: camelCase field names in v2 (customerId, orderId).\n- BC-2: cursor pagination (page_token), max 100.",
    );
    let middle = vec![
        Message::user("Decision: accept BC-1 and BC-2 as proposed. Write them down as decisions."),
        recorded.clone(),
        Message::user("Reverse BC-1: v2 keeps snake_case. A second package doubles the mobile work."),
        Message::assistant("BC-1 revised: v2 keeps snake_case field names (customer_id, order_id)."),
    ];
    let summary = summarize(&middle);
    let decisions = section_lines(&summary, "## Key Decisions");
    assert!(
        decisions.contains(&"- BC-1 revised: v2 keeps snake_case field names (customer_id, order_id)."),
        "{summary}"
    );
    assert!(
        decisions.contains(&"- BC-2: cursor pagination (page_token), max 100."),
        "{summary}"
    );
    assert!(!summary.contains("camelCase field names"), "{summary}");

    let previous = summarize(&middle[..2]);
    let previous = summary_body(&previous).unwrap_or(&previous).to_owned();
    assert!(previous.contains("- BC-1: camelCase field names"), "{previous}");
    let summary = summarize_within(&middle[2..], Some(&previous), 8_000, 8_000);
    let decisions = section_lines(&summary, "## Key Decisions");
    assert!(
        decisions.contains(&"- BC-1 revised: v2 keeps snake_case field names (customer_id, order_id)."),
        "{summary}"
    );
    assert!(!summary.contains("camelCase field names"), "{summary}");
    assert!(
        decisions.contains(&"- BC-2: cursor pagination (page_token), max 100."),
        "{summary}"
    );
}

/// A success of the newest work done says how it ended, as a failure says its error: otherwise
/// the summary tells failures in words and successes as line counts, and a model re-runs a test
/// suite that already passed.
#[test]
fn the_newest_work_done_says_the_last_line_its_command_printed() {
    let middle = vec![
        Message::user("make the strict build pass"),
        shell("t1", "npx vitest run"),
        Message::tool(
            "t1",
            " ✓ src/user.test.ts (12 tests)\n ✓ src/card.test.ts (4 tests)\n\n Tests  320 passed (320)\n",
        ),
        Message::assistant("All 320 tests pass."),
        Message::user("now the changelog"),
        Message::assistant("Done: added the entry."),
    ];
    let summary = summarize(&middle);
    // The latest request was answered: a model must not take it for one to answer.
    assert_eq!(
        section_lines(&summary, "## Goal").first(),
        Some(&"- Latest request (answered): now the changelog"),
        "{summary}"
    );
    let done = section_lines(&summary, "### Done");
    assert_eq!(
        done,
        ["- [terminal] ran `npx vitest run` -> 4 lines output; last line: Tests 320 passed (320)"],
        "{summary}"
    );
}

/// OpenHands closes every command's output with its working directory, interpreter and exit
/// code: the last line quoted is the command's own (verify15's mobile release read `last line:
/// [Python interpreter: /openhands/poetry/bin/python]` on every action).
#[test]
fn the_last_line_quoted_is_the_commands_not_openhands_trailer() {
    let middle = vec![
        Message::user("build the bundle"),
        shell("t1", "./gradlew :app:bundleRelease"),
        Message::tool(
            "t1",
            "> Task :app:bundleRelease\nBUILD SUCCESSFUL in 2m 14s\n[The command completed with exit code 0.]\n\
             [Current working directory: /workspace]\n[Python interpreter: /openhands/poetry/bin/python]\n\
             [Command finished with exit code 0]",
        ),
        Message::assistant("Built."),
        Message::user("thanks"),
        Message::assistant("Anytime."),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    assert_eq!(done.len(), 1, "{summary}");
    assert!(
        done[0].ends_with("; last line: BUILD SUCCESSFUL in 2m 14s"),
        "{summary}"
    );
}

/// A tool's colour codes, kept as text when an export dropped their escape character, are left
/// out of the lines quoted (verify40: `[2m Test Files [22m [1m[31m1 failed[39m[22m` in a summary).
#[test]
fn colour_codes_are_left_out_of_the_lines_quoted() {
    let middle = vec![
        Message::user("run the unit tests"),
        shell("t1", "npx vitest run"),
        Message::tool(
            "t1",
            "[31mFAIL[39m src/cart.test.ts > totals > applies the coupon\n\
             [31mAssertionError: expected 90 to be 81[39m\n\
             [2m Test Files [22m [1m[31m1 failed[39m[22m[2m | [22m[1m[32m11 passed[39m[22m",
        ),
        Message::assistant("The coupon total is off."),
        Message::user("leave it for now"),
        Message::assistant("Okay."),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains("AssertionError: expected 90 to be 81"),
        "{summary}"
    );
    assert!(
        !summary.contains("[31m") && !summary.contains("[39m"),
        "{summary}"
    );
}

/// SWE-agent closes every observation with its prompt: the last line quoted is the command's,
/// not `bash-$` (verify40's SWE-agent sessions read `last line: bash-$` on every action).
#[test]
fn the_last_line_quoted_is_the_commands_not_swe_agents_prompt() {
    let middle = vec![
        Message::user("run the reproduction"),
        shell("t1", "python reproduce.py"),
        Message::tool(
            "t1",
            "loading fixtures\nResult: 42 rows matched\n(Open file: /repo/reproduce.py)\n\
             (Current directory: /repo)\nbash-$",
        ),
        Message::assistant("It matches now."),
        Message::user("thanks"),
        Message::assistant("Anytime."),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    assert_eq!(done.len(), 1, "{summary}");
    assert!(
        done[0].ends_with("; last line: Result: 42 rows matched"),
        "{summary}"
    );
}

/// A question the user asks is no constraint, though it says `only` or `never`: they may answer
/// it the other way later.
#[test]
fn a_question_is_not_listed_as_a_constraint() {
    let middle = vec![
        Message::user("Redshift goes read-only from 2027-04-01, delete end of May? Or only end of April?"),
        Message::assistant("End of April saves a month of on-demand pricing."),
        Message::user("Snapshot and delete on 2027-04-30 then. Never keep it past the RI expiry."),
        Message::assistant("Noted."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- Never keep it past the RI expiry."],
        "{summary}"
    );
}

/// What happened or happens is no rule, and a pasted quotation ends where its closing mark does
/// (verify15 W6: `…does not need it.' We never added that permission.` was kept as a constraint;
/// verify18: `… fails on CI maybe one run in eight, never locally.`).
#[test]
fn a_past_never_or_a_pasted_fragment_is_not_a_constraint() {
    let middle = vec![
        Message::user(
            "Google Play rejected 40200: 'Your app uses the QUERY_ALL_PACKAGES permission but \
             does not need it.' We never added that permission. It always failed on the \
             internal track. Never touch the upload keystore, and always bump versionCode. \
             tests/test_ws.py::test_retry fails on CI maybe one run in eight, never locally. \
             The nightly job always runs at 02:00. Never, ever push to main. Play says:\n\
             ```\nIssue: Your app must target API level 34. Change your app's target API level to at least 34.\n```\n",
        ),
        Message::assistant("Looking at the merged manifest."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        [
            "- Never touch the upload keystore, and always bump versionCode.",
            "- Never, ever push to main."
        ],
        "{summary}"
    );
}

/// A screenshot the user sent leaves a trace: the request says how many images came with it,
/// also when an image came alone (verify15 W10).
#[test]
fn a_requests_images_are_counted_in_its_goal_line() {
    let image = |url: &str| serde_json::json!({"type": "image_url", "image_url": {"url": url}});
    let with_parts = |parts: Vec<serde_json::Value>| {
        let mut message = Message::user("");
        message.content = ctxhost_engine_abi::Content::Parts(parts);
        message
    };
    let middle = vec![
        with_parts(vec![
            serde_json::json!({"type": "text", "text": "The checkout screen crashes, see both screenshots."}),
            image("data:image/png;base64,AAAA"),
            image("data:image/png;base64,BBBB"),
        ]),
        Message::assistant("The stack is in CheckoutFragment."),
        with_parts(vec![image("https://example.com/after.png")]),
        Message::assistant("That is the fixed layout."),
        Message::user("Ship it."),
        Message::assistant("Shipped."),
    ];
    let summary = summarize(&middle);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.contains(
            &"- The checkout screen crashes, see both screenshots. [2 images sent with it, not kept]"
        ),
        "{summary}"
    );
    assert!(goal.contains(&"- [1 image sent with it, not kept]"), "{summary}");
}

/// A status line that mentions a fix is no decision; the fix the assistant chose is (verify13 N6:
/// `Storybook builds; pushed the fix to PR #812.` was the session's only Key Decision).
#[test]
fn a_status_that_mentions_a_fix_is_not_a_decision() {
    let middle = vec![
        Message::user("storybook fails to build"),
        Message::assistant("The fix is to pin @storybook/react to 8.1.4 until the addon catches up."),
        Message::user("ok do it"),
        Message::assistant("Storybook builds; pushed the fix to PR #812."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        ["- The fix is to pin @storybook/react to 8.1.4 until the addon catches up."],
        "{summary}"
    );
}

/// A file read whose code says `error` holds no error of a run: its lines are listed apart, not
/// under Errors, where a model would look for the failure (verify13 N3).
#[test]
fn lines_of_a_file_read_that_mention_errors_are_not_listed_as_errors() {
    let middle = vec![
        Message::user("port UserCard to a function component"),
        Message::assistant_calls(vec![ToolCall::new(
            "r1",
            "read_file",
            r#"{"path":"src/components/UserCard.jsx"}"#,
        )]),
        Message::tool(
            "r1",
            "    14\t  state = { user: null, loading: true, error: null };\n    29\t    } catch (error) {\n    30\t      this.setState({ error, loading: false });\n",
        ),
        shell("t1", "npx tsc --noEmit"),
        Message::tool(
            "t1",
            "src/pages/Team.tsx(24,39): error TS2307: Cannot find module '../components/legacy/UserCard'.\nExit code: 2",
        ),
        Message::assistant("The import in Team.tsx still points at the legacy card."),
    ];
    let summary = summarize(&middle);
    // The run's error is quoted with its failure; no line of the file is called an error.
    assert!(
        section_lines(&summary, "### Blocked")[0]
            .ends_with("error TS2307: Cannot find module '../components/legacy/UserCard'."),
        "{summary}"
    );
    assert!(!summary.contains("- Errors:"), "{summary}");
    // A viewer's numbered lines are a file's text, not error lines of any kind (verify21).
    assert!(!summary.contains("14\t  state"), "{summary}");
}

/// Source code read that names `error` as a type or a variable is no error line at all; a line
/// of a file read that reads as one (a saved log's `ValueError: …`) is listed apart (verify39:
/// 36 Go signatures `func (s *Server) OrderChannel4(ctx context.Context, id string) error {`).
#[test]
fn code_read_that_names_error_types_lists_no_error_lines() {
    let code: String = (0..12)
        .map(|n| format!("func (s *Server) OrderChannel{n}(ctx context.Context, id string) error {{\n\treturn nil\n}}\n"))
        .collect();
    let middle = vec![
        Message::user("why does checkout-api crash on start?"),
        Message::assistant_calls(vec![ToolCall::new(
            "r1",
            "read_file",
            r#"{"path":"internal/server/orders.go"}"#,
        )]),
        Message::tool("r1", code),
        Message::assistant_calls(vec![ToolCall::new(
            "r2",
            "read_file",
            r#"{"path":"/tmp/crash.log"}"#,
        )]),
        Message::tool(
            "r2",
            "starting checkout-api\nValueError: required env PAYMENTS_GRPC_ADDR is empty\n",
        ),
        Message::assistant("The env var was renamed."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("OrderChannel"), "{summary}");
    assert!(
        summary.contains("ValueError: required env PAYMENTS_GRPC_ADDR is empty"),
        "{summary}"
    );
}

/// A request's answer is the assistant's last reply when no file was changed after it, and its
/// first when changes went on after every reply: a remark on the way is no answer (verify23: `Reverse
/// decision 1: drop the alias` was given `formatMoney formats minor units…`, a finding of the
/// tests run after the answer).
#[test]
fn a_remark_made_while_work_went_on_is_no_answer() {
    let request = "Reverse decision 1: drop the deprecated Order alias after all. Update apps/admin.";
    let revised = "Decision 1 revised: no alias; apps/admin moves to the generated type in this PR.";
    let mut middle = vec![
        Message::user(request),
        Message::assistant(revised),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "patch",
            r#"{"path":"apps/admin/src/views/Refunds.tsx"}"#,
        )]),
        Message::tool("e1", r#"{"success": true}"#),
        shell("t1", "pnpm test"),
        Message::tool("t1", "1 failed\nExit code: 1"),
        Message::assistant("formatMoney formats minor units as major units: 1299 -> 1.299,00 €."),
        Message::assistant_calls(vec![ToolCall::new(
            "f1",
            "patch",
            r#"{"path":"apps/web/src/lib/money.ts"}"#,
        )]),
        Message::tool("f1", r#"{"success": true}"#),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Goal").contains(&format!("- Its answer: {revised}").as_str()),
        "{summary}"
    );
    // The work done and reported last: the report answers it, a look-up after it or not
    // (verify24: `2 of 10 CI runs still fail…` lost for a `gh run view` after it).
    middle.push(Message::assistant("Done: the alias is gone and the tests pass."));
    middle.push(shell("v1", "gh run view 9876543210"));
    middle.push(Message::tool("v1", "✓ main CI · 9876543210\nExit code: 0"));
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Goal")
            .contains(&"- Its answer: Done: the alias is gone and the tests pass."),
        "{summary}"
    );
    // Changes after the place of the next request, kept verbatim after the head, are its work
    // (verify24: the quarantine's edits made `2 of 10 CI runs still fail` a remark).
    let pinned_at = middle.len();
    middle.push(Message::assistant_calls(vec![ToolCall::new(
        "q1",
        "patch",
        r#"{"path":".github/quarantine.yml"}"#,
    )]));
    middle.push(Message::tool("q1", r#"{"success": true}"#));
    let summary = summarize_before(&middle, None, false, Some(pinned_at));
    assert!(
        section_lines(&summary, "## Goal")
            .contains(&"- Its answer: Done: the alias is gone and the tests pass."),
        "{summary}"
    );
}

/// A paragraph the user opens with a label of rules (`Constraints:`) is rules, sentence by
/// sentence, with or without a constraint word, in the user's order (verify22: `MSRV stays 1.74`
/// lost beside `Don't change the public API…`). Outside such a paragraph, a statement is none.
#[test]
fn a_paragraph_labelled_constraints_is_rules_sentence_by_sentence() {
    let middle = vec![
        Message::user(
            "Upgrade tokio to 1.37. The CI image stays on Ubuntu 22.04 for now.\n\nConstraints: MSRV stays 1.74 (rust-version in Cargo.toml). Don't change the public API of shopd-core. Releases go out on Tuesdays only after QA signs off.\n\nThanks!",
        ),
        Message::assistant("On it."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        [
            "- MSRV stays 1.74 (rust-version in Cargo.toml).",
            "- Don't change the public API of shopd-core.",
            "- Releases go out on Tuesdays only after QA signs off.",
        ],
        "{summary}"
    );
}

/// A shell command that only prints source files reads them, as a read tool does: their lines
/// are no errors of a run (verify22: Codex reads files with `sed -n`, and `use thiserror::Error;`
/// stood under `Errors:`). A log printed the same way is a run's output, errors and all.
#[test]
fn a_source_file_printed_by_a_shell_command_holds_no_error_lines() {
    let file = "use thiserror::Error;\n\n#[derive(Debug, Error)]\npub enum ApiError {\n    #[error(\"database error: {0}\")]\n    Db(#[from] sqlx::Error),\n}\n";
    let middle = vec![
        Message::user("port the error type to thiserror 1.0"),
        shell("r1", "sed -n '1,200p' crates/shopd-api/src/error.rs"),
        Message::tool("r1", file),
        shell(
            "r2",
            "cat crates/shopd-api/src/main.rs crates/shopd-api/Cargo.toml",
        ),
        Message::tool(
            "r2",
            "fn main() -> Result<(), ApiError> {\n    Err(ApiError::NotFound)?\n}\n",
        ),
        shell("l1", "cat target/test-run.log"),
        Message::tool(
            "l1",
            "test orders::retries ... FAILED\nerror: test failed, to rerun pass `-p shopd-api --lib`\n",
        ),
        Message::assistant("The retries test fails."),
    ];
    let summary = summarize(&middle);
    let errors = summary.split("- Errors:").nth(1).unwrap_or_default();
    let errors = errors.split("\n- ").next().unwrap_or_default();
    assert!(!errors.contains("thiserror"), "{summary}");
    assert!(!errors.contains("database error"), "{summary}");
    assert!(!errors.contains("ApiError::NotFound"), "{summary}");
    assert!(errors.contains("test orders::retries ... FAILED"), "{summary}");
}

/// The answer to the latest request is kept after it, on one line: in a planning chat it is what
/// the part summarised concluded, and no other line keeps an answer in prose (verify13 N1: the
/// summary lost `Platform total ~$4,230/month`).
#[test]
fn the_latest_requests_answer_follows_it() {
    let middle = vec![
        Message::user("Price BigQuery for us."),
        Message::assistant("About $1,430/month on demand."),
        Message::user("What's the cost total now, roughly, per month?"),
        shell("c1", "cat docs/plan/costs.md"),
        Message::tool("c1", "BigQuery ~$1,430\nAirbyte ~$1,500\nExit code: 0"),
        Message::assistant(
            "Rough monthly, from April:\n- BigQuery ~$1,430\n- Airbyte ~$1,500\n\nPlatform total ~$4,230/month, well under the $15,000 cap.",
        ),
    ];
    let summary = summarize(&middle);
    // A long answer keeps its start and its end, where the conclusion is.
    let long = format!(
        "Rough monthly, from April: {} Platform total ~$4,230/month, well under the $15,000 cap.",
        "BigQuery on-demand ~$700 scans + ~$620 storage; ".repeat(12)
    );
    let mut long_middle = middle.clone();
    *long_middle.last_mut().unwrap() = Message::assistant(long);
    let long_summary = summarize(&long_middle);
    let answer = section_lines(&long_summary, "## Goal")[1];
    assert!(
        answer.starts_with("- Its answer: Rough monthly, from April: BigQuery"),
        "{answer}"
    );
    assert!(
        answer.ends_with(" Platform total ~$4,230/month, well under the $15,000 cap."),
        "{answer}"
    );
    assert!(answer.contains(" … ") && answer.chars().count() < 430, "{answer}");
    assert_eq!(
        section_lines(&summary, "## Goal")[..2],
        [
            "- Latest request (answered): What's the cost total now, roughly, per month?",
            "- Its answer: Rough monthly, from April: - BigQuery ~$1,430 - Airbyte ~$1,500 Platform total ~$4,230/month, well under the $15,000 cap.",
        ],
        "{summary}"
    );
    // Folded into the next summary, the new answer follows the new request, the old question
    // keeps its own answer after it (verify21: a question answered lost its answer at the next
    // fold), and the oldest request is still the conversation's first.
    let previous = summary_body(&summary).unwrap_or(&summary).to_owned();
    let next = vec![
        Message::user("And with a staging project?"),
        Message::assistant("About $200/month more."),
    ];
    let folded = summarize_within(&next, Some(&previous), 8_000, 8_000);
    let goal = section_lines(&folded, "## Goal");
    assert_eq!(goal[1], "- Its answer: About $200/month more.", "{folded}");
    assert_eq!(
        goal[2..4],
        [
            "- Answered question: What's the cost total now, roughly, per month?",
            "- Its answer: Rough monthly, from April: - BigQuery ~$1,430 - Airbyte ~$1,500 Platform total ~$4,230/month, well under the $15,000 cap.",
        ],
        "{folded}"
    );
    assert_eq!(
        goal[goal.len() - 2..],
        [
            "- Price BigQuery for us.",
            "- Its answer: About $1,430/month on demand."
        ],
        "{folded}"
    );
    // A request that asked nothing keeps its answer too, below the requests: what the work
    // concluded (the bundled migration lost every day's `Day N done: … commit …` at the fold
    // after the next day's request). Quoted shorter than the latest's, its start and its end.
    let plain = summary.replace(
        "What's the cost total now, roughly, per month?",
        "Total the costs per month.",
    );
    let plain_previous = summary_body(&plain).unwrap_or(&plain).to_owned();
    let folded = summarize_within(&next, Some(&plain_previous), 8_000, 8_000);
    let goal = section_lines(&folded, "## Goal");
    assert_eq!(
        goal[2..4],
        [
            "- Total the costs per month.",
            "- Its answer: Rough monthly, from April: - BigQuery ~$1,430 - Airbyte ~$1,500 Platform total ~$4,230/month, well under the $15,000 cap.",
        ],
        "{folded}"
    );
    let long_previous = summary_body(&long_summary).unwrap_or(&long_summary).replace(
        "What's the cost total now, roughly, per month?",
        "Total the costs per month.",
    );
    let folded = summarize_within(&next, Some(&long_previous), 8_000, 8_000);
    let goal = section_lines(&folded, "## Goal");
    assert!(
        goal[3].starts_with("- Its answer: Rough monthly, from April: BigQuery")
            && goal[3].ends_with(" well under the $15,000 cap.")
            && goal[3].chars().count() < 230,
        "{folded}"
    );
}

/// What each earlier request got stays after it in Goal, the start and end of a long answer, in
/// the summary of the middle and folded into the next: the bundled migration's summaries held
/// every day's request and none of its `Day N done: … commit …` answers. An answer that asks the
/// user back is no outcome: the user's next request answers it.
#[test]
fn an_earlier_requests_answer_stays_with_it() {
    let day = |n: u32, commit: &str| {
        vec![
            Message::user(format!(
                "Day {n}: migrate stage {n} to the new client (issue #7{n:02})."
            )),
            shell(
                &format!("c{n}"),
                &format!("git commit -am 'stage {n}' && git rev-parse --short HEAD"),
            ),
            Message::tool(format!("c{n}"), format!("{commit}\nExit code: 0")),
            Message::assistant(format!(
                "Day {n} done: stage {n} migrated, commit {commit} (#7{n:02})."
            )),
        ]
    };
    let mut middle = day(1, "73cf256");
    middle.extend(day(2, "ec99108"));
    middle.push(Message::user("Day 3: migrate the load stage."));
    middle.push(Message::assistant(
        "The load stage still uses the old client's retry helper. Should I port it too?",
    ));
    middle.push(Message::user("Yes, port it."));
    middle.push(Message::assistant(
        "Ported: the load stage uses the new retry helper.",
    ));
    let summary = summarize(&middle);
    let goal = section_lines(&summary, "## Goal");
    let after = |goal: &[&str], request: &str| -> Option<String> {
        let at = goal.iter().position(|line| line.ends_with(request))?;
        goal.get(at + 1).map(|line| line.to_string())
    };
    assert_eq!(
        after(&goal, "Day 2: migrate stage 2 to the new client (issue #702).").as_deref(),
        Some("- Its answer: Day 2 done: stage 2 migrated, commit ec99108 (#702)."),
        "{summary}"
    );
    assert_eq!(
        after(&goal, "Day 1: migrate stage 1 to the new client (issue #701).").as_deref(),
        Some("- Its answer: Day 1 done: stage 1 migrated, commit 73cf256 (#701)."),
        "{summary}"
    );
    assert!(!summary.contains("Should I port it too?"), "{summary}");

    // Folded: the latest request's answer stays with it once the next request is asked.
    let previous = summary_body(&summary).unwrap_or(&summary).to_owned();
    let next = vec![
        Message::user("Day 4: the publish stage."),
        Message::assistant("Day 4 done: publish migrated, commit 17362f2 (#704)."),
    ];
    let folded = summarize_within(&next, Some(&previous), 8_000, 8_000);
    let goal = section_lines(&folded, "## Goal");
    assert_eq!(
        after(&goal, "Yes, port it.").as_deref(),
        Some("- Its answer: Ported: the load stage uses the new retry helper."),
        "{folded}"
    );
    assert_eq!(
        after(&goal, "Day 2: migrate stage 2 to the new client (issue #702).").as_deref(),
        Some("- Its answer: Day 2 done: stage 2 migrated, commit ec99108 (#702)."),
        "{folded}"
    );
}

/// A run on another project (`--project=chromium` after `--project=firefox`) or another host
/// passes nothing of a failure: it stays under Errors, in the summary of the middle and folded
/// into the next (verify40: firefox's `NS_BINDING_ABORTED` read `Errors fixed since:` once
/// chromium's run passed). The whole suite passing settles it, and so does the next test of the
/// same project (the bundled migration's `-k step7` after `-k step6`'s fix).
#[test]
fn a_run_of_another_part_of_the_suite_fixes_nothing() {
    let firefox = "npx playwright test e2e/checkout.spec.ts --project=firefox";
    let error = "Error: page.click: NS_BINDING_ABORTED; maybe frame was detached?";
    let failing = || {
        vec![
            Message::user("Fix the flaky checkout test."),
            shell("f1", firefox),
            Message::tool(
                "f1",
                format!("Running 20 tests\n  2 failed\n    {error}\n  18 passed (41.0s)\nExit code: 1"),
            ),
        ]
    };
    let passing = |id: &str, command: &str| {
        vec![
            shell(id, command),
            Message::tool(id, "Running 30 tests\n  30 passed (52.1s)\nExit code: 0"),
        ]
    };
    for other in [
        "npx playwright test e2e/checkout.spec.ts --project=chromium",
        "npx playwright test e2e/checkout.spec.ts --project chromium -g checkout",
    ] {
        let mut middle = failing();
        middle.extend(passing("c1", other));
        let summary = summarize(&middle);
        assert!(standing_errors(&summary).contains(error), "{other}: {summary}");
        let folded = summarize_within(&passing("c2", other), Some(&summary), 4_000, 4_000);
        assert!(standing_errors(&folded).contains(error), "{other}: {folded}");
    }
    for whole in [
        "npx playwright test",
        "npx playwright test e2e/ --project=firefox",
        "npx playwright test e2e/cart.spec.ts --project=firefox",
    ] {
        let mut middle = failing();
        middle.extend(passing("c1", whole));
        let summary = summarize(&middle);
        assert!(!standing_errors(&summary).contains(error), "{whole}: {summary}");
    }
    // Another host: the staging API's 401 is not fixed by the local server answering.
    let mut middle = vec![
        Message::user("Check the login endpoint."),
        shell("s1", "curl -sf https://staging.acme.dev/api/login"),
        Message::tool(
            "s1",
            "curl: (22) The requested URL returned error: 401\nExit code: 22",
        ),
    ];
    middle.extend(passing("s2", "curl -sf http://localhost:8000/api/login"));
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("staging.acme.dev") && line.contains("returned error: 401")),
        "{summary}"
    );
}

/// A compile error fixed since is not blocked once a command that compiles the same code passes:
/// `cargo clippy` and `cargo test` compile what `cargo check` does (verify22: `cargo check … ->
/// exit 101 — error[E0308]` under Blocked after both passed). The environment a command is given
/// is not its program. A failed test run stays blocked by a build that passes.
#[test]
fn a_compile_error_is_fixed_by_a_later_command_that_compiles_the_same_code() {
    let middle = vec![
        Message::user("upgrade tokio and fix the build"),
        shell(
            "c1",
            "SQLX_OFFLINE=true cargo check --workspace --all-targets 2>&1 | tail -n 400",
        ),
        Message::tool(
            "c1",
            "error[E0308]: mismatched types\n  --> crates/shopd-api/src/api/orders.rs:41:17\nExit code: 101",
        ),
        shell(
            "t1",
            "SQLX_OFFLINE=true cargo test --workspace 2>&1 | tail -n 120",
        ),
        Message::tool(
            "t1",
            "test orders::retries ... FAILED\ntest result: FAILED. 41 passed; 1 failed\nExit code: 101",
        ),
        shell("l1", "cargo clippy --workspace --all-targets -- -D warnings"),
        Message::tool("l1", "Finished `dev` profile\nExit code: 0"),
        shell("b1", "cargo build --release"),
        Message::tool("b1", "Finished `release` profile\nExit code: 0"),
        Message::assistant("Builds; one test still fails."),
    ];
    let summary = summarize(&middle);
    let blocked = section_lines(&summary, "### Blocked");
    assert!(!blocked.iter().any(|line| line.contains("E0308")), "{summary}");
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("SQLX_OFFLINE=true cargo test --workspace")),
        "{summary}"
    );
}

/// A failure the user then says is blocked, naming what it failed on, stays blocked when a later
/// command passes around it (verify24: `cargo check --workspace` failing on tokio, the user's
/// `Blocked: acme-grpc-client needs a tokio-1 release`, the crate excluded and `cargo test
/// --workspace` passing read `passed on a later run`), said in the middle or in the request kept
/// verbatim after the head (which Blocked then does not repeat). A blocker naming something else
/// holds nothing.
#[test]
fn a_failure_the_user_said_is_blocked_stays_blocked_when_worked_around() {
    let blocker = "Blocked: acme-grpc-client needs a tokio-1 release from the platform team, PLAT-3391. Exclude shopd-payments until then.";
    let middle = vec![
        Message::user("upgrade tokio"),
        shell("c1", "cargo check --workspace"),
        Message::tool(
            "c1",
            "error: failed to select a version for `tokio`.\nExit code: 101",
        ),
        shell("l1", "pnpm lint"),
        Message::tool("l1", "27:18  error  Unexpected any\nExit code: 1"),
        Message::user(blocker),
        Message::assistant_calls(vec![ToolCall::new("e1", "patch", r#"{"path":"Cargo.toml"}"#)]),
        Message::tool("e1", r#"{"success": true}"#),
        shell("t1", "cargo test --workspace && pnpm lint"),
        Message::tool("t1", "test result: ok. 214 passed\nExit code: 0"),
        Message::assistant("Green without shopd-payments."),
    ];
    let blocked_in = |summary: &str| {
        let blocked = section_lines(summary, "### Blocked");
        (
            blocked
                .iter()
                .any(|line| line.contains("cargo check --workspace")),
            blocked.iter().any(|line| line.contains("pnpm lint")),
        )
    };
    let states_it = |summary: &str| {
        section_lines(summary, "### Blocked")
            .iter()
            .any(|line| line.contains("PLAT-3391"))
    };
    let summary = summarize(&middle);
    assert_eq!(blocked_in(&summary), (true, false), "{summary}");
    assert!(states_it(&summary), "{summary}");
    // The blocker kept verbatim after the head, where it stood in the middle: it holds the
    // failure, and the context says it already, so Blocked does not repeat it.
    let mut without = middle.clone();
    without.remove(5);
    let pinned = Message::user(blocker);
    let summary = summarize_pinned(&without, None, false, Some(5), Some(&pinned));
    assert_eq!(blocked_in(&summary), (true, false), "{summary}");
    assert!(!states_it(&summary), "{summary}");
}

/// A failure that a command kept after the summary retried and passed is not blocked: its line
/// says it passed on a later run (verify23: four failures listed under Blocked above the kept
/// `pnpm -r build && pnpm lint && pnpm test` passing 412 tests). What the user says there blocks
/// the work holds the failures it names, though a later command went around them (verify24: the
/// Semgrep Pro scan blocked on a license, then the free scan passing).
#[test]
fn a_failure_the_messages_kept_after_the_summary_fixed_is_not_blocked() {
    let middle = vec![
        Message::user("get the PR green"),
        shell("l1", "pnpm lint"),
        Message::tool("l1", "27:18  error  Unexpected any\nExit code: 1"),
        shell("s1", "semgrep scan --pro --config p/python app"),
        Message::tool(
            "s1",
            "[ERROR] Semgrep Pro engine is not available: this feature requires a token\nExit code: 2",
        ),
        Message::assistant("Typing the callback instead of any."),
    ];
    let blocker = Message::user("Blocked: the Semgrep Pro license is being procured in SEC-4475. Skip Pro.");
    let passed = [
        shell("t1", "pnpm lint && semgrep scan --config p/python app"),
        Message::tool(
            "t1",
            "0 problems\nRan 120 rules on 14 files: 0 findings.\nExit code: 0",
        ),
    ];
    let blocked = |summary: &str, command: &str| {
        section_lines(summary, "### Blocked")
            .iter()
            .any(|line| line.contains(command))
    };
    let passed_later = |summary: &str, command: &str| {
        section_lines(summary, "### Done")
            .iter()
            .any(|line| line.contains(command) && line.contains(extractive::PASSED_LATER))
    };
    let tail: Vec<Message> = std::iter::once(blocker.clone()).chain(passed.clone()).collect();
    let summary = summarize_with_tail(&middle, &tail);
    assert!(!blocked(&summary, "pnpm lint"), "{summary}");
    assert!(passed_later(&summary, "pnpm lint"), "{summary}");
    assert!(blocked(&summary, "semgrep scan --pro"), "{summary}");
    // Nobody said the scan is blocked: the free scan retried it.
    let summary = summarize_with_tail(&middle, &passed);
    assert!(
        !blocked(&summary, "pnpm lint") && !blocked(&summary, "semgrep"),
        "{summary}"
    );
    // Nothing kept after the summary passed: both stand.
    let summary = summarize_with_tail(&middle, std::slice::from_ref(&blocker));
    assert!(
        blocked(&summary, "pnpm lint") && blocked(&summary, "semgrep scan --pro"),
        "{summary}"
    );
}

/// A task runner's target is the command it wraps, and a test suite passing passes the tests a
/// selection of it ran: their failures are fixed, and so are their error lines (verify33: `make
/// apply` failing, then `terraform apply managed.tfplan` complete; `pytest -k
/// test_apply_coupon_rounding` failing, then `tox -e py311` green, the errors still standing);
/// so does the project's target for the check (`make test`, `golangci-lint run`, `npm
/// test`), and another runner of the same tests (verify37: `python -m pytest …` then `tox -e
/// py312`, `cargo test -p ingest` then `cargo nextest run -p ingest`, `pytest -k spring` then
/// `make test`). Another target, or another runner's suite, fixes nothing.
#[test]
fn a_wrapped_command_or_the_whole_suite_passing_fixes_the_failure() {
    let cases = [
        (
            "make apply STACK=prod/payments-api",
            "Error: creating CloudWatch Logs Log Group: ResourceAlreadyExistsException\nmake: *** [Makefile:41: apply] Error 1\nExit code: 2",
            "terraform apply managed.tfplan",
            true,
        ),
        (
            "make apply STACK=prod/payments-api",
            "Error: creating CloudWatch Logs Log Group: ResourceAlreadyExistsException\nmake: *** [Makefile:41: apply] Error 1\nExit code: 2",
            "terraform plan -out=managed.tfplan",
            false,
        ),
        (
            "pytest -k test_apply_coupon_rounding",
            "E       AssertionError: assert Decimal('9.99') == Decimal('10.00')\nExit code: 1",
            "tox -e py311",
            true,
        ),
        (
            "pytest tests/orders/test_checkout.py -q",
            "E       AssertionError: assert Decimal('9.99') == Decimal('10.00')\nExit code: 1",
            "python -m pytest -q",
            true,
        ),
        (
            "pytest tests/orders/test_checkout.py -q",
            "E       AssertionError: assert Decimal('9.99') == Decimal('10.00')\nExit code: 1",
            "npx jest",
            false,
        ),
        // The project's target runs the tool's check: `make test` its Go tests, golangci-lint
        // its govet, `npm test` the workspace's tests however a package's were run (verify34).
        (
            "cd services/ingest && go test ./pkg/parser -run TestParseEvent -v",
            "--- FAIL: TestParseEvent (0.00s)\nExit code: 1",
            "cd services/ingest && make test",
            true,
        ),
        (
            "go vet ./...",
            "pkg/sink/kafka.go:88:14: fmt.Sprintf format %d has arg topic of wrong type string\nExit code: 1",
            "golangci-lint run ./...",
            true,
        ),
        (
            "pnpm --filter @acme/api-client test -- -t \"retries on 503\"",
            "FAIL src/retry.test.ts > retries on 503\nExit code: 1",
            "npm test",
            true,
        ),
        (
            "cd services/ingest && go test ./pkg/parser -run TestParseEvent -v",
            "--- FAIL: TestParseEvent (0.00s)\nExit code: 1",
            "npm test",
            false,
        ),
        (
            "npm run lint",
            "41:6  error  React Hook useEffect has a missing dependency\nExit code: 1",
            "npx turbo run build",
            false,
        ),
        (
            "pytest tests/unit/test_tz.py -q",
            "FAILED tests/unit/test_tz.py::test_spring_forward_gap - AssertionError: assert 2 == 3\nExit code: 1",
            "make test",
            true,
        ),
        (
            "pytest -k spring",
            "FAILED tests/unit/test_tz.py::test_spring_forward_gap - AssertionError: assert 2 == 3\nExit code: 1",
            "make test",
            true,
        ),
        (
            "pytest tests/unit/test_tz.py -q",
            "FAILED tests/unit/test_tz.py::test_spring_forward_gap - AssertionError: assert 2 == 3\nExit code: 1",
            "make build",
            false,
        ),
        (
            "cd /workspace/calsync && python -m pytest tests/unit/test_tz.py -q",
            "E       AssertionError: assert 2 == 3\nExit code: 1",
            "tox -e py312",
            true,
        ),
        (
            "cargo test -p ingest",
            "thread 'reader::tests::gz_roundtrip' panicked at crates/ingest/src/reader.rs:211:9\nExit code: 101",
            "cargo nextest run -p ingest",
            true,
        ),
    ];
    for (failed, output, passed, fixed) in cases {
        let middle = vec![
            Message::user("fix it"),
            shell("f1", failed),
            Message::tool("f1", output),
            shell("p1", passed),
            Message::tool("p1", "all good\nExit code: 0"),
        ];
        let summary = summarize(&middle);
        let blocked = section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains(failed));
        assert_eq!(blocked, !fixed, "{failed} then {passed}:\n{summary}");
        // A fixed failure's error is no longer standing; one that stands is not listed as fixed
        // (its Blocked line may quote it instead of Errors).
        let error = output.lines().next().unwrap().trim();
        let fixed_errors = summary
            .split("- Errors fixed since:\n")
            .nth(1)
            .map_or("", |errors| errors.split("\n- ").next().unwrap_or_default());
        let (listed_where_wrong, listed_right) = if fixed {
            (
                standing_errors(&summary).contains(error),
                fixed_errors.contains(error) || !summary.contains(error),
            )
        } else {
            (fixed_errors.contains(error), summary.contains(error))
        };
        assert!(
            !listed_where_wrong && listed_right,
            "{failed} then {passed}:\n{summary}"
        );
    }
}

/// A command named only in the assistant's words (an option it proposed, which the user
/// refused) is listed as mentioned, not with the commands the calls ran (verify33: `terraform
/// force-unlock 7f3c…` under `Commands:` beside the state lock's error, after the user's `Do NOT
/// force-unlock`); the next fold keeps it there, and a call running it later lists it as run.
#[test]
fn a_command_only_mentioned_is_not_listed_as_run() {
    let unlock = "terraform force-unlock 7f3c9a2e-5b1d-4e8f-a6c2-91d04b7e3f18";
    let middle = vec![
        Message::user("reconcile the drift"),
        shell("p1", "terraform plan -input=false"),
        Message::tool("p1", "Error: Error acquiring the state lock\nExit code: 1"),
        Message::assistant(format!(
            "The lock is held by a running job. Option: `{unlock}` so we can plan. Should I?"
        )),
        Message::user("No. Do NOT force-unlock. Wait for the job."),
    ];
    let group_of = |summary: &str, command: &str| -> Option<String> {
        let mut label = None;
        for line in section_lines(summary, "## Critical Context") {
            if let Some(name) = line.strip_prefix("- ") {
                label = Some(name.to_owned());
            } else if line.contains(command) {
                return label;
            }
        }
        None
    };
    let summary = summarize(&middle);
    assert_eq!(
        group_of(&summary, unlock).as_deref(),
        Some("Commands mentioned:"),
        "{summary}"
    );
    assert_ne!(
        group_of(&summary, "terraform plan -input=false").as_deref(),
        Some("Commands mentioned:"),
        "{summary}"
    );
    let next = [Message::user("The job finished. Plan again.")];
    let folded = summarize_before(&next, Some(&summary), false, None);
    assert_eq!(
        group_of(&folded, unlock).as_deref(),
        Some("Commands mentioned:"),
        "{folded}"
    );
    let ran = [
        Message::user("The job is stuck for good. Unlock it."),
        shell("u1", unlock),
        Message::tool(
            "u1",
            "Terraform state has been successfully unlocked!\nExit code: 0",
        ),
    ];
    let folded = summarize_before(&ran, Some(&summary), false, None);
    assert_ne!(
        group_of(&folded, unlock).as_deref(),
        Some("Commands mentioned:"),
        "{folded}"
    );
    assert!(folded.contains(&format!("ran `{unlock}` -> exit 0")), "{folded}");
}

/// The success that fixed a failure is what a continuing agent must not redo: the newest two
/// rank with the newest action, above a dozen newer look-ups (verify34: `make test` and
/// `golangci-lint run` passing after the failures they fixed were in no Done list).
#[test]
fn the_run_that_fixed_a_failure_is_kept_under_done() {
    let mut middle = vec![
        Message::user("fix the parser"),
        shell("f1", "go test ./pkg/parser -run TestParseEvent"),
        Message::tool("f1", "--- FAIL: TestParseEvent (0.00s)\nExit code: 1"),
        shell("p1", "make test"),
        Message::tool("p1", "ok  github.com/acme/ingest/pkg/parser 0.21s\nExit code: 0"),
    ];
    for n in 0..12 {
        middle.push(shell(
            &format!("l{n}"),
            &format!("ls -la services/ingest/pkg/dir{n}"),
        ));
        middle.push(Message::tool(format!("l{n}"), format!("total {n}\nExit code: 0")));
    }
    middle.push(Message::assistant("The parser takes unix millis now."));
    let summary = summarize_within(&middle, None, 900, 900);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("ran `make test` -> exit 0")),
        "{summary}"
    );
}

/// A blocker the user states only after a failure was fixed is about something else: it does not
/// hold the fixed failure because it names a word of it (verify33: a PyPI upload's 403, fixed
/// once the bot was a maintainer, listed under Blocked beside the user's later `Blocked: the
/// acme-oss organization on PyPI is still pending approval`).
#[test]
fn a_blocker_said_after_the_fix_does_not_hold_the_failure() {
    let middle = vec![
        Message::user("Go for PyPI."),
        shell("u1", "twine upload dist/*"),
        Message::tool(
            "u1",
            "ERROR    HTTPError: 403 Forbidden from https://upload.pypi.org/legacy/\nExit code: 1",
        ),
        Message::assistant("403: the bot is not a maintainer of tidewater on PyPI."),
        Message::user("I added the bot as a maintainer. Try again."),
        shell("u2", "twine upload dist/*"),
        Message::tool(
            "u2",
            "View at: https://pypi.org/project/tidewater/2.5.0/\nExit code: 0",
        ),
        Message::user("Now tidewater-plugins."),
        shell("u3", "cd ../plugins && twine upload dist/*"),
        Message::tool(
            "u3",
            "ERROR    HTTPError: 400 Bad Request from https://upload.pypi.org/legacy/\nExit code: 1",
        ),
        Message::user(
            "Blocked: the acme-oss organization on PyPI is still pending approval (pypi/support#4821).",
        ),
    ];
    let summary = summarize(&middle);
    let blocked = section_lines(&summary, "### Blocked");
    assert!(!blocked.iter().any(|line| line.contains("403")), "{summary}");
    assert!(
        blocked.iter().any(|line| line.contains("400 Bad Request")),
        "{summary}"
    );
}

/// A check that failed on its own and passed later inside a chain was retried: it is no longer
/// blocked, and its errors are listed as fixed. A failure of a program nothing ran again stays
/// blocked, and `cd` alone does not make two commands the same.
#[test]
fn a_failure_passed_later_inside_a_chain_is_not_blocked() {
    let middle = vec![
        Message::user("verify the months"),
        shell(
            "v1",
            "python scripts/verify_months.py --from 2025-01 --to 2026-10",
        ),
        Message::tool(
            "v1",
            "2026-03 MISMATCH legacy_md5 != v2_md5\nERROR: 1 month differs\nExit code: 1",
        ),
        shell("d1", "cd dbt && dbt run --select billing"),
        Message::tool("d1", "Database Error in model invoice_v2_monthly\nExit code: 1"),
        shell(
            "v2",
            "alembic upgrade head && python scripts/verify_months.py --from 2026-03 --to 2026-03",
        ),
        Message::tool("v2", "2026-03 OK\nExit code: 0"),
        shell("t1", "cd dbt && dbt test --select billing"),
        Message::tool("t1", "Done. PASS=41 ERROR=0\nExit code: 0"),
        Message::assistant("March matches now; the dbt run still fails."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("verify_months")),
        "{summary}"
    );
    assert!(blocked.iter().any(|line| line.contains("dbt run")), "{summary}");
    let fixed = summary.split("- Errors fixed since:").nth(1).unwrap_or_default();
    assert!(fixed.contains("ERROR: 1 month differs"), "{summary}");
    assert!(
        summary
            .lines()
            .any(|line| line.contains("verify_months.py --from 2025-01")
                && line.ends_with("; passed on a later run")),
        "{summary}"
    );
}

/// What blocks the work is listed under Blocked when someone says it, not only when a command
/// failed: a role lacking a permission, a ticket prod waits on (verify16: `Blocked: (none)`
/// while the assistant had said what blocked prod).
#[test]
fn a_blocker_the_assistant_or_the_user_states_is_listed_under_blocked() {
    let middle = vec![
        Message::user("plan prod too"),
        Message::assistant(
            "Blocked: the prod reader role tf-prod-reader cannot list s3://acme-tfstate-prod, so I can't run a read-only plan.",
        ),
        Message::user("I opened PLAT-2291 for the reader role. Until that lands prod stays blocked. Is staging blocked too?"),
        Message::assistant("No, staging is fine. I added DATA-2046 to the plan as a blocker for PII."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "### Blocked"),
        [
            "- Stated by the assistant: Blocked: the prod reader role tf-prod-reader cannot list s3://acme-tfstate-prod, so I can't run a read-only plan.",
            "- Stated by the user: I opened PLAT-2291 for the reader role. Until that lands prod stays blocked.",
        ],
        "{summary}"
    );
}

/// A check of the whole project that passed later fixed every diagnostic of its compiler an
/// earlier summary listed, not only the one its Blocked line quoted (verify36: a TypeScript
/// build's `OrderTable.tsx(61,5): error TS2741` under Errors beside `npm run build -> exit 0`);
/// so did a run of a directory for the lines naming files in it (`pytest tests -q` and `FAILED
/// tests/test_orders.py::test_total`). Another tool's error line stands.
#[test]
fn a_check_passing_later_fixes_the_diagnostics_it_printed_before_a_fold() {
    let previous = "## Goal\n- make the build pass\n\n## Progress\n### Blocked\n- [terminal] ran `npm run build` -> exit 2, 10 lines output — src/pages/Customers.tsx(33,11): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'.\n- [terminal] ran `mypy src` -> exit 1, 3 lines output — src/billing/api.py:88: error: Missing return statement\n- [terminal] ran `pytest tests -q` -> exit 1, 40 lines output — FAILED tests/test_auth.py::test_login - AssertionError\n\n## Critical Context\n- Errors:\n  - FAILED tests/test_orders.py::test_total - KeyError: 'sku'\n  - src/components/OrderTable.tsx(61,5): error TS2741: Property 'key' is missing in type '{ order: Order; }'.\n  - Found 4 errors in 3 files.\n  - src/billing/tax.py:42: error: Incompatible return value type (got \"float\", expected \"Decimal\")\n  - E   redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.\n";
    let middle = vec![
        shell("b9", "npm run build"),
        Message::tool(
            "b9",
            "vite v5.2.8 building for production...\n✓ built in 5.80s\nExit code: 0",
        ),
        shell("m9", "mypy src"),
        Message::tool("m9", "Success: no issues found in 41 source files\nExit code: 0"),
        shell("p9", "pytest tests -q"),
        Message::tool("p9", "212 passed in 9.10s\nExit code: 0"),
        Message::assistant("Build, types and tests are clean."),
    ];
    let summary = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let standing = standing_errors(&summary);
    let fixed = summary.split("- Errors fixed since:").nth(1).unwrap_or_default();
    for line in [
        "error TS2741",
        "Found 4 errors in 3 files.",
        "src/billing/tax.py:42",
        "tests/test_orders.py::test_total",
    ] {
        assert!(
            fixed.contains(line) && !standing.contains(line),
            "{line}: {summary}"
        );
    }
    assert!(standing.contains("redis.exceptions.ConnectionError"), "{summary}");
}

/// A lookup that found nothing blocks nothing once a later lookup of the same tool found what the
/// work needed, nor does a call the user refused: neither is listed under Blocked, nor as having
/// `passed on a later run` (verify36: `could not read src/crawler/session.py: File not found` and
/// a page's 404 under Blocked in 17 of 18 summaries of a research session). Folded from an earlier
/// summary, such a line goes under Done once the new middle's lookup found something.
#[test]
fn a_lookup_that_found_nothing_blocks_nothing_once_another_found_something() {
    let read = |id: &str, path: &str| {
        Message::assistant_calls(vec![ToolCall::new(
            id,
            "read_file",
            serde_json::json!({ "path": path }).to_string(),
        )])
    };
    let middle = vec![
        Message::user("Find where the crawler builds its HTTP session."),
        read("r1", "src/crawler/session.py"),
        Message::tool("r1", "File not found: src/crawler/session.py"),
        read("r2", "src/crawler/http/session_factory.py"),
        Message::tool("r2", "def make_session():\n    return httpx.Client(timeout=10)\n"),
        Message::assistant_calls(vec![ToolCall::new(
            "w1",
            "Write",
            serde_json::json!({ "file_path": "src/crawler/http/client.py", "content": "import httpx" })
                .to_string(),
        )]),
        Message::tool(
            "w1",
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        ),
        Message::assistant("It is built in src/crawler/http/session_factory.py."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert!(!summary.contains("passed on a later run"), "{summary}");
    assert!(summary.contains("src/crawler/session.py"), "{summary}");

    let previous = "## Goal\n- find the session\n\n## Progress\n### Blocked\n- [read_file] could not read src/crawler/session.py: File not found: src/crawler/session.py\n- [terminal] ran `pytest -q` -> exit 1, 9 lines output — FAILED tests/test_a.py::test_b - KeyError\n";
    let found = vec![
        read("r3", "src/crawler/http/session_factory.py"),
        Message::tool("r3", "def make_session():\n    return httpx.Client(timeout=10)\n"),
        Message::assistant("Found it."),
    ];
    let folded = summarize_within(&found, Some(previous), 4_000, 4_000);
    let blocked = section_lines(&folded, "### Blocked");
    assert!(blocked.len() == 1 && blocked[0].contains("pytest -q"), "{folded}");
    assert!(
        section_lines(&folded, "### Done")
            .iter()
            .any(|line| line.contains("could not read src/crawler/session.py")
                && !line.contains("passed on a later run")),
        "{folded}"
    );
}

/// A test run that skipped every test it selected deferred its failure, not fixed it: the
/// failure stays blocked and its error line standing (verify36: the PDF tests marked skip read as
/// fixing their `OSError: cannot load library`). A run that passed some fixes it.
#[test]
fn a_run_that_skipped_every_test_fixes_nothing() {
    let failing = |id: &str| {
        vec![
            shell(id, "pytest tests/test_pdf.py -q"),
            Message::tool(
                id,
                "E   OSError: cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file\n1 failed in 0.52s\nExit code: 1",
            ),
        ]
    };
    let mut middle = vec![Message::user("make the PDF tests pass")];
    middle.extend(failing("p1"));
    middle.push(shell("p2", "pytest tests/test_pdf.py -q"));
    middle.push(Message::tool("p2", "sssssssss\n9 skipped in 0.11s\nExit code: 0"));
    middle.push(Message::assistant("Marked the PDF tests skip until BILL-412."));
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("OSError: cannot load library")),
        "{summary}"
    );
    assert!(
        standing_errors(&summary).contains("OSError: cannot load library"),
        "{summary}"
    );

    let mut middle = vec![Message::user("make the PDF tests pass")];
    middle.extend(failing("p1"));
    middle.push(shell("p2", "pytest tests/test_pdf.py -q"));
    middle.push(Message::tool("p2", "9 passed in 1.20s\nExit code: 0"));
    middle.push(Message::assistant("Fixed."));
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
}

/// `Hold off on …` and `Leave … for now` state rules, besides the `Don't …` beside them
/// (verify40: `Hold off on next 14 for now` and `Leave firefox for now` were listed in no
/// summary); `leave` told as a step is none. They hold for now: a go-ahead naming one of their
/// words ends them. So do plain words that permit (`it's fine to push`, `the --force rule is
/// off`).
#[test]
fn holding_off_and_leaving_as_is_are_rules() {
    let middle = vec![
        Message::user("Audit the dependencies of web/."),
        Message::assistant("Found 12 advisories."),
        Message::user(
            "Hold off on next 14 for now: that's a bigger migration we plan for Q1 (WEB-1203). Leave firefox for now, it's tracked in WEB-877. Don't commit the SBOM files. Leave a comment on the PR when done.",
        ),
        Message::assistant("Noted."),
    ];
    let summary = summarize(&middle);
    let constraints = section_lines(&summary, "## Constraints & Preferences");
    for rule in [
        "Hold off on next 14 for now",
        "Leave firefox for now",
        "Don't commit the SBOM files.",
    ] {
        assert!(
            constraints.iter().any(|line| line.contains(rule)),
            "{rule}: {summary}"
        );
    }
    assert!(
        !constraints.iter().any(|line| line.contains("Leave a comment")),
        "{summary}"
    );
    // Under a `Rules:` label it is one of them.
    let labelled = vec![
        Message::user("Audit web/.\n\nRules: leave a comment on each PR you open. Keep the lockfile."),
        Message::assistant("Noted."),
    ];
    let summary = summarize(&labelled);
    let constraints = section_lines(&summary, "## Constraints & Preferences");
    for rule in ["leave a comment on each PR", "Keep the lockfile."] {
        assert!(
            constraints.iter().any(|line| line.contains(rule)),
            "{rule}: {summary}"
        );
    }
    // `keep` states a rule with what it keeps as it is, not as a step (verify41: `Keep the
    // deep-link API backward compatible.` was not listed).
    let kept = vec![
        Message::user(
            "Update CHANGELOG.md for 4.12.0. Keep the deep-link API backward compatible. Keep an eye on the crash rate.",
        ),
        Message::assistant("Noted."),
    ];
    let summary = summarize(&kept);
    let constraints = section_lines(&summary, "## Constraints & Preferences");
    assert!(
        constraints
            .iter()
            .any(|line| line.contains("Keep the deep-link API backward compatible.")),
        "{summary}"
    );
    assert!(
        !constraints.iter().any(|line| line.contains("Keep an eye")),
        "{summary}"
    );

    let previous = "## Goal\n- audit\n\n## Constraints & Preferences\n- Don't run `npm audit fix --force` in web/, it would bump next to 15.\n- And don't push anything until I've looked at the diff.\n- Never push to main.\n";
    let permitting = vec![
        Message::user(
            "I looked at the diff, it's fine to push. And the --force rule is off for the transitive packages in web/; I reviewed the list.",
        ),
        Message::assistant("Pushing."),
    ];
    let folded = summarize_within(&permitting, Some(previous), 4_000, 4_000);
    assert_eq!(
        section_lines(&folded, "## Constraints & Preferences"),
        ["- Never push to main."],
        "{folded}"
    );
}

/// A rule the user later permits what it forbade is no longer listed under Constraints, in the
/// summary of the middle that permits it or folded from an earlier one (verify36: `never use
/// \`git add -A\`` listed after the user's `you may use \`git add -A\` again`). The other
/// rules stand.
#[test]
fn a_rule_the_user_revokes_is_no_longer_listed() {
    let middle = vec![
        Message::user(
            "Never push to main. Also I'd rather you never use `git add -A`; add paths explicitly.",
        ),
        Message::assistant("Noted."),
        Message::user(
            "Change of preference: you may use `git add -A` again, the repo has a good .gitignore now.",
        ),
        Message::assistant("Understood."),
    ];
    let summary = summarize(&middle);
    let constraints = section_lines(&summary, "## Constraints & Preferences");
    assert!(
        constraints.iter().any(|line| line.contains("Never push to main")),
        "{summary}"
    );
    assert!(
        !constraints.iter().any(|line| line.contains("git add -A")),
        "{summary}"
    );
    // What the user says may be needed permits nothing.
    let needed = summarize(&[
        Message::user("Never push to main without a review."),
        Message::assistant("Noted."),
        Message::user("You may need to push to main later today, once Priya reviews it."),
        Message::assistant("Understood."),
    ]);
    assert!(
        section_lines(&needed, "## Constraints & Preferences")
            .iter()
            .any(|line| line.contains("Never push to main")),
        "{needed}"
    );

    let previous = "## Goal\n- backfill\n\n## Constraints & Preferences\n- Never push to main.\n- Also I'd rather you never use `git add -A`; add paths explicitly.\n";
    let permitting = vec![
        Message::user("You may use `git add -A` again."),
        Message::assistant("Understood."),
    ];
    let folded = summarize_within(&permitting, Some(previous), 4_000, 4_000);
    assert_eq!(
        section_lines(&folded, "## Constraints & Preferences"),
        ["- Never push to main."],
        "{folded}"
    );
}

/// A rule that holds for now (`… yet`) ends at the user's go-ahead, which names less of it than a
/// permit does: one naming word shared is enough (verify39: `do not deploy anything to prod yet`
/// kept to the end of every replay after `The blocker is lifted — you can proceed with prod`).
/// A standing rule sharing that word stays, and so does one for now that the go-ahead does not
/// name.
#[test]
fn a_rule_for_now_ends_at_the_go_ahead() {
    let middle = vec![
        Message::user(
            "Do not deploy anything to prod yet. Never deploy to prod on a Friday. Don't touch the billing tables for now.",
        ),
        Message::assistant("Noted; staging only."),
        Message::user("The blocker is lifted — you can proceed with prod."),
        Message::assistant("Deploying to prod."),
    ];
    let summary = summarize(&middle);
    let constraints = section_lines(&summary, "## Constraints & Preferences");
    assert!(
        !constraints
            .iter()
            .any(|line| line.contains("anything to prod yet")),
        "{summary}"
    );
    assert!(
        constraints
            .iter()
            .any(|line| line.contains("Never deploy to prod on a Friday")),
        "{summary}"
    );
    assert!(
        constraints
            .iter()
            .any(|line| line.contains("billing tables for now")),
        "{summary}"
    );

    let previous = "## Goal\n- roll out v2\n\n## Constraints & Preferences\n- Do not deploy anything to prod yet.\n- Never deploy to prod on a Friday.\n";
    let go_ahead = vec![
        Message::user("Ok, go ahead with prod."),
        Message::assistant("Deploying."),
    ];
    let folded = summarize_within(&go_ahead, Some(previous), 4_000, 4_000);
    assert_eq!(
        section_lines(&folded, "## Constraints & Preferences"),
        ["- Never deploy to prod on a Friday."],
        "{folded}"
    );
}

/// A lift that names only a ticket lifts the blocker the ticket was filed for, said in the
/// sentence that named it, in the middle or in an earlier summary's requests; and the assistant's
/// own `so that blocker is resolved` lifts the blocker it stated (verify40: both stayed under
/// Blocked to the end of every replay). A ticket filed for something else lifts nothing.
#[test]
fn a_lift_naming_the_ticket_filed_for_a_blocker_lifts_it() {
    let blocker = "Blocked: only the platform team can publish a new base image; the API image cannot build until they do.";
    let filed = "I filed PLAT-7781 for a new base image. Continue with web/ meanwhile.";
    let lift =
        "PLAT-7781 is done: ghcr.io/acme/py-base:3.11-alpine-2025.11 has pip 24.3 and a Rust toolchain.";
    let middle = |filed: &str| {
        vec![
            Message::user("Upgrade cryptography to 43 in services/api."),
            Message::assistant(blocker),
            Message::user(filed),
            Message::assistant("Working on web/."),
            Message::user(lift),
            Message::assistant("Building the API image again."),
        ]
    };
    let blocked = |summary: &str| {
        section_lines(summary, "### Blocked")
            .iter()
            .any(|line| line.contains("only the platform team"))
    };
    let summary = summarize(&middle(filed));
    assert!(!blocked(&summary), "{summary}");
    let other = summarize(&middle(
        "I filed PLAT-7781 for the flaky login test. Continue with web/ meanwhile.",
    ));
    assert!(blocked(&other), "{other}");

    // Folded: the blocker and the filing request are the earlier summary's.
    let earlier = summarize(&middle(filed)[..4]);
    assert!(blocked(&earlier), "{earlier}");
    let lifting = vec![
        Message::user(lift),
        Message::assistant("Building the API image again."),
    ];
    let folded = summarize_within(&lifting, Some(&earlier), 4_000, 4_000);
    assert!(!blocked(&folded), "{folded}");

    let by_assistant = summarize(&[
        Message::user("Run the backfill on prod tonight."),
        Message::assistant("Blocked: replica prod-db-2 is 341 s behind, and the runbook says not to run a backfill while any replica lags."),
        Message::assistant("Replication lag on prod-db-2 is back to 3 s, so that blocker is resolved. Starting the prod backfill."),
        Message::assistant("Backfill started."),
    ]);
    assert!(
        !section_lines(&by_assistant, "### Blocked")
            .iter()
            .any(|line| line.contains("341 s behind")),
        "{by_assistant}"
    );
}

/// A blocker the user later says is out of the way is no longer listed under Blocked, in the
/// summary of the middle that lifts it or folded from an earlier one: a replay kept `Stated by the
/// user: Blocked: the etl_loader role has no INSERT grant … DATA-2291` to its end, after the user's
/// `DATA-2291 is done: the grant is in place` and the load that then passed. A blocker nothing
/// lifted, or one the user says is still there, stays.
#[test]
fn a_blocker_the_user_says_is_lifted_is_no_longer_listed() {
    let blocked = "Blocked: the etl_loader role has no INSERT grant on MARTS.ORDERS_DAILY. I opened DATA-2291 with the platform team.";
    let middle = vec![
        Message::user(blocked),
        Message::assistant("Understood; fixing the duplicates meanwhile."),
        Message::user("DATA-2291 is done: the grant is in place. Go ahead with the load."),
        Message::assistant("Loaded."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");

    let previous = format!(
        "## Goal\n- load the mart\n\n## Progress\n### Blocked\n- Stated by the user: {blocked}\n- Stated by the user: Blocked: the VPN to the vendor is down (NET-88).\n"
    );
    let lifting = vec![
        Message::user("DATA-2291 is done: the grant is in place."),
        Message::assistant("Loaded MARTS.ORDERS_DAILY."),
    ];
    let folded = summarize_within(&lifting, Some(&previous), 4_000, 4_000);
    assert_eq!(
        section_lines(&folded, "### Blocked"),
        ["- Stated by the user: Blocked: the VPN to the vendor is down (NET-88)."],
        "{folded}"
    );
    let still = vec![
        Message::user("DATA-2291 is still not done, the grant is pending."),
        Message::assistant("Waiting, then."),
    ];
    let folded = summarize_within(&still, Some(&previous), 4_000, 4_000);
    assert!(
        folded.contains(&format!("- Stated by the user: {blocked}")),
        "{folded}"
    );
}

/// `The blocker is lifted` lifts the newest blocker before it, whatever that named, and is no
/// blocker itself; a lift naming no ticket lifts a blocker that named one in passing by the
/// words they share; `Go ahead and run …` permits what a rule forbade (verify39: a lift listed
/// under Blocked beside the blocker it lifted; a bench reservation that named PERF-2211 held to
/// the end of a replay).
#[test]
fn a_blocker_lifted_in_words_of_its_own_is_no_longer_listed() {
    let blocked = "Blocked: no prod deploy of v3.8.1 until Ines (DBA) confirms migration 0057 is reversible.";
    let middle = vec![
        Message::user("Prepare the v3.8.1 deploy."),
        Message::assistant(blocked),
        Message::user("Ines confirmed 0057 is reversible. The blocker is lifted — you can proceed with prod, canary first."),
        Message::assistant("Deploying the canary."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    // An earlier summary's blocker, lifted in the new middle; one stated since stays.
    let previous = format!(
        "## Goal\n- deploy v3.8.1\n\n## Progress\n### Blocked\n- Stated by the assistant: {blocked}\n"
    );
    let lifting = vec![
        Message::user("The blocker is lifted, go ahead."),
        Message::assistant("Deploying the canary."),
    ];
    let folded = summarize_within(&lifting, Some(&previous), 4_000, 4_000);
    assert_eq!(section_lines(&folded, "### Blocked"), ["- (none)"], "{folded}");
    let newer = vec![
        Message::user("Blocked: the registry mirror is down, tracked in OPS-9921."),
        Message::assistant("Waiting for the mirror."),
        Message::user("The blocker is lifted, go ahead."),
        Message::assistant("Pushing the image."),
    ];
    let folded = summarize_within(&newer, Some(&previous), 4_000, 4_000);
    assert!(
        folded.contains(&format!("- Stated by the assistant: {blocked}")),
        "{folded}"
    );

    let middle = vec![
        Message::user("Look at the memory leak PERF-2211. Don't run the full load benchmark yet: bench-07 is reserved by the storage team until 15:00."),
        Message::assistant("Blocked: the full load benchmark on bench-07 waits until the storage team releases it (15:00). Working on PERF-2211 meanwhile."),
        Message::user("bench-07 is free now, the storage team is done with it. Go ahead and run the full load benchmark there."),
        Message::assistant("Result: p99 210.4 ms -> 37.2 ms on bench-07."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- (none)"],
        "{summary}"
    );
}

/// A diagnosis (`Root cause …:`, `Culprit:`) is listed beside the outcomes that came after it,
/// its label saying what it is about or not (verify39: one `compress` kept two `Fixed:` lines
/// and neither the culprit nor the root cause they fixed).
#[test]
fn a_diagnosis_is_listed_beside_later_fixes() {
    let middle = vec![
        Message::user("PERF-2207: p99 of /v1/search went from 38 ms to 210 ms after 2.14.0. Find out why."),
        shell("b1", "git bisect run ./bench_gate.sh"),
        Message::tool("b1", "3f9c2a71e4 is the first bad commit\nExit code: 0"),
        Message::assistant("Culprit: 3f9c2a71e4 (query: normalize unicode tokens per request, #1874).\nRoot cause: normalize() compiles its regex on every token since that commit."),
        Message::assistant("Fixed: normalize() uses a static compiled regex; search/mixed_64 -81.9%."),
        Message::user("PERF-2211 says RSS on shard-07 grows 1.5 GB a day. Check whether that is us."),
        Message::assistant("Root cause (PERF-2211): QueryCache never evicts; 3.38 GB leaked in 2 minutes, all from QueryCache::insert."),
        Message::assistant("Fixed: QueryCache is an LRU bounded by cache.max_entries; heaptrack peaks at 212 MB."),
        Message::user("Open the PR."),
    ];
    let summary = summarize_within(&middle, None, 2_500, 5_000);
    let done = section_lines(&summary, "### Done");
    for finding in [
        "- Culprit: 3f9c2a71e4",
        "- Root cause: normalize() compiles",
        "- Root cause (PERF-2211): QueryCache never evicts",
        "- Fixed: QueryCache is an LRU",
    ] {
        assert!(
            done.iter().any(|line| line.starts_with(finding)),
            "{finding}: {summary}"
        );
    }
}

/// Without an exit code (an OpenAI transcript, a SWE-agent trajectory), a run is judged by its
/// error lines: a fallback it took and went on after (`Gnuplot not found, using plotters
/// backend`) and a history table's row of a revision since replaced are none (verify39: a
/// benchmark that passed and a rollback that succeeded listed as Blocked).
#[test]
fn a_fallback_notice_and_a_superseded_revision_are_no_failures() {
    let middle = vec![
        Message::user("Roll back checkout-api and benchmark the fix."),
        shell("h1", "helm -n checkout rollback checkout-api 39 --wait && helm -n checkout history checkout-api --max 3"),
        Message::tool(
            "h1",
            "Rollback was a success! Happy Helming!\nREVISION  UPDATED                   STATUS      CHART               APP VERSION  DESCRIPTION\n40        Mon Dec  1 08:01:02 2026  superseded  checkout-api-3.8.0  3.8.0        Upgrade \"checkout-api\" failed: timed out\n41        Mon Dec  1 08:08:30 2026  superseded  checkout-api-3.8.0  3.8.0        Upgrade complete\n42        Mon Dec  1 09:02:47 2026  deployed    checkout-api-3.7.2  3.7.2        Rollback to 39",
        ),
        shell("b1", "cargo bench --bench search 2>&1 | tail -8"),
        Message::tool(
            "b1",
            "Gnuplot not found, using plotters backend\nsearch/mixed_64          time:   [3.7012 ms 3.7420 ms 3.7866 ms]\n                        change: [-82.118% -81.944% -81.770%] (p = 0.00 < 0.05)\n                        Performance has improved.",
        ),
        Message::assistant("Rolled back; the fix holds."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    let done = section_lines(&summary, "### Done");
    assert!(
        done.iter().any(|line| line.contains("rollback checkout-api 39")),
        "{summary}"
    );
    assert!(
        done.iter()
            .any(|line| line.contains("cargo bench --bench search")),
        "{summary}"
    );
}

/// `never` in a clause of purpose (`… so we never normalize at query time`) says what something
/// would achieve, not a rule (verify39: a colleague's suggestion listed under Constraints); a
/// rule that says `never` stays one.
#[test]
fn never_in_a_clause_of_purpose_is_no_rule() {
    let middle = vec![
        Message::user("Tomasz suggests also storing the normalized token in the segment files so we never normalize at query time. Is that worth it?"),
        Message::assistant("Not now: it changes the index format."),
        Message::user("Never change the index format without a migration."),
        Message::assistant("Understood."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- Never change the index format without a migration."],
        "{summary}"
    );
}

/// What only someone else can grant blocks the work, said without the word (verify33: `updating
/// repo secrets needs org-admin rights my token doesn't have` in no summary's Blocked).
#[test]
fn a_grant_only_an_admin_can_give_is_a_blocker() {
    let middle = vec![
        Message::user("Make the e2e job pass."),
        Message::assistant(
            "I can't get the e2e job green from here. Updating repo secrets needs org-admin rights my token doesn't have (HTTP 403).",
        ),
        Message::user("What can you do meanwhile?"),
        Message::assistant("Meanwhile I can draft the vendor email. The admin rights page lists who can help."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "### Blocked"),
        ["- Stated by the assistant: Updating repo secrets needs org-admin rights my token doesn't have (HTTP 403)."],
        "{summary}"
    );
}

/// A request that is a decision record, replaced since, is no goal: listed there, `Go with a full
/// refresh` read as the plan after the user had reversed it (verify18, every summary of an ETL
/// backfill).
#[test]
fn a_request_recording_a_decision_replaced_since_is_no_goal() {
    let middle = vec![
        Message::user("backfill March"),
        Message::assistant("Looking."),
        Message::user(
            "Decision: rows before 2024-03-05 get customer_tier = 'unknown'. Go with a full refresh of orders_daily, it's simplest.",
        ),
        Message::assistant("Decision 1: backfill orders_daily with `dbt run --full-refresh`. Decision 2: customer_tier = 'unknown' before 2024-03-05."),
        Message::user("Reverse decision 1: no full refresh, it takes 3 hours. Do an incremental backfill."),
        Message::assistant("Decision 1 revised: incremental backfill per partition, no --full-refresh."),
        Message::user("Now fix the 03-22 duplicates."),
        Message::assistant("Fixed."),
    ];
    let summary = summarize(&middle);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        !goal.iter().any(|line| line.contains("full refresh")),
        "{summary}"
    );
    assert!(
        goal.iter().any(|line| line.contains("backfill March")),
        "{summary}"
    );
    assert!(
        goal.iter().any(|line| line.contains("03-22 duplicates")),
        "{summary}"
    );
    assert!(
        section_lines(&summary, "## Key Decisions")
            .iter()
            .any(|line| line.starts_with("- Decision 1 revised: incremental")),
        "{summary}"
    );
}

/// An earlier summary's goal that records a decision its Key Decisions lists reversed is not
/// carried: a replay's summary read `Decision 2: keep sync.Map but shard it 16 ways` as its goal
/// (verify18).
#[test]
fn a_carried_goal_recording_a_reversed_decision_is_dropped() {
    let previous = "## Goal\n- find the p99 regression\n- Decision 2: keep sync.Map but shard it 16 ways, that's what the platform team recommends.\n- Decision: full refresh of orders_daily, it's simplest.\n- Decision: pin Go 1.22 for the benchmarks.\n- run the local load test\n\n## Key Decisions\n- Reverse decision 2: drop sync.Map entirely, go back to a plain map with sync.RWMutex.\n- Decision: pin Go 1.22 for the benchmarks.\n- (1 earlier record was replaced by the revisions listed here)\n";
    let middle = vec![
        Message::user("Open a PR against main."),
        Message::assistant("PR https://github.com/acme/checkout-api/pull/2817 is open."),
    ];
    let summary = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        !goal.iter().any(|line| line.contains("shard it 16 ways")),
        "{summary}"
    );
    // One without a number goes when Key Decisions lists it no more, and stays while it does.
    assert!(
        !goal.iter().any(|line| line.contains("full refresh")),
        "{summary}"
    );
    assert!(goal.iter().any(|line| line.contains("pin Go 1.22")), "{summary}");
    assert!(
        goal.iter().any(|line| line.contains("run the local load test")),
        "{summary}"
    );
    assert!(
        section_lines(&summary, "## Key Decisions")
            .iter()
            .any(|line| line.contains("Reverse decision 2")),
        "{summary}"
    );
}

/// With the user's next request after the middle (pinned after the head, or in the tail), no
/// request of the middle or of an earlier summary is in progress: a replay's summary read
/// `Request in progress: … Meanwhile fix the 03-22 duplicates.` for a request done and followed
/// by another (verify18).
#[test]
fn no_request_is_in_progress_when_the_next_one_follows_the_middle() {
    let previous = "## Goal\n- backfill March\n\n## Next Steps\n- Request in progress: Meanwhile fix the 03-22 duplicates.\n";
    let middle = vec![
        Message::user("rerun the 03-22 partition"),
        shell(
            "r1",
            "dbt run -s orders_daily --vars '{backfill_date: 2024-03-22}'",
        ),
        Message::tool("r1", "Done. PASS=2 ERROR=0\nExit code: 0"),
    ];
    let summary = summarize_before(&middle, Some(previous), true, None);
    assert!(!summary.contains("in progress:"), "{summary}");
    assert_eq!(
        section_lines(&summary, "### In Progress"),
        ["- (none)"],
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("backfill_date: 2024-03-22")),
        "{summary}"
    );
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.iter()
            .any(|line| line == &"- Latest request before the next: rerun the 03-22 partition"),
        "{summary}"
    );
    assert!(
        goal.iter().any(|line| line.contains("fix the 03-22 duplicates")),
        "{summary}"
    );
}

/// A question kept verbatim after the head while its answer was summarised: the summary says the
/// answer, and once a later request takes the question's place, the question reads answered, with
/// that answer, through the folds that follow (verify21: `which Python version does the docs CI
/// job use?` read bare in Goal in a replay's last summary, all 7 formats).
#[test]
fn a_pinned_question_keeps_its_summarised_answer_through_later_folds() {
    let question = "Quick question: which Python version does the docs CI job use?";
    let answer =
        "The docs CI job uses Python 3.11.9 (actions/setup-python@v5 in .github/workflows/docs.yml).";
    let middle = vec![
        Message::user("fix the sidebar"),
        Message::assistant("Done: one Reference section."),
        // Here stood the question, kept after the head.
        Message::assistant_calls(vec![ToolCall::new(
            "r1",
            "read_file",
            r#"{"path":".github/workflows/docs.yml"}"#,
        )]),
        Message::tool(
            "r1",
            "uses: actions/setup-python@v5\nwith:\n  python-version: '3.11.9'",
        ),
        Message::assistant(answer),
        shell("b1", "mkdocs build --strict"),
        Message::tool("b1", "INFO - Documentation built\nExit code: 0"),
    ];
    let first = summarize_before(&middle, None, false, Some(2));
    let goal = section_lines(&first, "## Goal");
    assert!(
        goal.contains(&format!("- Answer to the request kept before this summary: {answer}").as_str()),
        "{first}"
    );
    // Still the newest request at the next compaction: kept again, and its answer carried.
    let previous = summary_body(&first).unwrap_or(&first).to_owned();
    let still_pinned = vec![
        Message::user(question),
        shell("b2", "lychee site/"),
        Message::tool("b2", "0 errors\nExit code: 0"),
        // A reply after the answer the earlier summary holds: other work's (verify24).
        Message::assistant("Links check out: 0 errors."),
    ];
    let again = summarize_before(&still_pinned, Some(&previous), false, Some(0));
    assert!(
        section_lines(&again, "## Goal")
            .contains(&format!("- Answer to the request kept before this summary: {answer}").as_str()),
        "{again}"
    );
    // A later request took its place: the question, now the middle's first message, is answered.
    let moved_on = vec![
        Message::user(question),
        shell("b3", "lychee site/"),
        Message::tool("b3", "0 errors\nExit code: 0"),
        // A reply in the new middle came after the answer the earlier summary holds (verify24).
        Message::assistant("Links check out: 0 errors."),
        Message::user("now add the redirects"),
        Message::assistant("Added mkdocs-redirects for /setup/."),
    ];
    let folded = summarize_before(&moved_on, Some(&previous), false, None);
    let goal = section_lines(&folded, "## Goal");
    let asked = goal
        .iter()
        .position(|line| *line == format!("- Answered question: {question}"))
        .unwrap_or_else(|| panic!("{folded}"));
    assert_eq!(goal[asked + 1], format!("- Its answer: {answer}"), "{folded}");
    assert!(!folded.contains("kept before this summary"), "{folded}");
    // And one fold later, the answer still follows its question.
    let previous = summary_body(&folded).unwrap_or(&folded).to_owned();
    let later = vec![Message::user("publish it"), Message::assistant("Published.")];
    let later = summarize_before(&later, Some(&previous), false, None);
    let goal = section_lines(&later, "## Goal");
    let asked = goal
        .iter()
        .position(|line| *line == format!("- Answered question: {question}"))
        .unwrap_or_else(|| panic!("{later}"));
    assert_eq!(goal[asked + 1], format!("- Its answer: {answer}"), "{later}");
}

/// The newest request, kept verbatim after the head, stood within the middle: what was said after
/// its place answers it, not the request before it (verify18: `Latest request (answered): fix the
/// ordering in the test` was followed by the quarantine that answered the next one).
#[test]
fn the_answer_after_a_pinned_request_is_not_the_answer_to_the_one_before() {
    let middle = vec![
        Message::user("fix the ordering in the test, not in retry.py"),
        shell("t1", "gh workflow run ci.yml --ref fix/ordering"),
        Message::tool("t1", "queued\nExit code: 0"),
        Message::assistant("2 of 10 CI runs still fail with `assert 3 == 4`."),
        // Here stood `OK, quarantine it for now`, kept after the head.
        shell("q1", "git commit -am 'quarantine test_retry_backoff_ordering'"),
        Message::tool("q1", "[fix/ordering 1a2b3c4] quarantine\nExit code: 0"),
        Message::assistant("Decision: quarantine test_retry_backoff_ordering until the scheduler fix lands."),
        shell("q2", "gh pr create --fill"),
        Message::tool("q2", "https://github.com/acme/payments/pull/4822\nExit code: 0"),
    ];
    let summary = summarize_before(&middle, None, false, Some(4));
    let goal = section_lines(&summary, "## Goal");
    // The pinned request's own answer is said too, though the summary does not quote the request
    // (verify21: a question kept verbatim lost its answer, summarised, at the next fold).
    assert_eq!(
        goal,
        [
            "- Answer to the request kept before this summary: Decision: quarantine test_retry_backoff_ordering until the scheduler fix lands.",
            "- Latest request (answered): fix the ordering in the test, not in retry.py",
            "- Its answer: 2 of 10 CI runs still fail with `assert 3 == 4`."
        ],
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("gh pr create")),
        "{summary}"
    );
    assert_eq!(
        section_lines(&summary, "## Next Steps"),
        ["- (none)"],
        "{summary}"
    );
}

/// Codex's `apply_patch` names its files in the patch it takes as free text: they are the files
/// changed, and its line says which (verify18: `[apply_patch] -> 73 chars of output`, and no
/// `Changed:` in any Codex summary).
#[test]
fn a_codex_patch_changes_the_files_it_names() {
    let patch = "*** Begin Patch\n*** Update File: migrations/V042__add_customer_tier.sql\n@@\n+ALTER TABLE staging.stg_orders ADD COLUMN customer_tier VARCHAR(16);\n*** Update File: dbt/models/marts/orders_daily.sql\n@@\n-a\n+b\n*** End Patch\n";
    let middle = vec![
        Message::user("add the customer_tier column"),
        Message::assistant_calls(vec![ToolCall::new("p1", "apply_patch", patch)]),
        Message::tool(
            "p1",
            "Success. Updated the following files:\nM migrations/V042__add_customer_tier.sql\nM dbt/models/marts/orders_daily.sql",
        ),
        Message::assistant("Added."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Relevant Files").contains(
            &"- Changed: migrations/V042__add_customer_tier.sql, dbt/models/marts/orders_daily.sql"
        ),
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done").contains(
            &"- [apply_patch] changed migrations/V042__add_customer_tier.sql (+1 more), writing: ALTER TABLE staging.stg_orders ADD COLUMN customer_tier…"
        ),
        "{summary}"
    );
}

/// A shell that writes a here-document to a file changes that file, and the document is no
/// command: it was quoted raw over six lines under Commands, and the file listed only as
/// mentioned (verify44). A here-document a program reads (`python - <<'PY'`) stays a command.
#[test]
fn a_here_document_written_to_a_file_changes_that_file() {
    let write = serde_json::json!({"command": "cd app && cat > src/retry_config.py <<'EOF'\nMAX_RETRIES = 5\nBACKOFF_SECONDS = 2.5\nEOF"}).to_string();
    let append = serde_json::json!({"command": ["bash", "-lc", "tee -a docs/NOTES.md > /dev/null <<EOF\nretries: 5\nEOF\n"]}).to_string();
    let run = serde_json::json!({"command": "python - <<'PY'\nimport retry_config\nPY"}).to_string();
    let middle = vec![
        Message::user("add a retry config"),
        Message::assistant_calls(vec![ToolCall::new("w1", "terminal", write)]),
        Message::tool("w1", ""),
        Message::assistant_calls(vec![ToolCall::new("w2", "shell", append)]),
        Message::tool("w2", ""),
        Message::assistant_calls(vec![ToolCall::new("r1", "terminal", run)]),
        Message::tool("r1", "ok"),
        Message::assistant("Added."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Relevant Files") == ["- Changed: docs/NOTES.md, src/retry_config.py"],
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done").contains(
            &"- [terminal] changed src/retry_config.py, writing: MAX_RETRIES = 5 | BACKOFF_SECONDS = 2.5"
        ),
        "{summary}"
    );
    assert!(!summary.contains("MAX_RETRIES = 5\n"), "{summary}");
    assert!(summary.contains("`python - <<'PY'"), "{summary}");
}

/// A diff's added and removed lines are a file's text, not errors; a version moved is no measured
/// result, and a decision recorded is none either (verify19: `+-dontwarn com.google.errorprone…`
/// under Errors, `Result: Decision 1: upgrade AGP 8.3.2 -> 8.5.1` under Done).
#[test]
fn a_diffs_lines_and_a_version_moved_are_no_errors_nor_results() {
    let middle = vec![
        Message::user("fix the R8 build"),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "edit_file",
            r#"{"path":"app/proguard-rules.pro","old_string":"","new_string":"-dontwarn com.google.errorprone.annotations.CanIgnoreReturnValue"}"#,
        )]),
        Message::tool(
            "e1",
            serde_json::json!({"success": true, "diff": "--- a/app/proguard-rules.pro\n+++ b/app/proguard-rules.pro\n@@ -1,2 +1,3 @@\n-## Error codes\n+## Error codes {#error-codes}\n+-dontwarn com.google.errorprone.annotations.CanIgnoreReturnValue\n"}).to_string(),
        ),
        Message::assistant(
            "Decision 1: upgrade AGP 8.3.2 -> 8.5.1 (R8 8.5.35) instead of adding -dontwarn rules. \
             The bundle shrank: 48.2 MB -> 31.7 MB.",
        ),
        Message::user("ok"),
        Message::assistant("Done."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("- Errors:"), "{summary}");
    let done = section_lines(&summary, "### Done");
    assert!(!done.iter().any(|line| line.contains("AGP")), "{summary}");
    assert!(
        done.iter().any(|line| line.contains("48.2 MB -> 31.7 MB")),
        "{summary}"
    );
}

/// The files an earlier summary lists as changed outrank the names a new listing prints: a
/// replay's 42 compactions had lost every changed file to parquet part names (verify18).
#[test]
fn carried_changed_files_outrank_a_new_listings_names() {
    let previous = "## Goal\n- backfill March\n\n## Relevant Files\n- Changed: migrations/V042__add_customer_tier.sql, dbt/models/marts/orders_daily.sql\n";
    let listing: String = (0..120)
        .map(|part| {
            format!(
                "2024-04-01 00:10:22 61.0 MiB orders/dt=2024-03-17/part-{part:05}-{:08x}.snappy.parquet\n",
                part * 7919
            )
        })
        .collect();
    let middle = vec![
        shell(
            "ls1",
            "aws s3 ls s3://acme-dl-raw/orders/dt=2024-03-17/ --recursive",
        ),
        Message::tool("ls1", format!("{listing}Exit code: 0")),
        Message::assistant("Listed."),
    ];
    let summary = summarize_within(&middle, Some(previous), 900, 1_800);
    assert!(
        summary
            .contains("- Changed: migrations/V042__add_customer_tier.sql, dbt/models/marts/orders_daily.sql"),
        "{summary}"
    );
}

/// An earlier request that asked a question, answered since, says so: listed bare, a model
/// answered it again (verify19); carried from an earlier summary's latest, it says so too.
#[test]
fn an_answered_question_is_labelled_so() {
    let middle = vec![
        Message::user(
            "Quick question: which Python version does the docs CI job use? I need it for the platform inventory.",
        ),
        Message::assistant("3.11.9, pinned in .github/workflows/docs.yml."),
        // Prose and work after the answer, before the next request: no answer to the question
        // (verify20: a signature question was given `Two failures: …` as its answer; verify22: a
        // design note written right after the answer was given as it).
        Message::assistant("Design note 49 — webhook payload shape: the envelope keeps `type` and `data`."),
        shell("b1", "mkdocs build --strict"),
        Message::tool("b1", "ERROR - 2 warnings in strict mode\nExit code: 1"),
        Message::assistant("Two warnings left: both in docs/guide/retries.md."),
        Message::user("Fix the Algolia crawler config."),
        Message::assistant("Blocked on OPS-3310."),
    ];
    let summary = summarize(&middle);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.contains(&"- Answered question: Quick question: which Python version does the docs CI job use? I need it for the platform inventory."),
        "{summary}"
    );
    // Its answer follows it: the first, not the report of the work after it.
    assert!(
        goal.contains(&"- Its answer: 3.11.9, pinned in .github/workflows/docs.yml."),
        "{summary}"
    );
    assert!(!summary.contains("Its answer: Two warnings"), "{summary}");
    assert!(!summary.contains("Its answer: Design note"), "{summary}");
    let previous = "## Goal\n- Latest request (answered): Which Python does the docs job use?\n- Its answer: 3.11.9.\n- rebuild the docs site\n";
    let summary = summarize_within(
        &[Message::user("now fix the links"), Message::assistant("Fixed.")],
        Some(previous),
        4_000,
        4_000,
    );
    assert!(
        section_lines(&summary, "## Goal")
            .contains(&"- Answered question: Which Python does the docs job use?"),
        "{summary}"
    );
}

/// An answer is never listed without the question it answers: when the room left takes the short
/// answer but not its long question, neither is listed (verify22: a condensed summary led with
/// `Its answer: After. json.loads(raw) runs at line 35…`, its question gone).
#[test]
fn an_answer_is_never_listed_without_its_question() {
    let question = format!(
        "Which of these endpoints check the signature before parsing the body? {}",
        "/v1/webhooks/retry, /v1/webhooks/replay, /v1/webhooks/ack, ".repeat(6)
    );
    let previous = format!(
        "## Goal\n- Latest request (answered): {question}\n- Its answer: Only /v1/webhooks/ack.\n- review PR 2291\n"
    );
    let middle = [Message::user("now fix the links"), Message::assistant("Fixed.")];
    let roomy = summarize_within(&middle, Some(&previous), 4_000, 4_000);
    assert!(roomy.contains("- Its answer: Only /v1/webhooks/ack."), "{roomy}");
    for budget in (100..1_600).step_by(50) {
        let tight = summarize_within(&middle, Some(&previous), budget, budget);
        let (asked, answered) = (
            tight.contains("endpoints check"),
            tight.contains("Only /v1/webhooks/ack"),
        );
        assert!(asked || !answered, "{tight}");
    }
}

/// An earlier summary's error line that a failure, resolved now, quotes was fixed since: listed
/// under `Errors:` beside its failure's `; passed on a later run`, it read as standing
/// (verify20).
#[test]
fn a_carried_error_line_of_a_failure_resolved_since_is_listed_as_fixed() {
    let previous = "## Goal\n- bump cryptography\n\n## Progress\n### Blocked\n- [terminal] ran `pip install -r requirements.lock && pytest -q` -> exit 1, 42 lines output — ERROR tests/test_sftp_export.py::test_export_to_partner - ImportError: cannot import name 'Blowfish'\n\n## Critical Context\n- Errors:\n  - ERROR tests/test_sftp_export.py::test_export_to_partner - ImportError: cannot import name 'Blowfish'\n";
    let middle = vec![
        shell("p2", "pip install -r requirements.lock && pytest -q"),
        Message::tool("p2", "412 passed in 36.90s\nExit code: 0"),
        Message::assistant("Green."),
    ];
    let summary = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let fixed = summary.split("- Errors fixed since:").nth(1).unwrap_or_default();
    assert!(
        fixed.contains("ImportError: cannot import name 'Blowfish'"),
        "{summary}"
    );
    let standing = summary
        .split("- Errors:")
        .nth(1)
        .unwrap_or_default()
        .split("- Errors fixed since:")
        .next()
        .unwrap_or_default();
    assert!(!standing.contains("Blowfish"), "{summary}");
}

/// A test run that passed later fixed every error line it printed, not only the one its Blocked
/// line quoted: the `FAILED …` lines naming its test file and its closing count go under `Errors
/// fixed since:`, or with the failure's line under Done, when a later summary folds this one (the bundled warehouse migration's replay
/// listed each fixed day's `FAILED tests/…::test_step6` and a lone `1 failed, 14 passed` under
/// Errors to its end). An error line of another test file stands.
#[test]
fn a_failure_fixed_after_a_fold_takes_every_error_line_it_printed() {
    let failing = vec![
        Message::user("migrate the load stage"),
        shell("t2", "pytest tests/load/test_invoices.py -k step2 -q"),
        Message::tool(
            "t2",
            "E   WarehouseError: upsert into invoices_staging failed: duplicate key (batch 309d6b7)\nFAILED tests/load/test_invoices.py::test_step2\n1 failed, 14 passed\nExit code: 1",
        ),
        shell("u1", "pytest tests/api/test_users.py -q"),
        Message::tool(
            "u1",
            "E   AssertionError: expected 200, got 401\nFAILED tests/api/test_users.py::test_login\n1 failed, 9 passed\nExit code: 1",
        ),
        Message::assistant("Patching the upsert to merge on the natural key."),
    ];
    let first = summarize_within(&failing, None, 4_000, 4_000);
    assert!(
        section_lines(&first, "### Blocked")
            .iter()
            .any(|line| line.contains("(batch 309d6b7); last line: 1 failed, 14 passed")),
        "{first}"
    );
    let passing = vec![
        shell("t3", "pytest tests/load/test_invoices.py -k step2 -q"),
        Message::tool("t3", "15 passed in 4.10s\nExit code: 0"),
        Message::assistant("Green."),
    ];
    let folded = summarize_within(&passing, Some(&first), 4_000, 4_000);
    let standing = standing_errors(&folded);
    let fixed = folded.split("- Errors fixed since:").nth(1).unwrap_or_default();
    for line in [
        "FAILED tests/load/test_invoices.py::test_step2",
        "(batch 309d6b7)",
    ] {
        assert!(
            fixed.contains(line) && !standing.contains(line),
            "{line}: {folded}"
        );
    }
    // The count is quoted by the failure's line, now under Done.
    assert!(!standing.contains("1 failed, 14 passed"), "{folded}");
    assert!(
        standing.contains("FAILED tests/api/test_users.py::test_login"),
        "{folded}"
    );
}

/// Error lines are listed under the command that printed them, and a later summary moves them
/// all once that command passes, whichever files and compilers they name: `make ci` passed
/// and its `FAILED tests/test_invoice.py::…` and `1 failed, 204 passed` stayed under Errors,
/// tied to nothing that passed (verify36). The lines of a command still failing stay, under it.
#[test]
fn error_lines_are_listed_under_their_command_and_leave_with_it() {
    let failing = vec![
        Message::user("get make ci green"),
        shell("m1", "make ci"),
        Message::tool(
            "m1",
            "ruff check .\nAll checks passed!\npytest -q --cov=billing\nE       AssertionError: assert Decimal('10.01') == Decimal('10.00')\ntests/test_invoice.py:58: AssertionError\nFAILED tests/test_invoice.py::test_invoice_rounding - AssertionError: assert Decimal('10.01') == Decimal('10.00')\n1 failed, 204 passed, 12 skipped in 44.80s\nmake: *** [Makefile:14: ci] Error 1\nExit code: 2",
        ),
        shell("p1", "pytest tests/test_pdf.py -q"),
        Message::tool(
            "p1",
            "E   OSError: cannot load library 'libpango-1.0-0': cannot open shared object file\nERROR tests/test_pdf.py - OSError: cannot load library 'libpango-1.0-0'\nExit code: 2",
        ),
        Message::assistant("Looking at lines.py next."),
    ];
    let first = summarize_within(&failing, None, 4_000, 4_000);
    let standing = standing_errors(&first);
    let make_ci = standing
        .split("  - `make ci` printed:\n")
        .nth(1)
        .unwrap_or_default();
    assert!(
        make_ci.starts_with("    - ")
            && make_ci.contains("    - FAILED tests/test_invoice.py::test_invoice_rounding"),
        "{first}"
    );
    assert!(
        standing.contains("  - `pytest tests/test_pdf.py -q` printed:\n    - "),
        "{first}"
    );
    let passing = vec![
        shell("m2", "make ci"),
        Message::tool(
            "m2",
            "All checks passed!\n205 passed, 12 skipped in 41.02s\nExit code: 0",
        ),
        Message::assistant("Green."),
    ];
    let folded = summarize_within(&passing, Some(&first), 4_000, 4_000);
    let standing = standing_errors(&folded);
    let fixed = folded.split("- Errors fixed since:").nth(1).unwrap_or_default();
    for line in [
        "FAILED tests/test_invoice.py::test_invoice_rounding",
        "tests/test_invoice.py:58: AssertionError",
        "1 failed, 204 passed, 12 skipped in 44.80s",
    ] {
        assert!(
            fixed.contains(line) && !standing.contains(line),
            "{line}: {folded}"
        );
    }
    assert!(!standing.contains("`make ci` printed"), "{folded}");
    assert!(
        standing
            .contains("  - `pytest tests/test_pdf.py -q` printed:\n    - E   OSError: cannot load library"),
        "{folded}"
    );

    // With no Blocked line left to tie them to the run, the sub-list alone does: a run that
    // passed fixed what it printed before, though a later run failed on something new; the
    // lines of a command that did not pass since stand.
    let previous = "## Goal\n- get make ci green\n\n## Critical Context\n- Errors:\n  - `make ci` printed:\n    - FAILED tests/test_invoice.py::test_invoice_rounding - AssertionError\n    - 1 failed, 204 passed\n  - `npm run lint` printed:\n    - src/app.ts:3:1 no-unused-vars\n  - `npm run typecheck` printed:\n    - src/app.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.\n";
    let middle = vec![
        shell("m3", "make ci"),
        Message::tool("m3", "205 passed\nExit code: 0"),
        shell("l1", "npm run lint"),
        Message::tool("l1", "All files pass linting.\nExit code: 0"),
        shell("l2", "npm run lint"),
        Message::tool("l2", "src/app.ts:9:4 error no-console\nExit code: 1"),
        Message::assistant("One lint error left."),
    ];
    let folded = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let standing = standing_errors(&folded);
    for fixed in [
        "test_invoice_rounding",
        "1 failed, 204 passed",
        "src/app.ts:3:1 no-unused-vars",
    ] {
        assert!(!standing.contains(fixed), "{fixed}: {folded}");
    }
    assert!(
        standing.contains("  - `npm run typecheck` printed:\n    - src/app.ts(4,7): error TS2322"),
        "{folded}"
    );
    assert!(folded.contains("src/app.ts:9:4 error no-console"), "{folded}");
}

/// A file the tools changed stays listed as changed though another line quotes its path: a
/// later `mypy src` error naming it took it out of `Changed:` (verify37). A file moved with
/// `git mv` is changed under its new name.
#[test]
fn a_changed_file_stays_listed_as_changed() {
    let middle = vec![
        Message::user("add the rate limiter"),
        Message::assistant_calls(vec![ToolCall::new(
            "w1",
            "patch",
            r#"{"path":"gateway/ratelimit.py"}"#,
        )]),
        Message::tool("w1", "Wrote 2,114 bytes to gateway/ratelimit.py"),
        shell("g1", "git mv src/billing/proration.py src/billing/prorate.py"),
        Message::tool("g1", "Exit code: 0"),
        shell("m1", "mypy gateway"),
        Message::tool(
            "m1",
            "gateway/ratelimit.py:52: error: Incompatible return value type (got \"int\", expected \"bool\")  [return-value]\ngateway/ratelimit.py:61: error: Argument 1 to \"hit\" has incompatible type \"str\"; expected \"RateLimitItem\"  [arg-type]\nFound 2 errors in 1 file (checked 14 source files)\nExit code: 1",
        ),
        Message::assistant("One type error left in the limiter."),
    ];
    let summary = summarize(&middle);
    let changed = section_lines(&summary, "## Relevant Files")
        .into_iter()
        .find(|line| line.starts_with("- Changed:"))
        .unwrap_or_default();
    assert!(changed.contains("gateway/ratelimit.py"), "{summary}");
    assert!(changed.contains("src/billing/prorate.py"), "{summary}");
    assert!(!changed.contains("src/billing/proration.py"), "{summary}");

    // Changed in an earlier middle, named only by error lines in this one: the error line listed
    // under Errors had taken it out of `Changed:`.
    let previous = "## Goal\n- add the rate limiter\n\n## Relevant Files\n- Changed: gateway/ratelimit.py, gateway/middleware.py\n";
    let middle = vec![
        shell("m2", "mypy gateway"),
        Message::tool(
            "m2",
            "gateway/ratelimit.py:52: error: Incompatible return value type (got \"int\", expected \"bool\")  [return-value]\ngateway/ratelimit.py:61: error: Argument 1 to \"hit\" has incompatible type \"str\"; expected \"RateLimitItem\"  [arg-type]\nFound 2 errors in 1 file (checked 14 source files)\nExit code: 1",
        ),
        Message::assistant("Two type errors left in the limiter."),
    ];
    let folded = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let changed = section_lines(&folded, "## Relevant Files")
        .into_iter()
        .find(|line| line.starts_with("- Changed:"))
        .unwrap_or_default();
    assert!(changed.contains("gateway/ratelimit.py"), "{folded}");
}

/// Commands that only look something up (`wc -l …`, `ls -la …`, `sed -n '1,400p' …`) beyond the
/// newest three of a program rank below every other fact: a monorepo's triage ran forty of them,
/// and they took the room of the 150 commits its `git log --oneline` listed (verify37: 30% of
/// its facts kept at 8,000 tokens, 92% after).
#[test]
fn look_up_commands_give_way_to_the_facts_they_crowd_out() {
    let log: String = (0..40)
        .map(|n| {
            format!(
                "{:07x} fix: handle retries in queue {n} (#{})\n",
                0x1a2b3c4 + n * 7919,
                2000 + n
            )
        })
        .collect();
    let mut middle = vec![
        Message::user("triage the monorepo"),
        shell("g1", "git log --oneline -40"),
        Message::tool("g1", format!("{log}Exit code: 0")),
    ];
    for n in 0..30 {
        let id = format!("w{n}");
        // The same few files, counted again and again three at a time, as an agent does.
        let files = [
            "queue.ts",
            "runs.tsx",
            "deploy.ts",
            "index.ts",
            "config.ts",
            "lease.ts",
        ];
        let (a, b, c) = (n % 6, (n / 6 + n + 1) % 6, (n / 3 + n + 3) % 6);
        let command = format!(
            "wc -l packages/core/src/{} packages/core/src/{} packages/core/src/{}",
            files[a], files[b], files[c]
        );
        middle.push(shell(&id, &command));
        middle.push(Message::tool(
            &id,
            "export function drain(queue: Queue) {\n  return queue.flush();\n}\nExit code: 0",
        ));
    }
    middle.push(Message::assistant("Counted."));
    let summary = summarize_within(&middle, None, 1_800, 3_300);
    let commits = (0..40)
        .filter(|n| summary.contains(&format!("{:07x}", 0x1a2b3c4 + n * 7919)))
        .count();
    assert_eq!(commits, 40, "{summary}");
    // The newest look-ups are still listed; before, at this room, none of the commits was.
    let look_ups = summary.matches("  - `wc -l ").count();
    assert!((3..30).contains(&look_ups), "{summary}");
}

/// A middle of a few hundred kilobytes is read whole at an 8,000-token window: its oldest tool
/// output, a `git log` of the commits the session is about, was never read, and a monorepo's
/// triage kept 30% of its facts at 8,000 tokens and 100% at 9,000 (verify37).
#[test]
fn a_middle_of_a_few_hundred_kilobytes_is_read_whole() {
    let log: String = (0..20)
        .map(|n| format!("{:07x} fix: handle retries in queue {n}\n", 0x1a2b3c4 + n * 7919))
        .collect();
    let mut middle = vec![
        Message::user("triage the monorepo"),
        shell("g1", "git log --oneline -20"),
        Message::tool("g1", format!("{log}Exit code: 0")),
    ];
    // 480 KB of later output holding no identifier.
    let page = "the worker drains the queue and renews its lease before the deadline passes\n".repeat(100);
    for n in 0..60 {
        let id = format!("r{n}");
        middle.push(shell(&id, "make report"));
        middle.push(Message::tool(&id, format!("{page}Exit code: 0")));
    }
    middle.push(Message::assistant("Read them all."));
    let summary = summarize_within(&middle, None, 2_400, 9_000);
    let commits = (0..20)
        .filter(|n| summary.contains(&format!("{:07x}", 0x1a2b3c4 + n * 7919)))
        .count();
    assert_eq!(commits, 20, "{summary}");
}

/// An edit that went through echoes its diff: a line of the code it wrote that says `error` is
/// no error of a run (verify37: `return JSONResponse({"error": "rate_limited"}, status_code=429)`
/// under Errors to the end of a replay). An edit that failed says why, and that stands.
#[test]
fn the_diff_an_edit_echoes_holds_no_error_line() {
    let edit = |id: &str| {
        Message::assistant_calls(vec![ToolCall::new(
            id,
            "patch",
            r#"{"path": "gateway/middleware.py", "old_string": "    return await call_next(request)", "new_string": "    return JSONResponse({\"error\": \"rate_limited\"}, status_code=429)"}"#,
        )])
    };
    let middle = vec![
        Message::user("return 429 when the tenant is over its limit"),
        edit("e1"),
        Message::tool(
            "e1",
            r#"{"success": true, "diff": "--- a/gateway/middleware.py\n+++ b/gateway/middleware.py\n@@\n-    return await call_next(request)\n+    if not limiter.hit(rate_for(tenant), tenant.id):\n        return JSONResponse({\"error\": \"rate_limited\"}, status_code=429)\n    return await call_next(request)\n"}"#,
        ),
        edit("e2"),
        Message::tool(
            "e2",
            r#"{"success": false, "error": "old_string not found in gateway/middleware.py"}"#,
        ),
        Message::assistant("Limited."),
    ];
    let summary = summarize(&middle);
    assert!(!standing_errors(&summary).contains("rate_limited"), "{summary}");
    assert!(
        summary.contains("old_string not found in gateway/middleware.py"),
        "{summary}"
    );
}

/// A sub-list of error lines is settled by what would settle its command's Blocked line, though
/// that line was not carried: the whole suite under tox passing settles a `python -m pytest`
/// selection (verify37: its lines stood under Errors at 8,000 tokens, not at 16,000).
#[test]
fn a_sub_list_of_errors_is_settled_as_its_commands_failure_is() {
    let previous = "## Goal\n- fix the DST test\n\n## Critical Context\n- Errors:\n  - `cd /workspace/calsync && python -m pytest tests/unit/test_tz.py -q` printed:\n    - E       AssertionError: assert 2 == 3\n    - FAILED tests/unit/test_tz.py::test_spring_forward_gap - AssertionError: assert 2 == 3\n  - `flake8 src/calsync` printed:\n    - src/calsync/zones.py:88:80: E501 line too long (111 > 79 characters)\n";
    let middle = vec![
        shell("t1", "cd /workspace/calsync && tox -e py312"),
        Message::tool("t1", "188 passed in 6.02s\n  py312: OK\nExit code: 0"),
        Message::assistant("Green under tox."),
    ];
    let folded = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let standing = standing_errors(&folded);
    assert!(!standing.contains("test_spring_forward_gap"), "{folded}");
    assert!(!standing.contains("assert 2 == 3"), "{folded}");
    assert!(
        standing.contains("  - `flake8 src/calsync` printed:\n    - src/calsync/zones.py:88:80: E501"),
        "{folded}"
    );
}

/// A command the user refused did not run: it is named under `Commands mentioned:`, never with
/// the commands run (verify37: a refused `git push --force origin release/1.9.0` under Commands
/// read as a force-push done).
#[test]
fn a_refused_command_is_not_listed_as_run() {
    let middle = vec![
        Message::user("ship the release branch"),
        shell("p1", "git push origin release/1.9.0"),
        Message::tool(
            "p1",
            "To github.com:acme/datefmt.git\n ! [rejected] release/1.9.0 (non-fast-forward)\nExit code: 1",
        ),
        shell("p2", "git push --force origin release/1.9.0"),
        Message::tool(
            "p2",
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        ),
        Message::assistant("Not forcing it; rebasing instead."),
    ];
    // Newer work takes Progress's room: the refused call's line gives way, its command stays.
    let mut middle = middle;
    for (n, step) in [
        "fetch",
        "rebase",
        "lint",
        "typecheck",
        "unit",
        "e2e",
        "bundle",
        "docs",
        "sign",
        "tag",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("s{n}");
        middle.push(shell(
            &id,
            &format!("npm run release:{step} -- --branch release/1.9.0"),
        ));
        middle.push(Message::tool(&id, "done\nExit code: 0"));
    }
    let summary = summarize_within(&middle, None, 900, 1_400);
    let run = summary
        .split("- Commands:\n")
        .nth(1)
        .map_or("", |commands| commands.split("\n- ").next().unwrap_or_default());
    assert!(!run.contains("--force"), "{summary}");
}

/// A todo list's line tells the list's state, not the size of the tool's answer (verify37:
/// Claude Code's `[TodoWrite] -> 160 chars of output`, the plan in no summary).
#[test]
fn a_todo_lists_line_tells_its_state() {
    let todos = serde_json::json!({ "todos": [
        { "content": "Reproduce the proration rounding in a test", "status": "completed", "activeForm": "Reproducing" },
        { "content": "Fix the rounding in src/billing/proration.py", "status": "completed", "activeForm": "Fixing" },
        { "content": "Fix mypy return-value in src/billing/api/proration_view.py", "status": "in_progress", "activeForm": "Fixing mypy" },
        { "content": "Add the CSV export of proration lines", "status": "pending", "activeForm": "Adding" },
        { "content": "Tag 1.9.0", "status": "pending", "activeForm": "Tagging" },
        { "content": "Write the changelog entry", "status": "pending", "activeForm": "Writing" }
    ]});
    let middle = vec![
        Message::user("fix the proration rounding"),
        Message::assistant_calls(vec![ToolCall::new("t1", "TodoWrite", todos.to_string())]),
        Message::tool(
            "t1",
            "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable",
        ),
        Message::assistant("On the mypy error now."),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains(
            "[TodoWrite] -> todos: 2 completed, 1 in progress (Fix mypy return-value in src/billing/api/proration_view.py), 3 pending (Add the CSV export of proration lines; Tag 1.9.0; +1 more)"
        ),
        "{summary}"
    );
}

/// A blocker an earlier summary carries keeps its rank and may use the facts' room, as the new
/// middle's do: a rank below and kept to the prose's budget, a stated blocker (`tracked in
/// NET-4410`) gave way to a search's paths at the fold after a workaround, though it still stood
/// (verify37).
#[test]
fn a_carried_blocker_keeps_its_place_beside_a_search_listing() {
    let previous = "## Goal\n- per-tenant rate limits\n\n## Progress\n### Blocked\n- Stated by the assistant: Blocked: the sandbox cannot resolve ratelimit.internal, so the per-tenant test cannot reach Redis here; this is tracked in NET-4410.\n";
    let matches: String = (0..150)
        .map(|n| {
            format!(
                "gateway/module_{n}/limits.py:{}:    limiter = RateLimiter(window, rate)\n",
                10 + n
            )
        })
        .collect();
    let middle = vec![
        Message::user("Use fakeredis in the tests for now; keep the real URL in settings."),
        shell("g1", "rg -n RateLimiter gateway"),
        Message::tool("g1", format!("{matches}Exit code: 0")),
        Message::assistant("Switching the fixture to fakeredis."),
    ];
    let folded = summarize_within(&middle, Some(previous), 1_200, 4_000);
    assert!(
        section_lines(&folded, "### Blocked")
            .iter()
            .any(|line| line.contains("NET-4410")),
        "{folded}"
    );
}

/// A failure's line quotes the panic, not cargo's closing `error: test failed, to rerun pass …`
/// (verify37).
#[test]
fn a_failed_cargo_test_quotes_its_panic_not_the_trailer() {
    let middle = vec![
        Message::user("fix the gzip round trip"),
        shell("c1", "cargo test -p ingest"),
        Message::tool(
            "c1",
            "running 12 tests\ntest reader::tests::gz_roundtrip ... FAILED\n\nthread 'reader::tests::gz_roundtrip' panicked at crates/ingest/src/reader.rs:211:9:\nassertion `left == right` failed\n\ntest result: FAILED. 11 passed; 1 failed\nerror: test failed, to rerun pass `-p ingest --lib`\nExit code: 101",
        ),
        Message::assistant("The decoder drops the last block."),
    ];
    let summary = summarize(&middle);
    let blocked = section_lines(&summary, "### Blocked");
    assert!(
        blocked.iter().any(|line| line.contains(
            "— thread 'reader::tests::gz_roundtrip' panicked at crates/ingest/src/reader.rs:211:9"
        )),
        "{summary}"
    );
    // With no panic printed, the failed test's line says more than the trailer.
    let middle = vec![
        Message::user("fix the gzip round trip"),
        shell("c2", "cargo test -p ingest"),
        Message::tool(
            "c2",
            "test reader::tests::gz_roundtrip ... FAILED\nerror: test failed, to rerun pass `-p ingest --lib`\nExit code: 101",
        ),
        Message::assistant("Looking at the decoder."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("— test reader::tests::gz_roundtrip ... FAILED")),
        "{summary}"
    );
}

/// An interpreter given its script inline runs that script: another script does not retry it
/// (verify20: `PermissionError … churn_q1.parquet` under `Errors fixed since:` after an unrelated
/// `python - <<'PY' print(len(X))` passed).
#[test]
fn an_inline_script_is_retried_only_by_itself() {
    let middle = vec![
        Message::user("write the features"),
        shell(
            "w1",
            "python - <<'PY'\nimport pandas as pd; df = pd.read_csv('data/raw/customers.csv'); df.to_parquet('data/features/churn_q1.parquet', partition_cols=['plan'])\nPY",
        ),
        Message::tool(
            "w1",
            "PermissionError: [Errno 13] Permission denied: 'data/features/churn_q1.parquet/plan=basic'\nExit code: 1",
        ),
        shell("c1", "python - <<'PY'\nprint(len(X))\nPY"),
        Message::tool("c1", "8326\nExit code: 0"),
        Message::assistant("The features could not be written."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("PermissionError")),
        "{summary}"
    );
    assert!(!summary.contains("Errors fixed since"), "{summary}");
    // The next cell that opens as the failed one did is its retry (verify21: a notebook's fixed
    // LightGBM cell left the failed one Blocked).
    let middle = vec![
        Message::user("train the model"),
        shell("f1", "python - <<'PY'\nimport lightgbm as lgb\nm = lgb.LGBMClassifier().fit(X, y)\nPY"),
        Message::tool("f1", "ValueError: pandas dtypes must be int, float or bool\nExit code: 1"),
        shell("f2", "python - <<'PY'\nimport lightgbm as lgb\nX = X.astype({'plan': 'category'})\nm = lgb.LGBMClassifier().fit(X, y)\nPY"),
        Message::tool("f2", "holdout AUC 0.784\nExit code: 0"),
        Message::assistant("Trained."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert!(summary.contains("; passed on a later run"), "{summary}");
}

/// A security scanner's exit 1 says it found issues, which is its answer, not a failure to fix;
/// its zero counts name no error, and a `never` before an article describes (verify20: `bandit
/// -r app` Blocked with `— Undefined: 0`, a fixture's `never a real credential` as a rule).
#[test]
fn a_scanners_findings_are_its_answer() {
    let middle = vec![
        Message::user(
            "Review the PR for vulnerabilities. The B105 hit is a false positive: 'hunter2-fixture' is a dummy password, never a real credential.",
        ),
        shell("b1", "bandit -r app tests -f txt"),
        Message::tool(
            "b1",
            ">> Issue: [B602:subprocess_popen_with_shell_equals_true] subprocess call with shell=True identified\n   Location: ./app/webhooks/retry.py:88:8\nRun metrics:\n\tTotal issues (by severity):\n\t\tUndefined: 0\n\t\tHigh: 1\nExit code: 1",
        ),
        Message::assistant("One high finding in retry.py:88."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- (none)"],
        "{summary}"
    );
    // Findings are no retry: a Pro scan blocked on its licence stays blocked beside the open
    // source scan's (verify21).
    let scans = vec![
        Message::user("scan with semgrep"),
        shell("s1", "semgrep scan --pro --config p/python app"),
        Message::tool(
            "s1",
            "[ERROR] Semgrep Pro engine is not available: no licence (SEC-4475)\nExit code: 2",
        ),
        shell("s2", "semgrep scan --config p/python app"),
        Message::tool("s2", "Findings: 3\nExit code: 1"),
        Message::assistant("Three findings."),
    ];
    let scanned = summarize(&scans);
    assert!(
        section_lines(&scanned, "### Blocked")
            .iter()
            .any(|line| line.contains("--pro")),
        "{scanned}"
    );
    assert!(!summary.contains("Undefined: 0"), "{summary}");
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("bandit -r app tests") && line.contains("exit 1")),
        "{summary}"
    );
}

/// The same scanners run through a package runner or as a module, and those whose code for
/// findings is not 1 (govulncheck's 3, safety's 64), found what they were asked for: no blocker
/// (verify40: a CVE audit's scans listed as Blocked).
#[test]
fn a_scanner_run_through_a_runner_or_with_its_own_code_answers() {
    for (command, output) in [
        (
            "uvx pip-audit -r requirements.txt",
            "Found 2 known vulnerabilities in 1 package\nName    Version ID                  Fix Versions\n------- ------- ------------------- ------------\njinja2  3.1.2   GHSA-h5c8-rqwp-cp95 3.1.3\nExit code: 1",
        ),
        (
            "python -m pip_audit --strict",
            "Found 1 known vulnerability in 1 package\nExit code: 1",
        ),
        (
            "govulncheck ./...",
            "Vulnerability #1: GO-2024-2687\n    HTTP/2 CONTINUATION flood in net/http\nYour code is affected by 1 vulnerability from the Go standard library.\nExit code: 3",
        ),
        (
            "safety check -r requirements.txt",
            "-> Vulnerability found in urllib3 version 1.26.5\n   Vulnerability ID: 61601\nExit code: 64",
        ),
        ("npx audit-ci --high", "Found vulnerable advisory paths\nExit code: 1"),
    ] {
        let middle = vec![
            Message::user("Audit the dependencies for known CVEs."),
            shell("a1", command),
            Message::tool("a1", output),
            Message::assistant("The audit found issues; listing them next."),
        ];
        let summary = summarize(&middle);
        assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{command}: {summary}");
        assert!(
            section_lines(&summary, "### Done")
                .iter()
                .any(|line| line.contains(command)),
            "{command}: {summary}"
        );
    }
}

/// A line of a file read by a command that failed and passed later is the file's, not an error
/// fixed since: it stays with the lines of files read (verify40: a module's `raise` under `Errors
/// fixed since:`, a `log.error("ConnectionError: …")` of it among them).
#[test]
fn a_read_files_line_is_no_fixed_error() {
    let middle = vec![
        Message::user("Show me the pool code."),
        shell("c1", "cat app/db/pool.py app/db/limits.py"),
        Message::tool(
            "c1",
            "class Pool:\n    def acquire(self):\n        if self.exhausted():\n            raise PoolExhaustedError(\"no free connection in 30s\")\n        log.error(\"ConnectionError: pool exhausted after %ss\", self.timeout)\n    # TypeError: acquire() takes 1 positional argument\ncat: app/db/limits.py: No such file or directory\nExit code: 1",
        ),
        shell("c2", "cat app/db/pool.py app/db/limit.py"),
        Message::tool("c2", "class Pool:\n    pass\nMAX = 20\nExit code: 0"),
        Message::assistant("The pool raises after 30 s."),
    ];
    let summary = summarize(&middle);
    let fixed = summary.split("- Errors fixed since:").nth(1).unwrap_or_default();
    let fixed = fixed.split("\n- ").next().unwrap_or_default();
    assert!(
        !fixed.contains("ConnectionError") && !fixed.contains("TypeError"),
        "{summary}"
    );
    // The printer's own complaint is how the read went, fixed by the read that passed.
    assert!(fixed.contains("cat: app/db/limits.py: No such file"), "{summary}");
    let file_lines = summary
        .split("- Lines of files read that mention errors:")
        .nth(1)
        .unwrap_or_default();
    assert!(
        file_lines.contains("ConnectionError: pool exhausted"),
        "{summary}"
    );
}

/// Lines that only mention errors are none: a status page's section heading (`ECC Errors`), a
/// skipped test's title, a search's hit in a source file (verify40: each listed under Errors).
#[test]
fn headings_skipped_titles_and_search_hits_are_no_errors() {
    let middle = vec![
        Message::user("Check the GPU, run the tests, and find where we raise timeouts."),
        shell("g1", "nvidia-smi -q -d ECC"),
        Message::tool(
            "g1",
            "==============NVSMI LOG==============\nAttached GPUs                             : 1\nGPU 00000000:00:1E.0\n    ECC Mode\n        Current                           : Enabled\n    ECC Errors\n        Volatile\n            SRAM Correctable              : 0\n            SRAM Uncorrectable            : 0\nExit code: 0",
        ),
        shell("t1", "npx vitest run src/api"),
        Message::tool(
            "t1",
            " ✓ src/api/client.test.ts > client > retries twice 12ms\n ↓ src/api/client.test.ts > client > surfaces a network error to the caller [skipped]\n    ○ skipped throws an error when the token expired\n\n Test Files  1 passed (1)\n      Tests  1 passed | 2 skipped (3)\nExit code: 0",
        ),
        shell("s1", "grep -rn \"TimeoutError\" src/"),
        Message::tool(
            "s1",
            "src/api/client.ts:88:      throw new TimeoutError(`no answer in ${ms}ms`);\nsrc/api/errors.ts:12:export class TimeoutError extends Error {}\nExit code: 0",
        ),
        Message::assistant("ECC is clean, the suite passes, and client.ts:88 throws the timeout."),
    ];
    let summary = summarize(&middle);
    let errors = standing_errors(&summary);
    for not_an_error in [
        "ECC Errors",
        "network error to the caller",
        "token expired",
        "TimeoutError",
    ] {
        assert!(!errors.contains(not_an_error), "{not_an_error}: {summary}");
    }
}

/// A CI run's log of failed jobs prints the run's failures; a later run seen passing fixed them,
/// and a run seen failing did not (verify40: `gh run view --log-failed`'s lines stood under
/// Errors after the rerun went green).
#[test]
fn a_ci_logs_failures_are_fixed_by_a_run_seen_passing() {
    let middle = |check: &str, output: &str| {
        vec![
            Message::user("CI is red on the PR, fix it."),
            shell("l1", "gh run view 9981122385 --log-failed | tail -40"),
            Message::tool(
                "l1",
                "test\tRun pytest\tFAILED tests/test_billing.py::test_proration - AssertionError: 1999 != 2000\ntest\tRun pytest\tError: Process completed with exit code 1.",
            ),
            Message::assistant("Rounding in proration; fixing it."),
            shell("p1", "git push origin fix/proration"),
            Message::tool("p1", "To github.com:acme/billing.git\n   4be12aa..9c0d3e1  fix/proration -> fix/proration"),
            shell("w1", check),
            Message::tool("w1", output),
            Message::assistant("Checked CI."),
        ]
    };
    let passed = summarize(&middle(
        "gh run watch 9981198004 --exit-status",
        "✓ fix/proration CI · 9981198004\nTriggered via push about 3 minutes ago\n\nJOBS\n✓ test in 2m31s (ID 27440011)",
    ));
    assert!(!standing_errors(&passed).contains("test_proration"), "{passed}");
    let fixed = passed.split("- Errors fixed since:").nth(1).unwrap_or_default();
    assert!(fixed.contains("test_proration"), "{passed}");
    let failed = summarize(&middle(
        "gh run view 9981198004",
        "X fix/proration CI · 9981198004\nJOBS\nX test in 2m02s (ID 27440011)\nANNOTATIONS\nX Process completed with exit code 1.\ntest: .github#1",
    ));
    assert!(standing_errors(&failed).contains("test_proration"), "{failed}");
}

/// Folded together, a later summary's work done that wraps or includes an earlier one's failed
/// command resolves it as a rerun does (verify34: lcm's condensed summary listed `make apply` as
/// Blocked beside the `terraform apply` that fixed it).
#[test]
fn a_later_summarys_wrapped_or_wider_success_resolves_an_earlier_failure() {
    let blocked = |command: &str| {
        format!("## Progress\n### Done\n- (none)\n### Blocked\n- [terminal] ran `{command}` -> exit 2, 3 lines output — Error: creating CloudWatch Logs Log Group\n")
    };
    let done = |command: &str| {
        format!("## Progress\n### Done\n- [terminal] ran `{command}` -> exit 0, 4 lines output\n### Blocked\n- (none)\n")
    };
    for (failed, passed, resolved) in [
        (
            "make apply STACK=prod/payments-api",
            "terraform apply managed.tfplan",
            true,
        ),
        ("go test ./pkg/parser -run TestParseEvent", "make test", true),
        (
            "make apply STACK=prod/payments-api",
            "terraform plan -out=managed.tfplan",
            false,
        ),
    ] {
        let previous = format!("{}\n\n{}", blocked(failed), done(passed));
        let summary = summarize_within(&[], Some(&previous), 4_000, 4_000);
        let still_blocked = section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains(failed));
        assert_eq!(still_blocked, !resolved, "{failed} then {passed}:\n{summary}");
    }
}

/// Summaries folded together, oldest first (lcm condenses its leaves so): a later one's request
/// settles an earlier one's request in progress, and a later one's work done resolves an earlier
/// one's failure (verify18: a condensed summary listed a dbt run as Blocked beside the rerun that
/// passed, and three requests in progress).
#[test]
fn a_later_summary_settles_an_earlier_ones_open_request_and_failure() {
    let first = "## Goal\n- backfill March\n\n## Progress\n### Done\n- (none)\n### In Progress\n- [terminal] ran `aws s3 ls s3://acme-dl-raw/orders/dt=2024-03-16/` -> exit 0, 45 lines output\n### Blocked\n- [terminal] ran `cd dbt && dbt run --target staging -s orders_daily --vars '{backfill_date: 2024-03-22}'` -> exit 1, 12 lines output — Database Error in model orders_daily\n\n## Next Steps\n- Request in progress: fix the 03-22 duplicates\n";
    let second = "## Goal\n- Latest request (answered): push the dbt changes\n\n## Progress\n### Done\n- [terminal] ran `cd dbt && dbt run --target staging -s stg_orders orders_daily --vars '{backfill_date: 2024-03-22}'` -> exit 0, 9 lines output\n### In Progress\n- (none)\n### Blocked\n- (none)\n\n## Next Steps\n- (none)\n";
    let previous = format!("{first}\n\n{second}");
    let summary = summarize_within(&[], Some(&previous), 4_000, 4_000);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert_eq!(
        section_lines(&summary, "### In Progress"),
        ["- (none)"],
        "{summary}"
    );
    assert!(!summary.contains("Request in progress"), "{summary}");
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.iter().any(|line| line.contains("fix the 03-22 duplicates")),
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("-s orders_daily") && line.contains("exit 1")),
        "{summary}"
    );
    // Moved under Done, the failure says it passed later.
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("-s orders_daily") && line.ends_with("; passed on a later run")),
        "{summary}"
    );
    // One summary alone keeps its own request open.
    let alone = summarize_within(&[], Some(first), 4_000, 4_000);
    assert!(
        alone.contains("Request in progress: fix the 03-22 duplicates"),
        "{alone}"
    );
    // The first request, pinned while the work after it was summarised, reaches a later leaf:
    // it is the conversation's goal still, kept however short the room.
    let words = [
        "plan", "load", "clean", "split", "train", "score", "tune", "plot", "save", "ship",
    ];
    let commands: String = words
        .iter()
        .flat_map(|first| {
            words
                .iter()
                .map(move |second| format!("  - `make {first}-{second}`\n"))
        })
        .collect();
    let work = format!("## Goal\n- (none)\n\n## Critical Context\n- Commands:\n{commands}");
    let request = "## Goal\n- Build a churn model from data/raw/customers_2024Q1.csv\n";
    let summary = summarize_within(&[], Some(&format!("{work}\n\n{request}")), 300, 600);
    assert!(
        section_lines(&summary, "## Goal")
            .contains(&"- Build a churn model from data/raw/customers_2024Q1.csv"),
        "{summary}"
    );
    // A later summary's record of a number replaces an earlier one's.
    let first = "## Key Decisions\n- Decision 1: upgrade AGP 8.3.2 -> 8.5.1 instead of adding -dontwarn rules.\n- Decision 2: keep minSdk 24.\n";
    let second = "## Goal\n- ship it\n\n## Key Decisions\n- Decision 1 revised: stay on AGP 8.3.2; add the -dontwarn rule.\n";
    let summary = summarize_within(&[], Some(&format!("{first}\n\n{second}")), 4_000, 4_000);
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        [
            "- Decision 1 revised: stay on AGP 8.3.2; add the -dontwarn rule.",
            "- Decision 2: keep minSdk 24.",
            "- (1 earlier record was replaced by the revisions listed here)"
        ],
        "{summary}"
    );
}

/// A listing of CI jobs whose status column says `failure` names no error line: the job's log
/// does (verify18: rows of `gh run view --json jobs` listed as Errors ahead of the assertion).
#[test]
fn a_status_column_of_a_listing_is_no_error_line() {
    let rows = "test (3.12, 0)\tsuccess\thttps://github.com/acme/payments/actions/runs/9876598643/job/27311115722\n\
                test (3.12, 1)\tfailure\thttps://github.com/acme/payments/actions/runs/9876598643/job/27311115723\n";
    let middle = vec![
        Message::user("find the flaky test"),
        shell("j1", "gh run view 9876598643 --json jobs -q '.jobs[] | [.name, .conclusion, .url] | @tsv'"),
        Message::tool("j1", format!("{rows}Exit code: 0")),
        shell("j2", "gh run view 9876606562 --json jobs -q '.jobs[] | [.name, .conclusion, .url] | @tsv'"),
        Message::tool(
            "j2",
            serde_json::json!({"output": rows, "exit_code": 0, "error": null}).to_string(),
        ),
        shell("l1", "gh run view 9876598643 --log-failed"),
        Message::tool(
            "l1",
            "E       assert [1, 2, 8, 4] == [1, 2, 4, 8]\nFAILED tests/integration/test_webhooks.py::test_retry_backoff_ordering\nExit code: 0",
        ),
        Message::assistant("The failure is the retry ordering."),
    ];
    let summary = summarize(&middle);
    let critical = summary.split("## Critical Context").nth(1).unwrap_or_default();
    assert!(!critical.contains("(3.12, 1)"), "{summary}");
    assert!(
        summary.contains("FAILED tests/integration/test_webhooks.py::test_retry_backoff_ordering"),
        "{summary}"
    );
}

/// A listing's many names fill the room beyond the prose's budget, but what blocks the work and
/// what it achieved use that room first (verify18: an ETL backfill's summary at 8,000 tokens read
/// `Blocked: (none)` and kept no `Result:` beside 4,000 characters of parquet part names).
#[test]
fn what_blocks_the_work_and_what_it_achieved_outrank_a_listing() {
    let mut middle = vec![Message::user("backfill March in staging")];
    for day in 1..=12 {
        let id = format!("ls{day}");
        middle.push(shell(
            &id,
            &format!("aws s3 ls s3://acme-dl-raw/orders/dt=2024-03-{day:02}/"),
        ));
        let parts: String = (0..40)
            .map(|part| format!("2024-04-01 00:10:22 61.0 MiB orders/dt=2024-03-{day:02}/part-{part:05}-{:08x}.snappy.parquet\n", day * 1000 + part))
            .collect();
        middle.push(Message::tool(&id, format!("{parts}Exit code: 0")));
    }
    middle.push(Message::assistant(
        "Result: per-partition backfill takes 41 min for the month: 11524 s -> 2460 s. Blocked: the etl_loader role has no INSERT grant on ANALYTICS_PROD.MARTS.ORDERS_DAILY.",
    ));
    middle.push(Message::user("ok, wait for the grant"));
    middle.push(Message::assistant("Waiting."));
    let summary = summarize_within(&middle, None, 1_000, 4_000);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("no INSERT grant")),
        "{summary}"
    );
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("11524 s -> 2460 s")),
        "{summary}"
    );
    assert!(summary.contains("part-00039"), "{summary}");
}

/// What the assistant measured before and after is listed under Done: no command's line says
/// what the tuning achieved (verify16: `2381.442 ms -> 3.112 ms` was lost in all 14 summaries).
#[test]
fn a_measured_change_the_assistant_states_is_a_result_under_done() {
    let middle = vec![
        Message::user("make the tenant orders query fast"),
        shell("e1", "psql -c 'EXPLAIN ANALYZE …'"),
        Message::tool("e1", "Execution Time: 3.112 ms\nExit code: 0"),
        Message::assistant(
            "queryid -6021393718541228421: 2381.442 ms -> 3.112 ms on the staging replica with an Index Scan. \
             The planner is happy. Next, prod.",
        ),
        Message::user("ok"),
        Message::assistant("Result: local p99 415.2 ms -> 188.4 ms (k6, 64 VUs)."),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.contains(
            &"- Result: queryid -6021393718541228421: 2381.442 ms -> 3.112 ms on the staging replica with an Index Scan."
        ),
        "{summary}"
    );
    // The assistant's own label is not doubled (verify18: `Result: Result: local p99 …`).
    assert!(
        done.contains(&"- Result: local p99 415.2 ms -> 188.4 ms (k6, 64 VUs)."),
        "{summary}"
    );
}

/// A pipeline's filters are not what it ran: a test run piped through `tail` is not retried by
/// `git log | tail -3`, nor a package's tests by another package's build (verify16: a
/// jsonwebtoken failure the user had parked read as fixed).
#[test]
fn a_failure_is_not_resolved_by_a_later_command_sharing_its_filter() {
    let middle = vec![
        Message::user("upgrade jsonwebtoken in the worker"),
        shell("t1", "pnpm --filter @acme/worker test 2>&1 | tail -5"),
        Message::tool(
            "t1",
            "Error: legacy-auth: jsonwebtoken peer mismatch (expected 8.x)\n 1 failed\nExit code: 1",
        ),
        Message::assistant("Blocked on legacy-auth; parking it."),
        Message::user("fine, show me the log"),
        shell("g1", "git log --oneline | tail -3"),
        Message::tool(
            "g1",
            "a1b2c3d bump axios\n9f8e7d6 lockfile\n1234abc init\nExit code: 0",
        ),
        shell("b1", "pnpm --filter @acme/worker build"),
        Message::tool("b1", "built in 2.1s\nExit code: 0"),
        Message::assistant("Here it is."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("pnpm --filter @acme/worker test")),
        "{summary}"
    );
    assert!(!summary.contains("- Errors fixed since:"), "{summary}");
}

/// A CLI whose second word is a service or a runner is told by its third word too: a later
/// `aws iam get-role` does not retry a refused `aws iam put-role-policy`, nor `npm run build` a
/// failed `npm run test` (verify17: an AccessDenied the assistant called blocked was listed as
/// fixed). A service's log downloaded is what it holds, not how the download ended.
#[test]
fn a_service_clis_operation_and_a_runners_script_tell_a_retry() {
    let middle = vec![
        Message::user("revoke the ci-runner sessions and check the db log"),
        shell("p1", "aws iam put-role-policy --role-name ci-runner-role --policy-name deny-old --policy-document file://deny.json"),
        Message::tool(
            "p1",
            "An error occurred (AccessDenied) when calling the PutRolePolicy operation: User: ir-agent is not authorized to perform: iam:PutRolePolicy\nExit code: 254",
        ),
        shell("g1", "aws iam get-role --role-name ci-runner-role"),
        Message::tool("g1", "{\"Role\": {\"RoleName\": \"ci-runner-role\"}}\nExit code: 0"),
        shell("t1", "npm run test"),
        Message::tool("t1", "FAIL src/session.test.ts\nTests: 1 failed, 40 passed\nExit code: 1"),
        shell("b1", "npm run build"),
        Message::tool("b1", "built in 3.2s\nExit code: 0"),
        shell(
            "l1",
            "aws rds download-db-log-file-portion --db-instance-identifier prod-orders-db --log-file-name error/postgresql.log",
        ),
        Message::tool(
            "l1",
            "2026-01-02 04:44:02 UTC:185.220.101.47(51834):postgres@orders:FATAL:  no pg_hba.conf entry for host \"185.220.101.47\"",
        ),
        Message::assistant("Still blocked on IAM; the log shows refused logins."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("aws iam put-role-policy")),
        "{summary}"
    );
    assert!(
        blocked.iter().any(|line| line.contains("npm run test")),
        "{summary}"
    );
    assert!(
        !blocked
            .iter()
            .any(|line| line.contains("download-db-log-file-portion")),
        "{summary}"
    );
}

/// A log's request targets of one shape (`/api/v2/customers/3707623`, …) beyond the newest three
/// rank below every other fact: 404 of them took two thirds of a migration's summary, where the
/// files the work names gave way (verify27).
#[test]
fn a_logs_routes_of_one_shape_give_way() {
    let log: String = (0..300)
        .map(|n| {
            format!(
                "10.0.{}.{} - - \"GET /api/v2/customers/{} HTTP/1.1\" 404 0\n",
                n % 7,
                n % 250,
                3_700_000 + n * 37
            )
        })
        .collect();
    let middle = vec![
        Message::user("check why the api returns 404s, then backfill"),
        Message::assistant("Decision 1: quarantine orphan rows instead of failing the batch."),
        Message::assistant(
            "The backfill lives in scripts/backfill_orphans.py; its report goes to docs/runbooks/orphans-2024-06.md.",
        ),
        shell("k1", "kubectl -n shop logs deploy/api --since=1h"),
        Message::tool("k1", format!("{log}Exit code: 0")),
        Message::user("ok, go on"),
    ];
    let summary = summarize_within(&middle, None, 1_200, 1_600);
    assert!(
        summary.contains("Decision 1: quarantine orphan rows"),
        "{summary}"
    );
    for path in ["scripts/backfill_orphans.py", "docs/runbooks/orphans-2024-06.md"] {
        assert!(summary.contains(path), "{path}:\n{summary}");
    }
}

/// Error lines are lines that report an error: not the user's sentence that mentions a failed
/// test, a line a tool checks off, or a name that holds an error word (verify27: all three under
/// Errors in 20 of 21 summaries of an iOS build). A pasted error and a named error still are.
#[test]
fn mentions_of_errors_are_no_error_lines() {
    let middle = vec![
        Message::user(format!(
            "CI is green but slow.{}\nKeep parallel testing, but let scan retry a failed test once.\nIt crashed with:\nTypeError: cannot read properties of undefined (reading 'feed')",
            " The build-and-test job went from 18 to 40 minutes on the main branch this week.".repeat(30)
        )),
        shell("f1", "bundle exec fastlane scan"),
        Message::tool(
            "f1",
            "[10:03:09]: ▸ ✓ HarborKitTests.FeedModelTests.test_error_state\n✓ Requested rerun (failed jobs) of run 9413380112\nFeedModel.swift:12:2: error: 'Observable()' is only available in iOS 17.0 or newer\nExit code: 65",
        ),
        shell("q1", "aws athena get-query-results --query-execution-id 3f2a"),
        Message::tool("q1", "eventid | eventtime | eventname | errorcode\n9c1e | 2024-06-14 | GetObject | AccessDenied\nExit code: 0"),
        shell("d1", "kubectl diff -f ingress-nginx-configmap.yaml && gh run view 9413380112 --json conclusion"),
        Message::tool(
            "d1",
            "-  custom-http-errors: \"404,503\"\n+  error-log-level: notice\n  \"conclusion\": \"failure\",\nExit code: 0",
        ),
        Message::assistant("Looking at FeedModel.swift."),
        Message::user("Then ship build 412."),
        Message::assistant("Shipping."),
    ];
    let summary = summarize(&middle);
    let errors = summary.split("- Errors:").nth(1).unwrap_or_default();
    let errors = errors.split("\n- ").next().unwrap_or_default();
    // The pasted error is kept: quoted with its request, it is not listed again.
    assert!(summary.contains("TypeError: cannot read properties"), "{summary}");
    assert!(errors.contains("FeedModel.swift:12:2: error:"), "{summary}");
    for noise in [
        "retry a failed test",
        "test_error_state",
        "Requested rerun",
        "errorcode",
        "custom-http-errors",
        "error-log-level",
        "\"conclusion\"",
    ] {
        assert!(!errors.contains(noise), "{noise}:\n{summary}");
    }
}

/// A record that says which one it replaces (`Decision 2 (replaces 1): …`, `… (replaces decision
/// 1)`), or a revision without a number after numbered records (`Revised decision: …`), replaces
/// that record, in the middle and in an earlier summary folded in (verify27: the replaced
/// decision was listed as the current one in every summary of two sessions).
#[test]
fn a_record_that_names_the_one_it_replaces_replaces_it() {
    for revision in [
        "Decision 2 (replaces 1): use Yarn workspaces.",
        "Decision 1 is revised. Decision 2 (replaces decision 1): use Yarn workspaces.",
        "Decision 2: use Yarn workspaces (replaces decision 1).",
        "Revised decision: use Yarn workspaces instead of npm workspaces.",
    ] {
        let middle = vec![
            Message::user("set up the monorepo tooling"),
            Message::assistant("Decision 1: use npm workspaces."),
            Message::user("npm workspaces cannot hoist the native deps; switch"),
            Message::assistant(revision),
        ];
        let summary = summarize(&middle);
        let decisions = section_lines(&summary, "## Key Decisions");
        assert!(
            !decisions.iter().any(|line| line.contains("use npm workspaces.")),
            "{summary}"
        );
        assert!(
            decisions.iter().any(|line| line.contains("Yarn workspaces")),
            "{summary}"
        );
    }
    let previous =
        "## Goal\n- set up the monorepo tooling\n\n## Key Decisions\n- Decision 1: use npm workspaces.\n";
    let middle = vec![
        Message::user("switch"),
        Message::assistant("Decision 2 (replaces 1): use Yarn workspaces."),
    ];
    let summary = summarize_within(&middle, Some(previous), 8_000, 8_000);
    let decisions = section_lines(&summary, "## Key Decisions");
    assert!(
        !decisions.iter().any(|line| line.contains("use npm workspaces.")),
        "{summary}"
    );
    assert!(
        decisions
            .iter()
            .any(|line| line.contains("Decision 2 (replaces 1)")),
        "{summary}"
    );
}

/// A request that asks something anywhere is answered by the first reply, as a question is, and
/// the answer to the latest request may use the facts' room: a small window's summary kept a
/// listing's file names and no answer, then a later status line as the answer (verify27).
#[test]
fn a_request_that_asks_keeps_its_first_reply_as_its_answer() {
    let listing: String = (0..60)
        .map(|n| format!("-rw-r--r-- 1 dev dev {n} file{n}.ts\n"))
        .collect();
    let mut middle = vec![Message::user(
        "CI is green but slow. Revert the no-parallel change. Quick question while you are at it: which Xcode version does CI actually use?",
    )];
    middle.push(Message::assistant(
        "CI uses Xcode 15.4 (build 15F31d), set in .github/workflows/ios.yml.",
    ));
    for n in 0..6 {
        middle.push(shell(&format!("c{n}"), &format!("ls -la packages/p{n}")));
        middle.push(Message::tool(format!("c{n}"), format!("{listing}Exit code: 0")));
    }
    middle.push(Message::assistant(
        "Signing failure: the App Store profile expired on 2024-06-12.",
    ));
    let summary = summarize_within(&middle, None, 450, 2_400);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        goal.iter()
            .any(|line| line.starts_with("- Its answer: CI uses Xcode 15.4")),
        "{summary}"
    );
}

/// Fixes from verify26's regression sweep, each a line a continuing agent would have misread.
#[test]
fn a_remote_commands_last_step_decides_and_oasdiff_findings_are_answers() {
    let middle = vec![
        Message::user("start the restored cluster and show the log"),
        shell(
            "s1",
            "ssh pg-restore-01 'sudo systemctl start postgresql@15-main && sleep 5 && sudo tail -n 80 /var/log/postgresql/postgresql-15-main.log'",
        ),
        Message::tool(
            "s1",
            "2024-06-14 10:02:11 LOG:  restored log file \"0000000100000003000000A0\"\n2024-06-14 10:02:12 FATAL:  could not open file \"pg_wal/0000000100000003000000A1\": No such file or directory\n2024-06-14 10:02:17 LOG:  restored log file \"0000000100000003000000A1\"",
        ),
        shell("o1", "oasdiff breaking openapi/orders.yaml openapi/orders-v2.yaml --format text"),
        Message::tool(
            "o1",
            "error [api-removed-without-deprecation] at openapi/orders-v2.yaml\n\tin API PUT /orders/{order_id}\nExit code: 1",
        ),
        shell("t1", "pnpm --filter web tsc --noEmit -p tsconfig.json"),
        Message::tool("t1", "src/ErrorBanner.tsx(14,7): error TS2322: Type 'string' is not assignable\nExit code: 2"),
        shell("t2", "pnpm --filter web exec tsc --noEmit --extendedDiagnostics | tail -n 40"),
        Message::tool("t2", "Files: 812\nCheck time: 4.10s\nExit code: 0"),
        Message::assistant("The cluster is up; the breaking changes are the expected ones for v2; web type-checks."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("ssh pg-restore-01")),
        "{summary}"
    );
    assert!(!blocked.iter().any(|line| line.contains("oasdiff")), "{summary}");
    assert!(
        !blocked.iter().any(|line| line.contains("tsc --noEmit -p")),
        "{summary}"
    );
}

/// A failure an earlier summary listed as blocked stays blocked when the user says what blocks
/// it, here in the request kept verbatim after the head, though a later command passes around it
/// (verify26: `cargo check --workspace` read `passed on a later run` in a replay).
#[test]
fn a_carried_failure_held_by_the_users_blocker_stays_blocked() {
    let previous = "## Goal\n- upgrade tokio\n\n## Progress\n### Blocked\n- [terminal] ran `cargo check --workspace` -> exit 101, 10 lines output — error: failed to select a version for `tokio`.\n";
    let middle = vec![
        Message::assistant_calls(vec![ToolCall::new("e1", "patch", r#"{"path":"Cargo.toml"}"#)]),
        Message::tool("e1", r#"{"success": true}"#),
        shell("t1", "cargo test --workspace"),
        Message::tool("t1", "test result: ok. 214 passed\nExit code: 0"),
        Message::assistant("Green without shopd-payments."),
    ];
    let pinned = Message::user(
        "Blocked: acme-grpc-client needs a tokio-1 release from the platform team, PLAT-3391. Exclude shopd-payments until then.",
    );
    let summary = summarize_pinned(&middle, Some(previous), false, Some(0), Some(&pinned));
    let blocked = section_lines(&summary, "### Blocked");
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("cargo check --workspace")),
        "{summary}"
    );
    assert!(!summary.contains("passed on a later run"), "{summary}");
}

/// A labelled finding that also states a measurement is listed once, as the finding.
#[test]
fn a_finding_with_a_measurement_is_listed_once() {
    let middle = vec![
        Message::user("why is checkout slow?"),
        shell("q1", "psql -c 'explain analyze select 1'"),
        Message::tool("q1", "Execution Time: 3.112 ms\nExit code: 0"),
        Message::assistant(
            "Cause: the orders query scanned the whole table; with the index it went 2381.442 ms -> 3.112 ms.",
        ),
        Message::user("ok, ship the index"),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    assert_eq!(
        done.iter()
            .filter(|line| line.contains("2381.442 ms -> 3.112 ms"))
            .count(),
        1,
        "{summary}"
    );
    assert!(done.iter().any(|line| line.starts_with("- Cause: ")), "{summary}");
}

/// Twelve `pip download -v` calls of old releases, each naming its package file's URL: newer
/// listings that compete with older work for the room.
fn old_release_downloads() -> Vec<Message> {
    (0..12)
        .flat_map(|n| {
            let id = format!("d{n}");
            [
                shell(&id, &format!("python -m pip download tidewater==1.{n}.0 --no-deps -d /tmp/old{n} -v")),
                Message::tool(
                    &id,
                    format!(
                        "  Downloading https://files.pythonhosted.org/packages/{n:02x}/aa/{:040x}/tidewater-1.{n}.0.tar.gz (88 kB)\nExit code: 0",
                        n * 7 + 3
                    ),
                ),
            ]
        })
        .collect()
}

/// An action whose effect outlives the session (an upload to PyPI, a push, a release) ranks with
/// the newest action, above newer listings: a continuing agent must not do it again (verify25: a
/// release's upload gave way to `pip download` listings of old package files).
#[test]
fn a_publishing_action_outranks_newer_listings() {
    let mut middle = vec![
        Message::user("publish 2.5.0 to PyPI, then check the old releases' metadata"),
        shell("u1", "twine upload dist/tidewater-2.5.0*"),
        Message::tool(
            "u1",
            "Uploading distributions to https://upload.pypi.org/legacy/\nView at:\nhttps://pypi.org/project/tidewater/2.5.0/\nExit code: 0",
        ),
    ];
    middle.extend(old_release_downloads());
    middle.push(Message::assistant(
        "Uploaded 2.5.0; the old releases all declare requires-python >=3.7.",
    ));
    let summary = summarize_within(&middle, None, 1_400, 2_000);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.iter()
            .any(|line| line.contains("twine upload dist/tidewater-2.5.0*")),
        "{summary}"
    );
}

/// Folded into the next summary, work done whose effect outlives the session keeps its rank:
/// newer facts of the new middle do not push out the release uploaded before (verify25).
#[test]
fn a_carried_publishing_action_keeps_its_rank() {
    let previous = "## Goal\n- publish 2.5.0\n\n## Progress\n### Done\n- [terminal] ran `twine upload dist/tidewater-2.5.0*` -> exit 0, 4 lines output; last line: https://pypi.org/project/tidewater/2.5.0/\n- [terminal] ran `twine upload --repository testpypi dist/*` -> exit 1, 3 lines output; passed on a later run\n";
    let mut middle = vec![Message::user("check the old releases' metadata")];
    middle.extend(old_release_downloads());
    middle.push(Message::assistant(
        "The old releases all declare requires-python >=3.7.",
    ));
    let summary = summarize_within(&middle, Some(previous), 1_400, 2_000);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.iter()
            .any(|line| line.contains("twine upload dist/tidewater-2.5.0*")),
        "{summary}"
    );
}

/// What the work waits on is a blocker where the sentence names the ticket (verify25: `The data
/// backfill of the 37 records waits on DATA-911` reached no summary's Blocked); waiting for a
/// build is a status.
#[test]
fn work_that_waits_on_a_ticket_is_blocked() {
    let middle = vec![
        Message::user("fix the export 500s; the data team owns the backfill"),
        shell("t1", "pytest tests/api/test_export.py -q"),
        Message::tool("t1", "26 passed in 3.10s\nExit code: 0"),
        Message::assistant(
            "Code fix in PR #1314; 26/26 export tests pass. The data backfill of the 37 records waits on DATA-911 (data team). Waiting for the CI build to finish now. The deploy waits for CI run #4521 to finish.",
        ),
    ];
    let summary = summarize(&middle);
    let blocked = section_lines(&summary, "### Blocked");
    assert!(
        blocked.iter().any(|line| line.contains("waits on DATA-911")),
        "{summary}"
    );
    assert!(!blocked.iter().any(|line| line.contains("CI build")), "{summary}");
    assert!(!blocked.iter().any(|line| line.contains("#4521")), "{summary}");
}

/// A CI run's log (`gh run view … --log`) and Loki's (`logcli query`) print what the runs logged,
/// failed tests and errors among them: without an exit code, that is no failure of the read
/// (verify25: listed as Blocked in SWE-agent's summaries only).
#[test]
fn a_log_read_by_option_or_by_logcli_is_no_failure() {
    let middle = vec![
        Message::user("how flaky is test_retry on main?"),
        shell(
            "g1",
            "gh run view 9981122385 --log | grep -E 'PASSED|FAILED|ERROR' | head -n 60",
        ),
        Message::tool(
            "g1",
            "backend\tRun pytest -n 4\ttests/integrations/test_retry.py::test_case_10 FAILED\nbackend\tRun pytest -n 4\ttests/api/test_invoices.py::test_case_57 PASSED",
        ),
        shell("q1", "logcli query '{app=\"api\"} |= \"500\"' --since=24h --limit=50"),
        Message::tool(
            "q1",
            "2024-11-19T15:02:11Z ERROR invoices.export: TypeError: 'NoneType' object is not subscriptable",
        ),
        shell("t1", "pytest tests/billing -q 2>&1 | tail -n 3"),
        Message::tool("t1", "FAILED tests/billing/test_dunning.py::test_reminder - AssertionError\n1 failed, 80 passed"),
        Message::assistant("2 of 10 runs fail on test_retry; the export 500s are a None tenant."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("gh run view")),
        "{summary}"
    );
    assert!(!blocked.iter().any(|line| line.contains("logcli")), "{summary}");
    assert!(
        blocked.iter().any(|line| line.contains("pytest tests/billing")),
        "{summary}"
    );
}

/// Without an exit code, what a pipeline printed is its program's, not its filter's: a test run
/// piped through `head` that failed is blocked, a log read through `grep` is content (verify17: a
/// failing test listed as done in the formats that record no exit code).
#[test]
fn a_failure_piped_through_a_filter_is_blocked_without_an_exit_code() {
    let middle = vec![
        Message::user("run the mobile tests"),
        shell("t1", "pnpm --filter @acme/mobile test -- ProfileScreen 2>&1 | head -n 12"),
        Message::tool(
            "t1",
            "@acme/mobile:test: FAIL src/__tests__/ProfileScreen.test.tsx\n  Cannot find module '@acme/shared-kernel'\nTests:       1 failed, 1 total",
        ),
        shell("g1", "cat logs/app.log | grep -i error | tail -n 5"),
        Message::tool("g1", "ERROR payment timeout for order 812"),
        Message::assistant("The ProfileScreen test still fails."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        blocked.iter().any(|line| line.contains("ProfileScreen")),
        "{summary}"
    );
    assert!(
        !blocked.iter().any(|line| line.contains("logs/app.log")),
        "{summary}"
    );
}

/// Hermes's tools answer in JSON with `"error": null` when all went well: an edit so answered is
/// done, and its line quotes the answer's text (verify17: every edit of a refactor was Blocked).
#[test]
fn a_json_answer_whose_error_is_null_is_a_success() {
    let middle = vec![
        Message::user("rename the profile hook"),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "edit_file",
            r#"{"path":"apps/web/src/hooks/useProfile.ts","old_string":"a","new_string":"b"}"#,
        )]),
        Message::tool(
            "e1",
            r#"{"output": "The file apps/web/src/hooks/useProfile.ts has been updated.", "exit_code": 0, "error": null}"#,
        ),
        Message::assistant_calls(vec![ToolCall::new(
            "e2",
            "edit_file",
            r#"{"path":"apps/web/src/pages/Profile.tsx","old_string":"x","new_string":"y"}"#,
        )]),
        Message::tool(
            "e2",
            r#"{"output": "", "exit_code": 1, "error": "old_string not found in file"}"#,
        ),
        Message::assistant_calls(vec![ToolCall::new(
            "p1",
            "publish_page",
            r#"{"path":"docs/profile.md"}"#,
        )]),
        Message::tool(
            "p1",
            r#"{"success": false, "message": "quota exceeded for space DOCS", "error": null}"#,
        ),
        Message::assistant("One edit failed, and the page was not published."),
    ];
    let summary = summarize(&middle);
    assert!(
        section(&summary, "### Done")
            .iter()
            .any(|line| line == &"- [edit_file] changed apps/web/src/hooks/useProfile.ts, writing: b"),
        "{summary}"
    );
    assert_eq!(
        section_lines(&summary, "### Blocked"),
        [
            "- [edit_file] apps/web/src/pages/Profile.tsx -> failed: old_string not found in file",
            "- [publish_page] docs/profile.md -> quota exceeded for space DOCS"
        ],
        "{summary}"
    );
}

/// With a request in progress, the newest work done before it is kept as well as the newest
/// action: an incident's summary read `Done: (none)` after its containment steps (verify17).
#[test]
fn the_newest_work_done_is_kept_beside_the_request_in_progress() {
    let mut middle = vec![Message::user("contain the incident")];
    for (at, command) in [
        "aws iam update-access-key --status Inactive",
        "aws ec2 modify-instance-attribute --groups sg-quarantine",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("c{at}");
        middle.push(shell(&id, command));
        middle.push(Message::tool(&id, format!("done {at}\nExit code: 0")));
    }
    middle.push(Message::assistant("Contained."));
    middle.push(Message::user("now write the timeline for legal"));
    for at in 0..6 {
        let id = format!("q{at}");
        middle.push(shell(
            &id,
            &format!("./scripts/athena.sh 'SELECT * FROM flow_logs LIMIT {at}'"),
        ));
        middle.push(Message::tool(
            &id,
            format!("row 10.24.3.{at} 185.220.101.{at} REJECT\nExit code: 0"),
        ));
    }
    let summary = summarize_within(&middle, None, 600, 600);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("--groups sg-quarantine")),
        "{summary}"
    );
}

/// A decision record is a decision, listed or replaced as one: never a rule beside its reversal,
/// nor a rule and a decision both.
#[test]
fn a_decision_record_is_no_constraint() {
    let middle = vec![
        Message::user(
            "Decision 1: keep a thin core-utils shim for one release, so external consumers don't break.",
        ),
        Message::assistant("Shim added."),
        Message::user(
            "Hold on. Decision 1 is reversed: no shim, delete core-utils. Don't touch the mobile app.",
        ),
        Message::assistant("Deleted."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- (none)"],
        "{summary}"
    );
    let decisions = section_lines(&summary, "## Key Decisions");
    assert!(
        decisions
            .iter()
            .any(|line| line.ends_with("delete core-utils. Don't touch the mobile app.")),
        "{summary}"
    );
    assert!(
        decisions
            .iter()
            .any(|line| line.contains("Decision 1 is reversed: no shim")),
        "{summary}"
    );
    assert!(
        !decisions.iter().any(|line| line.contains("keep a thin")),
        "{summary}"
    );
}

/// `diff` that found differences and `grep` that found no line exit with 1: an answer, not a
/// failure. Exit 2 is their failure, and a detailed `terraform plan`'s answer (verify33).
#[test]
fn a_diff_that_found_differences_is_done_not_blocked() {
    for (command, output, blocked) in [
        (
            "pg_dump --schema-only erp > /tmp/a.sql && diff -u /tmp/a.sql sql/target.sql",
            "-    id bigint\n+    id integer\nExit code: 1",
            false,
        ),
        ("grep -rn TODO src/", "Exit code: 1", false),
        ("git diff --exit-code", "diff --git a/x b/x\nExit code: 1", false),
        (
            "diff -u a.sql missing.sql",
            "diff: missing.sql: No such file or directory\nExit code: 2",
            true,
        ),
        ("pytest -q", "1 failed\nExit code: 1", true),
        // A detailed plan exits with 2 when it found changes to make, with 1 on an error.
        (
            "terraform plan -input=false -detailed-exitcode",
            "  ~ resource \"aws_security_group\" \"payments_api\" {\nPlan: 0 to add, 1 to change, 0 to destroy.\nExit code: 2",
            false,
        ),
        (
            "terraform plan -detailed-exitcode",
            "Error: Error acquiring the state lock\nExit code: 1",
            true,
        ),
        ("terraform plan", "Plan: 0 to add, 1 to change, 0 to destroy.\nExit code: 2", true),
        (
            "kubectl --context prod-eu1 diff -k deploy/overlays/prod",
            "-  maxReplicas: 12\n+  maxReplicas: 16\nExit code: 1",
            false,
        ),
        (
            "kubectl --context prod-eu1 diff -k deploy/overlays/prod",
            "error: unable to recognize \"deploy/overlays/prod\": no matches for kind\nExit code: 2",
            true,
        ),
    ] {
        let middle = vec![
            Message::user("compare the schemas"),
            shell("c1", command),
            Message::tool("c1", output),
        ];
        let summary = summarize(&middle);
        let listed = section(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains(command));
        assert_eq!(listed, blocked, "{command}:\n{summary}");
    }
    // Claude Code flags every exit code but 0 an error, and writes the code first.
    let flagged = Message {
        extra: serde_json::json!({"is_error": true})
            .as_object()
            .cloned()
            .unwrap(),
        ..Message::tool("c1", "Exit code 1\n-    id bigint\n+    id integer")
    };
    let command = "git diff --no-index ../baseline/AndroidManifest.xml app/AndroidManifest.xml";
    let summary = summarize(&[
        Message::user("compare the manifests"),
        shell("c1", command),
        flagged,
    ]);
    assert!(
        !section(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains("git diff")),
        "{summary}"
    );
}

/// The newest work done is listed when the requests and the facts fill the prose's room: Done
/// read `(none)` after a session of work.
#[test]
fn the_newest_work_done_is_listed_in_a_short_summary() {
    let mut middle = Vec::new();
    for turn in 0..6 {
        middle.push(Message::user(format!(
            "Request {turn}: keep billing_v2.invoice_{turn} in sync with the legacy table and do not touch pg-legacy-01; the dashboard query must stay under 2 seconds on pg-billing-02."
        )));
        for step in 0..4 {
            let id = format!("c{turn}{step}");
            middle.push(shell(
                &id,
                &format!("psql -c 'select count(*) from billing_v2.invoice_{turn}_{step}'"),
            ));
            middle.push(Message::tool(
                &id,
                format!(
                    "count\n{}\nrelease v1.{turn}.{step} at src/sync/part_{turn}_{step}.py\nExit code: 0",
                    1000 + step
                ),
            ));
        }
    }
    // The last request still open: its newest action is in progress, and listed as well, however
    // short the room.
    let open = summarize_within(&middle, None, 600, 6_000);
    let in_progress = section(&open, "### In Progress");
    assert!(
        in_progress.iter().any(|line| line.contains("invoice_5_3")),
        "{open}"
    );
    middle.push(Message::assistant("All six tables are in sync."));
    let summary = summarize_within(&middle, None, 600, 6_000);
    let done = section(&summary, "### Done");
    assert!(done.iter().any(|line| line.contains("invoice_5_3")), "{summary}");
}

/// The pages a research session fetched and cited outrank the search results nobody opened,
/// however many newer results there are.
#[test]
fn fetched_and_cited_pages_outrank_search_results() {
    let search = |id: &str, topic: usize| {
        let results: Vec<String> = (0..12)
            .map(|n| format!("{n}. Passkeys on shared devices, part {n}\n   https://news.example.com/topic-{topic}/result-{n}-passkeys-shared-devices"))
            .collect();
        vec![
            Message::assistant_calls(vec![ToolCall::new(
                id,
                "web_search",
                serde_json::json!({"query": format!("passkeys shared devices {topic}")}).to_string(),
            )]),
            Message::tool(id, results.join("\n")),
        ]
    };
    let mut middle = vec![Message::user(
        "Which passkey setup fits our shared scanners? Cite sources.",
    )];
    middle.extend(search("s1", 1));
    middle.push(Message::assistant_calls(vec![ToolCall::new(
        "f1",
        "web_extract",
        r#"{"urls": ["https://fidoalliance.org/white-paper-frontline-workers-passkeys/"]}"#,
    )]));
    middle.push(Message::tool(
        "f1",
        "Frontline workers and passkeys: device-bound keys on shared devices ...",
    ));
    middle.push(Message::assistant(
        "Per the FIDO white paper and https://news.example.com/topic-1/result-3-passkeys-shared-devices, device-bound keys fit.",
    ));
    for topic in 2..8 {
        middle.extend(search(&format!("s{topic}"), topic));
    }
    let summary = summarize_within(&middle, None, 1_500, 2_500);
    for kept in [
        "https://fidoalliance.org/white-paper-frontline-workers-passkeys/",
        "https://news.example.com/topic-1/result-3-passkeys-shared-devices",
    ] {
        assert!(summary.contains(kept), "{kept} lost:\n{summary}");
    }
    assert!(!summary.contains("topic-1/result-4"), "{summary}");
}

/// The user's own records are decisions as the assistant's are, and a revision said first
/// (`Reverse yesterday's decision:`) replaces the record it revises: a model must not drop the
/// rows again, nor miss the DNS-01 decision written in a request.
#[test]
fn the_users_decision_records_and_their_reversals_are_key_decisions() {
    let middle = vec![
        Message::user("Renew the cert. Decision 2: DNS-01 with the Hetzner API token, stored in /etc/letsencrypt/hetzner.ini, mode 600."),
        Message::assistant("Done; the token file is mode 600."),
        Message::user("Decision: rows without tenure are excluded from training."),
        Message::assistant("Excluded 13,196 rows."),
        Message::user("Bad news from finance.\nReverse yesterday's decision: do not drop them. Impute tenure from first_invoice_at instead."),
        Message::assistant("Imputed; AUC 0.8179."),
        Message::user("About decision 2: use the staging token for staging."),
        Message::assistant("Switched."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        [
            "- About decision 2: use the staging token for staging.",
            "- Reverse yesterday's decision: do not drop them. Impute tenure from first_invoice_at instead.",
            "- (2 earlier records were replaced by the revisions listed here)",
        ],
        "{summary}"
    );
}

#[test]
fn a_revision_said_first_is_a_record_of_the_decision_it_names() {
    let mut records = Vec::new();
    let text = "Reverse decision 1: we go BigQuery.\nAbout decision 3: keep 8G.\nOK. Reverse yesterday's decision: keep them.\nWe should reverse the decision: later.\nDecision 4: plain.\nFor the rollout I propose — Decision 2: phased release.\nLeave it. One more reversal: Decision 5 revised — raise min_capacity to 6.\nPLAT-2291 is open. Also, Decision 6: pin the provider to 5.62.0.\nHold on. Decision 1 is reversed: no shim.\n";
    super::patterns::decision_records(text, 0, &mut records);
    let found: Vec<(Option<u32>, bool, &str)> = records
        .iter()
        .map(|r| (r.key.map(|key| key.number), r.revises, r.text))
        .collect();
    assert_eq!(
        found,
        [
            (Some(1), true, "Reverse decision 1: we go BigQuery."),
            (Some(3), true, "About decision 3: keep 8G."),
            (None, true, "Reverse yesterday's decision: keep them."),
            (Some(4), false, "Decision 4: plain."),
            (Some(2), false, "Decision 2: phased release."),
            (Some(5), true, "Decision 5 revised — raise min_capacity to 6."),
            (Some(6), false, "Decision 6: pin the provider to 5.62.0."),
            (Some(1), true, "Decision 1 is reversed: no shim."),
        ]
    );
}

/// A file named for errors, a key in code and a report of none are no error lines; an error
/// naming such a file is one (verify16: `Edited …/audit-exceptions.mjs`, `✨ No lint errors` and
/// pgbench's `number of failed transactions: 0 (0.000%)` filled Errors).
#[test]
fn files_named_for_errors_and_reports_of_none_are_no_errors() {
    let middle = vec![
        Message::user("allow-list the audit exceptions and benchmark the index"),
        shell("e1", "apply_patch scripts/audit-exceptions.mjs"),
        Message::tool(
            "e1",
            "Edited /home/dev/acme/scripts/audit-exceptions.mjs: replaced 1 occurrence.\n\
             Wrote 770 bytes to /home/dev/acme/scripts/audit-exceptions.mjs.\nM scripts/audit-exceptions.mjs\nExit code: 0",
        ),
        shell("l1", "pnpm lint && sed -n 40,44p src/login.ts"),
        Message::tool(
            "l1",
            "✨ No lint errors\nif (!user) return res.status(401).render('login', { error: 'invalid' });\nExit code: 0",
        ),
        shell("b1", "pgbench -T 60 -c 16 shop"),
        Message::tool(
            "b1",
            "number of failed transactions: 0 (0.000%)\nlatency average = 3.112 ms\n\
             statement latencies in milliseconds and failures:\n         3.101           0  SELECT …\nExit code: 0",
        ),
        shell("t1", "npx tsc --noEmit"),
        Message::tool(
            "t1",
            "src/errors.ts(3,1): error TS2304: Cannot find name 'AuditError'.\nExit code: 2",
        ),
        Message::assistant("One type error left."),
    ];
    let summary = summarize(&middle);
    let errors: Vec<&str> = summary
        .split("- Errors:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|line| line.starts_with("  - "))
        .collect();
    for reports_none in [
        "audit-exceptions",
        "No lint errors",
        "error: 'invalid'",
        "failed transactions",
        "and failures",
    ] {
        assert!(
            !errors.iter().any(|line| line.contains(reports_none)),
            "{summary}"
        );
    }
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.ends_with("src/errors.ts(3,1): error TS2304: Cannot find name 'AuditError'.")),
        "{summary}"
    );
}

/// The name around an error marker is looked for a bounded way, on character boundaries: a
/// minified bundle's run without spaces, in any script, costs a line's look and never splits a
/// character.
#[test]
fn markers_in_a_long_run_without_spaces_are_read_within_bounds() {
    for (before, after) in [("", ""), ("a", ""), ("", "a"), ("a", "a")] {
        let run = format!(
            "{before}{}Error:{after}{}/x.js{}TypeError",
            "€".repeat(300),
            "€".repeat(257),
            "ß".repeat(301)
        );
        let middle = vec![
            Message::user("why does the bundle fail?"),
            shell("b1", "node dist/app.min.js"),
            Message::tool("b1", format!("{run}\nExit code: 1")),
            Message::assistant("A type error in the bundle."),
        ];
        let summary = summarize(&middle);
        assert!(summary.contains("### Blocked"), "{summary}");
    }
}

/// Lines that name no error standing are not listed as errors, and a page a command fetched is
/// what the page says: a traceback's header and the source lines it quotes, a release note's
/// issue fixed, a fetched page's `cannot`. The error a traceback ends with is listed; a fetch
/// that failed is blocked.
#[test]
fn a_traceback_header_a_fixed_issue_and_a_fetched_page_are_no_errors() {
    let middle = vec![
        Message::user("why does the merge fail, and what do the release notes say?"),
        shell("p1", "python -m churn.train"),
        Message::tool(
            "p1",
            "Traceback (most recent call last):\n  File \"src/churn/merge.py\", line 41, in join\n    raise MergeError(msg)\npandas.errors.MergeError: left keys must be sorted\nExit code: 1",
        ),
        shell("c1", "curl -sL https://techdocs.example.com/lifeguard/release-notes"),
        Message::tool(
            "c1",
            "Release 14-28-03\nSPR49897: Resolved an issue where StageNow profiles failed with error 'Feature not supported'.\nKnown limitation: synced passkeys cannot be told apart on shared devices.",
        ),
        shell("c2", "curl -sL https://intranet.example/notes"),
        Message::tool("c2", "curl: (6) Could not resolve host: intranet.example"),
        Message::assistant("The merge needs sorted keys; the notes list one fix."),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains("MergeError: left keys must be sorted"),
        "{summary}"
    );
    for not_an_error in [
        "Traceback (most recent call last)",
        "raise MergeError(msg)",
        "Resolved an issue",
    ] {
        assert!(!summary.contains(not_an_error), "{not_an_error}:\n{summary}");
    }
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("release-notes")),
        "{summary}"
    );
    assert!(
        blocked.iter().any(|line| line.contains("intranet.example")),
        "{summary}"
    );
    // The page's `cannot` is listed with what files read say, not as an error of the session.
    let errors = summary
        .split("- Errors:")
        .nth(1)
        .and_then(|rest| rest.split("\n- ").next())
        .unwrap_or_default();
    assert!(!errors.contains("Known limitation"), "{summary}");
}

/// A helpdesk's tickets, kept by an earlier summary, outlast the next day's checksum listing:
/// sha256 sums beyond the newest few rank below every other fact, and a carried issue ranks as
/// a new one does.
#[test]
fn carried_tickets_outlast_a_checksum_listing() {
    let previous = "## Goal\n- Morning. OPS-3301: rotate the staging keys.\n\n## Critical Context\n- Issues: OPS-3302, OPS-3303, OPS-3304\n";
    let sums: Vec<String> = (0..60)
        .map(|n| {
            format!(
                "{:064x}  /srv/nextcloud/data/file-{n}.bin",
                0x9f3e_2ab0_u64 * (n + 7)
            )
        })
        .collect();
    let middle = vec![
        Message::user("Verify the restore."),
        shell(
            "v1",
            "sha256sum -c /srv/restore/SHA256SUMS --quiet; sha256sum /srv/nextcloud/data/*",
        ),
        Message::tool("v1", format!("{}\nExit code: 0", sums.join("\n"))),
        Message::assistant("All 60 files match."),
    ];
    let summary = summarize_within(&middle, Some(previous), 900, 1_500);
    for ticket in ["OPS-3302", "OPS-3303", "OPS-3304"] {
        assert!(summary.contains(ticket), "{ticket} lost:\n{summary}");
    }
}

/// A request that is all a decision is listed in Goal and in Key Decisions, and folding the
/// summary keeps both: the fold had kept the request and dropped the decision, and the next
/// summary held the decision it reversed.
#[test]
fn a_decision_quoted_as_a_request_stays_a_decision_when_folded() {
    let record = "Reverse decision 1: checkout_v2 goes OFF by default on both platforms.";
    let previous = format!(
        "## Goal\n- Ship 4.2.0.\n- {record}\n\n## Key Decisions\n- {record}\n- Decision 3: remove QUERY_ALL_PACKAGES.\n"
    );
    let middle = vec![
        Message::user("Build 4.2.1."),
        Message::assistant("Built 4.2.1 (1192)."),
    ];
    let summary = summarize_within(&middle, Some(&previous), 8_000, 8_000);
    assert!(
        section_lines(&summary, "## Key Decisions").contains(&format!("- {record}").as_str()),
        "{summary}"
    );
}

/// Without an exit code, a listing of crashes is what it lists: its exception names are records,
/// not how the command ended. A query that failed says so first.
#[test]
fn a_listing_of_crashes_is_no_failure_without_an_exit_code() {
    let middle = vec![
        Message::user("did the fix work?"),
        shell("q1", "firebase crashlytics:issues:list --app 1:123:android:abc --since 24h"),
        Message::tool(
            "q1",
            "Crash-free users: 99.71%\n4d4b4d79 | 0 | 40201 | java.lang.IllegalStateException: Fragment not attached\nfa01 | 3 | 40201 | java.net.SocketTimeoutException: timeout",
        ),
        shell("q2", "kubectl get pods -n shop"),
        Message::tool("q2", "Error from server (Forbidden): pods is forbidden: User \"ci\" cannot list resource \"pods\""),
        Message::assistant("The crash is gone; I cannot list the pods."),
    ];
    let summary = summarize(&middle);
    let blocked = section(&summary, "### Blocked");
    assert!(
        !blocked.iter().any(|line| line.contains("crashlytics")),
        "{summary}"
    );
    assert!(
        blocked.iter().any(|line| line.contains("kubectl get pods")),
        "{summary}"
    );
}

/// An error line that says a fixed failure's message under another name (the exception it was
/// raised from) was fixed with it: a migration's `psycopg2.errors.LockNotAvailable` stood under
/// `Errors:` after the migration was applied, beside its `OperationalError` listed as fixed
/// (verify28); the lines chaining one exception to the next name none.
#[test]
fn the_exception_a_fixed_error_was_raised_from_is_fixed_too() {
    let traceback = "Applying accounts.0057_customer_email_expand...Traceback (most recent call last):\n  \
                     File \"/app/django/db/backends/utils.py\", line 87, in _execute\n\
                     psycopg2.errors.LockNotAvailable: canceling statement due to lock timeout\n\n\
                     The above exception was the direct cause of the following exception:\n\n\
                     Traceback (most recent call last):\n  File \"/app/manage.py\", line 22, in <module>\n\
                     django.db.utils.OperationalError: canceling statement due to lock timeout\n\
                     command terminated with exit code 1\nExit code: 1";
    let middle = vec![
        Message::user("apply 0057 on prod"),
        shell("m1", "python manage.py migrate accounts 0057 -v 2"),
        Message::tool("m1", traceback),
    ];
    let summary = summarize_within(&middle, None, 1_000, 4_000);
    assert!(summary.contains("psycopg2.errors.LockNotAvailable"), "{summary}");
    assert!(!summary.contains("The above exception"), "{summary}");
    assert!(
        !summary.contains("0057_customer_email_expand...Traceback"),
        "{summary}"
    );
    let applied = vec![
        Message::user("retry it"),
        shell("m2", "python manage.py migrate accounts 0057 -v 2"),
        Message::tool(
            "m2",
            "Applying accounts.0057_customer_email_expand... OK (0.388s)\nExit code: 0",
        ),
    ];
    let folded = summarize_within(&applied, Some(&summary), 2_000, 4_000);
    assert!(!standing_errors(&folded).contains("lock timeout"), "{folded}");
}

/// A failure whose output holds no error line of the usual kinds is told by how it ended: k6's
/// `ERRO[…]` is its error line, and another tool's last line stands in for one (verify29: `k6 run
/// … -> exit 99, 6 lines output` under Blocked, and nothing of why).
#[test]
fn a_failure_says_why_when_its_tool_prints_no_usual_error_line() {
    let middle = vec![
        Message::user("run the soak test on staging"),
        shell("k1", "k6 run loadtest/soak.js"),
        Message::tool(
            "k1",
            "     http_req_duration..............: avg=52.1ms p(99)=173.5ms\n     \
             http_req_failed................: 7.82%\n\
             ERRO[0901] thresholds on metrics 'http_req_failed' have been crossed\nExit code: 99",
        ),
        shell("s1", "./scripts/smoke.sh staging"),
        Message::tool(
            "s1",
            "checking /healthz\nchecking /orders\n3 of 5 checks passed\nExit code: 1",
        ),
    ];
    let summary = summarize(&middle);
    let blocked = section_lines(&summary, "### Blocked");
    assert!(
        blocked.iter().any(|line| line.contains("k6 run loadtest/soak.js")
            && line.contains("— ERRO[0901] thresholds on metrics 'http_req_failed' have been crossed")),
        "{summary}"
    );
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("./scripts/smoke.sh staging")
                && line.contains("last line: 3 of 5 checks passed")),
        "{summary}"
    );
}

/// An outcome the assistant reports under a label is what the work achieved, listed under Done:
/// no command's line said the rollback was done or the pipeline fixed (verify29).
#[test]
fn an_outcome_the_assistant_reports_under_a_label_is_listed_under_done() {
    let middle = vec![
        Message::user("roll orders-api back to the last good version"),
        shell("r1", "kubectl argo rollouts -n orders-prod undo orders-api"),
        Message::tool("r1", "rollout 'orders-api' undo\nExit code: 0"),
        Message::assistant(
            "Rollback done: orders-prod is on v2.30.4 (stable, Healthy), p99 181.2 ms. v2.31.0 is no longer serving.",
        ),
        Message::user("and the DAG?"),
        shell("d1", "dbt build --select stg_orders+ --target prod"),
        Message::tool("d1", "Done. PASS=14 WARN=0 ERROR=0 SKIP=0 TOTAL=14\nExit code: 0"),
        Message::assistant("Fixed: stg_orders builds, fct_orders passes all 14 tests, backfill of 2024-07-08..11 succeeded."),
        Message::user("post a summary to #data-incidents"),
        shell("p1", "slack-post '#data-incidents' summary.md"),
        Message::tool("p1", "posted\nExit code: 0"),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    for outcome in [
        "- Rollback done: orders-prod is on v2.30.4 (stable, Healthy), p99 181.2 ms.",
        "- Fixed: stg_orders builds, fct_orders passes all 14 tests",
    ] {
        assert!(
            done.iter().any(|line| line.starts_with(outcome)),
            "{outcome}\n{summary}"
        );
    }
}

/// A command that says it retried what failed on its way to success recovered from those errors:
/// they are listed as fixed, not as standing (verify28: a migration's `lock timeout` stood under
/// Errors after its retry loop applied it); a log read that succeeded keeps its errors standing.
#[test]
fn the_errors_a_command_retried_on_its_way_to_success_are_fixed() {
    let middle = vec![
        Message::user("apply 0057 on prod, with retries"),
        shell("m1", "kubectl -n shopfront-prod exec deploy/shopfront-web -- sh scripts/ddl_retry.sh 0057"),
        Message::tool(
            "m1",
            "Applying accounts.0057_customer_email_expand...\n\
             django.db.utils.OperationalError: canceling statement due to lock timeout\n\
             attempt 1: lock timeout, retrying in 15 s\n\
             Applying accounts.0057_customer_email_expand... OK (0.388s)\nExit code: 0",
        ),
        shell("l1", "kubectl -n shopfront-prod logs deploy/billing-sync --since=10m"),
        Message::tool(
            "l1",
            "2024-11-13T10:02:11Z ERROR sync: psycopg2.errors.UndefinedColumn: column \"email_addr\" does not exist\nExit code: 0",
        ),
    ];
    let summary = summarize(&middle);
    let standing = standing_errors(&summary);
    let fixed = summary
        .split("- Errors fixed since:\n")
        .nth(1)
        .unwrap_or_default();
    assert!(!standing.contains("lock timeout"), "{summary}");
    assert!(
        fixed.contains("OperationalError: canceling statement due to lock timeout"),
        "{summary}"
    );
    assert!(standing.contains("UndefinedColumn"), "{summary}");
}

/// An earlier summary's error line saying, under another exception's name, the message of an
/// error the new middle fixed was fixed with it (verify28: `psycopg2.errors.LockNotAvailable`
/// standing beside its `OperationalError` listed as fixed since).
#[test]
fn an_earlier_error_with_the_message_of_one_fixed_now_is_fixed_too() {
    let earlier = "## Goal\n- apply 0057\n\n## Critical Context\n- Errors:\n  \
                   - psycopg2.errors.LockNotAvailable: canceling statement due to lock timeout\n";
    let middle = vec![
        Message::user("retry 0057"),
        shell("m1", "sh scripts/ddl_retry.sh 0057"),
        Message::tool(
            "m1",
            "django.db.utils.OperationalError: canceling statement due to lock timeout\n\
             attempt 1: lock timeout, retrying in 15 s\nApplying accounts.0057... OK\nExit code: 0",
        ),
    ];
    let folded = summarize_within(&middle, Some(earlier), 2_000, 4_000);
    let fixed = folded.split("- Errors fixed since:\n").nth(1).unwrap_or_default();
    assert!(fixed.contains("psycopg2.errors.LockNotAvailable"), "{folded}");
    assert!(!folded.contains("- Errors:\n"), "{folded}");
}

/// A change's line says what it wrote: a replacement's new lines, a patch's added ones (verify29:
/// `[patch] changed configs/ft_1p3b.yaml -> 124 chars of output`, and the OOM fix's
/// `micro_batch_size: 8` in no summary).
#[test]
fn a_changes_line_says_what_it_wrote() {
    let middle = vec![
        Message::user("fix the OOM without changing the effective batch"),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "patch",
            r#"{"path":"configs/ft_1p3b.yaml","old_string":"micro_batch_size: 32\ngrad_accum_steps: 1\nworld_size: 8","new_string":"micro_batch_size: 8\ngrad_accum_steps: 4\nworld_size: 8"}"#,
        )]),
        Message::tool("e1", format!("{}\nThe file configs/ft_1p3b.yaml has been updated.", "    1\tmodel: 1p3b\n".repeat(8))),
        Message::assistant_calls(vec![ToolCall::new(
            "a1",
            "apply_patch",
            "*** Begin Patch\n*** Update File: train.py\n@@\n-    clip = None\n+    clip = 0.5\n*** End Patch",
        )]),
        Message::tool("a1", "Done!"),
        Message::assistant("Both changed."),
    ];
    let summary = summarize(&middle);
    let done = section_lines(&summary, "### Done");
    assert!(
        done.contains(
            &"- [patch] changed configs/ft_1p3b.yaml, writing: micro_batch_size: 8 | grad_accum_steps: 4"
        ),
        "{summary}"
    );
    assert!(
        done.contains(&"- [apply_patch] changed train.py, writing: clip = 0.5"),
        "{summary}"
    );
}

/// A change's line that does not fit whole is kept without what it wrote, as it fitted before it
/// said that (verify32: older change lines gave way at 16,000 tokens to shorter log reads).
#[test]
fn a_changes_line_too_long_for_the_room_left_is_kept_without_what_it_wrote() {
    let long_line = format!(
        "    qualify row_number() over (partition by order_id, dt order by _loaded_at desc) = 1 {}",
        "x".repeat(40)
    );
    let arguments = serde_json::json!({
        "path": "dbt/models/staging/stg_orders.sql",
        "old_string": "select * from source",
        "new_string": format!("select * from source\n{long_line}"),
    })
    .to_string();
    let mut middle = vec![
        Message::user("dedupe the staging orders"),
        Message::assistant_calls(vec![ToolCall::new("e1", "patch", arguments)]),
        Message::tool(
            "e1",
            "The file dbt/models/staging/stg_orders.sql has been updated.".repeat(4),
        ),
    ];
    // Newer work, kept whole whatever the room: the change is an older line.
    for (at, model) in ["stg_orders", "fct_orders", "orders_daily", "revenue_daily"]
        .iter()
        .enumerate()
    {
        let id = format!("b{at}");
        middle.push(shell(&id, &format!("dbt build --select {model}")));
        middle.push(Message::tool(&id, "Done. PASS=3 WARN=0 ERROR=0\nExit code: 0"));
    }
    middle.push(Message::assistant("Deduplicated."));
    let roomy = summarize_within(&middle, None, 4_000, 4_000);
    let change = section_lines(&roomy, "### Done")
        .into_iter()
        .find(|line| {
            line.starts_with(
                "- [patch] changed dbt/models/staging/stg_orders.sql, writing: qualify row_number()",
            )
        })
        .unwrap_or_else(|| panic!("{roomy}"));
    // The first room too small for the whole line keeps it without what it wrote.
    let whole = roomy.chars().count();
    let tight = (whole - change.chars().count()..whole)
        .rev()
        .step_by(4)
        .map(|room| summarize_within(&middle, None, room, room))
        .find(|summary| !summary.contains(", writing: "))
        .unwrap_or_else(|| panic!("{roomy}"));
    assert!(
        section_lines(&tight, "### Done").contains(&"- [patch] changed dbt/models/staging/stg_orders.sql"),
        "{tight}"
    );
}

/// A failure a later run fixed reads as passed later under Done, not with its own last line as
/// if that were how the work ended: the last line is kept for a standing failure's Blocked line.
#[test]
fn a_failure_fixed_later_says_no_last_line_of_its_own() {
    let middle = vec![
        Message::user("run the smoke checks"),
        shell("s1", "./scripts/smoke.sh staging"),
        Message::tool(
            "s1",
            "checking /healthz\nchecking /orders\n3 of 5 checks passed\nExit code: 1",
        ),
        shell("s2", "./scripts/smoke.sh staging"),
        Message::tool(
            "s2",
            "checking /healthz\nchecking /orders\n5 of 5 checks passed\nExit code: 0",
        ),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("3 of 5 checks passed"), "{summary}");
    assert!(summary.contains("last line: 5 of 5 checks passed"), "{summary}");
}

/// A subagent's answer is what it found: its first sentence that says something, past a heading
/// and a sentence that announces what follows, under the task's description (verify37: Claude
/// Code's `[Task] -> 230 chars of output`).
#[test]
fn a_subagents_line_quotes_what_it_found() {
    let task = serde_json::json!({
        "description": "Check consumers of formatDate",
        "prompt": "Search the monorepo's other packages for imports of formatDate from datefmt.",
        "subagent_type": "general-purpose"
    });
    let middle = vec![
        Message::user("deprecate formatDate without breaking the other packages"),
        Message::assistant_calls(vec![ToolCall::new("a1", "Task", task.to_string())]),
        Message::tool(
            "a1",
            "## Summary\n\nPerfect! Here is what I found:\n\n- The admin package pins datefmt 1.x, so it will not see the warning until its lockfile moves. Six files import formatDate in all.",
        ),
        Message::assistant("Only admin is pinned."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done").iter().any(|line| line.starts_with(
            "- [Task] Check consumers of formatDate -> The admin package pins datefmt 1.x, so it will not see the warning until its lockfile moves."
        )),
        "{summary}"
    );
    // Its report's error words are what it found, not errors the work ran into.
    let middle = vec![
        Message::user("make the checkout dialog accessible"),
        Message::assistant_calls(vec![ToolCall::new(
            "a3",
            "Task",
            r#"{"description":"Check what screen readers announce"}"#,
        )]),
        Message::tool(
            "a3",
            "The dialog is announced as \"Checkout, dialog\". One gap remains: the live region for coupon errors (apps/web/src/checkout/CouponField.tsx:57) has aria-live=\"off\", so coupon errors are not announced.\nError: coupon errors are silent",
        ),
        Message::assistant("One gap, out of scope."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("- Errors:"), "{summary}");
    // How the subagent searched gives way to what it found.
    let middle = vec![
        Message::user("make the checkout dialog accessible"),
        Message::assistant_calls(vec![ToolCall::new(
            "a2",
            "Task",
            r#"{"description":"Find icon-only buttons without aria-label","prompt":"List them with file:line."}"#,
        )]),
        Message::tool(
            "a2",
            "I searched apps/web/src for icon-only buttons.\n\nThree icon-only buttons lack an accessible name: apps/web/src/checkout/CheckoutDialog.tsx:88 (close X), apps/web/src/checkout/CheckoutDialog.tsx:142 (remove coupon), apps/web/src/components/QuantityStepper.tsx:23 (minus).",
        ),
        Message::assistant("Three to fix."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done").iter().any(|line| line.starts_with(
            "- [Task] Find icon-only buttons without aria-label -> Three icon-only buttons lack an accessible name: "
        ) && line.contains("QuantityStepper.tsx:23")),
        "{summary}"
    );
    // Hermes's `delegate_task` answers in JSON: its report is the summary there.
    let answer = serde_json::json!({ "results": [{
        "task_index": 0,
        "status": "completed",
        "summary": "The admin package pins datefmt 1.x, so it will not see the warning. Nothing else pins it.",
        "api_calls": 7
    }], "total_duration_seconds": 41.2 });
    let middle = vec![
        Message::user("deprecate formatDate without breaking the other packages"),
        Message::assistant_calls(vec![ToolCall::new(
            "d1",
            "delegate_task",
            r#"{"goal":"Find the packages that pin datefmt","context":"monorepo at /srv/mono"}"#,
        )]),
        Message::tool("d1", answer.to_string()),
        Message::assistant("Only admin is pinned."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done").iter().any(|line| line.starts_with(
            "- [delegate_task] Find the packages that pin datefmt -> The admin package pins datefmt 1.x, so it will not see the warning."
        )),
        "{summary}"
    );
    // Another tool's long answer is still told by its size: only a subagent reports.
    let middle = vec![
        Message::user("what is the weather"),
        Message::assistant_calls(vec![ToolCall::new("w1", "weather", r#"{"city":"Oslo"}"#)]),
        Message::tool(
            "w1",
            "Oslo is cloudy today with light rain expected in the evening and winds from the south-west at twelve metres a second. Tomorrow clears.",
        ),
        Message::assistant("Cloudy."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.starts_with("- [weather] -> ") && line.ends_with(" chars of output")),
        "{summary}"
    );
}

/// What a subagent found, carried from an earlier summary, keeps its rank beside the new
/// middle's work, as a blocker does (verify37: it gave way to newer reads at the next fold).
#[test]
fn a_carried_finding_keeps_its_place_beside_newer_work() {
    let finding = "[Task] Check consumers of formatDate -> The admin package pins datefmt 1.x, so it will not see the warning until its lockfile moves.";
    let previous = format!("## Goal\n- deprecate formatDate\n\n## Progress\n### Done\n- {finding}\n");
    let mut middle = vec![Message::user("Now add the deprecation warning.")];
    for n in 0..8 {
        let id = format!("r{n}");
        let path = format!("/home/dev/datefmt/src/module_{n}.ts");
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            &id,
            "Read",
            serde_json::json!({ "file_path": path }).to_string(),
        )]));
        middle.push(Message::tool(&id, "export const x = 1;\n".repeat(40)));
    }
    middle.push(Message::assistant("Adding the warning to the export."));
    let folded = summarize_within(&middle, Some(&previous), 900, 4_000);
    assert!(
        section_lines(&folded, "### Done")
            .iter()
            .any(|line| line.contains(finding)),
        "{folded}"
    );
}

/// A request and eight file reads after it: newer work an earlier summary's lines compete with.
fn postmortem_reads() -> Vec<Message> {
    let mut middle = vec![Message::user("Meanwhile draft the postmortem.")];
    for n in 0..8 {
        let id = format!("r{n}");
        middle.push(shell(&id, &format!("sed -n '1,400p' infra/prod/module_{n}.tf")));
        middle.push(Message::tool(
            &id,
            format!("resource \"aws_x\" \"m{n}\" {{}}\n").repeat(40),
        ));
    }
    middle.push(Message::assistant("Drafting the timeline."));
    middle
}

/// What the assistant found under a label (`Root cause: …`) stays from fold to fold beside
/// newer work, the newest findings only (verify38: an incident's root cause, #1412, gave way to
/// the postmortem's file reads two folds after it was found).
#[test]
fn carried_root_cause_keeps_its_place_beside_newer_reads() {
    let root_cause = "Root cause: 559e0e8 (#1412) removed the ingress rule on port 6379 from sg-0a1b2c3d4e5f6a7b8 (redis) for the API security group.";
    let fixed: Vec<String> = (0..4)
        .map(|n| format!("Fixed: the flaky probe {n} of the staging canary now waits for its listener."))
        .collect();
    let searches: String = (0..4)
        .map(|n| format!("- [terminal] ran `rg -n 'ingress_{n}' infra` -> 12 lines output; last line: infra/prod/network.tf:{n}\n"))
        .collect();
    let previous = format!(
        "## Goal\n- stop the 503s\n\n## Progress\n### Done\n- {}\n- {}\n- {}\n- {root_cause}\n- {}\n{searches}",
        fixed[0], fixed[1], fixed[2], fixed[3]
    );
    let middle = postmortem_reads();
    let folded = summarize_within(&middle, Some(&previous), 1_100, 4_000);
    let done = section_lines(&folded, "### Done");
    assert!(done.iter().any(|line| line.contains(root_cause)), "{folded}");
    // Only the newest findings keep their rank: the older give way to the new reads.
    assert!(!done.iter().any(|line| line.contains(&fixed[0])), "{folded}");
}

/// A finding the assistant stated under a label is listed once, under Done, not again as its
/// reasoning under Key Decisions.
#[test]
fn a_labelled_finding_is_not_repeated_as_a_decision() {
    let mut middle = vec![
        Message::user("Prod ALB returns 503. Find out why."),
        shell("g1", "git show 559e0e8 -- infra/prod/network.tf"),
        Message::tool("g1", "-  ingress { from_port = 6379 }\nExit code: 0"),
        Message::assistant(
            "Root cause: 559e0e8 (#1412) removed the ingress rule on port 6379 from the redis security group because the module was refactored. It was applied at 14:03.",
        ),
    ];
    // The answer to the request, quoted with it…
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Goal")
            .iter()
            .any(|line| line.contains("Its answer: Root cause: 559e0e8 (#1412)")),
        "{summary}"
    );
    assert!(
        !section_lines(&summary, "## Key Decisions")
            .iter()
            .any(|line| line.contains("559e0e8")),
        "{summary}"
    );
    // …or a step on the way, listed under Done.
    middle.extend([
        Message::user("Restore the rule through terraform."),
        shell("p1", "terraform -chdir=infra/prod plan -out=/tmp/fix.plan"),
        Message::tool("p1", "Plan: 0 to add, 1 to change, 0 to destroy.\nExit code: 0"),
    ]);
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.starts_with("- Root cause: 559e0e8 (#1412)")),
        "{summary}"
    );
    assert!(
        !section_lines(&summary, "## Key Decisions")
            .iter()
            .any(|line| line.contains("559e0e8")),
        "{summary}"
    );
}

/// A cut copy of an output kept after one summary is read by the next compaction: the lines the
/// copy wrote about what it cut are not the output's error lines (verify38: eight `[… 74 lines
/// (2,429 characters) of this output cut by context compaction; 1 of them that read as errors,
/// warnings or failed requests:]` under `Errors:` at the end of a replay), the error it kept is.
#[test]
fn a_cut_copys_own_lines_are_no_error_lines() {
    let access = |from: usize| -> String {
        (from..from + 300)
            .map(|n| {
                format!(
                    "2026-11-30T14:{:02}:{:02} GET /v2/quotes 200 12ms\n",
                    n / 60 % 60,
                    n % 60
                )
            })
            .collect()
    };
    let log = format!(
        "{}2026-11-30T14:56:00 worker-3 Error: upstream timeout after 30000ms\n{}",
        access(0),
        access(300)
    );
    let copy = crate::prune::cut_text(&log, 4_000, 0).expect("the log is cut");
    assert!(
        copy.contains("read as errors, warnings or failed requests:]"),
        "{copy}"
    );
    let middle = vec![
        Message::user("why did the quotes time out?"),
        shell("k1", "kubectl logs deploy/quotes --since=1h"),
        Message::tool("k1", copy),
        Message::assistant("The worker timed out upstream once."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("cut by context compaction"), "{summary}");
    assert!(!summary.contains("the output's last lines"), "{summary}");
    assert!(
        summary.contains("2026-11-30T14:56:00 worker-3 Error: upstream timeout after 30000ms"),
        "{summary}"
    );
}

/// The answer an earlier summary quoted for its latest request, when it states a finding
/// (`Fixed: …`), stays under Done once the user asked the next thing; an answer in plain words
/// stays with its request (verify38: the incident's fix was lost at the next fold).
#[test]
fn a_superseded_requests_finding_answer_stays_under_done() {
    let fixed =
        "Fixed: the redis ingress rule is back (apply at 14:52 UTC), all 6 targets healthy, /healthz 200.";
    let previous = format!(
        "## Goal\n- Latest request (answered): Priya's apply is done. Go ahead and apply.\n- Its answer: {fixed}\n- Restore the rule through terraform.\n\n## Progress\n### Done\n- [terminal] ran `terraform apply /tmp/fix.plan` -> exit 0, 3 lines output\n"
    );
    let middle = vec![
        Message::user("Now add a conftest policy that fails any plan removing the 6379 ingress."),
        shell("c1", "conftest test /tmp/plan.json -p policy/"),
        Message::tool("c1", "1 test, 1 passed, 0 warnings, 0 failures\nExit code: 0"),
        Message::assistant("The policy passes on the real plan."),
    ];
    let folded = summarize_within(&middle, Some(&previous), 3_000, 6_000);
    assert!(
        section_lines(&folded, "### Done")
            .iter()
            .any(|line| line.contains(fixed)),
        "{folded}"
    );
    let plain = previous.replace(fixed, "Applied; the targets are healthy again.");
    let folded = summarize_within(&middle, Some(&plain), 3_000, 6_000);
    // A plain answer stays with its request, in Goal.
    let goal = section_lines(&folded, "## Goal");
    let request = goal
        .iter()
        .position(|line| *line == "- Priya's apply is done. Go ahead and apply.")
        .expect(&folded);
    assert_eq!(
        goal[request + 1],
        "- Its answer: Applied; the targets are healthy again.",
        "{folded}"
    );
    assert!(
        !section_lines(&folded, "### Done")
            .iter()
            .any(|line| line.contains("healthy again")),
        "{folded}"
    );
    // The newest finding of all, though the earlier summary lists it first: it keeps its rank
    // beside newer reads where older fixes give way.
    let older: String = (0..3)
        .map(|n| format!("- Fixed: the flaky probe {n} of the staging canary now waits for its listener.\n"))
        .collect();
    let previous = format!("{previous}{older}");
    let middle = postmortem_reads();
    let folded = summarize_within(&middle, Some(&previous), 1_100, 4_000);
    let done = section_lines(&folded, "### Done");
    assert!(done.iter().any(|line| line.contains(fixed)), "{folded}");
    assert!(!done.iter().any(|line| line.contains("probe 0")), "{folded}");
}

/// A command run under a wrapper (`time`, `timeout 600`, `nice`, `sudo`…) is the command it
/// wraps: its success settles the failure of the same command run bare (verify38: `time alembic
/// upgrade head` passing left `alembic upgrade head -> … NumericValueOutOfRange` Blocked).
#[test]
fn a_command_run_under_a_wrapper_settles_its_own_failure() {
    for rerun in [
        "DATABASE_URL=postgresql://s/p time alembic upgrade head 2>&1 | tail -2",
        "timeout 600 alembic upgrade head",
        "sudo -E env DATABASE_URL=postgresql://s/p alembic upgrade head",
    ] {
        let middle = vec![
            Message::user("widen the amount column and migrate"),
            shell("m1", "DATABASE_URL=postgresql://s/p alembic upgrade head 2>&1 | tail -3"),
            Message::tool(
                "m1",
                "sqlalchemy.exc.DataError: (psycopg.errors.NumericValueOutOfRange) numeric field overflow\nExit code: 1",
            ),
            shell("m2", rerun),
            Message::tool(
                "m2",
                "INFO  [alembic.runtime.migration] Running upgrade 9b2e44f01a7c -> 3f9a1c2b7d4e\nExit code: 0",
            ),
            Message::assistant("Migrated."),
        ];
        let summary = summarize(&middle);
        assert!(
            !section_lines(&summary, "### Blocked")
                .iter()
                .any(|line| line.contains("alembic")),
            "{rerun}: {summary}"
        );
        assert!(
            section_lines(&summary, "### Done").iter().any(
                |line| line.contains("alembic upgrade head") && line.ends_with("; passed on a later run")
            ),
            "{rerun}: {summary}"
        );
    }
}

/// The newest todo list is the plan: listed with the newest work however much work followed it,
/// the older states of the list not at all; a list an earlier summary told gives way to a newer
/// one and otherwise stays (verify38: the plan in no summary of two sessions).
#[test]
fn the_newest_todo_list_is_the_plan_and_replaces_older_ones() {
    let todos = |in_progress: &str| {
        serde_json::json!({ "todos": [
            { "content": "Retrain v7", "status": "completed", "activeForm": "Retraining" },
            { "content": in_progress, "status": "in_progress", "activeForm": "Working" },
            { "content": "Re-add days_since_last_login after DATA-1203", "status": "pending", "activeForm": "Re-adding" }
        ]})
        .to_string()
    };
    let mut middle = vec![
        Message::user("retrain the churn model"),
        Message::assistant_calls(vec![ToolCall::new("t1", "TodoWrite", todos("Compare v6 and v7"))]),
        Message::tool("t1", "Todos have been modified successfully."),
        Message::assistant_calls(vec![ToolCall::new("t2", "TodoWrite", todos("Backtest v7b"))]),
        Message::tool("t2", "Todos have been modified successfully."),
    ];
    for n in 0..12 {
        let id = format!("r{n}");
        middle.push(Message::assistant_calls(vec![ToolCall::new(
            &id,
            "Read",
            serde_json::json!({ "file_path": format!("/srv/churn/src/module_{n}.py") }).to_string(),
        )]));
        middle.push(Message::tool(&id, "x = 1\n".repeat(40)));
    }
    middle.push(Message::assistant("Backtesting."));
    let summary = summarize_within(&middle, None, 1_000, 4_000);
    let done = section_lines(&summary, "### Done");
    let plans: Vec<&&str> = done.iter().filter(|line| line.contains("-> todos: ")).collect();
    assert_eq!(plans.len(), 1, "{summary}");
    assert!(plans[0].contains("1 in progress (Backtest v7b)"), "{summary}");

    // Carried, it stays beside newer work, and gives way to a newer list.
    let previous = format!(
        "## Goal\n- retrain the churn model\n\n## Progress\n### Done\n{}\n",
        plans[0]
    );
    let reads = middle[5..].to_vec();
    let folded = summarize_within(&reads, Some(&previous), 1_000, 4_000);
    assert!(
        section_lines(&folded, "### Done")
            .iter()
            .any(|line| line.contains("1 in progress (Backtest v7b)")),
        "{folded}"
    );
    let mut newer = vec![
        Message::user("go on"),
        Message::assistant_calls(vec![ToolCall::new("t3", "TodoWrite", todos("Write the report"))]),
        Message::tool("t3", "Todos have been modified successfully."),
    ];
    newer.extend(reads);
    let folded = summarize_within(&newer, Some(&previous), 1_500, 4_000);
    let plans: Vec<&str> = section_lines(&folded, "### Done")
        .into_iter()
        .filter(|line| line.contains("-> todos: "))
        .collect();
    assert_eq!(plans.len(), 1, "{folded}");
    assert!(plans[0].contains("1 in progress (Write the report)"), "{folded}");
}

/// A version is listed with the package it is of, where the output names one before it
/// (verify41: `Versions: 1.23.1` told the model nothing of which pod changed).
#[test]
fn versions_are_listed_with_their_packages() {
    let middle = vec![
        Message::user("The iOS build broke after the pod update. Find which pod changed."),
        shell("p1", "cd ios && pod install"),
        Message::tool(
            "p1",
            "Analyzing dependencies\nUsing RNCAsyncStorage (1.23.1)\nInstalling RNReanimated (3.16.1) (was 3.15.0)\nPod installation complete!",
        ),
        shell("p2", "pip install requests==2.31.0"),
        Message::tool("p2", "Successfully installed requests-2.31.0"),
        Message::assistant("RNReanimated moved from 3.15.0 to 3.16.1."),
    ];
    let summary = summarize(&middle);
    let versions = summary
        .lines()
        .find(|line| line.starts_with("- Versions:"))
        .unwrap_or_else(|| panic!("{summary}"));
    for named in [
        "RNCAsyncStorage (1.23.1)",
        "RNReanimated (3.16.1)",
        "requests-2.31.0",
    ] {
        assert!(versions.contains(named), "{named}: {summary}");
    }
    // The bare 3.16.1 of the assistant's sentence is not listed again beside its named one.
    assert!(!versions.contains(", 3.16.1"), "{summary}");
}

/// A blocker is said with the workaround the user gave for meanwhile, and a message that makes
/// the missing thing available (`you can use that instead of the sample`) lifts it (verify42: the
/// unreachable bucket stayed under Blocked after the full export was copied in).
#[test]
fn a_blocker_is_said_with_its_workaround_and_lifted_by_what_replaces_it() {
    let check = |id: &str, data: &str| {
        [
            shell(id, &format!("python check.py --data {data} --month 09")),
            Message::tool(id, "rows 4120, revenue 1,204,332.10\nExit code: 0"),
        ]
    };
    let mut middle = vec![Message::user("Find why revenue for 2025-09 is 3% too high.")];
    middle.extend(check("r1", "data/sample"));
    middle.push(Message::user(
        "Blocker: the S3 bucket s3://acme-prod isn't reachable from your sandbox. Use data/sample/ for now.",
    ));
    middle.extend(check("r2", "data/sample"));
    let blocked = summarize(&middle);
    assert_eq!(
        section_lines(&blocked, "### Blocked"),
        ["- Stated by the user: Blocker: the S3 bucket s3://acme-prod isn't reachable from your sandbox. Use data/sample/ for now."],
        "{blocked}"
    );
    middle.push(Message::user(
        "I copied the full export into data/full/ now, you can use that instead of the sample.",
    ));
    middle.extend(check("r3", "data/full"));
    let lifted = summarize(&middle);
    assert_eq!(section_lines(&lifted, "### Blocked"), ["- (none)"], "{lifted}");
}

/// A message of the user's that says only what blocks the work is listed under Blocked, not under
/// Goal as well, while it stands (verify42: `Blocker: … isn't reachable …` read as a goal).
#[test]
fn a_message_stating_only_a_blocker_is_no_goal_while_it_stands() {
    let mut middle = vec![
        Message::user("Find why revenue for 2025-09 is 3% too high."),
        Message::user(
            "Blocker: the S3 bucket s3://acme-prod isn't reachable from your sandbox. Use data/sample/ for now.",
        ),
        shell("r1", "python check.py --data data/sample --month 09"),
        Message::tool("r1", "rows 4120, revenue 1,204,332.10\nExit code: 0"),
        Message::user("Also compare 2025-08 with finance's number."),
        Message::assistant("2025-08 matches finance's number."),
    ];
    let summary = summarize(&middle);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        !goal.iter().any(|line| line.contains("isn't reachable")),
        "{summary}"
    );
    assert!(
        goal.iter().any(|line| line.contains("Find why revenue"))
            && goal.iter().any(|line| line.contains("2025-08")),
        "{summary}"
    );
    assert_eq!(section_lines(&summary, "### Blocked").len(), 1, "{summary}");
    // Lifted, the message is the user's again, read beside what lifted it.
    middle.push(Message::user(
        "I copied the full export into data/full/ now, you can use that instead of the sample.",
    ));
    let lifted = summarize(&middle);
    assert!(
        section_lines(&lifted, "## Goal")
            .iter()
            .any(|line| line.contains("isn't reachable")),
        "{lifted}"
    );
}

/// What only someone else can give (`I can't give you access … needs SRE approval (ticket
/// OPS-4412)`) blocks the work until the ticket is approved (verify42: in no Blocked).
#[test]
fn access_the_user_cannot_give_blocks_until_its_ticket_is_approved() {
    let mut middle = vec![
        Message::user("Consumer lag on orders.v2 keeps growing. Find out why."),
        Message::user(
            "I can't give you access to the prod metrics in Datadog yet, that needs SRE approval (ticket OPS-4412). Work from the logs and staging for now.",
        ),
        Message::assistant("Understood, working from the logs."),
    ];
    let blocked = summarize(&middle);
    let lines = section_lines(&blocked, "### Blocked");
    assert!(
        lines.len() == 1
            && lines[0].contains("OPS-4412")
            && lines[0].contains("Work from the logs and staging for now."),
        "{blocked}"
    );
    middle.push(Message::user(
        "OPS-4412 got approved, you now have read access to Datadog prod metrics.",
    ));
    let lifted = summarize(&middle);
    assert_eq!(section_lines(&lifted, "### Blocked"), ["- (none)"], "{lifted}");
}

/// A rule that holds until something is given ends when the user says the agent can do it now
/// (verify42: `until then don't run \`rover supergraph compose\` against Studio` listed after
/// `you can run rover against Studio now`).
#[test]
fn a_rule_for_meanwhile_ends_when_the_user_says_you_can_run_it() {
    let mut middle = vec![
        Message::user("Rename Product.price to priceInfo in the catalog subgraph."),
        Message::user(
            "The APOLLO_KEY is expired. I'll get a new one; until then don't run `rover supergraph compose` against Studio, use the local supergraph.yaml.",
        ),
        Message::assistant("Composing locally from supergraph.yaml."),
    ];
    let ruled = summarize(&middle);
    assert!(
        section_lines(&ruled, "## Constraints & Preferences")
            .iter()
            .any(|line| line.contains("rover supergraph compose")),
        "{ruled}"
    );
    middle.push(Message::user(
        "The platform team gave me a fresh key, you can run rover against Studio now.",
    ));
    let revoked = summarize(&middle);
    assert!(
        !section_lines(&revoked, "## Constraints & Preferences")
            .iter()
            .any(|line| line.contains("rover supergraph compose")),
        "{revoked}"
    );
}

/// Items numbered inline are sentences of their own: the rule of one is listed without the
/// other, which a later message overruled (verify42: `(1) reduce max.poll.records to 100` listed
/// with `(2) … don't change customer-svc code` beside `don't change max.poll.records`).
#[test]
fn a_rule_in_an_inline_item_is_listed_without_the_other_items() {
    let middle = vec![
        Message::user("Consumer lag on orders.v2 keeps growing. Find out why."),
        Message::user(
            "OK. Two things: (1) for the enricher, reduce max.poll.records to 100 so we stop getting evicted; (2) the customer-svc query is owned by the CRM team, don't change customer-svc code, just write up the finding for them.",
        ),
        Message::assistant("Reducing max.poll.records and writing up the query."),
    ];
    let summary = summarize(&middle);
    let rules = section_lines(&summary, "## Constraints & Preferences");
    assert_eq!(
        rules,
        ["- (2) the customer-svc query is owned by the CRM team, don't change customer-svc code, just write up the finding for them."],
        "{summary}"
    );
}

/// A root cause found so far is a finding (verify42: `Root cause so far: customer-svc's Hikari
/// pool … is exhausted …` in no summary of an incident whose write-up was the next request).
#[test]
fn a_root_cause_so_far_is_a_finding() {
    let middle = vec![
        Message::user("Consumer lag on orders.v2 keeps growing. Find out why."),
        shell("k1", "kubectl logs deploy/customer-svc --since=2h | grep -c 'Connection is not available'"),
        Message::tool("k1", "1843\nExit code: 0"),
        Message::assistant(
            "Root cause so far: customer-svc's Hikari pool (maximumPoolSize=10) is exhausted since the 06:30 deploy, so each lookup takes 400-900 ms and a batch outlasts max.poll.interval.ms.",
        ),
        Message::user("Write it up in docs/incidents/INC-2291.md."),
        Message::assistant("Writing the incident note."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.starts_with("- Root cause so far: customer-svc's Hikari pool")),
        "{summary}"
    );
}

/// Codex runs `apply_patch` through its shell (`["apply_patch", "*** Begin Patch…"]`, or a
/// heredoc in a script): the patch's files are changed, and the patch is no command to quote
/// (verify43: no `Changed:` line, and the raw patch over six lines under Commands).
#[test]
fn a_patch_applied_through_the_shell_changes_its_files() {
    let patch = "*** Begin Patch\n*** Update File: Dockerfile\n@@\n-FROM node:20-alpine AS deps\n+FROM node:22-alpine AS deps\n*** End Patch\n";
    let array =
        serde_json::json!({"command": ["apply_patch", patch], "workdir": "/home/dev/web"}).to_string();
    let heredoc = serde_json::json!({
        "command": ["bash", "-lc", "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: lib/i18n/load.mjs\n@@\n-a\n+b\n*** End Patch\nEOF"]
    })
    .to_string();
    let middle = vec![
        Message::user("Bump the Dockerfile to Node 22."),
        Message::assistant_calls(vec![ToolCall::new("p1", "shell", array)]),
        Message::tool("p1", "Success. Updated the following files:\nM Dockerfile"),
        Message::assistant_calls(vec![ToolCall::new("p2", "shell", heredoc)]),
        Message::tool("p2", "Success. Updated the following files:\nM lib/i18n/load.mjs"),
        Message::assistant("Bumped."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Relevant Files").contains(&"- Changed: lib/i18n/load.mjs, Dockerfile"),
        "{summary}"
    );
    assert!(!summary.contains("*** Begin Patch"), "{summary}");
}

/// Docker BuildKit numbers its steps `#12`: no issue of a tracker (verify43: `Issues: #12, #14`
/// from a build log).
#[test]
fn a_build_steps_number_is_no_issue() {
    let middle = vec![
        Message::user("Build the storefront image on Node 22; it is for #4521."),
        shell("d1", "docker build -t storefront:node22 ."),
        Message::tool(
            "d1",
            "#12 [builder 6/6] RUN pnpm build\n#12 4.213 vite v5.4.2 building for production...\n#12 DONE 88.4s\n#14 exporting to image\n#14 naming to docker.io/library/storefront:node22 done\n#14 DONE 2.1s\nExit code: 0",
        ),
        Message::assistant("Built storefront:node22; see #4521."),
    ];
    let summary = summarize(&middle);
    assert!(
        !summary.lines().any(|line| line.starts_with("- Issues:")),
        "{summary}"
    );
    assert!(summary.contains("#4521"), "{summary}");
}

/// `Reverse the decision about the flag — …` replaces the decision it reverses, and a request
/// that was that decision, past a word of assent (`Makes sense. Decision: …`), goes from Goal
/// with it (verify43: both read as current after their reversal).
#[test]
fn a_decision_reversed_about_its_subject_is_replaced_with_its_request() {
    let middle = vec![
        Message::user("Ship the Node 22 image for the storefront."),
        Message::user(
            "Makes sense. Decision: we ship the Node 22 Dockerfile behind the `NODE22_IMAGE` flag first.",
        ),
        Message::assistant("OK, behind the flag."),
        Message::user(
            "Change of mind: Reverse the decision about the flag — ship the Node 22 image directly, no flag.",
        ),
        Message::assistant("OK: no NODE22_IMAGE flag; the Node 22 image ships directly."),
        Message::user("Now update the CI matrix to drop Node 18."),
        Message::assistant("Dropped Node 18 from the matrix."),
    ];
    let summary = summarize(&middle);
    let decisions = section_lines(&summary, "## Key Decisions");
    assert!(
        !decisions
            .iter()
            .any(|line| line.contains("behind the `NODE22_IMAGE` flag first")),
        "{summary}"
    );
    assert!(
        decisions
            .iter()
            .any(|line| line.contains("Reverse the decision about the flag")),
        "{summary}"
    );
    assert!(
        !section_lines(&summary, "## Goal")
            .iter()
            .any(|line| line.contains("behind the `NODE22_IMAGE` flag first")),
        "{summary}"
    );
}

/// A log's `key=value` lines name a request's target under a route's key and the line's id under
/// an id's key: routes and ids of one shape, not files mentioned nor commits (verify43: a
/// thousand `req_id`s under Hashes, the targets under `Mentioned:`).
#[test]
fn a_key_value_logs_targets_are_routes_and_its_ids_keep_their_key() {
    let log: String = (0..40)
        .map(|n| {
            format!(
                "2026-03-14T10:{n:02}:11Z INFO notifier req_id={:012x} route=/api/v1/items/{} status=200\n",
                0x41649f767c45_u64 + n * 7919,
                1000 + n * 37
            )
        })
        .collect();
    let middle = vec![
        Message::user("Why does the notifier leak goroutines?"),
        shell("l1", "kubectl logs deploy/notifier --since=1h"),
        Message::tool("l1", log),
        Message::assistant("The requests look normal; checking pprof next."),
    ];
    let summary = summarize(&middle);
    let line = |label: &str| summary.lines().find(|line| line.starts_with(label)).unwrap_or("");
    assert!(line("- Routes:").contains("/api/v1/items/1000"), "{summary}");
    assert!(!line("- Mentioned:").contains("/api/v1/items/"), "{summary}");
    assert!(line("- Ids:").contains("req_id=41649f"), "{summary}");
}

/// An answer that said what blocked the work is not quoted as a request's answer once that is
/// lifted (verify43: `Its answer: Blocked: … REG-5120` beside `Blocked: (none)`).
#[test]
fn an_answer_stating_a_lifted_blocker_is_not_quoted() {
    let mut middle = vec![
        Message::user("Upgrade the ingress controller on staging."),
        Message::assistant("Blocked: the staging node pool can't pull from the registry (401); REG-5120 tracks the credentials."),
    ];
    let blocked = summarize(&middle);
    assert!(
        blocked.contains("Its answer: Blocked: the staging node pool"),
        "{blocked}"
    );
    middle.push(Message::user(
        "REG-5120 is resolved, the pool pulls again. Go on.",
    ));
    middle.push(Message::assistant("Pulling works; continuing the upgrade."));
    let lifted = summarize(&middle);
    assert!(!lifted.contains("Its answer: Blocked:"), "{lifted}");
    assert_eq!(section_lines(&lifted, "### Blocked"), ["- (none)"], "{lifted}");
}

/// The same, for a decision the user recorded after a word of assent (`Makes sense. Decision:
/// …`): Key Decisions lists it no more, so the goal goes (verify43: `Makes sense. Decision: pin
/// the controller chart at 4.10.1 for now` carried to the end of a replay after its reversal).
#[test]
fn a_carried_goal_recording_a_decision_after_assent_is_dropped_once_reversed() {
    let previous = "## Goal\n- Fix the staging ingress 404.\n- Makes sense. Decision: pin the controller chart at 4.10.1 for now and fix our charts later.\n- Actually, scrap the pin. Reverse the decision: stay on 4.11.2 and add ingressClassName: nginx to our charts instead.\n\n## Key Decisions\n- Reverse the decision: stay on 4.11.2 and add ingressClassName: nginx to our charts instead.\n- (1 earlier record was replaced by the revisions listed here)\n";
    let middle = vec![
        Message::user("Now look at the cert-manager webhook."),
        Message::assistant("The webhook's certificate expired; renewing it."),
    ];
    let summary = summarize_within(&middle, Some(previous), 4_000, 4_000);
    let goal = section_lines(&summary, "## Goal");
    assert!(
        !goal.iter().any(|line| line.contains("pin the controller chart")),
        "{summary}"
    );
    assert!(
        goal.iter().any(|line| line.contains("scrap the pin")),
        "{summary}"
    );
    // Standing, it stays.
    let standing = "## Goal\n- Fix the staging ingress 404.\n- Makes sense. Decision: pin the controller chart at 4.10.1 for now and fix our charts later.\n\n## Key Decisions\n- Decision: pin the controller chart at 4.10.1 for now and fix our charts later.\n";
    let summary = summarize_within(&middle, Some(standing), 4_000, 4_000);
    assert!(
        section_lines(&summary, "## Goal")
            .iter()
            .any(|line| line.contains("pin the controller chart")),
        "{summary}"
    );
}

/// A carried answer that said what blocked the work goes once the middle lifts it, as its Blocked
/// line does (verify43: `Its answer: Blocked: … REG-5120` beside `Blocked: (none)`).
#[test]
fn a_carried_answer_stating_a_lifted_blocker_is_dropped() {
    let previous = "## Goal\n- Upgrade the ingress controller on staging.\n- Its answer: Blocked: the staging node pool can't pull from the registry (401); REG-5120 tracks the credentials.\n\n## Progress\n### Blocked\n- Stated by the assistant: Blocked: the staging node pool can't pull from the registry (401); REG-5120 tracks the credentials.\n";
    let middle = vec![
        Message::user("REG-5120 is resolved, the pull secret was rotated. Retry the rollout."),
        Message::assistant("Rolled out; the pods pull again."),
    ];
    let summary = summarize_within(&middle, Some(previous), 4_000, 4_000);
    assert!(!summary.contains("Its answer: Blocked:"), "{summary}");
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
}

/// A carried root cause may use the facts' room, as the new middle's newest finding does: kept to
/// the prose's budget, it gave way to the requests of later folds at a small window with most of
/// the room unused (verify43: `Root cause (DBA-812): …` lost at 8,000 tokens).
#[test]
fn a_carried_root_cause_may_use_the_facts_room() {
    let previous = "## Goal\n- Rehearse the Postgres 13 -> 16 upgrade (DBA-812).\n\n## Progress\n### Done\n- Root cause (DBA-812): legacy_audit.event_refs has a column of type regclass (ref_table), which pg_upgrade cannot carry across major versions.\n";
    let middle = vec![
        Message::user("Change of plan: legacy_audit was archived to S3 last week, so dropping the legacy_audit schema is fine now; drop it instead of converting the column, it is simpler for the runbook."),
        Message::assistant("Dropped legacy_audit; pg_upgrade --check passes now and the link upgrade finished in 4 min 12 s on 1.4 TB."),
        Message::user("Don't recreate gen_order_ref in legacy_audit. Write the runbook now in docs/runbooks/pg16-upgrade.md, and note the gen_order_ref problem as an open item."),
        Message::assistant("Writing docs/runbooks/pg16-upgrade.md with the open item."),
    ];
    let summary = summarize_within(&middle, Some(previous), 700, 4_000);
    assert!(summary.contains("Root cause (DBA-812)"), "{summary}");
}

/// Work whose effect outlives the session, carried in progress, keeps its rank when the user's
/// next request moves it under Done, as it does carried under Done (verify43: the prod `helm
/// upgrade` gave way to look-ups at the fold after the next request).
#[test]
fn a_carried_publish_in_progress_keeps_its_rank_under_done() {
    let done: String = (0..12)
        .map(|n| {
            format!(
                "- [terminal] ran `cat charts/web/templates/ingress-{n}.yaml` -> exit 0, 80 lines output\n"
            )
        })
        .collect();
    let previous = format!(
        "## Goal\n- Upgrade prod ingress-nginx to 4.11.2.\n\n## Progress\n### Done\n{done}### In Progress\n- [terminal] ran `helm upgrade ingress-nginx ingress-nginx/ingress-nginx -n ingress-nginx --kube-context prod --version 4.11.2` -> exit 0, 4 lines output; last line: REVISION: 19\n"
    );
    let mut middle = vec![Message::user("Now look at the cert-manager webhook.")];
    for n in 0..6 {
        let id = format!("k{n}");
        middle.push(shell(
            &id,
            &format!("kubectl -n cert-manager describe pod webhook-{n}"),
        ));
        middle.push(Message::tool(
            &id,
            format!("Name: webhook-{n}\nStatus: Running\nExit code: 0"),
        ));
    }
    middle.push(Message::assistant(
        "The webhook pods run; checking the certificate next.",
    ));
    let summary = summarize_within(&middle, Some(&previous), 900, 1_000);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.contains("--kube-context prod")),
        "{summary}"
    );
}

/// A long finding is kept to its end, and a cut one ends at a word (verify44: `… Fix: link
/// geoserve to fmt:…` cut at 300 characters, the fix's name in two).
#[test]
fn a_long_finding_keeps_its_fix_and_a_cut_ends_at_a_word() {
    let finding = "Root cause (GEO-311): the fmt 10 headers come from FetchContent while spdlog 1.12 was built against the system fmt 9 in /usr/local/lib, so server.cpp's calls to fmt::v10::detail::vformat_to resolve against a library that only exports fmt::v9 symbols, and the target that pulls fmt in transitively is spdlog, which geoserve never links. Fix: link geoserve to fmt::fmt explicitly.";
    let middle = vec![
        Message::user("Fix the geoserve link error."),
        Message::assistant(finding),
        Message::user("Thanks. Now write the changelog."),
        Message::assistant("Changelog written."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "### Done")
            .iter()
            .any(|line| line.ends_with("Fix: link geoserve to fmt::fmt explicitly.")),
        "{summary}"
    );
    assert_eq!(
        draft::cut_marked("fix: link geoserve to fmt::fmt explicitly", 30),
        "fix: link geoserve to…"
    );
}

/// CTest's passing run (`100% tests passed, 0 tests failed out of 12`) passes: the failure before
/// it is fixed, and its `Test #10:` rows name no issues (verify44: the passing run under Blocked,
/// `wkb_parse (Failed)` still open, `Issues: #10, #11, #12`).
#[test]
fn ctests_passing_run_fixes_its_failure_and_its_rows_are_no_issues() {
    let rows = |first: &str| {
        let mut rows = format!(
            "Test project /app/build\n 1/12 Test # 1: wkb_parse            ...   {first}    0.10 sec\n"
        );
        for n in 2..=12 {
            rows.push_str(&format!(
                "{n:2}/12 Test #{n:2}: unit_{n}               ...   Passed    0.10 sec\n"
            ));
        }
        rows
    };
    let failing = format!(
        "{}\n92% tests passed, 1 tests failed out of 12\n\nThe following tests FAILED:\n\t  1 - wkb_parse (Failed)\nErrors while running CTest",
        rows("***Failed")
    );
    let passing = format!("{}\n100% tests passed, 0 tests failed out of 12", rows("Passed"));
    let middle = vec![
        Message::user("Fix the wkb_parse test."),
        shell("c1", "ctest --test-dir build"),
        Message::tool("c1", failing),
        Message::assistant("wkb_parse fails; fixing the byte order."),
        shell("c2", "ctest --test-dir build"),
        Message::tool("c2", passing),
        Message::assistant("All 12 tests pass."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert!(!standing_errors(&summary).contains("wkb_parse"), "{summary}");
    assert!(
        !summary.lines().any(|line| line.starts_with("- Issues:")),
        "{summary}"
    );
}

/// RSpec's failed expectation (`Failure/Error: expect(page)…`) is its error line, not the
/// `Failed examples:` heading (verify44: the failure reduced to that heading).
#[test]
fn rspecs_failed_expectation_is_its_error_line() {
    let middle = vec![
        Message::user("Fix the projects index spec."),
        shell("r1", "bundle exec rspec spec/system"),
        Message::tool(
            "r1",
            "Failures:\n\n  1) Projects index paginates at 25\n     Failure/Error: expect(page).to have_css('tr', count: 25)\n\n       expected to find css \"tr\" 25 times, found 26 matches\n     # ./spec/system/projects_index_spec.rb:58\n\n61 examples, 1 failures\n\nFailed examples:\n\nrspec ./spec/system/projects_index_spec.rb:58 # Projects index paginates at 25",
        ),
        Message::assistant("One example fails; looking at the pagination."),
    ];
    let summary = summarize(&middle);
    let errors = standing_errors(&summary);
    assert!(
        errors.contains("Failure/Error: expect(page).to have_css('tr', count: 25)"),
        "{summary}"
    );
    assert!(!errors.contains("Failed examples:"), "{summary}");
}

/// A rule for meanwhile said with a blocker ends when that blocker is lifted, though it names
/// nothing the lift names (verify44: `Don't run anything against it until I say so.` listed after
/// `INFRA-903 is done, stg-wh is back`); another rule for meanwhile stands.
#[test]
fn a_rule_said_with_a_blocker_ends_with_it() {
    let middle = vec![
        Message::user("Backfill the events table on staging."),
        Message::user(
            "Blocker: stg-wh is down for maintenance until 14:00 UTC (INFRA-903). Don't run anything against it until I say so.",
        ),
        Message::assistant("Pausing staging queries until INFRA-903 ends."),
        Message::user("INFRA-903 is done, stg-wh is back. Continue."),
        Message::user("The SFTP key was rotated. Don't retry the export until I confirm the connection is updated."),
        Message::assistant("Waiting for the SFTP confirmation."),
    ];
    let summary = summarize(&middle);
    let rules = section_lines(&summary, "## Constraints & Preferences");
    assert!(
        !rules.iter().any(|line| line.contains("until I say so")),
        "{summary}"
    );
    assert!(
        rules.iter().any(|line| line.contains("Don't retry the export")),
        "{summary}"
    );
}

/// A version of four numbers in brackets after its package (`rails (7.1.3.2)`) is a version, not
/// an address left out; an address alone is still none (verify44: `Versions:` without Rails).
#[test]
fn a_bracketed_four_part_version_is_listed_with_its_package() {
    let middle = vec![
        Message::user("Which Rails does the app run?"),
        shell("b1", "bundle list | grep -E 'rails|puma'"),
        Message::tool(
            "b1",
            "  * rails (7.1.3.2)\n  * puma (6.4.2)\nclient 10.0.7.1 connected\nExit code: 0",
        ),
        Message::assistant("Checked the bundle."),
        Message::user("Thanks. Now update the changelog."),
        Message::assistant("Done."),
    ];
    let summary = summarize(&middle);
    let versions = summary
        .lines()
        .find(|line| line.starts_with("- Versions:"))
        .unwrap_or("");
    assert!(
        versions.contains("rails (7.1.3.2)") && versions.contains("puma (6.4.2)"),
        "{summary}"
    );
    assert!(!versions.contains("10.0.7.1"), "{summary}");
}

/// Blocker sentences said one after the other are one blocker, listed whole and lifted whole: the
/// second (`Until someone with admin access adds them, …`) named nothing the lift named, and
/// stood under Blocked after `Dana added … as repo secrets — CI is unblocked` and a green run
/// (verify45).
#[test]
fn blocker_sentences_said_together_are_one_blocker() {
    let stated = Message::assistant(
        "CI fails at fetch_data.py. Blocked: adding repo secrets needs admin rights my token doesn't have. \
         Until someone with admin access adds them, CI can't get past the data step.",
    );
    let standing = summarize(&[
        Message::user("Refactor the churn notebook and get CI green."),
        stated.clone(),
        Message::user("I'll ask Dana. Meanwhile fix the rolling-sessions feature."),
        Message::assistant("Working on it."),
    ]);
    assert_eq!(
        section_lines(&standing, "### Blocked"),
        [
            "- Stated by the assistant: Blocked: adding repo secrets needs admin rights my token doesn't have. \
             Until someone with admin access adds them, CI can't get past the data step."
        ],
        "{standing}"
    );
    let lifted = summarize(&[
        Message::user("Refactor the churn notebook and get CI green."),
        stated,
        Message::user(
            "Dana added KAGGLE_USERNAME and KAGGLE_KEY as repo secrets — CI is unblocked. Re-run it.",
        ),
        Message::assistant("CI is green: all 29 tests pass."),
    ]);
    assert_eq!(section_lines(&lifted, "### Blocked"), ["- (none)"], "{lifted}");
}

/// A rule ends when the user lifts it: a rule that was what blocked the work ends with the
/// blocker's lift, and `you may restart …` permits the restart a rule forbade. What a thing is
/// (`a read-only token`) is no rule, and `Keep the Subscriber API the same` is one (verify45,
/// verify46).
#[test]
fn rules_end_when_lifted_and_only_rules_are_rules() {
    let summary = summarize(&[
        Message::user("Fix the replication lag on pg-replica-2. Reload only, no restart of pg-primary-1."),
        Message::assistant("wal_keep_size on the primary is too small."),
        Message::user(
            "Blocked: CHG-20931 must be approved by the DBA lead before you edit the primary's config. \
             Work on the replica side meanwhile.",
        ),
        Message::user("I'm waiting on IT to issue a read-only Nexus token for the sandbox. Keep the Subscriber API the same — internal/api depends on it."),
        Message::user(
            "CHG-20931 approved by Dana, go ahead with the primary's config. The restart is approved for \
             22:00 UTC; you may restart pg-primary-1 then to apply wal_compression = on.",
        ),
        Message::assistant("wal_keep_size = 8GB is live on pg-primary-1."),
    ]);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- Keep the Subscriber API the same — internal/api depends on it."],
        "{summary}"
    );
}

/// A later decision that turns down a recorded one by name replaces it under Key Decisions: the
/// reversed `Decision: go with pgvector …` stood alone there, and `Switching to Qdrant instead of
/// pgvector` gave way as reasoning (verify45).
#[test]
fn a_decision_turning_down_a_record_replaces_it() {
    let summary = summarize(&[
        Message::user("Pick a vector database for support search. Research and recommend."),
        Message::assistant(
            "Decision: go with pgvector 0.8.0 on our existing RDS Postgres 16.5. I will validate with a benchmark next.",
        ),
        Message::user("Dashboard numbers: pgvector p95 = 412 ms, Qdrant 1.12.4 p95 = 38 ms. Our SLO is p95 < 150 ms."),
        Message::assistant(
            "pgvector misses the SLO by ~3x. Switching to Qdrant instead of pgvector: 38 ms p95 at 0.98 recall.",
        ),
        Message::user("OK. Check the cost of self-hosting it."),
        Message::assistant("Self-hosted Qdrant on 2 x r6g.xlarge costs about $329/month."),
    ]);
    assert_eq!(
        section_lines(&summary, "## Key Decisions"),
        [
            "- Switching to Qdrant instead of pgvector: 38 ms p95 at 0.98 recall.",
            "- (1 earlier record was replaced by the revisions listed here)"
        ],
        "{summary}"
    );
}

/// An editor given no file (SWE-agent's `edit`, its `search` and `replace` alone) changes the one
/// its `open` showed: that file is changed, and the line says what was written (verify46: listed
/// as read only, and `[edit] -> 291 chars of output`).
#[test]
fn an_edit_without_a_path_changes_the_open_file() {
    let middle = vec![
        Message::user("formatRelative says 'in 0 days' for later today."),
        Message::assistant_calls(vec![ToolCall::new(
            "o1",
            "open",
            r#"{"path": "packages/date-utils/src/format.ts"}"#,
        )]),
        Message::tool("o1", "[File: /acme/packages/date-utils/src/format.ts (23 lines total)]\n13:  const days = Math.round(ms / 86_400_000);"),
        Message::assistant_calls(vec![ToolCall::new(
            "e1",
            "edit",
            r#"{"search": "  const days = Math.round(ms / 86_400_000);", "replace": "  const days = differenceInCalendarDays(date, now);"}"#,
        )]),
        Message::tool("e1", "[File: /acme/packages/date-utils/src/format.ts (24 lines total)]\n14:  const days = differenceInCalendarDays(date, now);\n(Open file: /acme/packages/date-utils/src/format.ts)"),
        Message::assistant("Fixed."),
    ];
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Relevant Files")
            .contains(&"- Changed: packages/date-utils/src/format.ts"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "- [edit] changed packages/date-utils/src/format.ts, writing: const days = differenceInCalendarDays(date, now);"
        ),
        "{summary}"
    );
    // And its windowed form, lines replaced by a text (verify48).
    let mut windowed = middle.clone();
    windowed[3] = Message::assistant_calls(vec![ToolCall::new(
        "e1",
        "edit",
        r#"{"start_line": 13, "end_line": 13, "replacement_text": "  const days = differenceInCalendarDays(date, now);\n"}"#,
    )]);
    let summary = summarize(&windowed);
    assert!(
        summary.contains(
            "- [edit] changed packages/date-utils/src/format.ts, writing: const days = differenceInCalendarDays(date, now);"
        ),
        "{summary}"
    );
}

/// A request's answer is the reply that names what was asked, not a last status about something
/// else: `Lag check: replica within seconds.` had stood for the dump's place and size (verify46).
#[test]
fn the_answer_is_the_reply_about_what_was_asked() {
    let check = |id: &str| {
        vec![
            Message::assistant_calls(vec![ToolCall::new(
                id,
                "terminal",
                r#"{"command":"ssh pg-replica-2 uptime"}"#,
            )]),
            Message::tool(id, "load average: 0.40"),
        ]
    };
    let mut middle = vec![
        Message::user("Keep an eye on replication lag on pg-replica-2."),
        Message::user("Also take a dump of the analytics schema from pg-replica-2, with replay paused during the dump."),
        Message::assistant(
            "The analytics dump completed: /backup/analytics.dump, 4.8 GB, 1873 TOC entries; replay was paused during the dump and resumed.",
        ),
    ];
    middle.extend(check("u1"));
    middle.push(Message::assistant("Lag check: replica within seconds."));
    middle.extend(check("u2"));
    let summary = summarize_before(&middle, None, true, None);
    assert!(
        summary.contains(
            "- Its answer: The analytics dump completed: /backup/analytics.dump, 4.8 GB, 1873 TOC entries;"
        ),
        "{summary}"
    );
}

/// A decision record without a number, carried from an earlier summary, stands as a numbered one
/// does: it gave way to a fold's read-only commands in a fifth of the room (verify46).
#[test]
fn an_unnumbered_record_is_carried_across_folds() {
    let first = summarize(&[
        Message::user("Fix formatRelative(undefined) crashing the DueBadge in apps/web."),
        Message::assistant("First I'll change the signature to formatRelative(date: Date | undefined)."),
        Message::assistant(
            "Decision reversed: keep formatRelative(date: Date) as is (other packages import it) and guard in DueBadge instead.",
        ),
    ]);
    assert!(
        first.contains("- Decision reversed: keep formatRelative"),
        "{first}"
    );
    let mut next = Vec::new();
    for at in 0..16 {
        let id = format!("s{at}");
        next.push(shell(
            &id,
            &format!("sed -n '1,40p' packages/lib{at}/src/index.ts"),
        ));
        let source: String = (0..40)
            .map(|line| format!("export const helper{line} = (d: Date) => d.toISOString().slice(0, {at});\n"))
            .collect();
        next.push(Message::tool(&id, source));
    }
    let request = SummaryRequest {
        middle: &next,
        pruned_middle: &[],
        previous_summary: Some(&first),
        focus_topic: None,
        target_tokens: 500,
        input_tokens: 3_000,
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    // Prose of 1,000 characters, facts of 8,000, as a small window gives.
    let folded = ExtractiveSummarizer.summarize_with_limits(&request, 1_000, 8_000);
    assert_eq!(
        section_lines(&folded, "## Key Decisions"),
        ["- Decision reversed: keep formatRelative(date: Date) as is (other packages import it) and guard in DueBadge instead."],
        "{folded}"
    );
    // Until a new decision turns it down by name.
    let turned = [Message::assistant(
        "Going with a formatRelativeSafe wrapper instead of the DueBadge guard: three other badges need it.",
    )];
    let folded = summarize_before(&turned, Some(&folded), false, None);
    assert_eq!(
        section_lines(&folded, "## Key Decisions"),
        [
            "- Going with a formatRelativeSafe wrapper instead of the DueBadge guard: three other badges need it.",
            "- (1 earlier record was replaced by the revisions listed here)"
        ],
        "{folded}"
    );
}

/// A root cause said in a sentence (`The root cause is that …`) is a diagnosis, as `Root cause:
/// …` is: ranked as reasoning, it gave way to passing test runs, and the next request was about
/// a second leak (verify45). It is carried as one too.
#[test]
fn a_root_cause_said_in_a_sentence_is_a_finding() {
    let cause = "The root cause is that Subscriber.Run never watches ctx.Done(): when a client disconnects, \
                 send() fails and the loop continues forever, so every disconnected client leaks a goroutine.";
    let source: String = (0..20).map(|line| format!("// line {line}\n")).collect();
    let mut middle = vec![
        shell("c1", "cat internal/stream/hub.go"),
        Message::tool("c1", format!("package stream\n{source}")),
        Message::assistant(cause),
        Message::user("Makes sense. Fix it."),
    ];
    for at in 0..3 {
        let id = format!("t{at}");
        middle.push(shell(
            &id,
            &format!("go test -race -count=20 -run TestHub{at} ./internal/stream/"),
        ));
        let output: String = (0..8)
            .map(|package| format!("ok  \tgithub.com/acme/notifyd/internal/pkg{package}\t3.{at}51s\n"))
            .collect();
        middle.push(Message::tool(&id, output));
    }
    let request = SummaryRequest {
        middle: &middle,
        pruned_middle: &[],
        previous_summary: None,
        focus_topic: None,
        target_tokens: 300,
        input_tokens: 3_000,
        request_follows: true,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    let summary = ExtractiveSummarizer.summarize_with_limits(&request, 1_100, 1_100);
    assert!(summary.contains(&format!("- {cause}")), "{summary}");
    let folded = ExtractiveSummarizer.summarize_with_limits(
        &SummaryRequest {
            middle: &middle[4..],
            previous_summary: Some(&summary),
            ..request
        },
        1_100,
        1_100,
    );
    assert!(folded.contains(&format!("- {cause}")), "{folded}");
}

/// A command run on another host, device or container is retried only by a run of the same
/// command there: another command on the same host passing fixes nothing (verify46: a failed
/// `ssh pg-replica-2 '… pg_dump …'` read `passed on a later run` after `ssh pg-replica-2 uptime`
/// passed, and a logcat crash after `adb -s emulator-5554 shell getprop` printed the SDK level).
#[test]
fn another_command_on_the_same_host_or_device_fixes_nothing() {
    let dump =
        "ssh pg-replica-2 'sudo -u postgres pg_dump -n analytics -Fc -f /backup/analytics.dump reporting'";
    let dump_failed = "pg_dump: error: Dumping the contents of table \"events_2026_03\" failed: PQgetResult() failed.\npg_dump: detail: Error message from server: ERROR:  canceling statement due to conflict with recovery\n[exit code 1]";
    let logcat = "adb -s emulator-5554 logcat -d | grep -A6 'FATAL EXCEPTION'";
    let crash = "E AndroidRuntime: FATAL EXCEPTION: main\nE AndroidRuntime: Process: com.acme.fieldnotes.debug, PID: 4121\nE AndroidRuntime: java.lang.NoSuchMethodError: No virtual method toInstant()Ljava/time/Instant; in class Ljava/util/Date; or its super classes\nE AndroidRuntime: \tat com.acme.fieldnotes.sync.SyncScheduler.schedule(SyncScheduler.kt:44)";
    let passed_later = |summary: &str, command: &str| {
        section_lines(summary, "### Done")
            .iter()
            .any(|line| line.contains(command) && line.contains(extractive::PASSED_LATER))
    };
    let blocked = |summary: &str, command: &str| {
        section_lines(summary, "### Blocked")
            .iter()
            .any(|line| line.contains(command))
    };
    let cases = [
        (
            dump,
            dump_failed,
            "ssh pg-replica-2 uptime",
            " 14:02:01 up 41 days,  3:12,  1 user,  load average: 0.41, 0.38, 0.35\n[exit code 0]",
            "pg_dump -n analytics",
        ),
        (
            logcat,
            crash,
            "adb -s emulator-5554 shell getprop ro.build.version.sdk",
            "26",
            "logcat -d",
        ),
        (
            "docker exec -it api pytest tests/test_orders.py",
            "E   AssertionError: assert 402 == 200\n1 failed, 14 passed in 2.31s\nExit code: 1",
            "docker exec -it api python manage.py check",
            "System check identified no issues (0 silenced).\nExit code: 0",
            "pytest tests/test_orders.py",
        ),
    ];
    for (failed, output, other, other_output, quoted) in cases {
        let middle = vec![
            Message::user("find out why it fails"),
            shell("f1", failed),
            Message::tool("f1", output),
            shell("o1", other),
            Message::tool("o1", other_output),
            Message::assistant("Not fixed yet."),
        ];
        let summary = summarize(&middle);
        assert!(!passed_later(&summary, quoted), "{summary}");
        assert!(blocked(&summary, quoted), "{summary}");
        assert!(!summary.contains("Errors fixed since"), "{summary}");
    }
    // The same command there passing retried it.
    let middle = vec![
        Message::user("dump the schema"),
        shell("f1", dump),
        Message::tool("f1", dump_failed),
        shell("f2", dump),
        Message::tool("f2", "[exit code 0]"),
        Message::assistant("The dump is written."),
    ];
    let summary = summarize(&middle);
    assert!(passed_later(&summary, "pg_dump -n analytics"), "{summary}");
    assert!(!blocked(&summary, "pg_dump"), "{summary}");
}

/// A run filtered to some of a monorepo's packages shows nothing of a whole or otherwise filtered
/// run's failure (verify46: `pnpm -r test` failing in @acme/api read `passed on a later run`
/// after `pnpm --filter @acme/web --filter @acme/date-utils test` passed); the whole suite
/// passing settles a filtered run's failure, and so does the same filter passing.
#[test]
fn a_run_filtered_to_other_packages_fixes_nothing() {
    let api_failed = "packages/api test:  FAIL  src/__tests__/rate-limit.test.ts > rate limiter > blocks the 101st request\npackages/api test: Error: connect ECONNREFUSED 127.0.0.1:6379\n ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @acme/api@0.0.0 test: `vitest run`\nExit code: 1";
    let passed = "apps/web test:  Test Files  2 passed (2)\npackages/date-utils test:  Test Files  3 passed (3)\nExit code: 0";
    let summary_of = |failed: &str, rerun: &str| {
        summarize(&[
            Message::user("fix the 'in 0 days' bug"),
            shell("f1", failed),
            Message::tool("f1", api_failed),
            shell("p1", rerun),
            Message::tool("p1", passed),
            Message::assistant("Done for now."),
        ])
    };
    let passed_later = |summary: &str, command: &str| {
        section_lines(summary, "### Done")
            .iter()
            .any(|line| line.contains(command) && line.contains(extractive::PASSED_LATER))
    };
    let blocked = |summary: &str, command: &str| {
        section_lines(summary, "### Blocked")
            .iter()
            .any(|line| line.contains(command))
    };
    for (failed, rerun) in [
        (
            "pnpm -r test",
            "pnpm --filter @acme/web --filter @acme/date-utils test",
        ),
        ("pnpm -r test", "pnpm -F @acme/web test"),
        ("pnpm test", "npm test --workspace=apps/web"),
        ("pnpm --filter @acme/api test", "pnpm --filter @acme/web test"),
        (
            "npx nx run-many -t test",
            "npx nx run-many -t test --projects=web,date-utils",
        ),
    ] {
        let summary = summary_of(failed, rerun);
        assert!(blocked(&summary, failed), "{summary}");
        assert!(!passed_later(&summary, failed), "{summary}");
        assert!(!summary.contains("Errors fixed since"), "{summary}");
    }
    for (failed, rerun) in [
        ("pnpm --filter @acme/api test", "pnpm -r test"),
        (
            "pnpm --filter @acme/api --filter @acme/web test",
            "pnpm --filter @acme/web --filter @acme/api test",
        ),
    ] {
        let summary = summary_of(failed, rerun);
        assert!(passed_later(&summary, failed), "{summary}");
        assert!(!blocked(&summary, failed), "{summary}");
    }
}

/// A count of failures that is zero names no error, in a JSON answer as in a scanner's tally
/// (verify46: ECS's `"failedTasks": 0` listed under Errors after a rollout completed).
#[test]
fn a_zero_count_of_failed_tasks_is_no_error() {
    let rollout = |failed: u32| {
        vec![
            Message::user("check that the staging ECS service rolled out"),
            shell(
                "d1",
                "aws ecs describe-services --cluster staging --services app --query 'services[0].deployments'",
            ),
            Message::tool(
                "d1",
                format!("[\n  {{\n    \"status\": \"PRIMARY\",\n    \"rolloutState\": \"COMPLETED\",\n    \"runningCount\": 3,\n    \"desiredCount\": 3,\n    \"failedTasks\": {failed}\n  }}\n]\n[exit code 0]"),
            ),
            Message::assistant("Rollout checked."),
        ]
    };
    let summary = summarize(&rollout(0));
    assert!(!summary.contains("failedTasks"), "{summary}");
    assert!(!summary.contains("- Errors:"), "{summary}");
    let summary = summarize(&rollout(2));
    assert!(
        standing_errors(&summary).contains("\"failedTasks\": 2"),
        "{summary}"
    );
}

/// A row of a query's result is data the query read, not an error printed (verify46: psql's
/// `3101 | Timeout | RecoveryApplyDelay` rows of `pg_stat_activity` under Errors, 233 of them in
/// one session); an error the client printed after the table still is one.
#[test]
fn a_query_results_rows_are_no_errors() {
    let rows: String = (0..8)
        .map(|n| format!(" 310{n} | Timeout         | RecoveryApplyDelay\n"))
        .collect();
    let table = format!(
        " pid  | wait_event_type |     wait_event\n------+-----------------+--------------------\n 2231 | IO              | WALRead\n{rows}(9 rows)\n"
    );
    let query = |output: String| {
        summarize(&[
            Message::user("why is replay slow on pg-replica-2?"),
            shell(
                "q1",
                "psql -h pg-replica-2 -c 'select pid, wait_event_type, wait_event from pg_stat_activity'",
            ),
            Message::tool("q1", output),
            Message::assistant("Replay waits on WALRead."),
        ])
    };
    let summary = query(table.clone());
    assert!(!summary.contains("- Errors:"), "{summary}");
    assert!(!summary.contains("| Timeout"), "{summary}");
    let summary = query(format!(
        "{table}\nERROR:  canceling statement due to conflict with recovery\n"
    ));
    let blocked = section_lines(&summary, "### Blocked");
    assert!(
        blocked
            .iter()
            .any(|line| line.contains("ERROR:  canceling statement due to conflict with recovery")),
        "{summary}"
    );
    assert!(!summary.contains("| Timeout"), "{summary}");
}

/// An error an earlier run of a command printed and its later run, still failing and read whole,
/// no longer prints was fixed on the way: it is listed under `Errors fixed since:`, and only what
/// the later run prints stands (verify46: DueBadge's TS2345 under Blocked and TS7030 under Errors
/// after the rerun of `pnpm -r typecheck` printed only Tasks.tsx's TS2322). A later output cut
/// short shows nothing of what it no longer prints.
#[test]
fn errors_a_still_failing_rerun_no_longer_prints_are_fixed() {
    let first = "apps/web/src/components/DueBadge.tsx(14,22): error TS2345: Argument of type 'Date | undefined' is not assignable to parameter of type 'Date'.\napps/web/src/pages/Tasks.tsx(88,9): error TS2322: Type 'string | null' is not assignable to type 'string'.\npackages/date-utils/src/format.ts(22,7): error TS7030: Not all code paths return a value.\n\nFound 3 errors in 3 files.\n ELIFECYCLE  Command failed with exit code 2.";
    let rerun = |output: &str| {
        summarize(&[
            Message::user("Make the typecheck pass for DueBadge and date-utils."),
            shell("t1", "pnpm -r typecheck"),
            Message::tool("t1", first),
            shell("a1", "git apply /tmp/fix-duebadge-and-format.patch"),
            Message::tool("a1", ""),
            shell("t2", "pnpm -r typecheck"),
            Message::tool("t2", output),
            Message::assistant("DueBadge.tsx and format.ts now typecheck. Tasks.tsx:88 is out of scope."),
        ])
    };
    let summary = rerun("apps/web/src/pages/Tasks.tsx(88,9): error TS2322: Type 'string | null' is not assignable to type 'string'.\n\nFound 1 error in apps/web/src/pages/Tasks.tsx:88\n ELIFECYCLE  Command failed with exit code 2.");
    let standing = standing_errors(&summary);
    let blocked = section_lines(&summary, "### Blocked").join("\n");
    let fixed = summary.split("- Errors fixed since:").nth(1).unwrap_or_default();
    for gone in ["error TS2345", "error TS7030", "Found 3 errors in 3 files."] {
        assert!(
            !standing.contains(gone) && !blocked.contains(gone),
            "{gone}: {summary}"
        );
    }
    assert!(
        fixed.contains("error TS2345") && fixed.contains("error TS7030"),
        "{summary}"
    );
    assert!(
        blocked.contains("error TS2322") || standing.contains("error TS2322"),
        "{summary}"
    );
    // The rerun's output cut: the earlier errors stand.
    let summary = rerun("apps/web/src/pages/Tasks.tsx(88,9): error TS2322: Type 'string | null' is not assignable to type 'string'.\n…[2000 characters omitted]…\n ELIFECYCLE  Command failed with exit code 2.");
    assert!(!summary.contains("Errors fixed since"), "{summary}");
    let open = format!(
        "{}\n{}",
        standing_errors(&summary),
        section_lines(&summary, "### Blocked").join("\n")
    );
    assert!(open.contains("error TS2345"), "{summary}");
}

/// The common words are found by a binary search: a word out of order would name something.
#[test]
fn the_common_words_are_sorted() {
    let words = crate::summary::extractive::COMMON_WORDS;
    assert!(words.windows(2).all(|pair| pair[0] < pair[1]), "{words:?}");
}

/// A rule given as a list's item is listed without its marker, and `we can add … after all`
/// permits what the rule forbade (verify45: `- - Don't change the schema …` stood under
/// Constraints after `Product just agreed we can add a churn_bucket column to churn_scores.csv`).
#[test]
fn a_listed_rule_loses_its_marker_and_ends_when_permitted() {
    let rules = Message::user(
        "Ground rules for this refactor:\n- Don't change the schema of reports/churn_scores.csv (columns customer_id, score). \
         Downstream Looker reads it.\n- Never commit anything under data/raw/ — it has customer PII.",
    );
    let standing = summarize(&[rules.clone(), Message::assistant("Understood.")]);
    assert_eq!(
        section_lines(&standing, "## Constraints & Preferences"),
        [
            "- Don't change the schema of reports/churn_scores.csv (columns customer_id, score).",
            "- Never commit anything under data/raw/ — it has customer PII."
        ],
        "{standing}"
    );
    let permitted = summarize(&[
        rules,
        Message::assistant("Understood."),
        Message::user(
            "Product just agreed we can add a `churn_bucket` column to churn_scores.csv after all.",
        ),
        Message::assistant("Added."),
    ]);
    assert_eq!(
        section_lines(&permitted, "## Constraints & Preferences"),
        ["- Never commit anything under data/raw/ — it has customer PII."],
        "{permitted}"
    );
}

/// A blocker of a plan a later decision turns down by name goes with the plan: `waiting on infra
/// to provision the SQS queues` stood under Blocked after `Switched to Redis instead of SQS`
/// (verify45).
#[test]
fn a_blocker_of_an_abandoned_plan_goes_with_it() {
    let blocked = Message::assistant(
        "Blocked: I can't create the SQS queues myself (the IAM role has no sqs:CreateQueue), so I'm waiting on \
         infra to provision `shopfront-orders` and `shopfront-notifications`.",
    );
    let standing = summarize(&[
        Message::user("Move our Celery broker from RabbitMQ to Amazon SQS."),
        blocked.clone(),
        Message::user("Ask them, and meanwhile write the docs."),
        Message::assistant("Asked."),
    ]);
    assert_eq!(section_lines(&standing, "### Blocked").len(), 1, "{standing}");
    let abandoned = summarize(&[
        Message::user("Move our Celery broker from RabbitMQ to Amazon SQS."),
        blocked,
        Message::user("Change of plan: go with Redis (ElastiCache) as the broker."),
        Message::assistant("Switched to Redis instead of SQS; the SQS settings are reverted."),
    ]);
    assert_eq!(
        section_lines(&abandoned, "### Blocked"),
        ["- (none)"],
        "{abandoned}"
    );
}

/// A file a command put back as committed is no longer changed, whichever way its path is
/// written; a branch checked out undoes nothing (verify45: `Changed: …/cache.go` stood after
/// `git checkout internal/store/cache.go`).
#[test]
fn a_file_checked_out_again_is_no_longer_changed() {
    let edit = |id: &str, path: &str| {
        vec![
            Message::assistant_calls(vec![ToolCall::new(
                id,
                "edit_file",
                serde_json::json!({"path": path, "old_string": "a", "new_string": "b"}).to_string(),
            )]),
            Message::tool(id, "ok"),
        ]
    };
    let mut middle = vec![Message::user("fix the cache leak")];
    middle.extend(edit("e1", "/home/dev/notifyd/internal/store/cache.go"));
    middle.extend(edit("e2", "internal/api/server.go"));
    middle.push(shell(
        "g1",
        "git checkout main && git checkout -- internal/store/cache.go",
    ));
    middle.push(Message::tool("g1", "Updated 1 path from the index"));
    middle.push(Message::assistant("Reverted cache.go."));
    let summary = summarize(&middle);
    assert!(
        section_lines(&summary, "## Relevant Files").contains(&"- Changed: internal/api/server.go"),
        "{summary}"
    );
    // A folder puts back every file under it.
    middle.push(shell("g2", "git restore internal/"));
    middle.push(Message::tool("g2", ""));
    let summary = summarize(&middle);
    assert!(
        !section_lines(&summary, "## Relevant Files")
            .iter()
            .any(|line| line.starts_with("- Changed:")),
        "{summary}"
    );
}

/// A file printed and nothing else done ranks below the other work, in a middle and carried: a
/// replay's folds had lost a smoke test that passed, and the check that its broker answered, to
/// the newest `cat docs/notes-N.txt` (verify45).
#[test]
fn files_printed_give_way_to_the_work_done() {
    let notes = |from: usize, to: usize| -> Vec<Message> {
        let mut messages = Vec::new();
        for at in from..to {
            let id = format!("n{at}");
            messages.push(shell(&id, &format!("cat docs/notes-{at}.txt")));
            let text: String = (0..40)
                .map(|line| format!("note {line}: nothing of interest here, just filler text for volume\n"))
                .collect();
            messages.push(Message::tool(&id, text));
        }
        messages
    };
    let mut middle = vec![
        Message::user("INFRA-2231 is done. Try the smoke test again."),
        shell(
            "nc",
            "nc -vz -w 5 shopfront-broker.x7k2pq.euw1.cache.amazonaws.com 6379",
        ),
        Message::tool(
            "nc",
            "Connection to shopfront-broker.x7k2pq.euw1.cache.amazonaws.com 6379 port [tcp/*] succeeded!",
        ),
        shell(
            "smoke",
            "celery -A shopfront worker -Q orders -l info 2>&1 | tail -1",
        ),
        Message::tool(
            "smoke",
            "[2025-11-20 14:10:01,000: INFO/MainProcess] Smoke: 55 tasks, 0 failures",
        ),
        Message::user("Push the branch and open the PR."),
    ];
    middle.extend(notes(0, 9));
    let done_work = |summary: &str| {
        let done = section_lines(summary, "### Done");
        ["nc -vz", "celery -A shopfront"]
            .iter()
            .all(|command| done.iter().any(|line| line.contains(command)))
    };
    let first = summarize_within(&middle, None, 1_200, 8_000);
    assert!(done_work(&first), "{first}");
    // Folded into the next summary, the work outranks the new middle's files printed.
    let folded = summarize_within(&notes(9, 18), Some(&first), 1_200, 8_000);
    assert!(done_work(&folded), "{folded}");
    // And those carried again.
    let again = summarize_within(&notes(18, 27), Some(&folded), 1_200, 8_000);
    assert!(done_work(&again), "{again}");
    // The newest file printed is still told, as the work in progress.
    assert!(
        section_lines(&again, "### In Progress")
            .iter()
            .any(|line| line.contains("cat docs/notes-26.txt")),
        "{again}"
    );
}

/// A file a command edits in place (`sed -i`, `perl -pi`) is changed, though the command that
/// names it is listed whole: the files had been in no list (verify47).
#[test]
fn files_edited_in_place_are_changed() {
    let middle = [
        Message::user("Replace the unwrap() calls in the TLS connector and bump the pool size to 64."),
        shell(
            "sed",
            "sed -i 's/unwrap()/expect(\"tls handshake\")/g' crates/pgpool/src/net/tls.rs && grep -c expect crates/pgpool/src/net/tls.rs",
        ),
        Message::tool("sed", "4"),
        shell("perl", "perl -pi -e 's/max_size: 32/max_size: 64/' crates/pgpool/src/config.rs"),
        Message::tool("perl", ""),
        shell("cat", "sed -n '1,20p' crates/pgpool/src/lib.rs"),
        Message::tool("cat", "pub mod config;\npub mod net;\npub mod pool;"),
        Message::assistant("Done: tls.rs uses expect() now and the default max_size is 64."),
    ];
    let summary = summarize(&middle);
    assert_eq!(
        files_line(&summary, "Changed:"),
        "- Changed: crates/pgpool/src/config.rs, crates/pgpool/src/net/tls.rs",
        "{summary}"
    );
    // A file printed is not changed (`sed -n`).
    assert!(!files_line(&summary, "Changed:").contains("lib.rs"), "{summary}");
}

/// A listing's row whose state column says `failed` is an old run's history, not the failure of
/// the command that listed it (verify47: the manual run of `orders_daily` had succeeded, and a
/// scheduled run of two days before stood under Blocked).
#[test]
fn a_listings_failed_row_blocks_nothing() {
    let middle = [
        Message::user("orders_daily is fixed and merged; trigger the DAG once and check it."),
        shell(
            "runs",
            "airflow dags trigger orders_daily && sleep 600 && airflow dags list-runs -d orders_daily | head -4",
        ),
        Message::tool(
            "runs",
            "dag_id       | run_id                                | state   | execution_date\n=============+=======================================+=========+==========================\norders_daily | manual__2026-04-05T09:44:02+00:00     | success | 2026-04-05T09:44:02+00:00\norders_daily | scheduled__2026-04-03T02:00:00+00:00  | failed  | 2026-04-03T02:00:00+00:00",
        ),
        Message::assistant("The manual run manual__2026-04-05T09:44:02+00:00 succeeded."),
    ];
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
    assert!(!summary.contains("- Errors:"), "{summary}");
}

/// An error line that ends in a colon is said with the line after it, which says what failed; and
/// `Cannot find module …` is an error line: the headers had been listed and the causes lost
/// (verify47).
#[test]
fn an_error_header_is_listed_with_what_it_introduces() {
    let middle = [
        Message::user("The orders DAG fails in dbt_run, and the admin UI build fails too. Look at both."),
        shell("dbt", "dbt build --select +fct_orders --target dev"),
        Message::tool(
            "dbt",
            "02:55:01  Running with dbt=1.7.11\n02:55:14  Database Error in model fct_orders (models/marts/fct_orders.sql)\n02:55:14    002003 (42S02): SQL compilation error:\n02:55:14    Object 'RAW.SHOP.ORDER_ITEMS' does not exist or not authorized.\n02:55:15  Done. PASS=1 WARN=0 ERROR=1 SKIP=3 TOTAL=5\n[exit code 1]",
        ),
        shell("vite", "npx vite build"),
        Message::tool(
            "vite",
            "vite v5.4.10 building for production...\nx Build failed in 2.31s\nerror during build:\n[vite:css] [postcss] Cannot find module 'postcss-nested'\n[exit code 1]",
        ),
    ];
    let summary = summarize(&middle);
    assert!(
        summary.contains(
            "02:55:14    002003 (42S02): SQL compilation error: Object 'RAW.SHOP.ORDER_ITEMS' does not exist or not authorized."
        ),
        "{summary}"
    );
    assert!(
        summary.contains("[vite:css] [postcss] Cannot find module 'postcss-nested'"),
        "{summary}"
    );
}

/// A file printed as a revision holds it (`git show REV:path`, trimmed by `sed -n`) is a file's
/// text: its `Result<Conn, PoolError>` is no error printed (verify47: listed under Errors).
#[test]
fn a_file_shown_at_a_revision_prints_no_errors() {
    let middle = [
        Message::user("Does release/0.10 have the same lock-order bug in pgpool?"),
        shell("show", "git show release/0.10:crates/pgpool/src/inner.rs | sed -n 35,42p"),
        Message::tool(
            "show",
            "    pub(crate) async fn acquire(&self) -> Result<Conn, PoolError> {\n        let mut w = self.waiters.lock().unwrap();\n        let permit = self.sem.acquire().await?;\n    }",
        ),
        Message::assistant("Yes — release/0.10 holds `waiters` across the await too (inner.rs:36)."),
    ];
    let summary = summarize(&middle);
    assert!(!summary.contains("- Errors:"), "{summary}");
    assert_eq!(section_lines(&summary, "### Blocked"), ["- (none)"], "{summary}");
}

/// A reversal that points back (`Reversing the earlier decision: …`, `Reverting that: …`) replaces
/// the decision it reverses, in the middle and when an earlier summary carried it, by the name
/// it drops or keeps: the reversed record stood under Key Decisions as the current one (verify47:
/// a pool kept `switch … to tokio::sync::Mutex` after `we will NOT use tokio::sync::Mutex`, a
/// Vite migration `rename REACT_APP_* env vars` after `we keep REACT_APP_API_URL`).
#[test]
fn a_reversed_decision_gives_way_to_its_reversal() {
    let decided = [
        Message::user("The pool deadlocks under load, please fix it in crates/pool/src/inner.rs."),
        Message::assistant(
            "Decision: switch `waiters` to `tokio::sync::Mutex` so holding it across `.await` is safe.",
        ),
    ];
    let reversal = Message::assistant(
        "Yes. Reversing the earlier decision: we will NOT use tokio::sync::Mutex. Decision now: keep std::sync::Mutex, but never hold a guard across an await.",
    );
    let current = [
        "- Reversing the earlier decision: we will NOT use tokio::sync::Mutex. Decision now: keep std::sync::Mutex, but never hold a guard across an await.",
        "- (1 earlier record was replaced by the revisions listed here)",
    ];
    let mut middle = decided.to_vec();
    middle.push(Message::user(
        "18% slower on acquire is not acceptable. Is there a way without it?",
    ));
    middle.push(reversal.clone());
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "## Key Decisions"), current, "{summary}");
    // Nor is it quoted as what the first request got.
    assert!(!summary.contains("Decision: switch"), "{summary}");
    // The decision carried by an earlier summary.
    let first = summarize(&decided);
    assert!(first.contains("- Decision: switch `waiters`"), "{first}");
    let folded = summarize_before(&[reversal], Some(&first), false, None);
    assert_eq!(section_lines(&folded, "## Key Decisions"), current, "{folded}");
    assert!(!folded.contains("Decision: switch"), "{folded}");
    // A reversal that names what it keeps, matched by the pattern the record named.
    let renamed = [
        Message::user("Migrate the app from CRA to Vite."),
        Message::assistant(
            "Decision: rename REACT_APP_* env vars to VITE_* and read them via import.meta.env.",
        ),
    ];
    let kept = Message::assistant(
        "Reverting that: we keep REACT_APP_API_URL. Instead set envPrefix: ['VITE_', 'REACT_APP_'] in vite.config.js.",
    );
    let current = [
        "- Reverting that: we keep REACT_APP_API_URL. Instead set envPrefix: ['VITE_', 'REACT_APP_'] in vite.config.js.",
        "- (1 earlier record was replaced by the revisions listed here)",
    ];
    let mut middle = renamed.to_vec();
    middle.push(kept.clone());
    let summary = summarize(&middle);
    assert_eq!(section_lines(&summary, "## Key Decisions"), current, "{summary}");
    assert!(!summary.contains("Decision: rename"), "{summary}");
    let first = summarize(&renamed);
    let folded = summarize_before(&[kept], Some(&first), false, None);
    assert_eq!(section_lines(&folded, "## Key Decisions"), current, "{folded}");
    assert!(!folded.contains("Decision: rename"), "{folded}");
}

/// What the assistant said blocks the work goes once the user says they cleared it, in their next
/// message, though it names less of the blocker than a later lift must (`I released the lock,
/// try again` after `… is locked by a stale apply`): it stood under Blocked through the plan and
/// the apply that followed (verify47).
#[test]
fn a_blocker_the_user_cleared_in_reply_is_not_blocked() {
    let blocked = "Stated by the assistant: Migrations are blocked";
    let middle = |reply: &str| {
        vec![
            Message::user("Run the pending migrations on staging."),
            shell("m1", "./manage.py migrate --database staging"),
            failed_result(
                "m1",
                "django.db.utils.OperationalError: could not obtain lock on relation \"django_migrations\"",
            ),
            Message::assistant(
                "Migrations are blocked: django_migrations is locked by a stale deploy on web-03. Someone with shell access there has to kill it.",
            ),
            Message::user(reply),
            shell("m2", "./manage.py migrate --database staging"),
            Message::tool("m2", "Applying orders.0042_add_index... OK"),
            Message::assistant("Migrations applied: orders.0042."),
        ]
    };
    for reply in [
        "I released the lock and killed the stale deploy on web-03, run the migrations again",
        "I released the lock, try again",
    ] {
        let summary = summarize(&middle(reply));
        assert!(
            !section_lines(&summary, "### Blocked")
                .iter()
                .any(|line| line.contains(blocked)),
            "{summary}"
        );
    }
    // A lift as short, said later about something else, is no reply to it.
    let mut later = middle("Thanks, keep going.");
    later.truncate(4);
    later.push(Message::user("Tag the release meanwhile."));
    later.push(Message::assistant("Tagged v2.3.0."));
    later.push(Message::user("I released the hotfix lock, try again"));
    let summary = summarize(&later);
    assert!(
        section_lines(&summary, "### Blocked")
            .iter()
            .any(|line| line.contains(blocked)),
        "{summary}"
    );
}

/// A message that only gives rules is answered by the reply that acknowledges them, not by a later
/// status of the earlier work; and a rule bounded in time (`no more deploys today`, `code freeze
/// until Friday`) is listed with the rule said before it (verify47: `… change freeze until 18:00
/// UTC.` was given `Atlantis plan is blocked: …` as its answer, and lost from Constraints).
#[test]
fn rules_given_are_answered_by_their_acknowledgement_and_all_listed() {
    let middle = [
        Message::user("The checkout service returns 502s on /pay; find out why."),
        shell("g1", "git status"),
        Message::tool("g1", "On branch main\nnothing to commit, working tree clean"),
        Message::user(
            "ok. Never push to main yourself — only through a PR. Also no more deploys to staging today, code freeze until Friday 12:00.",
        ),
        Message::assistant("Understood: PRs only, no pushes to main; no staging deploys until the freeze ends."),
        shell("g2", "kubectl -n checkout logs deploy/checkout --tail=50"),
        Message::tool("g2", "upstream connect error or disconnect/reset before headers"),
        Message::assistant("The 502s come from the envoy sidecar resetting the upstream; looking at its config next."),
    ];
    let summary = summarize_before(&middle, None, true, None);
    assert!(
        summary.contains(
            "- Its answer: Understood: PRs only, no pushes to main; no staging deploys until the freeze ends."
        ),
        "{summary}"
    );
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        [
            "- Never push to main yourself — only through a PR.",
            "- Also no more deploys to staging today, code freeze until Friday 12:00."
        ],
        "{summary}"
    );
    // `No more` that tells what happened is no rule.
    let said = [
        Message::user("Restart the worker. No more errors in the log since the fix, by the way."),
        Message::assistant("Restarted."),
    ];
    let summary = summarize(&said);
    assert_eq!(
        section_lines(&summary, "## Constraints & Preferences"),
        ["- (none)"],
        "{summary}"
    );
}

/// Ids made of hex parts (a task's UUID, a pod's name) are listed as ids, apart from the commits'
/// hashes: a model reading them under `Hashes:` would take them for commits (verify45: Celery
/// task UUIDs, verify47: pod names, both under Hashes beside the deploy's commit).
#[test]
fn ids_of_hex_parts_are_listed_apart_from_hashes() {
    let pods: String = (0..6)
        .map(|n| {
            format!(
                "checkout-api-7d9f8c6b5-{:05x}   0/1     CrashLoopBackOff   7          41m\n",
                0xb6589 + n * 977
            )
        })
        .collect();
    let tasks: String = (0..4)
        .map(|n| {
            format!(
                "Task orders.reserve_stock[4462ebfc-5f91-5ef0-9cfb-ac6e7687a6{n:02x}] succeeded in 0.01s\n"
            )
        })
        .collect();
    let middle = vec![
        Message::user("checkout-api is crashlooping in payments. Look."),
        shell("g1", "git log --oneline -3"),
        Message::tool(
            "g1",
            "5f0c2a9 payments: read the gateway URL from the secret\n1b64538 ci: pin node\n9e3d2c1 init",
        ),
        shell("p1", "kubectl get pods -n payments -l app=checkout-api"),
        Message::tool(
            "p1",
            format!("NAME                              READY   STATUS             RESTARTS   AGE\n{pods}"),
        ),
        shell("c1", "celery -A shopfront events --dump | head -4"),
        Message::tool("c1", tasks),
        Message::assistant("All pods of the replicaset crashloop."),
    ];
    let summary = summarize(&middle);
    let line = |label: &str| summary.lines().find(|line| line.starts_with(label)).unwrap_or("");
    assert!(line("- Hashes:").contains("5f0c2a9"), "{summary}");
    assert!(
        !line("- Hashes:").get(2..).unwrap_or("").contains('-'),
        "{summary}"
    );
    assert!(
        line("- Ids:").contains("checkout-api-7d9f8c6b5-b6589"),
        "{summary}"
    );
    assert!(
        line("- Ids:").contains("4462ebfc-5f91-5ef0-9cfb-ac6e7687a600"),
        "{summary}"
    );
    // Read back from an earlier summary, they stay apart.
    let folded = summarize_before(
        &[Message::user("Roll back the deploy.")],
        Some(&summary),
        false,
        None,
    );
    let line = |label: &str| folded.lines().find(|line| line.starts_with(label)).unwrap_or("");
    assert!(
        !line("- Hashes:").get(2..).unwrap_or("").contains('-'),
        "{folded}"
    );
    assert!(
        line("- Ids:").contains("checkout-api-7d9f8c6b5-b6589"),
        "{folded}"
    );
}

/// A decision an agent states inline, after a semicolon or a dash, is a Key Decision in its own
/// words: after `…is a separate feature; decision: …` Key Decisions was `(none)` and the
/// sentence in no summary (verify48).
#[test]
fn a_decision_stated_after_a_semicolon_or_a_dash_is_a_key_decision() {
    let middle = vec![
        Message::user("Fix #88: trailing slashes break the router."),
        shell("r1", "python repro.py"),
        Message::tool("r1", "/a/ ok\n/b// ERROR ValueError: empty segment"),
        Message::assistant(
            "Single slashes now work. Doubled ones are another bug; decision: keep rejecting empty segments in this fix, tracked as #90.",
        ),
        Message::assistant("The router test passes - decision: no new config flag for it."),
    ];
    let summary = summarize(&middle);
    let decisions = section_lines(&summary, "## Key Decisions").join("\n");
    assert!(
        decisions.contains("decision: keep rejecting empty segments in this fix, tracked as #90."),
        "{summary}"
    );
    assert!(
        decisions.contains("decision: no new config flag for it."),
        "{summary}"
    );
}

/// A request an earlier summary quoted and the new middle quotes again (kept after the head last
/// time, summarised now) is listed once, with its answer: it stood bare beside its answered self
/// (verify48).
#[test]
fn a_request_quoted_again_is_listed_once_with_its_answer() {
    let question = "quick question — is the Next.js one (GHSA-f82v-jwr5-mffw) actually exploitable for us? we only use middleware for i18n redirects";
    let first = summarize_before(
        &[
            Message::user("Audit the deps."),
            shell("a", "npm audit"),
            Message::tool("a", "GHSA-f82v-jwr5-mffw next"),
        ],
        None,
        true,
        None,
    );
    let previous = first.replace(
        "## Goal\n",
        &format!("## Goal\n- Latest request before the next: {question}\n"),
    );
    let middle = vec![
        Message::user(question),
        shell("r", "rg -n 'middleware|matcher' web/src/middleware.ts"),
        Message::tool("r", "web/src/middleware.ts:1:import { NextResponse } from 'next/server'"),
        Message::assistant("Low exposure: our middleware only does i18n redirects and auth is enforced in the layout, so bypassing it skips no auth."),
        Message::user("ok how much work is the fastapi upgrade?"),
        Message::assistant("About 1–2 days: lifespan handlers and the pydantic v2 settings in 9 modules."),
    ];
    let folded = summarize_before(&middle, Some(&previous), true, None);
    let goal = section_lines(&folded, "## Goal");
    assert_eq!(
        goal.iter()
            .filter(|line| line.contains("is the Next.js one"))
            .count(),
        1,
        "{folded}"
    );
    assert!(
        goal.iter()
            .any(|line| line.starts_with("- Its answer: Low exposure")),
        "{folded}"
    );
}
