//! Every bundled example, replayed with the bundled config and each engine the repository ships,
//! as a new user would: no compaction refused by the host, the context never over the window.

use std::fs;

use serde_json::Value;

use crate::support::{example, texts, PluginDir};

/// The engines the repository ships: the built-in one and the plugins in `plugins/`.
const ENGINES: [&str; 3] = ["compressor", "masking", "lcm"];

/// The bundled config, with its plugins folder pointed at the test's own.
fn bundled_config(tree: &PluginDir) -> String {
    let text = fs::read_to_string(example("config.yaml")).unwrap();
    assert!(
        text.contains("plugins_dir: ../plugins"),
        "the bundled config moved its plugins folder"
    );
    tree.config(&text.replace("plugins_dir: ../plugins", "plugins_dir: plugins"));
    tree.root().join("config.yaml").display().to_string()
}

/// Every bundled transcript, in name order.
fn bundled_transcripts() -> Vec<std::path::PathBuf> {
    let mut transcripts: Vec<_> = fs::read_dir(example("transcripts"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    transcripts.sort();
    transcripts
}

#[test]
fn every_bundled_example_replays_with_every_engine_without_refusal_or_overrun() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.engine("lcm", "ctxhost_engine_lcm");
    let config = bundled_config(&tree);
    let transcripts = bundled_transcripts();
    assert!(transcripts.len() >= 8, "{transcripts:?}");
    let mut compacted = 0;
    for transcript in &transcripts {
        for engine in ENGINES {
            let path = transcript.display().to_string();
            let output = tree.run(&["run", &path, "--config", &config, "--engine", engine, "--json"]);
            let (stdout, stderr) = texts(&output);
            let case = format!("{engine} on {path}");
            assert!(output.status.success(), "{case}: {stderr}");
            assert!(!stderr.contains("cannot be used"), "{case}: {stderr}");
            let report: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(report["engine"], engine, "{case}");
            let compactions = report["compactions"].as_array().unwrap();
            for compaction in compactions {
                assert_ne!(compaction["outcome"]["status"], "kept", "{case}: {compaction:#}");
            }
            compacted += compactions
                .iter()
                .filter(|c| c["outcome"]["status"] == "applied")
                .count();
            assert!(
                report["faults"].as_array().unwrap().is_empty(),
                "{case}: {:#}",
                report["faults"]
            );
            // A Claude Code log records prompts of 21,000 tokens and more (the agent's own
            // system prompt and tool schemas), over the bundled 16,000-token window before any
            // compaction: reported, though no engine could prevent it (the overhead alone is over
            // the window). Every other overrun would be the engine's.
            let overrun = &report["over_window"];
            assert!(
                overrun.is_null()
                    || (overrun["times"] == overrun["with_overhead"] && overrun["final_tokens"].is_null()),
                "{case}: {overrun:#}"
            );
            assert!(
                report["peak_tokens"].as_u64().unwrap() <= report["window"].as_u64().unwrap(),
                "{case}"
            );
        }
    }
    assert!(compacted > 20, "the examples written to compact did: {compacted}");
}

#[test]
fn a_long_run_after_one_request_stays_in_the_window_with_the_compressor() {
    // warehouse-migration: one user request in the head, then hundreds of tool turns. Every
    // compaction after the first rewrites a user-role summary; none may be refused.
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 16000\n");
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let output = tree.run(&["run", &transcript, "--json", "--fail-over-window"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let applied = report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"]["status"] == "applied")
        .count();
    assert!(applied >= 10, "{applied} compactions applied");
    assert!(report["final_tokens"].as_u64().unwrap() < 8_000);
}

/// A replay folds each summary into the next: what the first compactions kept must survive the
/// later ones. warehouse-migration at 8,000 tokens compacts dozens of times; over all of them,
/// the identifiers of what each compacted (an earlier summary's included) stay in its result.
#[test]
fn a_long_replay_keeps_what_earlier_compactions_kept() {
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 8000\n");
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let output = tree.run(&["run", &transcript, "--json", "--facts"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let (mut kept, mut total, mut applied) = (0, 0, 0);
    for compaction in report["compactions"].as_array().unwrap() {
        if compaction["outcome"]["status"] == "applied" {
            applied += 1;
            kept += compaction["retention"]["kept"].as_u64().unwrap();
            total += compaction["retention"]["total"].as_u64().unwrap();
            // An earlier summary is the engine's, not the user's: its heading is no request.
            for lost in compaction["retention"]["lost"].as_array().unwrap() {
                let text = lost["text"].as_str().unwrap();
                assert!(
                    !(lost["kind"] == "request" && text.starts_with("[CONTEXT COMPACTION]")),
                    "a summary's heading counted as a lost request: {text}"
                );
            }
        }
    }
    assert!(applied >= 20, "{applied} compactions applied");
    assert!(
        kept * 100 >= total * 95,
        "{kept}/{total} identifiers kept over {applied} compactions"
    );
}

#[test]
fn a_context_over_the_window_is_reported_and_fails_the_run_when_asked() {
    // Every result of this engine is refused, so the example outgrows a small window.
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(
        "context:\n  engine: faulty\nmodel:\n  context_length: 4000\nfaulty:\n  invalid_output: empty\n",
    );
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    let output = tree.run(&["run", &transcript, "--json"]);
    let (stdout, stderr) = texts(&output);
    assert!(
        output.status.success(),
        "without the flag the run succeeds: {stderr}"
    );
    assert_eq!(
        stderr.matches("went over the window").count(),
        1,
        "one warning, when it first happens: {stderr}"
    );
    assert!(
        stderr.contains("\nwarning: the context went over the window")
            || stderr.starts_with("warning: the context went over the window"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let overrun = &report["over_window"];
    assert_eq!(overrun["window"], 4000);
    assert!(overrun["first_tokens"].as_u64().unwrap() > 4000);
    assert!(overrun["times"].as_u64().unwrap() > 1);
    assert!(
        overrun["times"].as_u64() <= report["model_calls"].as_u64(),
        "never more calls over the window than calls: {overrun}"
    );
    assert!(report["peak_tokens"].as_u64().unwrap() > 4000);

    let text = tree.run(&["run", &transcript]);
    let (stdout, _) = texts(&text);
    assert!(stdout.contains("OVER THE WINDOW"), "{stdout}");

    let failed = tree.run(&["run", &transcript, "--fail-over-window"]);
    let (stdout, stderr) = texts(&failed);
    assert!(!failed.status.success());
    assert!(
        stdout.contains("OVER THE WINDOW"),
        "the report is still printed: {stdout}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: --fail-over-window: the context went over the 4,000-token window: "),
        "{stderr}"
    );
}

#[test]
fn a_plugin_that_writes_a_user_role_note_is_not_refused() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("context:\n  engine: faulty\nmodel:\n  context_length: 6000\nfaulty:\n  user_note: true\n");
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let output = tree.run(&["run", &transcript, "--json"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let compactions = report["compactions"].as_array().unwrap();
    let applied = compactions
        .iter()
        .filter(|c| c["outcome"]["status"] == "applied")
        .count();
    assert!(applied >= 3, "{applied} applied: {:#}", report["faults"]);
    assert!(
        report["faults"].as_array().unwrap().is_empty(),
        "{:#}",
        report["faults"]
    );
}

#[test]
fn a_compaction_that_makes_the_context_larger_is_applied_with_one_warning_and_the_overrun_reported() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("context:\n  engine: faulty\nmodel:\n  context_length: 6000\nfaulty:\n  pad_words: 20000\n");
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let output = tree.run(&["run", &transcript, "--json", "--fail-over-window"]);
    let (stdout, stderr) = texts(&output);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let first = &report["compactions"][0];
    assert_eq!(first["outcome"]["status"], "applied", "{first:#}");
    assert!(
        first["tokens_after"].as_u64() > first["tokens_before"].as_u64(),
        "{first:#}"
    );
    let grew: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("larger, not smaller"))
        .collect();
    assert_eq!(grew.len(), 1, "said once however often it happens: {stderr}");
    assert!(
        grew[0].starts_with(&format!(
            "warning: engine `faulty` made the context larger, not smaller, in its compaction before message {}: ",
            first["at_message"]
        )),
        "{stderr}"
    );
    // The window's overrun is its own report, and fails the run when asked.
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("the context went over the window"), "{stderr}");
}

#[test]
fn a_manual_compress_with_nothing_to_compact_says_so() {
    let tree = PluginDir::new();
    tree.config("model:\n  context_length: 200000\n");
    let transcript = example("transcripts/orders-pagination.openai-array.json")
        .display()
        .to_string();
    let output = tree.run(&["compress", &transcript, "--json"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let compaction = &report["compactions"][0];
    assert_eq!(
        compaction["outcome"]["status"], "nothing_to_compact",
        "{compaction:#}"
    );
    assert_eq!(compaction["messages_before"], compaction["messages_after"]);
    let text = tree.run(&["compress", &transcript]);
    let (stdout, _) = texts(&text);
    assert!(stdout.contains("nothing to compact"), "{stdout}");
    assert!(!stdout.contains("outcome compacted"), "{stdout}");
}

#[test]
fn the_telemetry_observer_selected_as_the_engine_compacts_nothing_and_an_overrun_is_reported() {
    // An observer by design: as the active engine it hands every context back unchanged. Never
    // refused, never a fault, and a context that outgrows the window is said, not hidden.
    let tree = PluginDir::new();
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    let config = bundled_config(&tree);
    let mut overruns = 0;
    for name in ["coupon-fix.json", "warehouse-migration.json"] {
        let path = example(&format!("transcripts/{name}")).display().to_string();
        let output = tree.run(&[
            "run",
            &path,
            "--config",
            &config,
            "--engine",
            "telemetry",
            "--json",
        ]);
        let (stdout, stderr) = texts(&output);
        assert!(output.status.success(), "{name}: {stderr}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["engine"], "telemetry", "{name}");
        assert!(report["faults"].as_array().unwrap().is_empty(), "{name}");
        for compaction in report["compactions"].as_array().unwrap() {
            assert_eq!(
                compaction["outcome"]["status"], "nothing_to_compact",
                "{name}: {compaction:#}"
            );
        }
        let over = report["peak_tokens"].as_u64().unwrap() > report["window"].as_u64().unwrap();
        assert_eq!(report["over_window"].is_null(), !over, "{name}");
        if over {
            overruns += 1;
            assert!(
                stderr.contains("warning: the context went over the window"),
                "{name}: {stderr}"
            );
        }
    }
    assert_eq!(
        overruns, 1,
        "warehouse-migration outgrows the bundled 16,000-token window"
    );
    // The terminal report says the attempts once, not a line each.
    let path = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let output = tree.run(&["run", &path, "--config", &config, "--engine", "telemetry"]);
    let (stdout, _) = texts(&output);
    let attempts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("nothing to compact"))
        .collect();
    assert_eq!(attempts.len(), 2, "{stdout}");
    assert!(
        attempts[0].starts_with("compactions ") && attempts[0].ends_with(" nothing to compact)"),
        "{stdout}"
    );
    assert!(
        attempts[1].contains(" attempts, before messages ")
            && attempts[1].ends_with("the engine returned the context as it was"),
        "{stdout}"
    );
    assert!(!stdout.contains("\n  #"), "{stdout}");
}

/// The keys the chat completions API takes on a message, by role, and on a tool call.
fn api_keys(role: &str) -> &'static [&'static str] {
    match role {
        "tool" => &["role", "content", "tool_call_id"],
        "assistant" => &["role", "content", "name", "tool_calls"],
        _ => &["role", "content", "name"],
    }
}

#[test]
fn out_fields_api_writes_every_bundled_example_as_a_request_the_chat_api_takes() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.engine("lcm", "ctxhost_engine_lcm");
    let config = bundled_config(&tree);
    let out = tree.root().join("context.json");
    let transcripts = bundled_transcripts();
    let mut stripped = 0;
    for transcript in &transcripts {
        for engine in ENGINES {
            let path = transcript.display().to_string();
            let case = format!("{engine} on {path}");
            let args = ["run", &path, "--config", &config, "--engine", engine, "-v"];
            let output = tree.run(
                &[
                    &args[..],
                    &["--out", out.to_str().unwrap(), "--out-fields", "api"],
                ]
                .concat(),
            );
            let (_, stderr) = texts(&output);
            assert!(output.status.success(), "{case}: {stderr}");
            // An info line at `-v`, or a warning where a freeform call's input was rewritten too
            // (the Codex example's `apply_patch`).
            stripped += usize::from(
                stderr.contains("info: --out-fields api: left out the fields")
                    || stderr.contains("warning: --out-fields api: left out the fields"),
            );
            let written: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
            let messages: Vec<ctxhost_engine_abi::Message> = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(
                ctxhost_engine_kit::sequence::find_sequence_problems(&messages),
                Vec::new(),
                "{case}"
            );
            for message in written.as_array().unwrap() {
                let role = message["role"].as_str().unwrap();
                for key in message.as_object().unwrap().keys() {
                    assert!(
                        api_keys(role).contains(&key.as_str()),
                        "{case}: `{key}` in {message}"
                    );
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let keys: Vec<&str> = call.as_object().unwrap().keys().map(String::as_str).collect();
                    assert_eq!(keys, ["id", "type", "function"], "{case}: {call}");
                }
                if let Some(parts) = message["content"].as_array() {
                    for part in parts {
                        assert!(
                            ["text", "image_url"].contains(&part["type"].as_str().unwrap()),
                            "{case}: {part}"
                        );
                    }
                }
            }
        }
    }
    // The Claude Code and Codex examples carry fields of their own: there was something to strip.
    assert!(stripped >= 2 * ENGINES.len(), "{stripped}");
}
