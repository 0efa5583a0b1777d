//! The summarizer against the real model: a model-written, grounded summary; each useless answer
//! falling back; a server gone mid-session aborting with the context unchanged; a refused key
//! aborting without the key showing anywhere.

use serde_json::Value;

use crate::support::{debugging_session, ModelServer, Workspace, MODEL};

/// Facts of [`debugging_session`]'s middle that a grounded summary keeps, whatever the model wrote.
const FACTS: [&str; 5] = [
    "src/coupons/apply.py",
    "src/coupons/rules.py",
    "pytest -q tests/test_coupons.py",
    "AssertionError: expected 90.0, got 100.0",
    "keep the signature of apply_coupon unchanged",
];

fn model_name() -> String {
    format!("model:{MODEL}")
}

fn details(compaction: &Value) -> &Value {
    &compaction["details"]
}

#[test]
fn a_replayed_transcript_gets_a_grounded_summary_written_by_the_model() {
    let server = ModelServer::start();
    let workspace = Workspace::new(&server.base_url, "    max_tokens: 200\n    extra:\n      temperature: 0\n");
    let transcript = workspace.write_transcript("session.json", &debugging_session(14));
    let run = workspace.ctxhost("run", &transcript, &["--context-length", "8000"], &[]);

    let compactions = run.compactions();
    assert!(!compactions.is_empty(), "no compaction:\n{}", run.printed);
    let last = compactions.last().unwrap();
    assert_eq!(last["outcome"]["status"], "applied", "{last}\n{}", server.log());
    assert_eq!(details(last)["summarizer"], model_name(), "{last}");
    assert_eq!(details(last)["outcome"], "compacted", "{last}");
    assert_eq!(details(last)["written_by"], model_name(), "{last}");
    assert_eq!(run.report["status"]["summarizer"], model_name());

    let summary = run.summary();
    assert!(
        summary.contains(&format!("by the {} summarizer", model_name())),
        "{summary}"
    );
    for fact in FACTS {
        assert!(summary.contains(fact), "{fact} is missing:\n{summary}");
    }
    assert!(!summary.contains("FALLBACK"), "{summary}");
}
