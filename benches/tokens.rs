//! Token counting: each counter's throughput over the same text, a BPE vocabulary's load time, and
//! the per-turn accounting cost at a 200,000-token context with and without the per-message cache.
//! Run with `cargo xtask bench` (which prints the figures through `benches/ratios.py`), or alone
//! with `cargo bench -p ctxhost --bench tokens`.

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxhost::{
    runner::LiveContext,
    tokens::{TokenCounter, TokenizerKind},
};
use ctxhost_engine_abi::{Content, Message};

/// The context size the per-turn cost is measured at, in the counter's own tokens.
const CONTEXT_TOKENS: u64 = 200_000;

/// Fresh messages appended in turn; the context is reset to its 200,000 tokens after this many, so
/// that every appended message is one the cache has not seen and the context stays that size.
const TURNS_PER_RESET: u64 = 100;

/// The texts a counter reads in a tool-heavy conversation: contents, tool-call arguments.
fn conversation_texts(messages: &[Message]) -> Vec<String> {
    let mut texts = Vec::new();
    for message in messages {
        if let Content::Text(text) = &message.content {
            texts.push(text.clone());
        }
        for call in message.calls() {
            texts.push(call.function.arguments.clone());
        }
    }
    texts
}

fn throughput(c: &mut Criterion) {
    let texts = conversation_texts(&support::tool_heavy_conversation(300));
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("token_throughput");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes as u64));
    for kind in TokenizerKind::ALL {
        let counter = TokenCounter::new(kind);
        counter.preload();
        group.bench_function(kind.name(), |b| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|text| counter.count_text(black_box(text)))
                    .sum::<u64>()
            })
        });
    }
    group.finish();
}

fn vocabulary_load(c: &mut Criterion) {
    let mut group = c.benchmark_group("tokenizer_load");
    group.sample_size(10);
    // The counters share one process-wide copy; this is what the first count pays, once.
    group.bench_function("o200k_base", |b| b.iter(|| tiktoken_rs::o200k_base().unwrap()));
    group.bench_function("cl100k_base", |b| b.iter(|| tiktoken_rs::cl100k_base().unwrap()));
    group.finish();
}

/// The shortest prefix of a tool-heavy conversation reaching `CONTEXT_TOKENS` by `counter`, and
/// the messages that follow it (the turns to append).
fn context_and_turns(counter: TokenCounter) -> (Vec<Message>, Vec<Message>) {
    let mut messages = support::tool_heavy_conversation(2_000);
    let mut total = 0;
    let cut = messages
        .iter()
        .position(|message| {
            total += counter.count_message(message);
            total >= CONTEXT_TOKENS
        })
        .expect("the conversation reaches 200,000 tokens");
    let turns = messages.split_off(cut + 1);
    assert!(turns.len() as u64 >= TURNS_PER_RESET);
    (messages, turns)
}

/// Appending one message and reading the total: recounting every message (no cache) against
/// `LiveContext`, which counts the new message only.
fn per_turn(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_turn_200k");
    group.sample_size(10);
    for kind in [TokenizerKind::Rough, TokenizerKind::O200kBase] {
        let counter = TokenCounter::new(kind);
        counter.preload();
        let (context, turns) = context_and_turns(counter);
        group.bench_with_input(BenchmarkId::new("recount", kind.name()), &kind, |b, _| {
            let mut messages = context.clone();
            let mut turn = turns.iter().cycle();
            b.iter(|| {
                messages.push(turn.next().unwrap().clone());
                let total = counter.count_messages(black_box(&messages));
                messages.pop();
                total
            })
        });
        let mut template = LiveContext::with_counter(counter);
        for message in &context {
            template.push(message.clone());
        }
        group.bench_with_input(BenchmarkId::new("cached", kind.name()), &kind, |b, _| {
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let mut live = template.clone();
                    for message in turns.iter().take((iters - done).min(TURNS_PER_RESET) as usize) {
                        let message = message.clone();
                        let started = Instant::now();
                        live.push(message);
                        black_box(live.tokens());
                        elapsed += started.elapsed();
                        done += 1;
                    }
                }
                elapsed
            })
        });
    }
    group.finish();
}

criterion_group!(benches, throughput, vocabulary_load, per_turn);
criterion_main!(benches);
