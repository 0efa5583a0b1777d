//! Format detection on arbitrary text: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ctxhost::formats::fuzzing::detect(&String::from_utf8_lossy(data));
});
