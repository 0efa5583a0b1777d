//! Observers and live swap through the real binary: engines that watch a session never change
//! it (even when they sleep, fail or panic), lcm observing answers from the whole history, the
//! telemetry observer hears nothing of a session after it ended, and `/engine NAME` hands the
//! context to another engine (or, when it cannot load, leaves the old one in charge).

use std::{fs, path::Path};

use serde_json::{json, Value};

use crate::support::{example, run_ctxhost_within, texts, PluginDir, FAULTY_BAD_TOOLS_WARNINGS};

/// A plugins folder with every engine the repository ships, and faulty for misbehaving.
fn observers_tree(config: &str) -> PluginDir {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(config);
    tree
}

const BASE_CONFIG: &str = "\
context:
  engine: compressor
  tokenizer: rough
model:
  default: example/model
  context_length: 16000
compression:
  threshold: 0.50
  target_ratio: 0.20
  protect_last_n: 6
  protect_first_n: 3
lcm:
  database: store/lcm.sqlite
telemetry:
  path: telemetry.jsonl
";

/// The tree with the compressor active and `observers` (a YAML list's items) observing, and the
/// warehouse session's path.
fn warehouse_observed_by(observers: &str) -> (PluginDir, String) {
    let config = BASE_CONFIG.replace(
        "engine: compressor",
        &format!("engine: compressor\n  observers: [{observers}]"),
    );
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    (observers_tree(&config), transcript)
}

/// Each observer in the report, and whether it was attached to the end (not detached).
fn attached(report: &Value) -> Vec<(&str, bool)> {
    report["observers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["detached"].is_null()))
        .collect()
}

fn bundled_transcripts() -> Vec<String> {
    let mut transcripts: Vec<String> = fs::read_dir(example("transcripts"))
        .unwrap()
        .map(|entry| entry.unwrap().path().display().to_string())
        .collect();
    transcripts.sort();
    assert!(transcripts.len() >= 8, "{transcripts:?}");
    transcripts
}

/// What a replay gave: the report (JSON) and the final context's bytes.
fn replay(tree: &PluginDir, transcript: &str, extra: &[&str]) -> (Value, Vec<u8>, String) {
    let out = tree.root().join("final.json");
    let _ = fs::remove_file(&out);
    let mut args = vec!["run", transcript, "--json", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = tree.run(&args);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{args:?}: {stderr}");
    let report = serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    (report, fs::read(&out).unwrap(), stderr)
}

/// The compaction records without their timings, which differ from run to run.
fn compaction_records(report: &Value) -> Value {
    fn without_timings(value: &mut Value) {
        match value {
            Value::Object(fields) => {
                fields.retain(|key, _| !key.ends_with("_ms"));
                fields.values_mut().for_each(without_timings);
            }
            Value::Array(items) => items.iter_mut().for_each(without_timings),
            _ => {}
        }
    }
    let mut records = report["compactions"].clone();
    without_timings(&mut records);
    records
}

#[test]
fn observers_change_nothing_on_any_bundled_example_with_any_active_engine() {
    let tree = observers_tree(BASE_CONFIG);
    let mut compacted = 0;
    for transcript in bundled_transcripts() {
        for engine in ["compressor", "masking"] {
            let case = format!("{engine} on {transcript}");
            let (alone, alone_context, alone_stderr) = replay(&tree, &transcript, &["--engine", engine]);
            let watched = ["--engine", engine, "--observer", "lcm", "--observer", "telemetry"];
            let (report, context, stderr) = replay(&tree, &transcript, &watched);
            assert_eq!(stderr, alone_stderr, "{case}: the same warnings, and no others");
            assert!(alone_context == context, "{case}: the final contexts differ");
            assert_eq!(compaction_records(&report), compaction_records(&alone), "{case}");
            let observers = report["observers"].as_array().unwrap();
            assert_eq!(observers.len(), 2, "{case}");
            for observer in observers {
                assert!(observer["detached"].is_null(), "{case}: {observer}");
                assert!(observer["facts"].as_u64().unwrap() > 0, "{case}: {observer}");
            }
            compacted += report["compactions"].as_array().unwrap().len();
        }
    }
    assert!(compacted > 20, "the examples compact: {compacted}");
}

#[test]
fn an_observer_that_sleeps_fails_or_panics_changes_nothing_and_is_detached_with_one_warning() {
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let alone_tree = observers_tree(BASE_CONFIG);
    let (alone, alone_context, _) = replay(&alone_tree, &transcript, &[]);
    for mode in ["sleep", "fail", "panic"] {
        let config = format!("{BASE_CONFIG}faulty:\n  observe: {mode}\n  observe_fail_at: 40\n");
        let tree = observers_tree(&config);
        let (report, context, stderr) = replay(&tree, &transcript, &["--observer", "faulty"]);
        assert!(context == alone_context, "{mode}: the final contexts differ");
        assert_eq!(compaction_records(&report), compaction_records(&alone), "{mode}");
        let observer = &report["observers"][0];
        let detached = stderr
            .lines()
            .filter(|line| line.starts_with("warning: observer `faulty` detached"))
            .count();
        if mode == "sleep" {
            assert!(observer["detached"].is_null(), "{observer}");
            assert_eq!(detached, 0, "{stderr}");
        } else {
            let reason = observer["detached"].as_str().unwrap();
            assert!(
                reason.contains(&format!("told to {mode} in `observe`")),
                "{reason}"
            );
            // It panicked in `observe`, whatever the ABI carried that call through.
            assert!(!reason.contains("`call_ext`"), "{reason}");
            assert_eq!(detached, 1, "{stderr}");
            // It received facts up to the failing call (consecutive appends may come as one),
            // and nothing after.
            let facts = observer["facts"].as_u64().unwrap();
            assert!((39..600).contains(&facts), "{observer}");
        }
    }
}

/// The warehouse session with calls the agent made to observers' tools, each with the result it
/// recorded: `lcm_grep` early on, then `faulty_echo`.
fn warehouse_calling_observer_tools(dir: &Path) -> String {
    let path = example("transcripts/warehouse-migration.json");
    let mut session: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let messages = session["messages"].as_array_mut().unwrap();
    let mut inserted = 0;
    for (tool, arguments, at) in [
        ("lcm_grep", r#"{"pattern": "extract_orders_61"}"#, 60),
        ("faulty_echo", r#"{"said": "hello"}"#, 200),
    ] {
        let before_user = (at..messages.len())
            .find(|&index| messages[index]["role"] == "user")
            .unwrap();
        let id = format!("call_{tool}");
        let call = serde_json::json!({ "role": "assistant", "content": null, "tool_calls": [
            { "id": id, "type": "function", "function": { "name": tool, "arguments": arguments } }
        ] });
        let result =
            serde_json::json!({ "role": "tool", "tool_call_id": id, "content": format!("RECORDED-{tool}") });
        messages.splice(before_user..before_user, [call, result]);
        inserted += 2;
    }
    assert_eq!(inserted, 4);
    let out = dir.join("calls-observer-tools.json");
    fs::write(&out, serde_json::to_string(&session).unwrap()).unwrap();
    out.display().to_string()
}

#[test]
fn an_observers_answer_to_a_replayed_call_is_compared_but_the_context_keeps_the_recorded_result() {
    let alone_tree = observers_tree(BASE_CONFIG);
    let transcript = warehouse_calling_observer_tools(alone_tree.root());
    let (alone, alone_context, _) = replay(&alone_tree, &transcript, &[]);
    assert!(
        alone["tool_dispatches"].as_array().unwrap().is_empty(),
        "{}",
        alone["tool_dispatches"]
    );
    // Answering, and failing: `faulty` detached at its 40th fact, long before its tool is called.
    for faulty in ["{}", "{observe: fail, observe_fail_at: 40}"] {
        let config = format!("{BASE_CONFIG}faulty: {faulty}\n");
        let tree = observers_tree(&config);
        let watched = ["--observer", "lcm", "--observer", "faulty"];
        let (report, context, stderr) = replay(&tree, &transcript, &watched);
        assert!(
            context == alone_context,
            "faulty {faulty}: the final contexts differ"
        );
        assert_eq!(
            compaction_records(&report),
            compaction_records(&alone),
            "faulty {faulty}"
        );
        let dispatches = report["tool_dispatches"].as_array().unwrap();
        let answered: Vec<(&str, &str, &str, bool)> = dispatches
            .iter()
            .map(|d| {
                (
                    d["tool"].as_str().unwrap(),
                    d["engine"].as_str().unwrap(),
                    d["recorded"].as_str().unwrap(),
                    d["replaced"].as_bool().unwrap(),
                )
            })
            .collect();
        let detached = faulty != "{}";
        let mut expected = vec![("lcm_grep", "lcm", "RECORDED-lcm_grep", false)];
        if !detached {
            expected.push(("faulty_echo", "faulty", "RECORDED-faulty_echo", false));
        }
        // Detached, faulty is not asked: its tool's calls keep the transcript's results.
        assert_eq!(answered, expected, "faulty {faulty}");
        assert!(
            dispatches.iter().all(|d| d["failed"] == false),
            "faulty {faulty}: {dispatches:#?}"
        );
        // lcm answered from what it had stored by then; the context did not take it.
        assert!(
            dispatches[0]["live"].as_str().unwrap().contains("msg_8"),
            "{}",
            dispatches[0]
        );
        let fell_back = "warning: observer `faulty` was detached, so the transcript's calls of its tool `faulty_echo` keep their recorded results";
        let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with(fell_back)).collect();
        assert_eq!(said.len(), usize::from(detached), "faulty {faulty}: {stderr}");
    }
}

#[test]
fn the_report_names_a_detached_observers_tools_apart_from_those_still_offered_in_text_and_json() {
    let config = format!("{BASE_CONFIG}faulty:\n  observe: fail\n  observe_fail_at: 40\n");
    let tree = observers_tree(&config);
    let transcript = warehouse_calling_observer_tools(tree.root());
    let watched = ["--observer", "lcm", "--observer", "faulty"];
    let (report, _, _) = replay(&tree, &transcript, &watched);
    assert_eq!(
        report["tools"],
        json!(["lcm_grep", "lcm_describe", "lcm_expand", "lcm_status"]),
        "{}",
        report["tools"]
    );
    assert_eq!(
        report["detached_tools"],
        json!([
            {"tool": "faulty_echo", "observer": "faulty"},
            {"tool": "faulty_host_services", "observer": "faulty"},
        ])
    );
    let mut args = vec!["run", transcript.as_str()];
    args.extend_from_slice(&watched);
    let output = tree.run(&args);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let tools = stdout.lines().find(|line| line.starts_with("tools ")).unwrap();
    assert!(
        tools.starts_with(
            "tools       lcm_grep, lcm_describe, lcm_expand, lcm_status; detached with observer `faulty`: faulty_echo, faulty_host_services; "
        ),
        "{stdout}"
    );
}

#[test]
fn ctxhost_tool_asked_for_a_detached_observers_tool_answers_why_it_was_detached() {
    let config = format!("{BASE_CONFIG}faulty:\n  observe: fail\n  observe_fail_at: 40\n");
    let tree = observers_tree(&config);
    let transcript = warehouse_calling_observer_tools(tree.root());
    let output = tree.run(&["tool", &transcript, "faulty_echo", "{}", "--observer", "faulty"]);
    let (stdout, stderr) = texts(&output);
    assert!(
        stdout.contains("observer `faulty` was detached: engine `faulty` failed in `observe`"),
        "{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("Unknown"), "{stdout}");
}

#[test]
fn a_tool_of_the_active_engine_that_panics_answers_with_its_error_and_the_report_says_it_failed() {
    let config = format!("{BASE_CONFIG}faulty:\n  panic_in: handle_tool_call\n").replacen(
        "engine: compressor",
        "engine: faulty",
        1,
    );
    let tree = observers_tree(&config);
    let transcript = warehouse_calling_observer_tools(tree.root());
    let (report, _, _) = replay(&tree, &transcript, &[]);
    let echo = report["tool_dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["tool"] == "faulty_echo")
        .unwrap();
    assert_eq!(
        (&echo["failed"], &echo["replaced"]),
        (&Value::Bool(true), &Value::Bool(true)),
        "{echo}"
    );
    // The active engine's answer replaces the recorded result, a failure's too: the agent would
    // have read that error.
    let live = echo["live"].as_str().unwrap();
    assert!(live.contains("failed in `handle_tool_call`: panic"), "{live}");
    let text = tree.run(&["run", &transcript]);
    let (text, _) = texts(&text);
    let tools = text.lines().find(|line| line.starts_with("tools")).unwrap();
    assert!(
        tools.ends_with("differed from the recorded result; 1 failed, the engine's error their answer)"),
        "{tools}"
    );
    assert!(text.contains("(each contained; the session went on)"), "{text}");
}

/// Replays the warehouse session with the `faulty` observer configured by `faulty_block` and an
/// observer timeout of 1 s, under a watchdog (without the timeout such a run never ends). Checks
/// that it ends with the final context and compactions of the compressor alone, and gives the
/// report and the one warning naming the observer.
fn replay_with_a_stuck_observer(faulty_block: &str) -> (Value, String) {
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let (alone, alone_context, _) = replay(&observers_tree(BASE_CONFIG), &transcript, &[]);
    let config = format!("{BASE_CONFIG}faulty:\n{faulty_block}").replacen(
        "context:\n",
        "context:\n  observer_timeout: 1\n",
        1,
    );
    let tree = observers_tree(&config);
    let out = tree.root().join("final.json");
    let args = [
        "run",
        &transcript,
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--observer",
        "faulty",
    ];
    let output = run_ctxhost_within(tree.root(), &args, std::time::Duration::from_secs(120));
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{faulty_block}: {stderr}");
    assert!(
        fs::read(&out).unwrap() == alone_context,
        "{faulty_block}: the final contexts differ"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        compaction_records(&report),
        compaction_records(&alone),
        "{faulty_block}"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("observer `faulty`"))
        .collect();
    assert_eq!(warnings.len(), 1, "{faulty_block}: {stderr}");
    (report, warnings[0].to_owned())
}

#[test]
fn an_observer_that_never_returns_is_detached_after_the_observer_timeout_and_changes_nothing() {
    let (report, warning) = replay_with_a_stuck_observer("  observe: hang\n  observe_fail_at: 40\n");
    assert!(
        warning.starts_with(
            "warning: observer `faulty` detached: it finished no call in 1 s (stuck in `observe`; `context.observer_timeout`"
        ),
        "{warning}"
    );
    let observer = &report["observers"][0];
    assert!(
        observer["detached"]
            .as_str()
            .unwrap()
            .contains("stuck in `observe`"),
        "{observer}"
    );
}

#[test]
fn an_observer_that_never_finishes_starting_is_left_out_after_the_observer_timeout() {
    // Stuck in `new`, then in a call made while attaching it.
    for (method, stuck_in) in [
        ("new", "`new` (loading or creating the engine)"),
        ("get_tool_schemas", "`get_tool_schemas`"),
    ] {
        let (report, warning) =
            replay_with_a_stuck_observer(&format!("  crash_in: {method}\n  crash: hang\n"));
        assert!(
            warning.starts_with(&format!(
                "warning: observer `faulty` cannot be used: it finished no call in 1 s (stuck in {stuck_in}; "
            )),
            "{method}: {warning}"
        );
        assert!(
            report["observers"].as_array().is_none_or(Vec::is_empty),
            "{method}: it was never attached: {}",
            report["observers"]
        );
        // Said in the report too, for a script reading `--json`.
        let warnings: Vec<&str> = report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            warnings.iter().any(|w| warning.ends_with(w)),
            "{method}: {warnings:?} lacks {warning}"
        );
    }
}

#[test]
fn an_observer_left_out_at_the_start_is_a_warning_of_the_report_and_of_the_event_log() {
    let tree = observers_tree(BASE_CONFIG);
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    let events = tree.root().join("events.jsonl");
    let (report, _, stderr) = replay(
        &tree,
        &transcript,
        &["--observer", "nowhere", "--events", events.to_str().unwrap()],
    );
    let said = "observer `nowhere` cannot be used: no plugin folder `nowhere`";
    assert_eq!(
        stderr.lines().filter(|line| line.contains(said)).count(),
        1,
        "{stderr}"
    );
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(said)),
        "{}",
        report["warnings"]
    );
    let logged = fs::read_to_string(&events).unwrap();
    assert!(
        logged
            .lines()
            .any(|line| line.contains("\"event\":\"warning\"") && line.contains(said)),
        "{logged}"
    );
}

#[test]
fn the_time_the_end_of_the_session_waits_for_a_slow_observer_is_reported() {
    // 2 ms a fact: the replay is over long before the observer, and the session waits for it.
    let config = format!("{BASE_CONFIG}faulty:\n  observe: sleep\n");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    let (report, _, _) = replay(&tree, &transcript, &["--observer", "faulty"]);
    let observer = &report["observers"][0];
    let facts = observer["facts"].as_f64().unwrap();
    let waited = observer["end_wait_ms"].as_f64().unwrap();
    // Most of its facts were still queued at the end; it was not cut off.
    assert!(waited > facts, "{observer}");
    assert!(observer["detached"].is_null(), "{observer}");
    let (text, _) = texts(&tree.run(&["run", &transcript, "--observer", "faulty"]));
    assert!(text.contains(", waited for at the end "), "{text}");
}

#[test]
fn what_is_wrong_with_an_observers_tool_schemas_is_a_warning_of_the_session() {
    let config = format!("{BASE_CONFIG}faulty:\n  bad_tools: true\n");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    let (report, _, _) = replay(&tree, &transcript, &["--observer", "faulty"]);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings, FAULTY_BAD_TOOLS_WARNINGS);
    assert_eq!(
        report["tools"],
        serde_json::json!(["faulty_echo", "faulty_host_services"])
    );
}

#[test]
fn an_observer_failing_in_observe_idle_is_named_by_that_method_in_process_and_isolated() {
    let config = format!("{BASE_CONFIG}faulty:\n  observe: count\n  panic_in: observe_idle\n");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    for isolation in ["in-process", "process"] {
        let (_, _, stderr) = replay(
            &tree,
            &transcript,
            &["--observer", "faulty", "--isolation", isolation],
        );
        // Not "in `call_ext`", the boundary's name for it, which an author never wrote.
        let said = "observer `faulty` cannot be used: engine `faulty` failed in `observe_idle`: panic:";
        assert!(stderr.contains(said), "{isolation}: {stderr}");
    }
}

#[test]
fn crossings_in_bursts_never_compact_twice_whatever_the_observers_timing() {
    // A small window: the threshold is crossed again and again; three observers, one of them
    // sleeping an uneven while on every fact, shift the threads' timing from run to run.
    let config = format!("{BASE_CONFIG}faulty:\n  observe: jitter\n").replace("16000", "6000");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let (alone, alone_context, _) = replay(&tree, &transcript, &[]);
    let records = compaction_records(&alone);
    assert!(records.as_array().unwrap().len() > 20, "{records:#}");
    let watched = [
        "--observer",
        "faulty",
        "--observer",
        "lcm",
        "--observer",
        "telemetry",
    ];
    for run in 0..8 {
        let (report, context, _) = replay(&tree, &transcript, &watched);
        assert!(context == alone_context, "run {run}: the final contexts differ");
        assert_eq!(compaction_records(&report), records, "run {run}");
        let mut seen = std::collections::HashSet::new();
        for record in report["compactions"].as_array().unwrap() {
            let key = (
                record["at_message"].clone().to_string(),
                record["trigger"].to_string(),
            );
            assert!(seen.insert(key), "run {run}: two compactions at once: {record}");
        }
    }
}

/// The telemetry observer's lines.
fn telemetry_lines(tree: &PluginDir) -> Vec<Value> {
    fs::read_to_string(tree.root().join("telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn nothing_is_delivered_for_a_session_before_it_started_or_after_it_ended() {
    let tree = observers_tree(BASE_CONFIG);
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    replay(
        &tree,
        &transcript,
        &["--observer", "telemetry", "--at", "6:/new", "--at", "9:/reset"],
    );
    let lines = telemetry_lines(&tree);
    let (mut started, mut ended) = (Vec::new(), Vec::new());
    for line in &lines {
        let session = line["session_id"].as_str().unwrap().to_owned();
        assert!(
            !ended.contains(&session),
            "a fact after `{session}` ended: {line}"
        );
        if line["kind"] == "session_started" {
            started.push(session.clone());
        }
        assert!(
            started.contains(&session),
            "a fact before `{session}` started: {line}"
        );
        if line["kind"] == "session_ended" {
            ended.push(session);
        }
    }
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(ended.len(), 2, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "session_started").count(), 2);
    // `/reset`'s: `/new` resets between two sessions, where a fact would name one not started.
    assert_eq!(kinds.iter().filter(|k| **k == "session_reset").count(), 1);
    assert_eq!(kinds.first(), Some(&"session_started"));
    assert_eq!(kinds.last(), Some(&"session_ended"));
}

/// A word of the transcript's first messages that `context` no longer holds.
fn forgotten_word(transcript: &Path, context: &[u8]) -> String {
    let context = String::from_utf8_lossy(context);
    let messages: Value = serde_json::from_str(&fs::read_to_string(transcript).unwrap()).unwrap();
    let early = messages["messages"].as_array().unwrap()[..12]
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    early
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|word| word.len() >= 12 && !context.contains(word))
        .expect("the compressor summarised some early word away")
        .to_owned()
}

#[test]
fn lcm_observing_finds_what_the_compressor_summarised_away_and_expands_it() {
    let config = BASE_CONFIG.replace(
        "engine: compressor",
        "engine: compressor\n  observers: [lcm, telemetry]",
    );
    let tree = observers_tree(&config);
    let path = example("transcripts/warehouse-migration.json");
    let transcript = path.display().to_string();
    let (report, context, _) = replay(&tree, &transcript, &[]);
    assert!(report["compactions"].as_array().unwrap().len() > 5);
    assert_eq!(report["engine"], "compressor");
    let word = forgotten_word(&path, &context);
    let pattern = format!("{{\"pattern\": \"{word}\"}}");
    let output = tree.run(&["tool", &transcript, "lcm_grep", &pattern]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let found: Value = serde_json::from_str(&stdout).unwrap();
    let matches = found["matches"].as_array().unwrap();
    assert!(!matches.is_empty(), "{word}: {found:#}");
    // The same session replayed again stored nothing twice.
    let status = tree.run(&["tool", &transcript, "lcm_status", "{}"]);
    let status: Value = serde_json::from_str(&texts(&status).0).unwrap();
    assert_eq!(status["messages"], 373, "{status:#}");
    assert_eq!(
        status["observed_compactions"],
        report["compactions"].as_array().unwrap().len(),
        "{status:#}"
    );
    // lcm_expand of the stored message gives it back exactly.
    let id = matches[0]["id"].as_str().unwrap();
    let expand = format!("{{\"id\": \"{id}\"}}");
    let expanded = tree.run(&["tool", &transcript, "lcm_expand", &expand]);
    let (stdout, stderr) = texts(&expanded);
    assert!(expanded.status.success(), "{stderr}");
    assert!(stdout.contains(&word), "{stdout}");
}

#[test]
fn engine_swaps_show_in_the_report_and_a_swap_that_cannot_load_keeps_the_old_engine() {
    let tree = observers_tree(BASE_CONFIG);
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let events = tree.root().join("events.jsonl");
    let (report, _, stderr) = replay(
        &tree,
        &transcript,
        &["--at", "20:/engine:masking", "--events", events.to_str().unwrap()],
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let spans: Vec<(String, Value, Value)> = report["engine_spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["engine"].as_str().unwrap().to_owned(),
                s["from_message"].clone(),
                s["until_message"].clone(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        vec![
            ("compressor".to_owned(), 0.into(), 20.into()),
            ("masking".to_owned(), 20.into(), 373.into()),
        ]
    );
    // Compactions after the swap are masking's: it keeps every message.
    let after: Vec<&Value> = report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["at_message"].as_u64().unwrap() > 20)
        .collect();
    assert!(!after.is_empty());
    // The compressor had not compacted yet at message 20, and masking keeps every message.
    assert_eq!(after.len(), report["compactions"].as_array().unwrap().len());
    assert_eq!(report["final_messages"], 373);
    // `--json` says whose threshold it gives, as the text report does.
    let whose = report["sources"]["threshold_tokens"].as_str().unwrap();
    assert!(
        whose.starts_with("the threshold_tokens of `masking`, the engine in charge at the end"),
        "{whose}"
    );
    let log = fs::read_to_string(&events).unwrap();
    let swap: Value = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["event"] == "engine_swap")
        .unwrap();
    assert_eq!(swap["from"], "compressor");
    assert_eq!(swap["to"], "masking");
    assert!(swap["refused"].is_null());
    let text = tree.run(&["run", &transcript, "--at", "20:/engine:masking"]);
    let (text, _) = texts(&text);
    assert!(text.contains("owners      compressor messages 0-20; masking messages 20-373"));
    // The threshold read at the end is masking's, and the report says whose it is.
    let window = text.lines().find(|line| line.starts_with("window")).unwrap();
    assert!(
        window.ends_with("(`masking`'s, in charge at the end)"),
        "{window}"
    );

    // The tools the report lists are those offered after the swap.
    let (report, _, _) = replay(&tree, &transcript, &["--at", "20:/engine:lcm"]);
    assert_eq!(report["tools"][0], "lcm_grep", "{:#}", report["tools"]);

    let (report, _, stderr) = replay(&tree, &transcript, &["--at", "20:/engine:nowhere"]);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("cannot swap to engine `nowhere`"),
        "{stderr}"
    );
    assert!(warnings[0].contains("`compressor` stays in charge"), "{stderr}");
    assert_eq!(report["engine_spans"].as_array().unwrap().len(), 1);
}

#[test]
fn a_swap_to_an_observer_failing_as_it_stops_observing_says_both_in_the_text_report() {
    let (tree, transcript) = warehouse_observed_by("faulty");
    tree.config(&format!(
        "{}faulty:\n  panic_in: on_session_end\n",
        fs::read_to_string(tree.root().join("config.yaml")).unwrap()
    ));
    let (report, _, _) = replay(&tree, &transcript, &["--at", "20:/engine:faulty"]);
    let faulty = &report["observers"][0];
    assert_eq!(faulty["took_over"], true, "{faulty:#}");
    assert!(faulty["detached"].is_string(), "{faulty:#}");
    let output = tree.run(&["run", &transcript, "--at", "20:/engine:faulty"]);
    let (stdout, stderr) = texts(&output);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("observers"))
        .unwrap_or_else(|| panic!("{stdout}{stderr}"));
    assert!(
        line.contains("stopped observing to take over the context (its observing instance DETACHED as it stopped: engine `faulty` failed in `on_session_end`"),
        "{line}"
    );
}

#[test]
fn a_swap_to_an_engine_that_observes_makes_it_stop_observing_first() {
    let (tree, transcript) = warehouse_observed_by("lcm, telemetry");
    let (report, _, stderr) = replay(&tree, &transcript, &["--at", "20:/engine:lcm"]);
    // Two instances of lcm on one store failed on its unique keys, and offered each tool twice.
    assert!(!stderr.contains("warning"), "{stderr}");
    let spans = report["engine_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[1]["engine"], "lcm", "{spans:#?}");
    let observers = attached(&report);
    assert_eq!(observers, [("lcm", true), ("telemetry", true)], "{report:#}");
    assert_eq!(report["observers"][0]["took_over"], true);
    assert!(report["observers"][1].get("took_over").is_none());
    let tools = report["tools"].as_array().unwrap();
    let grep_offers = tools.iter().filter(|tool| *tool == "lcm_grep").count();
    assert_eq!(grep_offers, 1, "{tools:?}");
    // Every message is stored once: what lcm observed, then what it was given as the engine.
    let status = tree.run(&["tool", &transcript, "lcm_status", "{}"]);
    let (stdout, stderr) = texts(&status);
    assert!(status.status.success(), "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["messages"], 373, "{status:#}");
    let text = tree.run(&["run", &transcript, "--at", "20:/engine:lcm"]);
    let (stdout, stderr) = texts(&text);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        stdout.contains("lcm (plugin") && stdout.contains("stopped observing to take over the context"),
        "{stdout}"
    );
}

#[test]
fn lcm_swapped_in_then_out_stores_every_message_once_replay_after_replay() {
    // lcm observes, takes over after the compressor compacted, then goes back to observing: the
    // turns it was in charge of since its last compaction are stored when it hands over.
    let (tree, transcript) = warehouse_observed_by("lcm");
    let swaps = ["--at", "200:/engine:lcm", "--at", "300:/engine:masking"];
    for replay_number in 1..=2 {
        let (_, _, stderr) = replay(&tree, &transcript, &swaps);
        assert!(!stderr.contains("warning"), "{stderr}");
        let status = tree.run(&["tool", &transcript, "lcm_status", "{}"]);
        let (stdout, stderr) = texts(&status);
        assert!(status.status.success(), "{stderr}");
        let status: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(status["messages"], 373, "replay {replay_number}: {status:#}");
    }
}

#[test]
fn a_swap_to_the_engine_in_charge_starts_it_afresh_and_ends_the_old_instance_even_on_standby() {
    let config = BASE_CONFIG.replace("engine: compressor", "engine: lcm\n  observers: [lcm, telemetry]");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let (report, _, stderr) = replay(&tree, &transcript, &["--at", "100:/engine:lcm"]);
    assert!(!stderr.contains("warning"), "{stderr}");
    // The old instance did not stay on as an observer of the new one: one lcm, one store writer.
    assert_eq!(attached(&report), [("telemetry", true)], "{report:#}");
    let status = tree.run(&["tool", &transcript, "lcm_status", "{}"]);
    let (stdout, stderr) = texts(&status);
    assert!(status.status.success(), "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["messages"], 373, "{status:#}");
}

#[test]
fn an_observer_stopped_for_a_swap_that_is_then_refused_goes_back_to_observing_and_misses_nothing() {
    // The second instance of faulty (the one swapped in) fails to start.
    let config = BASE_CONFIG.replace("engine: compressor", "engine: compressor\n  observers: [faulty]")
        + "faulty:\n  fail_session_start_from: 2\n  observe: count\n";
    let tree = observers_tree(&config);
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let (unswapped, _, _) = replay(&tree, &transcript, &[]);
    let (report, _, stderr) = replay(&tree, &transcript, &["--at", "20:/engine:faulty"]);
    let refused: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("warning: cannot swap to engine `faulty`"))
        .collect();
    assert_eq!(refused.len(), 1, "{stderr}");
    assert!(
        refused[0].ends_with("(`faulty` keeps observing the session); `compressor` stays in charge"),
        "{stderr}"
    );
    let faulty = &report["observers"][0];
    assert!(faulty["detached"].is_null(), "{faulty:#}");
    assert!(faulty.get("took_over").is_none(), "{faulty:#}");
    assert!(faulty.get("stopped_for_refused_swap").is_none(), "{faulty:#}");
    assert_eq!(faulty["kept_observing_after_refused_swap"], true, "{faulty:#}");
    // Every fact of the session, before the swap and after it, as without the swap.
    assert_eq!(faulty["facts"], unswapped["observers"][0]["facts"], "{faulty:#}");
    assert_eq!(report["observers"].as_array().unwrap().len(), 1, "{report:#}");
    let text = tree.run(&["run", &transcript, "--at", "20:/engine:faulty"]);
    let (stdout, _) = texts(&text);
    assert!(
        stdout.contains("attached to the end (a swap to it was refused; it kept observing)"),
        "{stdout}"
    );
}

#[test]
fn the_active_engine_listed_as_an_observer_observes_once_swapped_out_and_a_repeated_name_is_said() {
    let (tree, transcript) = warehouse_observed_by("compressor, telemetry, telemetry");
    let repeated = "warning: `context.observers` names `telemetry` twice; it observes once";

    // The compressor owns the context to the end: listed, on standby, and the report says so.
    let (report, _, stderr) = replay(&tree, &transcript, &[]);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings, [repeated], "{stderr}");
    assert_eq!(attached(&report), [("telemetry", true)]);
    assert_eq!(report["standby"], serde_json::json!(["compressor"]));
    let text = texts(&tree.run(&["run", &transcript])).0;
    assert!(
        text.contains("compressor: owns the context; it observes once `/engine` swaps it out"),
        "{text}"
    );

    // Swapped out at message 20, it stays on as an observer instead of ending its session.
    let (report, _, stderr) = replay(&tree, &transcript, &["--at", "20:/engine:masking"]);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings, [repeated], "{stderr}");
    let observers = attached(&report);
    assert_eq!(
        observers,
        [("telemetry", true), ("compressor", true)],
        "{report:#}"
    );
    assert!(report.get("standby").is_none(), "{report:#}");
}

#[test]
fn a_swap_to_a_library_rebuilt_on_disk_since_it_was_first_loaded_runs_the_new_code() {
    use ctxhost::{
        config::Settings,
        resolution::{try_resolve_engine, Registry},
        runner::{ReplayOptions, Replayer},
    };
    let tree = PluginDir::new();
    let library = tree.engine("faulty", "ctxhost_test_faulty");
    let config = tree.config("context:\n  engine: compressor\n");
    let settings = Settings::parse(&fs::read_to_string(&config).unwrap(), &config).unwrap();
    let generation =
        |engine: &mut ctxhost::engine::EngineHandle| engine.get_status().unwrap()["generation"].clone();
    // First loaded as it was built.
    let mut first = try_resolve_engine("faulty", &settings, &Registry::default()).unwrap();
    assert_eq!(generation(&mut first), "faulty-generation-A");
    // Rebuilt in place: the same library with its generation changed, as a new build would be.
    let bytes = fs::read(&library).unwrap();
    let (old, new) = (b"faulty-generation-A", b"faulty-generation-B");
    let at = bytes
        .windows(old.len())
        .position(|w| w == old)
        .expect("the generation is in the library");
    let mut rebuilt = bytes.clone();
    rebuilt[at..at + new.len()].copy_from_slice(new);
    // As a build stages it: a new file renamed over the old one (writing into a library a
    // process has mapped would change its running code under it).
    let staged = library.with_extension("new");
    fs::write(&staged, &rebuilt).unwrap();
    fs::rename(&staged, &library).unwrap();
    // A session swaps to it: the new engine is the new code, and the session is the same one.
    let mut engine = ctxhost::resolution::builtin_compressor(&settings);
    let options = ReplayOptions {
        session_id: "swap".into(),
        ..ReplayOptions::default()
    };
    let mut replayer = Replayer::start(&mut engine, &options).with_engine_source(Box::new(|name: &str| {
        try_resolve_engine(name, &settings, &Registry::default()).map_err(|error| error.to_string())
    }));
    replayer.feed(ctxhost_engine_abi::Message::user("hello"), false);
    replayer.run_command(
        ctxhost::runner::SessionCommand::Engine {
            name: "faulty".into(),
        },
        ctxhost::runner::CommandSource::Flag,
    );
    assert_eq!(replayer.engine_name(), "faulty");
    let context = replayer.finish();
    assert_eq!(context.len(), 1);
    assert_eq!(engine.name(), "faulty");
    assert_eq!(generation(&mut engine), "faulty-generation-B");
    // The first instance is still the old code: libraries are never unloaded.
    assert_eq!(generation(&mut first), "faulty-generation-A");
}

#[test]
fn an_observer_block_that_is_not_a_mapping_is_named_in_the_users_words() {
    // Not the name of the plugin's own type (`expected struct Config`).
    let tree =
        observers_tree(&BASE_CONFIG.replace("telemetry:\n  path: telemetry.jsonl\n", "telemetry: 7\n"));
    let transcript = example("transcripts/coupon-fix.json").display().to_string();
    let output = tree.run(&["run", &transcript, "--observer", "telemetry"]);
    let (_, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "config.yaml:14: telemetry: expected a mapping of settings, found a number; the session goes on without it"
        ),
        "{stderr}"
    );
}

#[test]
fn a_swap_to_the_engine_in_charge_loads_it_afresh_and_an_index_past_the_end_is_said() {
    let (tree, transcript) = warehouse_observed_by("telemetry");
    let (report, _, stderr) = replay(
        &tree,
        &transcript,
        &["--at", "20:/engine:compressor", "--at", "999:/compress"],
    );
    let spans: Vec<(&str, u64)> = report["engine_spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|span| {
            (
                span["engine"].as_str().unwrap(),
                span["from_message"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(spans, [("compressor", 0), ("compressor", 20)]);
    let past_the_end = "`--at 999:/compress`: the transcript has 373 messages; it ran at the end";
    assert_eq!(stderr.matches(past_the_end).count(), 1, "{stderr}");
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(past_the_end)),
        "{}",
        report["warnings"]
    );
}

#[test]
fn each_observers_status_is_in_the_report_and_in_json() {
    let (tree, transcript) = warehouse_observed_by("lcm, telemetry");
    let (report, _, _) = replay(&tree, &transcript, &[]);
    let lcm = &report["observers"][0];
    assert_eq!(lcm["status"]["stored_messages"], 373, "{lcm:#}");
    assert!(report["observers"][1]["status"].is_object(), "{report:#}");
    let (stdout, _) = texts(&tree.run(&["run", &transcript]));
    let status_lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(" status: {"))
        .collect();
    assert_eq!(status_lines.len(), 2, "one line per observer:\n{stdout}");
    assert!(
        status_lines[0].trim_start().starts_with("lcm status: {")
            && status_lines[0].contains("\"stored_messages\":373"),
        "{stdout}"
    );
    assert!(
        status_lines[1].trim_start().starts_with("telemetry status: {"),
        "{stdout}"
    );
}

/// OpenHands records its agent's tool definitions in the `system` event's `args`: an observer
/// offering one of those names is told apart there too.
#[test]
fn the_tools_of_an_openhands_system_event_are_the_agents_own() {
    let config = format!("{BASE_CONFIG}faulty:\n  echo_tool: execute_bash\n");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/iso-week.openhands.json")
        .display()
        .to_string();
    let (report, _, stderr) = replay(&tree, &transcript, &["--observer", "faulty"]);
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("`execute_bash`")).collect();
    assert_eq!(
        said,
        ["warning: observer `faulty` offers the tool `execute_bash`, which the agent has itself; the agent's own calls of it are left to the transcript's recorded results"],
        "{stderr}"
    );
    assert_eq!(report["tool_dispatches"], serde_json::json!([]), "{report:#}");
}

#[test]
fn an_observer_offering_a_tool_the_agent_has_itself_is_said_once_and_never_given_its_calls() {
    let config = format!("{BASE_CONFIG}faulty:\n  echo_tool: terminal\n");
    let tree = observers_tree(&config);
    // The warehouse session with its agent's tools recorded, as Hermes's session_meta and the
    // API's requests record them, ahead of its messages; and its calls to lcm's tool.
    let with_calls: Value =
        serde_json::from_str(&fs::read_to_string(warehouse_calling_observer_tools(tree.root())).unwrap())
            .unwrap();
    let tools = serde_json::json!(["terminal", "read_file", "patch"]
        .map(|name| serde_json::json!({"type": "function", "function": {"name": name}})));
    let transcript = tree.root().join("with-tools.json");
    fs::write(
        &transcript,
        format!(r#"{{"tools": {tools}, "messages": {}}}"#, with_calls["messages"]),
    )
    .unwrap();
    let transcript = transcript.display().to_string();
    let (alone, alone_context, _) = replay(&tree, &transcript, &[]);
    let watched = ["--observer", "faulty", "--observer", "lcm"];
    let (report, context, stderr) = replay(&tree, &transcript, &watched);
    assert!(context == alone_context, "the final contexts differ");
    assert_eq!(compaction_records(&report), compaction_records(&alone));
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("`terminal`")).collect();
    assert_eq!(
        said,
        ["warning: observer `faulty` offers the tool `terminal`, which the agent has itself; the agent's own calls of it are left to the transcript's recorded results"],
        "{stderr}"
    );
    let answered: Vec<(&str, &str)> = report["tool_dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["tool"].as_str().unwrap(), d["engine"].as_str().unwrap()))
        .collect();
    // lcm's tool, which the agent does not have otherwise, is still answered live.
    assert_eq!(answered, [("lcm_grep", "lcm")], "{report:#}");
    assert!(
        !report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "terminal"),
        "{}",
        report["tools"]
    );
    // The same list after the messages comes too late for the streamed replay: said at the end.
    let late = tree.root().join("tools-after.json");
    fs::write(
        &late,
        format!(r#"{{"messages": {}, "tools": {tools}}}"#, with_calls["messages"]),
    )
    .unwrap();
    let (report, context, stderr) = replay(&tree, &late.display().to_string(), &watched);
    assert!(context == alone_context, "the final contexts differ");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("tools-after.json: it lists its tools after its messages"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("`terminal`") && said[0].contains("observer `faulty`"),
        "{stderr}"
    );
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("lists its tools after its messages")),
        "{report:#}"
    );
}

/// The README's observers example gives the figures it shows: the compressor's compactions and
/// the facts lcm observed. A change to what the compressor keeps moves them, and the README
/// must follow (a tester found 31 and 404 against the README's 30 and 403).
#[test]
fn the_readmes_observers_example_gives_the_figures_it_shows() {
    let config = fs::read_to_string(example("observers.yaml"))
        .unwrap()
        .replace("plugins_dir: ../plugins", "")
        .replace("../.cache/lcm/observers.sqlite", "store/lcm.sqlite")
        .replace("../.cache/telemetry/observers.jsonl", "telemetry.jsonl");
    let tree = observers_tree(&config);
    let transcript = example("transcripts/warehouse-migration.json")
        .display()
        .to_string();
    let (report, _, stderr) = replay(&tree, &transcript, &[]);
    let compactions = report["compactions"].as_array().unwrap().len();
    let lcm = report["observers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|observer| observer["name"] == "lcm")
        .unwrap_or_else(|| panic!("{stderr}"));
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    for shown in [
        format!("the same compactions as the compressor alone ({compactions} of them)"),
        format!("{} facts observed", lcm["facts"]),
        format!("and {compactions} compactions;"),
    ] {
        assert!(readme.contains(&shown), "the README does not show {shown:?}");
    }
}
