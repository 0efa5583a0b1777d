//! Settings keys a person most likely meant: one rule for the host's sections and the engines'
//! blocks, so that a mistyped key is named the same way wherever it is written. The rule lives in
//! the interface crate, whose `read_config` applies it to every engine's block.

pub use ctxhost_engine_abi::{closest_key, misspelt_keys};
