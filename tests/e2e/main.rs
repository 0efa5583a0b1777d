//! End-to-end tests of the summarizer against a real model server: llama.cpp's OpenAI-compatible
//! server with SmolLM2-135M-Instruct, both from PyPI (tests/e2e/README.md). Each test starts its
//! own server on a free loopback port through `tests/e2e/llm-server` and runs the real `ctxhost`
//! binary against it.
//!
//! Built only with the `e2e` feature: `cargo test -p ctxhost --features e2e --test e2e`. When the
//! server cannot be installed or started, the tests fail and say why; they never pass without it.

mod summarizer;
mod support;
