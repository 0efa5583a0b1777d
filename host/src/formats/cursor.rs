//! Walking through a JSON document from a reader, value by value, without holding its text.
//!
//! serde_json deserializes a whole value, from a slice or a reader, but has no way to stop inside
//! an array and hand back its elements one at a time. Three ways around that were considered:
//! - parse in a thread that feeds a bounded channel: a push turned into a pull, at the cost of a
//!   thread per transcript and errors arriving out of band;
//! - a `DeserializeSeed` visiting the array: the same push, needing the thread as well;
//! - serde_json reading each element straight from the file: it works (serde_json never reads
//!   past an object's `}`), but it pulls the file one byte at a time through `io::Bytes` and
//!   measured four times slower than parsing from memory.
//!
//! This cursor walks the few structural levels above the messages itself (`{`, keys, `:`, `,`,
//! `[`, `]`, `}`), and for each value in them (a key, a message, a session field) it copies the
//! value's bytes (found by counting brackets outside strings) into one reused buffer and parses
//! that with `serde_json::from_slice`. The host thus holds one message's text and the message at
//! a time, never the document; reading runs at about the speed of JSONL. An array's elements are
//! copied a batch at a time, and once an array is longer than a batch the batches after the one
//! read are parsed on a helper thread ([`ParseAhead`]): not the push of the first way above, but
//! the same pull, the results and their errors taken in order.
//!
//! Every byte consumed is counted, so that an error points at its line, column and byte offset in
//! the file.

use std::{
    collections::VecDeque,
    io::BufRead,
    path::{Path, PathBuf},
};

use serde::de::DeserializeOwned;

use super::{parse_ahead::ParseAhead, TranscriptError};

/// Where the cursor is: the next byte's line and column (1-based, in bytes) and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Position {
    pub line: usize,
    pub column: usize,
    pub offset: u64,
}

impl Position {
    /// `line L, column C`, for a warning about the value that starts here.
    pub(super) fn place(&self) -> String {
        format!("line {}, column {}", self.line, self.column)
    }
}

/// A buffer grown past this by a huge value is given back before the next value is read.
pub(super) const KEPT_BUFFER_BYTES: usize = 16 << 20;

/// A cursor over JSON values read from `R`.
pub(super) struct JsonCursor<R> {
    inner: R,
    path: PathBuf,
    offset: u64,
    line: usize,
    line_start: u64,
    /// The text of the value being parsed.
    buffer: Vec<u8>,
}

impl<R: BufRead> JsonCursor<R> {
    pub(super) fn new(path: &Path, inner: R) -> Self {
        Self {
            inner,
            path: path.to_owned(),
            offset: 0,
            line: 1,
            line_start: 0,
            buffer: Vec::new(),
        }
    }

    /// The file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The position of the next byte.
    pub(super) fn here(&self) -> Position {
        Position {
            line: self.line,
            column: (self.offset - self.line_start) as usize + 1,
            offset: self.offset,
        }
    }

    /// A malformed-record error at `at`, in the document's structure: reading cannot go on.
    pub(super) fn error_at(&self, at: Position, message: impl Into<String>) -> TranscriptError {
        self.error(at, message, false)
    }

    /// A value read whole, starting at `at`, that is not what the format says: reading can go on
    /// after it.
    pub(super) fn bad_record(&self, at: Position, message: impl Into<String>) -> TranscriptError {
        self.error(at, message, true)
    }

    fn error(&self, at: Position, message: impl Into<String>, skippable: bool) -> TranscriptError {
        TranscriptError::Malformed {
            path: self.path.clone(),
            line: at.line,
            column: Some(at.column),
            offset: Some(at.offset),
            message: message.into(),
            skippable,
        }
    }

    /// A malformed-record error at the next byte.
    pub(super) fn error_here(&self, message: impl Into<String>) -> TranscriptError {
        self.error_at(self.here(), message)
    }

    fn fill(&mut self) -> Result<&[u8], TranscriptError> {
        match self.inner.fill_buf() {
            Ok(buffer) => Ok(buffer),
            Err(source) => Err(TranscriptError::read(&self.path, source)),
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, TranscriptError> {
        Ok(self.fill()?.first().copied())
    }

    /// Consumes `count` bytes of what [`Self::fill`] returned, counting lines.
    fn consume(&mut self, count: usize) {
        let buffer = self.inner.fill_buf().expect("the bytes are already buffered");
        for at in memchr::memchr_iter(b'\n', &buffer[..count]) {
            self.line += 1;
            self.line_start = self.offset + at as u64 + 1;
        }
        self.offset += count as u64;
        self.inner.consume(count);
    }

    /// Skips a UTF-8 byte-order mark at the start of the file.
    pub(super) fn skip_bom(&mut self) -> Result<(), TranscriptError> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        if self.fill()?.starts_with(BOM) {
            self.consume(BOM.len());
            self.line_start = self.offset;
        }
        Ok(())
    }

    /// Skips whitespace; the position where the next value starts.
    pub(super) fn start_of_value(&mut self) -> Result<Position, TranscriptError> {
        self.skip_whitespace()?;
        Ok(self.here())
    }

    /// Skips whitespace; the next byte, if any.
    pub(super) fn skip_whitespace(&mut self) -> Result<Option<u8>, TranscriptError> {
        loop {
            let buffer = self.fill()?;
            let Some(end) = buffer.iter().position(|byte| !is_json_whitespace(byte)) else {
                if buffer.is_empty() {
                    return Ok(None);
                }
                let all = buffer.len();
                self.consume(all);
                continue;
            };
            let next = buffer[end];
            self.consume(end);
            return Ok(Some(next));
        }
    }

    fn expect(&mut self, wanted: u8, what: &str) -> Result<(), TranscriptError> {
        match self.skip_whitespace()? {
            Some(byte) if byte == wanted => {
                self.consume(1);
                Ok(())
            }
            Some(byte) => Err(self.error_here(format!("expected {what}, found `{}`", char::from(byte)))),
            None => Err(self.error_here(format!("the file ends where {what} should be"))),
        }
    }

    /// Enters an object.
    pub(super) fn begin_object(&mut self, what: &str) -> Result<(), TranscriptError> {
        self.expect(b'{', what)
    }

    /// The next key of the object entered, or `None` at its end. `first` is true until the first
    /// key has been read.
    pub(super) fn next_key(&mut self, first: &mut bool) -> Result<Option<String>, TranscriptError> {
        if self.skip_whitespace()? == Some(b'}') {
            self.consume(1);
            return Ok(None);
        }
        if !std::mem::replace(first, false) {
            self.expect(b',', "`,` or `}` after an object's value")?;
        }
        if self.skip_whitespace()? != Some(b'"') {
            return Err(self.error_here("expected an object's key, a string"));
        }
        let key = self.value::<String>()?;
        self.expect(b':', "`:` after an object's key")?;
        Ok(Some(key))
    }

    /// Enters an array.
    pub(super) fn begin_array(&mut self, what: &str) -> Result<(), TranscriptError> {
        self.expect(b'[', what)
    }

    /// Whether the array entered has another element, which the next value read is.
    pub(super) fn next_element(&mut self, first: &mut bool) -> Result<bool, TranscriptError> {
        if self.skip_whitespace()? == Some(b']') {
            self.consume(1);
            return Ok(false);
        }
        if !std::mem::replace(first, false) {
            self.expect(b',', "`,` or `]` after an array's element")?;
        }
        Ok(true)
    }

    /// Reads the next value. A value that is read whole but is not a `T` is a skippable error.
    pub(super) fn value<T: DeserializeOwned>(&mut self) -> Result<T, TranscriptError> {
        let start = self.start_of_value()?;
        let whole = self.scan_value(true)?;
        serde_json::from_slice(&self.buffer)
            .map_err(|error| self.parse_error(&self.buffer, start, &error, whole))
    }

    /// Reads the elements of the array entered, as [`Self::next_element`] and [`Self::value`]
    /// would one at a time, until about `batch_bytes` of them are read or the array ends, for
    /// [`parse_elements`] to parse together.
    fn cut_elements(&mut self, first: &mut bool, batch_bytes: usize) -> (ElementTexts, ElementsEnd) {
        if self.buffer.capacity() > KEPT_BUFFER_BYTES {
            self.buffer = Vec::new();
        }
        self.buffer.clear();
        let mut spans = Vec::new();
        let end = loop {
            if self.buffer.len() >= batch_bytes {
                break ElementsEnd::More;
            }
            match self.next_element(first) {
                Ok(true) => {}
                Ok(false) => break ElementsEnd::ArrayEnded,
                Err(error) => break ElementsEnd::Failed(error),
            }
            let start = self.buffer.len();
            let read = self
                .start_of_value()
                .and_then(|at| Ok((at, self.append_value(true)?)));
            match read {
                Ok((at, whole)) => {
                    spans.push((at, start..self.buffer.len(), whole));
                    // Whitespace between the elements, for the deserializer.
                    self.buffer.push(b' ');
                    if !whole {
                        break ElementsEnd::More;
                    }
                }
                Err(error) => break ElementsEnd::Failed(error),
            }
        };
        let texts = ElementTexts {
            path: self.path.clone(),
            text: std::mem::take(&mut self.buffer),
            spans,
        };
        (texts, end)
    }

    /// Takes back a batch's buffer, to read the next values into.
    fn reuse(&mut self, buffer: Vec<u8>) {
        if self.buffer.capacity() == 0 && buffer.capacity() <= KEPT_BUFFER_BYTES {
            self.buffer = buffer;
        }
    }

    /// Skips the next value without keeping it (its syntax is only checked as far as brackets
    /// and strings go).
    pub(super) fn skip_value(&mut self) -> Result<(), TranscriptError> {
        let start = self.start_of_value()?;
        if self.scan_value(false)? {
            return Ok(());
        }
        // Where the file ends is not what to fix: where the value began is.
        let message = match self.here().line > start.line {
            true => format!(
                "the file ends inside a value (the value that starts at line {} is never closed)",
                start.line
            ),
            false => "the file ends inside a value".to_owned(),
        };
        Err(self.error_here(message))
    }

    /// Consumes the next value's bytes, copying them into the buffer when `keep` is set; whether
    /// the value ended before the file did.
    fn scan_value(&mut self, keep: bool) -> Result<bool, TranscriptError> {
        if self.buffer.capacity() > KEPT_BUFFER_BYTES {
            // A huge value's buffer is not kept for the rest of the file.
            self.buffer = Vec::new();
        }
        self.buffer.clear();
        self.append_value(keep)
    }

    /// [`Self::scan_value`] without clearing the buffer first.
    fn append_value(&mut self, keep: bool) -> Result<bool, TranscriptError> {
        let mut scan = match self.peek()? {
            None => return Err(self.error_here("the file ends where a value should be")),
            Some(first) => Scan::new(first),
        };
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(source) => return Err(TranscriptError::read(&self.path, source)),
            };
            if chunk.is_empty() {
                // The file ends inside the value: parsing what there is says where and how.
                return Ok(false);
            }
            let (used, done) = scan.advance(chunk);
            if keep {
                self.buffer.extend_from_slice(&chunk[..used]);
            }
            self.consume(used);
            if done {
                return Ok(true);
            }
        }
    }

    /// Checks that nothing but whitespace is left.
    pub(super) fn expect_end(&mut self, after: &str) -> Result<(), TranscriptError> {
        match self.skip_whitespace()? {
            None => Ok(()),
            Some(_) => Err(self.error_here(format!("unexpected content after {after}"))),
        }
    }

    fn parse_error(
        &self,
        text: &[u8],
        start: Position,
        error: &serde_json::Error,
        whole: bool,
    ) -> TranscriptError {
        parse_error(&self.path, text, start, error, whole)
    }
}

/// serde_json's error on `text`, placed in the file `path`: the value began at `start`; `whole`
/// when it was read to its end, so that reading can go on after it.
fn parse_error(
    path: &Path,
    text: &[u8],
    start: Position,
    error: &serde_json::Error,
    whole: bool,
) -> TranscriptError {
    let (line, column) = (error.line().max(1), error.column().max(1));
    let at = if line == 1 {
        Position {
            column: start.column + column - 1,
            offset: start.offset + column as u64 - 1,
            ..start
        }
    } else {
        let line_begins = text
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .nth(line - 2)
            .map_or(text.len(), |(at, _)| at + 1);
        Position {
            line: start.line + line - 1,
            column,
            offset: start.offset + (line_begins + column - 1) as u64,
        }
    };
    let mut message = strip_position(error);
    if !whole && error.is_eof() && at.line > start.line {
        // The error is where the file ends; what to fix is where the value began.
        message = format!(
            "{message} (the value that starts at line {} is never closed)",
            start.line
        );
    }
    TranscriptError::Malformed {
        path: path.to_owned(),
        line: at.line,
        column: Some(at.column),
        offset: Some(at.offset),
        message,
        skippable: whole,
    }
}

/// The text of a batch of an array's elements ([`JsonCursor::cut_elements`]): where each starts,
/// its bytes in `text`, and whether it was read to its end.
struct ElementTexts {
    path: PathBuf,
    text: Vec<u8>,
    spans: Vec<(Position, std::ops::Range<usize>, bool)>,
}

/// The elements of a batch, parsed with one deserializer: one per element starts with an empty
/// scratch buffer, regrown for every tool output full of escapes. An element the batch's
/// deserializer does not end where its text ends is parsed alone, for the error
/// [`JsonCursor::value`] gives. The batch's buffer is given back.
fn parse_elements<T: DeserializeOwned>(texts: ElementTexts) -> (Vec<Element<T>>, Vec<u8>) {
    let ElementTexts {
        path,
        text: buffer,
        spans,
    } = texts;
    let mut elements = Vec::with_capacity(spans.len());
    let mut spans = spans.into_iter().peekable();
    while let Some((_, first, _)) = spans.peek() {
        let base = first.start;
        let mut stream = serde_json::Deserializer::from_slice(&buffer[base..]).into_iter::<T>();
        for (at, text, whole) in spans.by_ref() {
            match stream.next() {
                Some(Ok(value)) if base + stream.byte_offset() == text.end => elements.push(Element {
                    at,
                    value: Ok(value),
                    text: None,
                }),
                _ => {
                    let text = &buffer[text];
                    let value = serde_json::from_slice(text)
                        .map_err(|error| parse_error(&path, text, at, &error, whole));
                    elements.push(Element {
                        at,
                        value,
                        text: Some(text.to_vec()),
                    });
                    // Start again on the next element.
                    break;
                }
            }
        }
    }
    (elements, buffer)
}

/// An array element of [`JsonCursor::cut_elements`].
pub(super) struct Element<T> {
    /// Where it starts.
    pub at: Position,
    pub value: Result<T, TranscriptError>,
    /// Its text, when it is not a `T`: to be read again as something else.
    pub text: Option<Vec<u8>>,
}

/// The text of an element that is not what its reader asked for (an [`Element`]'s `text`), read
/// again as a JSON object for a reader that knows other shapes of a record; `None` when it is
/// not an object either.
pub(super) fn text_as_object(text: Option<&[u8]>) -> Option<serde_json::Map<String, serde_json::Value>> {
    text.and_then(|text| serde_json::from_slice(text).ok())
}

/// What follows the elements [`JsonCursor::cut_elements`] read.
enum ElementsEnd {
    /// More elements, or the end of the array, to read.
    More,
    /// The array's `]`, consumed.
    ArrayEnded,
    /// The document is broken there: reading cannot go on.
    Failed(TranscriptError),
}

/// Bytes of an array's elements [`ArrayElements`] reads ahead and parses together (a longer
/// element is read whole).
const BATCH_BYTES: usize = 256 * 1024;

/// The elements of the array a cursor entered, read ahead a batch at a time
/// ([`JsonCursor::cut_elements`]) and parsed a batch at a time ([`parse_elements`]). Once an array
/// proves longer than a batch, the batches after the one read are parsed on a helper thread
/// ([`ParseAhead`]).
pub(super) struct ArrayElements<T> {
    read: VecDeque<Element<T>>,
    /// What follows the elements read; `None` before the first batch.
    end: Option<ElementsEnd>,
    ahead: Option<ParseAhead<ParsedBatch<T>>>,
    /// The last batch cut ended with more to read.
    more_to_cut: bool,
}

/// A batch's elements, its buffer given back, and what follows it.
type ParsedBatch<T> = (Vec<Element<T>>, Vec<u8>, ElementsEnd);

impl<T> Default for ArrayElements<T> {
    fn default() -> Self {
        Self {
            read: VecDeque::new(),
            end: None,
            ahead: None,
            more_to_cut: false,
        }
    }
}

impl<T: DeserializeOwned + Send + 'static> ArrayElements<T> {
    /// The next element; `None` once the array's `]` is consumed (the next call starts on another
    /// array). An error breaks the document: reading cannot go on.
    pub(super) fn next<R: BufRead>(
        &mut self,
        cursor: &mut JsonCursor<R>,
        first: &mut bool,
    ) -> Result<Option<Element<T>>, TranscriptError> {
        loop {
            if let Some(element) = self.read.pop_front() {
                return Ok(Some(element));
            }
            match self.end.take() {
                Some(ElementsEnd::ArrayEnded) => return Ok(None),
                Some(ElementsEnd::Failed(error)) => return Err(error),
                Some(ElementsEnd::More) | None => {
                    let (elements, end) = self.next_batch(cursor, first);
                    self.read.extend(elements);
                    self.end = Some(end);
                }
            }
        }
    }

    /// The next batch: from the helper when it has one, given the batches after it meanwhile;
    /// otherwise cut and parsed here, and the helper started on the ones after it when the
    /// array goes on.
    fn next_batch<R: BufRead>(
        &mut self,
        cursor: &mut JsonCursor<R>,
        first: &mut bool,
    ) -> (Vec<Element<T>>, ElementsEnd) {
        if let Some(ahead) = &mut self.ahead {
            give_ahead(ahead, &mut self.more_to_cut, cursor, first);
            if let Some((elements, buffer, end)) = ahead.take() {
                cursor.reuse(buffer);
                return (elements, end);
            }
        }
        let (texts, end) = cursor.cut_elements(first, BATCH_BYTES);
        if matches!(end, ElementsEnd::More) {
            self.more_to_cut = true;
            let ahead = self.ahead.get_or_insert_with(ParseAhead::new);
            give_ahead(ahead, &mut self.more_to_cut, cursor, first);
        }
        let (elements, buffer) = parse_elements(texts);
        cursor.reuse(buffer);
        (elements, end)
    }
}

/// Cuts batches for the helper while it can take more and the array goes on.
fn give_ahead<R: BufRead, T: DeserializeOwned + Send + 'static>(
    ahead: &mut ParseAhead<ParsedBatch<T>>,
    more_to_cut: &mut bool,
    cursor: &mut JsonCursor<R>,
    first: &mut bool,
) {
    while *more_to_cut && ahead.wants_more() {
        let (texts, end) = cursor.cut_elements(first, BATCH_BYTES);
        *more_to_cut = matches!(end, ElementsEnd::More);
        ahead.give(move || {
            let (elements, buffer) = parse_elements(texts);
            (elements, buffer, end)
        });
    }
}

/// Finds where a JSON value ends, a chunk at a time: brackets are counted outside strings.
struct Scan {
    /// A number or a literal, which ends before the first delimiter.
    scalar: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Scan {
    fn new(first: u8) -> Self {
        Self {
            scalar: !matches!(first, b'{' | b'[' | b'"'),
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// How many bytes of `chunk` belong to the value, and whether it ends in them.
    ///
    /// Most of a transcript's bytes are inside strings (tool outputs), so a string is crossed by
    /// searching for its next `"` or `\\` (memchr), and the structure between strings by
    /// searching for the next byte that matters; only those bytes are looked at one by one.
    fn advance(&mut self, chunk: &[u8]) -> (usize, bool) {
        if self.scalar {
            return match chunk
                .iter()
                .position(|byte| matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                Some(end) => (end, true),
                None => (chunk.len(), false),
            };
        }
        let mut at = 0;
        while at < chunk.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    at += 1;
                    continue;
                }
                // Tool output is full of `\n` escapes: jump from quote to quote, and tell an
                // escaped quote by the backslashes just before it (an odd run escapes it).
                let from = at;
                let Some(found) = memchr::memchr(b'"', &chunk[from..]) else {
                    self.escaped = trailing_backslashes(&chunk[from..]) % 2 == 1;
                    return (chunk.len(), false);
                };
                let quote = from + found;
                at = quote + 1;
                if trailing_backslashes(&chunk[from..quote]) % 2 == 1 {
                    continue;
                }
                self.in_string = false;
                if self.depth == 0 {
                    return (at, true);
                }
                continue;
            }
            let Some(found) = chunk[at..]
                .iter()
                .position(|byte| matches!(byte, b'"' | b'{' | b'[' | b'}' | b']'))
            else {
                return (chunk.len(), false);
            };
            at += found;
            match chunk[at] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                _ => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return (at + 1, true);
                    }
                }
            }
            at += 1;
        }
        (chunk.len(), false)
    }
}

/// Whitespace as JSON has it (a form feed is none, though Rust's ASCII whitespace holds it).
pub(super) fn is_json_whitespace(byte: &u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// How many backslashes `bytes` ends with.
fn trailing_backslashes(bytes: &[u8]) -> usize {
    bytes.iter().rev().take_while(|&&byte| byte == b'\\').count()
}

/// serde_json's message without its own " at line L column C", which is relative to where it
/// started reading.
pub(super) fn strip_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{json, Value};

    fn cursor(text: &str) -> JsonCursor<&[u8]> {
        JsonCursor::new(Path::new("t.json"), text.as_bytes())
    }

    #[test]
    fn a_value_never_closed_is_named_by_the_line_it_starts_on() {
        let mut cursor = cursor("\n{\"id\": \"broken\", \"messages\": [\n{\"id\": \"fine\"}\n");
        let error = cursor.skip_value().unwrap_err().to_string();
        assert!(
            error.contains("the file ends inside a value (the value that starts at line 2 is never closed)"),
            "{error}"
        );
    }

    #[test]
    fn keys_and_elements_are_walked_with_values_between() {
        let mut cursor = cursor("{ \"n\": -1.5e3, \"a\": [1, {\"x\": [true]}, \"s\"], \"z\": null }  ");
        cursor.begin_object("the document").unwrap();
        let mut first = true;
        let mut seen = Vec::new();
        while let Some(key) = cursor.next_key(&mut first).unwrap() {
            if key == "a" {
                cursor.begin_array("an array").unwrap();
                let mut first = true;
                while cursor.next_element(&mut first).unwrap() {
                    seen.push(cursor.value::<Value>().unwrap());
                }
            } else {
                seen.push(cursor.value::<Value>().unwrap());
            }
        }
        cursor.expect_end("the document").unwrap();
        assert_eq!(
            seen,
            vec![
                json!(-1500.0),
                json!(1),
                json!({"x": [true]}),
                json!("s"),
                json!(null)
            ]
        );
    }

    #[test]
    fn an_error_names_line_column_and_offset() {
        let mut cursor = cursor("[\n  {\"a\": 1},\n  {\"a\": tru}\n]");
        cursor.begin_array("the document").unwrap();
        let mut first = true;
        assert!(cursor.next_element(&mut first).unwrap());
        cursor.value::<Value>().unwrap();
        assert!(cursor.next_element(&mut first).unwrap());
        let error = cursor.value::<Value>().unwrap_err().to_string();
        assert_eq!(error, "t.json:3:12: expected ident (byte 25)");
    }

    #[test]
    fn a_missing_comma_is_reported_where_it_should_be() {
        let mut cursor = cursor("{\"a\": 1 \"b\": 2}");
        cursor.begin_object("the document").unwrap();
        let mut first = true;
        cursor.next_key(&mut first).unwrap();
        cursor.value::<Value>().unwrap();
        let error = cursor.next_key(&mut first).unwrap_err().to_string();
        assert_eq!(
            error,
            "t.json:1:9: expected `,` or `}` after an object's value, found `\"` (byte 8)"
        );
    }

    /// Property: a value's end is found wherever the reads cut it, with strings full of escaped
    /// quotes and runs of backslashes (an escaped quote never ends a string, an escaped backslash
    /// before a quote does not escape it).
    #[test]
    fn a_value_ends_where_it_ends_however_the_reads_cut_it() {
        let mut rng = crate::tokens::tests::Rng::new(7);
        let mut below = |bound: usize| rng.below(bound as u64) as usize;
        let pieces = ["\\", "\"", "a", "\n", "}", "[", "é"];
        for _ in 0..300 {
            let text: String = (0..below(40)).map(|_| pieces[below(pieces.len())]).collect();
            let value = json!({ "role": "tool", "content": text, "more": [text.clone()] }).to_string();
            let document = format!("{value} ,{{}}");
            let mut scan = Scan::new(b'{');
            let (mut at, mut done) = (0, false);
            while !done {
                let end = (at + 1 + below(7)).min(document.len());
                let (used, ended) = scan.advance(&document.as_bytes()[at..end]);
                at += used;
                done = ended;
                assert!(at <= value.len(), "{value}");
            }
            assert_eq!(at, value.len(), "{value}");
        }
    }
}
