//! JSONL: one JSON record a line, read a line at a time into one reused buffer.

use std::{
    io::BufRead,
    ops::Range,
    path::{Path, PathBuf},
};

use serde::de::DeserializeOwned;

use super::{
    cursor::{strip_position, KEPT_BUFFER_BYTES},
    TranscriptError,
};

/// Where a line starts: its number (1-based) and its byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LineAt {
    pub line: usize,
    pub offset: u64,
}

/// The records of a JSONL file.
pub(super) struct JsonLines<R> {
    path: PathBuf,
    reader: R,
    buffer: Vec<u8>,
    /// The last record's text in `buffer`.
    line: Range<usize>,
    next: LineAt,
}

impl<R: BufRead> JsonLines<R> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            path: path.to_owned(),
            reader,
            buffer: Vec::new(),
            line: 0..0,
            next: LineAt { line: 1, offset: 0 },
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The next record and where its line starts, skipping blank lines; `None` at the end.
    pub(super) fn next_record<T: DeserializeOwned>(
        &mut self,
    ) -> Result<Option<(T, LineAt)>, TranscriptError> {
        loop {
            let at = self.next;
            if self.buffer.capacity() > KEPT_BUFFER_BYTES {
                // A huge line's buffer is not kept for the rest of the file.
                self.buffer = Vec::new();
            }
            self.buffer.clear();
            self.line = 0..0;
            let read = self
                .reader
                .read_until(b'\n', &mut self.buffer)
                .map_err(|source| TranscriptError::read(&self.path, source))?;
            if read == 0 {
                return Ok(None);
            }
            self.next = LineAt {
                line: at.line + 1,
                offset: at.offset + read as u64,
            };
            let skipped = if at.line == 1 && self.buffer.starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            let mut line = &self.buffer[skipped..];
            while let [rest @ .., b'\n' | b'\r'] = line {
                line = rest;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.line = skipped..skipped + line.len();
            return match serde_json::from_slice(line) {
                Ok(record) => Ok(Some((record, at))),
                Err(error) => {
                    let column = error.column().max(1);
                    Err(TranscriptError::Malformed {
                        path: self.path.clone(),
                        line: at.line,
                        column: Some(column + skipped),
                        offset: Some(at.offset + (skipped + column - 1) as u64),
                        message: strip_position(&error),
                        // The line is read: the next one is a record of its own.
                        skippable: true,
                    })
                }
            };
        }
    }

    /// The last record read (or refused) parsed again as another type.
    pub(super) fn reparse<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_slice(&self.buffer[self.line.clone()]).ok()
    }

    /// A malformed-record error for the record on the line at `at`.
    pub(super) fn error_at(&self, at: LineAt, message: impl Into<String>) -> TranscriptError {
        TranscriptError::Malformed {
            path: self.path.clone(),
            line: at.line,
            column: None,
            offset: Some(at.offset),
            message: message.into(),
            skippable: true,
        }
    }

    /// The line of the last record read (or refused).
    pub(super) fn last_line(&self) -> usize {
        self.next.line.saturating_sub(1).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::Value;

    #[test]
    fn blank_lines_are_skipped_and_lines_keep_their_numbers_and_offsets() {
        let mut lines = JsonLines::new(
            Path::new("t.jsonl"),
            "\u{feff}{\"a\":1}\r\n\n  \n{\"b\":2}".as_bytes(),
        );
        let (_, first) = lines.next_record::<Value>().unwrap().unwrap();
        let (second, at) = lines.next_record::<Value>().unwrap().unwrap();
        assert_eq!(first, LineAt { line: 1, offset: 0 });
        assert_eq!(
            (second["b"].as_u64(), at),
            (Some(2), LineAt { line: 4, offset: 16 })
        );
        assert!(lines.next_record::<Value>().unwrap().is_none());
    }

    #[test]
    fn a_malformed_line_is_reported_with_its_line_column_and_byte_offset() {
        let mut lines = JsonLines::new(Path::new("t.jsonl"), "{\"a\":1}\n{\"a\": tru}\n".as_bytes());
        lines.next_record::<Value>().unwrap();
        let error = lines.next_record::<Value>().unwrap_err().to_string();
        assert_eq!(error, "t.jsonl:2:10: expected ident (byte 17)");
    }
}
