//! `ctxhost plugins list` and `ctxhost plugins check`.

use std::fs;

use crate::support::{built_library, manifest, texts, PluginDir, FAULTY_BAD_TOOLS_WARNINGS};

#[test]
fn plugins_list_shows_every_folder_with_its_status_and_reason() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    tree.folder("bare", None);
    tree.folder("broken", Some("name: broken\nversion: 0.1\n  description: [x\n"));
    tree.folder("empty", Some(&manifest("empty", 1)));
    let two = tree.folder("two", Some(&manifest("two", 1)));
    fs::write(two.join("liba.so"), b"x").unwrap();
    fs::write(two.join("libb.so"), b"x").unwrap();
    let other = tree.folder("other", Some(&manifest("masking", 1)));
    fs::write(other.join("libm.so"), b"x").unwrap();
    let renamed = tree.folder("renamed", Some(&manifest("something", 1)));
    fs::write(renamed.join("libr.so"), b"x").unwrap();
    let future = tree.folder("future", Some(&manifest("future", 7)));
    fs::write(future.join("libf.so"), b"x").unwrap();
    let library_elsewhere = format!(
        "{}library: ../masking/libctxhost_engine_masking.so\n",
        manifest("elsewhere", 1)
    );
    tree.folder("elsewhere", Some(&library_elsewhere));
    let sums = tree.folder(
        "sums",
        Some(&format!("{}checksum: sha256:00\n", manifest("sums", 1))),
    );
    fs::write(sums.join("libs.so"), b"x").unwrap();

    let output = tree.run(&["plugins", "list"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|line| line.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} in:\n{stdout}"))
    };
    assert!(
        line("masking").contains("libctxhost_engine_masking.so"),
        "{stdout}"
    );
    assert!(line("masking").ends_with("usable"), "{stdout}");
    assert!(line("bare").contains("unusable: no plugin.yaml"), "{stdout}");
    assert!(
        line("broken").contains("malformed plugin.yaml at line 3, column 14"),
        "{stdout}"
    );
    assert!(line("empty").contains("no library"), "{stdout}");
    assert!(
        line("two").contains("several libraries (liba.so, libb.so)"),
        "{stdout}"
    );
    // Each row is named by its folder, the name `context.engine` selects it by.
    assert!(
        line("other").contains("the name is already declared by"),
        "duplicate: {stdout}"
    );
    assert!(line("renamed").contains("not the folder's name"), "{stdout}");
    assert!(!stdout.contains("something "), "{stdout}");
    assert!(
        line("future").contains("built for engine ABI version 7; this host supports 1"),
        "{stdout}"
    );
    assert!(
        line("elsewhere").contains("is not a file name of the folder"),
        "{stdout}"
    );
    // `run` would refuse it before opening it; the listing says so first.
    assert!(
        line("sums")
            .contains("unusable: checksum mismatch: plugin.yaml says sha256:00, the file is sha256:2d71"),
        "{stdout}"
    );
}

#[test]
fn listing_reads_manifests_only_and_never_opens_a_library() {
    let tree = PluginDir::new();
    let folder = tree.folder("garbage", Some(&manifest("garbage", 1)));
    fs::write(folder.join("libgarbage.so"), b"definitely not an ELF file").unwrap();
    let (stdout, _) = texts(&tree.run(&["plugins", "list"]));
    assert!(
        stdout.contains("usable"),
        "listing cannot know the library is bad without opening it:\n{stdout}"
    );

    let output = tree.run(&["plugins", "check", "garbage"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("libgarbage.so: cannot open the library"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
}

#[test]
fn plugins_check_opens_the_named_library_and_reports_what_it_found() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    let output = tree.run(&["plugins", "check", "masking"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("plugin `masking` loads"), "{stdout}");
    assert!(stdout.contains("libctxhost_engine_masking.so"), "{stdout}");
}

#[test]
fn plugins_check_reads_the_tools_as_a_session_does_and_says_what_it_leaves_out() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("faulty:\n  bad_tools: true\n");
    let output = tree.run(&["plugins", "check", "faulty"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains("created with its config block; tools: faulty_echo, faulty_host_services\n"),
        "{stdout}"
    );
    let warnings: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("  warning: "))
        .collect();
    assert_eq!(warnings, FAULTY_BAD_TOOLS_WARNINGS, "{stdout}");
    // Without a block, it says so.
    let bare = PluginDir::new();
    bare.engine("faulty", "ctxhost_test_faulty");
    let (stdout, _) = texts(&bare.run(&["plugins", "check", "faulty"]));
    assert!(stdout.contains("created with no config block;"), "{stdout}");
}

#[test]
fn the_plugins_directory_can_be_set_by_flag_and_in_config() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    let elsewhere = tempfile::tempdir().unwrap();
    let plugins = tree.plugins().display().to_string();
    let by_flag =
        crate::support::run_ctxhost(elsewhere.path(), &["plugins", "list", "--plugins-dir", &plugins]);
    assert!(texts(&by_flag).0.contains("masking"), "{:?}", texts(&by_flag));

    let config = elsewhere.path().join("config.yaml");
    fs::write(&config, format!("context:\n  plugins_dir: {plugins}\n")).unwrap();
    let by_config = crate::support::run_ctxhost(elsewhere.path(), &["plugins", "list"]);
    assert!(texts(&by_config).0.contains("masking"), "{:?}", texts(&by_config));
    assert!(built_library("ctxhost_engine_masking").is_file());
}

#[test]
fn a_link_to_a_plugin_folder_is_a_plugin_folder() {
    let staged = PluginDir::new();
    let library = staged.engine("masking", "ctxhost_engine_masking");
    let real = library.parent().unwrap();
    let tree = PluginDir::new();
    fs::create_dir_all(tree.plugins().join("context_engine")).unwrap();
    std::os::unix::fs::symlink(real, tree.plugins().join("context_engine/masking")).unwrap();
    // A dangling link is no folder, and no reason to fail the others.
    std::os::unix::fs::symlink("/nowhere", tree.plugins().join("context_engine/gone")).unwrap();
    let output = tree.run(&["plugins", "check", "masking"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("plugin `masking` loads"), "{stdout}");
    let (listed, _) = texts(&tree.run(&["plugins", "list"]));
    assert!(
        listed
            .lines()
            .any(|line| line.contains("gone") && line.contains("a link to /nowhere, which is not there")),
        "{listed}"
    );
}

#[test]
fn plugins_check_verifies_the_checksum_before_it_opens_the_library() {
    let tree = PluginDir::new();
    let folder = tree.folder(
        "sums",
        Some(&format!("{}checksum: sha256:00\n", manifest("sums", 1))),
    );
    // Not a library at all: opening it would fail with another error.
    fs::write(folder.join("libsums.so"), b"not an ELF file").unwrap();
    let output = tree.run(&["plugins", "check", "sums"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("checksum mismatch: plugin.yaml says sha256:00"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
}

#[test]
fn plugins_check_of_the_built_in_engine_says_it_is_built_in() {
    let tree = PluginDir::new();
    let output = tree.run(&["plugins", "check", "compressor"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim(),
        "error: `compressor` is the built-in engine, linked into the host: there is no plugin to check"
    );
}
