use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::formats::{open_transcript_with, ReadOptions, TranscriptError};

fn session(id: &str, messages: Value) -> Value {
    json!({
        "id": id,
        "source": "cli",
        "model": "anthropic/claude-sonnet-4.6",
        "model_config": "{\"context_length\": 200000}",
        "system_prompt": "You are Hermes.",
        "input_tokens": 1200,
        "messages": messages,
        "title": "Fix the loader",
    })
}

fn conversation(question: &str) -> Value {
    json!([
        {"id": 1, "session_id": "x", "role": "user", "content": question, "timestamp": 1.5},
        {"id": 2, "role": "assistant", "content": "", "tool_calls": "[{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": \"terminal\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}]", "reasoning": "look first"},
        {"id": 3, "role": "tool", "tool_call_id": "c1", "tool_name": "terminal", "content": "README.md"},
        {"id": 4, "role": "assistant", "content": "There is a README.", "finish_reason": "stop"},
    ])
}

#[test]
fn the_system_prompt_becomes_the_system_message_and_the_session_fields_the_meta() {
    let transcript = read(
        Format::Hermes,
        &jsonl(&[session("20260321_060441_fef7be92", conversation("What is here?"))]),
    );
    assert_eq!(
        messages_json(&transcript),
        json!([
            {"role": "system", "content": "You are Hermes."},
            {"role": "user", "content": "What is here?", "id": 1, "session_id": "x", "timestamp": 1.5},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}],
                "id": 2,
                "reasoning": "look first",
            },
            {"role": "tool", "content": "README.md", "tool_call_id": "c1", "id": 3, "tool_name": "terminal"},
            {"role": "assistant", "content": "There is a README.", "id": 4, "finish_reason": "stop"},
        ])
    );
    let meta = &transcript.meta;
    assert_eq!(meta.session_id.as_deref(), Some("20260321_060441_fef7be92"));
    assert_eq!(meta.model.as_deref(), Some("anthropic/claude-sonnet-4.6"));
    assert_eq!(meta.context_length, Some(200_000));
    assert_eq!(meta.extra["input_tokens"], 1200);
    // Fields after the messages reach the meta too.
    assert_eq!(meta.extra["title"], "Fix the loader");
    assert!(!meta.extra.contains_key("system_prompt"));
    assert_eq!(meta.warnings, Vec::<String>::new());
}

#[test]
fn a_session_with_its_own_system_message_keeps_the_prompt_in_the_meta() {
    let messages = json!([{"role": "system", "content": "Own prompt."}, {"role": "user", "content": "hi"}]);
    let transcript = read(Format::Hermes, &jsonl(&[session("s1", messages)]));
    assert_eq!(transcript.messages.len(), 2);
    assert_eq!(transcript.messages[0].text(), "Own prompt.");
    assert_eq!(transcript.meta.extra["system_prompt"], "You are Hermes.");
}

#[test]
fn the_first_of_several_sessions_is_read_and_the_others_are_named() {
    let text = jsonl(&[
        session("20260321_a", conversation("first?")),
        session("20260322_b", conversation("second?")),
        session("20260323_c", conversation("third?")),
    ]);
    let transcript = read(Format::Hermes, &text);
    assert_eq!(transcript.messages[1].text(), "first?");
    assert_eq!(
        transcript.meta.warnings,
        ["the file holds 3 sessions (`20260321_a`, `20260322_b`, `20260323_c`); read the first, `20260321_a`; pass --session ID to read another"]
    );
}

#[test]
fn a_session_is_chosen_by_the_start_of_its_id() {
    let text = jsonl(&[
        session("20260321_a", conversation("first?")),
        session("20260322_b", conversation("second?")),
    ]);
    let (_dir, path) = write("sessions.jsonl", &text);
    let options = ReadOptions {
        session: Some("20260322".into()),
        ..ReadOptions::default()
    };
    let mut stream = open_transcript_with(&path, &options).unwrap();
    assert_eq!(stream.meta().session_id.as_deref(), Some("20260322_b"));
    let messages: Vec<_> = stream.by_ref().map(Result::unwrap).collect();
    assert_eq!(messages[1].text(), "second?");
    assert_eq!(
        stream.meta().warnings,
        ["the file holds 2 sessions (`20260321_a`, `20260322_b`); read session 2 of 2, `20260322_b`, as asked"]
    );

    let options = ReadOptions {
        session: Some("nope".into()),
        ..ReadOptions::default()
    };
    let error = open_transcript_with(&path, &options).unwrap_err();
    assert!(
        matches!(&error, TranscriptError::NoSuchSession { seen, .. } if seen == &["20260321_a", "20260322_b"])
    );
    assert!(error
        .to_string()
        .ends_with("no session whose id starts with `nope` (the file holds `20260321_a`, `20260322_b`)"));
}

#[test]
fn an_id_start_that_several_sessions_share_says_so() {
    let text = jsonl(&[
        session("20260321_a", conversation("first?")),
        session("20260322_b", conversation("second?")),
        session("20260322_c", conversation("third?")),
    ]);
    let (_dir, path) = write("sessions.jsonl", &text);
    let options = ReadOptions {
        session: Some("202603".into()),
        ..ReadOptions::default()
    };
    let mut stream = open_transcript_with(&path, &options).unwrap();
    assert_eq!(stream.meta().session_id.as_deref(), Some("20260321_a"));
    let messages: Vec<_> = stream.by_ref().map(Result::unwrap).collect();
    assert_eq!(messages[1].text(), "first?");
    assert_eq!(
        stream.meta().warnings,
        ["the file holds 3 sessions (`20260321_a`, `20260322_b`, `20260322_c`); `202603` starts 3 of their ids; read the first of them, session 1 of 3, `20260321_a`; pass more of the id to read another"]
    );
}

#[test]
fn a_malformed_message_is_an_error_at_its_place() {
    let first = format!("{}\n", session("s1", json!([])));
    let text = format!("{first}{{\"id\": \"s2\", \"messages\": [{{\"role\": \"user\", \"content\": \"a\"}}, {{\"content\": \"no role\"}}]}}\n");
    // The first session is read; the second is only counted, so the file reads.
    read(Format::Hermes, &text);
    let (_dir, path) = write("sessions.jsonl", &text);
    let options = ReadOptions {
        session: Some("s2".into()),
        ..ReadOptions::default()
    };
    let error = open_transcript_with(&path, &options).unwrap_err().to_string();
    let column = "{\"id\": \"s2\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}, ".len() + 1;
    assert!(
        error.ends_with(&format!(
            ":2:{column}: missing field `role` (byte {})",
            first.len() + column - 1
        )),
        "{error}"
    );
}

#[test]
fn pretty_printed_sessions_one_after_another_are_read_like_jsonl() {
    let text = format!(
        "{}\n{}\n",
        serde_json::to_string_pretty(&session("20260321_a", conversation("first?"))).unwrap(),
        serde_json::to_string_pretty(&session("20260322_b", conversation("second?"))).unwrap(),
    );
    let (_dir, path) = write("sessions.json", &text);
    let options = ReadOptions {
        session: Some("20260322_b".into()),
        ..ReadOptions::default()
    };
    let transcript = crate::formats::read_transcript_with(&path, &options).unwrap();
    assert_eq!(transcript.format, Format::Hermes);
    assert_eq!(transcript.messages[1].text(), "second?");
    let single = serde_json::to_string_pretty(&session("s1", conversation("only?"))).unwrap();
    let transcript = read(Format::Hermes, &single);
    assert_eq!(transcript.messages[1].text(), "only?");
    assert_eq!(transcript.meta.warnings, Vec::<String>::new());
}

#[test]
fn conversations_without_ids_an_openai_dataset_are_named_by_their_place_and_each_can_be_read() {
    // An OpenAI fine-tuning or evals file: one `{"messages": […]}` a line, no ids.
    let lines: Vec<Value> = (1..=11)
        .map(|n| json!({"messages": [{"role": "user", "content": format!("question {n}")}, {"role": "assistant", "content": "ok"}]}))
        .collect();
    let (_dir, path) = write("dataset.jsonl", &jsonl(&lines));
    let mut first = open_transcript_with(&path, &ReadOptions::default()).unwrap();
    assert_eq!(first.format(), Format::Hermes);
    assert_eq!(first.by_ref().count(), 2);
    assert_eq!(
        first.meta().warnings,
        ["the file holds 11 sessions (`#1`, `#2`, `#3`, `#4`, `#5`, `#6`, `#7`, `#8`, `#9`, `#10`, `#11`); read the first, `#1`; pass --session ID to read another"]
    );
    // `#1` is the first place, not every one starting so (`#10`, `#11`).
    for (wanted, question) in [("#1", "question 1"), ("#10", "question 10")] {
        let options = ReadOptions {
            session: Some(wanted.into()),
            ..ReadOptions::default()
        };
        let mut stream = open_transcript_with(&path, &options).unwrap();
        let messages: Vec<_> = stream.by_ref().map(Result::unwrap).collect();
        assert_eq!(messages[0].text(), question, "{wanted}");
        assert!(
            stream.meta().warnings[0].ends_with(&format!("`{wanted}`, as asked")),
            "{:?}",
            stream.meta().warnings
        );
    }
}
