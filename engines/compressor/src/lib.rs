//! ctxhost's built-in context engine, `compressor`: when a conversation nears the model's window,
//! it keeps the start and the end verbatim and replaces the middle with a structured summary.
//!
//! The main type is [`Compressor`], an [`Engine`](ctxhost_engine_abi::Engine). It follows
//! compressor.md in four phases:
//!
//! 1. [`prune`]: old tool output becomes informative one-line stand-ins, repeated outputs collapse
//!    to the newest copy, long tool-call arguments are shortened (still valid JSON).
//! 2. Boundaries: a protected head and a token-budgeted tail that never
//!    splits a tool group and always holds the last user message.
//! 3. [`summary`]: the middle is summarised into a fixed template by a [`Summarizer`]: the host's
//!    model through its `summarize` service ([`HostSummarizer`]) when the host says one is
//!    configured, else the built-in [`ExtractiveSummarizer`], which needs no model and is also the
//!    fallback.
//! 4. Assembly: head, the summary (marked `[CONTEXT COMPACTION]`), tail, with tool pairs repaired.
//!
//! It is not a tokenizer, a model client or a plugin: real token counts come from the host, so
//! does a model's summary (the host holds the endpoint, the key and the grounding), and the host
//! links this crate directly.
//!
//! # Example
//!
//! ```
//! use ctxhost_compressor::{Compressor, CompressorConfig};
//! use ctxhost_engine_abi::{CompressRequest, Engine, Message, ModelInfo};
//!
//! let config = CompressorConfig { protect_first_n: 1, protect_last_n: 4, ..CompressorConfig::default() };
//! let mut engine = Compressor::with_config(config);
//! engine.update_model(&ModelInfo { context_length: 8_000, ..ModelInfo::default() });
//!
//! let mut messages = vec![Message::system("You are a coding agent."), Message::user("Fix the build.")];
//! for step in 0..40 {
//!     messages.push(Message::assistant(format!("Step {step}: `cargo build` fails in src/lib.rs, trying again.")));
//!     messages.push(Message::user(format!("Keep going ({step}), and don't touch Cargo.lock.")));
//! }
//! let compacted = engine.compress(messages, &CompressRequest::default()).unwrap();
//!
//! assert!(compacted[2].text().starts_with("[CONTEXT COMPACTION]"));
//! assert_eq!(compacted.last().unwrap().text(), "Keep going (39), and don't touch Cargo.lock.");
//! assert_eq!(engine.counters().compression_count, 1);
//! ```
#![forbid(unsafe_code)]

mod assemble;
mod boundaries;
mod compact;
pub mod config;
mod engine;
mod identify;
/// The pause and the cool-down, shared with `lcm` through the kit.
pub use ctxhost_engine_kit::pacing;
pub mod prune;
pub mod report;
mod scan;
pub mod summary;
#[cfg(test)]
mod tests;

pub use assemble::SYSTEM_NOTE;
pub use config::{Budgets, CompressorConfig, ConfigProblem};
pub use engine::{Compressor, EXT_BUDGETS, EXT_LAST_COMPACTION, EXT_RESUME_AUTO_COMPACTION};
pub use report::{CompactionReport, Outcome};
pub use summary::{
    check_summary, ExtractiveSummarizer, HostSummarizer, Summarizer, SummaryError, SummaryNote,
    SummaryRequest, ITEM_LABELS, PRINTED_BY, SUMMARY_END, SUMMARY_MARKER,
};
