//! Finding plugin engines: `<plugins>/context_engine/<name>/` folders with a `plugin.yaml` and a
//! compiled library.
//!
//! Discovery reads `plugin.yaml` files and lists folders; it never opens a library (opening one
//! runs its static constructors, so only the selected plugin is ever opened, by `loading`).

use std::{
    collections::HashMap,
    ffi::OsStr,
    fmt, fs,
    path::{Path, PathBuf},
};

use serde::Deserialize;
use walkdir::WalkDir;

use crate::loading::is_supported_abi;

/// The folder under the plugins directory that holds context-engine plugins.
pub const CONTEXT_ENGINE_DIR: &str = "context_engine";

/// The manifest file of a plugin folder.
pub const MANIFEST_FILE: &str = "plugin.yaml";

/// The file extension of a shared library on this platform.
pub const LIBRARY_EXTENSION: &str = std::env::consts::DLL_EXTENSION;

/// A plugin's `plugin.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Manifest {
    /// The engine's name; must equal the folder's name and what users write in `context.engine`.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// One line on what the engine does.
    pub description: String,
    /// The engine interface version the library was built for.
    pub abi_version: u32,
    /// The library's file name; optional when the folder holds exactly one library.
    #[serde(default)]
    pub library: Option<String>,
    /// Who wrote it.
    #[serde(default)]
    pub author: Option<String>,
    /// `sha256:<hex>` of the library, checked before it is opened.
    #[serde(default)]
    pub checksum: Option<String>,
}

/// One folder under `context_engine/`, usable or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginFolder {
    /// The folder.
    pub dir: PathBuf,
    /// The folder's name.
    pub folder_name: String,
    /// The manifest, when it could be read.
    pub manifest: Option<Manifest>,
    /// The library file, when one was found.
    pub library: Option<PathBuf>,
    /// Whether the host could load it, and if not, why.
    pub status: Result<(), PluginProblem>,
}

impl PluginFolder {
    /// The name users select it by: its folder's (a usable folder's manifest says the same; one
    /// whose manifest says another is unusable, and its problem names that one).
    pub fn name(&self) -> &str {
        &self.folder_name
    }

    /// Whether nothing stands in the way of loading it.
    pub fn is_usable(&self) -> bool {
        self.status.is_ok()
    }
}

/// Why a plugin folder cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginProblem {
    /// No `plugin.yaml`.
    NoManifest,
    /// `plugin.yaml` is not valid YAML or misses a field.
    MalformedManifest {
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// No library file for this platform.
    NoLibrary,
    /// Several libraries and `library:` names none.
    AmbiguousLibrary(Vec<String>),
    /// `library:` names a file that is not there.
    NamedLibraryMissing(String),
    /// `library:` names a path, not a file of the folder: a plugin folder is the whole plugin.
    LibraryOutsideFolder(String),
    /// The manifest's `abi_version` is not one this host supports.
    UnsupportedAbi(u32),
    /// `name` in the manifest differs from the folder's name.
    NameMismatch(String),
    /// Another folder already declares this name.
    DuplicateName(PathBuf),
    /// The folder is a link to something that is not there.
    DanglingLink(PathBuf),
    /// Keys of the manifest spelt like its own (each named, so one edit fixes the file): one
    /// letter off `checksum` would turn the library's check off, off `library` another library
    /// could be opened.
    MisspeltKeys(Vec<MisspeltKey>),
}

/// A manifest key spelt like one of the manifest's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MisspeltKey {
    /// Its line.
    pub line: Option<usize>,
    /// The key as written.
    pub key: String,
    /// The manifest's key it is spelt like.
    pub closest: &'static str,
}

impl MisspeltKey {
    fn at(&self) -> String {
        let at = self
            .line
            .map(|line| format!(" at line {line}"))
            .unwrap_or_default();
        format!("`{}`{at}", self.key)
    }
}

impl fmt::Display for PluginProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoManifest => write!(f, "no {MANIFEST_FILE}"),
            Self::MalformedManifest {
                line: Some(line),
                column: Some(column),
                message,
            } => {
                write!(
                    f,
                    "malformed {MANIFEST_FILE} at line {line}, column {column}: {message}"
                )
            }
            Self::MalformedManifest { message, .. } => write!(f, "malformed {MANIFEST_FILE}: {message}"),
            Self::NoLibrary => write!(f, "no library (*.{LIBRARY_EXTENSION}) in the folder"),
            Self::AmbiguousLibrary(names) => write!(
                f,
                "several libraries ({}) and {MANIFEST_FILE} names none with `library:`",
                names.join(", ")
            ),
            Self::NamedLibraryMissing(name) => {
                write!(f, "library `{name}` named in {MANIFEST_FILE} is missing")
            }
            Self::LibraryOutsideFolder(name) => write!(
                f,
                "library `{name}` named in {MANIFEST_FILE} is not a file name of the folder (a path is not taken)"
            ),
            Self::UnsupportedAbi(version) => write!(
                f,
                "built for engine ABI version {version}; this host supports {}",
                crate::loading::supported_versions()
            ),
            Self::NameMismatch(name) => write!(
                f,
                "{MANIFEST_FILE} says name `{name}`, which is not the folder's name"
            ),
            Self::DuplicateName(other) => write!(f, "the name is already declared by {}", other.display()),
            Self::DanglingLink(target) => write!(f, "a link to {}, which is not there", target.display()),
            Self::MisspeltKeys(keys) => match keys.as_slice() {
                [one] => write!(
                    f,
                    "{MANIFEST_FILE} has the unknown key {}; did you mean `{}`?",
                    one.at(),
                    one.closest
                ),
                many => write!(
                    f,
                    "{MANIFEST_FILE} has unknown keys: {}",
                    many.iter()
                        .map(|key| format!("{} (did you mean `{}`?)", key.at(), key.closest))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        }
    }
}

/// A plugins directory that cannot be listed at all.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot list plugin folders: {source}", dir.display())]
pub struct DiscoveryError {
    /// The directory.
    pub dir: PathBuf,
    /// Why.
    pub source: walkdir::Error,
}

/// Every folder under `<plugins_dir>/context_engine/`, sorted by name, each with its status.
///
/// Folders whose names start with `.` or `_` are skipped; a link to a folder is a folder. A
/// missing directory has no plugins.
pub fn discover_plugins(plugins_dir: &Path) -> Result<Vec<PluginFolder>, DiscoveryError> {
    let root = plugins_dir.join(CONTEXT_ENGINE_DIR);
    if !root.is_dir() {
        tracing::debug!("{}: no plugin folders (directory missing)", root.display());
        return Ok(Vec::new());
    }
    let mut folders = Vec::new();
    let entries = WalkDir::new(&root).min_depth(1).max_depth(1).sort_by_file_name();
    for entry in entries {
        let entry = entry.map_err(|source| DiscoveryError {
            dir: root.clone(),
            source,
        })?;
        let folder_name = entry.file_name().to_string_lossy().into_owned();
        // A link to a folder is one (a plugin checkout linked into place is how many stage one).
        let is_folder = entry.file_type().is_dir() || (entry.path_is_symlink() && entry.path().is_dir());
        if folder_name.starts_with(['.', '_']) {
            continue;
        }
        if entry.path_is_symlink() && !entry.path().exists() {
            // Listed, so that a link whose folder moved is not silently one plugin less.
            let target = fs::read_link(entry.path()).unwrap_or_default();
            folders.push(PluginFolder {
                dir: entry.path().to_owned(),
                folder_name,
                manifest: None,
                library: None,
                status: Err(PluginProblem::DanglingLink(target)),
            });
            continue;
        }
        if !is_folder {
            continue;
        }
        folders.push(inspect_folder(entry.path(), folder_name));
    }
    mark_duplicates(&mut folders);
    Ok(folders)
}

/// Reads one plugin folder's manifest and finds its library, without opening it.
pub fn inspect_folder(dir: &Path, folder_name: String) -> PluginFolder {
    let mut folder = PluginFolder {
        dir: dir.to_owned(),
        folder_name,
        manifest: None,
        library: None,
        status: Ok(()),
    };
    folder.status = read_manifest(dir).and_then(|manifest| {
        let library = find_library(dir, manifest.library.as_deref());
        folder.manifest = Some(manifest.clone());
        folder.library = library.clone().ok();
        check_manifest(&manifest, &folder.folder_name)?;
        library.map(drop)
    });
    folder
}

fn read_manifest(dir: &Path) -> Result<Manifest, PluginProblem> {
    let path = dir.join(MANIFEST_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(PluginProblem::NoManifest),
        Err(error) => {
            return Err(PluginProblem::MalformedManifest {
                line: None,
                column: None,
                message: error.to_string(),
            })
        }
    };
    let mut misspelt = Vec::new();
    let manifest = serde_ignored::deserialize(serde_norway::Deserializer::from_str(&text), |ignored| {
        let key = ignored.to_string();
        let known = serde_aux::serde_introspection::serde_introspect::<Manifest>();
        if let Some(closest) = ctxhost_engine_kit::keys::closest_key(&key, known) {
            misspelt.push(MisspeltKey {
                line: crate::config::find_key_line(&text, &key),
                key,
                closest,
            });
        }
    });
    // Keys unlike every one of the manifest's are left alone: Hermes's `plugin.yaml` has its own.
    // A misspelt required key also makes that key missing: the spelling is the clearer cause.
    if !misspelt.is_empty() {
        return Err(PluginProblem::MisspeltKeys(misspelt));
    }
    manifest.map_err(|error| {
        let location = error.location();
        let message = error.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.clone(), |at| message[..at].to_owned());
        PluginProblem::MalformedManifest {
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            message,
        }
    })
}

fn check_manifest(manifest: &Manifest, folder_name: &str) -> Result<(), PluginProblem> {
    if manifest.name != folder_name {
        return Err(PluginProblem::NameMismatch(manifest.name.clone()));
    }
    if !is_supported_abi(manifest.abi_version) {
        return Err(PluginProblem::UnsupportedAbi(manifest.abi_version));
    }
    Ok(())
}

fn find_library(dir: &Path, named: Option<&str>) -> Result<PathBuf, PluginProblem> {
    if let Some(name) = named {
        let mut parts = Path::new(name).components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        ) {
            return Err(PluginProblem::LibraryOutsideFolder(name.to_owned()));
        }
        let path = dir.join(name);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(PluginProblem::NamedLibraryMissing(name.to_owned()))
        };
    }
    let mut libraries: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_file() && path.extension() == Some(OsStr::new(LIBRARY_EXTENSION)))
                .collect()
        })
        .unwrap_or_default();
    libraries.sort();
    match libraries.len() {
        0 => Err(PluginProblem::NoLibrary),
        1 => Ok(libraries.remove(0)),
        _ => Err(PluginProblem::AmbiguousLibrary(
            libraries
                .iter()
                .filter_map(|path| path.file_name())
                .map(|name| name.to_string_lossy().into_owned())
                .collect(),
        )),
    }
}

/// A name declared by two folders belongs to the folder of that name; any other folder claiming it
/// is reported as a duplicate (more telling than "name does not match the folder").
fn mark_duplicates(folders: &mut [PluginFolder]) {
    let owners: HashMap<String, PathBuf> = folders
        .iter()
        .filter(|folder| {
            folder
                .manifest
                .as_ref()
                .is_some_and(|manifest| manifest.name == folder.folder_name)
        })
        .map(|folder| (folder.folder_name.clone(), folder.dir.clone()))
        .collect();
    for folder in folders.iter_mut() {
        let Some(manifest) = &folder.manifest else {
            continue;
        };
        if manifest.name == folder.folder_name {
            continue;
        }
        if let Some(owner) = owners.get(&manifest.name) {
            folder.status = Err(PluginProblem::DuplicateName(owner.clone()));
        }
    }
}

/// Why no usable plugin folder answers a name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// No folder of that name.
    #[error("no plugin folder `{name}` in {}{}", root.display(), where_list(name, *root_exists, usable))]
    Missing {
        /// The name asked for.
        name: String,
        /// The folder searched.
        root: PathBuf,
        /// Whether that folder exists (a `--plugins-dir` mistyped names none).
        root_exists: bool,
        /// The plugins there whose folder is in order (their libraries not opened yet, so not
        /// known to load).
        usable: Vec<String>,
    },
    /// The folder exists but cannot be used.
    #[error("{}: {problem}", dir.display())]
    Unusable {
        /// The folder.
        dir: PathBuf,
        /// Why.
        problem: PluginProblem,
    },
}

fn where_list(name: &str, root_exists: bool, usable: &[String]) -> String {
    if !root_exists {
        return " (no such directory)".to_owned();
    }
    if usable.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = usable.iter().map(String::as_str).collect();
    // The built-in engine is a name a user may have meant too (`compresor`).
    let known: Vec<&str> = names
        .iter()
        .copied()
        .chain([crate::config::DEFAULT_ENGINE])
        .collect();
    // Not "usable": finding them opens no library, and one may still fail to load.
    match ctxhost_engine_kit::keys::closest_key(name, &known) {
        Some(meant) => format!(" (plugins there: {}; did you mean `{meant}`?)", names.join(", ")),
        None => format!(" (plugins there: {})", names.join(", ")),
    }
}

/// The usable folder for engine `name` among `folders` (found under `plugins_dir`), or why there
/// is none.
pub fn find_plugin<'a>(
    folders: &'a [PluginFolder],
    name: &str,
    plugins_dir: &Path,
) -> Result<&'a PluginFolder, LookupError> {
    let Some(folder) = folders.iter().find(|folder| folder.folder_name == name) else {
        let root = plugins_dir.join(CONTEXT_ENGINE_DIR);
        return Err(LookupError::Missing {
            name: name.to_owned(),
            root_exists: root.is_dir(),
            root,
            usable: folders
                .iter()
                .filter(|f| f.is_usable())
                .map(|f| f.folder_name.clone())
                .collect(),
        });
    };
    match &folder.status {
        Ok(()) => Ok(folder),
        Err(problem) => Err(LookupError::Unusable {
            dir: folder.dir.clone(),
            problem: problem.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;
