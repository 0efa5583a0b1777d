//! The Codex reader on arbitrary bytes: no panic, no hang, every error names a line.
#![no_main]

use ctxhost::formats::{fuzzing::check_reader, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_reader(Format::Codex, data));
