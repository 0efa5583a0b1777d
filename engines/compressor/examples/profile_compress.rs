//! Times repeated `compress` calls on one transcript, for profiling (`perf record` around it):
//!
//! ```sh
//! cargo xtask gen-heavy target/heavy.json
//! cargo run --release -p ctxhost-compressor --example profile_compress -- target/heavy.json 200000 30
//! ```
//!
//! Arguments: a JSON array of messages, the window (default 200,000), the number of calls
//! (default 30). Each call gets a fresh engine and a fresh copy of the messages. Prints the wall
//! time of the first call, the mean and the best, and the calling thread's CPU time (read from
//! `/proc/thread-self/schedstat` on Linux; 0 elsewhere), which a loaded machine inflates less.

use std::time::Instant;

use ctxhost_compressor::{Compressor, CompressorConfig};
use ctxhost_engine_abi::{messages_from_json, CompressRequest, Engine, ModelInfo};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: profile_compress FILE [WINDOW] [CALLS]");
    let window: u64 = args
        .next()
        .map_or(200_000, |w| w.parse().expect("a window in tokens"));
    let calls: usize = args.next().map_or(30, |n| n.parse().expect("a number of calls"));
    let text = std::fs::read_to_string(&path).expect("the transcript reads");
    let messages = messages_from_json(&text).expect("a JSON array of messages");
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for _ in 0..calls.max(1) {
        let input = messages.clone();
        let mut engine = Compressor::with_config(CompressorConfig::default());
        engine.update_model(&ModelInfo {
            context_length: window,
            ..ModelInfo::default()
        });
        let cpu = thread_cpu_ns();
        let started = Instant::now();
        let output = engine
            .compress(input, &CompressRequest::default())
            .expect("compress succeeds");
        walls.push(started.elapsed().as_secs_f64() * 1e3);
        cpus.push(thread_cpu_ns().saturating_sub(cpu) as f64 / 1e6);
        std::hint::black_box(output);
    }
    let first = walls[0];
    let mean = walls.iter().sum::<f64>() / walls.len() as f64;
    walls.sort_by(f64::total_cmp);
    cpus.sort_by(f64::total_cmp);
    println!(
        "wall: first {first:.2} ms, mean {mean:.2} ms, best {:.2} ms; thread CPU: min {:.2} ms, median {:.2} ms",
        walls[0],
        cpus[0],
        cpus[cpus.len() / 2]
    );
}

/// The calling thread's CPU time in nanoseconds, 0 where the kernel does not say.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|line| line.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
