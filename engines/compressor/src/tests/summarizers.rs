//! Behind the `Summarizer` trait: what a model summarizer is given, and what happens when it
//! cannot be reached, fails, or answers uselessly.

use std::sync::{Arc, Mutex};

use ctxhost_engine_abi::{CompressRequest, Engine, ErrorKind, Message, ModelInfo, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{compress, long_conversation, report, shell, summary_of, SMALL_WINDOW};
use crate::{report::Outcome, Compressor, CompressorConfig, Summarizer, SummaryError, SummaryRequest};

/// A summarizer that records the transcript it is given and answers as told.
struct Recording {
    transcripts: Arc<Mutex<Vec<String>>>,
    answer: Result<String, SummaryError>,
}

impl Summarizer for Recording {
    fn summarize(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        self.transcripts.lock().unwrap().push(request.transcript());
        self.answer.clone()
    }

    fn name(&self) -> &str {
        "recording"
    }
}

fn with_summarizer(summarizer: Box<dyn Summarizer>) -> Compressor {
    let config = CompressorConfig {
        protect_first_n: 1,
        protect_last_n: 4,
        ..CompressorConfig::default()
    };
    let mut engine = Compressor::with_summarizer(config, summarizer);
    engine.update_model(&ModelInfo {
        context_length: SMALL_WINDOW,
        ..ModelInfo::default()
    });
    engine
}

#[test]
fn an_unreachable_summarizer_aborts_and_keeps_the_context() {
    let mut engine = with_summarizer(Box::new(Recording {
        transcripts: Arc::default(),
        answer: Err(SummaryError::Unavailable("connection refused".to_owned())),
    }));
    let error = engine
        .compress(long_conversation(20, 400), &CompressRequest::default())
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::UNAVAILABLE);
    assert!(error.message.contains("connection refused"), "{error}");
    let report = report(&mut engine);
    assert_eq!(report.outcome, Outcome::Aborted);
    assert_eq!(engine.counters().compression_count, 0);
}

#[test]
fn a_failing_summarizer_gets_a_fallback_summary_and_a_cool_down() {
    let transcripts = Arc::new(Mutex::new(Vec::new()));
    let mut engine = with_summarizer(Box::new(Recording {
        transcripts: transcripts.clone(),
        answer: Err(SummaryError::Failed("HTTP 502 from the endpoint".to_owned())),
    }));
    let compacted = compress(&mut engine, long_conversation(20, 400));
    let summary = summary_of(&compacted);
    assert!(
        summary.contains("FALLBACK") && summary.contains("HTTP 502 from the endpoint"),
        "{summary}"
    );
    assert!(summary.chars().count() <= 8_000);
    assert!(summary.contains("## Goal"));
    assert_eq!(report(&mut engine).outcome, Outcome::Fallback);
    assert_eq!(engine.get_status()["cooldown_remaining_s"], 60);

    // While cooling down the summarizer is left alone.
    compress(&mut engine, long_conversation(20, 400));
    assert_eq!(transcripts.lock().unwrap().len(), 1);
    assert!(report(&mut engine).reason.unwrap().contains("cooling down"));

    // Once the cool-down is over it is asked again; a failure (it answered) waits 60 s again.
    engine.expire_cooldown_for_test();
    compress(&mut engine, long_conversation(20, 400));
    assert_eq!(transcripts.lock().unwrap().len(), 2);
    assert_eq!(engine.get_status()["cooldown_remaining_s"], 60);
}

#[test]
fn a_timeout_aborts_and_repeated_timeouts_cool_down_60_300_900() {
    let transcripts = Arc::new(Mutex::new(Vec::new()));
    let mut engine = with_summarizer(Box::new(Recording {
        transcripts: transcripts.clone(),
        answer: Err(SummaryError::TimedOut("timed out after 1 s".to_owned())),
    }));
    let mut cooldowns = Vec::new();
    for attempt in 1..=3 {
        let messages = long_conversation(20, 400);
        let error = engine
            .compress(messages.clone(), &CompressRequest::default())
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::UNAVAILABLE, "attempt {attempt}");
        let aborted = report(&mut engine);
        assert_eq!(aborted.outcome, Outcome::Aborted);
        assert_eq!(aborted.written_by, None);
        cooldowns.push(engine.get_status()["cooldown_remaining_s"].clone());

        // While cooling down, the summarizer is not asked: the fallback summary is used.
        let compacted = compress(&mut engine, messages);
        assert!(summary_of(&compacted).contains("FALLBACK"));
        let fallback = report(&mut engine);
        assert_eq!(fallback.outcome, Outcome::Fallback);
        assert_eq!(fallback.written_by.as_deref(), Some("extractive"));
        assert!(
            fallback.reason.unwrap().contains("timed out after 1 s"),
            "attempt {attempt}"
        );
        assert_eq!(transcripts.lock().unwrap().len(), attempt);
        engine.expire_cooldown_for_test();
    }
    assert_eq!(cooldowns, vec![json!(60), json!(300), json!(900)]);
}

/// A summarizer that answers with a template summary and says who wrote it.
struct Noting;

impl Summarizer for Noting {
    fn summarize(&mut self, _: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Ok("## Goal\n- fix the build".to_owned())
    }

    fn name(&self) -> &str {
        "model:tiny"
    }

    fn take_note(&mut self) -> Option<crate::summary::SummaryNote> {
        Some(crate::summary::SummaryNote {
            written_by: "model:tiny".to_owned(),
            facts_added: 7,
        })
    }
}

#[test]
fn the_report_says_who_wrote_the_summary() {
    let mut engine = with_summarizer(Box::new(Noting));
    compress(&mut engine, long_conversation(20, 400));
    let report = report(&mut engine);
    assert_eq!(report.outcome, Outcome::Compacted);
    assert_eq!(report.summarizer, "model:tiny");
    assert_eq!(report.written_by.as_deref(), Some("model:tiny"));
    assert_eq!(report.facts_added, 7);
}

#[test]
fn a_useless_summary_counts_as_a_failure() {
    for (answer, why) in [
        ("   ", "blank"),
        ("Here is a summary without any structure.", "headings"),
        (&*format!("## Goal\n{}", "padding ".repeat(20_000)), "not shorter"),
    ] {
        let mut engine = with_summarizer(Box::new(Recording {
            transcripts: Arc::default(),
            answer: Ok(answer.to_owned()),
        }));
        compress(&mut engine, long_conversation(20, 400));
        let report = report(&mut engine);
        assert_eq!(report.outcome, Outcome::Fallback, "{why}");
        assert!(report.reason.unwrap().contains(why), "{why}");
    }
}

#[test]
fn old_tool_output_becomes_an_informative_stand_in_for_a_model() {
    let transcripts = Arc::new(Mutex::new(Vec::new()));
    let mut engine = with_summarizer(Box::new(Recording {
        transcripts: transcripts.clone(),
        answer: Ok("## Goal\n- fix it".to_owned()),
    }));
    let mut messages = vec![Message::system("s"), Message::user("run the tests")];
    messages.push(shell("p1", "pytest -q"));
    let output = format!(
        "{}FAILED tests/test_x.py::test_y\nExit code: 1",
        "collected 214 items\n".repeat(20)
    );
    messages.push(Message::tool("p1", output));
    let content = "z".repeat(3_000);
    messages.push(Message::assistant_calls(vec![ToolCall::new(
        "w1",
        "write_file",
        json!({"path": "src/app.py", "content": content}).to_string(),
    )]));
    messages.push(Message::tool("w1", "ok"));
    messages.extend(long_conversation(20, 400).into_iter().skip(1));
    compress(&mut engine, messages);
    let transcript = transcripts
        .lock()
        .unwrap()
        .pop()
        .expect("the summarizer was asked");
    assert!(
        transcript.contains("[terminal] ran `pytest -q` -> exit 1, 22 lines output"),
        "{transcript}"
    );
    assert!(!transcript.contains("collected 214 items"));
    let arguments = transcript
        .lines()
        .find_map(|line| {
            line.strip_prefix("write_file(")
                .and_then(|rest| rest.strip_suffix(')'))
        })
        .expect("the call is serialised");
    let arguments: Value = serde_json::from_str(arguments).expect("shortened arguments stay valid JSON");
    assert_eq!(arguments["path"], "src/app.py");
    assert!(arguments["content"]
        .as_str()
        .unwrap()
        .ends_with("…[2,800 more characters cut]"));
    let report = report(&mut engine);
    assert!(
        report.pruned_outputs >= 1 && report.shortened_arguments == 1,
        "{report:?}"
    );
}
