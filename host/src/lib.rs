//! `ctxhost`: loads context engines from plugin folders and replays agent transcripts through them.
//!
//! A context engine decides when an agent's conversation is compacted and how. This crate finds
//! engines in `plugins/context_engine/<name>/` folders, loads the one `config.yaml` selects through
//! a stable ABI (falling back to the built-in compressor, saying why), and drives it through a
//! recorded conversation as an agent loop would.
//!
//! The flow is one-way: [`formats`] reads a transcript, [`resolution`] picks the engine (with
//! [`discovery`] and [`loading`]), [`runner`] replays, [`report`] and [`output`] show the result.
//!
//! ```no_run
//! use std::path::Path;
//! use ctxhost::{config::Settings, formats::read_transcript, resolution::{resolve_engine, Registry}, runner};
//!
//! let settings = Settings::load(Path::new("config.yaml"))?;
//! let transcript = read_transcript(Path::new("session.json"), None)?;
//! let mut engine = resolve_engine(&settings.engine, &settings, &Registry::default()).engine;
//! let options = runner::ReplayOptions {
//!     session_id: "demo".into(),
//!     model: ctxhost_engine_abi::ModelInfo { context_length: 200_000, ..Default::default() },
//!     token_counter: ctxhost::tokens::TokenCounter::new(settings.tokenizer),
//!     facts: runner::FactAccounting::Skip,
//! };
//! let outcome = runner::replay(&mut engine, transcript.messages, &options);
//! println!("{} compactions", outcome.compactions.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cli;
pub mod compare;
pub mod config;
pub mod discovery;
pub mod engine;
pub mod formats;
pub mod isolation;
pub mod loading;
pub mod output;
pub mod report;
pub mod resolution;
pub mod runner;
pub mod serve;
pub mod services;
pub mod summarize;
pub mod tokens;
pub mod tools;
