//! Every transcript in `../shared/transcripts/` (beside the repository; see its SOURCES.md), read
//! by the reader its content calls for, with the counts SOURCES.md gives, and replayed by the real
//! binary.
//!
//! Built only with the `shared-transcripts` feature, so that plain `cargo test` needs no
//! `../shared`:
//!
//! ```sh
//! cargo test -p ctxhost --features shared-transcripts --test shared_transcripts
//! ```

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use ctxhost::formats::{read_transcript, Format, Transcript};
use ctxhost_engine_abi::{Message, Role};
use ctxhost_engine_kit::sequence::find_sequence_problems;
use pretty_assertions::assert_eq;
use serde_json::Value;

/// `../shared/transcripts`, from the workspace root; a clear failure when it is not there.
fn shared_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = workspace.join("../shared/transcripts");
    assert!(
        dir.join("SOURCES.md").is_file(),
        "{} is missing: this suite reads the shared fixtures beside the repository; \
         run it from a checkout with ../shared, or leave out --features shared-transcripts",
        dir.display()
    );
    dir
}

/// What each file must read as.
struct Expected {
    file: &'static str,
    format: Format,
    /// Messages by role: system, user, assistant, tool.
    roles: [usize; 4],
    tool_calls: usize,
    model: Option<&'static str>,
    session_id: Option<&'static str>,
    context_length: Option<u64>,
}

const EXPECTED: &[Expected] = &[
    Expected {
        file: "swe-agent__marshmallow-1867__function_calling.traj",
        format: Format::SweAgent,
        roles: [1, 1, 11, 11],
        tool_calls: 11,
        model: Some("gpt-4o"),
        session_id: None,
        context_length: None,
    },
    Expected {
        file: "swe-agent__test-repo-i1.traj",
        format: Format::SweAgent,
        roles: [1, 6, 5, 0],
        tool_calls: 0,
        model: None,
        session_id: None,
        context_length: None,
    },
    Expected {
        file: "claude-code-transcripts__sample_session.jsonl",
        format: Format::ClaudeCode,
        roles: [0, 2, 3, 2],
        tool_calls: 2,
        model: None,
        session_id: Some("test-session-id"),
        context_length: None,
    },
    Expected {
        file: "claude-code-transcripts__sample_codex_session.jsonl",
        format: Format::Codex,
        roles: [0, 1, 1, 0],
        tool_calls: 0,
        model: None,
        session_id: Some("test-session"),
        context_length: None,
    },
    Expected {
        file: "hermes__feature-impl-context-priority.json",
        format: Format::OpenaiObject,
        roles: [1, 5, 37, 32],
        tool_calls: 32,
        model: Some("anthropic/claude-sonnet-4.6"),
        session_id: None,
        context_length: Some(200_000),
    },
];

fn expected(file: &str) -> &'static Expected {
    EXPECTED
        .iter()
        .find(|expected| expected.file == file)
        .unwrap_or_else(|| panic!("{file} is not in this suite's table: add what it must read as"))
}

/// The transcripts in the shared folder (every file but the licences and SOURCES.md).
fn shared_transcripts() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            !name.starts_with("LICENSE") && name != "SOURCES.md"
        })
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> Transcript {
    read_transcript(path, None).unwrap_or_else(|error| panic!("{error}"))
}

fn role_counts(messages: &[Message]) -> [usize; 4] {
    let count = |role| messages.iter().filter(|m| m.role == role).count();
    [
        count(Role::System),
        count(Role::User),
        count(Role::Assistant),
        count(Role::Tool),
    ]
}

#[test]
fn every_shared_transcript_is_detected_and_read_with_the_counts_sources_md_gives() {
    let files = shared_transcripts();
    assert_eq!(files.len(), EXPECTED.len(), "{files:?}");
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let expected = expected(&file);
        let transcript = read(&path);
        assert_eq!(transcript.format, expected.format, "{file}");
        assert_eq!(
            role_counts(&transcript.messages),
            expected.roles,
            "{file}: system, user, assistant, tool"
        );
        let calls: usize = transcript.messages.iter().map(|m| m.calls().len()).sum();
        assert_eq!(calls, expected.tool_calls, "{file}: tool calls");
        let meta = &transcript.meta;
        assert_eq!(meta.model.as_deref(), expected.model, "{file}: model");
        assert_eq!(
            meta.session_id.as_deref(),
            expected.session_id,
            "{file}: session id"
        );
        assert_eq!(meta.context_length, expected.context_length, "{file}: window");
        // Valid, or its own problems reported: the stream's check agrees with the kit's.
        assert_eq!(
            meta.sequence_problems,
            find_sequence_problems(&transcript.messages),
            "{file}"
        );
    }
}

#[test]
fn every_tool_call_is_answered_by_a_result_right_after_it() {
    for path in shared_transcripts() {
        let transcript = read(&path);
        let messages = &transcript.messages;
        for (at, message) in messages.iter().enumerate() {
            for call in message.calls() {
                let answered = messages[at + 1..]
                    .iter()
                    .take_while(|m| m.role == Role::Tool)
                    .any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()));
                assert!(
                    answered,
                    "{}: call {} at message {at} is not answered",
                    path.display(),
                    call.id
                );
            }
        }
    }
}

#[test]
fn only_marshmallow_needs_repair_and_its_reused_call_ids_are_one_warning_each() {
    for path in shared_transcripts() {
        let transcript = read(&path);
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(transcript.meta.sequence_problems, vec![], "{file}");
        assert_eq!(find_sequence_problems(&transcript.messages), vec![], "{file}");
        if file.starts_with("swe-agent__marshmallow") {
            // The replayed demonstration reuses call ids (call_5iDd… four times, call_ahTo… and
            // call_q3Vs… twice): each of the 5 reuses is one warning naming the later call's
            // place, and that call and its result are read under an id of their own.
            let warnings = &transcript.meta.warnings;
            assert_eq!(warnings.len(), 5, "{warnings:?}");
            assert!(
                warnings[0].starts_with(
                    "line 220, column 9: tool call id `call_5iDdbOYybq7L19vqXmR0DPaU` was used by an earlier call"
                ),
                "{warnings:?}"
            );
            assert_eq!(transcript.meta.pairing_repairs, 5);
        } else {
            assert_eq!(transcript.meta.warnings, Vec::<String>::new(), "{file}");
        }
    }
}

#[test]
fn unknown_fields_are_kept() {
    let dir = shared_dir();
    let marshmallow = read(&dir.join("swe-agent__marshmallow-1867__function_calling.traj"));
    let action = &marshmallow.messages[2];
    for key in ["message_type", "thought", "action", "agent"] {
        assert!(action.extra.contains_key(key), "marshmallow: `{key}` kept");
    }
    assert_eq!(marshmallow.meta.extra["info"]["exit_status"], "submitted");

    let demo = read(&dir.join("swe-agent__test-repo-i1.traj"));
    assert_eq!(
        demo.messages
            .iter()
            .filter(|m| m.extra.get("is_demo") == Some(&Value::Bool(true)))
            .count(),
        1
    );

    let claude = read(&dir.join("claude-code-transcripts__sample_session.jsonl"));
    assert_eq!(claude.messages[0].extra["cwd"], "/project");
    assert_eq!(claude.messages[0].extra["gitBranch"], "main");
    assert_eq!(
        claude.meta.extra["summaries"][0],
        "Test session for JSONL parsing"
    );

    let codex = read(&dir.join("claude-code-transcripts__sample_codex_session.jsonl"));
    assert_eq!(codex.messages[1].text(), "Here is a simple hello world function.");
    assert_eq!(
        codex.messages[1].extra["reasoning"][0]["text"],
        "I'll include a minimal example and keep it short."
    );
    assert_eq!(codex.meta.extra["instructions"], "Sample instructions");

    let hermes = read(&dir.join("hermes__feature-impl-context-priority.json"));
    let keys: Vec<&str> = hermes.meta.extra.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "name",
            "description",
            "source",
            "truncated_to",
            "scrubbed_at",
            "scrubbing_passes"
        ]
    );
}

#[test]
fn the_binary_replays_every_shared_transcript() {
    for path in shared_transcripts() {
        let output = Command::new(env!("CARGO_BIN_EXE_ctxhost"))
            .args(["run", path.to_str().unwrap(), "--json", "--engine", "compressor"])
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{}: {stderr}", path.display());
        let report: BTreeMap<String, Value> = serde_json::from_slice(&output.stdout).unwrap();
        let expected = expected(&path.file_name().unwrap().to_string_lossy());
        assert_eq!(report["format"], expected.format.to_string());
        assert_eq!(report["messages_replayed"], expected.roles.iter().sum::<usize>());
    }
}

/// Kept and total facts over one forced `ctxhost compress --context-length <window>` of each
/// Hermes and SWE-agent transcript, as the issue-7 tracker measures them (the host's retention
/// figure, built-in compressor at its defaults).
fn retention_at(window: u64) -> (u64, u64) {
    let (mut kept, mut total) = (0, 0);
    for path in shared_transcripts() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("hermes__") && !name.starts_with("swe-agent__") {
            continue;
        }
        let output = Command::new(env!("CARGO_BIN_EXE_ctxhost"))
            .args([
                "compress",
                path.to_str().unwrap(),
                "--json",
                "--facts",
                "--engine",
                "compressor",
            ])
            .args(["--context-length", &window.to_string()])
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        for compaction in report["compactions"].as_array().unwrap() {
            kept += compaction["retention"]["kept"].as_u64().unwrap_or(0);
            total += compaction["retention"]["total"].as_u64().unwrap_or(0);
        }
    }
    (kept, total)
}

#[test]
fn a_forced_compaction_keeps_90_percent_of_the_facts_at_16k_and_75_percent_at_8k() {
    for (window, target) in [(16_000, 0.90), (8_000, 0.75)] {
        let (kept, total) = retention_at(window);
        assert!(total > 0, "nothing was compacted at {window}");
        let share = kept as f64 / total as f64;
        assert!(
            share >= target,
            "at {window} tokens {kept} of {total} facts kept ({:.1}%), under {:.0}%",
            share * 100.0,
            target * 100.0
        );
    }
}
