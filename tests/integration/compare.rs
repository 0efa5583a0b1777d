//! `ctxhost compare`: one transcript through several engines, one table.

use serde_json::Value;

use crate::support::{example_transcript, texts, PluginDir};

/// The example's window: small, so that every engine compacts.
const WINDOW: &str = "model:\n  context_length: 16000\n";

/// Runs `compare` on the example with `args` after it; returns stdout and stderr, asserting success.
fn compare(tree: &PluginDir, args: &[&str]) -> (String, String) {
    let transcript = example_transcript();
    let mut all = vec!["compare", transcript.as_str()];
    all.extend_from_slice(args);
    let output = tree.run(&all);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    (stdout, stderr)
}

fn compare_json(tree: &PluginDir, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (stdout, _) = compare(tree, &all);
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}:\n{stdout}"))
}

/// The line of the table for `label`.
fn row<'a>(table: &'a str, label: &str) -> &'a str {
    table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(label))
        .unwrap_or_else(|| panic!("no row `{label}` in\n{table}"))
}

/// `line` up to where `column` ends in `header`: a right-aligned figure ends there.
fn cell_ending_with<'a>(header: &str, line: &'a str, column: &str) -> &'a str {
    let end = header.find(column).expect("the column is in the header") + column.len();
    &line[..end]
}

#[test]
fn the_compressor_and_the_masking_plugin_share_one_aligned_table() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config(&format!("{WINDOW}masking:\n  keep_last: 4\n"));
    let (stdout, stderr) = compare(&tree, &["--engines", "compressor,masking"]);
    assert!(!stderr.contains("warning"), "{stderr}");
    let header = row(&stdout, "engine");
    for column in ["peak", "final", "saved", "identifiers kept", "engine ms"] {
        assert!(header.contains(column), "{header}");
    }
    let compressor = row(&stdout, "compressor");
    let masking = row(&stdout, "masking");
    assert!(compressor.contains("built-in"), "{stdout}");
    assert!(masking.contains("plugin"), "{stdout}");
    // Aligned: the figures of each column end at the same place in every row.
    for line in [compressor, masking] {
        let cell = cell_ending_with(header, line, "engine ms");
        assert!(cell.ends_with(|c: char| c.is_ascii_digit()), "{header}\n{line}");
    }
    assert!(stdout.contains("window      16,000 tokens"), "{stdout}");
}

#[test]
fn the_compressor_under_two_configurations_gives_two_different_rows() {
    let tree = PluginDir::new();
    tree.config(&format!(
        "{WINDOW}compare:\n  tight:\n    threshold: 0.3\n    target_ratio: 0.1\n"
    ));
    let report = compare_json(
        &tree,
        &[
            "--engines",
            "compressor,compressor@tight,compressor@late",
            "--set",
            "late.threshold=0.9",
        ],
    );
    let rows = report["engines"].as_array().unwrap();
    let labels: Vec<_> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["compressor", "compressor@tight", "compressor@late"]);
    for row in rows {
        assert_eq!(row["status"], "ran", "{row}");
        assert_eq!(row["engine"], "compressor");
    }
    let thresholds: Vec<_> = rows
        .iter()
        .map(|r| r["threshold_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(thresholds, [8_000, 4_800, 14_400]);
    assert_eq!(rows[1]["config"]["threshold"], 0.3);
    assert_eq!(rows[1]["config"]["target_ratio"], 0.1);
    assert_eq!(rows[2]["config"]["threshold"], 0.9);
    let applied = |i: usize| rows[i]["compactions_applied"].as_u64().unwrap();
    let final_tokens = |i: usize| rows[i]["final_tokens"].as_u64().unwrap();
    assert!(applied(1) > applied(0), "{report:#}");
    assert!(final_tokens(1) < final_tokens(0), "{report:#}");
    assert_ne!(final_tokens(2), final_tokens(0), "{report:#}");
}

#[test]
fn an_engine_that_cannot_be_loaded_gets_its_own_row_and_the_others_still_run() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(WINDOW);
    let (stdout, stderr) = compare(
        &tree,
        &[
            "--engines",
            "lcm,faulty@broken,compressor,faulty@panics",
            "--set",
            "broken.fail_factory=refused on purpose",
            "--set",
            "panics.panic_in=compress",
        ],
    );
    let lcm = row(&stdout, "lcm");
    assert!(
        lcm.contains("NOT LOADED: no plugin folder `lcm`"),
        "never the compressor under another name:\n{stdout}"
    );
    assert!(
        row(&stdout, "faulty@broken").contains("NOT LOADED:")
            && row(&stdout, "faulty@broken").contains("refused on purpose"),
        "{stdout}"
    );
    assert!(row(&stdout, "compressor").contains("built-in"), "{stdout}");
    let panics = row(&stdout, "faulty@panics");
    assert!(
        panics.contains("plugin"),
        "a contained failure still has figures:\n{stdout}"
    );
    assert!(
        stdout.contains("faulty@panics: "),
        "the first error is shown:\n{stdout}"
    );
    // One warning per engine that cannot be used (the panicking engine's own lines aside).
    let warnings: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:") && l.contains("cannot be used"))
        .collect();
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(warnings[0].contains("engine `lcm` cannot be used"), "{stderr}");
    assert!(
        !stderr.contains("running the built-in compressor instead"),
        "{stderr}"
    );
}

#[test]
fn json_gives_the_transcript_and_one_object_per_engine() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config(WINDOW);
    let report = compare_json(&tree, &["--engines", "compressor,masking,lcm"]);
    for key in [
        "transcript",
        "format",
        "messages",
        "context_length",
        "window",
        "token_counter",
        "uncompacted_tokens",
    ] {
        assert!(!report[key].is_null(), "{key}: {report:#}");
    }
    assert_eq!(report["window"], 16_000);
    let rows = report["engines"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let masking = &rows[1];
    for key in [
        "label",
        "engine",
        "config",
        "source",
        "threshold_tokens",
        "compactions_applied",
        "compactions_kept",
        "peak_tokens",
        "final_tokens",
        "final_messages",
        "tokens_saved",
        "tokens_compacted_away",
        "retention",
        "engine_time_ms",
        "errors",
    ] {
        assert!(masking.get(key).is_some(), "{key}: {masking:#}");
    }
    assert_eq!(masking["status"], "ran");
    assert_eq!(masking["source"]["kind"], "plugin");
    let retention = &masking["retention"];
    let (mean, min) = (
        retention["mean_share"].as_f64().unwrap(),
        retention["min_share"].as_f64().unwrap(),
    );
    assert!(
        (0.0..=1.0).contains(&min) && min <= mean && mean <= 1.0,
        "{retention}"
    );
    assert_eq!(
        masking["tokens_saved"].as_i64().unwrap(),
        report["uncompacted_tokens"].as_i64().unwrap() - masking["final_tokens"].as_i64().unwrap()
    );
    assert_eq!(rows[2]["status"], "not_loaded");
    assert!(
        rows[2]["reason"].as_str().unwrap().contains("lcm"),
        "{:#}",
        rows[2]
    );
    assert!(
        rows[2].get("peak_tokens").is_none(),
        "no figures for an engine that did not run"
    );
}

#[test]
fn a_label_with_no_configuration_is_one_line_and_nothing_runs() {
    let tree = PluginDir::new();
    tree.config(WINDOW);
    let output = tree.run(&[
        "compare",
        &example_transcript(),
        "--engines",
        "compressor,compressor@tight",
    ]);
    let (stdout, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no named configuration `tight`"), "{stderr}");
}

/// A tree where `telemetry` (which never compacts) can be compared with the compressor in an
/// 8,000-token window the example outgrows.
fn telemetry_in_a_small_window() -> PluginDir {
    let tree = PluginDir::new();
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    let telemetry = tree.root().join("telemetry.jsonl");
    tree.config(&format!(
        "model:\n  context_length: 8000\ntelemetry:\n  path: {}\n",
        telemetry.display()
    ));
    tree
}

#[test]
fn a_warning_met_during_one_row_names_the_row() {
    // Several engines replay one after another: "the context went over the window" alone does
    // not say which of them let it.
    let tree = telemetry_in_a_small_window();
    let (_, stderr) = compare(&tree, &["--engines", "compressor,telemetry"]);
    let over: Vec<_> = stderr
        .lines()
        .filter(|line| line.starts_with("warning: the context went over the window"))
        .collect();
    assert_eq!(over.len(), 1, "{stderr}");
    assert!(over[0].ends_with(r#" compare="telemetry""#), "{stderr}");
}

#[test]
fn the_table_marks_the_peak_of_an_engine_that_went_over_the_window() {
    let tree = telemetry_in_a_small_window();
    let (stdout, _) = compare(&tree, &["--engines", "compressor,telemetry"]);
    let header = row(&stdout, "engine");
    let peak = |label: &str| cell_ending_with(header, row(&stdout, label), "peak").to_owned();
    assert!(peak("telemetry").ends_with(" OVER"), "{stdout}");
    assert!(
        peak("compressor").ends_with(|c: char| c.is_ascii_digit()),
        "{stdout}"
    );
    let said: Vec<_> = stdout.lines().filter(|line| line.contains("OVER THE")).collect();
    assert_eq!(said.len(), 1, "{stdout}");
    assert!(
        said[0].starts_with("telemetry: OVER THE 8,000-TOKEN WINDOW: ")
            && said[0].contains(" model calls over it, first "),
        "{stdout}"
    );
    let json = compare_json(&tree, &["--engines", "compressor,telemetry"]);
    assert!(json["engines"][0]["over_window"].is_null(), "{json}");
    assert_eq!(json["engines"][1]["over_window"]["window"], 8000, "{json}");
}

#[test]
fn fail_over_window_fails_compare_after_the_table_naming_the_engines_that_went_over() {
    let tree = telemetry_in_a_small_window();
    let transcript = example_transcript();
    let output = tree.run(&[
        "compare",
        &transcript,
        "--engines",
        "compressor,telemetry",
        "--fail-over-window",
    ]);
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // The table is printed first: the failure does not hide the figures.
    row(&stdout, "telemetry");
    let error: Vec<_> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(
        error,
        ["error: --fail-over-window: the context went over the 8,000-token window with `telemetry`"],
        "{stderr}"
    );
    // Every engine kept within the window: success.
    let within = tree.run(&[
        "compare",
        &transcript,
        "--engines",
        "compressor",
        "--fail-over-window",
    ]);
    assert!(within.status.success(), "{}", texts(&within).1);
}

#[test]
fn the_json_has_each_rows_session_warnings() {
    let tree = telemetry_in_a_small_window();
    let json = compare_json(&tree, &["--engines", "compressor,telemetry"]);
    assert_eq!(json["engines"][0]["warnings"], serde_json::json!([]), "{json}");
    let warnings = json["engines"][1]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{json}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("the context went over the window before message "),
        "{json}"
    );
    assert_eq!(json["transcript_warnings"], serde_json::json!([]), "{json}");
}

/// A tree with `faulty`, and the arguments comparing `engines`, where `faulty@crashes` runs
/// isolated and aborts in `method`.
fn crashing_in(method: &str, engines: &str) -> (PluginDir, Vec<String>) {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(WINDOW);
    let args = [
        "--engines",
        engines,
        "--set",
        &format!("crashes.crash_in={method}"),
        "--set",
        "crashes.crash=abort",
        "--isolation",
        "process",
    ];
    (tree, args.map(str::to_owned).to_vec())
}

#[test]
fn an_isolated_engine_detached_mid_replay_gets_no_figures_of_the_compressors() {
    let (tree, args) = crashing_in("update_from_response", "faulty@crashes,compressor");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (stdout, _) = compare(&tree, &args);
    let crashes = row(&stdout, "faulty@crashes");
    // No source, threshold or figure: the reason right after the label.
    assert_eq!(crashes.split_whitespace().nth(1), Some("DETACHED,"), "{stdout}");
    let report = compare_json(&tree, &args);
    assert_eq!(report["engines"][0]["status"], "detached", "{report}");
    assert_eq!(report["engines"][1]["status"], "ran", "{report}");
}

#[test]
fn an_isolated_engine_crashing_as_it_resumes_its_session_is_detached_naming_that_call() {
    let (tree, args) = crashing_in("on_session_start", "faulty@crashes");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = compare_json(&tree, &args);
    let engine = &report["engines"][0];
    assert_eq!(engine["status"], "detached", "{report}");
    // The calls that found each fresh process dead are not where it died: that is named too.
    let reason = engine["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "killed by SIGABRT, in `on_session_start` (a fresh process is given it to resume the session)"
        ),
        "{reason}"
    );
}

#[test]
fn the_configs_observers_are_said_to_be_left_out_not_dropped_in_silence() {
    let tree = PluginDir::new();
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    let telemetry = tree.root().join("telemetry.jsonl");
    tree.config(&format!(
        "{WINDOW}context:\n  observers: [telemetry]\ntelemetry:\n  path: {}\n",
        telemetry.display()
    ));
    let (_, stderr) = compare(&tree, &["--engines", "compressor"]);
    assert!(
        stderr.contains("warning: `context.observers` (telemetry) are not attached: each row of `compare` measures its engine alone"),
        "{stderr}"
    );
    assert!(!telemetry.exists(), "nothing observed");
}
