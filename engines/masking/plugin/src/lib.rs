//! The `masking` context engine as a plugin library: `cargo xtask plugins` stages it in
//! `plugins/context_engine/masking/`. The engine itself is `ctxhost_masking::Masking`.

ctxhost_engine_abi::export_engine!(ctxhost_masking::Masking);
