//! Writing output files atomically: a temporary file in the same folder, renamed over the target
//! only once it is complete, so a failure never leaves a half-written file.
//!
//! The file ends up as one written in place would: a new one with the mode the umask gives
//! (`0666` less the umask), a replaced one with the mode it had. A symlink is written through:
//! its target is replaced and the link stays. A read-only file, one that is not a regular file (a
//! directory, a device, a FIFO), or a process's open file (`/dev/stdout`) is refused and left as
//! it was.
//!
//! - [`write_atomically`] and [`write_json_atomically`] for a file written in one go (the final
//!   context);
//! - [`EventLog`] for the event log, written line by line as the replay goes into a temporary
//!   file that becomes the target only when [`EventLog::commit`] is called: a run that fails
//!   leaves no events file, not even a partial one;
//! - [`prompt_cache`] shapes the final request for Anthropic prompt caching;
//! - [`api_fields`] keeps only what the chat completions API takes (`--out-fields api`).

use std::{
    fs::{self, Permissions},
    io::{self, BufWriter, Write},
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
};

use tempfile::NamedTempFile;

use crate::runner::{Fact, Subscriber};

pub mod api_fields;
pub mod prompt_cache;

/// A file that could not be written; the target is untouched.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", path.display())]
pub struct WriteError {
    /// The target.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// The file to write for `path`, and the temporary file beside it that will replace it.
fn temp_file_for(path: &Path) -> io::Result<(PathBuf, NamedTempFile)> {
    let target = through_symlinks(path)?;
    let existing = match fs::metadata(&target) {
        Ok(metadata) => Some(metadata),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    if let Some(metadata) = &existing {
        // A rename would replace a device or a FIFO with a plain file, and it would not ask
        // for the write permission a file written in place needs.
        if !metadata.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        if metadata.permissions().readonly() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is read-only; make it writable to replace it",
            ));
        }
    }
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // Created with 0666 as any new file is, so that the umask decides (a temporary file's
    // default is 0600).
    let file = tempfile::Builder::new()
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(without_temporary_path)?;
    if let Some(metadata) = existing {
        file.as_file().set_permissions(metadata.permissions())?;
    }
    Ok((target, file))
}

/// The file `path` names once its symlinks are followed (a link may name a file yet to be
/// written), so that an output replaces the link's target, not the link.
fn through_symlinks(path: &Path) -> io::Result<PathBuf> {
    // As the kernel does, give up on a loop after 40 links.
    let mut target = path.to_owned();
    for _ in 0..40 {
        // `/dev/stdout`, `/dev/fd/N` and `/proc/self/fd/N` name what a descriptor is open on:
        // once the host has moved its stdout aside, fd 1 is stderr's file, and a pipe is no path.
        // The folder is resolved too: `/dev/fd` is itself a link into `/proc`.
        let folder = target.parent().and_then(|dir| fs::canonicalize(dir).ok());
        if target.starts_with("/proc") || folder.is_some_and(|dir| dir.starts_with("/proc")) {
            return Err(io::Error::other(
                "a standard stream or another open file of a process, not a file: an output is written to a file and renamed into place",
            ));
        }
        match fs::symlink_metadata(&target) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let link = fs::read_link(&target)?;
                target = match target.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(target),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(target),
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Whether `a` and `b` are one existing file (the same path, a link to it, a hard link).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The error without the temporary file's name that `tempfile` appends to it (`… at path
/// "/dir/.tmpXYZ"`): the user named the target, and the temporary name means nothing to them.
fn without_temporary_path(error: io::Error) -> io::Error {
    if error.get_ref().is_none() {
        return error;
    }
    let text = error.to_string();
    match text.rsplit_once(" at path ") {
        Some((cause, _)) => io::Error::new(error.kind(), cause.to_owned()),
        None => error,
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let wrap = |source| WriteError {
        path: path.to_owned(),
        source: without_temporary_path(source),
    };
    let (target, mut file) = temp_file_for(path).map_err(wrap)?;
    file.write_all(bytes).map_err(wrap)?;
    file.as_file().sync_all().map_err(wrap)?;
    file.persist(&target).map_err(|error| wrap(error.error))?;
    Ok(())
}

/// Writes `value` as pretty JSON to `path` atomically.
pub fn write_json_atomically(path: &Path, value: &impl serde::Serialize) -> Result<(), WriteError> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("values serialise");
    bytes.push(b'\n');
    write_atomically(path, &bytes)
}

/// The event log: one JSON object a line, written through a buffer into a temporary file beside
/// the target, which becomes the target on [`EventLog::commit`]. Dropped without a commit, it
/// leaves nothing behind.
pub struct EventLog {
    path: PathBuf,
    /// The file renamed over: `path`, or the file its symlinks lead to.
    target: PathBuf,
    file: BufWriter<NamedTempFile>,
    /// The first write that failed; later events are dropped and the commit reports it.
    failed: Option<io::Error>,
    events: u64,
}

impl EventLog {
    /// Starts an event log that will become `path`; fails when its folder cannot take a file.
    pub fn create(path: &Path) -> Result<Self, WriteError> {
        let (target, file) = temp_file_for(path).map_err(|source| WriteError {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            path: path.to_owned(),
            target,
            file: BufWriter::with_capacity(64 * 1024, file),
            failed: None,
            events: 0,
        })
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The target.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes everything out and syncs it, without renaming yet: after this only the rename can
    /// fail. Lets a caller write its other outputs first and publish the log last.
    pub fn finish(self) -> Result<FinishedEventLog, WriteError> {
        let wrap = |source| WriteError {
            path: self.path.clone(),
            source: without_temporary_path(source),
        };
        if let Some(error) = self.failed {
            return Err(wrap(error));
        }
        let file = self.file.into_inner().map_err(|error| wrap(error.into_error()))?;
        file.as_file().sync_all().map_err(wrap)?;
        Ok(FinishedEventLog {
            path: self.path,
            target: self.target,
            file,
        })
    }

    /// Writes everything out and renames the file over the target.
    pub fn commit(self) -> Result<(), WriteError> {
        self.finish()?.publish()
    }
}

impl Subscriber for EventLog {
    fn receive(&mut self, event: &Fact) {
        // The end of the run is the report's summary, not a line of the log.
        if self.failed.is_some() || matches!(event, Fact::ReplayEnd { .. }) {
            return;
        }
        let written = serde_json::to_writer(&mut self.file, event)
            .map_err(io::Error::from)
            .and_then(|()| self.file.write_all(b"\n"));
        match written {
            Ok(()) => self.events += 1,
            Err(error) => self.failed = Some(error),
        }
    }
}

/// An event log written out whole, waiting to be renamed over its target.
pub struct FinishedEventLog {
    path: PathBuf,
    target: PathBuf,
    file: NamedTempFile,
}

impl FinishedEventLog {
    /// Renames the file over the target.
    pub fn publish(self) -> Result<(), WriteError> {
        self.file.persist(&self.target).map_err(|error| WriteError {
            path: self.path.clone(),
            source: without_temporary_path(error.error),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file is left behind"
        );
    }

    #[test]
    fn a_missing_folder_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("out.json");
        let error = write_atomically(&path, b"x").unwrap_err().to_string();
        assert!(error.contains("out.json: cannot write"), "{error}");
        assert!(!path.exists());
    }

    fn warning(message: &str) -> Fact {
        Fact::Warning {
            message_index: 0,
            message: message.to_owned(),
        }
    }

    #[test]
    fn an_event_log_appears_only_when_committed_one_json_object_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path).unwrap();
        log.receive(&warning("one"));
        log.receive(&warning("two"));
        assert!(!path.exists(), "nothing at the target before the commit");
        assert_eq!(log.events(), 2);
        log.commit().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["event"], "warning");
        assert_eq!(lines[1]["message"], "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_event_log_dropped_without_a_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path).unwrap();
        log.receive(&warning("lost"));
        drop(log);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
