use std::path::Path;

use ctxhost_engine_kit::retention::Retention;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{report::align_columns, *};
use crate::{
    report::EngineSource,
    runner::{CompactionRecord, EngineFault, Outcome, ReplayOutcome, Trigger},
};

fn settings(yaml: &str) -> (tempfile::TempDir, Settings) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::parse(yaml, &dir.path().join("config.yaml")).unwrap();
    (dir, settings)
}

fn entries(list: &str) -> Vec<String> {
    list.split(',').map(str::to_owned).collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn an_entry_is_an_engine_name_with_an_optional_label() {
    assert_eq!(
        parse_engine_choice(" compressor@tight ").unwrap(),
        EngineChoice {
            label: "compressor@tight".into(),
            engine: "compressor".into(),
            configuration: Some("tight".into()),
        }
    );
    assert_eq!(parse_engine_choice("masking").unwrap().configuration, None);
    for bad in ["@tight", "compressor@", "compressor@a.b", "a b"] {
        assert_eq!(
            parse_engine_choice(bad),
            Err(CompareError::BadEntry(bad.into())),
            "{bad}"
        );
    }
}

#[test]
fn a_set_reads_its_value_as_yaml_and_its_key_as_a_path() {
    assert_eq!(
        parse_override("tight.threshold=0.3").unwrap(),
        Override {
            label: "tight".into(),
            path: vec!["threshold".into()],
            value: json!(0.3),
        }
    );
    assert_eq!(parse_override("a.b.c=true").unwrap().path, vec!["b", "c"]);
    assert_eq!(parse_override("a.b=true").unwrap().value, json!(true));
    assert_eq!(parse_override("a.b=hello").unwrap().value, json!("hello"));
    assert_eq!(parse_override("a.b=[1, 2]").unwrap().value, json!([1, 2]));
    for bad in [
        "tight",
        "tight=0.3",
        ".threshold=1",
        "tight..x=1",
        "a.b=[unclosed",
    ] {
        assert!(
            matches!(parse_override(bad), Err(CompareError::BadSet { .. })),
            "{bad}"
        );
    }
}

#[test]
fn merging_lays_mappings_key_by_key_and_replaces_the_rest() {
    let mut base = json!({"threshold": 0.5, "nested": {"a": 1, "b": 2}, "list": [1]});
    merge_block(
        &mut base,
        &json!({"threshold": 0.3, "nested": {"b": 3}, "list": [2]}),
    );
    assert_eq!(
        base,
        json!({"threshold": 0.3, "nested": {"a": 1, "b": 3}, "list": [2]})
    );
    let mut null = Value::Null;
    merge_block(&mut null, &json!({"keep_last": 2}));
    assert_eq!(null, json!({"keep_last": 2}));
}

#[test]
fn a_named_configuration_is_laid_over_the_engines_own_block_then_the_sets_over_it() {
    let (_dir, settings) = settings(
        "compression:\n  threshold: 0.6\n  protect_last_n: 4\nmasking:\n  keep_last: 4\ncompare:\n  tight:\n    threshold: 0.3\n    target_ratio: 0.1\n",
    );
    let planned = plan_engines(
        &settings,
        &entries("compressor,compressor@tight,masking@two"),
        &strings(&["tight.target_ratio=0.15", "two.keep_last=2"]),
    )
    .unwrap();
    let labels: Vec<_> = planned.iter().map(|p| p.choice.label.as_str()).collect();
    assert_eq!(labels, ["compressor", "compressor@tight", "masking@two"]);
    assert_eq!(planned[0].block["threshold"], json!(0.6));
    assert_eq!(planned[1].block["threshold"], json!(0.3));
    assert_eq!(planned[1].block["target_ratio"], json!(0.15));
    assert_eq!(planned[1].block["protect_last_n"], json!(4));
    let tight = planned[1].settings.as_ref().unwrap();
    assert_eq!(tight.compression.threshold, 0.3);
    assert_eq!(tight.compression.protect_last_n, 4);
    assert_eq!(settings.compression.threshold, 0.6, "the base is unchanged");
    assert_eq!(planned[2].block, json!({"keep_last": 2}));
    assert_eq!(
        planned[2].settings.as_ref().unwrap().engine_block("masking"),
        json!({"keep_last": 2})
    );
}

#[test]
fn a_configuration_the_compressor_cannot_take_is_that_rows_problem_naming_the_key() {
    let (_dir, settings) = settings("compare:\n  typo:\n    threshhold: 0.3\n");
    let planned = plan_engines(
        &settings,
        &entries("compressor@typo,compressor@wild"),
        &strings(&["wild.threshold=3"]),
    )
    .unwrap();
    let typo = planned[0].settings.as_ref().unwrap_err();
    assert!(
        typo.starts_with("compare.typo.threshhold: not a key of the compressor's block"),
        "{typo}"
    );
    assert_eq!(
        planned[1].settings.as_ref().unwrap_err(),
        "compare.wild.threshold: must be between 0 and 1, got 3"
    );
}

#[test]
fn mistakes_in_the_command_stop_before_anything_runs() {
    let (_dir, settings) = settings("");
    let plan =
        |list: &str, sets: &[&str]| plan_engines(&settings, &entries(list), &strings(sets)).map(|_| ());
    assert_eq!(
        plan("compressor,masking,compressor", &[]),
        Err(CompareError::Duplicate("compressor".into()))
    );
    assert_eq!(
        plan("compressor@tight", &[]),
        Err(CompareError::UnknownLabel {
            entry: "compressor@tight".into(),
            label: "tight".into()
        })
    );
    assert_eq!(
        plan("compressor", &["tight.threshold=0.3"]),
        Err(CompareError::UnusedSet {
            label: "tight".into()
        })
    );
    assert_eq!(plan(",", &[]), Err(CompareError::BadEntry(String::new())));
}

#[test]
fn a_compare_block_that_is_not_a_mapping_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = Settings::parse("compare:\n  tight: 0.3\n", &dir.path().join("config.yaml"))
        .unwrap_err()
        .to_string();
    assert!(error.contains(":2: `compare.tight` must be a mapping"), "{error}");
}

fn compaction(before: u64, after: u64, outcome: Outcome, share: Option<f64>) -> CompactionRecord {
    CompactionRecord {
        at_message: 10,
        turn: 4,
        trigger: Trigger::Threshold,
        focus: None,
        tokens_before: before,
        tokens_after: after,
        messages_before: 10,
        messages_after: 5,
        duration_ms: 1.0,
        outcome,
        retention: share.map(|share| Retention {
            total: 10,
            kept: (share * 10.0) as usize,
            share,
            lost: Vec::new(),
            lost_unlisted: 0,
            lost_by_kind: Default::default(),
        }),
        details: None,
    }
}

#[test]
fn the_figures_count_applied_and_kept_compactions_and_sum_up_retention() {
    let outcome = ReplayOutcome {
        compactions: vec![
            compaction(9_000, 3_000, Outcome::Applied, Some(1.0)),
            compaction(
                8_000,
                8_000,
                Outcome::Kept {
                    reason: "refused".into(),
                },
                None,
            ),
            compaction(8_500, 4_000, Outcome::Applied, Some(0.6)),
        ],
        faults: vec![EngineFault {
            at_message: 20,
            message: "engine `x` failed".into(),
        }],
        peak_tokens: 8_500,
        final_tokens: 5_000,
        final_messages: 12,
        engine_time_ms: 3.5,
        warnings: vec!["tool `grep` is offered twice".into()],
        ..ReplayOutcome::default()
    };
    let figures = summarise_outcome(
        &outcome,
        EngineSource::BuiltIn,
        /*uncompacted_tokens*/ 20_000,
    );
    assert_eq!(
        figures,
        EngineFigures {
            source: EngineSource::BuiltIn,
            threshold_tokens: 0,
            compactions_applied: 2,
            compactions_kept: 1,
            nothing_to_compact: 0,
            peak_tokens: 8_500,
            over_window: None,
            final_tokens: 5_000,
            final_messages: 12,
            tokens_saved: 15_000,
            tokens_compacted_away: 10_500,
            retention: Some(RetentionSummary {
                compactions: 2,
                mean_share: 0.8,
                min_share: 0.6,
                facts_kept: 16,
                facts_total: 20,
            }),
            engine_time_ms: 3.5,
            errors: 1,
            first_error: Some("engine `x` failed".into()),
            warnings: vec!["tool `grep` is offered twice".into()],
        }
    );
    let quiet = summarise_outcome(&ReplayOutcome::default(), EngineSource::BuiltIn, 0);
    assert_eq!(quiet.retention, None);

    // A compaction that replaced no identifier is no 100% in the mean (verify17).
    let mut none_replaced = compaction(7_000, 6_000, Outcome::Applied, Some(1.0));
    if let Some(retention) = none_replaced.retention.as_mut() {
        (retention.total, retention.kept) = (0, 0);
    }
    let outcome = ReplayOutcome {
        compactions: vec![
            compaction(9_000, 3_000, Outcome::Applied, Some(0.5)),
            none_replaced,
        ],
        ..ReplayOutcome::default()
    };
    let retention = summarise_outcome(&outcome, EngineSource::BuiltIn, 0)
        .retention
        .unwrap();
    assert_eq!((retention.compactions, retention.mean_share), (1, 0.5));
}

#[test]
fn columns_are_aligned_and_a_row_without_figures_spans_them() {
    let columns = [("engine", false), ("peak", true), ("final", true)];
    let rows = vec![
        strings(&["compressor", "7,532", "7"]),
        strings(&["m", "11", "4,168"]),
        strings(&["lcm", "NOT LOADED: no plugin folder named `lcm`"]),
    ];
    assert_eq!(
        align_columns(&columns, &rows),
        "engine       peak  final\n\
         compressor  7,532      7\n\
         m              11  4,168\n\
         lcm         NOT LOADED: no plugin folder named `lcm`\n"
    );
}

fn survey_example() -> TranscriptSurvey {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/transcripts/coupon-fix.json");
    survey_transcript(&path, &ReadOptions::default(), TokenCounter::rough()).unwrap()
}

#[test]
fn each_engine_replays_the_same_transcript_and_a_missing_one_gets_a_row_of_its_own() {
    let (_dir, settings) = settings(
        "model:\n  context_length: 16000\ncompare:\n  tight:\n    threshold: 0.3\n    target_ratio: 0.1\n",
    );
    let survey = survey_example();
    let planned = plan_engines(&settings, &entries("compressor,compressor@tight,lcm"), &[]).unwrap();
    let options = replay_options(&settings, &survey.path, &survey.meta, 16_000);
    let length = resolve_context_length(None, &settings, &survey.meta);
    let report = compare_engines(planned, &survey, length, &options);
    assert_eq!(report.messages, 42);
    assert!(report.uncompacted_tokens > 8_000, "{}", report.uncompacted_tokens);
    let figures = |index: usize| match &report.engines[index].result {
        RowResult::Ran(figures) => figures.as_ref().clone(),
        other => panic!("row {index}: {other:?}"),
    };
    let (plain, tight) = (figures(0), figures(1));
    assert_eq!(plain.threshold_tokens, 8_000);
    assert_eq!(tight.threshold_tokens, 4_800);
    assert!(
        tight.compactions_applied > plain.compactions_applied,
        "{plain:?}\n{tight:?}"
    );
    assert!(plain.tokens_saved > 0);
    assert!(
        matches!(&report.engines[2].result, RowResult::NotLoaded { reason } if reason.contains("lcm")),
        "{:?}",
        report.engines[2]
    );
    let text = report.render_text();
    assert!(text.contains("compressor@tight: {"), "{text}");
    assert!(text.contains("lcm               NOT LOADED: "), "{text}");
}
