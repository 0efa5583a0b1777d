//! The lcm store's figures: ingestion rate, bytes on disk per message, `lcm_grep` and
//! `lcm_expand` latency at 10,000 / 100,000 / 1,000,000 stored messages, and compaction time.
//!
//! ```sh
//! cargo bench -p ctxhost-lcm --bench lcm                  # all sizes; the stores are kept in .cache/lcm-bench/
//! cargo bench -p ctxhost-lcm --bench lcm -- 10000,100000  # some sizes
//! ```
//!
//! The session is synthetic and tool-heavy (~1 KB of JSON a message), the summarizer a stub (the
//! engine's deterministic truncation, no host). A store is built once per size and reused by later
//! runs; its ingestion rate is measured when it is built. The messages are also written to
//! `.cache/lcm-bench/session-<n>.jsonl`, for `benches/lcm_compare.py` to feed lossless-hermes-py the
//! same ones. Results go to stdout and `.cache/lcm-bench/results.json`.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    time::Instant,
};

use ctxhost_engine_abi::{CompressRequest, Engine, Host, Message, ModelInfo, SessionInfo};
use ctxhost_lcm::{synthetic, Lcm, LcmConfig};
use serde_json::{json, Value};

const SENTINEL: &str = "SENTINEL-BENCH-4242";

/// `lcm_grep` as people type it: what each case is, and its arguments. The synthetic session's
/// words are few, so nearly every message holds `error`, `rollback` and `warehouse`, and the
/// sentinel is the only message with `staging` or an 8-and-5-capitals word pair.
const GREP_CASES: &[(&str, &str)] = &[
    ("regex, a rare literal", r#"{"pattern": "SENTINEL-BENCH-\\d+"}"#),
    ("regex, part of a word", r#"{"pattern": "ENTINEL"}"#),
    ("regex, a rare word", r#"{"pattern": "staging"}"#),
    ("regex, a common word", r#"{"pattern": "warehouse"}"#),
    (
        "regex, common words side by side",
        r#"{"pattern": "warehouse migration"}"#,
    ),
    (
        "regex, common words never side by side",
        r#"{"pattern": "error rollback"}"#,
    ),
    (
        "regex, case-insensitive phrase",
        r#"{"pattern": "(?i)Error Rollback"}"#,
    ),
    (
        "regex, a common literal the regex rarely matches",
        r#"{"pattern": "error \\d{5}"}"#,
    ),
    ("regex, no literal at all", r#"{"pattern": "[A-Z]{8}-[A-Z]{5}"}"#),
    ("regex, words no message holds", r#"{"pattern": "zebra quantum"}"#),
    (
        "full text, the sentinel (hyphens, digits)",
        r#"{"pattern": "SENTINEL-BENCH-4242", "mode": "full_text"}"#,
    ),
    (
        "full text, a common word",
        r#"{"pattern": "error", "mode": "full_text"}"#,
    ),
    (
        "full text, hyphenated common words and a number",
        r#"{"pattern": "rollback-error 1234", "mode": "full_text"}"#,
    ),
];

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/lcm-bench")
}

/// `n` messages of a long synthetic session, with the sentinel in message `n / 10`.
fn session(n: usize) -> Vec<Message> {
    let mut messages = Vec::with_capacity(n + 64);
    let mut block = 0u64;
    while messages.len() < n {
        let part = synthetic::conversation(block, 200, 2_600);
        messages.extend(part.into_iter().skip(usize::from(block > 0)));
        block += 1;
    }
    messages.truncate(n);
    let at = n / 10;
    messages[at] = Message::user(format!("please deploy {SENTINEL} to staging"));
    messages
}

fn engine(database: &Path, window: u64) -> Lcm {
    let mut engine = Lcm::with_database(LcmConfig::default(), database.to_owned(), Host::detached()).unwrap();
    engine.update_model(&ModelInfo {
        context_length: window,
        ..ModelInfo::default()
    });
    engine.on_session_start("bench", &SessionInfo::default()).unwrap();
    engine
}

fn stored(engine: &mut Lcm) -> i64 {
    let store = engine.store().unwrap();
    store
        .connection()
        .query_row(
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.name = 'bench'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// CPU seconds this process has used (Linux: /proc/self/stat), to state a rate that other load on
/// the machine does not lower; 0 elsewhere.
fn cpu_seconds() -> f64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime, fields 14 and 15 of the whole line; clock ticks are 100 a second on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times[times.len() / 2]
}

fn measure_size(n: usize) -> Value {
    let dir = cache_dir();
    fs::create_dir_all(&dir).unwrap();
    let database = dir.join(format!("store-{n}.sqlite"));
    let messages = session(n);
    let json_bytes: usize = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap().len())
        .sum();
    let jsonl = dir.join(format!("session-{n}.jsonl"));
    if !jsonl.exists() && n <= 100_000 {
        let mut file = std::io::BufWriter::new(fs::File::create(&jsonl).unwrap());
        for message in &messages {
            writeln!(file, "{}", serde_json::to_string(message).unwrap()).unwrap();
        }
    }

    let mut engine = engine(&database, 128_000);
    let mut ingest_rate = Value::Null;
    let mut ingest_cpu_rate = Value::Null;
    if stored(&mut engine) as usize != n {
        drop(engine);
        for suffix in ["", "-wal", "-shm"] {
            let _ = fs::remove_file(format!("{}{suffix}", database.display()));
        }
        engine = self::engine(&database, 128_000);
        let start = Instant::now();
        let cpu = cpu_seconds();
        // As a session appends them, in the calls the host makes to an observer (consecutive
        // appends merged up to 512 messages). `ingest`, the active engine's path, takes the
        // whole context at each compaction and aligns it with the store from its start: fed
        // disjoint batches as if each were the whole context, it took a batch's message that
        // repeats one near the session's start as already stored.
        for batch in messages.chunks(512) {
            engine.record_appended(batch).unwrap();
        }
        // Searchable, as the rate of builds before the index was built late measured: otherwise
        // the first search below would index them, inside its timing.
        engine.store().unwrap().index_backlog().unwrap();
        let seconds = start.elapsed().as_secs_f64();
        ingest_rate = json!(n as f64 / seconds);
        ingest_cpu_rate = json!(n as f64 / (cpu_seconds() - cpu).max(1e-9));
        eprintln!("{n}: built in {seconds:.1} s");
    } else {
        eprintln!("{n}: reusing {}", database.display());
    }
    let conn = engine.store().unwrap().connection();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let bytes = fs::metadata(&database).unwrap().len();
    let count = stored(&mut engine);

    // A few leaf summaries in a session of their own, for lcm_expand.
    let mut small = engine;
    small.update_model(&ModelInfo {
        context_length: 16_000,
        ..ModelInfo::default()
    });
    let existing: Option<String> = small
        .store()
        .unwrap()
        .connection()
        .query_row("SELECT id FROM summaries WHERE kind = 'leaf' LIMIT 1", [], |r| {
            r.get(0)
        })
        .ok();
    let summary = existing.unwrap_or_else(|| {
        small.on_session_start("expand", &SessionInfo::default()).unwrap();
        let compacted = small
            .compress(messages[..300].to_vec(), &CompressRequest::default())
            .unwrap();
        compacted
            .iter()
            .find_map(ctxhost_lcm::assemble::parse_summary_message)
            .and_then(|ids| ids.into_iter().next())
            .expect("the compaction wrote a summary")
    });
    small.on_session_start("bench", &SessionInfo::default()).unwrap();

    let mut grep = |arguments: &Value| {
        let mut answer = Value::Null;
        let ms = median_ms(5, || answer = small.handle_tool_call("lcm_grep", arguments, None));
        let mut figures = json!({
            "ms": ms,
            "matches": answer["matches"].as_array().map_or(0, Vec::len),
            "checked": answer["checked"],
            "partial": answer["partial"] == true,
            "searched": answer["searched"]["messages"],
        });
        // A partial answer: the calls that search everything, each continuing the last.
        if answer["partial"] == true {
            let mut arguments = arguments.clone();
            let (mut calls, mut total_ms, mut slowest_ms) = (1, ms, ms);
            while let Some(next) = answer["next_before_id"].as_str() {
                arguments["before_id"] = json!(next);
                let start = Instant::now();
                answer = small.handle_tool_call("lcm_grep", &arguments, None);
                let call_ms = start.elapsed().as_secs_f64() * 1000.0;
                calls += 1;
                total_ms += call_ms;
                slowest_ms = f64::max(slowest_ms, call_ms);
            }
            figures["to_the_end"] = json!({ "calls": calls, "ms": total_ms, "slowest_call_ms": slowest_ms });
        }
        figures
    };
    let greps: Vec<Value> = GREP_CASES
        .iter()
        .map(|(label, arguments)| {
            let arguments: Value = serde_json::from_str(arguments).unwrap();
            json!({ "label": label, "arguments": arguments, "figures": grep(&arguments) })
        })
        .collect();
    let message_id = format!("msg_{}", n / 2);
    let expand_message = median_ms(21, || {
        small.handle_tool_call("lcm_expand", &json!({ "id": message_id }), None);
    });
    let expand_summary = median_ms(21, || {
        small.handle_tool_call("lcm_expand", &json!({ "id": summary }), None);
    });
    json!({
        "messages": n,
        "stored": count,
        "ingest_msgs_per_s": ingest_rate,
        "ingest_msgs_per_cpu_s": ingest_cpu_rate,
        "json_bytes_per_message": json_bytes as f64 / n as f64,
        "disk_bytes_per_message": bytes as f64 / n as f64,
        "disk_over_json": bytes as f64 / json_bytes as f64,
        "grep": greps,
        "expand_message_ms": expand_message,
        "expand_leaf_ms": expand_summary,
    })
}

/// `lcm_grep`, one row per case, one column per store size: the median call, its matches, and for
/// a partial answer how much it searched and what searching everything took, call after call.
fn print_grep_table(results: &[Value]) {
    let sizes: Vec<String> = results
        .iter()
        .map(|r| format!("{} messages", r["messages"]))
        .collect();
    println!("\n`lcm_grep`, median of 5 calls (target: under 100 ms at 1,000,000 messages)\n");
    println!("| pattern | {} |", sizes.join(" | "));
    println!("|---{}|", " | ---".repeat(sizes.len()));
    for (case, (label, arguments)) in GREP_CASES.iter().enumerate() {
        let arguments: Value = serde_json::from_str(arguments).unwrap();
        let cells: Vec<String> = results
            .iter()
            .map(|r| {
                let f = &r["grep"][case]["figures"];
                let mut cell = format!("{:.2} ms, {} found", f["ms"].as_f64().unwrap(), f["matches"]);
                if f["partial"] == true {
                    let end = &f["to_the_end"];
                    cell.push_str(&format!(
                        "; partial: {} of {} searched; all in {} calls, {:.0} ms (slowest {:.0} ms)",
                        f["searched"],
                        r["messages"],
                        end["calls"],
                        end["ms"].as_f64().unwrap(),
                        end["slowest_call_ms"].as_f64().unwrap(),
                    ));
                }
                cell
            })
            .collect();
        println!("| {label}: `{}` | {} |", arguments, cells.join(" | "));
    }
}

/// A 20,000-message session replayed at a 64,000-token window: time per compaction, and the
/// messages each summarised (flat: only what is new since the last one).
fn measure_compaction() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(&dir.path().join("c.sqlite"), 64_000);
    let messages = session(20_000);
    let mut context: Vec<Message> = Vec::new();
    let mut times = Vec::new();
    let mut summarised = Vec::new();
    for message in &messages {
        if message.role == ctxhost_engine_abi::Role::Assistant && engine.should_compress_preflight(&context) {
            let start = Instant::now();
            context = engine
                .compress(context.clone(), &CompressRequest::default())
                .unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            let report = engine.call_ext("last_compaction", &Value::Null).unwrap();
            summarised.push(report["new_summaries"].as_u64().unwrap_or(0));
        }
        context.push(message.clone());
    }
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let max = times.iter().cloned().fold(0.0, f64::max);
    let third = times.len() / 3;
    let early = times[..third].iter().sum::<f64>() / third.max(1) as f64;
    let late = times[times.len() - third..].iter().sum::<f64>() / third.max(1) as f64;
    json!({
        "messages": messages.len(),
        "compactions": times.len(),
        "mean_ms": mean,
        "max_ms": max,
        "first_third_mean_ms": early,
        "last_third_mean_ms": late,
        "max_new_summaries_per_compaction": summarised.iter().max(),
    })
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .map(|list| {
            list.split(',')
                .map(|n| n.parse().expect("sizes: 10000,100000"))
                .collect()
        })
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let mut results = Vec::new();
    for &n in &sizes {
        let figures = measure_size(n);
        println!("{}", serde_json::to_string(&figures).unwrap());
        results.push(figures);
    }
    let compaction = measure_compaction();
    println!("{}", serde_json::to_string(&compaction).unwrap());

    println!("\n| stored messages | ingest msg/s | disk B/msg (× JSON) | expand message | expand leaf |");
    println!("| --- | --- | --- | --- | --- |");
    for r in &results {
        let rate = match (
            r["ingest_msgs_per_s"].as_f64(),
            r["ingest_msgs_per_cpu_s"].as_f64(),
        ) {
            (Some(wall), Some(cpu)) => format!("{wall:.0} ({cpu:.0} per CPU-second)"),
            _ => "(store reused)".to_owned(),
        };
        println!(
            "| {} | {rate} | {:.0} ({:.2}×) | {:.3} ms | {:.3} ms |",
            r["messages"],
            r["disk_bytes_per_message"].as_f64().unwrap(),
            r["disk_over_json"].as_f64().unwrap(),
            r["expand_message_ms"].as_f64().unwrap(),
            r["expand_leaf_ms"].as_f64().unwrap(),
        );
    }
    print_grep_table(&results);
    println!(
        "\ncompaction: {} compactions over {} messages, mean {:.2} ms, max {:.2} ms (first third {:.2} ms, last third {:.2} ms)",
        compaction["compactions"],
        compaction["messages"],
        compaction["mean_ms"].as_f64().unwrap(),
        compaction["max_ms"].as_f64().unwrap(),
        compaction["first_third_mean_ms"].as_f64().unwrap(),
        compaction["last_third_mean_ms"].as_f64().unwrap(),
    );
    let all = json!({ "sizes": results, "compaction": compaction });
    fs::write(
        cache_dir().join("results.json"),
        serde_json::to_string_pretty(&all).unwrap(),
    )
    .unwrap();
}
