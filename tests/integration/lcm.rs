//! The lcm plugin through the real binary: compaction of the bundled example, the tools from the
//! command line, a second process on the same store, an unreachable summarizer, and processes
//! killed with SIGKILL in the middle of compactions.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use ctxhost_engine_abi::Message;
use ctxhost_lcm::synthetic;
use rusqlite::Connection;
use serde_json::{json, Value};

use crate::support::{ctxhost, example, example_transcript, texts, PluginDir};

fn lcm_tree(config: &str) -> PluginDir {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.config(config);
    tree
}

fn run_json(tree: &PluginDir, args: &[&str]) -> Value {
    let output = tree.run(args);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

fn applied(report: &Value) -> usize {
    report["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"]["status"] == "applied")
        .count()
}

const WAREHOUSE_CONFIG: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 24000\n\
lcm:\n  database: store/lcm.sqlite\n  fresh_tail: 16\n  leaf_chunk_tokens: 4000\n";

#[test]
fn the_example_compacts_several_times_and_the_tools_find_and_expand_its_first_message() {
    let tree = lcm_tree(WAREHOUSE_CONFIG);
    let transcript = example("transcripts/warehouse-migration.json");
    let transcript = transcript.to_str().unwrap();
    let report = run_json(&tree, &["run", transcript, "--json"]);
    assert_eq!(report["engine"], "lcm");
    assert!(applied(&report) >= 5, "{}", report["compactions"]);
    assert!(
        report["faults"].as_array().unwrap().is_empty(),
        "{}",
        report["faults"]
    );
    // Relative to the config file's directory.
    assert!(tree.root().join("store/lcm.sqlite").is_file());

    // A second process replays the transcript, then answers from the whole store.
    let found = run_json(
        &tree,
        &["tool", transcript, "lcm_grep", r#"{"pattern": "issue #700"}"#],
    );
    let hit = &found["matches"][0];
    assert_eq!(hit["role"], "user", "{found}");
    let leaf = hit["summary"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("not summarised: {found}"));
    let expanded = run_json(
        &tree,
        &[
            "tool",
            transcript,
            "lcm_expand",
            &json!({ "id": leaf, "max_tokens": 1_000_000 }).to_string(),
        ],
    );
    let original: Value = serde_json::from_str::<Value>(&fs::read_to_string(transcript).unwrap()).unwrap()
        ["messages"][1]
        .clone();
    let sources = expanded["sources"].as_array().unwrap();
    let source = sources
        .iter()
        .find(|s| s["id"] == hit["id"])
        .unwrap_or_else(|| panic!("{expanded}"));
    let returned: Value = serde_json::from_str(source["json"].as_str().unwrap()).unwrap();
    assert_eq!(returned, original);
    assert_eq!(
        source["json"].as_str().unwrap(),
        serde_json::to_string(&original).unwrap()
    );

    // Three replays stored the transcript once.
    let conn = Connection::open(tree.root().join("store/lcm.sqlite")).unwrap();
    let stored: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        stored as usize,
        report["messages_replayed"].as_u64().unwrap() as usize
    );
}

/// The README's example session gives the ids it shows: summary ids are hashes of what they
/// hold, so a change to what the summarizer writes changes them, and the README must follow.
#[test]
fn the_readmes_lcm_example_finds_the_summaries_it_shows() {
    let config = fs::read_to_string(example("lcm.yaml"))
        .unwrap()
        .replace("../.cache/lcm/example.sqlite", "store/lcm.sqlite")
        .replace("plugins_dir: ../plugins", "");
    let tree = lcm_tree(&config);
    let transcript = example("transcripts/warehouse-migration.json");
    let transcript = transcript.to_str().unwrap();
    run_json(&tree, &["run", transcript, "--json"]);
    let found = run_json(
        &tree,
        &["tool", transcript, "lcm_grep", r#"{"pattern": "issue #700"}"#],
    );
    let summary = &found["matches"][0]["summary"];
    let shown = format!(
        "\"summary\": {{ \"id\": {}, \"ancestors\": [{}] }}",
        summary["id"],
        summary["ancestors"]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    assert!(readme.contains(&shown), "the README does not show {shown}");
}

#[test]
fn the_default_store_is_in_the_data_directory_beside_the_config_file() {
    let tree = lcm_tree("context:\n  engine: lcm\nmodel:\n  context_length: 16000\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let config = tree.root().join("config.yaml");
    let plugins = tree.plugins();
    let transcript = example("transcripts/coupon-fix.json");
    let output = ctxhost()
        .current_dir(elsewhere.path())
        .args([
            "--config",
            config.to_str().unwrap(),
            "--plugins-dir",
            plugins.to_str().unwrap(),
        ])
        .args(["run", transcript.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", texts(&output).1);
    assert!(tree.root().join(".ctxhost/lcm.sqlite").is_file());
    assert!(
        fs::read_dir(elsewhere.path()).unwrap().next().is_none(),
        "nothing written in the current directory"
    );
}

#[test]
fn an_unreachable_summarizer_writes_no_summary_and_keeps_the_context() {
    let tree = lcm_tree(
        "context:\n  engine: lcm\nmodel:\n  context_length: 16000\nlcm:\n  database: lcm.sqlite\n\
auxiliary:\n  compression:\n    model: some-model\n    base_url: http://127.0.0.1:9/v1\n    api_key: x\n    timeout: 5\n",
    );
    let transcript = example("transcripts/coupon-fix.json");
    let report = run_json(&tree, &["run", transcript.to_str().unwrap(), "--json"]);
    let compactions = report["compactions"].as_array().unwrap();
    assert!(!compactions.is_empty());
    assert_eq!(applied(&report), 0, "{}", report["compactions"]);
    let conn = Connection::open(tree.root().join("lcm.sqlite")).unwrap();
    let summaries: i64 = conn
        .query_row("SELECT count(*) FROM summaries", [], |r| r.get(0))
        .unwrap();
    let messages: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(summaries, 0);
    assert!(messages > 0, "the messages are stored all the same");
}

/// A long synthetic transcript with a sentinel in its first request.
fn long_transcript(dir: &Path, turns: usize) -> (PathBuf, Vec<String>) {
    let mut messages = synthetic::conversation(42, turns, 1_500);
    messages.insert(
        1,
        Message::user("first request: deploy SENTINEL-CRASH-0042 to staging"),
    );
    let path = dir.join("long.json");
    fs::write(&path, json!({ "messages": messages }).to_string()).unwrap();
    let jsons = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    (path, jsons)
}

fn stored_jsons(conn: &Connection) -> Vec<String> {
    let mut statement = conn.prepare("SELECT json FROM messages ORDER BY seq").unwrap();
    let rows = statement.query_map([], |row| row.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// What a store must satisfy after any crash.
fn check_store(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    if version == 0 {
        // Killed between opening the file (which creates it) and committing the schema: nothing
        // was stored, and the next run writes the schema as for a new file.
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0, "a schema written in part, without its version");
        return Vec::new();
    }
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let broken_keys: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(broken_keys, 0, "a lineage row points nowhere");
    let orphans: i64 = conn
        .query_row(
            "SELECT count(*) FROM summaries s WHERE \
             (s.kind = 'leaf' AND s.descendant_count != (SELECT count(*) FROM summary_messages m WHERE m.summary_id = s.id)) \
             OR (s.kind = 'condensed' AND (SELECT count(*) FROM summary_sources x WHERE x.summary_id = s.id) = 0)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "a summary without its whole lineage");
    stored_jsons(&conn)
}

#[test]
fn a_process_killed_in_the_middle_of_compactions_loses_nothing() {
    let tree = lcm_tree(
        "context:\n  engine: lcm\nmodel:\n  context_length: 5000\nlcm:\n  database: crash.sqlite\n  fresh_tail: 6\n  fan_in: 2\n",
    );
    let (transcript, jsons) = long_transcript(tree.root(), 300);
    let database = tree.root().join("crash.sqlite");
    // Kills land within one whole run's time, however fast this machine runs it: a fixed range
    // let most runs finish before their kill on a fast machine, and the test then saw too few.
    let timed = Instant::now();
    let output = tree.run(&["run", transcript.to_str().unwrap()]);
    assert!(output.status.success(), "{}", texts(&output).1);
    let whole_run_ms = (timed.elapsed().as_millis() as usize).max(40);
    for file in ["crash.sqlite", "crash.sqlite-wal", "crash.sqlite-shm"] {
        let _ = std::fs::remove_file(tree.root().join(file));
    }
    let mut rng = synthetic::Rng::new(7);
    let mut stored = Vec::new();
    let mut kills = 0;
    let started = Instant::now();
    while kills < 10 && started.elapsed() < Duration::from_secs(30) {
        let mut child = ctxhost()
            .current_dir(tree.root())
            .args(["run", transcript.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(10 + rng.below(whole_run_ms) as u64));
        // SIGKILL on Unix: no destructor, no flush, no checkpoint runs.
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            continue; // it finished before the kill
        }
        kills += 1;
        if !database.exists() {
            continue;
        }
        let now = check_store(&database);
        assert!(now.starts_with(&stored), "a message stored before a kill is gone");
        assert!(
            jsons.starts_with(&now),
            "the store holds something the transcript does not"
        );
        stored = now;
    }
    assert!(kills >= 3, "only {kills} processes were killed");

    // A complete run after the crashes stores the rest, exactly once.
    let output = tree.run(&["run", transcript.to_str().unwrap()]);
    assert!(output.status.success(), "{}", texts(&output).1);
    assert_eq!(check_store(&database), jsons);
    let found = run_json(
        &tree,
        &[
            "tool",
            transcript.to_str().unwrap(),
            "lcm_grep",
            r#"{"pattern": "SENTINEL-CRASH-0042"}"#,
        ],
    );
    assert_eq!(found["matches"].as_array().unwrap().len(), 1, "{found}");
}

#[test]
fn sessions_are_separate_and_a_new_process_sees_them() {
    let tree =
        lcm_tree("context:\n  engine: lcm\nmodel:\n  context_length: 16000\nlcm:\n  database: s.sqlite\n");
    let write = |name: &str, text: &str| {
        let path = tree.root().join(format!("{name}.json"));
        let messages = json!({ "messages": [
            { "role": "system", "content": "sys" },
            { "role": "user", "content": text },
            { "role": "assistant", "content": "ok" },
        ] });
        fs::write(&path, messages.to_string()).unwrap();
        path.display().to_string()
    };
    let (a, b) = (
        write("alpha", "alpha has PLANTED-ALPHA-1"),
        write("beta", "beta has nothing"),
    );
    for transcript in [&a, &b] {
        assert!(tree.run(&["run", transcript]).status.success());
    }
    let grep = r#"{"pattern": "PLANTED-ALPHA-1", "mode": "full_text"}"#;
    let in_alpha = run_json(&tree, &["tool", &a, "lcm_grep", grep]);
    let in_beta = run_json(&tree, &["tool", &b, "lcm_grep", grep]);
    assert_eq!(in_alpha["matches"].as_array().unwrap().len(), 1, "{in_alpha}");
    assert_eq!(in_beta["matches"].as_array().unwrap().len(), 0, "{in_beta}");
    let status = run_json(&tree, &["tool", &b, "lcm_status", "{}"]);
    assert_eq!(status["messages"], 3, "{status}");
    assert_eq!(status["messages_in_store"], 6, "{status}");

    // A tool's `{"error": …}` is still printed, and the process fails for a script to notice.
    let output = tree.run(&["tool", &a, "lcm_grep", r#"{"pattern": "("}"#]);
    let (stdout, stderr) = texts(&output);
    assert!(!output.status.success(), "a tool error exited 0: {stdout}");
    let answer: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert!(
        answer["error"].as_str().unwrap().contains("invalid regex"),
        "{answer}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("`lcm_grep` answered with an error: invalid regex"),
        "{stderr}"
    );
}

/// Two transcripts named alike are two sessions (verify16: `a/chat.jsonl` and `b/chat.jsonl`, or
/// `x.openai.json` beside `x.openai.jsonl`, were one, and a grep in one found the other's
/// messages); the same file is the same session in the next process.
#[test]
fn transcripts_named_alike_are_separate_sessions() {
    let tree =
        lcm_tree("context:\n  engine: lcm\nmodel:\n  context_length: 16000\nlcm:\n  database: s.sqlite\n");
    let write = |path: &str, text: &str| {
        let path = tree.root().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let messages = json!([
            { "role": "system", "content": "sys" },
            { "role": "user", "content": text },
            { "role": "assistant", "content": "ok" },
        ]);
        fs::write(&path, messages.to_string()).unwrap();
        path.display().to_string()
    };
    let a = write("a/chat.json", "a has PLANTED-IN-A");
    let b = write("b/chat.json", "b has nothing");
    let beside = tree.root().join("b/chat.jsonl");
    fs::write(
        &beside,
        "{\"role\":\"user\",\"content\":\"jsonl has PLANTED-IN-JSONL\"}\n",
    )
    .unwrap();
    let beside = beside.display().to_string();
    for transcript in [&a, &b, &beside] {
        assert!(tree.run(&["run", transcript]).status.success());
    }
    let grep = |pattern: &str| format!(r#"{{"pattern": "{pattern}", "mode": "full_text"}}"#);
    let matches = |transcript: &str, pattern: &str| {
        let found = run_json(&tree, &["tool", transcript, "lcm_grep", &grep(pattern)]);
        found["matches"].as_array().unwrap().len()
    };
    assert_eq!(matches(&a, "PLANTED-IN-A"), 1);
    assert_eq!(matches(&b, "PLANTED-IN-A"), 0);
    assert_eq!(matches(&beside, "PLANTED-IN-JSONL"), 1);
    assert_eq!(matches(&b, "PLANTED-IN-JSONL"), 0);
    let status = run_json(&tree, &["tool", &b, "lcm_status", "{}"]);
    assert_eq!(status["messages"], 3, "{status}");
}

#[test]
fn a_transcript_calling_lcm_grep_is_answered_live_from_the_store() {
    let tree =
        lcm_tree("context:\n  engine: lcm\nmodel:\n  context_length: 16000\nlcm:\n  database: live.sqlite\n");
    let path = tree.root().join("live.json");
    let messages = json!({ "messages": [
        { "role": "system", "content": "sys" },
        { "role": "user", "content": "remember the code LIVE-CODE-77" },
        { "role": "assistant", "content": "noted" },
        { "role": "user", "content": "what was the code?" },
        { "role": "assistant", "content": null, "tool_calls": [
            { "id": "g1", "type": "function", "function": { "name": "lcm_grep", "arguments": "{\"pattern\": \"LIVE-CODE-\\\\d+\"}" } }
        ] },
        { "role": "tool", "tool_call_id": "g1", "content": "recorded answer" },
        { "role": "assistant", "content": "LIVE-CODE-77" },
    ] });
    fs::write(&path, messages.to_string()).unwrap();
    let report = run_json(&tree, &["run", path.to_str().unwrap(), "--json"]);
    let dispatches = report["tool_dispatches"].as_array().unwrap();
    assert_eq!(dispatches.len(), 1, "{report}");
    let live: Value = serde_json::from_str(dispatches[0]["live"].as_str().unwrap()).unwrap();
    assert_eq!(live["matches"].as_array().unwrap().len(), 1, "{live}");
    assert_eq!(live["matches"][0]["role"], "user", "{live}");
}

/// A Claude Code log of two days: each record says when it was written.
const TWO_DAYS: &str = r#"{"type":"user","timestamp":"2025-03-01T09:00:00.000Z","uuid":"u1","message":{"role":"user","content":"the first request names ALPHA-MARK"}}
{"type":"assistant","timestamp":"2025-03-01T09:00:05.500Z","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"noted ALPHA-MARK"}]}}
{"type":"user","timestamp":"2025-06-15T14:30:00+02:00","uuid":"u2","message":{"role":"user","content":"the second request names BETA-MARK"}}
{"type":"assistant","timestamp":"2025-06-15T12:30:07.250Z","uuid":"a2","message":{"role":"assistant","content":[{"type":"text","text":"done BETA-MARK"}]}}
"#;

#[test]
fn a_replayed_session_keeps_its_own_times_whether_lcm_observes_or_owns_the_context() {
    for config in [
        "context:\n  engine: compressor\n  observers: [lcm]\nlcm:\n  database: s.sqlite\n",
        "context:\n  engine: lcm\nlcm:\n  database: s.sqlite\n",
    ] {
        let tree = lcm_tree(config);
        let path = tree.root().join("two-days.jsonl");
        fs::write(&path, TWO_DAYS).unwrap();
        let transcript = path.to_str().unwrap();
        assert!(tree.run(&["run", transcript]).status.success(), "{config}");
        let times = |arguments: &str| -> Vec<String> {
            let found = run_json(&tree, &["tool", transcript, "lcm_grep", arguments]);
            found["matches"]
                .as_array()
                .unwrap_or_else(|| panic!("{config}: {found}"))
                .iter()
                .map(|hit| hit["time"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            times(r#"{"pattern": "-MARK"}"#),
            [
                "2025-06-15T12:30:07Z",
                "2025-06-15T12:30:00Z",
                "2025-03-01T09:00:05Z",
                "2025-03-01T09:00:00Z"
            ],
            "{config}"
        );
        assert_eq!(
            times(r#"{"pattern": "-MARK", "since": "2025-06-01"}"#),
            ["2025-06-15T12:30:07Z", "2025-06-15T12:30:00Z"],
            "{config}"
        );
        assert_eq!(
            times(r#"{"pattern": "-MARK", "before": "2025-03-01T09:00:05"}"#),
            ["2025-03-01T09:00:00Z"],
            "{config}"
        );
    }
}

#[test]
fn replays_started_together_on_one_store_both_keep_lcm_and_store_the_session_once() {
    // A new store (both create its tables), then one that holds the store but not the session
    // (both create the session's row and write its messages at the same positions).
    for (round, transcript) in [
        ("a new store", example_transcript()),
        (
            "a new session",
            example("transcripts/warehouse-migration.json")
                .display()
                .to_string(),
        ),
    ] {
        let tree =
            lcm_tree("context:\n  engine: compressor\n  observers: [lcm]\nlcm:\n  database: s.sqlite\n");
        if round == "a new session" {
            assert!(tree.run(&["run", &example_transcript()]).status.success());
        }
        let children: Vec<_> = (0..3)
            .map(|_| {
                ctxhost()
                    .current_dir(tree.root())
                    .args(["run", &transcript, "--json"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            let (stdout, stderr) = texts(&output);
            assert!(output.status.success(), "{round}: {stderr}");
            assert!(
                !stderr.contains("lcm"),
                "{round}: lcm was not used to the end: {stderr}"
            );
            let report: Value = serde_json::from_str(&stdout).unwrap();
            assert!(
                report["observers"][0]["detached"].is_null(),
                "{round}: {}",
                report["observers"]
            );
        }
        let conn = Connection::open(tree.root().join("s.sqlite")).unwrap();
        let (rows, distinct): (i64, i64) = conn
            .query_row(
                "SELECT count(*), count(DISTINCT hash) FROM messages m JOIN sessions s ON s.id = m.session_id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(rows, distinct, "{round}: a message stored twice");
    }
}

#[test]
fn an_engine_failing_the_same_way_at_every_turn_is_said_once_then_counted() {
    // The store's path is a folder: every call that needs the store fails alike.
    let tree =
        lcm_tree("context:\n  engine: lcm\nmodel:\n  context_length: 4000\nlcm:\n  database: a-folder\n");
    fs::create_dir(tree.root().join("a-folder")).unwrap();
    let output = tree.run(&["run", &example_transcript(), "--json"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let failed = "engine `lcm` failed in `compress`: lcm: ";
    let faults = report["faults"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|fault| fault["message"].as_str().unwrap().starts_with(failed))
        .count();
    assert!(faults > 3, "{}", report["faults"]);
    let said: Vec<&str> = stderr.lines().filter(|line| line.contains(failed)).collect();
    assert_eq!(said.len(), 2, "once, then counted: {stderr}");
    assert!(
        said[0].ends_with("; the context is kept as it was"),
        "{}",
        said[0]
    );
    assert!(
        said[1].ends_with(&format!(
            "{faults} times in all (said once above; each is in the report)"
        )),
        "{}",
        said[1]
    );
    // SQLite names the file itself: the path is said once.
    let path = tree.root().join("a-folder").display().to_string();
    assert_eq!(said[0].matches(&path).count(), 1, "{}", said[0]);
}

#[test]
fn a_mistyped_key_of_lcms_block_is_said_with_the_file_and_line() {
    let tree = lcm_tree("context:\n  engine: lcm\nlcm:\n  database: s.sqlite\n  fresh_tial: 8\n");
    let (_, stderr) = texts(&tree.run(&["run", &example_transcript()]));
    let said: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("fresh_tial"))
        .collect();
    assert_eq!(
        said,
        ["warning: engine `lcm`: config.yaml:5: lcm.fresh_tial: unknown setting, ignored; did you mean `lcm.fresh_tail`?"],
        "{stderr}"
    );
}

/// A value lcm refuses makes it fall back, and the warning says where the value is written.
#[test]
fn a_wrong_value_of_lcms_block_is_said_with_the_file_and_line() {
    let tree = lcm_tree("context:\n  engine: lcm\nlcm:\n  database: s.sqlite\n  fan_in: 1\n");
    let (_, stderr) = texts(&tree.run(&["run", &example_transcript()]));
    let said: Vec<&str> = stderr.lines().filter(|line| line.contains("fan_in")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(
            "config.yaml:5: lcm.fan_in must be at least 2, got 1; running the built-in compressor instead"
        ),
        "{stderr}"
    );
}

/// The text of every condensed summary in the tree's store (`store/lcm.sqlite`), oldest first.
fn condensed_summaries(tree: &PluginDir) -> Vec<String> {
    let conn = Connection::open(tree.root().join("store/lcm.sqlite")).unwrap();
    let mut query = conn
        .prepare("SELECT text FROM summaries WHERE depth >= 1 ORDER BY rowid")
        .unwrap();
    let texts = query.query_map([], |row| row.get(0)).unwrap();
    texts.collect::<Result<_, _>>().unwrap()
}

/// A condensed summary folds its leaves in section by section (the host's extractive
/// summarizer, given them as the earlier summary): the request, the CI link and the error a leaf
/// held survive into the summary condensing it, and into the final context. Given as an
/// assistant's prose, they were lost, and the condensed summary read `Goal (none)`.
#[test]
fn a_condensed_summary_keeps_what_its_leaves_held() {
    let tree = lcm_tree(
        "context:\n  engine: lcm\nmodel:\n  context_length: 8000\nlcm:\n  database: store/lcm.sqlite\n",
    );
    let mut messages = vec![Message::user(
        "The nightly reconcile job double-posts refunds (issue #5123); CI run https://ci.example.org/job/payments/4471/console shows it. Find why.",
    )];
    for turn in 0..30 {
        let id = format!("t{turn}");
        messages.push(Message::assistant_calls(vec![ctxhost_engine_abi::ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"pytest -q tests/ledger -k refund # try {turn}"}}"#),
        )]));
        let listing: String = (0..100)
            .map(|n| format!("/srv/payments/src/ledger/queue_{}.py\n", turn * 100 + n))
            .collect();
        messages.push(Message::tool(
            &id,
            format!("{listing}E   psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"ledger_entries_pkey\"\n1 failed"),
        ));
        messages.push(Message::assistant(format!("Try {turn} still fails.")));
        if turn % 4 == 3 {
            messages.push(Message::user("Keep going; do not touch the migrations."));
        }
    }
    let transcript = tree.root().join("refund.json");
    fs::write(&transcript, serde_json::to_string(&messages).unwrap()).unwrap();
    let out = tree.root().join("out.json");
    let report = run_json(
        &tree,
        &[
            "run",
            transcript.to_str().unwrap(),
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(applied(&report) >= 3, "{}", report["compactions"]);
    let condensed = condensed_summaries(&tree);
    assert!(
        !condensed.is_empty(),
        "no condensation ran: {}",
        report["compactions"]
    );
    let context = fs::read_to_string(&out).unwrap();
    for kept in [
        "double-posts refunds",
        "https://ci.example.org/job/payments/4471/console",
        "UniqueViolation",
    ] {
        assert!(
            condensed[0].contains(kept),
            "{kept} lost by the first condensed summary:\n{}",
            condensed[0]
        );
        assert!(context.contains(kept), "{kept} lost from the context");
    }
}

/// A chat session condenses again and again: the conversation's first request stays in every
/// condensed summary and in the context. Each summary listed its requests newest first, and the
/// next fold took the last line of the last leaf for the goal (the newest leaf's oldest), and a
/// request the user wrote on two lines read back as two.
#[test]
fn a_chat_sessions_first_request_survives_every_condensation() {
    let tree = lcm_tree(
        "context:\n  engine: lcm\nmodel:\n  context_length: 8000\nlcm:\n  database: store/lcm.sqlite\n",
    );
    let first = "I want to plan the Q1 2027 platform roadmap with you: Kafka 3.7 (RFC at https://docs.internal.example.com/rfc/0042-event-bus), the v1 API retired by 2027-03-31. Tracking epic is PLAT-4410.";
    let mut messages = vec![Message::user(first)];
    let topics = ["the event bus", "the v1 API", "on-call", "hiring", "the SLO"];
    for turn in 0..120 {
        let topic = topics[turn % topics.len()];
        messages.push(Message::user(format!(
            "About {topic}: finance asked for a number by Friday, and the payments lead pushed back on the timeline. Can we split it into two milestones? Let's put it under PLAT-{}.\nLet's record it: Decision {turn}: {topic} -> two milestones.",
            4420 + turn
        )));
        messages.push(Message::assistant(format!(
            "For {topic}, two milestones work: the first before the freeze, the second after it, with a 20% buffer on each (turn {turn})."
        )));
    }
    let transcript = tree.root().join("planning.json");
    fs::write(&transcript, serde_json::to_string(&messages).unwrap()).unwrap();
    let out = tree.root().join("out.json");
    let report = run_json(
        &tree,
        &[
            "run",
            transcript.to_str().unwrap(),
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let condensed = condensed_summaries(&tree);
    assert!(
        condensed.len() >= 2,
        "fewer than two condensations: {}",
        report["compactions"]
    );
    for (at, summary) in condensed.iter().enumerate() {
        assert!(
            summary.contains("PLAT-4410"),
            "condensed summary {at} lost the first request:\n{summary}"
        );
    }
    assert!(fs::read_to_string(&out).unwrap().contains(first));
}
