//! Reading conversation transcripts into OpenAI-format messages.
//!
//! One file per format. The format is detected from the content and can be forced. Every error
//! names the file and the line (and column, where the parser knows it).

use std::{
    fmt, fs,
    path::{Path, PathBuf},
};

use ctxhost_engine_abi::Message;

mod openai;

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A JSON array of OpenAI messages.
    OpenaiArray,
    /// A JSON object with a `messages` array and any other keys.
    OpenaiObject,
    /// One OpenAI message per line.
    OpenaiJsonl,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenaiArray => "OpenAI messages (JSON array)",
            Self::OpenaiObject => "OpenAI messages (JSON object)",
            Self::OpenaiJsonl => "OpenAI messages (JSONL)",
        })
    }
}

/// What a transcript says about its session besides the messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TranscriptMeta {
    /// The model, when recorded.
    pub model: Option<String>,
    /// The window, when recorded (Hermes's fixtures carry it).
    pub context_length: Option<u64>,
    /// The session's id, when recorded.
    pub session_id: Option<String>,
}

/// A transcript read into messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Transcript {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Session details it records.
    pub meta: TranscriptMeta,
}

/// A transcript that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("{}: cannot read the transcript: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record that is not what the format says.
    #[error("{}:{line}{}: {message}", path.display(), column.map(|c| format!(":{c}")).unwrap_or_default())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The content matches no format this host reads.
    #[error("{}: not a transcript format ctxhost reads ({reason})", path.display())]
    Unrecognised {
        /// The file.
        path: PathBuf,
        /// What was seen.
        reason: String,
    },
}

impl TranscriptError {
    pub(crate) fn malformed(
        path: &Path,
        line: usize,
        column: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self::Malformed {
            path: path.to_owned(),
            line,
            column,
            message: message.into(),
        }
    }

    pub(crate) fn from_json(path: &Path, line_offset: usize, error: &serde_json::Error) -> Self {
        let message = error.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.clone(), |at| message[..at].to_owned());
        let column = (error.column() > 0).then_some(error.column());
        Self::malformed(path, line_offset + error.line().max(1), column, message)
    }
}

/// Reads the transcript at `path`, detecting its format unless `format` forces one.
pub fn read_transcript(path: &Path, format: Option<Format>) -> Result<Transcript, TranscriptError> {
    let text = fs::read_to_string(path).map_err(|source| TranscriptError::Read {
        path: path.to_owned(),
        source,
    })?;
    let format = match format {
        Some(format) => format,
        None => detect_format(path, &text)?,
    };
    let (messages, meta) = openai::read(path, &text, format)?;
    Ok(Transcript {
        path: path.to_owned(),
        format,
        messages,
        meta,
    })
}

/// Tells the format from the content.
pub fn detect_format(path: &Path, text: &str) -> Result<Format, TranscriptError> {
    let unrecognised = |reason: &str| TranscriptError::Unrecognised {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    match text.trim_start().chars().next() {
        None => Err(unrecognised("the file is empty")),
        Some('[') => Ok(Format::OpenaiArray),
        Some('{') => Ok(openai::detect_object_or_lines(text)),
        Some(_) => Err(unrecognised("it starts with neither `[` nor `{`")),
    }
}
