//! Writing output files atomically: a temporary file in the same folder, renamed over the target
//! only once it is complete, so a failure never leaves a half-written file.

use std::{
    io::{self, Write},
    path::{Path, PathBuf},
};

/// A file that could not be written; the target is untouched.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", path.display())]
pub struct WriteError {
    /// The target.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let wrap = |source| WriteError {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(wrap)?;
    file.write_all(bytes).map_err(wrap)?;
    file.as_file().sync_all().map_err(wrap)?;
    file.persist(path).map_err(|error| wrap(error.error))?;
    Ok(())
}

/// Writes `value` as pretty JSON to `path` atomically.
pub fn write_json_atomically(path: &Path, value: &impl serde::Serialize) -> Result<(), WriteError> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("values serialise");
    bytes.push(b'\n');
    write_atomically(path, &bytes)
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
}
