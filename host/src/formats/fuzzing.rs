//! Reading transcripts from memory, for the fuzz targets (`fuzz/`) and the mutation tests: the
//! readers without a file. Built only for tests and with the `fuzzing` feature; not part of the
//! API otherwise.

use std::{
    io::Cursor,
    path::Path,
    sync::{atomic::AtomicU64, Arc},
};

use super::{stream_from, BadRecords, Format, ReadOptions, TranscriptError};

/// What reading some bytes came to.
#[derive(Debug)]
pub struct Outcome {
    /// The messages read before the end or the error.
    pub messages: usize,
    /// The warnings the stream gave.
    pub warnings: Vec<String>,
    /// The error that ended it, if one did.
    pub error: Option<TranscriptError>,
}

/// Reads `bytes` as `format` (the forced format is not checked against the content, so that the
/// reader meets whatever the bytes are), to the end or the first error, doing with malformed
/// records what `bad_records` says.
pub fn read_bytes(format: Format, bytes: &[u8], bad_records: BadRecords) -> Outcome {
    let options = ReadOptions {
        format: Some(format),
        session: None,
        bad_records,
    };
    let path = Path::new("fuzz-input");
    let total = bytes.len() as u64;
    let stream = stream_from(
        path,
        format,
        &options,
        Cursor::new(bytes.to_vec()),
        (Arc::new(AtomicU64::new(0)), total),
    );
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(error) => {
            return Outcome {
                messages: 0,
                warnings: Vec::new(),
                error: Some(error),
            }
        }
    };
    let mut messages = 0;
    let mut error = None;
    for message in stream.by_ref() {
        match message {
            Ok(_) => messages += 1,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Outcome {
        messages,
        warnings: stream.into_meta().warnings,
        error,
    }
}

/// Reads `data` as `format` and panics when reading breaks its promises: an error that names no
/// line (or names it with an empty message). The first byte chooses whether malformed records
/// are skipped, so that both paths are fuzzed. A panic inside the reader is a failure too.
pub fn check_reader(format: Format, data: &[u8]) {
    let bad_records = match data.first() {
        Some(byte) if byte % 2 == 1 => BadRecords::Skip,
        _ => BadRecords::Stop,
    };
    let outcome = read_bytes(format, data, bad_records);
    match &outcome.error {
        None => {}
        Some(TranscriptError::Malformed { line, message, .. }) => {
            assert!(*line >= 1, "{format}: an error at line {line}: {message}");
            assert!(
                !message.is_empty(),
                "{format}: an error at line {line} without a message"
            );
        }
        Some(other) => panic!("{format}: an error naming no line: {other}"),
    }
}

/// Tells the format of `text` as detection does.
pub fn detect(text: &str) -> Result<Format, TranscriptError> {
    super::detect_format(Path::new("fuzz-input"), text)
}
