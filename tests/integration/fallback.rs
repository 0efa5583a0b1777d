//! Selection and fallback: on any failure, one warning naming the engine and the reason, then the
//! built-in compressor runs.

use std::fs;

use crate::support::{example_transcript, manifest, texts, PluginDir};

/// Runs the example transcript with `engine` selected and returns (stdout, warnings).
fn run_selecting(tree: &PluginDir, engine: &str, extra_config: &str) -> (String, Vec<String>) {
    tree.config(&format!("context:\n  engine: {engine}\n{extra_config}"));
    let output = tree.run(&["run", &example_transcript()]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "a fallback is not a failure:\n{stderr}");
    let warnings = stderr
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .map(str::to_owned)
        .collect();
    (stdout, warnings)
}

fn assert_fell_back(tree: &PluginDir, engine: &str, extra_config: &str, reason: &str) {
    let (stdout, warnings) = run_selecting(tree, engine, extra_config);
    assert_eq!(warnings.len(), 1, "exactly one warning: {warnings:?}");
    assert!(
        warnings[0].contains(&format!("engine `{engine}` cannot be used")),
        "{warnings:?}"
    );
    assert!(
        warnings[0].contains(reason),
        "expected {reason:?} in {warnings:?}"
    );
    assert!(stdout.contains("engine      compressor (built-in)"), "{stdout}");
}

#[test]
fn an_engine_that_is_nowhere_falls_back_with_one_warning() {
    let tree = PluginDir::new();
    assert_fell_back(
        &tree,
        "lcm",
        "",
        "no plugin folder `lcm` in plugins/context_engine",
    );
    // A plugins directory that is not there is said to be missing, not searched in silence.
    assert_fell_back(
        &tree,
        "lcm",
        "  plugins_dir: nowhere\n",
        "no plugin folder `lcm` in nowhere/context_engine (no such directory)",
    );
}

#[test]
fn a_truncated_library_falls_back() {
    let tree = PluginDir::new();
    let library = tree.engine("masking", "ctxhost_engine_masking");
    let bytes = fs::read(&library).unwrap();
    fs::write(&library, &bytes[..4096]).unwrap();
    assert_fell_back(&tree, "masking", "", "cannot open the library");
}

#[test]
fn a_deleted_library_falls_back() {
    let tree = PluginDir::new();
    let library = tree.engine("masking", "ctxhost_engine_masking");
    fs::remove_file(library).unwrap();
    assert_fell_back(&tree, "masking", "", "no library");
}

#[test]
fn a_library_with_another_interface_layout_falls_back() {
    let tree = PluginDir::new();
    let dir = tree.folder("alien", Some(&manifest("alien", 1)));
    let source = crate::support::built_library("ctxhost_test_alien");
    fs::copy(&source, dir.join(source.file_name().unwrap())).unwrap();
    assert_fell_back(&tree, "alien", "", "engine interface layout mismatch");
}

#[test]
fn a_library_of_an_unsupported_abi_version_falls_back() {
    let tree = PluginDir::new();
    let dir = tree.folder("future", Some(&manifest("future", 1)));
    let source = crate::support::built_library("ctxhost_test_future");
    fs::copy(&source, dir.join(source.file_name().unwrap())).unwrap();
    assert_fell_back(
        &tree,
        "future",
        "",
        "built for engine ABI version 2; this host supports 1",
    );
}

#[test]
fn a_manifest_declaring_an_unsupported_abi_version_falls_back_without_opening() {
    let tree = PluginDir::new();
    let library = tree.engine("masking", "ctxhost_engine_masking");
    fs::write(
        library.parent().unwrap().join("plugin.yaml"),
        manifest("masking", 9),
    )
    .unwrap();
    assert_fell_back(
        &tree,
        "masking",
        "",
        "built for engine ABI version 9; this host supports 1",
    );
}

#[test]
fn a_failing_factory_falls_back_with_its_message() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    assert_fell_back(
        &tree,
        "faulty",
        "faulty:\n  fail_factory: no database at /nowhere\n",
        "factory failed",
    );
    let (_, warnings) = run_selecting(
        &tree,
        "faulty",
        "faulty:\n  fail_factory: no database at /nowhere\n",
    );
    assert!(warnings[0].contains("no database at /nowhere"), "{warnings:?}");
}

#[test]
fn a_wrong_value_in_an_engines_block_is_named_with_its_file_line_and_key() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    let block = "masking:\n  min_chars: 100\n  keep_last: many\n";
    assert_fell_back(
        &tree,
        "masking",
        block,
        "config.yaml:5: masking.keep_last: invalid type: string \"many\", expected usize",
    );
    // A key left empty keeps its default.
    let (stdout, warnings) = run_selecting(&tree, "masking", "masking:\n  keep_last:\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(stdout.contains("engine      masking"), "{stdout}");
}

#[test]
fn a_panicking_factory_falls_back_and_the_host_survives() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    assert_fell_back(&tree, "faulty", "faulty:\n  panic_in: new\n", "factory panicked");
}

#[test]
fn a_plugin_is_never_activated_by_being_present() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config("model:\n  context_length: 16000\n");
    let (stdout, stderr) = texts(&tree.run(&["run", &example_transcript()]));
    assert!(stdout.contains("engine      compressor (built-in)"), "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn the_engine_flag_overrides_the_config() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config("context:\n  engine: compressor\n");
    let (stdout, stderr) = texts(&tree.run(&["run", &example_transcript(), "--engine", "masking"]));
    assert!(
        stdout.contains("engine      masking (plugin "),
        "{stdout}\n{stderr}"
    );
}
