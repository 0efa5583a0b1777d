//! `cargo xtask plugins`: build the plugin packages and stage their libraries.
//!
//! - Plugins are the workspace packages with `[package.metadata.ctxhost] plugin = "<name>"`; the
//!   name is the folder `plugins/context_engine/<name>/`, which must already hold the committed
//!   `plugin.yaml` (checked before anything is built).
//! - All of them are built in one `cargo build`, together with the `ctxhost` binary: one cargo
//!   run unifies the features of the dependencies they share, so each crate is compiled once
//!   (a second run for the host alone would compile a dozen of them again).
//! - Each library is copied to a temporary file in its folder and renamed over the old one, so a
//!   host that is running (or starting) never sees a half-written library.
//! - A release library is stripped of its debug information on the way (with `strip`, when the
//!   platform has it): 14 MB of line tables become about 1.3 MB.

use std::{
    env,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, ensure, Context, Result};
use cargo_metadata::{Metadata, MetadataCommand, Package, TargetKind};

/// Where plugin folders live, relative to the workspace root.
const PLUGINS_DIR: &str = "plugins/context_engine";

/// Which cargo profile to build the plugins with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// `--release`, what users run.
    Release,
    /// `--profile dev`, quicker to build.
    Dev,
}

impl Profile {
    fn cargo_args(self) -> [&'static str; 2] {
        match self {
            Profile::Release => ["--profile", "release"],
            Profile::Dev => ["--profile", "dev"],
        }
    }

    /// The folder under the target directory that cargo writes this profile's output to.
    fn output_dir_name(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// A workspace package that builds a plugin library.
#[derive(Debug)]
struct Plugin {
    /// The plugin's name: its folder under `plugins/context_engine/`.
    name: String,
    /// The cargo package.
    package: String,
    /// The library's crate name, from which its file name is made.
    lib_name: String,
}

impl Plugin {
    /// The library's file name on this platform: `libx.so`, `x.dll`, `libx.dylib`.
    fn library_file_name(&self) -> String {
        format!(
            "{}{}{}",
            env::consts::DLL_PREFIX,
            self.lib_name,
            env::consts::DLL_SUFFIX
        )
    }
}

/// Builds every plugin of the workspace with `profile` and stages its library.
pub fn build_and_stage(profile: Profile) -> Result<()> {
    let cargo = cargo_program();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let metadata = MetadataCommand::new()
        .cargo_path(&cargo)
        .manifest_path(&manifest)
        .no_deps()
        .exec()
        .context("reading the workspace with `cargo metadata`")?;
    let root = metadata.workspace_root.as_std_path();
    let plugins = find_plugins(&metadata)?;
    ensure!(
        !plugins.is_empty(),
        "no workspace package declares `[package.metadata.ctxhost] plugin = \"<name>\"`"
    );
    for plugin in &plugins {
        let manifest = root.join(PLUGINS_DIR).join(&plugin.name).join("plugin.yaml");
        ensure!(
            manifest.is_file(),
            "{}: missing; plugin `{}` (package {}) needs its plugin.yaml committed there",
            manifest.display(),
            plugin.name,
            plugin.package
        );
    }

    build(&cargo, root, &plugins, profile)?;

    let output_dir = metadata
        .target_directory
        .as_std_path()
        .join(profile.output_dir_name());
    for plugin in &plugins {
        let staged = stage(root, &output_dir, plugin, profile)?;
        let shown = staged.strip_prefix(root).unwrap_or(&staged);
        let size = fs::metadata(&staged).map_or(0, |m| m.len());
        println!(
            "staged {} -> {} ({:.1} MB)",
            plugin.name,
            shown.display(),
            size as f64 / 1e6
        );
    }
    let host = output_dir.join(format!("{HOST_PACKAGE}{}", env::consts::EXE_SUFFIX));
    let host = host.strip_prefix(root).unwrap_or(&host);
    println!("built the host -> {}", host.display());
    Ok(())
}

/// `cargo` as this process was started by (the `CARGO` variable), else the one on the path.
pub(crate) fn cargo_program() -> OsString {
    env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

/// Every workspace package with plugin metadata, with its cdylib's name.
fn find_plugins(metadata: &Metadata) -> Result<Vec<Plugin>> {
    let mut plugins: Vec<Plugin> = Vec::new();
    for package in metadata.workspace_packages() {
        let Some(name) = plugin_name(package)? else {
            continue;
        };
        if let Some(other) = plugins.iter().find(|plugin| plugin.name == name) {
            bail!(
                "packages {} and {} both declare plugin `{name}`",
                other.package,
                package.name
            );
        }
        let lib = package
            .targets
            .iter()
            .find(|target| target.kind.contains(&TargetKind::CDyLib))
            .with_context(|| {
                format!(
                    "{}: declares plugin `{name}` but has no `crate-type = [\"cdylib\"]` library",
                    package.manifest_path
                )
            })?;
        plugins.push(Plugin {
            name,
            package: package.name.to_string(),
            lib_name: lib.name.replace('-', "_"),
        });
    }
    Ok(plugins)
}

/// The value of `[package.metadata.ctxhost] plugin`, when the package declares one.
fn plugin_name(package: &Package) -> Result<Option<String>> {
    let Some(value) = package
        .metadata
        .get("ctxhost")
        .and_then(|ctxhost| ctxhost.get("plugin"))
    else {
        return Ok(None);
    };
    let name = value.as_str().unwrap_or_default();
    ensure!(
        is_plain_name(name),
        "{}: [package.metadata.ctxhost] plugin must be a plain name (letters, digits, `-`, `_`), got {value}",
        package.manifest_path
    );
    Ok(Some(name.to_owned()))
}

/// Whether `name` can be a plugin folder's name: one plain path component, not hidden (the host
/// skips folders starting with `.` or `_`).
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['.', '_'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The host's package, built with the plugins.
const HOST_PACKAGE: &str = "ctxhost";

/// Builds the host and all plugin packages in one cargo run, its output shown as it comes.
fn build(cargo: &OsString, root: &Path, plugins: &[Plugin], profile: Profile) -> Result<()> {
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .arg("build")
        .args(profile.cargo_args())
        .args(["-p", HOST_PACKAGE]);
    for plugin in plugins {
        command.args(["-p", &plugin.package]);
    }
    let status = command.status().with_context(|| format!("running {command:?}"))?;
    ensure!(
        status.success(),
        "building the plugins failed ({status}): {command:?}"
    );
    Ok(())
}

/// Copies the plugin's library from `output_dir` into its folder, atomically, stripped of its
/// debug information for a release build; returns where.
fn stage(root: &Path, output_dir: &Path, plugin: &Plugin, profile: Profile) -> Result<PathBuf> {
    let file_name = plugin.library_file_name();
    let built = output_dir.join(&file_name);
    let folder = root.join(PLUGINS_DIR).join(&plugin.name);
    let staged = folder.join(&file_name);
    // A temporary name in the same folder (same file system, so the rename is atomic) that no
    // host takes for a library: it does not end in the library suffix.
    let temporary = folder.join(format!(".{file_name}.{}.tmp", std::process::id()));
    fs::copy(&built, &temporary)
        .with_context(|| format!("copying {} to {}", built.display(), temporary.display()))?;
    if profile == Profile::Release {
        strip_debug_info(&temporary);
    }
    if let Err(error) = fs::rename(&temporary, &staged) {
        let _ = fs::remove_file(&temporary);
        return Err(error).with_context(|| format!("replacing {}", staged.display()));
    }
    remove_stale_libraries(root, &folder, &file_name)?;
    Ok(staged)
}

/// Strips debug information from `library` in place with the platform's `strip`; where there is
/// none (or it fails), the library stays as built, which only costs disk space.
fn strip_debug_info(library: &Path) {
    let flag = if cfg!(target_os = "macos") {
        "-S"
    } else {
        "--strip-debug"
    };
    match Command::new("strip").arg(flag).arg(library).status() {
        Ok(status) if status.success() => {}
        Ok(status) => eprintln!("note: `strip {flag}` failed ({status}); the library is staged unstripped"),
        Err(error) => eprintln!("note: no `strip` program ({error}); the library is staged unstripped"),
    }
}

/// Removes other libraries from a plugin folder (left by a renamed crate): a folder must hold
/// exactly one, or the host cannot tell which to open.
fn remove_stale_libraries(root: &Path, folder: &Path, keep: &str) -> Result<()> {
    let entries = fs::read_dir(folder).with_context(|| format!("listing {}", folder.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("listing {}", folder.display()))?
            .path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        if name != keep && name.ends_with(env::consts::DLL_SUFFIX) && path.is_file() {
            fs::remove_file(&path).with_context(|| format!("removing stale library {}", path.display()))?;
            let shown = path.strip_prefix(root).unwrap_or(&path);
            println!("removed stale library {}", shown.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_must_be_plain_visible_folder_names() {
        for name in ["masking", "lcm-2", "my_engine"] {
            assert!(is_plain_name(name), "{name}");
        }
        for name in ["", ".hidden", "_off", "a/b", "..", "a b"] {
            assert!(!is_plain_name(name), "{name:?}");
        }
    }

    #[test]
    fn the_library_file_name_follows_the_platform() {
        let plugin = Plugin {
            name: "masking".into(),
            package: "ctxhost-masking-plugin".into(),
            lib_name: "ctxhost_engine_masking".into(),
        };
        let expected = if cfg!(windows) {
            "ctxhost_engine_masking.dll"
        } else if cfg!(target_os = "macos") {
            "libctxhost_engine_masking.dylib"
        } else {
            "libctxhost_engine_masking.so"
        };
        assert_eq!(plugin.library_file_name(), expected);
    }
}
