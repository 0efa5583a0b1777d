//! `context.isolation: process`: a plugin that aborts, segfaults, exits, loops forever, allocates
//! without bound or panics with `panic = "abort"` ends its own process, never the host's; and,
//! in process, what each of them does to the host (what the README says).

use std::{
    fs,
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
};

use ctxhost::{
    config::{Isolation, Settings},
    engine::{CompressCall, EngineHandle},
    resolution::{resolve_engine, Registry},
};
use ctxhost_engine_abi::{messages_from_json, Message, ModelInfo, SessionInfo};
use ctxhost_engine_kit::sequence::find_sequence_problems;

use crate::support::{example_messages, example_transcript, texts, PluginDir};

/// Each bad plugin, and the words that name its end in the report.
const BAD_PLUGINS: [(&str, &str); 6] = [
    ("abort", "killed by SIGABRT"),
    ("segfault", "killed by SIGSEGV"),
    ("exit", "exited with code 3"),
    ("hang", "s deadline "),
    ("allocate", "memory allocation of"),
    ("panic_abort", "told to panic (built with panic = \"abort\")"),
];

/// Deadlines short enough that a hanging plugin ends quickly, long enough that a healthy call never
/// misses them on a loaded machine; an address space small enough to fill at once.
const BOUNDS: &str = "isolation:\n  deadlines:\n    start: 10\n    compress: 3\n    handle_tool_call: 3\n    other: 3\n  limits:\n    address_space_mb: 256\n";

/// A plugin tree whose config selects `engine` (and `observers`), isolated, with `faulty:` told
/// to end its process as `crash` in `method`.
fn tree_with(engine: &str, observers: &[&str], method: &str, crash: &str) -> PluginDir {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!(
        "context:\n  engine: {engine}\n  observers: [{}]\n  isolation: process\nmodel:\n  context_length: 16000\n{BOUNDS}faulty:\n  crash_in: {method}\n  crash: {crash}\n",
        observers.join(", ")
    ));
    tree
}

/// Processes still running whose command line names `root` (a child of the host would, by its
/// `--config` and `--plugins-dir`).
fn processes_naming(root: &Path) -> Vec<String> {
    let root = root.display().to_string();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(&root).then_some(cmdline)
        })
        .collect()
}

/// Runs `args` plus `--out` in `tree`; checks the host survived to the end with a valid context
/// written and no child left; returns the report, stderr and the final context.
fn run_surviving(tree: &PluginDir, args: &[&str], case: &str) -> (String, String, Vec<Message>) {
    let out = tree.root().join("final.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--out", out.to_str().unwrap()]);
    let output = tree.run(&all);
    let (stdout, stderr) = texts(&output);
    assert!(
        output.status.success(),
        "{case}: the host survives: {:?}\n{stdout}\n{stderr}",
        output.status
    );
    let context = messages_from_json(&fs::read_to_string(&out).unwrap()).unwrap();
    assert!(
        find_sequence_problems(&context).is_empty(),
        "{case}: the final context is valid"
    );
    assert_eq!(
        processes_naming(tree.root()),
        Vec::<String>::new(),
        "{case}: no child left running"
    );
    (stdout, stderr, context)
}

#[test]
fn each_bad_plugin_in_compress_costs_its_process_and_never_the_context() {
    for (crash, cause) in BAD_PLUGINS {
        let tree = tree_with("faulty", &[], "compress", crash);
        let (stdout, stderr, context) = run_surviving(&tree, &["run", &example_transcript()], crash);
        // What the child printed as it died (a panic message, an allocation failure) says whose
        // it is: on the host's terminal a bare `panicked at …` reads as the host's own.
        for line in stderr.lines() {
            assert!(
                line.starts_with("warning: ") || line.starts_with("engine `faulty` (process "),
                "{crash}: a line that says neither what nor whose: {line:?}\n{stderr}"
            );
        }
        assert!(
            stdout.contains("KEPT the context as it was: engine `faulty` failed in `compress`"),
            "{crash}:\n{stdout}"
        );
        assert!(
            stdout.contains(cause),
            "{crash}: the report names the cause:\n{stdout}"
        );
        assert!(
            stdout.contains("the state the engine kept in memory is lost"),
            "{crash}:\n{stdout}"
        );
        assert_eq!(context, example_messages(), "{crash}: nothing was lost");
    }
}

#[test]
fn each_bad_plugin_in_every_other_method_is_contained() {
    // Every method, each bad plugin in turn: every method and every way of ending meet at least
    // once without running all 90 pairs. `--at` makes the replay call `has_content_to_compress`
    // (/compress) and `on_session_reset` (/reset).
    let methods = [
        "new",
        "update_model",
        "on_session_start",
        "get_tool_schemas",
        "update_from_response",
        "should_compress",
        "should_compress_preflight",
        "has_content_to_compress",
        "on_session_reset",
        "call_ext",
        "get_status",
        "on_session_end",
        "counters",
    ];
    for (index, method) in methods.iter().enumerate() {
        let (crash, cause) = BAD_PLUGINS[index % BAD_PLUGINS.len()];
        let case = format!("{crash} in {method}");
        let tree = tree_with("faulty", &[], method, crash);
        let transcript = example_transcript();
        let args = ["run", &transcript, "--at", "10:/compress", "--at", "20:/reset"];
        let (stdout, stderr, _) = run_surviving(&tree, &args, &case);
        let both = format!("{stdout}\n{stderr}");
        assert!(both.contains(cause), "{case}: the cause is named:\n{both}");
        assert!(both.contains("`faulty`"), "{case}: the plugin is named:\n{both}");
    }
}

#[test]
fn a_tool_call_that_kills_its_process_is_answered_with_the_cause() {
    let tree = tree_with("faulty", &[], "handle_tool_call", "segfault");
    let output = tree.run(&["tool", &example_transcript(), "faulty_echo", "{}"]);
    let (_, stderr) = texts(&output);
    // As with any failed tool call: one error line naming the engine and the cause, exit code 1.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("engine `faulty` failed in `handle_tool_call`: its process was killed by SIGSEGV"),
        "{stderr}"
    );
    assert_eq!(processes_naming(tree.root()), Vec::<String>::new());
}

#[test]
fn an_observer_that_kills_its_process_is_detached_and_changes_nothing() {
    let plain = PluginDir::new();
    plain.config("model:\n  context_length: 16000\n");
    let (_, _, expected) = run_surviving(&plain, &["run", &example_transcript()], "no observer");
    let methods = [
        "observe",
        "update_from_response",
        "on_session_start",
        "observe",
        "on_session_end",
        "update_model",
    ];
    for ((crash, cause), method) in BAD_PLUGINS.iter().zip(methods) {
        let case = format!("observer: {crash} in {method}");
        let tree = tree_with("compressor", &["faulty"], method, crash);
        let (stdout, stderr, context) = run_surviving(&tree, &["run", &example_transcript()], &case);
        let both = format!("{stdout}\n{stderr}");
        assert!(both.contains("observer `faulty` detached"), "{case}:\n{both}");
        assert!(both.contains(cause), "{case}: the cause is named:\n{both}");
        if *crash == "hang" {
            // By the call the user knows (`observe`), not the wire's `call_ext` that carries it.
            let deadline = format!("deadline of `{method}` (`isolation.deadlines.other`)");
            assert!(both.contains(&deadline), "{case}:\n{both}");
        }
        // It is detached: what a crash costs an engine's memory does not concern it.
        assert!(
            !both.contains("the state the engine kept in memory is lost"),
            "{case}:\n{both}"
        );
        assert_eq!(context, expected, "{case}: the session went on as without it");
    }
}

#[test]
fn a_plugin_crashing_every_time_is_detached_and_the_built_in_compressor_takes_over() {
    let tree = tree_with("faulty", &[], "should_compress", "exit");
    let (stdout, stderr, context) = run_surviving(&tree, &["run", &example_transcript()], "exit");
    assert!(
        stdout.contains(
            "its process was lost 3 times: the engine is detached and the built-in compressor takes over"
        ),
        "{stdout}"
    );
    // The cause once: not "engine `faulty` detached: engine `faulty` failed in …".
    assert!(
        stdout.contains("fallback: engine `faulty` failed in `should_compress`"),
        "{stdout}"
    );
    assert_eq!(
        stderr.matches("the engine is detached").count(),
        1,
        "the detachment is said once:\n{stderr}"
    );
    // The compressor compacted once it took over: the context is not the transcript any more.
    assert!(
        stdout.contains("1 applied") || stdout.contains("compactions 1"),
        "{stdout}"
    );
    assert!(context.len() < example_messages().len());
    // Whose context it was, and from when.
    let owners = stdout
        .lines()
        .find(|line| line.starts_with("owners"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        owners.starts_with("owners      faulty messages 0-") && owners.contains("; compressor messages "),
        "{owners}"
    );
}

#[test]
fn the_fallback_line_stays_when_a_swap_follows_the_detach_of_the_engine() {
    let tree = tree_with("faulty", &[], "should_compress", "exit");
    // Three crashes (three tool turns) detach faulty long before message 30.
    let args = ["run", &example_transcript(), "--at", "30:/engine:compressor"];
    let (stdout, _, _) = run_surviving(&tree, &args, "swap after detach");
    let owners = stdout
        .lines()
        .find(|line| line.starts_with("owners"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        owners.starts_with("owners      faulty messages 0-")
            && owners.ends_with("; compressor messages 30-42"),
        "{owners}"
    );
    assert!(
        stdout.contains("fallback: engine `faulty` failed in `should_compress`"),
        "{stdout}"
    );
}

#[test]
fn a_child_past_its_cpu_time_limit_is_ended_by_the_operating_system() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(
        "context:\n  engine: faulty\n  isolation: process\nmodel:\n  context_length: 16000\nisolation:\n  deadlines:\n    compress: 60\n  limits:\n    cpu_seconds: 1\nfaulty:\n  crash_in: compress\n  crash: hang\n",
    );
    let (stdout, _, _) = run_surviving(&tree, &["run", &example_transcript()], "cpu limit");
    assert!(stdout.contains("its process was killed by SIGXCPU"), "{stdout}");
}

#[test]
fn the_isolation_flag_overrides_the_config() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!(
        "context:\n  engine: faulty\n  isolation: in-process\nmodel:\n  context_length: 16000\n{BOUNDS}faulty:\n  crash_in: compress\n  crash: exit\n"
    ));
    let (stdout, _, _) = run_surviving(
        &tree,
        &["--isolation", "process", "run", &example_transcript()],
        "--isolation process",
    );
    assert!(stdout.contains("its process exited with code 3"), "{stdout}");
    let error = tree.run(&["--isolation", "sandbox", "run", &example_transcript()]);
    assert!(!error.status.success());
    assert!(texts(&error).1.contains("sandbox"));
}

#[test]
fn in_process_the_same_plugins_take_the_host_down() {
    // What the README says happens without isolation; `hang` and `allocate` are left out here
    // (the host would loop forever, or take the machine's memory).
    for (crash, expected) in [
        ("abort", Some(6)),
        ("segfault", Some(11)),
        ("exit", None),
        ("panic_abort", Some(6)),
    ] {
        let tree = PluginDir::new();
        tree.engine("faulty", "ctxhost_test_faulty");
        tree.config(&format!(
            "context:\n  engine: faulty\nmodel:\n  context_length: 16000\nfaulty:\n  crash_in: compress\n  crash: {crash}\n"
        ));
        let out = tree.root().join("final.json");
        let output = tree.run(&["run", &example_transcript(), "--out", out.to_str().unwrap()]);
        assert_eq!(output.status.signal(), expected, "{crash}: {:?}", output.status);
        if expected.is_none() {
            assert_eq!(output.status.code(), Some(3), "{crash}");
        }
        assert!(!out.exists(), "{crash}: no output was written");
    }
}

/// A `compress` of `messages`, whose last user message the caller appended.
fn compress_call(messages: &[Message]) -> CompressCall<'_> {
    CompressCall {
        user_message: messages
            .iter()
            .rev()
            .find(|m| m.role == ctxhost_engine_abi::Role::User),
        ..CompressCall::default()
    }
}

fn isolated_settings(tree: &PluginDir) -> Settings {
    let mut settings = Settings::load(&tree.root().join("config.yaml")).unwrap();
    settings.isolation = Isolation::Process;
    settings.isolation_settings.server = Some(PathBuf::from(env!("CARGO_BIN_EXE_ctxhost")));
    settings
}

/// `Z` when `pid` is a zombie, `None` when it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

#[test]
fn after_a_crash_a_fresh_child_is_in_the_session_and_the_old_one_is_reaped() {
    let tree = tree_with("faulty", &[], "compress", "segfault");
    let settings = isolated_settings(&tree);
    let resolution = resolve_engine("faulty", &settings, &Registry::default());
    assert!(resolution.fallback.is_none());
    let mut engine: EngineHandle = resolution.engine;
    let model = ModelInfo {
        model: "m".into(),
        context_length: 16_000,
        ..ModelInfo::default()
    };
    engine.update_model(&model).unwrap();
    engine.on_session_start("s", &SessionInfo::default()).unwrap();
    let first = engine.process_id().expect("a child runs the engine");
    let messages = example_messages();
    let call = compress_call(&messages);
    let error = engine.compress(&messages, None, &call).unwrap_err();
    assert!(error.to_string().contains("SIGSEGV"), "{error}");
    assert_eq!(engine.process_id(), None, "the crashed child is gone");
    assert_eq!(process_state(first), None, "and reaped, not a zombie");
    // The next call starts a fresh child, told the model (its threshold comes from the window).
    let status = engine.get_status().unwrap();
    let second = engine.process_id().expect("a fresh child");
    assert_ne!(first, second);
    assert_eq!(status["context_length"], 16_000, "{status}");
    assert_eq!(
        engine.counters().unwrap().threshold_tokens,
        status["threshold_tokens"].as_u64().unwrap()
    );
    drop(engine);
    assert_eq!(
        process_state(second),
        None,
        "the last child is reaped when the handle goes"
    );
}

/// The engine `faulty` resolved as `isolation` says, its `compress` spoiling its answer as
/// `spoil` says, told the model.
fn spoiling(spoil: &str, isolation: Isolation) -> (PluginDir, EngineHandle) {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config(&format!(
        "context:\n  engine: faulty\nmodel:\n  context_length: 16000\n{BOUNDS}faulty:\n  invalid_output: {spoil}\n"
    ));
    let mut settings = isolated_settings(&tree);
    settings.isolation = isolation;
    let resolution = resolve_engine("faulty", &settings, &Registry::default());
    assert!(resolution.fallback.is_none(), "{:?}", resolution.fallback);
    let mut engine = resolution.engine;
    let model = ModelInfo {
        model: "m".into(),
        context_length: 16_000,
        ..ModelInfo::default()
    };
    engine.update_model(&model).unwrap();
    (tree, engine)
}

#[test]
fn an_isolated_engines_answer_that_breaks_the_contract_is_refused_as_in_process_and_its_process_lives_on() {
    let messages = example_messages();
    let json = ctxhost_engine_abi::messages_to_json(&messages);
    let call = compress_call(&messages);
    for spoil in ["drop_system", "drop_last_user", "orphan_result", "empty"] {
        let (_in_tree, mut in_process) = spoiling(spoil, Isolation::InProcess);
        let (_tree, mut isolated) = spoiling(spoil, Isolation::Process);
        let pid = isolated.process_id().expect("a child runs the engine");
        // With the context's JSON kept by the caller (as the replay keeps it), and without.
        for given in [Some(json.as_str()), None] {
            let expected = in_process.compress(&messages, given, &call).unwrap_err();
            let refused = isolated.compress(&messages, given, &call).unwrap_err();
            assert_eq!(refused.to_string(), expected.to_string(), "{spoil}");
            assert!(
                refused
                    .to_string()
                    .contains("returned an invalid result from `compress`"),
                "{spoil}: {refused}"
            );
        }
        assert_eq!(
            isolated.process_id(),
            Some(pid),
            "{spoil}: a bad answer is not a crash"
        );
        assert_eq!(
            isolated.counters().unwrap(),
            in_process.counters().unwrap(),
            "{spoil}: the counters as the engine keeps them"
        );
    }
}

#[test]
fn an_isolated_engine_compacts_as_in_process_and_tells_an_unchanged_context_apart() {
    // Masking at a small window stays over its threshold on prose: it is asked before every model
    // call, applies a stand-in now and then and answers with the context unchanged the rest of
    // the time. In its own process, both answers must read as they do in the host's.
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.config("context:\n  engine: masking\nmodel:\n  context_length: 4000\n");
    let transcript = crate::support::example("transcripts/warehouse-migration.json");
    let transcript = transcript.to_str().unwrap();
    let compactions = |report: &str| -> Vec<(String, u64, u64)> {
        let report: serde_json::Value = serde_json::from_str(report).unwrap();
        report["compactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let status = c["outcome"]["status"].as_str().unwrap().to_owned();
                (
                    status,
                    c["tokens_before"].as_u64().unwrap(),
                    c["tokens_after"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (in_process, _, in_process_context) =
        run_surviving(&tree, &["run", transcript, "--json"], "in process");
    let (isolated, _, isolated_context) = run_surviving(
        &tree,
        &["--isolation", "process", "run", transcript, "--json"],
        "isolated",
    );
    assert_eq!(isolated_context, in_process_context);
    let (in_process, isolated) = (compactions(&in_process), compactions(&isolated));
    assert_eq!(isolated, in_process);
    for status in ["applied", "nothing_to_compact"] {
        assert!(
            in_process.iter().any(|(seen, ..)| seen == status),
            "the session has a compaction {status}: {in_process:?}"
        );
    }
}

#[test]
fn an_isolated_plugins_failure_names_its_files_as_the_same_one_in_process_does() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    // `plugins/` beside it: the host names its files relative to where it runs.
    tree.config("model:\n  context_length: 16000\nfaulty:\n  panic_in: new\n");
    let said = |isolation: &str| {
        let args = [
            "run",
            &example_transcript(),
            "--observer",
            "faulty",
            "--isolation",
            isolation,
        ];
        let (_, stderr) = texts(&tree.run(&args));
        stderr
            .lines()
            .find(|line| line.starts_with("warning: observer `faulty` cannot be used"))
            .unwrap_or_else(|| panic!("{isolation}: {stderr}"))
            .to_owned()
    };
    let in_process = said("in-process");
    assert!(
        in_process.contains("cannot be used: plugins/context_engine/faulty/"),
        "{in_process}"
    );
    assert_eq!(said("process"), in_process);
}

#[test]
fn an_isolated_engines_log_lines_and_the_configs_warnings_read_as_in_process_and_once() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    // A misspelt key: the host says it; its child, reading the same file, does not again.
    tree.config("context:\n  engine: faulty\nmodel:\n  context_length: 8000\n  defualt: x\n");
    let said = |isolation: &str| {
        let (_, stderr) = texts(&tree.run(&["run", &example_transcript(), "--isolation", isolation]));
        stderr
            .lines()
            .filter(|line| line.contains("faulty engine compressing") || line.contains("defualt"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let in_process = said("in-process");
    assert!(
        in_process[1].starts_with("warning: engine `faulty`: faulty engine compressing"),
        "{in_process:?}"
    );
    assert_eq!(
        in_process.iter().filter(|l| l.contains("defualt")).count(),
        1,
        "{in_process:?}"
    );
    // Not `warning: session s1: engine …`: that session is the child's, not one the user has.
    assert_eq!(said("process"), in_process);
}
