//! One-line stand-ins for tool output an engine drops.
//!
//! A stand-in says what the call did and what came of it, built from the call's name and
//! arguments, so the model still knows the step happened: ``[terminal] ran `pytest -q` -> exit 1,
//! 214 lines output`` rather than a bare "output cleared".

use std::{borrow::Cow, sync::LazyLock};

use aho_corasick::AhoCorasick;

use ctxhost_engine_abi::{Message, ToolCall};

use crate::text::{floor_char_boundary, head_and_tail, one_line, reading_lines};
use serde_json::{Map, Value};

/// The longest command, path or pattern quoted in a stand-in, in characters.
const MAX_QUOTED_CHARS: usize = 120;

/// How far into an output the words of a failure are looked for, in bytes.
const FAILURE_WORDS_WITHIN: usize = 400;

/// How a tool call failed, as its result tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The tool ran and failed, or could not run (a path that does not exist, an edit whose text
    /// was not found).
    Error,
    /// The user refused the call: it did not run.
    Rejected,
    /// A hook stopped the call before it ran (Claude Code's `PreToolUse` hooks: "Bash operation
    /// blocked by hook: …").
    BlockedByHook,
}

impl Failure {
    /// The failure `result` records: its own flag (`is_error: true`, which Anthropic's and Claude
    /// Code's results carry; OpenHands's `error` and `user_rejected` observations) or the words a
    /// failed call answers with ([`in_text`](Self::in_text)).
    pub fn of_result(result: &Message) -> Option<Self> {
        let from_text = Self::in_text(&result.text());
        if from_text.is_some_and(|failure| failure.did_not_run()) {
            return from_text;
        }
        match result.extra.get("observation").and_then(Value::as_str) {
            Some("user_rejected") => return Some(Self::Rejected),
            Some("error") => return Some(Self::Error),
            _ => {}
        }
        if result.extra.get("is_error") == Some(&Value::Bool(true)) {
            return Some(Self::Error);
        }
        from_text
    }

    /// The failure an output's own opening words say, where they cannot be anything else:
    /// Claude Code's `<tool_use_error>` and its refusal ("The user doesn't want to proceed with
    /// this tool use"), OpenHands's refusal ("Action has been rejected by the user").
    pub fn in_text(output: &str) -> Option<Self> {
        let start = &output[..floor_char_boundary(output, FAILURE_WORDS_WITHIN)];
        if start.contains("doesn't want to proceed with this tool use")
            || start.contains("has been rejected by the user")
        {
            Some(Self::Rejected)
        } else if start.contains("operation blocked by hook") {
            Some(Self::BlockedByHook)
        } else if start.trim_start().starts_with("<tool_use_error>") {
            Some(Self::Error)
        } else {
            None
        }
    }

    /// Whether the call never ran: refused by the user or stopped by a hook.
    pub fn did_not_run(self) -> bool {
        matches!(self, Self::Rejected | Self::BlockedByHook)
    }

    /// How the call ended, as stand-ins say it: `failed`, `rejected by the user`.
    pub fn ending(self) -> &'static str {
        match self {
            Self::Error => "failed",
            Self::Rejected => "rejected by the user",
            Self::BlockedByHook => "blocked by a hook",
        }
    }
}

/// Whether `result` says itself that its call succeeded: `is_error: false`, which Claude Code's
/// reader writes on every result Claude Code did not flag (it flags every failure). Output that
/// reads like an error (a log's `ERROR` lines) does not make such a call a failure.
pub fn flagged_success(result: &Message) -> bool {
    result.extra.get("is_error") == Some(&Value::Bool(false))
}

/// A one-line description of `output`, produced by `call` (when it is known). A failure is told
/// only from the output's words ([`Failure::in_text`]); [`describe_tool_result`] reads the
/// result's own flags too.
pub fn describe_tool_output(call: Option<&ToolCall>, output: &str) -> String {
    describe_tool_outcome(call, output, Failure::in_text(output))
}

/// A one-line description of the tool message `result`, produced by `call` (when it is known):
/// what the call did and what came of it, a failure or a refusal included
/// ([`Failure::of_result`]).
pub fn describe_tool_result(call: Option<&ToolCall>, result: &Message) -> String {
    describe_tool_outcome(call, &result.text(), Failure::of_result(result))
}

/// [`describe_tool_result`] for a stand-in that replaces the output: a shell command's that gives
/// no exit code (SWE-agent's) and is not flagged a failure also quotes its first error line, or
/// nothing would say that `terraform apply` failed.
pub fn describe_tool_result_noting_errors(call: Option<&ToolCall>, result: &Message) -> String {
    // A result flagged a success (Claude Code's `is_error: false`) says how it ended: an error
    // line it printed on the way is no failure (verify27: a retried migration that ended `OK`
    // described by its lock timeout).
    let note_errors = !flagged_success(result);
    describe(call, &result.text(), Failure::of_result(result), note_errors)
}

/// A one-line description of `output`, produced by `call` (when it is known), for a call that
/// ended as `failure` says.
pub fn describe_tool_outcome(call: Option<&ToolCall>, output: &str, failure: Option<Failure>) -> String {
    describe(call, output, failure, false)
}

/// [`describe_tool_outcome`], a shell command's output without an exit code quoting its first
/// error line when `note_errors` asks.
fn describe(call: Option<&ToolCall>, output: &str, failure: Option<Failure>, note_errors: bool) -> String {
    let Some(call) = call else {
        return other_outcome("tool", "", output, failure);
    };
    let name = call.function.name.as_str();
    let arguments = parse_arguments(&call.function.arguments);
    let path = || {
        first_string(
            &arguments,
            &["path", "file_path", "filename", "file", "target_file"],
        )
    };
    match ToolKind::of_call(name, &arguments) {
        ToolKind::Shell => {
            let command = command_under(&arguments, &COMMAND_KEYS);
            let ran = command
                .as_ref()
                .map(|command| format!(" ran `{}`", quote(command)))
                .unwrap_or_default();
            match failure {
                Some(stopped @ (Failure::Rejected | Failure::BlockedByHook)) => format!(
                    "[{name}]{ran} -> {}, did not run {}",
                    stopped.ending(),
                    cleared(output)
                ),
                _ => format!(
                    "[{name}]{ran} -> {}",
                    shell_outcome(output, failure.is_some(), note_errors)
                ),
            }
        }
        ToolKind::Read => {
            let from = first_number(
                &arguments,
                &["offset", "start_line", "line", "line_number", "start"],
            );
            let from = from.map(|line| format!(" from line {line}")).unwrap_or_default();
            let target = path().map_or_else(|| "a file".to_owned(), quote);
            match failure {
                Some(stopped @ (Failure::Rejected | Failure::BlockedByHook)) => format!(
                    "[{name}] {}: {target} not read {}",
                    stopped.ending(),
                    cleared(output)
                ),
                Some(Failure::Error) => format!(
                    "[{name}] could not read {target}{from}: {} {}",
                    error_line(output),
                    cleared(output)
                ),
                None => format!(
                    "[{name}] read {target}{from} ({} chars)",
                    group_thousands(output.chars().count())
                ),
            }
        }
        ToolKind::Search => {
            let pattern = first_string(
                &arguments,
                &["pattern", "query", "regex", "search_term", "file_name", "name"],
            );
            let scope = first_string(&arguments, &["path", "dir", "directory", "glob", "include"]);
            let scope = scope
                .map(|scope| format!(" in {}", quote(scope)))
                .unwrap_or_default();
            let search = match pattern {
                Some(pattern) => format!(" search for '{}'{scope}", quote(pattern)),
                None => format!(" search{scope}"),
            };
            match failure {
                None => format!(
                    "[{name}]{search} -> {} matching lines",
                    count_nonblank_lines(output)
                ),
                failure => other_outcome(name, &search, output, failure),
            }
        }
        ToolKind::Write => {
            let target = path().map(quote);
            match failure {
                Some(stopped @ (Failure::Rejected | Failure::BlockedByHook)) => format!(
                    "[{name}] {}: {} not changed {}",
                    stopped.ending(),
                    target.as_deref().unwrap_or("nothing"),
                    cleared(output)
                ),
                Some(Failure::Error) => format!(
                    "[{name}] failed to change {}: {} {}",
                    target.as_deref().unwrap_or("a file"),
                    error_line(output),
                    cleared(output)
                ),
                None => format!(
                    "[{name}] changed{} {}",
                    target.map(|target| format!(" {target}")).unwrap_or_default(),
                    cleared(output)
                ),
            }
        }
        ToolKind::Other => {
            let target = call_target(&arguments)
                .map(|target| format!(" {}", quote(&target)))
                .unwrap_or_default();
            other_outcome(name, &target, output, failure)
        }
    }
}

/// The stand-in of a call described by what it acted on alone (`target`, with its leading space):
/// how it ended, and how much output it cleared.
fn other_outcome(name: &str, target: &str, output: &str, failure: Option<Failure>) -> String {
    let cleared = cleared(output);
    match failure {
        Some(Failure::Error) => format!("[{name}]{target} failed: {} {cleared}", error_line(output)),
        Some(stopped) => format!("[{name}]{target} {} {cleared}", stopped.ending()),
        None => format!("[{name}]{target} {cleared}"),
    }
}

/// `(N chars of output cleared)`. Counted only for the stand-ins that say it: a shell's or a
/// search's output is described by its lines, and counting its characters too read the largest
/// outputs once more for nothing.
fn cleared(output: &str) -> String {
    format!(
        "({} chars of output cleared)",
        group_thousands(output.chars().count())
    )
}

/// The first line of a failed call's output that says something, without Claude Code's
/// `<tool_use_error>` tags, quoted on one line.
pub fn error_line(output: &str) -> String {
    // A tool's JSON answer (`{"output": "Error: …\n…", "metadata": {…}}`) is quoted as its text
    // reads, not as the JSON around it.
    let mut lines = reading_lines(output)
        .map(|line| {
            let trimmed = line
                .trim()
                .trim_start_matches("<tool_use_error>")
                .trim_end_matches("</tool_use_error>")
                .trim();
            trimmed.to_owned()
        })
        .filter(|line| !line.is_empty());
    let Some(first) = lines.next() else {
        return quote("no message");
    };
    // A first line that is only a label (OpenHands's `ERROR:`, the reason on the next line) says
    // nothing alone: the next line goes with it.
    let label_only = first.ends_with(':') && !first.contains(char::is_whitespace);
    match lines.next().filter(|_| label_only) {
        Some(reason) => quote(&format!("{first} {reason}")),
        None => quote(&first),
    }
}

/// The stand-in for an older copy of a long output that appears again later.
pub fn describe_duplicate_output(call: Option<&ToolCall>, output_chars: usize) -> String {
    let name = call.map(|call| call.function.name.as_str()).unwrap_or("tool");
    format!(
        "[{name}] duplicate of a more recent result ({} chars; see the later copy)",
        group_thousands(output_chars)
    )
}

/// What a tool does, read from its name; engines use it to describe calls the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs a command (`terminal`, `bash`, `exec`…).
    Shell,
    /// Reads a file (`read_file`, `open`, `view`…).
    Read,
    /// Searches (`search_files`, `grep`, `find_file`…).
    Search,
    /// Changes a file (`write_file`, `edit`, `patch`…).
    Write,
    /// Anything else.
    Other,
}

/// The words that tell each kind of tool by its name, the kinds in the order they are tried (a
/// `search_and_replace` tool searches before it writes).
const KIND_WORDS: [(ToolKind, &[&str]); 4] = [
    (
        ToolKind::Shell,
        &["terminal", "bash", "shell", "exec", "command", "run"],
    ),
    (ToolKind::Search, &["search", "grep", "find", "glob", "lookup"]),
    (ToolKind::Read, &["read", "open", "view", "cat", "scroll", "goto"]),
    (
        ToolKind::Write,
        &[
            "write",
            "edit",
            "patch",
            "create",
            "replace",
            "insert",
            "str_replace",
        ],
    ),
];

/// The kind (its place in [`KIND_WORDS`]) of the word at `index` among all their words.
fn kind_of_word(mut index: usize) -> usize {
    for (kind, (_, words)) in KIND_WORDS.iter().enumerate() {
        if index < words.len() {
            return kind;
        }
        index -= words.len();
    }
    unreachable!("the automaton holds only the kinds' words")
}

impl ToolKind {
    /// The kind of the tool called `name`: the first kind, in [`KIND_WORDS`]'s order, one of
    /// whose words is in the name, whatever its case.
    pub fn of(name: &str) -> Self {
        static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(KIND_WORDS.iter().flat_map(|(_, words)| words.iter()))
                .expect("the kinds' words build an automaton")
        });
        // One pass over the name for every word (a replay asks thousands of times, and a
        // substring search per word was 2% of it).
        let mut found = [false; KIND_WORDS.len()];
        for word in WORDS.find_overlapping_iter(name) {
            found[kind_of_word(word.pattern().as_usize())] = true;
        }
        found
            .iter()
            .position(|&found| found)
            .map_or(Self::Other, |kind| KIND_WORDS[kind].0)
    }

    /// The kind of one call. An editor that views files as well as changing them, told which by
    /// `command` (`str_replace_editor`, in OpenHands and SWE-agent), reads when told to `view`.
    ///
    /// A shell that runs Codex's `apply_patch` (`["apply_patch", "*** Begin Patch…"]`, or
    /// `apply_patch <<'EOF'` in a script) changes the files its patch names: read as a command,
    /// its patch was quoted raw over many lines and no file was listed as changed (verify43).
    /// So does one that writes a [`HereDocument`] to a file.
    pub fn of_call(name: &str, arguments: &Map<String, Value>) -> Self {
        match Self::of(name) {
            Self::Write if arguments.get("command").and_then(Value::as_str) == Some("view") => Self::Read,
            Self::Shell if runs_apply_patch(arguments) || writes_a_here_document(arguments) => Self::Write,
            kind => kind,
        }
    }

    /// [`of_call`](Self::of_call) given the arguments' JSON text, which is parsed only for a tool
    /// whose name says it changes files, or a shell's naming `apply_patch`.
    pub fn of_call_json(name: &str, arguments: &str) -> Self {
        match Self::of(name) {
            Self::Write => Self::of_call(name, &parse_arguments(arguments)),
            Self::Shell if arguments.contains("apply_patch") || arguments.contains("<<") => {
                Self::of_call(name, &parse_arguments(arguments))
            }
            kind => kind,
        }
    }
}

/// The files a patch in Codex's format changes (`*** Update File: src/lib.rs`, `*** Add File: …`,
/// `*** Delete File: …`, and where one moves to), in its order: `apply_patch` takes the patch as
/// free text, with no argument naming a path.
pub fn patch_files(patch: &str) -> impl Iterator<Item = &str> {
    const MARKS: [&str; 4] = [
        "*** Update File: ",
        "*** Add File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    // The text of a JSON argument holds its line ends escaped.
    patch
        .split(['\n', '\r'])
        .flat_map(|line| line.split("\\n"))
        .filter_map(|line| {
            let line = line.trim_start();
            MARKS
                .iter()
                .find_map(|mark| line.strip_prefix(mark))
                .map(str::trim)
                .filter(|path| !path.is_empty())
        })
}

/// How a stand-in of a failed command, or of one without an exit code, goes on to quote its first
/// error line (`-> 84 lines output; its first error line: ValueError: …`).
pub const FIRST_ERROR_NOTE: &str = "; its first error line: ";

/// The keys a shell tool's command is given under.
pub const COMMAND_KEYS: [&str; 4] = ["command", "cmd", "script", "input"];

/// The command under the first of `keys` that holds one: a string, or a list of arguments, as
/// Codex's `shell` tool takes it (`["bash", "-lc", "cargo test"]`). A shell's `-c` script is what
/// ran; another list is its words joined by spaces.
pub fn command_under<'a>(arguments: &'a Map<String, Value>, keys: &[&str]) -> Option<Cow<'a, str>> {
    keys.iter().find_map(|key| {
        let command = match arguments.get(*key)? {
            Value::String(command) => Cow::Borrowed(command.as_str()),
            Value::Array(words) => {
                let words: Vec<&str> = words.iter().map(Value::as_str).collect::<Option<_>>()?;
                match words.as_slice() {
                    [shell, flag, script] if is_shell(shell) && matches!(*flag, "-c" | "-lc" | "-ic") => {
                        Cow::Borrowed(*script)
                    }
                    _ => Cow::Owned(words.join(" ")),
                }
            }
            _ => return None,
        };
        (!command.trim().is_empty()).then_some(command)
    })
}

/// A file a shell command writes from a here-document, and the document: `cat > src/retry.py
/// <<'EOF'`, `cat <<EOF >> notes.md`, `tee config/app.yaml <<'YAML'`. The document is the file's
/// new text, not a command: read as one, it was quoted raw over many lines under Commands and the
/// file was never listed as changed (verify44).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HereDocument<'a> {
    /// The file written, as the command names it.
    pub file: &'a str,
    /// The document's lines, without the line that ends it.
    pub text: &'a str,
}

impl<'a> HereDocument<'a> {
    /// The here-document `command` writes to a file, when it writes one (with `cat` or `tee`, the
    /// last step of its first line).
    pub fn of(command: &'a str) -> Option<Self> {
        let (first, rest) = command.trim_start().split_once('\n')?;
        let step = first.rsplit(['&', ';']).next()?.trim();
        let (program, arguments) = step.split_once(char::is_whitespace)?;
        let words: Vec<&str> = arguments.split_whitespace().collect();
        let delimiter = words
            .iter()
            .find_map(|word| word.strip_prefix("<<"))?
            .trim_start_matches('-')
            .trim_matches(['\'', '"']);
        let file = match program {
            // `> file`, `>file`, `>> file`, before or after the document's `<<EOF`.
            "cat" => words.iter().enumerate().find_map(|(at, word)| {
                let file = word.strip_prefix('>')?.trim_start_matches('>');
                if file.is_empty() {
                    words.get(at + 1).copied()
                } else {
                    Some(file)
                }
            })?,
            "tee" => words
                .iter()
                .copied()
                .find(|word| !word.starts_with(['-', '<', '>']))?,
            _ => return None,
        };
        let file = file.trim_matches(['\'', '"']);
        if delimiter.is_empty() || file.is_empty() || file.starts_with("/dev/") || file.starts_with('&') {
            return None;
        }
        // The document ends on the line that holds only its delimiter.
        let mut end = 0;
        for line in rest.split_inclusive('\n') {
            if line.trim() == delimiter {
                return Some(Self {
                    file,
                    text: rest[..end].trim_end(),
                });
            }
            end += line.len();
        }
        None
    }
}

/// Whether a shell's `arguments` write a [`HereDocument`] to a file.
fn writes_a_here_document(arguments: &Map<String, Value>) -> bool {
    command_under(arguments, &COMMAND_KEYS).is_some_and(|command| HereDocument::of(&command).is_some())
}

/// Whether a shell's `arguments` run Codex's `apply_patch`.
fn runs_apply_patch(arguments: &Map<String, Value>) -> bool {
    command_under(arguments, &COMMAND_KEYS).is_some_and(|command| {
        command
            .trim_start()
            .strip_prefix("apply_patch")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    })
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh" | "dash" | "fish" | "ksh")
}

fn parse_arguments(arguments: &str) -> Map<String, Value> {
    match serde_json::from_str(arguments) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// What a call of a tool that is neither a shell, a reader, a search nor an editor acted on: the
/// first short text under a key that names a target (`path`, `url`, `query`…, a task's `goal` or
/// `description`), or the first of a list of them (`urls: [a, b, c]` is `a (+2 more)`). `None`
/// when it names none on one line.
pub fn call_target(arguments: &Map<String, Value>) -> Option<String> {
    // `goal` and `description` last: a subagent's task is named by them (Hermes's
    // `delegate_task`, Claude Code's `Task`); a tool that also names a path or a query is better
    // told by that.
    const ONE: [&str; 11] = [
        "path",
        "file_path",
        "url",
        "query",
        "name",
        "id",
        "target",
        "q",
        "topic",
        "goal",
        "description",
    ];
    const MANY: [&str; 5] = ["urls", "paths", "files", "queries", "ids"];
    let short = |value: &&str| !value.trim().is_empty() && value.len() <= 200 && !value.contains('\n');
    if let Some(one) = ONE
        .iter()
        .filter_map(|key| arguments.get(*key)?.as_str())
        .find(short)
    {
        return Some(one.to_owned());
    }
    MANY.iter().find_map(|key| {
        let items = arguments.get(*key)?.as_array()?;
        let first = items.iter().filter_map(Value::as_str).find(short)?;
        Some(match items.len() - 1 {
            0 => first.to_owned(),
            more => format!("{first} (+{more} more)"),
        })
    })
}

fn first_string<'a>(arguments: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .filter_map(|key| arguments.get(*key)?.as_str())
        .find(|value| !value.trim().is_empty())
}

fn first_number(arguments: &Map<String, Value>, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|key| {
        let value = arguments.get(*key)?;
        value.as_i64().or_else(|| value.as_str()?.trim().parse().ok())
    })
}

/// `exit N, L lines output` when the exit code can be read, else `L lines output`; `failed, L lines
/// output` for a call its result says failed and no exit code says how. With `note_errors`, a
/// command that exited non-zero, or whose output says neither (SWE-agent records no exit code),
/// quotes its first error line, or nothing would say why `go test -race` or `terraform apply`
/// failed.
fn shell_outcome(output: &str, failed: bool, note_errors: bool) -> String {
    let json = json_output(output);
    let is_json = json.is_some();
    // The output's own text, not the JSON's, which holds its lines escaped on one line.
    let printed = json.as_ref().and_then(|object| {
        ["output", "stdout"]
            .iter()
            .find_map(|key| object.get(*key)?.as_str())
    });
    let (lines, code) = match &json {
        Some(object) => {
            let lines = printed.map_or_else(|| count_lines(output), count_lines);
            let code =
                exit_code_of(object).or_else(|| object.get("metadata")?.as_object().and_then(exit_code_of));
            (lines, code)
        }
        None => (count_lines(output), exit_code_line(output)),
    };
    if !failed && still_running(output) {
        return format!("still running, {} lines output so far", group_thousands(lines));
    }
    let lines = format!("{} lines output", group_thousands(lines));
    // Only when asked: the scan of a long output for error words is no cost of the others.
    let first_error = || {
        let text = printed.or((!is_json).then_some(output))?;
        crate::retention::first_error_line(text)
            .map(|line| format!("{FIRST_ERROR_NOTE}{}", quote_error(line)))
    };
    match code {
        // A command that exited non-zero says why when its output does: `exit 1, 23 lines output`
        // alone left a masked race failure and a CUDA OOM without their cause (verify29).
        Some(code) if code != 0 && note_errors => {
            format!("exit {code}, {lines}{}", first_error().unwrap_or_default())
        }
        Some(code) if code != 0 || !failed => format!("exit {code}, {lines}"),
        _ if failed => format!("failed, {lines}"),
        _ if note_errors => format!("{lines}{}", first_error().unwrap_or_default()),
        _ => lines,
    }
}

/// Whether the output ends with OpenHands's note that the command had not finished when the
/// agent got its output (`exit_code: -1`): `[The command has no new output after 30 seconds. You
/// may wait longer …]`, or `[The command timed out after N seconds. You may wait longer …]`.
fn still_running(output: &str) -> bool {
    output.lines().rev().take(3).any(|line| {
        let line = line.trim_start();
        (line.starts_with("[The command has no new output after")
            || line.starts_with("[The command timed out after"))
            && line.contains("You may wait longer")
    })
}

/// A shell tool's output given as a JSON object (Hermes's `{"output", "exit_code"}`, Codex's
/// `{"output", "metadata": {"exit_code"}}`).
fn json_output(output: &str) -> Option<Map<String, Value>> {
    if !output.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str(output) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

fn exit_code_of(object: &Map<String, Value>) -> Option<i64> {
    ["exit_code", "returncode", "exitCode", "status"]
        .iter()
        .find_map(|key| object.get(*key)?.as_i64())
}

/// The exit code a plain output reports in one of its last lines, such as `Exit code: 1`, or
/// OpenHands's `[The command completed with exit code 1.]`; or in its first line, where Claude
/// Code puts it (`Exit code 1`, then what the command printed).
///
/// Only a line that is such a report counts, not one that quotes another process's: `gh run view
/// --log-failed` succeeds printing a CI job's `Error: Process completed with exit code 1.`
fn exit_code_line(output: &str) -> Option<i64> {
    let first = output.lines().next().filter(|line| {
        line.trim_start()
            .get(..9)
            .is_some_and(|start| start.eq_ignore_ascii_case("exit code"))
    });
    first
        .and_then(reported_exit_code)
        .or_else(|| output.lines().rev().take(5).find_map(reported_exit_code))
}

/// The code of a line that reports how a command ended: `Exit code: 1`, `[exit code 0]`, `[The
/// command completed with exit code 1.]`, `[Command 7 finished with exit code 1]`, `Process
/// exited with code 2`.
fn reported_exit_code(line: &str) -> Option<i64> {
    let lower = line.trim_start().trim_start_matches('[').to_ascii_lowercase();
    let rest = [
        "exit code",
        "the command completed with exit code",
        "process exited with code",
    ]
    .iter()
    .find_map(|report| lower.strip_prefix(report))
    .or_else(|| {
        let (command, rest) = lower
            .strip_prefix("command")?
            .split_once("finished with exit code")?;
        // `Command finished …` or `Command 12 finished …`: an id at most.
        (command.split_whitespace().count() <= 1).then_some(rest)
    })?;
    let rest = rest.trim_start_matches([':', ' ', '=']);
    let sign = usize::from(rest.starts_with('-'));
    let digits = rest[sign..].bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| rest[..sign + digits].parse().ok()).flatten()
}

/// What `output.lines().count()` gives, by counting newlines: `lines()` stopped at every line
/// (2% of the heavy session's `run`, by perf). Counted in one-byte counters, 255 bytes at a time,
/// which the compiler turns into vector adds (a `usize` counter kept them to four lanes).
fn count_lines(output: &str) -> usize {
    let newlines: usize = output
        .as_bytes()
        .chunks(255)
        .map(|chunk| {
            usize::from(
                chunk
                    .iter()
                    .fold(0u8, |count, &byte| count + u8::from(byte == b'\n')),
            )
        })
        .sum();
    newlines + usize::from(!output.is_empty() && !output.ends_with('\n'))
}

fn count_nonblank_lines(output: &str) -> usize {
    output.lines().filter(|line| !line.trim().is_empty()).count()
}

/// `text` on one line, cut to [`MAX_QUOTED_CHARS`] with a marker.
fn quote(text: &str) -> String {
    let one_line = one_line(text);
    if one_line.chars().count() <= MAX_QUOTED_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(MAX_QUOTED_CHARS).collect();
    format!("{cut}…")
}

/// An error line on one line: whole, or its start and its end, where why it failed often is
/// (verify32: an Xcode runner's error cut before `Failed to establish communication with the test
/// runner`).
fn quote_error(text: &str) -> String {
    head_and_tail(&one_line(text), MAX_QUOTED_CHARS).into_owned()
}

/// `12345` → `12,345`.
pub fn group_thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind tried in turn, a substring search per word, as names were read before one pass
    /// found every word.
    fn kind_word_by_word(name: &str) -> ToolKind {
        let name = name.to_ascii_lowercase();
        KIND_WORDS
            .iter()
            .find(|(_, words)| words.iter().any(|word| name.contains(word)))
            .map_or(ToolKind::Other, |(kind, _)| *kind)
    }

    #[test]
    fn a_here_document_names_the_file_it_writes() {
        let document = |command| HereDocument::of(command).map(|document| (document.file, document.text));
        assert_eq!(
            document("cd app && cat > src/retry.py <<'EOF'\nA = 1\nB = 2\nEOF\npython src/retry.py"),
            Some(("src/retry.py", "A = 1\nB = 2"))
        );
        assert_eq!(
            document("cat <<EOF >>notes.md\nx\n  EOF\n"),
            Some(("notes.md", "x"))
        );
        assert_eq!(
            document("tee -a \"config/app.yaml\" > /dev/null <<-'YAML'\nport: 8080\nYAML"),
            Some(("config/app.yaml", "port: 8080"))
        );
        // A program reading the document, output to a stream, or a document never ended.
        assert_eq!(document("python - <<'PY'\nprint(1)\nPY"), None);
        assert_eq!(document("cat <<EOF > /dev/stderr\nx\nEOF"), None);
        assert_eq!(document("cat > a.txt <<EOF\nx"), None);
        assert_eq!(document("cat > a.txt"), None);
    }

    #[test]
    fn a_tool_is_the_first_kind_a_word_of_its_name_says_whatever_its_case() {
        let names = [
            "Bash",
            "execute_bash",
            "run_shell_command",
            "Grep",
            "web_search",
            "search_and_replace",
            "Read",
            "view_file",
            "str_replace_editor",
            "Edit",
            "MultiEdit",
            "apply_patch",
            "create_file",
            "lcm_grep",
            "lcm_expand",
            "WebFetch",
            "TodoWrite",
            "glob",
            "find_file",
            "open_url",
            "scroll_down",
            "goto",
            "insert_line",
            "think",
            "",
            "ÉDIT_fichier",
            "READ",
            "rerun",
            "catalog_lookup",
            "Task",
            "mcp__github__create_issue",
        ];
        for name in names {
            assert_eq!(ToolKind::of(name), kind_word_by_word(name), "{name}");
        }
        assert_eq!(ToolKind::of("search_and_replace"), ToolKind::Search);
        assert_eq!(ToolKind::of("MultiEdit"), ToolKind::Write);
        assert_eq!(ToolKind::of("think"), ToolKind::Other);
        // Every pair of words, in both orders and cases, against the search word by word.
        let words: Vec<&str> = KIND_WORDS
            .iter()
            .flat_map(|(_, words)| words.iter().copied())
            .collect();
        for first in &words {
            for second in &words {
                for name in [
                    format!("{first}_{second}"),
                    format!("{}{second}", first.to_uppercase()),
                ] {
                    assert_eq!(ToolKind::of(&name), kind_word_by_word(&name), "{name}");
                }
            }
        }
    }
    use pretty_assertions::assert_eq;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall::new("c1", name, arguments)
    }

    #[test]
    fn a_codex_patch_names_the_files_it_changes() {
        let patch = "*** Begin Patch\n*** Update File: crates/ledger-core/src/posting.rs\n@@\n-a\n+b\n\
                     *** Add File: docs/notes.md\n+hi\n*** Update File: src/old.rs\n*** Move to: src/new.rs\n\
                     *** Delete File: tmp.txt\n*** End Patch\n";
        assert_eq!(
            patch_files(patch).collect::<Vec<_>>(),
            [
                "crates/ledger-core/src/posting.rs",
                "docs/notes.md",
                "src/old.rs",
                "src/new.rs",
                "tmp.txt"
            ]
        );
        // Inside a JSON argument, its line ends escaped.
        let escaped = r#"{"input": "*** Begin Patch\n*** Update File: a/b.rs\n@@\n*** End Patch\n"}"#;
        assert_eq!(patch_files(escaped).collect::<Vec<_>>(), ["a/b.rs"]);
        assert_eq!(patch_files("no patch here").count(), 0);
    }

    fn result(text: &str, extra: serde_json::Value) -> Message {
        Message {
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Message::tool("c1", text)
        }
    }

    /// SWE-agent records no exit code: a stand-in for a command's output quotes its first error
    /// line, or nothing says the apply failed (verify16); one that exited non-zero quotes it after
    /// its exit code, and one with no error line is described as before.
    #[test]
    fn a_stand_in_without_an_exit_code_quotes_the_first_error_line() {
        let apply = call("bash", r#"{"command":"terraform apply tfplan"}"#);
        let failed = result(
            "module.ci_iam.aws_iam_role.ci: Modifying...\n│ Error: updating IAM OIDC Provider: AccessDenied\n│\n",
            serde_json::Value::Null,
        );
        assert_eq!(
            describe_tool_result_noting_errors(Some(&apply), &failed),
            "[bash] ran `terraform apply tfplan` -> 3 lines output; its first error line: │ Error: updating IAM OIDC Provider: AccessDenied"
        );
        // One that exited non-zero quotes it too, from the text of a tool's JSON answer (verify29:
        // a masked race failure read `-> exit 1, 23 lines output`).
        let with_code = result("│ Error: AccessDenied\nExit code: 1", serde_json::Value::Null);
        assert_eq!(
            describe_tool_result_noting_errors(Some(&apply), &with_code),
            "[bash] ran `terraform apply tfplan` -> exit 1, 2 lines output; its first error line: │ Error: AccessDenied"
        );
        let in_json = result(
            r#"{"output": "ok  \tgithub.com/acme/orders-api/internal/api\t4.8s\n--- FAIL: TestHistogramReset (0.01s)\nFAIL", "exit_code": 1, "error": null}"#,
            serde_json::Value::Null,
        );
        assert_eq!(
            describe_tool_result_noting_errors(Some(&apply), &in_json),
            "[bash] ran `terraform apply tfplan` -> exit 1, 3 lines output; its first error line: --- FAIL: TestHistogramReset (0.01s)"
        );
        // A long one keeps its start and its end, where why it failed often is.
        let long = result(
            "Testing failed:\n\tHarborKit-Runner (1234) encountered an error (Early unexpected exit, operation never finished bootstrapping - no restart will be attempted. (Underlying Error: The test runner exited with code 1 before finishing. Failed to establish communication with the test runner.))\nExit code: 65",
            serde_json::Value::Null,
        );
        let described = describe_tool_result_noting_errors(Some(&apply), &long);
        assert!(
            described.contains("; its first error line: HarborKit-Runner (1234) encountered an error"),
            "{described}"
        );
        assert!(
            described.contains(" … ") && described.ends_with("communication with the test runner.))"),
            "{described}"
        );
        let clean = result(
            "Apply complete! Resources: 0 added, 1 changed, 0 destroyed.",
            serde_json::Value::Null,
        );
        assert_eq!(
            describe_tool_result_noting_errors(Some(&apply), &clean),
            describe_tool_result(Some(&apply), &clean)
        );
        // Flagged a success (Claude Code's `is_error: false`), a retry's error line on the way
        // is no failure (verify27).
        let retried = result(
            "django.db.utils.OperationalError: canceling statement due to lock timeout\nretrying\nOK (0.388s)",
            serde_json::json!({"is_error": false}),
        );
        assert_eq!(
            describe_tool_result_noting_errors(Some(&apply), &retried),
            "[bash] ran `terraform apply tfplan` -> 3 lines output"
        );
    }

    #[test]
    fn a_failed_or_refused_call_is_said_to_have_failed_not_to_have_done_its_work() {
        // Claude Code: `is_error` on the result, and its own words.
        let edit = call(
            "Edit",
            r#"{"file_path":"/w/src/lib.rs","old_string":"a","new_string":"b"}"#,
        );
        let not_found = result(
            "<tool_use_error>String to replace not found in file.\nString: a</tool_use_error>",
            serde_json::json!({"is_error": true}),
        );
        assert_eq!(
            describe_tool_result(Some(&edit), &not_found),
            "[Edit] failed to change /w/src/lib.rs: String to replace not found in file. (79 chars of output cleared)"
        );
        let refused = result(
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).",
            serde_json::json!({"is_error": true}),
        );
        assert_eq!(
            describe_tool_result(Some(&edit), &refused),
            "[Edit] rejected by the user: /w/src/lib.rs not changed (151 chars of output cleared)"
        );
        let bash = call("Bash", r#"{"command":"cargo build -p core"}"#);
        let build_failed = result(
            "Compiling core\nerror[E0308]: mismatched types",
            serde_json::json!({"is_error": true}),
        );
        assert_eq!(
            describe_tool_result(Some(&bash), &build_failed),
            "[Bash] ran `cargo build -p core` -> failed, 2 lines output"
        );
        // OpenHands: the observation says it, and so does the exit code the reader appends.
        let view = call(
            "str_replace_editor",
            r#"{"command":"view","path":"/w/shop/coupons.py"}"#,
        );
        let missing = result(
            "Invalid `path` parameter: /w/shop/coupons.py. The path /w/shop/coupons.py does not exist.",
            serde_json::json!({"observation": "error"}),
        );
        assert_eq!(
            describe_tool_result(Some(&view), &missing),
            "[str_replace_editor] could not read /w/shop/coupons.py: Invalid `path` parameter: /w/shop/coupons.py. The path /w/shop/coupons.py does not exist. (89 chars of output cleared)"
        );
        let push = call("execute_bash", r#"{"command":"git push origin fix/881"}"#);
        let rejected = result(
            "Action has been rejected by the user! Reason: do not push yet",
            serde_json::json!({"observation": "user_rejected"}),
        );
        assert_eq!(
            describe_tool_result(Some(&push), &rejected),
            "[execute_bash] ran `git push origin fix/881` -> rejected by the user, did not run (61 chars of output cleared)"
        );
        let pytest = call("execute_bash", r#"{"command":"pytest -q"}"#);
        let failed = result(
            "F.\nFAILED tests/test_cart.py::test_total\n[The command completed with exit code 1.]",
            serde_json::json!({"observation": "run"}),
        );
        assert_eq!(
            describe_tool_result(Some(&pytest), &failed),
            "[execute_bash] ran `pytest -q` -> exit 1, 3 lines output"
        );
        // A success says what it did, as before.
        let edited = result("The file /w/src/lib.rs has been edited.", serde_json::json!({}));
        assert_eq!(
            describe_tool_result(Some(&edit), &edited),
            "[Edit] changed /w/src/lib.rs (39 chars of output cleared)"
        );
    }

    /// A line that reports how the command ended gives its exit code; one that quotes another
    /// process's does not: `gh run view --log-failed` succeeded, printing a CI job's failure.
    #[test]
    fn only_a_report_of_how_the_command_ended_gives_its_exit_code() {
        let view = call("Bash", r#"{"command":"gh run view 1234 --log-failed"}"#);
        let log = "test\tRun pytest\tE   ImportError: Missing optional dependency 'pyarrow'.\ntest\tRun pytest\t##[error]Process completed with exit code 1.\nError: Process completed with exit code 1.";
        assert_eq!(
            describe_tool_result(Some(&view), &result(log, serde_json::json!({"is_error": false}))),
            "[Bash] ran `gh run view 1234 --log-failed` -> 3 lines output"
        );
        for (report, code) in [
            ("Exit code: 2", 2),
            ("[exit code 0]", 0),
            ("[The command completed with exit code 1.]", 1),
            ("[Command 7 finished with exit code 1]", 1),
            ("[Command finished with exit code -1]", -1),
            ("Process exited with code 2", 2),
        ] {
            assert_eq!(exit_code_line(&format!("ok\n{report}")), Some(code), "{report}");
        }
        for quoted in [
            "Error: Process completed with exit code 1.",
            "make: *** [all] Error 2 (exit code 2)",
            "the command failed before, finished with exit code 1",
        ] {
            assert_eq!(exit_code_line(&format!("ok\n{quoted}")), None, "{quoted}");
        }
    }

    /// Claude Code writes a failed command's exit code on the result's first line and flags it;
    /// a hook that stopped a call is no run that failed.
    #[test]
    fn claude_codes_exit_line_and_hook_blocks_are_read() {
        let test = call("Bash", r#"{"command":"npm test -- --ci"}"#);
        let output = format!("Exit code 1\n{}", "FAIL src/cart.test.ts\n".repeat(21));
        let failed = result(&output, serde_json::json!({"is_error": true}));
        assert_eq!(
            describe_tool_result(Some(&test), &failed),
            "[Bash] ran `npm test -- --ci` -> exit 1, 22 lines output"
        );
        let install = call("Bash", r#"{"command":"rm -rf node_modules && npm install"}"#);
        let blocked = result(
            "Bash operation blocked by hook:\n- [guard.sh]: no deleting node_modules\n",
            serde_json::json!({"is_error": true}),
        );
        assert_eq!(Failure::of_result(&blocked), Some(Failure::BlockedByHook));
        assert_eq!(
            describe_tool_result(Some(&install), &blocked),
            "[Bash] ran `rm -rf node_modules && npm install` -> blocked by a hook, did not run (71 chars of output cleared)"
        );
        let write = call("Write", r#"{"file_path":"/w/.env"}"#);
        assert_eq!(
            describe_tool_result(Some(&write), &blocked),
            "[Write] blocked by a hook: /w/.env not changed (71 chars of output cleared)"
        );
        // A result flagged a success is one.
        let logs = result(
            "ERROR req-7 timeout\nINFO ok",
            serde_json::json!({"is_error": false}),
        );
        assert!(flagged_success(&logs));
        assert!(!flagged_success(&failed));
    }

    #[test]
    fn another_tools_stand_in_names_what_it_acted_on() {
        let extract = call(
            "web_extract",
            r#"{"urls":["https://docs.bullmq.io/guide/rate-limiting","https://hatchet.run/docs"]}"#,
        );
        assert_eq!(
            describe_tool_output(Some(&extract), "# Rate limiting\n..."),
            "[web_extract] https://docs.bullmq.io/guide/rate-limiting (+1 more) (19 chars of output cleared)"
        );
        let fetch = call("fetch", r#"{"url":"https://example.org/a","timeout":5}"#);
        assert_eq!(
            describe_tool_output(Some(&fetch), "ok"),
            "[fetch] https://example.org/a (2 chars of output cleared)"
        );
    }

    /// OpenHands answers a command that has not finished (`exit_code: -1`) with what it printed
    /// so far and a note that it is still going: not a command that ended.
    #[test]
    fn a_command_still_running_is_not_said_to_have_ended() {
        let render = call("execute_bash", r#"{"command":"python render.py"}"#);
        for note in [
            "[The command has no new output after 30 seconds. You may wait longer to see additional output by sending empty command '', send other commands to interact with the current process, or send keys to interrupt/kill the command.]",
            "[The command timed out after 120 seconds. You may wait longer to see additional output by sending empty command '', send other commands to interact with the current process, or send keys to interrupt/kill the command.]",
        ] {
            let output = format!("tile 1\ntile 2\n{note}");
            assert_eq!(
                describe_tool_output(Some(&render), &output),
                "[execute_bash] ran `python render.py` -> still running, 3 lines output so far"
            );
        }
        let finished = "tile 1\ntile 2\n[The command completed with exit code 0.]";
        assert_eq!(
            describe_tool_output(Some(&render), finished),
            "[execute_bash] ran `python render.py` -> exit 0, 3 lines output"
        );
    }

    /// A tool that answers JSON: its error is quoted as the output reads, not as the JSON of the
    /// answer, which said only `{"output": "` within the quote's length.
    #[test]
    fn a_json_answers_error_is_quoted_as_its_output_reads() {
        assert_eq!(
            error_line(
                r#"{"output": "\nError: ENOENT: no such file or directory, open '\"config/prod.json\"'\nat Object.openSync", "metadata": {"exit_code": 1}}"#
            ),
            r#"Error: ENOENT: no such file or directory, open '"config/prod.json"'"#
        );
        assert_eq!(
            error_line(r#"{"exit_code": 2, "stderr": "fatal: not a git repository"}"#),
            "fatal: not a git repository"
        );
    }

    /// OpenHands's errors open with a line that is only `ERROR:`; the reason is on the next.
    #[test]
    fn an_error_whose_first_line_is_a_label_is_told_by_its_next_line() {
        assert_eq!(
            error_line(
                "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim in /w/a.py."
            ),
            "ERROR: No replacement was performed, old_str `x` did not appear verbatim in /w/a.py."
        );
        assert_eq!(error_line("ERROR:"), "ERROR:");
        assert_eq!(
            error_line("<tool_use_error>File does not exist.</tool_use_error>\nmore"),
            "File does not exist."
        );
        assert_eq!(
            error_line("error: could not compile `x`\nnext"),
            "error: could not compile `x`"
        );
    }

    #[test]
    fn a_shell_call_says_what_ran_and_how_it_ended() {
        let output = "collected 3 items\nFAILED test_x\nExit code: 1";
        assert_eq!(
            describe_tool_output(Some(&call("terminal", r#"{"command":"pytest -q"}"#)), output),
            "[terminal] ran `pytest -q` -> exit 1, 3 lines output"
        );
        // Hermes's and Codex's shell tools answer JSON: the lines are the output's own, and Codex
        // gives the exit code under `metadata`.
        let json_output = r#"{"output":"a\nb","exit_code":2}"#;
        assert_eq!(
            describe_tool_output(Some(&call("bash", r#"{"command":"make"}"#)), json_output),
            "[bash] ran `make` -> exit 2, 2 lines output"
        );
        let codex_output = r#"{"output":"Compiling x\nerror: could not compile\n","metadata":{"exit_code":101,"duration_seconds":14.8}}"#;
        assert_eq!(
            describe_tool_output(
                Some(&call("shell", r#"{"command":["cargo","build"]}"#)),
                codex_output
            ),
            "[shell] ran `cargo build` -> exit 101, 2 lines output"
        );
    }

    #[test]
    fn a_command_given_as_an_argument_list_is_the_command() {
        // Codex's `shell` tool takes argv; `bash -lc SCRIPT` ran SCRIPT.
        let codex = r#"{"command":["bash","-lc","cargo clippy -p core -- -D warnings"],"workdir":"/w"}"#;
        assert_eq!(
            describe_tool_output(Some(&call("shell", codex)), "warning: x\nExit code: 101"),
            "[shell] ran `cargo clippy -p core -- -D warnings` -> exit 101, 2 lines output"
        );
        let argv = r#"{"command":["git","log","--oneline","-n","3"]}"#;
        assert_eq!(
            describe_tool_output(Some(&call("shell", argv)), "a\nb\nc"),
            "[shell] ran `git log --oneline -n 3` -> 3 lines output"
        );
    }

    #[test]
    fn a_read_names_the_file_the_line_and_the_size() {
        let output = "x".repeat(12_345);
        assert_eq!(
            describe_tool_output(
                Some(&call("read_file", r#"{"path":"src/app.py","offset":1}"#)),
                &output
            ),
            "[read_file] read src/app.py from line 1 (12,345 chars)"
        );
    }

    #[test]
    fn an_editor_asked_to_view_a_file_read_it() {
        // OpenHands's and SWE-agent's `str_replace_editor` (Anthropic's text editor tool): one
        // tool that views, creates and edits, told which by `command`.
        let view = r#"{"command":"view","path":"/workspace/src/app.py"}"#;
        assert_eq!(
            describe_tool_output(Some(&call("str_replace_editor", view)), &"x".repeat(1_200)),
            "[str_replace_editor] read /workspace/src/app.py (1,200 chars)"
        );
        let edit = r#"{"command":"str_replace","path":"/workspace/src/app.py","old_str":"a","new_str":"b"}"#;
        assert_eq!(
            describe_tool_output(Some(&call("str_replace_editor", edit)), "The file was edited."),
            "[str_replace_editor] changed /workspace/src/app.py (20 chars of output cleared)"
        );
    }

    #[test]
    fn a_search_counts_its_matches() {
        let output = "a.rs:1: TODO\nb.rs:9: TODO\n";
        assert_eq!(
            describe_tool_output(
                Some(&call("search_files", r#"{"pattern":"TODO","path":"src"}"#)),
                output
            ),
            "[search_files] search for 'TODO' in src -> 2 matching lines"
        );
    }

    #[test]
    fn an_unknown_tool_still_says_how_much_was_cleared() {
        assert_eq!(
            describe_tool_output(Some(&call("weather", "{}")), &"y".repeat(2_000)),
            "[weather] (2,000 chars of output cleared)"
        );
        assert_eq!(
            describe_tool_output(None, "abc"),
            "[tool] (3 chars of output cleared)"
        );
    }

    #[test]
    fn a_subagents_task_is_named_by_its_description() {
        let task = r#"{"description":"Check consumers of formatDate","prompt":"Search the monorepo's packages for imports of formatDate.","subagent_type":"general-purpose"}"#;
        assert_eq!(
            describe_tool_output(Some(&call("Task", task)), &"y".repeat(230)),
            "[Task] Check consumers of formatDate (230 chars of output cleared)"
        );
        // A path names the target before a description does.
        assert_eq!(
            describe_tool_output(
                Some(&call(
                    "upload",
                    r#"{"description":"the nightly build","path":"dist/app.tar"}"#
                )),
                "ok"
            ),
            "[upload] dist/app.tar (2 chars of output cleared)"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn lines_are_counted_as_lines_counts_them() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "\n\n",
            "\r\n",
            "a\n\nb\n",
            "é\r",
        ] {
            assert_eq!(count_lines(text), text.lines().count(), "{text:?}");
        }
        // Across the 255-byte chunks the count is made of, and with every byte a newline.
        for length in [254, 255, 256, 600, 1_000] {
            let text = "ab\n".repeat(length / 3) + &"\n".repeat(length);
            assert_eq!(count_lines(&text), text.lines().count(), "{length}");
        }
    }
}
