//! JSONL: one JSON record a line, cut into batches of whole lines and parsed a batch at a time.
//!
//! The lines of a batch are parsed with one serde_json deserializer over the whole batch, value
//! after value: a deserializer built per line starts with an empty scratch buffer, and growing it
//! again for every tool output full of `\n` escapes cost a third of parsing a heavy transcript.
//! Each record must still be one line: a value that does not end on its own line, or is followed
//! by more than whitespace, is parsed again alone, which gives the error a line-by-line reader
//! gives, and the batch goes on from the next line. A file longer than one batch has the batches
//! after the one being read parsed on helper threads ([`ParseAhead`]), in order.

use std::{
    collections::VecDeque,
    io::{BufRead, ErrorKind},
    marker::PhantomData,
    ops::Range,
    path::{Path, PathBuf},
};

use serde::de::DeserializeOwned;

use super::{
    cursor::{is_json_whitespace, strip_position, KEPT_BUFFER_BYTES},
    parse_ahead::ParseAhead,
    TranscriptError,
};

/// Where a line starts: its number (1-based) and its byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LineAt {
    pub line: usize,
    pub offset: u64,
}

/// Lines cut from the file at once, in bytes (a longer line is read whole).
const BATCH_BYTES: usize = 256 * 1024;

/// A record of the batch: its text in the batch buffer, where its line starts, and what it parsed
/// to.
struct Parsed<T> {
    text: Range<usize>,
    at: LineAt,
    record: Result<T, TranscriptError>,
}

/// Whole lines cut from the file, not parsed yet: their text, where the first starts, and a read
/// error met after them.
struct Cut {
    text: Vec<u8>,
    at: LineAt,
    failed: Option<TranscriptError>,
}

/// A batch parsed: its text, its records, and the read error met after its lines.
struct Batch<T> {
    text: Vec<u8>,
    parsed: VecDeque<Parsed<T>>,
    failed: Option<TranscriptError>,
}

/// The records of a JSONL file, each a `T`.
pub(super) struct JsonLines<R, T> {
    path: PathBuf,
    reader: R,
    /// The batch whose records are given out: its text, and the records parsed from it.
    batch: Vec<u8>,
    parsed: VecDeque<Parsed<T>>,
    /// A read error met after the lines of the batch.
    failed: Option<TranscriptError>,
    /// The file ended (or could not be read further) after the lines cut so far.
    ended: bool,
    /// The batches after this one, parsed on helper threads: only for a file longer than a batch.
    ahead: Option<ParseAhead<Batch<T>>>,
    /// A batch's buffer given back, for the next cut.
    spare: Vec<u8>,
    /// The last record's text in `batch`.
    line: Range<usize>,
    /// Where the next line to read starts, and where the last record given out started.
    next: LineAt,
    last: LineAt,
    record: PhantomData<fn() -> T>,
}

impl<R: BufRead, T: DeserializeOwned + Send + 'static> JsonLines<R, T> {
    pub(super) fn new(path: &Path, reader: R) -> Self {
        Self {
            path: path.to_owned(),
            reader,
            batch: Vec::new(),
            parsed: VecDeque::new(),
            failed: None,
            ended: false,
            ahead: None,
            spare: Vec::new(),
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
        loop {
            if let Some(parsed) = self.parsed.pop_front() {
                self.line = parsed.text;
                self.last = parsed.at;
                return parsed.record.map(|record| Some((record, parsed.at)));
            }
            if let Some(error) = self.failed.take() {
                return Err(error);
            }
            let Some(batch) = self.next_batch() else {
                return Ok(None);
            };
            let done = std::mem::replace(&mut self.batch, batch.text);
            if done.capacity() <= KEPT_BUFFER_BYTES {
                // A huge line's buffer is not kept for the rest of the file.
                self.spare = done;
            }
            self.parsed = batch.parsed;
            self.failed = batch.failed;
        }
    }

    /// The next batch parsed: the first in place, and once the file proves longer than one, the
    /// next from the helpers, given the batches after it to parse meanwhile.
    fn next_batch(&mut self) -> Option<Batch<T>> {
        let Some(mut ahead) = self.ahead.take() else {
            let cut = self.cut()?;
            if !self.ended {
                let mut ahead = ParseAhead::new();
                self.give_ahead(&mut ahead);
                self.ahead = Some(ahead);
            }
            return Some(parse(&self.path, cut));
        };
        self.give_ahead(&mut ahead);
        let batch = ahead.take();
        self.ahead = Some(ahead);
        batch
    }

    /// Cuts batches for the helpers while they can take more and the file goes on.
    fn give_ahead(&mut self, ahead: &mut ParseAhead<Batch<T>>) {
        while ahead.wants_more() {
            let Some(cut) = self.cut() else {
                break;
            };
            let path = self.path.clone();
            ahead.give(move || parse(&path, cut));
        }
    }

    /// Reads whole lines until they hold [`BATCH_BYTES`] or the file ends; `None` once it has.
    /// Only the line ends are counted here: the lines are found where the batch is parsed.
    fn cut(&mut self) -> Option<Cut> {
        if self.ended {
            return None;
        }
        let mut text = std::mem::take(&mut self.spare);
        text.clear();
        let mut failed = None;
        loop {
            let read = match self.reader.fill_buf() {
                Ok(read) => read,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    // The lines read whole are kept, and the error follows them.
                    text.truncate(memchr::memrchr(b'\n', &text).map_or(0, |end| end + 1));
                    failed = Some(TranscriptError::read(&self.path, source));
                    self.ended = true;
                    break;
                }
            };
            if read.is_empty() {
                self.ended = true;
                break;
            }
            let taken = match memchr::memrchr(b'\n', read) {
                Some(end) if text.len() + read.len() >= BATCH_BYTES => end + 1,
                _ => read.len(),
            };
            text.extend_from_slice(&read[..taken]);
            let whole = taken < read.len() || (text.len() >= BATCH_BYTES && text.ends_with(b"\n"));
            self.reader.consume(taken);
            if whole {
                break;
            }
        }
        if text.is_empty() && failed.is_none() {
            return None;
        }
        let at = self.next;
        self.next = LineAt {
            line: at.line + memchr::memchr_iter(b'\n', &text).count(),
            offset: at.offset + text.len() as u64,
        };
        Some(Cut { text, at, failed })
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

/// The records of the lines cut, parsed with one deserializer over the whole batch, and those
/// that are not one record each alone.
fn parse<T: DeserializeOwned>(path: &Path, cut: Cut) -> Batch<T> {
    let Cut { text, at, failed } = cut;
    let lines = lines_of(&text, at);
    let mut parsed = VecDeque::with_capacity(lines.len());
    let mut lines = lines.into_iter().peekable();
    while let Some((first, _, _)) = lines.peek() {
        let mut stream = serde_json::Deserializer::from_slice(&text[first.start..]).into_iter::<T>();
        let base = first.start;
        for (line, at, skipped) in lines.by_ref() {
            // The stream is at `line.start` only while every record so far was its own line.
            // What follows a record on its line is JSON's whitespace or an error, as it is to a
            // line parsed alone: a form feed, whitespace to Rust, had a record refused or not by
            // where the batch began (verify35).
            match stream.next() {
                Some(Ok(record))
                    if base + stream.byte_offset() <= line.end
                        && text[base + stream.byte_offset()..line.end]
                            .iter()
                            .all(is_json_whitespace) =>
                {
                    parsed.push_back(Parsed {
                        text: line,
                        at,
                        record: Ok(record),
                    });
                }
                _ => {
                    let record = parse_line(path, &text[line.clone()], at, skipped);
                    parsed.push_back(Parsed {
                        text: line,
                        at,
                        record,
                    });
                    // Start again on the next line.
                    break;
                }
            }
        }
    }
    Batch { text, parsed, failed }
}

/// The lines of `text`, which starts at `at`, that are not blank: each one's range without its
/// line end (and the byte order mark of the file's first line), where it starts, and how many
/// bytes of a mark it skipped.
fn lines_of(text: &[u8], mut at: LineAt) -> Vec<(Range<usize>, LineAt, usize)> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let next = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |end| start + end + 1);
        let skipped = if at.line == 1 && text[start..].starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        let mut end = next;
        while end > start + skipped && matches!(text[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let line = start + skipped..end;
        if !text[line.clone()].iter().all(u8::is_ascii_whitespace) {
            lines.push((line, at, skipped));
        }
        at = LineAt {
            line: at.line + 1,
            offset: at.offset + (next - start) as u64,
        };
        start = next;
    }
    lines
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

    /// A record and where its line starts, or the error, as a string.
    type Read = Result<(Map<String, Value>, LineAt), String>;

    /// Every record of `lines` and the errors, in order.
    fn all_records<R: BufRead>(mut lines: JsonLines<R, Map<String, Value>>) -> Vec<Read> {
        let mut got = Vec::new();
        loop {
            match lines.next_record() {
                Ok(Some(record)) => got.push(Ok(record)),
                Ok(None) => return got,
                Err(error) => got.push(Err(error.to_string())),
            }
        }
    }

    /// Property: batches give what parsing each line alone gives, record for record and error for
    /// error, across batch boundaries (many more batches than are parsed ahead), whether the
    /// reader hands the file over whole or a few bytes at a time, with blank lines, a record that
    /// spans two lines, two records on one line and a line that is not an object.
    #[test]
    fn batches_give_what_a_line_at_a_time_gives() {
        let mut text = String::new();
        for n in 0..12_000 {
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
        assert!(text.len() > 6 * BATCH_BYTES);
        let whole = all_records(JsonLines::new(Path::new("t.jsonl"), text.as_bytes()));
        assert_eq!(whole.len(), expected.len());
        assert!(whole.iter().filter(|record| record.is_err()).count() == 5 * 24);
        assert!(whole == expected);
        let pieces = std::io::BufReader::with_capacity(1_000, text.as_bytes());
        assert!(all_records(JsonLines::new(Path::new("t.jsonl"), pieces)) == expected);
    }

    /// Where a batch begins changes nothing: a record followed by a form feed (whitespace to Rust,
    /// not to JSON) is refused wherever it is, as a line parsed alone refuses it, and a run of
    /// blank lines longer than a batch is no end of the file (verify35: the records after
    /// 600,000 blank lines were dropped, and form-fed records were read or refused by the line
    /// before them).
    #[test]
    fn form_feeds_and_long_blank_runs_read_the_same_wherever_batches_begin() {
        let mut text = String::new();
        for n in 0..1_500 {
            let form_fed = (260..=265).contains(&n) || n % 97 == 0;
            let pad = "z".repeat(980);
            text.push_str(&format!("{{\"n\":{n},\"pad\":\"{pad}\"}}"));
            text.push_str(if form_fed { "\u{c}\n" } else { "\n" });
            if n == 700 {
                text.push_str(&"\n".repeat(600_000));
            }
        }
        let expected = |records: &[Read]| {
            records
                .iter()
                .map(|record| match record {
                    Ok((record, _)) => Ok(record["n"].as_u64().unwrap()),
                    Err(error) => Err(error.contains("trailing characters")),
                })
                .collect::<Vec<_>>()
        };
        let whole = expected(&all_records(JsonLines::new(
            Path::new("t.jsonl"),
            text.as_bytes(),
        )));
        let wanted: Vec<_> = (0..1_500u64)
            .map(|n| match (260..=265).contains(&n) || n % 97 == 0 {
                true => Err(true),
                false => Ok(n),
            })
            .collect();
        assert!(whole == wanted);
        for capacity in [997, 4_096, 65_536] {
            let pieces = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            assert!(expected(&all_records(JsonLines::new(Path::new("t.jsonl"), pieces))) == wanted);
        }
    }

    /// A reader that gives its text, then fails.
    struct FailsAfter(std::io::Cursor<Vec<u8>>);

    impl std::io::Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(std::io::Error::other("the disk went away")),
                read => Ok(read),
            }
        }
    }

    #[test]
    fn a_read_error_comes_after_every_whole_line_read_before_it() {
        // Far more than a batch, the last line cut off by the error.
        let mut text = String::new();
        for n in 0..5_000 {
            text.push_str(&format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "y".repeat(200)));
        }
        text.push_str("{\"n\":5000,\"pa");
        let reader = std::io::BufReader::new(FailsAfter(std::io::Cursor::new(text.into_bytes())));
        let got = all_records(JsonLines::new(Path::new("t.jsonl"), reader));
        assert_eq!(got.len(), 5_001);
        assert!(got[..5_000].iter().enumerate().all(|(n, record)| record
            .as_ref()
            .is_ok_and(|(record, at)| record["n"] == n && at.line == n + 1)));
        let error = got[5_000].as_ref().unwrap_err();
        assert!(
            error.contains("t.jsonl") && error.contains("the disk went away"),
            "{error}"
        );
    }
}
