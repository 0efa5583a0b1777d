//! The built-in `compressor` engine as a plugin library, for benchmarks that compare a call into a
//! library with a direct call. It is never staged as a plugin: the host links `compressor` itself.

ctxhost_engine_abi::export_engine!(ctxhost_compressor::Compressor);
