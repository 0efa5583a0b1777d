//! Opening engine libraries: the only place the host opens one.
//!
//! Opening a library runs its static constructors before any check can run, so callers open only
//! the plugin that was selected. abi_stable checks, when the root module is first loaded, that the
//! library was built against a compatible `ctxhost-engine-abi` and that every type reachable from
//! the root module has the layout the host expects; the host then checks the interface version the
//! library reports. Libraries are never unloaded (abi_stable leaks them on purpose), so opening the
//! same path twice returns the same instance.

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use abi_stable::library::{lib_header_from_path, LibraryError};
use ctxhost_engine_abi::ffi::EngineModuleRef;
use sha2::{Digest, Sha256};

/// The engine interface versions this host can run.
pub const SUPPORTED_ABI_VERSIONS: &[u32] = &[ctxhost_engine_abi::ABI_VERSION];

/// The interface versions this host runs, as a message says them (`1`, `1, 2`).
pub fn supported_versions() -> String {
    SUPPORTED_ABI_VERSIONS
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether this host can run a plugin built for interface `version`.
pub fn is_supported_abi(version: u32) -> bool {
    SUPPORTED_ABI_VERSIONS.contains(&version)
}

/// An opened engine library and what its root module reports.
#[derive(Clone, Copy)]
pub struct EngineLibrary {
    /// The root module: ABI version, engine name, factory.
    pub module: EngineModuleRef,
    /// The interface version the library reports.
    pub abi_version: u32,
    /// The engine name the library reports.
    pub engine_name: &'static str,
    /// How long opening and checking took.
    pub load_time: Duration,
}

/// Why a library could not be used, one variant per stage of loading.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The checksum in `plugin.yaml` does not match the file.
    #[error("{}: checksum mismatch: plugin.yaml says {expected}, the file is {found}", path.display())]
    Checksum {
        /// The library.
        path: PathBuf,
        /// From the manifest.
        expected: String,
        /// Of the file.
        found: String,
    },
    /// The dynamic loader refused the file (truncated, wrong platform, unreadable…).
    #[error("{}: cannot open the library: {reason}", path.display())]
    Open {
        /// The library.
        path: PathBuf,
        /// The loader's words.
        reason: String,
    },
    /// A shared library, but not a ctxhost engine: it exports no engine root module.
    #[error("{}: not a ctxhost engine library (it exports no engine root module)", path.display())]
    NotAnEngine {
        /// The library.
        path: PathBuf,
    },
    /// Built against an incompatible release of `ctxhost-engine-abi` or abi_stable.
    #[error("{}: built against an incompatible engine interface: {detail}", path.display())]
    InterfaceVersion {
        /// The library.
        path: PathBuf,
        /// Both versions.
        detail: String,
    },
    /// The types reachable from the root module do not have the layout the host expects.
    #[error("{}: engine interface layout mismatch: {summary}", path.display())]
    Layout {
        /// The library.
        path: PathBuf,
        /// One line; the full report is logged at debug.
        summary: String,
    },
    /// The library reports an interface version this host does not run.
    #[error("{}: built for engine ABI version {found}; this host supports {}", path.display(), supported_versions())]
    UnsupportedAbi {
        /// The library.
        path: PathBuf,
        /// What it reports.
        found: u32,
    },
}

/// What a library file was when this process first opened it from its own path.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp_of(path: &Path) -> std::io::Result<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let metadata = fs::metadata(path)?;
    Ok(FileStamp {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        inode: metadata.ino(),
    })
}

/// Paths this process opened, with the file as it was then.
static OPENED: std::sync::Mutex<Vec<(PathBuf, FileStamp)>> = std::sync::Mutex::new(Vec::new());

/// `None` when `path` can be opened as it is (first time, or unchanged since); otherwise a copy of
/// its current content in `<temp>/ctxhost-libraries/<sha256>/`, the same for the same bytes.
fn fresh_copy_if_rebuilt(path: &Path) -> Result<Option<PathBuf>, String> {
    let stamp = stamp_of(path).map_err(|error| error.to_string())?;
    let mut opened = OPENED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match opened.iter().find(|(known, _)| known == path) {
        None => {
            opened.push((path.to_owned(), stamp));
            return Ok(None);
        }
        Some((_, first)) if *first == stamp => return Ok(None),
        Some(_) => {}
    }
    drop(opened);
    let bytes = fs::read(path).map_err(|error| error.to_string())?;
    let digest = format!("{:x}", Sha256::digest(&bytes));
    let dir = std::env::temp_dir().join("ctxhost-libraries").join(&digest);
    let copy = dir.join(path.file_name().unwrap_or_default());
    if !copy.exists() {
        let write = || -> std::io::Result<()> {
            fs::create_dir_all(&dir)?;
            let mut file = tempfile::NamedTempFile::new_in(&dir)?;
            std::io::Write::write_all(&mut file, &bytes)?;
            file.persist(&copy)?;
            Ok(())
        };
        write().map_err(|error| format!("cannot copy the rebuilt library to {}: {error}", dir.display()))?;
    }
    tracing::debug!(
        "{}: rebuilt since first opened; opening its copy {}",
        path.display(),
        copy.display()
    );
    Ok(Some(copy))
}

/// Verifies the file's SHA-256 against `expected` (`sha256:<hex>` or bare hex).
pub fn verify_checksum(path: &Path, expected: &str) -> Result<(), LoadError> {
    let bytes = fs::read(path).map_err(|error| LoadError::Open {
        path: path.to_owned(),
        reason: error.to_string(),
    })?;
    let found = format!("{:x}", Sha256::digest(&bytes));
    let wanted = expected.trim().trim_start_matches("sha256:").to_ascii_lowercase();
    if found == wanted {
        Ok(())
    } else {
        Err(LoadError::Checksum {
            path: path.to_owned(),
            expected: expected.to_owned(),
            found: format!("sha256:{found}"),
        })
    }
}

/// Opens the engine library at `path` and checks it can be run.
///
/// The dynamic loader hands back the instance it already has for a path it has opened, however
/// the file changed since. So a library rebuilt in place after this process first opened it (a
/// live `/engine` swap to a new build) is opened from a copy named by its content instead: the new
/// code runs, and errors still name the user's path.
pub fn open_engine_library(path: &Path) -> Result<EngineLibrary, LoadError> {
    let started = Instant::now();
    // Errors name the library as the user's config and folders do, not its resolved path.
    let named = path.to_owned();
    // Canonical paths make "the same library twice" detectable by the loader's own cache.
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let opened_from = fresh_copy_if_rebuilt(&path).map_err(|reason| LoadError::Open {
        path: named.clone(),
        reason,
    })?;
    let path_to_open = opened_from.as_deref().unwrap_or(&path);
    check_object_layout(path_to_open).map_err(|reason| LoadError::Open {
        path: named.clone(),
        reason,
    })?;
    let module = lib_header_from_path(path_to_open)
        .and_then(|header| header.init_root_module::<EngineModuleRef>())
        .map_err(|error| classify(&named, error))?;
    let abi_version = (module.abi_version())();
    if !is_supported_abi(abi_version) {
        return Err(LoadError::UnsupportedAbi {
            path: named,
            found: abi_version,
        });
    }
    let engine_name = (module.engine_name())().as_str();
    Ok(EngineLibrary {
        module,
        abi_version,
        engine_name,
        load_time: started.elapsed(),
    })
}

/// Checks, from its headers alone, that the file is a shared library whose segments and sections
/// all lie within the file.
///
/// The dynamic loader maps segments without checking that the file is long enough, and the first
/// touch of a page past the end kills the process with SIGBUS: a truncated plugin would take the
/// host down. Only the headers are read, so this costs little even for a large library.
fn check_object_layout(path: &Path) -> Result<(), String> {
    use object::{Object, ObjectSection, ObjectSegment};

    let file = fs::File::open(path).map_err(|error| error.to_string())?;
    let length = file.metadata().map_err(|error| error.to_string())?.len();
    let cache = object::ReadCache::new(file);
    let parsed = object::File::parse(&cache).map_err(|error| {
        format!("not a shared library this host can read ({error}); truncated or corrupt?")
    })?;
    let ranges = parsed
        .segments()
        .map(|segment| Some(segment.file_range()))
        .chain(parsed.sections().map(|section| section.file_range()));
    for (offset, size) in ranges.flatten() {
        let end = offset.saturating_add(size);
        if end > length {
            return Err(format!(
                "truncated: its headers need {end} bytes, the file has {length}"
            ));
        }
    }
    Ok(())
}

fn classify(path: &Path, error: LibraryError) -> LoadError {
    let path = path.to_owned();
    match error {
        LibraryError::OpenError { err, .. } => LoadError::Open {
            path,
            reason: err.to_string(),
        },
        LibraryError::GetSymbolError { .. } => LoadError::NotAnEngine { path },
        LibraryError::ParseVersionError(error) => LoadError::InterfaceVersion {
            path,
            detail: error.to_string(),
        },
        LibraryError::IncompatibleVersionNumber {
            library_name,
            expected_version,
            actual_version,
        } => LoadError::InterfaceVersion {
            path,
            detail: format!("{library_name}: the host uses {expected_version}, the library {actual_version}"),
        },
        LibraryError::InvalidAbiHeader(header) => LoadError::InterfaceVersion {
            path,
            detail: format!("unsupported abi_stable header {header:?}"),
        },
        other => {
            let full = other.to_string();
            tracing::debug!("{}: full layout report:\n{full}", path.display());
            LoadError::Layout {
                path,
                summary: summarize_layout_error(&full),
            }
        }
    }
}

/// Layout reports run to hundreds of lines; the first line that says what differs is enough for a
/// warning.
fn summarize_layout_error(full: &str) -> String {
    let lines: Vec<&str> = full
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let telling = lines
        .iter()
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            ["mismatched", "too many", "different", "incompatible", "expected"]
                .iter()
                .any(|word| lower.contains(word))
        })
        .or(lines.first())
        .copied()
        .unwrap_or("layouts differ");
    let mut summary: String = telling.chars().take(200).collect();
    if lines.len() > 1 {
        summary.push_str(&format!(" (+{} more lines at debug level)", lines.len() - 1));
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compatibility_rule_accepts_only_versions_this_host_runs() {
        let cases = [(0, false), (1, true), (2, false), (u32::MAX, false)];
        for (version, supported) in cases {
            assert_eq!(is_supported_abi(version), supported, "version {version}");
        }
    }

    #[test]
    fn a_long_layout_report_becomes_one_telling_line() {
        let report = "Error loading\n\n  field a: mismatched types u32 and u64\n  more\n  more";
        assert_eq!(
            summarize_layout_error(report),
            "field a: mismatched types u32 and u64 (+3 more lines at debug level)"
        );
    }
}
