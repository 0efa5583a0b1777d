//! What a user reads when something is wrong: one line, the cause once, the user's own paths.

use crate::support::{example_transcript, texts, PluginDir};

#[test]
fn a_missing_transcript_is_one_line_with_its_cause_once() {
    let tree = PluginDir::new();
    let output = tree.run(&["run", "nope.json"]);
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: nope.json: "), "{stderr}");
}

#[test]
fn an_output_that_cannot_be_written_names_the_users_path_not_a_temporary_one() {
    let tree = PluginDir::new();
    for flag in ["--out", "--events"] {
        let target = tree.root().join("missing-folder/result.json");
        let output = tree.run(&["run", &example_transcript(), flag, target.to_str().unwrap()]);
        let (_, stderr) = texts(&output);
        assert!(!output.status.success(), "{flag}");
        let line = stderr.lines().last().unwrap_or_default();
        assert!(line.starts_with("error: "), "{flag}: {stderr}");
        assert!(line.contains("missing-folder/result.json"), "{flag}: {stderr}");
        let folder = tree.root().join("missing-folder").display().to_string();
        assert!(!line.replace(&folder, "").contains(".tmp"), "{flag}: {stderr}");
        assert_eq!(
            line.matches("No such file or directory").count(),
            1,
            "{flag}: {stderr}"
        );
        assert!(!target.exists());
    }
}

#[test]
fn a_misspelt_host_key_is_warned_about_with_its_file_line_and_the_closest_key() {
    let tree = PluginDir::new();
    tree.config("model:\n  default: m\n  context_lenght: 16000\n");
    let output = tree.run(&["run", &example_transcript(), "--config", "config.yaml"]);
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: config.yaml:3: unknown key `model.context_lenght`, ignored; did you mean `model.context_length`?"
        ),
        "{stderr}"
    );
    // The window did not come from the misspelt key.
    assert!(
        !stdout.contains("16,000 tokens (model.context_length"),
        "{stdout}"
    );
}
