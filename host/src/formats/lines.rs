//! JSONL: one JSON record a line, read a batch of lines at a time into one reused buffer.
//!
//! The lines of a batch are parsed with one serde_json deserializer over the whole batch, value
//! after value: a deserializer built per line starts with an empty scratch buffer, and growing it
//! again for every tool output full of `\n` escapes cost a third of parsing a heavy transcript.
//! Each record must still be one line: a value that does not end on its own line, or is followed
//! by more than whitespace, is parsed again alone, which gives the error a line-by-line reader
//! gives, and the batch goes on from the next line.

use std::{
    collections::VecDeque,
    io::BufRead,
    marker::PhantomData,
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

/// Lines read ahead at once, in bytes (a longer line is read whole).
const BATCH_BYTES: usize = 256 * 1024;

/// A record of the batch: its text in the batch buffer, where its line starts, and what it parsed
/// to.
struct Parsed<T> {
    text: Range<usize>,
    at: LineAt,
    record: Result<T, TranscriptError>,
}

/// The records of a JSONL file, each a `T`.
pub(super) struct JsonLines<R, T> {
    path: PathBuf,
    reader: R,
    /// Whole lines read ahead, and the records parsed from them.
    batch: Vec<u8>,
    parsed: VecDeque<Parsed<T>>,
    /// A read error met after the lines of the batch.
    failed: Option<TranscriptError>,
    /// The last record's text in `batch`.
    line: Range<usize>,
    /// Where the next line to read starts, and where the last record given out started.
    next: LineAt,
    last: LineAt,
    record: PhantomData<fn() -> T>,
}

impl<R: BufRead, T: DeserializeOwned> JsonLines<R, T> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            path: path.to_owned(),
            reader,
            batch: Vec::new(),
            parsed: VecDeque::new(),
            failed: None,
            line: 0..0,
            next: LineAt { line: 1, offset: 0 },
            last: LineAt { line: 1, offset: 0 },
            record: PhantomData,
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The next record and where its line starts, skipping blank lines; `None` at the end.
    pub(super) fn next_record(&mut self) -> Result<Option<(T, LineAt)>, TranscriptError> {
        if self.parsed.is_empty() {
            if let Some(error) = self.failed.take() {
                return Err(error);
            }
            self.read_batch();
        }
        let Some(parsed) = self.parsed.pop_front() else {
            return match self.failed.take() {
                Some(error) => Err(error),
                None => Ok(None),
            };
        };
        self.line = parsed.text;
        self.last = parsed.at;
        parsed.record.map(|record| Some((record, parsed.at)))
    }

    /// Reads whole lines until the batch holds [`BATCH_BYTES`] or the file ends, and parses them.
    fn read_batch(&mut self) {
        if self.batch.capacity() > KEPT_BUFFER_BYTES {
            // A huge line's buffer is not kept for the rest of the file.
            self.batch = Vec::new();
        }
        self.batch.clear();
        let mut lines = Vec::new();
        while self.batch.len() < BATCH_BYTES {
            let at = self.next;
            let start = self.batch.len();
            let read = match self.reader.read_until(b'\n', &mut self.batch) {
                Ok(read) => read,
                Err(source) => {
                    self.batch.truncate(start);
                    self.failed = Some(TranscriptError::read(&self.path, source));
                    break;
                }
            };
            if read == 0 {
                break;
            }
            self.next = LineAt {
                line: at.line + 1,
                offset: at.offset + read as u64,
            };
            let skipped = if at.line == 1 && self.batch[start..].starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            let mut end = self.batch.len();
            while end > start + skipped && matches!(self.batch[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            let text = start + skipped..end;
            if !self.batch[text.clone()].iter().all(u8::is_ascii_whitespace) {
                lines.push((text, at, skipped));
            }
        }
        self.parse_batch(lines);
    }

    /// Parses the lines of the batch in one pass, and those that are not one record each alone.
    fn parse_batch(&mut self, lines: Vec<(Range<usize>, LineAt, usize)>) {
        let batch = &self.batch;
        let mut lines = lines.into_iter().peekable();
        while let Some((first, _, _)) = lines.peek() {
            let mut stream = serde_json::Deserializer::from_slice(&batch[first.start..]).into_iter::<T>();
            let base = first.start;
            for (text, at, skipped) in lines.by_ref() {
                // The stream is at `text.start` only while every record so far was its own line.
                let record = match stream.next() {
                    Some(Ok(record))
                        if base + stream.byte_offset() <= text.end
                            && batch[base + stream.byte_offset()..text.end]
                                .iter()
                                .all(u8::is_ascii_whitespace) =>
                    {
                        Ok(record)
                    }
                    _ => {
                        let record = parse_line(&self.path, &batch[text.clone()], at, skipped);
                        self.parsed.push_back(Parsed { text, at, record });
                        // Start again on the next line.
                        break;
                    }
                };
                self.parsed.push_back(Parsed { text, at, record });
            }
        }
    }

    /// The last record read (or refused) parsed again as another type.
    pub(super) fn reparse<U: DeserializeOwned>(&self) -> Option<U> {
        serde_json::from_slice(&self.batch[self.line.clone()]).ok()
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
        self.last.line
    }
}

/// One line's record, or the error naming its line, column and byte offset.
fn parse_line<T: DeserializeOwned>(
    path: &Path,
    line: &[u8],
    at: LineAt,
    skipped: usize,
) -> Result<T, TranscriptError> {
    serde_json::from_slice(line).map_err(|error| {
        let column = error.column().max(1);
        TranscriptError::Malformed {
            path: path.to_owned(),
            line: at.line,
            column: Some(column + skipped),
            offset: Some(at.offset + (skipped + column - 1) as u64),
            message: strip_position(&error),
            // The line is read: the next one is a record of its own.
            skippable: true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Map, Value};

    #[test]
    fn blank_lines_are_skipped_and_lines_keep_their_numbers_and_offsets() {
        let mut lines = JsonLines::<_, Value>::new(
            Path::new("t.jsonl"),
            "\u{feff}{\"a\":1}\r\n\n  \n{\"b\":2}".as_bytes(),
        );
        let (_, first) = lines.next_record().unwrap().unwrap();
        let (second, at) = lines.next_record().unwrap().unwrap();
        assert_eq!(first, LineAt { line: 1, offset: 0 });
        assert_eq!(
            (second["b"].as_u64(), at),
            (Some(2), LineAt { line: 4, offset: 16 })
        );
        assert!(lines.next_record().unwrap().is_none());
    }

    #[test]
    fn a_malformed_line_is_reported_with_its_line_column_and_byte_offset() {
        let mut lines =
            JsonLines::<_, Value>::new(Path::new("t.jsonl"), "{\"a\":1}\n{\"a\": tru}\n".as_bytes());
        lines.next_record().unwrap();
        let error = lines.next_record().unwrap_err().to_string();
        assert_eq!(error, "t.jsonl:2:10: expected ident (byte 17)");
    }

    /// Property: batches give what parsing each line alone gives, record for record and error for
    /// error, across batch boundaries, with blank lines, a record that spans two lines, two
    /// records on one line and a line that is not an object.
    #[test]
    fn batches_give_what_a_line_at_a_time_gives() {
        let mut text = String::new();
        for n in 0..3_000 {
            let line = match n % 500 {
                17 => "{\"a\": tru}".to_owned(),
                101 => "{\"a\":".to_owned(),
                102 => "1}".to_owned(),
                250 => "{\"a\":1} {\"b\":2}".to_owned(),
                251 => "[1, 2]".to_owned(),
                300 => "   ".to_owned(),
                _ => format!("{{\"n\":{n},\"text\":\"{}\\n{}\"}}", "x".repeat(n % 300), "é"),
            };
            text.push_str(&line);
            text.push_str(if n % 7 == 0 { "\r\n" } else { "\n" });
        }
        let mut expected = Vec::new();
        let mut offset = 0;
        for (number, line) in text.split_inclusive('\n').enumerate() {
            let at = LineAt {
                line: number + 1,
                offset,
            };
            offset += line.len() as u64;
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            expected.push(
                parse_line::<Map<String, Value>>(Path::new("t.jsonl"), line.as_bytes(), at, 0)
                    .map(|record| (record, at))
                    .map_err(|error| error.to_string()),
            );
        }
        let mut lines = JsonLines::<_, Map<String, Value>>::new(Path::new("t.jsonl"), text.as_bytes());
        let mut got = Vec::new();
        loop {
            match lines.next_record() {
                Ok(Some(record)) => got.push(Ok(record)),
                Ok(None) => break,
                Err(error) => got.push(Err(error.to_string())),
            }
        }
        assert_eq!(got.len(), expected.len());
        assert!(got.iter().filter(|record| record.is_err()).count() == 6 * 5);
        assert!(got == expected);
    }
}
