//! Building blocks shared by ctxhost's engines and its host.
//!
//! - [`tokens`]: the rough token estimate every engine and the host agree on.
//! - [`sequence`]: what a valid message sequence is, how to check one and how to repair tool pairs.
//! - [`stand_in`]: one-line, informative replacements for tool output an engine drops.
//! - [`retention`]: how many of the compacted part's facts a result still holds verbatim.
//! - [`release`]: freeing a large replaced context on a thread of its own.
//! - [`keys`]: which known settings key a mistyped one most likely meant.
//! - [`pacing`]: when to stop trying: the anti-thrash pause and the summarizer's cool-down.
//! - [`text`]: cutting text where a character starts; a JSON document's lines as its strings read.
//!
//! Engines are free not to use it; it exists so that the built-in engines and the host measure
//! and validate the same way.
#![forbid(unsafe_code)]

pub mod keys;
pub mod pacing;
pub mod release;
pub mod retention;
pub mod sequence;
pub mod stand_in;
pub mod text;
pub mod tokens;
