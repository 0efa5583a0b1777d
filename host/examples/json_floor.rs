//! The least a process that reads a transcript file can spend: what `ctxhost compress` costs
//! beyond it is the host's own. Built as `ctxhost` is (release, mimalloc), it reads the file and
//! goes through its JSON values (a JSON document or one a line) in one of three ways:
//!
//! - `read`: the bytes only;
//! - `scan`: every value parsed and thrown away (`serde::de::IgnoredAny`), as the fastest reader
//!   would that kept nothing;
//! - `values`: every value parsed into a `serde_json::Value` tree and kept to the end, as a
//!   reader that keeps every field of every record would.
//!
//! ```sh
//! A file of JSON lines is read a line at a time through a 256 KiB buffer, as ctxhost reads one;
//! any other file whole.
//!
//! cargo build --release -p ctxhost --example json_floor
//! python3 benches/cpu_time.py 20 target/release/examples/json_floor scan target/heavy.claude-code \
//!   -- target/release/ctxhost compress target/heavy.claude-code --context-length 200000
//! ```

use std::{
    io::{BufRead, BufReader, Read},
    process::ExitCode,
};

use mimalloc::MiMalloc;
use serde::de::IgnoredAny;
use serde_json::{Deserializer, Value};

#[global_allocator]
static ALLOCATOR: MiMalloc = MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, path] = args.as_slice() else {
        eprintln!("usage: json_floor read|scan|values FILE");
        return ExitCode::from(2);
    };
    match count_values(mode, path) {
        Ok(Some((bytes, values))) => {
            println!("{path}: {bytes} bytes, {values} JSON values");
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!("error: unknown mode `{mode}` (read, scan or values)");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {path}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The bytes of the file and how many JSON values it holds, gone through as `mode` says; `None`
/// for an unknown mode.
fn count_values(mode: &str, path: &str) -> Result<Option<(usize, usize)>, Box<dyn std::error::Error>> {
    let mut file = BufReader::with_capacity(256 * 1024, std::fs::File::open(path)?);
    let lines = file.fill_buf()?.starts_with(b"{") && !file.buffer().starts_with(b"{\n");
    let mut kept: Vec<Value> = Vec::new();
    let mut through = |json: &[u8]| -> Result<Option<usize>, serde_json::Error> {
        let values = Deserializer::from_slice(json);
        Ok(Some(match mode {
            "read" => 0,
            "scan" => values
                .into_iter::<IgnoredAny>()
                .try_fold(0, |count, value| value.map(|_| count + 1))?,
            "values" => {
                let before = kept.len();
                for value in values.into_iter::<Value>() {
                    kept.push(value?);
                }
                kept.len() - before
            }
            _ => return Ok(None),
        }))
    };
    let (mut bytes, mut values) = (0, 0);
    if lines {
        let mut line = Vec::new();
        while file.read_until(b'\n', &mut line)? > 0 {
            bytes += line.len();
            let Some(count) = through(&line)? else {
                return Ok(None);
            };
            values += count;
            line.clear();
        }
    } else {
        let mut whole = Vec::new();
        bytes = file.read_to_end(&mut whole)?;
        let Some(count) = through(&whole)? else {
            return Ok(None);
        };
        values = count;
    }
    Ok(Some((bytes, values)))
}
