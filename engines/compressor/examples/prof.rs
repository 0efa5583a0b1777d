use ctxhost_compressor::{Compressor, CompressorConfig};
use ctxhost_engine_abi::{messages_from_json, CompressRequest, Engine, ModelInfo};
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let window: u64 = std::env::args().nth(2).map_or(200_000, |w| w.parse().unwrap());
    let iters: usize = std::env::args().nth(3).map_or(50, |w| w.parse().unwrap());
    let messages = messages_from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut total = 0.0;
    let mut best = f64::MAX;
    let mut cpus = Vec::new();
    let cold = std::env::var("COLD").is_ok();
    for i in 0..iters {
        let input = if cold {
            let copies: Vec<_> = (0..4).map(|_| messages.clone()).collect();
            copies.into_iter().next().unwrap()
        } else {
            messages.clone()
        };
        let mut engine = Compressor::with_config(CompressorConfig::default());
        engine.update_model(&ModelInfo {
            context_length: window,
            ..ModelInfo::default()
        });
        let cpu0 = cpu_ns();
        let t = Instant::now();
        let out = engine.compress(input, &CompressRequest::default()).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu = (cpu_ns() - cpu0) as f64 / 1e6;
        cpus.push(cpu);
        if i == 0 {
            println!("first {ms:.2} ms");
        }
        total += ms;
        best = best.min(ms);
        std::hint::black_box(out);
    }
    println!("mean {:.2} ms, best {:.2} ms", total / iters as f64, best);
    cpus.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "thread cpu: first-sorted min {:.2} median {:.2} max {:.2} ms",
        cpus[0],
        cpus[cpus.len() / 2],
        cpus[cpus.len() - 1]
    );
}

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
