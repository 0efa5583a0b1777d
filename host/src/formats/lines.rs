//! JSONL: one JSON record a line, read a batch of lines at a time into one reused buffer.
//!
//! The lines of a batch are parsed with one serde_json deserializer over the whole batch, value
//! after value: a deserializer built per line starts with an empty scratch buffer, and growing it
//! again for every tool output full of `\n` escapes cost a third of parsing a heavy transcript.
//! Each record must still be one line: a value that does not end on its own line, or is followed
//! by more than whitespace, is parsed again alone, which gives the error a line-by-line reader
//! gives, and the batch goes on from the next line.
//!
//! Past the first few batches, a batch is parsed on a thread of its own while the next is read
//! (see `parse_ahead`).

use std::{collections::VecDeque, io::BufRead, ops::Range, path::Path, sync::Arc};

use serde::de::DeserializeOwned;

use super::{
    cursor::{strip_position, KEPT_BUFFER_BYTES},
    parse_ahead::{ParseAhead, INLINE_BATCHES},
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

/// A line of a batch to parse: its text in the batch buffer (without its end of line and a
/// byte-order mark), where it starts, and the bytes of the mark skipped.
type Line = (Range<usize>, LineAt, usize);

/// Whole lines read at once, and what they parsed to.
struct Batch<T> {
    bytes: Vec<u8>,
    parsed: VecDeque<Parsed<T>>,
    /// A read error met after the batch's lines.
    failed: Option<TranscriptError>,
}

/// The records of a JSONL file, each a `T`.
pub(super) struct JsonLines<R, T> {
    path: Arc<Path>,
    reader: R,
    /// The batch whose records are being given out.
    current: Batch<T>,
    /// Batches read, parsed here or on a thread of their own.
    parsing: ParseAhead<Batch<T>>,
    /// Buffers of batches given out, to read the next batches into.
    spare: Vec<Vec<u8>>,
    /// The file ended, or reading it failed.
    ended: bool,
    /// The last record's text in the current batch.
    line: Range<usize>,
    /// Where the next line to read starts, and where the last record given out started.
    next: LineAt,
    last: LineAt,
}

impl<R: BufRead, T: DeserializeOwned + Send + 'static> JsonLines<R, T> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self::parsing_inline(path, reader, INLINE_BATCHES)
    }

    /// Lines whose first `inline_batches` batches are parsed as they are read, and the rest on a
    /// thread of their own.
    fn parsing_inline(path: &Path, reader: R, inline_batches: usize) -> Self {
        Self {
            path: Arc::from(path),
            reader,
            current: Batch {
                bytes: Vec::new(),
                parsed: VecDeque::new(),
                failed: None,
            },
            parsing: ParseAhead::new(inline_batches),
            spare: Vec::new(),
            ended: false,
            line: 0..0,
            next: LineAt { line: 1, offset: 0 },
            last: LineAt { line: 1, offset: 0 },
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The next record and where its line starts, skipping blank lines; `None` at the end.
    pub(super) fn next_record(&mut self) -> Result<Option<(T, LineAt)>, TranscriptError> {
        loop {
            if let Some(parsed) = self.current.parsed.pop_front() {
                self.line = parsed.text;
                self.last = parsed.at;
                return parsed.record.map(|record| Some((record, parsed.at)));
            }
            if let Some(error) = self.current.failed.take() {
                return Err(error);
            }
            while !self.ended && self.parsing.wants_more() {
                self.read_batch();
            }
            let Some(batch) = self.parsing.next() else {
                return Ok(None);
            };
            let done = std::mem::replace(&mut self.current, batch);
            if done.bytes.capacity() <= KEPT_BUFFER_BYTES {
                // A huge line's buffer is not kept for the rest of the file.
                self.spare.push(done.bytes);
            }
        }
    }

    /// Reads whole lines until the batch holds [`BATCH_BYTES`] or the file ends, and has them
    /// parsed.
    fn read_batch(&mut self) {
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        let mut lines = Vec::new();
        let mut failed = None;
        while bytes.len() < BATCH_BYTES {
            let at = self.next;
            let start = bytes.len();
            let read = match self.reader.read_until(b'\n', &mut bytes) {
                Ok(read) => read,
                Err(source) => {
                    bytes.truncate(start);
                    failed = Some(TranscriptError::read(&self.path, source));
                    self.ended = true;
                    break;
                }
            };
            if read == 0 {
                self.ended = true;
                break;
            }
            self.next = LineAt {
                line: at.line + 1,
                offset: at.offset + read as u64,
            };
            let skipped = if at.line == 1 && bytes[start..].starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            let mut end = bytes.len();
            while end > start + skipped && matches!(bytes[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            let text = start + skipped..end;
            if !bytes[text.clone()].iter().all(u8::is_ascii_whitespace) {
                lines.push((text, at, skipped));
            }
        }
        let path = Arc::clone(&self.path);
        self.parsing.submit(move || {
            let parsed = parse_batch(&path, &bytes, lines);
            Batch {
                bytes,
                parsed,
                failed,
            }
        });
    }

    /// The last record read (or refused) parsed again as another type.
    pub(super) fn reparse<U: DeserializeOwned>(&self) -> Option<U> {
        serde_json::from_slice(&self.current.bytes[self.line.clone()]).ok()
    }

    /// A malformed-record error for the record on the line at `at`.
    pub(super) fn error_at(&self, at: LineAt, message: impl Into<String>) -> TranscriptError {
        TranscriptError::Malformed {
            path: self.path.to_path_buf(),
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

/// The lines of a batch parsed in one pass, and those that are not one record each alone.
fn parse_batch<T: DeserializeOwned>(path: &Path, batch: &[u8], lines: Vec<Line>) -> VecDeque<Parsed<T>> {
    let mut parsed = VecDeque::with_capacity(lines.len());
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
                    let record = parse_line(path, &batch[text.clone()], at, skipped);
                    parsed.push_back(Parsed { text, at, record });
                    // Start again on the next line.
                    break;
                }
            };
            parsed.push_back(Parsed { text, at, record });
        }
    }
    parsed
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
        // Every batch parsed as it is read, every batch on the parsing thread, and a switch
        // between them.
        for inline_batches in [usize::MAX, 0, 1] {
            let mut lines = JsonLines::<_, Map<String, Value>>::parsing_inline(
                Path::new("t.jsonl"),
                text.as_bytes(),
                inline_batches,
            );
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
            assert!(got == expected, "parsed inline for {inline_batches} batches");
        }
    }

    /// A refused record is read again, as another type, from the batch it came in, wherever the
    /// batches were parsed.
    #[test]
    fn a_refused_record_is_read_again_from_its_own_batch() {
        let mut text = String::new();
        for n in 0..20_000 {
            match n % 1_000 {
                999 => text.push_str(&format!("[{n}]\n")),
                _ => text.push_str(&format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "y".repeat(40))),
            }
        }
        for inline_batches in [usize::MAX, 0] {
            let mut lines = JsonLines::<_, Map<String, Value>>::parsing_inline(
                Path::new("t.jsonl"),
                text.as_bytes(),
                inline_batches,
            );
            let mut refused = Vec::new();
            loop {
                match lines.next_record() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => refused.push((lines.last_line(), lines.reparse::<Vec<u64>>())),
                }
            }
            let expected: Vec<_> = (0..20)
                .map(|k| (k * 1_000 + 1_000, Some(vec![k as u64 * 1_000 + 999])))
                .collect();
            assert_eq!(refused, expected, "parsed inline for {inline_batches} batches");
        }
    }
}
