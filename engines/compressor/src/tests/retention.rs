//! Fact retention: how much of the middle's paths, commands, errors, URLs, identifiers and user
//! requests survive verbatim in the summary.

use std::borrow::Cow;

use ctxhost_engine_abi::{Message, ModelInfo, Role};
use ctxhost_engine_kit::tokens::estimate_messages_tokens;
use pretty_assertions::assert_eq;

use super::{compress, middle_facts, report, retention, story::debugging_session, summary_of};
use crate::{
    report::Outcome, Budgets, Compressor, CompressorConfig, ExtractiveSummarizer, Summarizer, SummaryRequest,
};
use ctxhost_engine_abi::Engine;

/// The story's middle with the default head (system + 3, moved past the first tool result) and the
/// tail starting at the last user message.
fn story_middle(messages: &[Message]) -> &[Message] {
    let tail_start = messages
        .iter()
        .rposition(|message| message.role == Role::User)
        .unwrap();
    &messages[5..tail_start]
}

fn summarise_at_default_budgets(middle: &[Message], focus_topic: Option<&str>) -> String {
    let budgets = Budgets::compute(
        &CompressorConfig::default(),
        &ModelInfo {
            context_length: 200_000,
            ..ModelInfo::default()
        },
    );
    let input_tokens = estimate_messages_tokens(middle);
    let pruned: Vec<Cow<'_, Message>> = middle.iter().map(Cow::Borrowed).collect();
    let request = SummaryRequest {
        middle,
        pruned_middle: &pruned,
        previous_summary: None,
        focus_topic,
        target_tokens: budgets.summary_target_tokens(input_tokens),
        input_tokens,
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    ExtractiveSummarizer.summarize(&request).unwrap()
}

#[test]
fn the_extractive_summary_keeps_at_least_80_percent_of_the_middles_facts() {
    let messages = debugging_session();
    let middle = story_middle(&messages);
    let summary = summarise_at_default_budgets(middle, None);
    let facts = middle_facts(middle);
    let (share, missing) = retention(&facts, &summary);
    assert!(facts.len() >= 40, "the story has {} facts", facts.len());
    assert!(
        share >= 0.8,
        "kept {share:.2} of {} facts; missing: {missing:#?}\n{summary}",
        facts.len()
    );
}

#[test]
fn the_summary_keeps_the_users_requests_constraints_errors_and_next_step() {
    let messages = debugging_session();
    let summary = summarise_at_default_budgets(story_middle(&messages), None);
    for expected in [
        "Don't change the public API of /api/login, clients depend on it.",
        "always run pytest before you tell me it's done",
        "AttributeError: 'SecureCookieSession' object has no attribute 'modified_at'",
        "KeyError: 'login_at'",
        "https://github.com/acme/shop/issues/482",
        "python -m pytest -q tests/test_auth.py",
        "3fa85c0",
        "shop/middleware/audit.py",
        "werkzeug==2.3.7",
    ] {
        assert!(summary.contains(expected), "missing {expected:?} in\n{summary}");
    }
    let headings: Vec<&str> = summary.lines().filter(|line| line.starts_with('#')).collect();
    assert_eq!(headings, crate::summary::TEMPLATE_HEADINGS.to_vec());
}

#[test]
fn a_compacted_story_keeps_its_facts_in_summary_and_tail() {
    // Threshold 8,000 tokens and a tail of 800: most of the story is summarised.
    let mut engine = Compressor::with_config(CompressorConfig {
        threshold: 0.20,
        target_ratio: 0.10,
        protect_last_n: 4,
        ..CompressorConfig::default()
    });
    engine.update_model(&ModelInfo {
        context_length: 40_000,
        ..ModelInfo::default()
    });
    let messages = debugging_session();
    let facts = middle_facts(story_middle(&messages));
    let compacted = compress(&mut engine, messages);
    let report = report(&mut engine);
    assert_eq!(report.outcome, Outcome::Compacted);
    assert!(report.middle_messages >= 20, "{report:?}");
    let everything: String = compacted
        .iter()
        .flat_map(|message| {
            let calls = message.calls().iter().map(|call| call.function.arguments.clone());
            std::iter::once(message.text().into_owned()).chain(calls)
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(summary_of(&compacted).starts_with(crate::SUMMARY_MARKER));
    let (share, missing) = retention(&facts, &everything);
    assert!(share >= 0.8, "kept {share:.2}; missing: {missing:#?}");
}

#[test]
fn a_focus_topic_gets_most_of_a_tight_budget() {
    let messages = debugging_session();
    let middle = story_middle(&messages);
    let pruned: Vec<Cow<'_, Message>> = middle.iter().map(Cow::Borrowed).collect();
    let request = |focus_topic| SummaryRequest {
        middle,
        pruned_middle: &pruned,
        previous_summary: None,
        focus_topic,
        target_tokens: 370,
        input_tokens: estimate_messages_tokens(middle),
        request_follows: false,
        pinned_request_at: None,
        pinned_request: None,
        tail: &[],
        head_request: None,
    };
    let count = |summary: &str, word: &str| summary.lines().filter(|line| line.contains(word)).count();
    let plain = ExtractiveSummarizer.summarize(&request(None)).unwrap();
    let focused = ExtractiveSummarizer.summarize(&request(Some("mypy"))).unwrap();
    assert!(focused.contains("Focus: mypy"));
    assert!(
        count(&focused, "mypy") > count(&plain, "mypy"),
        "plain:\n{plain}\n\nfocused:\n{focused}"
    );
    // What mypy printed and what its run concluded, both.
    assert!(
        focused.contains("Value of type \"SessionMixin\" is not indexable"),
        "{focused}"
    );
    assert!(focused.contains("- Its answer: mypy is clean"), "{focused}");
}

#[test]
fn commands_given_as_argument_lists_are_listed_as_the_commands_that_ran() {
    // Codex's `shell` tool: `{"command": ["bash", "-lc", "…"]}`, its output JSON with the exit code
    // under `metadata`. The same session with the commands as text is the yardstick.
    let scripts = [
        "cargo clippy -p ledger-core --all-targets -- -D warnings",
        "sed -n 80,100p crates/ledger-core/src/posting.rs",
        "cargo test -p ledger-core balance::",
    ];
    let session = |command: &dyn Fn(&str) -> serde_json::Value| {
        let mut middle = vec![Message::user(
            "Fix the clippy warnings in crates/ledger-core, please.",
        )];
        for (n, script) in scripts.into_iter().enumerate() {
            let id = format!("call_{n}");
            let arguments = serde_json::json!({"command": command(script), "workdir": "/home/dev/ledger"});
            middle.push(Message::assistant_calls(vec![ctxhost_engine_abi::ToolCall::new(
                &id,
                "shell",
                arguments.to_string(),
            )]));
            let output = serde_json::json!({"output": format!("step {n}\nwarning: unused import"), "metadata": {"exit_code": 0}});
            middle.push(Message::tool(&id, output.to_string()));
            middle.push(Message::assistant(format!(
                "Step {n} done; going on with the next one."
            )));
        }
        summarise_at_default_budgets(&middle, None)
    };
    let as_text = session(&|script| serde_json::json!(script));
    let as_list = session(&|script| serde_json::json!(["bash", "-lc", script]));
    for script in scripts {
        assert!(as_text.contains(script), "missing {script:?} in\n{as_text}");
        assert!(as_list.contains(script), "missing {script:?} in\n{as_list}");
    }
}

#[test]
fn a_file_an_editor_viewed_is_read_not_changed() {
    // OpenHands's and SWE-agent's `str_replace_editor` views a file with `command: "view"`.
    let mut middle = vec![Message::user("The ISO week tests fail; please fix them.")];
    for n in 0..6 {
        let path = format!("/workspace/src/dateparse/part{n}.py");
        let id = format!("toolu_{n}");
        let view = serde_json::json!({"command": "view", "path": path});
        middle.push(Message::assistant_calls(vec![ctxhost_engine_abi::ToolCall::new(
            &id,
            "str_replace_editor",
            view.to_string(),
        )]));
        let lines: String = (1..=40)
            .map(|line| format!("{line:6}\tvalue_{line} = parse_week(text, {line})\n"))
            .collect();
        middle.push(Message::tool(
            &id,
            format!("Here's the result of running `cat -n` on {path}:\n{lines}"),
        ));
        middle.push(Message::assistant(format!("Part {n} mixes %W with %w.")));
    }
    let summary = summarise_at_default_budgets(&middle, None);
    assert!(
        summary.contains("read /workspace/src/dateparse/part0.py"),
        "the view is a read:\n{summary}"
    );
    assert!(!summary.contains("changed"), "a view is not a change:\n{summary}");
}
