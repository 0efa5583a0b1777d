//! The `lcm` context engine as a plugin library: `cargo xtask plugins` stages it in
//! `plugins/context_engine/lcm/`. The engine itself is `ctxhost_lcm::Lcm`.

ctxhost_engine_abi::export_engine!(ctxhost_lcm::Lcm);
