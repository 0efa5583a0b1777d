//! `ctxhost serve` against the same engine in process: the round trip of a trivial call, and
//! `compress` on 500 and 5,000 tool-heavy messages (the built-in compressor both ways). The served
//! figures include everything a client pays: writing the request's JSON, the pipe, the server's
//! parse and result check, the reply's JSON and its parse. Run with `cargo xtask bench`, which
//! prints the ratios (`benches/ratios.py`).

#[path = "support.rs"]
mod support;

// What the `ctxhost` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    hint::black_box,
    io::BufReader,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::{Duration, Instant},
};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ctxhost::{
    config::Settings,
    engine::{CompressCall, EngineHandle},
    resolution::builtin_compressor,
};
use ctxhost_engine_abi::{Message, Role};
use ctxhost_protocol::{method, Answer, Client, Compressed, EngineInfo, SessionParams};
use serde_json::json;

use support::model;

fn in_process() -> EngineHandle {
    let mut engine = builtin_compressor(&Settings::defaults(std::path::Path::new(".")));
    engine.update_model(&model()).unwrap();
    engine
}

/// A `ctxhost serve` child (the binary cargo built for this benchmark) and a client on it.
struct Served {
    child: Child,
    client: Client<BufReader<ChildStdout>, ChildStdin>,
    session: Option<String>,
}

impl Served {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxhost"))
            .arg("serve")
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("ctxhost serve starts");
        let mut client = Client::new(
            BufReader::new(child.stdout.take().unwrap()),
            child.stdin.take().unwrap(),
        );
        client.initialize("bench").unwrap();
        Self {
            child,
            client,
            session: None,
        }
    }

    /// A fresh session (its engine has compacted nothing), the previous one closed.
    fn fresh_session(&mut self) -> String {
        if let Some(session) = self.session.take() {
            let _: serde_json::Value = self
                .client
                .call(method::SESSION_CLOSE, &json!({ "session": session }))
                .unwrap();
        }
        let opened: Answer<EngineInfo> = self
            .client
            .call(method::SESSION_OPEN, &json!({ "model": model() }))
            .unwrap();
        self.session = Some(opened.value.session.clone());
        opened.value.session
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.client.call_value(method::SHUTDOWN, json!({}));
        let _ = self.child.wait();
    }
}

/// `compress` params borrowing the messages, as a client holding its context would send them.
#[derive(serde::Serialize)]
struct CompressRef<'a> {
    session: &'a str,
    messages: &'a [Message],
}

fn trivial_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("serve_trivial_call");
    let engine = in_process();
    group.bench_function("in_process", |b| b.iter(|| black_box(engine.counters().unwrap())));
    let mut served = Served::start();
    let session = SessionParams {
        session: served.fresh_session(),
    };
    group.bench_function("served", |b| {
        b.iter(|| {
            let answer: Answer<()> = served.client.call(method::COUNTERS, &session).unwrap();
            black_box(answer.counters)
        })
    });
    group.finish();
}

fn compress(c: &mut Criterion) {
    let mut group = c.benchmark_group("serve_compress");
    group.sample_size(20);
    let mut served = Served::start();
    for n in [500, 5_000] {
        let messages = support::tool_heavy_conversation(n);
        let user = messages.iter().rev().find(|m| m.role == Role::User).cloned();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("in_process", n), &messages, |b, messages| {
            b.iter_batched(
                in_process,
                |mut engine| {
                    let call = CompressCall {
                        user_message: user.as_ref(),
                        ..CompressCall::default()
                    };
                    engine.compress(messages, None, &call).unwrap()
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("served", n), &messages, |b, messages| {
            // A fresh session per call, opened off the clock (the setup and the call share the
            // one client, so criterion's batched setup cannot hold it).
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    let session = served.fresh_session();
                    let started = Instant::now();
                    let params = CompressRef {
                        session: &session,
                        messages,
                    };
                    let answer: Answer<Compressed> = served.client.call(method::COMPRESS, &params).unwrap();
                    black_box::<Vec<Message>>(answer.value.messages);
                    spent += started.elapsed();
                }
                spent
            })
        });
    }
    group.finish();
}

criterion_group!(benches, trivial_call, compress);
criterion_main!(benches);
