//! Integration tests of the `ctxhost` host: real plugin libraries in real plugin folders, the
//! real binary, and every way a plugin can fail.

mod bundled_examples;
mod compare;
mod containment;
mod fallback;
mod host_services;
mod isolation;
mod lcm;
mod loading;
mod messages;
mod observers;
mod output_files;
mod plugins;
mod reading;
mod replay;
mod replay_outputs;
mod serve;
mod support;
