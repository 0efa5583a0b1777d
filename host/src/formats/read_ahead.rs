//! A transcript read on a thread of its own, ahead of the replay that takes its messages.
//!
//! Reading and parsing a heavy transcript is about a fifth of a replay's work, and the replay
//! waits for none of it: on a second core the next messages are ready while the engine compacts.
//! The reader stays at most [`BATCHES_AHEAD`] batches ahead, so a huge file is never held in
//! memory whole, and it stops when the replay stops taking messages.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc::{self, Receiver, SyncSender},
        Arc,
    },
    thread::JoinHandle,
};

use ctxhost_engine_abi::Message;

use super::{Format, TranscriptError, TranscriptMeta, TranscriptStream};

/// Messages handed over at a time: one hand-over costs about what reading a message does.
const BATCH_MESSAGES: usize = 64;
/// Batches the reader may be ahead of the replay.
const BATCHES_AHEAD: usize = 8;

/// What the reader thread found since its last batch.
struct Batch {
    messages: Vec<Message>,
    /// The warnings found while reading them.
    warnings: Vec<String>,
    /// Why the stream stopped, after the messages.
    error: Option<TranscriptError>,
    /// The whole meta, once the stream is exhausted (sequence problems are complete only then).
    end: Option<Box<TranscriptMeta>>,
}

/// A [`TranscriptStream`] read on a thread of its own: an iterator over its messages, the first
/// error ending it, with the meta as far as it has been read.
pub struct ReadAhead {
    path: PathBuf,
    format: Format,
    meta: TranscriptMeta,
    batches: Option<Receiver<Batch>>,
    current: std::vec::IntoIter<Message>,
    error: Option<TranscriptError>,
    reader: Option<JoinHandle<()>>,
    bytes_read: Arc<AtomicU64>,
    bytes_total: u64,
}

impl TranscriptStream {
    /// Reads the rest of this stream on a thread of its own.
    pub fn read_ahead(self) -> std::io::Result<ReadAhead> {
        let (send, batches) = mpsc::sync_channel(BATCHES_AHEAD);
        let (path, format, meta) = (self.path.clone(), self.format, self.meta.clone());
        let (bytes_read, bytes_total) = (Arc::clone(&self.bytes_read), self.bytes_total);
        let reader = std::thread::Builder::new()
            .name("transcript-reader".into())
            .spawn(move || read_all(self, &send))?;
        Ok(ReadAhead {
            path,
            format,
            meta,
            batches: Some(batches),
            current: Vec::new().into_iter(),
            error: None,
            reader: Some(reader),
            bytes_read,
            bytes_total,
        })
    }
}

/// The reader thread: batches until the stream ends, fails or nobody takes them any more.
fn read_all(mut stream: TranscriptStream, send: &SyncSender<Batch>) {
    super::parse_ahead::parse_in_place();
    let mut warned = stream.meta.warnings.len();
    loop {
        let mut batch = Batch {
            messages: Vec::with_capacity(BATCH_MESSAGES),
            warnings: Vec::new(),
            error: None,
            end: None,
        };
        while batch.messages.len() < BATCH_MESSAGES {
            match stream.next() {
                Some(Ok(message)) => batch.messages.push(message),
                Some(Err(error)) => {
                    batch.error = Some(error);
                    break;
                }
                None => {
                    batch.end = Some(Box::new(std::mem::take(&mut stream.meta)));
                    break;
                }
            }
        }
        let meta = batch.end.as_deref().unwrap_or(&stream.meta);
        batch.warnings = meta.warnings[warned.min(meta.warnings.len())..].to_vec();
        warned = meta.warnings.len();
        let last = batch.error.is_some() || batch.end.is_some();
        if send.send(batch).is_err() || last {
            return;
        }
    }
}

impl ReadAhead {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// What the transcript has said about its session as far as the replay has taken it: its
    /// warnings grow batch by batch, and the rest is complete once the iterator has ended.
    pub fn meta(&self) -> &TranscriptMeta {
        &self.meta
    }

    /// Bytes of the file the reader has read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The file's size in bytes when it was opened.
    pub fn bytes_total(&self) -> u64 {
        self.bytes_total
    }

    /// The meta, once the stream is no longer needed.
    pub fn into_meta(mut self) -> TranscriptMeta {
        self.stop();
        std::mem::take(&mut self.meta)
    }

    /// Takes the next batch; false once there is none.
    fn receive(&mut self) -> bool {
        match self.batches.as_ref().map(Receiver::recv) {
            Some(Ok(batch)) => {
                self.meta.warnings.extend(batch.warnings);
                if let Some(end) = batch.end {
                    self.meta = *end;
                }
                self.error = batch.error;
                self.current = batch.messages.into_iter();
                true
            }
            // The reader is done: it returned after its last batch, or panicked before it.
            _ => match self.stop() {
                Some(error) => {
                    self.error = Some(error);
                    true
                }
                None => false,
            },
        }
    }

    /// Lets the reader go (it stops at its next batch) and waits for it; the error a panic in it
    /// makes, since the replay must not take a file cut short for a whole one.
    fn stop(&mut self) -> Option<TranscriptError> {
        self.batches = None;
        let panicked = self.reader.take()?.join().is_err();
        panicked.then(|| {
            let why = std::io::Error::other("the transcript's reader thread panicked");
            TranscriptError::read(&self.path, why)
        })
    }
}

impl Iterator for ReadAhead {
    type Item = Result<Message, TranscriptError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(message) = self.current.next() {
                return Some(Ok(message));
            }
            if let Some(error) = self.error.take() {
                return Some(Err(error));
            }
            if !self.receive() {
                return None;
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.stop();
    }
}
