use ctxhost_engine_abi::{CompressRequest, Engine, ErrorKind, Host, Message, ModelInfo, ToolCall, Usage};
use ctxhost_engine_kit::{
    sequence::{find_sequence_problems, REMOVED_RESULT_TEXT},
    tokens,
};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::{is_stand_in, Masking, MaskingConfig};

fn engine(config: Value) -> Masking {
    Masking::new(&config, Host::detached()).expect("valid config")
}

fn engine_with_window(config: Value, context_length: u64) -> Masking {
    let mut engine = engine(config);
    engine.update_model(&ModelInfo {
        context_length,
        ..ModelInfo::default()
    });
    engine
}

/// A user request, then `n` turns each running `cat file<i>.txt` with an output of `chars`
/// characters over several lines, then a closing assistant message.
fn transcript(n: usize, chars: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("look at the files"),
    ];
    for i in 0..n {
        let id = format!("call_{i}");
        let arguments = json!({ "command": format!("cat file{i}.txt") }).to_string();
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            &id, "terminal", arguments,
        )]));
        let line = format!("line of file{i}\n");
        let output: String = line.repeat(chars / line.len() + 1).chars().take(chars).collect();
        messages.push(Message::tool(&id, output));
    }
    messages.push(Message::assistant("I have read them all."));
    messages
}

fn compress(engine: &mut Masking, messages: Vec<Message>) -> Vec<Message> {
    engine
        .compress(messages, &CompressRequest::default())
        .expect("masking never fails")
}

fn tool_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.text().into_owned())
        .collect()
}

#[test]
fn outputs_outside_the_window_become_informative_stand_ins() {
    let mut engine = engine(json!({ "keep_last": 2 }));
    let messages = transcript(4, 1_000);
    let compacted = compress(&mut engine, messages.clone());
    let texts = tool_texts(&compacted);
    assert_eq!(texts[0], "[terminal] ran `cat file0.txt` -> 72 lines output");
    assert_eq!(texts[1], "[terminal] ran `cat file1.txt` -> 72 lines output");
    assert_eq!(texts[2..], tool_texts(&messages)[2..]);
}

#[test]
fn the_window_and_everything_but_old_tool_output_is_kept_verbatim() {
    let mut engine = engine(json!({ "keep_last": 2 }));
    let messages = transcript(4, 1_000);
    let compacted = compress(&mut engine, messages.clone());
    assert_eq!(compacted.len(), messages.len());
    for (before, after) in messages.iter().zip(&compacted) {
        if after.text() != before.text() {
            assert!(
                before.tool_call_id.is_some(),
                "only tool output changes: {before:?}"
            );
            assert_eq!(
                (&after.tool_call_id, &after.name, &after.extra),
                (&before.tool_call_id, &before.name, &before.extra)
            );
        } else {
            assert_eq!(after, before);
        }
    }
}

#[test]
fn a_failed_command_is_masked_as_failed_and_a_stand_in_is_not_masked_again() {
    let mut engine = engine(json!({ "keep_last": 1 }));
    let mut messages = transcript(2, 1_000);
    // Claude Code's results say a failure with `is_error`, not with an exit code.
    messages[3].extra.insert("is_error".to_owned(), Value::Bool(true));
    let compacted = compress(&mut engine, messages);
    assert_eq!(
        tool_texts(&compacted)[0],
        "[terminal] ran `cat file0.txt` -> failed, 72 lines output"
    );
    assert!(is_stand_in(
        &tool_texts(&compacted)[0],
        compacted[2].calls().first()
    ));
    let again = compress(&mut engine, compacted.clone());
    assert_eq!(again, compacted);
}

#[test]
fn every_stand_in_kit_writes_is_known_as_one() {
    let run = ToolCall::new("c1", "execute_bash", r#"{"command":"python render.py"}"#);
    let edit = ToolCall::new("c2", "Edit", r#"{"file_path":"/w/a.py"}"#);
    let outputs = [
        (&run, "tile 1\n[The command has no new output after 30 seconds. You may wait longer to see additional output]"),
        (&run, "F\n[The command completed with exit code 1.]"),
        (&edit, "<tool_use_error>String to replace not found in file.</tool_use_error>"),
        (&edit, "The user doesn't want to proceed with this tool use."),
    ];
    for (call, output) in outputs {
        let stand_in = ctxhost_engine_kit::stand_in::describe_tool_output(Some(call), output);
        assert!(is_stand_in(&stand_in, Some(call)), "{stand_in}");
    }
    // One quoting its command's first error line, which masking writes for outputs without an
    // exit code (verify20: masked again, it read `-> 1 lines output`).
    let mut result = Message::tool(
        "c1",
        "Traceback (most recent call last):\nValueError: pandas dtypes must be int, float or bool\n",
    );
    result.tool_call_id = Some("c1".to_owned());
    let stand_in = ctxhost_engine_kit::stand_in::describe_tool_result_noting_errors(Some(&run), &result);
    assert!(stand_in.contains("its first error line: "), "{stand_in}");
    assert!(is_stand_in(&stand_in, Some(&run)), "{stand_in}");
}

#[test]
fn unknown_tools_and_lost_calls_still_get_a_stand_in() {
    let mut engine = engine(json!({ "keep_last": 1 }));
    let messages = vec![
        Message::user("weather?"),
        Message::assistant_calls(vec![ToolCall::new("w", "weather", "{}")]),
        Message::tool("w", "y".repeat(2_000)),
        Message::assistant_calls(vec![ToolCall::new("n", "now", "{}")]),
        Message::tool("n", "z".repeat(300)),
    ];
    let compacted = compress(&mut engine, messages);
    assert_eq!(compacted[2].text(), "[weather] (2,000 chars of output cleared)");
}

#[test]
fn short_outputs_are_left_alone() {
    let mut engine = engine(json!({ "keep_last": 1, "min_chars": 200 }));
    let mut messages = transcript(3, 1_000);
    // The first output is short: it stays, the second (long) one is masked.
    messages[3] = Message::tool("call_0", "ok: 3 files");
    let compacted = compress(&mut engine, messages);
    let texts = tool_texts(&compacted);
    assert_eq!(texts[0], "ok: 3 files");
    assert_eq!(texts[1], "[terminal] ran `cat file1.txt` -> 72 lines output");
}

#[test]
fn compressing_twice_changes_nothing_more() {
    // min_chars 0: the stand-ins themselves would qualify by length, so only recognition stops
    // them being masked again.
    let mut engine = engine(json!({ "keep_last": 1, "min_chars": 0 }));
    let once = compress(&mut engine, transcript(5, 800));
    let twice = compress(&mut engine, once.clone());
    assert_eq!(twice, once);
    assert_eq!(engine.get_status()["masked_outputs"], 4);
    assert_eq!(
        engine.counters().compression_count,
        1,
        "a compaction that changed nothing is not counted"
    );
}

#[test]
fn compression_count_counts_only_compactions_that_masked_something() {
    let mut engine = engine(json!({ "keep_last": 1 }));
    let mut context = transcript(3, 800);
    for _ in 0..5 {
        context = compress(&mut engine, context);
    }
    assert_eq!(engine.counters().compression_count, 1);
    context.push(Message::assistant_calls(vec![ToolCall::new(
        "late",
        "terminal",
        r#"{"command":"cat late.txt"}"#,
    )]));
    context.push(Message::tool("late", "line of late.txt\n".repeat(120)));
    compress(&mut engine, context);
    assert_eq!(engine.counters().compression_count, 2);
}

#[test]
fn the_result_is_a_valid_sequence() {
    let mut engine = engine_with_window(json!({ "keep_last": 3 }), 2_000);
    let mut messages = transcript(6, 1_500);
    // A parallel call: two results for one assistant message.
    messages.insert(
        4,
        Message::assistant_calls(vec![
            ToolCall::new("p1", "read_file", r#"{"path":"a.rs"}"#),
            ToolCall::new("p2", "grep", r#"{"pattern":"fn main","path":"src"}"#),
        ]),
    );
    messages.insert(5, Message::tool("p1", "a".repeat(900)));
    messages.insert(6, Message::tool("p2", "src/main.rs:1:fn main() {}\n".repeat(30)));
    assert_eq!(find_sequence_problems(&messages), vec![]);
    let compacted = compress(&mut engine, messages);
    assert_eq!(find_sequence_problems(&compacted), vec![]);
    assert_eq!(compacted[5].text(), "[read_file] read a.rs (900 chars)");
    assert_eq!(
        compacted[6].text(),
        "[grep] search for 'fn main' in src -> 30 matching lines"
    );
}

#[test]
fn the_window_shrinks_until_the_context_fits() {
    // 8 outputs of ~1,000 chars (~250 tokens each): ~2,100 rough tokens in all. A window of
    // 4,000 tokens at 0.5 fires at 2,000; keeping 4 outputs (~1,050 tokens) fits.
    let mut engine = engine_with_window(json!({ "keep_last": 8, "threshold": 0.5 }), 4_000);
    let messages = transcript(8, 1_000);
    assert!(engine.should_compress_preflight(&messages));
    let compacted = compress(&mut engine, messages);
    let kept = tool_texts(&compacted)
        .iter()
        .filter(|text| !text.starts_with("[terminal]"))
        .count();
    assert_eq!(kept, 4);
    assert!(!engine.should_compress_preflight(&compacted));
}

#[test]
fn a_context_over_the_threshold_with_nothing_left_to_mask_does_not_ask_for_a_compaction() {
    // Every output but the newest is masked and the context is still over the threshold: a
    // compaction would change nothing, so the preflight says no, until a new output ages.
    let mut engine = engine_with_window(json!({ "keep_last": 10 }), 400);
    let compacted = compress(&mut engine, transcript(4, 2_000));
    assert!(tokens::estimate_reaches(
        &compacted,
        engine.counters().threshold_tokens
    ));
    assert!(!engine.should_compress_preflight(&compacted));
    let mut grown = compacted;
    grown.push(Message::assistant_calls(vec![ToolCall::new(
        "late",
        "terminal",
        r#"{"command":"cat late.txt"}"#,
    )]));
    grown.push(Message::tool("late", "line of late.txt\n".repeat(120)));
    assert!(engine.should_compress_preflight(&grown));
}

#[test]
fn the_newest_output_is_kept_even_when_the_context_cannot_fit() {
    let mut engine = engine_with_window(json!({ "keep_last": 10 }), 400);
    let compacted = compress(&mut engine, transcript(4, 2_000));
    let texts = tool_texts(&compacted);
    assert!(texts[..3].iter().all(|text| text.starts_with("[terminal] ran")));
    assert_eq!(texts[3].chars().count(), 2_000);
}

/// A compaction that cannot bring the context under the threshold says why, so that the host's
/// report can tell the user what to change; one that can says nothing of the kind.
#[test]
fn a_compaction_left_over_the_threshold_says_what_holds_the_room() {
    let mut engine = engine_with_window(json!({ "keep_last": 4 }), 400);
    compress(&mut engine, transcript(4, 2_000));
    let account = engine.call_ext(crate::EXT_LAST_COMPACTION, &Value::Null).unwrap();
    assert_eq!(account["masked_outputs"], 3);
    assert_eq!(account["kept_whole"], 1);
    let reason = account["reason"].as_str().unwrap();
    assert!(reason.starts_with("still ~"), "{reason}");
    assert!(
        reason.contains("the newest tool result, which masking always keeps whole, holds ~"),
        "{reason}"
    );
    let mut roomy = engine_with_window(json!({ "keep_last": 2 }), 100_000);
    compress(&mut roomy, transcript(4, 2_000));
    let account = roomy.call_ext(crate::EXT_LAST_COMPACTION, &Value::Null).unwrap();
    assert!(account.get("reason").is_none(), "{account}");
}

#[test]
fn a_larger_real_count_shrinks_the_window_further() {
    let messages = transcript(8, 1_000);
    let request = CompressRequest {
        current_tokens: Some(/*real tokens, ~1.8x the rough estimate*/ 4_000),
        ..CompressRequest::default()
    };
    let mut rough_only = engine_with_window(json!({ "keep_last": 8, "threshold": 0.5 }), 4_000);
    let mut calibrated = engine_with_window(json!({ "keep_last": 8, "threshold": 0.5 }), 4_000);
    let by_rough = compress(&mut rough_only, messages.clone());
    let by_real = calibrated.compress(messages, &request).unwrap();
    let masked = |messages: &[Message]| {
        tool_texts(messages)
            .iter()
            .filter(|text| text.starts_with("[terminal]"))
            .count()
    };
    assert_eq!((masked(&by_rough), masked(&by_real)), (4, 6));
}

#[test]
fn nothing_to_compress_when_everything_is_in_the_window_or_short() {
    let mut engine = engine(json!({ "keep_last": 4 }));
    assert!(!engine.has_content_to_compress(&transcript(4, 1_000)));
    assert!(engine.has_content_to_compress(&transcript(5, 1_000)));
    assert!(!engine.has_content_to_compress(&transcript(8, 100)));
    let masked = compress(&mut engine, transcript(5, 1_000));
    assert!(!engine.has_content_to_compress(&masked));
}

#[test]
fn stand_ins_are_recognised_and_real_outputs_are_not() {
    let call = ToolCall::new("c", "terminal", r#"{"command":"ls"}"#);
    assert!(is_stand_in("[terminal] ran `ls` -> 3 lines output", Some(&call)));
    assert!(is_stand_in("[tool] (3 chars of output cleared)", Some(&call)));
    assert!(is_stand_in(REMOVED_RESULT_TEXT, None));
    assert!(!is_stand_in(
        "[terminal] ran `ls` -> 3 lines output\nmore",
        Some(&call)
    ));
    assert!(!is_stand_in("[other] ran `ls` -> 3 lines output", Some(&call)));
    assert!(!is_stand_in("total 3 lines output", Some(&call)));
}

#[test]
fn status_shows_masked_outputs_and_the_window() {
    let mut engine = engine_with_window(json!({ "keep_last": 2 }), 100_000);
    compress(&mut engine, transcript(5, 1_000));
    assert_eq!(
        engine.get_status(),
        json!({
            "last_prompt_tokens": 0,
            "threshold_tokens": 75_000,
            "context_length": 100_000,
            "usage_percent": 0.0,
            "compression_count": 1,
            "masked_outputs": 3,
            "keep_last": 2,
            "paused": false,
            "ineffective_streak": 0,
        })
    );
    engine.on_session_reset();
    assert_eq!(engine.get_status()["masked_outputs"], 0);
    assert_eq!(engine.get_status()["threshold_tokens"], 75_000);
}

#[test]
fn defaults_apply_to_a_missing_block() {
    assert_eq!(
        MaskingConfig::from_json(&Value::Null).unwrap(),
        MaskingConfig {
            threshold: 0.75,
            keep_last: 10,
            min_chars: 200,
            mask_arguments: true,
            min_argument_chars: 1000,
        }
    );
    let partial = MaskingConfig::from_json(&json!({ "min_chars": 50, "unknown": true })).unwrap();
    assert_eq!((partial.keep_last, partial.min_chars), (10, 50));
}

#[test]
fn a_misspelt_key_is_named_with_the_key_it_looks_like() {
    let block = json!({ "keep_lastt": 2, "min_chars": 50, "unknown": true });
    assert_eq!(
        MaskingConfig::misspelt_keys(&block),
        ["masking.keep_lastt: unknown setting, ignored; did you mean `masking.keep_last`?"]
    );
    assert_eq!(MaskingConfig::from_json(&block).unwrap().keep_last, 10);
}

#[test]
fn the_threshold_sets_the_firing_point() {
    let engine = engine_with_window(json!({ "threshold": 0.5 }), 10_000);
    assert_eq!(engine.counters().threshold_tokens, 5_000);
}

#[test]
fn config_errors_name_the_key() {
    let cases = [
        (json!({ "threshold": 0 }), "masking.threshold"),
        (json!({ "threshold": 3 }), "masking.threshold"),
        (json!({ "threshold": "high" }), "masking.threshold"),
        (json!({ "keep_last": 0 }), "masking.keep_last"),
        (json!({ "keep_last": -1 }), "masking.keep_last"),
        (json!({ "min_chars": 1.5 }), "masking.min_chars"),
        (
            json!([1, 2]),
            "masking: expected a mapping of settings, found a list",
        ),
        (
            json!({ "keep_last": "two" }),
            r#"masking.keep_last: invalid type: string "two", expected usize"#,
        ),
    ];
    for (config, key) in cases {
        let Err(error) = Masking::new(&config, Host::detached()) else {
            panic!("{config} was accepted");
        };
        assert_eq!(error.kind, ErrorKind::CONFIG, "{config}");
        assert!(error.message.contains(key), "{config}: {error}");
    }
}

/// Hermes's loop after each model response: compact when `should_compress` says so. Returns how
/// many of `turns` compactions changed nothing.
fn futile_compactions_after_responses(engine: &mut Masking, context: &[Message], turns: usize) -> usize {
    let over = tokens::estimate_messages_tokens(context);
    let mut futile = 0;
    for _ in 0..turns {
        engine.update_from_response(&Usage {
            prompt_tokens: over,
            ..Usage::default()
        });
        if engine.should_compress(None) && compress(engine, context.to_vec()) == context {
            futile += 1;
        }
    }
    futile
}

#[test]
fn two_compactions_that_mask_nothing_pause_automatic_compaction_until_a_prompt_fits() {
    let mut engine = engine_with_window(json!({ "keep_last": 10 }), 400);
    let compacted = compress(&mut engine, transcript(4, 2_000));
    // The compaction that masked the old outputs left the next prompt over the threshold: it
    // counts as the first ineffective one, and one futile call pauses.
    assert_eq!(futile_compactions_after_responses(&mut engine, &compacted, 5), 1);
    assert_eq!(engine.get_status()["paused"], true);
    engine.update_from_response(&Usage {
        prompt_tokens: 10,
        ..Usage::default()
    });
    assert!(engine.should_compress(Some(/*prompt_tokens*/ 5_000)));
}

#[test]
fn a_manual_compress_a_model_switch_a_reset_or_a_new_output_to_mask_lifts_the_pause() {
    let mut engine = engine_with_window(json!({ "keep_last": 10 }), 400);
    let compacted = compress(&mut engine, transcript(4, 2_000));
    let over = Some(/*prompt_tokens*/ 5_000);
    let pause = |engine: &mut Masking| {
        futile_compactions_after_responses(engine, &compacted, 2);
        assert!(!engine.should_compress(over));
    };

    pause(&mut engine);
    let answer = engine.call_ext("resume_auto_compaction", &Value::Null).unwrap();
    assert_eq!(answer, json!({ "paused": false, "was_paused": true }));
    assert!(engine.should_compress(over));

    pause(&mut engine);
    engine.update_model(&ModelInfo {
        context_length: 400,
        ..ModelInfo::default()
    });
    assert!(engine.should_compress(over));

    pause(&mut engine);
    engine.on_session_reset();
    assert!(engine.should_compress(over));

    // The preflight sees the context: a new output that aged out of the window is worth a
    // compaction even while paused.
    pause(&mut engine);
    let mut grown = compress(&mut engine, transcript(4, 2_000));
    grown.push(Message::assistant_calls(vec![ToolCall::new(
        "late",
        "terminal",
        r#"{"command":"cat late.txt"}"#,
    )]));
    grown.push(Message::tool("late", "line of late.txt\n".repeat(120)));
    assert!(engine.should_compress_preflight(&grown));
}

/// A session that writes its files through calls: `n` turns each writing a file of `chars`
/// characters with `write_file`, answered by a short confirmation.
fn writing_transcript(n: usize, chars: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You translate documents."),
        Message::user("translate docs/"),
    ];
    for i in 0..n {
        let id = format!("w{i}");
        let content: String = format!("Zeile {i} der Übersetzung.\n")
            .chars()
            .cycle()
            .take(chars)
            .collect();
        let arguments = json!({ "path": format!("docs/de/page{i}.md"), "content": content }).to_string();
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            &id,
            "write_file",
            arguments,
        )]));
        messages.push(Message::tool(
            &id,
            format!("Wrote {chars} bytes to docs/de/page{i}.md"),
        ));
    }
    messages.push(Message::assistant("All pages are translated."));
    messages
}

fn call_arguments(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .flat_map(Message::calls)
        .map(|call| serde_json::from_str(&call.function.arguments).unwrap())
        .collect()
}

/// verify12 F5: a session writing its files through calls stayed over the window, every file it
/// wrote in the context. The long values of older calls' arguments are masked with their results;
/// the path stays, and so does the newest call whole.
#[test]
fn the_long_arguments_of_older_calls_are_masked() {
    let messages = writing_transcript(8, 12_000);
    let before = tokens::estimate_messages_tokens(&messages);
    let mut masking = engine_with_window(json!({ "keep_last": 2 }), 16_000);
    let masked = compress(&mut masking, messages.clone());
    assert!(find_sequence_problems(&masked).is_empty());
    let arguments = call_arguments(&masked);
    for (i, call) in arguments.iter().enumerate() {
        assert_eq!(call["path"], format!("docs/de/page{i}.md"));
        if i < 6 {
            assert_eq!(call["content"], "[masked: 12000 chars]", "call {i}");
        } else {
            assert_eq!(
                call["content"].as_str().unwrap().chars().count(),
                12_000,
                "call {i}"
            );
        }
    }
    let after = tokens::estimate_messages_tokens(&masked);
    assert!(after < 12_000 && before > 24_000, "{before} -> {after}");
    // Masked once, they are left alone: compressing again changes nothing.
    assert_eq!(compress(&mut masking, masked.clone()), masked);
}

#[test]
fn mask_arguments_false_keeps_every_call_as_it_was() {
    let messages = writing_transcript(8, 12_000);
    let mut masking = engine_with_window(json!({ "keep_last": 2, "mask_arguments": false }), 16_000);
    let masked = compress(&mut masking, messages.clone());
    assert_eq!(call_arguments(&masked), call_arguments(&messages));
}

/// A freeform call's input (Codex's `apply_patch` patch, not JSON) keeps its first lines, which
/// name the file; a command under `min_argument_chars` is the record of what was done and stays.
#[test]
fn a_patch_keeps_its_first_lines_and_a_command_stays_whole() {
    let patch = format!(
        "*** Begin Patch\n*** Add File: docs/de/cli.md\n{}*** End Patch\n",
        "+Zeile\n".repeat(2_000)
    );
    let command = json!({ "command": ["bash", "-lc", format!("sed -i -e 's/a/b/g' {}", "docs/de/page.md ".repeat(30))] }).to_string();
    let mut messages = vec![Message::user("translate the CLI page")];
    for (i, (name, arguments)) in [
        ("apply_patch", patch.clone()),
        ("shell", command.clone()),
        ("shell", command.clone()),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("c{i}");
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            &id, name, arguments,
        )]));
        messages.push(Message::tool(&id, "Done!"));
    }
    let mut masking = engine_with_window(json!({ "keep_last": 1 }), 4_000);
    let masked = compress(&mut masking, messages);
    let calls: Vec<&str> = masked
        .iter()
        .flat_map(Message::calls)
        .map(|c| c.function.arguments.as_str())
        .collect();
    let rest = patch.chars().count() - "*** Begin Patch\n*** Add File: docs/de/cli.md\n".len();
    assert_eq!(
        calls[0],
        format!("*** Begin Patch\n*** Add File: docs/de/cli.md\n[masked: {rest} more chars]")
    );
    assert_eq!(calls[1], command);
}

/// The note counts what it hides, exactly: a one-line input shows its first characters, and the
/// rest of that line is counted, with no line break it never had.
#[test]
fn a_one_line_input_counts_the_characters_it_hides() {
    let input = format!("*** {}", "x".repeat(1_496));
    let mut messages = vec![Message::user("apply it")];
    for id in ["c0", "c1"] {
        messages.push(Message::assistant_calls(vec![ToolCall::new(
            id,
            "apply_patch",
            input.clone(),
        )]));
        messages.push(Message::tool(id, "Done!"));
    }
    let mut masking = engine_with_window(json!({ "keep_last": 1 }), 4_000);
    let masked = compress(&mut masking, messages);
    let shown: String = input.chars().take(120).collect();
    assert_eq!(
        masked[1].calls()[0].function.arguments,
        format!("{shown}\n[masked: 1380 more chars]")
    );
}
