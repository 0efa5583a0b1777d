//! A plugin that panics or misbehaves never takes the host down, and never costs the user context.

use std::fs;

use ctxhost_engine_abi::{messages_from_json, Message};
use ctxhost_engine_kit::sequence::find_sequence_problems;

use crate::support::{example_messages, example_transcript, texts, PluginDir};

/// Runs the example through the faulty engine configured with `block`; returns the report, stderr
/// and the final context.
fn run_faulty(block: &str) -> (String, String, Vec<Message>) {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!(
        "context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n{block}"
    ));
    let out = tree.root().join("final.json");
    let output = tree.run(&["run", &example_transcript(), "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "the host survives: {stderr}");
    let context = messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    (stdout, stderr, context)
}

#[test]
fn a_panic_in_any_engine_method_is_contained_and_reported() {
    let methods = [
        "on_session_start",
        "update_from_response",
        "should_compress",
        "should_compress_preflight",
        "compress",
        "counters",
        "call_ext",
        "get_status",
        "on_session_end",
    ];
    for method in methods {
        let (stdout, stderr, context) = run_faulty(&format!("  panic_in: {method}\n"));
        assert!(
            stdout.contains("errors"),
            "{method}: the report lists the errors:\n{stdout}\n{stderr}"
        );
        // An extension method's panic names the extension (`last_compaction`) it was called for.
        let panicked = match method {
            "call_ext" => "failed in `call_ext`: panic: `last_compaction` panicked".to_owned(),
            _ => format!("`{method}` panicked"),
        };
        assert!(stdout.contains(&panicked), "{method}:\n{stdout}");
        assert!(
            find_sequence_problems(&context).is_empty(),
            "{method}: the final context is valid"
        );
    }
}

#[test]
fn an_engine_failing_to_take_its_window_is_replaced_by_the_compressor_saying_why() {
    // It could never compact: the session would outgrow its window, as it did before.
    let (stdout, stderr, _) = run_faulty("  panic_in: update_model\n");
    let warning = "warning: engine `faulty` cannot be used: told its window, it failed in `update_model`: panic: `update_model` panicked";
    assert!(stderr.starts_with(warning), "{stderr}");
    assert!(stdout.contains("engine      compressor (built-in)"), "{stdout}");
    assert!(!stdout.contains("OVER THE WINDOW"), "{stdout}");
}

#[test]
fn a_panicking_compress_keeps_the_context_as_it_was() {
    let (stdout, _, context) = run_faulty("  panic_in: compress\n");
    assert!(stdout.contains("KEPT the context as it was"), "{stdout}");
    assert_eq!(context, example_messages(), "nothing was lost");
}

#[test]
fn invalid_results_are_refused_and_the_context_kept() {
    let cases = [
        ("orphan_result", "not a valid sequence"),
        ("unanswered_call", "not a valid sequence"),
        ("drop_system", "the system message was lost"),
        ("drop_last_user", "the last user message was lost"),
        ("empty", "it is empty"),
    ];
    for (kind, reason) in cases {
        let (stdout, _, context) = run_faulty(&format!("  invalid_output: {kind}\n"));
        assert!(
            stdout.contains("returned an invalid result from `compress`"),
            "{kind}:\n{stdout}"
        );
        assert!(
            stdout.contains(reason),
            "{kind}: expected {reason:?} in\n{stdout}"
        );
        assert_eq!(context, example_messages(), "{kind}: nothing was lost");
    }
}

#[test]
fn a_plugins_log_lines_reach_the_hosts_log_labelled_with_the_engine() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("context:\n  engine: faulty\n");
    let (_, stderr) = texts(&tree.run(&["-v", "run", &example_transcript()]));
    let line = stderr
        .lines()
        .find(|line| line.contains("faulty engine created"))
        .unwrap_or_else(|| panic!("{stderr}"));
    // Named as the host's own warnings name an engine; the module only with `-vv`.
    assert!(line.starts_with("info: engine `faulty`: "), "{line}");
    assert!(!line.contains("ctxhost_test_faulty"), "{line}");
    let (_, stderr) = texts(&tree.run(&["-vv", "run", &example_transcript()]));
    assert!(
        stderr.lines().any(
            |line| line.starts_with("info: engine `faulty`: faulty engine created")
                && line.ends_with("(from ctxhost_test_faulty)")
        ),
        "{stderr}"
    );
}

/// Every contract method of a loaded plugin, called once through the host's handle.
fn call_every_method(engine: &mut ctxhost::engine::EngineHandle) -> Vec<(&'static str, bool)> {
    use ctxhost_engine_abi::{ModelInfo, SessionInfo, Usage};
    let messages = example_messages();
    let json = ctxhost_engine_abi::messages_to_json(&messages);
    let model = ModelInfo {
        context_length: 16_000,
        ..ModelInfo::default()
    };
    let arguments = serde_json::json!({"text": "hi"});
    vec![
        ("update_model", engine.update_model(&model).is_err()),
        (
            "on_session_start",
            engine.on_session_start("s", &SessionInfo::default()).is_err(),
        ),
        (
            "update_from_response",
            engine.update_from_response(Usage::new(10, 2)).is_err(),
        ),
        ("should_compress", engine.should_compress(Some(20_000)).is_err()),
        (
            "should_compress_preflight",
            engine.should_compress_preflight(&messages, Some(&json)).is_err(),
        ),
        (
            "has_content_to_compress",
            engine.has_content_to_compress(&messages).is_err(),
        ),
        (
            "compress",
            engine
                .compress(&messages, Some(&json), &Default::default())
                .is_err(),
        ),
        ("counters", engine.counters().is_err()),
        ("get_tool_schemas", engine.get_tool_schemas().is_err()),
        (
            "handle_tool_call",
            engine.handle_tool_call("faulty_echo", &arguments, None).is_err(),
        ),
        ("get_status", engine.get_status().is_err()),
        (
            "call_ext",
            engine.call_ext("anything", &serde_json::Value::Null).is_err(),
        ),
        ("on_session_reset", engine.on_session_reset().is_err()),
        ("on_session_end", engine.on_session_end("s", &messages).is_err()),
    ]
}

#[test]
fn each_method_that_panics_fails_alone_and_the_engine_stays_usable() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let healthy = {
        let settings =
            ctxhost::config::Settings::parse("context:\n  engine: faulty\n", &tree.root().join("c.yaml"))
                .unwrap();
        let folder = ctxhost::discovery::discover_plugins(&settings.plugins_dir)
            .unwrap()
            .remove(0);
        let mut engine = ctxhost::resolution::load_plugin(&folder, &settings).unwrap();
        call_every_method(&mut engine)
    };
    assert!(
        healthy.iter().all(|(_, failed)| !failed),
        "without a panic nothing fails: {healthy:?}"
    );

    for (method, _) in &healthy {
        let config = format!("context:\n  engine: faulty\nfaulty:\n  panic_in: {method}\n");
        let settings = ctxhost::config::Settings::parse(&config, &tree.root().join("c.yaml")).unwrap();
        let folder = ctxhost::discovery::discover_plugins(&settings.plugins_dir)
            .unwrap()
            .remove(0);
        let mut engine = ctxhost::resolution::load_plugin(&folder, &settings).unwrap();
        let failed: Vec<&str> = call_every_method(&mut engine)
            .into_iter()
            .filter(|(_, failed)| *failed)
            .map(|(m, _)| m)
            .collect();
        assert_eq!(
            failed,
            vec![*method],
            "a panic in `{method}` fails that call only"
        );
    }
}

#[test]
fn a_plugin_printing_on_stdout_corrupts_neither_the_report_nor_the_protocol_of_an_isolated_engine() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let quiet = "context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n  observe: count\n";
    tree.config(quiet);
    let transcript = example_transcript();
    let alone = tree.run(&["run", &transcript, "--json", "--engine", "compressor"]);
    let (alone_stdout, _) = texts(&alone);
    let alone: serde_json::Value = serde_json::from_str(&alone_stdout).unwrap();
    tree.config(&format!("{quiet}  chatty: true\n"));
    let cases: [(&str, &[&str]); 3] = [
        ("active", &[]),
        ("observer", &["--engine", "compressor", "--observer", "faulty"]),
        // The child `ctxhost serve` speaks to the host on its stdout.
        ("isolated", &["--isolation", "process"]),
    ];
    for (case, extra) in cases {
        let mut args = vec!["run", transcript.as_str(), "--json"];
        args.extend_from_slice(extra);
        let output = tree.run(&args);
        let (stdout, stderr) = texts(&output);
        assert!(output.status.success(), "{case}: {stderr}");
        let report: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("{case}: stdout is not the report alone ({error}): {stdout}"));
        assert!(stderr.contains("faulty says: created"), "{case}: {stderr}");
        let said = if case == "observer" {
            "faulty says: observe"
        } else {
            "faulty says: compress"
        };
        assert!(stderr.contains(said), "{case}: {stderr}");
        assert!(report["fallback"].is_null(), "{case}: {report}");
        assert_eq!(report["faults"], serde_json::json!([]), "{case}");
        if case == "observer" {
            assert_eq!(
                report["compactions"].as_array().map(Vec::len),
                alone["compactions"].as_array().map(Vec::len)
            );
            assert!(report["observers"][0]["detached"].is_null(), "{case}: {report}");
        } else {
            assert!(
                !report["compactions"].as_array().unwrap().is_empty(),
                "{case}: {report}"
            );
        }
    }
}

#[test]
fn a_failing_tool_of_the_active_engine_is_answered_and_reported_as_an_observers_is() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n  panic_in: handle_tool_call\n");
    let output = tree.run(&["tool", &example_transcript(), "faulty_echo", "{}"]);
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.starts_with("engine `faulty` failed in `handle_tool_call`: panic"),
        "{answer}"
    );
    let said: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(
        said,
        [format!("error: `faulty_echo` answered with an error: {error}")]
    );
}

#[test]
fn an_engine_failing_at_every_session_end_is_said_once_then_counted() {
    // `/new` ends the first session, the end of the transcript the second: two failures, alike.
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(
        "context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n  panic_in: on_session_end\n",
    );
    let output = tree.run(&["run", &example_transcript(), "--at", "20:/new"]);
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let failed: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("failed in `on_session_end`"))
        .collect();
    assert_eq!(failed.len(), 2, "{stderr}");
    assert!(
        failed[1].ends_with(": 2 times in all (said once above; each is in the report)"),
        "{stderr}"
    );
}
