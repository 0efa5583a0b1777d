//! Helpers: locating built libraries, building plugin trees, running the binary.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use tempfile::TempDir;

/// The cargo profile directory the tests were built into (`target/debug`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // target/debug/deps/integration-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_owned()
}

/// A cdylib of this workspace, built by `cargo test` before the tests run.
pub fn built_library(lib_name: &str) -> PathBuf {
    let file = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let profile = profile_dir();
    // deps/ first: `cargo test` rebuilds the dev-dependency libraries there, while a copy in the
    // profile directory may be left over from an older `cargo build`.
    [profile.join("deps").join(&file), profile.join(&file)]
        .into_iter()
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{file} is not built in {}: run the tests with `cargo test` from the workspace root",
                profile.display()
            )
        })
}

/// The ctxhost binary under test.
pub fn ctxhost() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ctxhost"))
}

/// Runs ctxhost in `dir` and returns its output.
pub fn run_ctxhost(dir: &Path, args: &[&str]) -> Output {
    ctxhost()
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("ctxhost runs")
}

/// Runs ctxhost in `dir`, killing it if it has not ended after `limit`: for a test of something
/// that would otherwise hang the test run. Its output goes through files, which never fill up.
pub fn run_ctxhost_within(dir: &Path, args: &[&str], limit: std::time::Duration) -> Output {
    let (stdout, stderr) = (dir.join("ctxhost.stdout"), dir.join("ctxhost.stderr"));
    let mut child = ctxhost()
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(fs::File::create(&stdout).unwrap())
        .stderr(fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("ctxhost starts");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "ctxhost {args:?} was still running after {limit:?}; stderr: {}",
                fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: fs::read(&stdout).unwrap(),
        stderr: fs::read(&stderr).unwrap(),
    }
}

/// stdout and stderr as text.
pub fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The repository's own example files.
pub fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join(path)
}

/// A temporary directory with `plugins/context_engine/` and a place for `config.yaml`.
pub struct PluginDir {
    root: TempDir,
}

impl PluginDir {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary directory");
        fs::create_dir_all(root.path().join("plugins/context_engine")).unwrap();
        Self { root }
    }

    /// The directory holding `config.yaml` and `plugins/`.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The plugins directory.
    pub fn plugins(&self) -> PathBuf {
        self.root().join("plugins")
    }

    /// A plugin folder with `manifest` (when given) and nothing else yet.
    pub fn folder(&self, name: &str, manifest: Option<&str>) -> PathBuf {
        let dir = self.plugins().join("context_engine").join(name);
        fs::create_dir_all(&dir).unwrap();
        if let Some(manifest) = manifest {
            fs::write(dir.join("plugin.yaml"), manifest).unwrap();
        }
        dir
    }

    /// A plugin folder `name` holding a copy of the built library `lib_name` and a manifest
    /// declaring `name` at ABI version 1.
    pub fn engine(&self, name: &str, lib_name: &str) -> PathBuf {
        let dir = self.folder(name, Some(&manifest(name, 1)));
        let source = built_library(lib_name);
        fs::copy(&source, dir.join(source.file_name().unwrap())).unwrap();
        dir.join(source.file_name().unwrap())
    }

    /// Writes `config.yaml` and returns its path.
    pub fn config(&self, yaml: &str) -> PathBuf {
        let path = self.root().join("config.yaml");
        fs::write(&path, yaml).unwrap();
        path
    }

    /// Runs ctxhost in this directory.
    pub fn run(&self, args: &[&str]) -> Output {
        run_ctxhost(self.root(), args)
    }
}

/// A valid manifest.
pub fn manifest(name: &str, abi_version: u32) -> String {
    format!("name: {name}\nversion: 0.1.0\ndescription: test engine {name}\nabi_version: {abi_version}\n")
}

/// The example transcript's path as a string.
pub fn example_transcript() -> String {
    example("transcripts/coupon-fix.json").display().to_string()
}

/// The example transcript's messages, as read from its file.
pub fn example_messages() -> Vec<ctxhost_engine_abi::Message> {
    let text = fs::read_to_string(example("transcripts/coupon-fix.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(value["messages"].clone()).unwrap()
}

/// The warnings of `faulty` configured with `bad_tools: true`, as every path that reads an
/// engine's tools gives them.
pub const FAULTY_BAD_TOOLS_WARNINGS: [&str; 3] = [
    "engine `faulty` offers the tool `faulty_echo` twice; the later schema is rejected",
    "engine `faulty`: tool schema #4 has no name; it is ignored",
    "engine `faulty`: tool schema #5 has no name; it is ignored",
];
