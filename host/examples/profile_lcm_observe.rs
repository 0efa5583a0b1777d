//! lcm observing the observers benchmark's session, in process, so that `perf` resolves lcm's
//! symbols (the benchmark loads a copy of the plugin library from a temporary folder):
//!
//! ```sh
//! cargo run --release -p ctxhost --example profile_lcm_observe -- [MESSAGES] [BATCH]
//! perf record -g target/release/examples/profile_lcm_observe 10000 64
//! ```
//!
//! The `MESSAGES`-message tool-heavy session (`benches/support.rs`, 1–3 KB tool outputs) is cut
//! into `messages_appended` facts of `BATCH` messages, written as JSON as the host writes them
//! (not timed), then handed to `Lcm::observe_raw` as the plugin receives them (lcm reads them
//! itself), into a fresh SQLite file. Prints the time of each part and the messages stored per
//! second, of wall time and of this thread's CPU time.

#[path = "../../benches/support.rs"]
mod support;

use std::time::Instant;

use ctxhost_engine_abi::{Engine, Fact, FactBody, Host, ModelInfo, RawFact, SessionInfo};
use ctxhost_lcm::Lcm;
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| {
        args.next()
            .map_or(default, |arg| arg.parse().expect("arguments: [MESSAGES] [BATCH]"))
    };
    let (count, batch) = (number(10_000), number(64));
    let messages = support::tool_heavy_conversation(count);
    let facts: Vec<String> = messages
        .chunks(batch.max(1))
        .enumerate()
        .map(|(at, chunk)| {
            let fact = Fact {
                session_id: "profile".into(),
                at_message: (at * batch) as u64,
                body: FactBody::MessagesAppended {
                    messages: chunk.to_vec(),
                },
            };
            serde_json::to_string(&fact).expect("facts serialise")
        })
        .collect();
    let bytes: usize = facts.iter().map(String::len).sum();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = json!({ "database": dir.path().join("lcm.sqlite") });
    let mut engine = Lcm::new(&config, Host::detached()).expect("a valid config");
    engine.update_model(&ModelInfo {
        context_length: 100_000,
        ..ModelInfo::default()
    });
    engine
        .on_session_start("profile", &SessionInfo::default())
        .expect("the store opens");

    // The host says its queue ran dry before the first fact; from then on lcm groups its writes,
    // as in the benchmark, where lcm's queue stays full.
    engine.observe_idle().expect("nothing waits yet");
    let start = Instant::now();
    let cpu = cpu_seconds();
    for json in &facts {
        // As the plugin receives a fact: its JSON, read by the engine itself.
        engine
            .observe_raw(&RawFact::new(json))
            .expect("lcm stores the messages");
    }
    let end = Instant::now();
    engine.on_session_end("profile", &[]).expect("the session ends");
    let ending = end.elapsed().as_secs_f64();
    let total = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    println!(
        "{count} messages ({:.1} MB of facts) in facts of {batch}: observe {:.0} ms (reading included), \
         session end {:.0} ms; {:.0} messages/s, {:.0} per CPU-second",
        bytes as f64 / 1e6,
        (end - start).as_secs_f64() * 1e3,
        ending * 1e3,
        count as f64 / total,
        count as f64 / cpu,
    );
}

/// CPU seconds this thread has run (Linux: /proc/thread-self/schedstat, in nanoseconds), which
/// other load on the machine does not inflate; 0 elsewhere.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}
