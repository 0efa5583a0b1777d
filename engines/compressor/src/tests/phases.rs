//! The four phases as a user sees them: what is kept verbatim, where the boundaries fall, what
//! comes back valid, and when nothing is done.

use ctxhost_engine_abi::{Message, Role, ToolCall};
use ctxhost_engine_kit::{sequence::REMOVED_RESULT_TEXT, tokens::estimate_messages_tokens};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{assert_valid, compress, engine, long_conversation, report, shell, text_of, SMALL_WINDOW};
use crate::{report::Outcome, SUMMARY_MARKER, SYSTEM_NOTE};
use ctxhost_engine_abi::Engine;

#[test]
fn head_and_tail_are_kept_verbatim_and_the_middle_becomes_one_summary() {
    let mut engine = engine(SMALL_WINDOW, 2, 4);
    let messages = long_conversation(20, 400);
    let compacted = compress(&mut engine, messages.clone());
    let report = report(&mut engine);
    assert_eq!(report.outcome, Outcome::Compacted);
    assert_eq!(
        compacted[0].text(),
        format!("You are a coding agent.\n\n{SYSTEM_NOTE}")
    );
    // System + 2 messages, moved past the results of the second one's call.
    let head = report.head_messages;
    assert_eq!(head, 4);
    assert_eq!(compacted[1..head], messages[1..head], "the protected head");
    assert!(compacted[head].text().starts_with(SUMMARY_MARKER));
    let tail = report.tail_messages;
    assert_eq!(
        compacted[compacted.len() - tail..],
        messages[messages.len() - tail..],
        "the tail"
    );
    assert_eq!(compacted.len(), head + 1 + tail);
    assert_valid(&compacted);
}

#[test]
fn tool_groups_are_never_split_at_either_boundary() {
    // protect_first_n = 2 ends the head on an assistant's call; the tail budget ends inside a group.
    let mut messages = vec![Message::system("s"), Message::user("go")];
    messages.push(Message::assistant_calls(vec![
        ToolCall::new("h1", "terminal", r#"{"command":"ls"}"#),
        ToolCall::new("h2", "terminal", r#"{"command":"pwd"}"#),
    ]));
    messages.push(Message::tool("h1", "a\nb"));
    messages.push(Message::tool("h2", "/srv"));
    messages.extend(long_conversation(20, 400).into_iter().skip(1));
    messages.push(Message::assistant_calls(vec![
        ToolCall::new("t1", "read_file", r#"{"path":"a.rs"}"#),
        ToolCall::new("t2", "read_file", r#"{"path":"b.rs"}"#),
    ]));
    messages.push(Message::tool("t1", "x".repeat(1_500)));
    messages.push(Message::tool("t2", "y".repeat(1_500)));
    let mut engine = engine(SMALL_WINDOW, 2, 2);
    let compacted = compress(&mut engine, messages.clone());
    assert_valid(&compacted);
    assert_eq!(
        compacted[1..5],
        messages[1..5],
        "the head takes its assistant's results along"
    );
    let tail = report(&mut engine).tail_messages;
    assert!(tail >= 3, "the last group comes whole: {tail}");
    assert_eq!(compacted[compacted.len() - 3..], messages[messages.len() - 3..]);
}

#[test]
fn orphaned_results_and_unanswered_calls_are_repaired() {
    let mut messages = long_conversation(20, 400);
    // An orphan in the tail and an assistant whose result is missing at the very end.
    let at = messages.len() - 2;
    messages.insert(at, Message::tool("ghost", "nobody asked"));
    messages.push(shell("dangling", "make"));
    let mut engine = engine(SMALL_WINDOW, 1, 6);
    let compacted = compress(&mut engine, messages);
    assert_valid(&compacted);
    assert!(!compacted
        .iter()
        .any(|m| m.tool_call_id.as_deref() == Some("ghost")));
    let stub = compacted.last().unwrap();
    assert_eq!(
        (stub.tool_call_id.as_deref(), stub.text().as_ref()),
        (Some("dangling"), REMOVED_RESULT_TEXT)
    );
}

#[test]
fn compaction_gets_under_the_threshold_even_when_protect_last_n_protects_too_much() {
    let mut engine = engine(SMALL_WINDOW, 1, 200);
    let messages = long_conversation(20, 400);
    assert!(estimate_messages_tokens(&messages) > 4_000);
    let compacted = compress(&mut engine, messages);
    let after = estimate_messages_tokens(&compacted);
    assert!(after < 4_000, "still {after} tokens");
    assert_valid(&compacted);
}

#[test]
fn the_last_user_message_is_never_lost_even_when_it_is_huge() {
    let mut engine = engine(SMALL_WINDOW, 1, 2);
    let mut messages = long_conversation(20, 400);
    let huge = format!(
        "Here is the whole log, please read it:\n{}",
        "log line\n".repeat(3_000)
    );
    messages.push(Message::user(huge.clone()));
    messages.push(shell("late", "cat log"));
    messages.push(Message::tool("late", "ok"));
    let compacted = compress(&mut engine, messages);
    assert_eq!(report(&mut engine).outcome, Outcome::Compacted);
    let last_user = compacted.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert_eq!(last_user.text(), huge);
    assert_valid(&compacted);
}

#[test]
fn the_last_user_message_is_pinned_after_the_head_when_the_work_after_it_outgrows_the_tail() {
    // The user asked once, right after the head; everything after it is the agent's work, far more
    // than the tail may hold. The request stays verbatim, just before the summary of the work.
    let request = "Refactor the parser, then run the tests.";
    let mut messages = vec![
        Message::system("s"),
        Message::user("first"),
        Message::assistant("ok"),
    ];
    messages.push(Message::user(request));
    for n in 0..40 {
        messages.push(shell(&format!("c{n}"), "cargo test"));
        messages.push(Message::tool(
            format!("c{n}"),
            format!("test {n} result: FAILED\n").repeat(20),
        ));
    }
    let mut engine = engine(SMALL_WINDOW, 2, 4);
    let compacted = compress(&mut engine, messages.clone());
    assert_eq!(report(&mut engine).outcome, Outcome::Compacted);
    let pinned = compacted
        .iter()
        .position(|m| m.text() == request)
        .expect("the request is kept");
    assert_eq!(compacted[pinned].role, Role::User);
    assert!(
        compacted[pinned + 1].text().starts_with(SUMMARY_MARKER),
        "the summary follows the request: {:?}",
        compacted[pinned + 1]
    );
    assert!(
        compacted.len() < messages.len() / 2,
        "{} messages left",
        compacted.len()
    );
    assert_eq!(compacted[compacted.len() - 4..], messages[messages.len() - 4..]);
    assert_valid(&compacted);

    // The next compaction finds the request where the last one left it, and keeps it again.
    let mut longer = compacted;
    for n in 40..80 {
        longer.push(shell(&format!("c{n}"), "cargo test"));
        longer.push(Message::tool(
            format!("c{n}"),
            format!("test {n} result: FAILED\n").repeat(20),
        ));
    }
    let again = compress(&mut engine, longer.clone());
    assert_eq!(report(&mut engine).outcome, Outcome::Compacted);
    assert_eq!(again.iter().filter(|m| m.text() == request).count(), 1);
    assert!(again.len() < longer.len() / 2);
    assert_valid(&again);
}

/// The output the agent has just read, too big for any tail (a log of four times the window),
/// is summarised with the middle and kept after the summary cut to its start and its end: the
/// agent still reads its first lines and the error that closes it, under the call that made it
/// (verify37: the call and the log were summarised away, the error line quoted cut mid-line).
#[test]
fn an_output_too_big_for_any_tail_stays_cut_to_its_start_and_end() {
    let mut messages = long_conversation(10, 400);
    let request = "Prod is throwing 500s. Pull the worker logs and tell me what is wrong.";
    messages.push(Message::user(request));
    messages.push(shell("logs", "kubectl logs deploy/worker -n prod --since=15m"));
    let mut log: String = (0..900)
        .map(|n| {
            format!(
                "16:{:02}:{:02} [INFO] worker pid=41{n:03} latency_ms={n} req=req_{n:06x}\n",
                n / 60,
                n % 60
            )
        })
        .collect();
    let error = "16:15:01 [ERROR] worker pid=4411 OperationalError: remaining connection slots are reserved for roles with the SUPERUSER attribute";
    log.push_str(error);
    messages.push(Message::tool("logs", log.clone()));
    let mut engine = engine(SMALL_WINDOW, 2, 4);
    let compacted = compress(&mut engine, messages.clone());
    let report = report(&mut engine);
    assert_eq!((report.outcome, report.cut_outputs), (Outcome::Compacted, 1));
    assert_valid(&compacted);
    assert!(estimate_messages_tokens(&compacted) < SMALL_WINDOW / 2);
    // The call as it was, then its output: the first line, the error, and what was cut between.
    let (call, output) = (&compacted[compacted.len() - 2], compacted.last().unwrap());
    assert_eq!(call.tool_calls, messages[messages.len() - 2].tool_calls);
    assert_eq!(output.tool_call_id.as_deref(), Some("logs"));
    let text = output.text();
    assert!(text.starts_with(log.lines().next().unwrap()), "{text}");
    assert!(text.ends_with(&format!("\n{error}")), "{text}");
    assert!(
        text.lines().any(|line| line.starts_with("[… ")
            && line.contains(" lines (")
            && line.contains("cut by context compaction")),
        "{text}"
    );
    assert!(text.len() < log.len() / 5);
    // Every kept line is whole.
    assert!(
        text.lines()
            .all(|line| line.starts_with("16:") || line.starts_with("[… ")),
        "{text}"
    );
    // The request stays, and the summary before the output holds its error.
    assert!(compacted.iter().any(|message| message.text() == request));
    let summary = compacted
        .iter()
        .map(|message| message.text())
        .find(|text| text.starts_with(SUMMARY_MARKER))
        .unwrap();
    assert!(
        summary.contains("remaining connection slots are reserved"),
        "{summary}"
    );
}

/// A newest output the tail holds is kept whole: only one no tail can hold is cut.
#[test]
fn a_newest_output_the_tail_holds_is_not_cut() {
    let mut messages = long_conversation(20, 400);
    messages.push(shell("small", "tail -n 40 worker.log"));
    let log = "16:00:00 [INFO] worker ok\n".repeat(40);
    messages.push(Message::tool("small", log.clone()));
    let mut engine = engine(SMALL_WINDOW, 2, 4);
    let compacted = compress(&mut engine, messages);
    assert_eq!(report(&mut engine).cut_outputs, 0);
    assert_eq!(compacted.last().unwrap().text(), log);
}

#[test]
fn nothing_between_head_and_tail_returns_the_input_unchanged() {
    let mut engine = engine(200_000, 3, 20);
    let messages = long_conversation(3, 200);
    let output = compress(&mut engine, messages.clone());
    assert_eq!(output, messages);
    assert!(!engine.has_content_to_compress(&messages));
    let last = engine.call_ext("last_compaction", &Value::Null).unwrap();
    assert_eq!(last["outcome"], "nothing_to_compress");
    assert!(
        last["reason"].as_str().unwrap().contains("nothing lies between"),
        "{last}"
    );
    assert_eq!(engine.counters().compression_count, 0);
}

#[test]
fn duplicate_outputs_collapse_to_the_newest_copy() {
    let mut engine = engine(SMALL_WINDOW, 1, 8);
    let listing = "src/main.rs\nsrc/lib.rs\n".repeat(20);
    let mut messages = long_conversation(20, 400);
    for id in ["d1", "d2"] {
        messages.push(shell(id, "ls src"));
        messages.push(Message::tool(id, listing.clone()));
    }
    let compacted = compress(&mut engine, messages);
    let outputs: Vec<String> = compacted
        .iter()
        .filter(|m| matches!(m.tool_call_id.as_deref(), Some("d1" | "d2")))
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(outputs[1], listing, "the newest copy stays");
    assert_eq!(
        outputs[0],
        "[terminal] duplicate of a more recent result (460 chars; see the later copy)"
    );
    assert_eq!(report(&mut engine).deduplicated_outputs, 1);
}

#[test]
fn text_of_untouched_messages_is_identical() {
    let mut engine = engine(SMALL_WINDOW, 1, 4);
    let messages = long_conversation(20, 400);
    let compacted = compress(&mut engine, messages.clone());
    let tail = report(&mut engine).tail_messages;
    assert_eq!(
        text_of(&compacted[compacted.len() - tail..]),
        text_of(&messages[messages.len() - tail..])
    );
}

#[test]
fn a_real_token_count_above_the_estimate_shrinks_the_tail() {
    let messages = long_conversation(20, 400);
    let rough = estimate_messages_tokens(&messages);
    let mut estimated = engine(SMALL_WINDOW, 1, 4);
    compress(&mut estimated, messages.clone());
    let mut measured = engine(SMALL_WINDOW, 1, 4);
    let request = ctxhost_engine_abi::CompressRequest {
        current_tokens: Some(rough * 3 / 2),
        focus_topic: None,
    };
    measured.compress(messages, &request).unwrap();
    let (estimated, measured) = (report(&mut estimated), report(&mut measured));
    assert!(
        measured.tail_messages < estimated.tail_messages,
        "{measured:?}\n{estimated:?}"
    );
}

#[test]
fn a_head_that_alone_fills_the_room_gives_way_to_the_system_message() {
    // SWE-agent's trajectories open with a demonstration: a user message of some 30,000
    // characters before the issue, no tool call anywhere. The head (system and three messages)
    // then held more than the whole 8,000-token window, and nothing could be compacted.
    let mut messages = vec![
        Message::system("You are an autonomous programmer. ".repeat(140)),
        Message::user(format!(
            "Here is a demonstration of how to correctly accomplish this task.\n{}",
            "open src/app.py\ngoto 40\nedit 41:41\n    return total\nend_of_edit\n".repeat(500)
        )),
        Message::user(format!(
            "ISSUE: missing colon in tests/missing_colon.py\n{}",
            "context ".repeat(400)
        )),
    ];
    for n in 0..4 {
        messages.push(Message::assistant(format!(
            "Step {n}: I looked at tests/missing_colon.py."
        )));
        messages.push(Message::user(format!(
            "(Open file: tests/missing_colon.py) step {n}"
        )));
    }
    messages.push(Message::assistant("The script runs now."));
    // The defaults: protect_first_n 3, protect_last_n 20.
    let mut engine = engine(8_000, 3, 20);
    assert!(estimate_messages_tokens(&messages) > 8_000);
    assert!(engine.has_content_to_compress(&messages));
    let compacted = compress(&mut engine, messages.clone());
    assert_valid(&compacted);
    let tokens = estimate_messages_tokens(&compacted);
    assert!(tokens < engine.counters().threshold_tokens, "{tokens} tokens");
    assert!(compacted[0].text().starts_with(messages[0].text().as_ref()));
    let last_user = messages.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert!(compacted.contains(last_user), "the last user message is kept");
}

/// The head keeps the user's first request and the call it started; the reply to it is in the
/// middle, before the next request: the summary gives it to the request the head keeps (verify33:
/// `how much memory do 20M vectors take?` kept, its `81.92 GB` and `20.48 GB` in no line). Once the
/// head holds its reply, no later remark is taken for one; nor is a task's first reply, often a
/// step on the way (`Baseline: ingress p95 = 412 ms`).
#[test]
fn the_reply_to_the_request_the_head_keeps_is_kept() {
    let answer = "Answer: raw float32 is 81.92 GB; int8 scalar quantization is 20.48 GB.";
    let question = "Quick question: how much memory do 20M 1024-dim vectors take?";
    let conversation = |request: &str, head_answers: bool| {
        let mut messages = vec![Message::system("You are a coding agent."), Message::user(request)];
        if head_answers {
            messages.push(Message::assistant("About 82 GB raw; details follow."));
        } else {
            messages.push(Message::assistant_calls(vec![ToolCall::new(
                "c1",
                "terminal",
                r#"{"command":"python3 -c 'print(20e6*1024*4/1e9)'"}"#,
            )]));
            messages.push(Message::tool("c1", "81.92"));
        }
        messages.push(Message::assistant(answer));
        messages.extend(long_conversation(20, 400).into_iter().skip(1));
        messages
    };
    let mut first = engine(SMALL_WINDOW, 3, 4);
    let compacted = compress(&mut first, conversation(question, false));
    let summary = super::summary_of(&compacted);
    assert!(
        summary.contains(&format!(
            "Answer to the request kept before this summary: {answer}"
        )),
        "{summary}"
    );
    let mut second = engine(SMALL_WINDOW, 3, 4);
    let compacted = compress(&mut second, conversation(question, true));
    let summary = super::summary_of(&compacted);
    assert!(
        !summary.contains("Answer to the request kept before this summary"),
        "{summary}"
    );
    let mut third = engine(SMALL_WINDOW, 3, 4);
    let compacted = compress(
        &mut third,
        conversation("Size the vector index for 20M vectors.", false),
    );
    let summary = super::summary_of(&compacted);
    assert!(
        !summary.contains("Answer to the request kept before this summary"),
        "{summary}"
    );
}
