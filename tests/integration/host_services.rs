//! What the host offers plugin engines through the ABI: a summary and token counts.

use ctxhost::{config::Settings, discovery::discover_plugins, resolution::load_plugin};
use serde_json::json;

use crate::support::{example_messages, PluginDir};

#[test]
fn a_plugin_built_with_the_sdk_obtains_a_summary_and_token_counts_from_the_host() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let config = "context:\n  engine: faulty\n  tokenizer: o200k_base\n";
    let settings = Settings::parse(config, &tree.root().join("config.yaml")).unwrap();
    let folder = discover_plugins(&settings.plugins_dir).unwrap().remove(0);
    let mut engine = load_plugin(&folder, &settings).unwrap();
    let messages = example_messages()[..20].to_vec();

    let answer = engine
        .handle_tool_call("faulty_host_services", &json!({}), Some(&messages))
        .unwrap();

    assert_eq!(answer["error"], serde_json::Value::Null, "{answer}");
    assert_eq!(
        answer["summarizer"], "extractive",
        "no model is configured: {answer}"
    );
    let summary = answer["summary"].as_str().unwrap();
    assert!(summary.contains("## Goal"), "{summary}");
    assert!(
        summary.contains("src/shopfront/checkout/cart.py"),
        "facts survive: {summary}"
    );
    let tokens: Vec<u64> = serde_json::from_value(answer["tokens"].clone()).unwrap();
    assert_eq!(tokens.len(), messages.len());
    assert!(tokens[1] > 10, "the first request is counted: {tokens:?}");
    assert!(
        tokens[3] > tokens[1],
        "a long tool output counts more than a short request: {tokens:?}"
    );
}
