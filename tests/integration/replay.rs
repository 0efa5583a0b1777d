//! `ctxhost run` and `ctxhost compress` end to end.

use std::fs;

use ctxhost_engine_abi::{messages_from_json, Role};
use ctxhost_engine_kit::sequence::find_sequence_problems;

use crate::support::{example, example_transcript, texts, PluginDir};

/// A context masking cannot bring under the window says why in the overrun's warning: the
/// newest result it keeps whole, and the rest it never shortens.
#[test]
fn masking_left_over_the_window_says_what_holds_the_room() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config("context:\n  engine: masking\n  tokenizer: rough\nmasking:\n  keep_last: 4\n");
    let mut messages = vec![serde_json::json!({"role": "user", "content": "read the four logs"})];
    for n in 0..4 {
        let id = format!("call_{n}");
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "terminal", "arguments": format!("{{\"command\": \"cat build-{n}.log\"}}")}}
        ]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": format!("build {n} step ok\n").repeat(1200)}));
    }
    messages.push(serde_json::json!({"role": "assistant", "content": "All four builds passed."}));
    let transcript = tree.root().join("logs.json");
    fs::write(&transcript, serde_json::to_string(&messages).unwrap()).unwrap();
    let output = tree.run(&["run", transcript.to_str().unwrap(), "--context-length", "4000"]);
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let warning = stderr
        .lines()
        .find(|line| line.starts_with("warning: the context went over the window"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.contains("; masking said of its last compaction: still ~")
            && warning.contains("the newest tool result, which masking always keeps whole, holds ~"),
        "{warning}"
    );
}

#[test]
fn the_masking_plugin_replays_the_example_and_the_report_names_its_library() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config("context:\n  engine: masking\nmodel:\n  context_length: 16000\nmasking:\n  keep_last: 4\n");
    let out = tree.root().join("final.json");
    let output = tree.run(&["run", &example_transcript(), "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        stdout.contains("plugins/context_engine/masking/libctxhost_engine_masking.so"),
        "{stdout}"
    );
    assert!(stdout.contains("compactions "), "{stdout}");
    assert!(
        !stdout.contains("compactions none"),
        "the example outgrows a 16,000-token window:\n{stdout}"
    );
    let context = messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    assert!(find_sequence_problems(&context).is_empty());
    assert!(
        context
            .iter()
            .any(|m| m.role == Role::Tool && m.text().starts_with('[')),
        "outputs are masked"
    );
}

#[test]
fn the_built_in_compressor_keeps_the_context_under_the_window() {
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 16000\n");
    let out = tree.root().join("final.json");
    let output = tree.run(&[
        "run",
        &example_transcript(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["engine"], "compressor");
    assert_eq!(report["engine_source"]["kind"], "built_in");
    assert!(
        report["compactions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["outcome"]["status"] == "applied"),
        "{stdout}"
    );
    assert!(report["final_tokens"].as_u64().unwrap() < 16_000, "{stdout}");
    let context = messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(context[0].role, Role::System);
    assert!(
        context
            .iter()
            .any(|m| m.text().contains("bump the package version to 2.4.1")),
        "last user message kept"
    );
}

#[test]
fn compress_runs_one_manual_compaction_with_a_focus() {
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 16000\n");
    let output = tree.run(&["compress", &example_transcript(), "--focus", "coupon lookup"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("(manual /compress coupon lookup)"), "{stdout}");
    assert!(stdout.contains("compactions 1"), "{stdout}");
}

#[test]
fn an_output_reservation_the_window_leaves_no_room_for_is_named_not_dropped() {
    // model.max_tokens is checked against model.context_length when the config is read; a window
    // from --context-length (or the transcript) could make it impossible, and it vanished.
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 16000\n  max_tokens: 8000\n");
    let output = tree.run(&["run", &example_transcript(), "--context-length", "8000"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: model.max_tokens (8,000) leaves nothing of the 8,000-token window; it is not reserved"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("usable 8,000"), "{stdout}");
    let output = tree.run(&["run", &example_transcript(), "--context-length", "20000"]);
    let (stdout, stderr) = texts(&output);
    assert!(!stderr.contains("max_tokens"), "{stderr}");
    assert!(stdout.contains("usable 12,000"), "{stdout}");
}

#[test]
fn a_bad_config_value_is_one_line_naming_file_line_and_key() {
    let tree = PluginDir::new();
    tree.config("context:\n  engine: compressor\ncompression:\n  threshold: 3\n");
    let output = tree.run(&["run", &example_transcript()]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("config.yaml:4: `compression.threshold` must be between 0 and 1"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_transcript_is_one_line_naming_file_and_line() {
    let tree = PluginDir::new();
    let transcript = tree.root().join("bad.jsonl");
    fs::write(
        &transcript,
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"user\",\"content\":\n",
    )
    .unwrap();
    let output = tree.run(&["run", transcript.to_str().unwrap()]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");
}

#[test]
fn an_output_that_cannot_be_written_leaves_nothing_behind() {
    let tree = PluginDir::new();
    let out = tree.root().join("no-such-dir").join("final.json");
    let output = tree.run(&["run", &example_transcript(), "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        texts(&output).1.contains("final.json: cannot write"),
        "{:?}",
        texts(&output)
    );
    assert!(!out.exists());
}

#[test]
fn the_bundled_example_config_selects_the_masking_plugin() {
    let config = fs::read_to_string(example("config.yaml")).unwrap();
    assert!(config.contains("engine: masking"), "{config}");
}

#[test]
fn the_extractive_summarizer_keeps_at_least_80_percent_of_the_facts_of_every_bundled_example() {
    let tree = PluginDir::new();
    let mut compacted = Vec::new();
    for transcript in fs::read_dir(example("transcripts")).unwrap() {
        let path = transcript.unwrap().path();
        // Default budgets: no config at all; the window is the one the example records (128,000
        // when it records none, and then the small format samples never compact).
        let output = tree.run(&["run", path.to_str().unwrap(), "--json", "--facts"]);
        let (stdout, stderr) = texts(&output);
        assert!(output.status.success(), "{}: {stderr}", path.display());
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let compactions = report["compactions"].as_array().unwrap();
        for compaction in compactions {
            let share = compaction["retention"]["share"].as_f64().unwrap();
            assert!(
                share >= 0.8,
                "{}: kept {share:.2} of the facts: {}",
                path.display(),
                compaction["retention"]
            );
        }
        if !compactions.is_empty() {
            compacted.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    compacted.sort();
    // The examples written to outgrow their windows: one compaction, and several in a row.
    assert_eq!(compacted, ["coupon-fix.json", "warehouse-migration.json"]);
}
