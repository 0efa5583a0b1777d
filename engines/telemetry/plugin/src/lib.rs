//! The `telemetry` observer as a plugin library: `cargo xtask plugins` stages it in
//! `plugins/context_engine/telemetry/`. The engine itself is `ctxhost_telemetry::Telemetry`.

ctxhost_engine_abi::export_engine!(ctxhost_telemetry::Telemetry);
