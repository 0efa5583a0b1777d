//! One test per loading-failure class, each matching its error variant.

use std::{fs, path::PathBuf, process::Command};

use ctxhost::loading::{open_engine_library, LoadError};

use crate::support::{built_library, PluginDir};

fn copy_of(lib_name: &str, tree: &PluginDir) -> PathBuf {
    let source = built_library(lib_name);
    let copy = tree.root().join(source.file_name().unwrap());
    fs::copy(&source, &copy).unwrap();
    copy
}

#[test]
fn a_real_engine_library_loads_and_reports_its_name_and_version() {
    let tree = PluginDir::new();
    let library = open_engine_library(&copy_of("ctxhost_engine_masking", &tree)).unwrap();
    assert_eq!(library.engine_name, "masking");
    assert_eq!(library.abi_version, ctxhost_engine_abi::ABI_VERSION);
}

#[test]
fn a_truncated_library_cannot_be_opened() {
    let tree = PluginDir::new();
    let path = copy_of("ctxhost_engine_masking", &tree);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
    let error = open_engine_library(&path)
        .err()
        .expect("a truncated library is refused");
    assert!(matches!(error, LoadError::Open { .. }), "{error}");
}

#[test]
fn a_shared_library_that_is_not_an_engine_is_recognised_as_such() {
    let tree = PluginDir::new();
    let source = tree.root().join("answer.c");
    fs::write(&source, "int answer(void) { return 42; }\n").unwrap();
    let library = tree.root().join("libanswer.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success());
    let error = open_engine_library(&library)
        .err()
        .expect("a foreign library is refused");
    assert!(matches!(error, LoadError::NotAnEngine { .. }), "{error}");
}

#[test]
fn a_library_built_against_another_interface_layout_is_refused() {
    let tree = PluginDir::new();
    let error = open_engine_library(&copy_of("ctxhost_test_alien", &tree))
        .err()
        .expect("refused");
    assert!(matches!(error, LoadError::Layout { .. }), "{error}");
    assert_eq!(error.to_string().lines().count(), 1, "one line: {error}");
}

#[test]
fn a_library_reporting_an_unsupported_abi_version_is_refused() {
    let tree = PluginDir::new();
    let error = open_engine_library(&copy_of("ctxhost_test_future", &tree))
        .err()
        .expect("refused");
    match error {
        LoadError::UnsupportedAbi { found, .. } => assert_eq!(found, ctxhost_engine_abi::ABI_VERSION + 1),
        other => panic!("expected UnsupportedAbi, got {other}"),
    }
}

#[test]
fn a_checksum_mismatch_is_refused_before_opening() {
    let tree = PluginDir::new();
    let path = copy_of("ctxhost_engine_masking", &tree);
    let error = ctxhost::loading::verify_checksum(&path, "sha256:00").unwrap_err();
    assert!(matches!(error, LoadError::Checksum { .. }), "{error}");
}
