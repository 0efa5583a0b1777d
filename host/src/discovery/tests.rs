use std::fs;

use pretty_assertions::assert_eq;

use super::*;

struct Tree(tempfile::TempDir);

impl Tree {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn plugin(&self, folder: &str, manifest: Option<&str>, libraries: &[&str]) -> &Self {
        let dir = self.0.path().join(CONTEXT_ENGINE_DIR).join(folder);
        fs::create_dir_all(&dir).unwrap();
        if let Some(manifest) = manifest {
            fs::write(dir.join(MANIFEST_FILE), manifest).unwrap();
        }
        for library in libraries {
            fs::write(dir.join(library), b"not opened by discovery").unwrap();
        }
        self
    }

    fn statuses(&self) -> Vec<(String, Result<(), PluginProblem>)> {
        discover_plugins(self.0.path())
            .unwrap()
            .into_iter()
            .map(|folder| (folder.folder_name, folder.status))
            .collect()
    }
}

fn manifest(name: &str) -> String {
    format!("name: {name}\nversion: 1.0.0\ndescription: test\nabi_version: 1\n")
}

fn lib(stem: &str) -> String {
    format!("lib{stem}.{LIBRARY_EXTENSION}")
}

#[test]
fn every_folder_is_listed_with_its_reason() {
    let tree = Tree::new();
    tree.plugin("good", Some(&manifest("good")), &[&lib("good")])
        .plugin("bare", None, &[&lib("bare")])
        .plugin(
            "broken",
            Some("name: broken\nversion: 0.1\n  description: [x\n"),
            &[],
        )
        .plugin("empty", Some(&manifest("empty")), &[])
        .plugin("two", Some(&manifest("two")), &[&lib("a"), &lib("b")])
        .plugin(
            "named",
            Some(&format!("{}library: libgone.so\n", manifest("named"))),
            &[&lib("x")],
        )
        .plugin(
            "future",
            Some(&manifest("future").replace("abi_version: 1", "abi_version: 9")),
            &[&lib("f")],
        )
        .plugin("alias", Some(&manifest("other")), &[&lib("o")])
        .plugin("copy", Some(&manifest("good")), &[&lib("c")])
        .plugin(".hidden", None, &[])
        .plugin("_disabled", None, &[]);
    let dir = |name: &str| tree.0.path().join(CONTEXT_ENGINE_DIR).join(name);
    assert_eq!(
        tree.statuses(),
        vec![
            ("alias".into(), Err(PluginProblem::NameMismatch("other".into()))),
            ("bare".into(), Err(PluginProblem::NoManifest)),
            (
                "broken".into(),
                Err(PluginProblem::MalformedManifest {
                    line: Some(3),
                    column: Some(14),
                    message: "mapping values are not allowed in this context".into()
                })
            ),
            ("copy".into(), Err(PluginProblem::DuplicateName(dir("good")))),
            ("empty".into(), Err(PluginProblem::NoLibrary)),
            ("future".into(), Err(PluginProblem::UnsupportedAbi(9))),
            ("good".into(), Ok(())),
            (
                "named".into(),
                Err(PluginProblem::NamedLibraryMissing("libgone.so".into()))
            ),
            (
                "two".into(),
                Err(PluginProblem::AmbiguousLibrary(vec![lib("a"), lib("b")]))
            ),
        ]
    );
}

#[test]
fn a_manifest_missing_a_field_says_which() {
    let tree = Tree::new();
    tree.plugin("p", Some("name: p\nversion: 1\n"), &[&lib("p")]);
    let status = tree.statuses().remove(0).1.unwrap_err().to_string();
    assert!(status.contains("missing field `description`"), "{status}");
}

#[test]
fn a_missing_plugins_directory_has_no_plugins() {
    let tree = Tree::new();
    assert_eq!(discover_plugins(&tree.0.path().join("nowhere")).unwrap(), vec![]);
}

#[test]
fn finding_a_plugin_explains_what_is_wrong() {
    let tree = Tree::new();
    tree.plugin("good", Some(&manifest("good")), &[&lib("good")])
        .plugin("bad", None, &[]);
    let folders = discover_plugins(tree.0.path()).unwrap();
    assert_eq!(
        find_plugin(&folders, "good", tree.0.path()).unwrap().folder_name,
        "good"
    );
    let bad = find_plugin(&folders, "bad", tree.0.path())
        .unwrap_err()
        .to_string();
    assert!(bad.ends_with("bad: no plugin.yaml"), "{bad}");
    let missing = find_plugin(&folders, "lcm", tree.0.path())
        .unwrap_err()
        .to_string();
    assert!(missing.starts_with("no plugin folder `lcm` in "), "{missing}");
    assert!(
        missing.ends_with("context_engine (plugins there: good)"),
        "{missing}"
    );
    // A name one letter off a plugin's is taken for a typo of it.
    let typo = find_plugin(&folders, "godo", tree.0.path())
        .unwrap_err()
        .to_string();
    assert!(
        typo.ends_with("(plugins there: good; did you mean `good`?)"),
        "{typo}"
    );
    let built_in = find_plugin(&folders, "compresor", tree.0.path())
        .unwrap_err()
        .to_string();
    assert!(
        built_in.ends_with("(plugins there: good; did you mean `compressor`?)"),
        "{built_in}"
    );
}

#[test]
fn a_misspelt_manifest_key_makes_the_folder_unusable_naming_it_and_other_keys_are_left_alone() {
    let tree = Tree::new();
    let typo = format!("{}checksun: sha256:00\n", manifest("typo"));
    let library = format!("{}libary: {}\n", manifest("library"), lib("x"));
    let hermes = format!("{}requires_env: [OPENAI_API_KEY]\n", manifest("hermes"));
    let required = "name: required\nversion: 1.0.0\ndescription: test\nabi_verison: 1\n";
    tree.plugin("typo", Some(&typo), &[&lib("x")])
        .plugin("library", Some(&library), &[&lib("x")])
        .plugin("hermes", Some(&hermes), &[&lib("x")])
        .plugin("required", Some(required), &[&lib("x")]);
    let said = |problem: &Result<(), PluginProblem>| problem.as_ref().unwrap_err().to_string();
    let statuses = tree.statuses();
    assert_eq!(statuses[0], ("hermes".to_owned(), Ok(())));
    assert_eq!(
        said(&statuses[1].1),
        "plugin.yaml has the unknown key `libary` at line 5; did you mean `library`?"
    );
    assert_eq!(
        said(&statuses[2].1),
        "plugin.yaml has the unknown key `abi_verison` at line 4; did you mean `abi_version`?"
    );
    assert_eq!(
        said(&statuses[3].1),
        "plugin.yaml has the unknown key `checksun` at line 5; did you mean `checksum`?"
    );
}

#[test]
fn every_misspelt_manifest_key_is_named_so_one_edit_fixes_the_file() {
    let tree = Tree::new();
    let two = format!(
        "{}libary: {}
checksun: sha256:00
",
        manifest("two"),
        lib("x")
    );
    tree.plugin("two", Some(&two), &[&lib("x")]);
    let statuses = tree.statuses();
    assert_eq!(
        statuses[0].1.as_ref().unwrap_err().to_string(),
        "plugin.yaml has unknown keys: `libary` at line 5 (did you mean `library`?), \
         `checksun` at line 6 (did you mean `checksum`?)"
    );
}
