//! Tool actions: one line per call with its outcome, and what its arguments name.

use std::{borrow::Cow, sync::LazyLock};

use aho_corasick::AhoCorasick;

use ctxhost_engine_abi::{Message, ToolCall};
use ctxhost_engine_kit::stand_in::{
    call_target, command_under, describe_tool_outcome, error_line, flagged_success, patch_files, Failure,
    HereDocument, COMMAND_KEYS,
};
use ctxhost_engine_kit::text::{one_line, within_json_string};
use serde_json::Value;

use super::draft::cut_marked;
use super::facts::{is_swe_agent_prompt, verbs, Action, FactKind, Facts, Source};
use super::patterns::error_line_score;
use crate::scan::{
    capped_pieces_of_bodies, classify_token, files_printed, for_each_token, tool_kind, FilesPrinted,
    ToolKind, SCAN_MAX,
};

/// Argument strings longer than this are content (a file being written), not identifiers.
const MAX_ARGUMENT_SCANNED: usize = 400;

impl<'a> Facts<'a> {
    pub(super) fn on_call(&mut self, index: usize, call: &'a ToolCall, scan: bool) -> Action<'a> {
        let name = call.function.name.as_str();
        let mut action = Action {
            index,
            line: String::new(),
            failed: false,
            keys: Vec::new(),
            first_error: None,
            answered: false,
            found_by_exit_code: false,
            fact_ids: Vec::new(),
            last_line: None,
            recovered: false,
            result_index: None,
            read_whole: false,
            looks_up: false,
            prints_files: false,
            refused: false,
            skipped_all: false,
            ci: CiStep::Other,
            path_verbs: Vec::new(),
            itemised: scan,
            tool: name,
        };
        if !scan {
            return action;
        }
        let arguments: Option<Value> = serde_json::from_str(&call.function.arguments).ok();
        let object = arguments.as_ref().and_then(Value::as_object);
        // From the arguments parsed here: `tool_kind` would parse an editor's arguments again.
        let kind = object.map_or_else(|| ToolKind::of(name), |object| ToolKind::of_call(name, object));
        let string_arg = |keys: &[&str]| -> Option<&str> {
            let object = object?;
            keys.iter()
                .filter_map(|key| object.get(*key)?.as_str())
                .find(|value| !value.trim().is_empty())
        };
        let command = (kind == ToolKind::Shell)
            .then(|| command_under(object?, &COMMAND_KEYS))
            .flatten();
        let path = string_arg(&["path", "file_path", "filename", "file", "target_file"]);
        if let Some(command) = &command {
            action
                .fact_ids
                .push(self.add_copy(FactKind::Command, command, Source::Arguments, index));
        }
        // Codex's `apply_patch` names its files in the patch, free text with no path argument;
        // a shell writing a here-document names its file in its command.
        let script = (kind == ToolKind::Write && path.is_none())
            .then(|| command_under(object?, &COMMAND_KEYS))
            .flatten();
        let patched: Vec<&str> = match (kind, path) {
            (ToolKind::Write, None) => patch_files(&call.function.arguments)
                .chain(
                    script
                        .as_deref()
                        .and_then(HereDocument::of)
                        .map(|document| document.file),
                )
                .collect(),
            _ => Vec::new(),
        };
        // A file moved by a command (`git mv src/a.py src/b.py`) is changed under its new name: the
        // fix a session made lived on only as the old name, or not at all (verify37).
        let moved = command.as_deref().and_then(moved_to);
        // So is a file a command edits in place (`sed -i`, `perl -pi`): it had been no file at
        // all, only part of the command (verify47).
        let edited = command.as_deref().map(edited_in_place).unwrap_or_default();
        let targets_nothing = path.is_none() && patched.is_empty();
        let paths = path
            .into_iter()
            .chain(patched)
            .chain(moved)
            .chain(edited.iter().map(String::as_str))
            .filter(|path| !matches!(*path, "." | "./" | "/" | "~"));
        for path in paths {
            let verb = match kind {
                ToolKind::Read => verbs::READ,
                ToolKind::Write => verbs::CHANGED,
                ToolKind::Search => verbs::SEARCHED,
                ToolKind::Shell if moved == Some(path) || edited.iter().any(|file| file == path) => {
                    verbs::CHANGED
                }
                _ => 0,
            };
            let at = self.add_copy(FactKind::Path, path, Source::Arguments, index);
            // The verb waits for the result: a read, search or change that failed did not
            // happen, and of several calls on one path, any one that succeeded counts.
            if verb != 0 {
                action.path_verbs.push((at, verb));
            }
            if matches!(verb, verbs::READ | verbs::CHANGED) {
                self.open_file = Some(at);
            }
            action.fact_ids.push(at);
        }
        // An editor given no file changes the one open (SWE-agent's `edit`, after `open` or
        // `create`): it had been listed as read, never changed (verify46).
        if let (ToolKind::Write, true, Some(open)) = (kind, targets_nothing, self.open_file) {
            self.touch(open, Source::Arguments, index);
            action.path_verbs.push((open, verbs::CHANGED));
            action.fact_ids.push(open);
        }
        // Identifiers inside short argument values (long ones are content being written).
        if let Some(arguments) = &arguments {
            let mut strings = Vec::new();
            collect_short_strings(arguments, &mut strings);
            for text in strings {
                for_each_token(text, |token, shape| {
                    if let Some((kind, fact)) = classify_token(token, shape) {
                        self.add_copy(kind, fact, Source::Arguments, index);
                    }
                });
            }
        }
        action.keys = match command {
            Some(command) => action_keys(name, &command),
            None => vec![format!("{name}\u{0}{}", path.unwrap_or(&call.function.arguments))],
        };
        action
    }

    /// Gives the calls whose result never came their path's verb: with no result to say how
    /// they ended, a call is taken to have done what it asked, as before results were read.
    pub(super) fn settle_unanswered(&mut self) {
        for action in &self.actions {
            if !action.answered {
                for &(path, verb) in &action.path_verbs {
                    self.facts[path].verbs |= verb;
                }
            }
        }
    }

    pub(super) fn on_result(
        &mut self,
        index: usize,
        message: &'a Message,
        call: Option<&'a ToolCall>,
        slot: Option<usize>,
    ) {
        let output = message.text();
        let kind = call.map_or(ToolKind::Other, tool_kind);
        let answer = JsonAnswer::of(&output);
        // A JSON answer that sets its `error` failed, though nothing flags it.
        let failure = Failure::of_result(message).or_else(|| {
            answer
                .as_ref()
                .and_then(JsonAnswer::error)
                .map(|_| Failure::Error)
        });
        // The file a change without a path argument changed, as its call found it.
        let changed = slot
            .and_then(|slot| self.actions[slot].path_verbs.first())
            .filter(|(_, verb)| *verb == verbs::CHANGED)
            .map(|&(id, _)| self.facts[id].text.clone());
        let line = action_line(call, kind, &output, answer.as_ref(), failure, changed.as_deref());
        let printed = call.map_or(FilesPrinted::None, |call| files_printed(call, kind));
        let prints_files = printed != FilesPrinted::None;
        let source = if printed == FilesPrinted::Source {
            Source::FileContent
        } else {
            Source::ToolOutput
        };
        // A page fetched says what it says (`Known limitation: … cannot …`): its error words are
        // a file's, not how the call ended. So does the diff or snippet an edit that went through
        // echoes (verify37: its `return JSONResponse({"error": "rate_limited"}, …)` listed under
        // Errors to the end of a replay).
        let echoes_change = kind == ToolKind::Write && failure.is_none();
        // So does a subagent's report: `coupon errors are not announced` is what it found
        // (verify38: listed under Errors).
        let reports = call.is_some_and(|call| delegates(&call.function.name));
        let error_source = if fetches_pages(call)
            || echoes_change
            || reports
            || searches_code(call, kind)
            || lists_a_forges_records(call)
        {
            Source::FileContent
        } else {
            source
        };
        let mut first_error: Option<Cow<'a, str>> = None;
        for (piece, body) in capped_pieces_of_bodies(message) {
            self.scan_identifiers(piece, source, index);
            let error = self.scan_errors(piece, body, error_source, index);
            first_error = match (first_error, error) {
                (Some(kept), Some(new)) if error_line_score(&new) > error_line_score(&kept) => Some(new),
                (kept, new) => kept.or(new),
            };
        }
        // Without a flag or an exit code, words decide: a shell's error line, another tool's
        // output opening with one. A result flagged a success is one, whatever it printed.
        let exit_code = exit_code_in(&line);
        // `diff` that found differences exits with 1, and Claude Code flags it an error as it
        // does every exit code but 0: the code says more than the flag.
        let answered = exit_code.is_some_and(|code| exit_code_answers(call, code));
        let failed = (failure.is_some() && !(answered && failure == Some(Failure::Error)))
            || match exit_code {
                Some(_) if answered => false,
                Some(code) => code != 0,
                None if kind == ToolKind::Read || flagged_success(message) => false,
                None if kind == ToolKind::Shell => {
                    fetch_failed(&output)
                        || (match queries(call) {
                            // A listing of crashes is full of exception names; its own failure
                            // is what it prints first.
                            true => starts_with_failure(&output, answer.as_ref()),
                            false => first_error.is_some(),
                        }
                        // A log read is what the log says (`gh run view … --log`), a query's too.
                        && !shows_content(call))
                }
                None => starts_with_failure(&output, answer.as_ref()),
            };
        let error_id = first_error.as_ref().and_then(|error| self.id_of(error));
        // Asked only of a command failing again (what it tells): searching every output for the
        // cut marks cost 15% of a replay, and every failure's 3%.
        let command = slot.and_then(|slot| {
            self.actions[slot]
                .fact_ids
                .iter()
                .copied()
                .find(|&id| self.facts[id].kind == FactKind::Command)
        });
        let read_whole = failed
            && command.is_some_and(|command| !self.failed_commands.insert(command))
            && reads_whole(&output);
        let looks_up = matches!(kind, ToolKind::Read | ToolKind::Search)
            || (kind == ToolKind::Other && fetches_pages(call));
        let refused = failure == Some(Failure::Rejected);
        let skipped_all = !failed && kind == ToolKind::Shell && skips_every_test(&output);
        let ci = match failed || kind != ToolKind::Shell {
            true => CiStep::Other,
            false => ci_step(call, &output),
        };
        // A failure with no error line is told by its last line instead; so is one whose last
        // line is an error line of its own (a test run's `1 failed, 14 passed`): quoted on its
        // Blocked line, it goes with it once a later run passed, where it stood alone under
        // Errors for the rest of a replay.
        let last = match kind {
            ToolKind::Shell => last_line(&output).filter(|last| {
                !failed
                    || first_error.as_deref().is_none_or(|first| {
                        !first.contains(last.as_str())
                            && self
                                .id_of(last)
                                .is_some_and(|id| self.facts[id].kind == FactKind::Error)
                    })
            }),
            _ => None,
        };
        match slot {
            Some(slot) => {
                // A read, search or change that failed or was refused did nothing to its path:
                // the path stays a fact, but is listed as read, searched or changed only for a
                // call on it that succeeded.
                if failure.is_none() {
                    for &(path, verb) in &self.actions[slot].path_verbs {
                        self.facts[path].verbs |= verb;
                    }
                }
                if !failed && failure.is_none() {
                    if let Some(call) = call.filter(|_| kind == ToolKind::Shell) {
                        self.undo_changes(call);
                    }
                }
                // A command the user refused did not run: named, not listed as run (verify37:
                // a refused `git push --force origin release/1.9.0` under Commands).
                if refused {
                    let index = self.actions[slot].index;
                    for &id in &self.actions[slot].fact_ids {
                        let fact = &mut self.facts[id];
                        if fact.kind == FactKind::Command
                            && fact.source == Source::Arguments
                            && fact.last_seen == index
                        {
                            fact.source = Source::Assistant;
                        }
                    }
                }
                let action = &mut self.actions[slot];
                action.last_line = last;
                action.recovered = !failed && first_error.is_some() && says_it_retried(&output);
                action.line = line;
                action.result_index = Some(index);
                action.read_whole = read_whole;
                action.looks_up = looks_up;
                action.prints_files = prints_files;
                action.refused = refused;
                action.skipped_all = skipped_all;
                action.ci = ci;
                action.failed = failed;
                action.first_error = first_error;
                action.answered = true;
                action.found_by_exit_code = answered;
                action.fact_ids.extend(error_id);
            }
            None => self.actions.push(Action {
                index,
                line,
                failed,
                keys: vec![format!("orphan{index}")],
                first_error,
                answered: true,
                found_by_exit_code: answered,
                fact_ids: error_id.into_iter().collect(),
                last_line: None,
                recovered: false,
                result_index: Some(index),
                read_whole,
                looks_up,
                prints_files,
                refused,
                skipped_all,
                ci,
                path_verbs: Vec::new(),
                itemised: true,
                tool: call.map_or("tool", |call| call.function.name.as_str()),
            }),
        }
    }
}

impl Facts<'_> {
    /// Files a command put back as committed are no longer changed (verify45: `Changed: …/cache.go`
    /// stood after `git checkout internal/store/cache.go` reverted the fix).
    fn undo_changes(&mut self, call: &ToolCall) {
        let arguments = &call.function.arguments;
        if !arguments.contains("git checkout") && !arguments.contains("git restore") {
            return;
        }
        let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(arguments) else {
            return;
        };
        let Some(command) = command_under(&arguments, &COMMAND_KEYS) else {
            return;
        };
        for file in reverted_files(&command) {
            // A folder (`src/`, `.`) puts back every file under it.
            let same_file = |changed: &str| {
                let within = |long: &str, short: &str| {
                    long.strip_suffix(short)
                        .is_some_and(|folder| folder.ends_with('/'))
                };
                let under =
                    |folder: &str| changed.starts_with(folder) || changed.contains(&format!("/{folder}"));
                match file {
                    "." | "./" => true,
                    folder if folder.ends_with('/') => under(folder),
                    _ => changed == file || within(changed, file) || within(file, changed),
                }
            };
            for fact in &mut self.facts {
                if fact.kind == FactKind::Path && fact.verbs & verbs::CHANGED != 0 && same_file(&fact.text) {
                    fact.verbs &= !verbs::CHANGED;
                }
            }
        }
    }
}

/// The files a command puts back as they were committed: `git checkout -- a.go`, `git checkout
/// internal/store/cache.go`, `git restore a.go` (not `--staged` alone, which keeps the change).
/// A folder puts back the files under it (`git checkout -- .`, `git restore src/`). A branch or
/// tag checked out (`git checkout main`, `git checkout v1.2.3`) names no file.
fn reverted_files(command: &str) -> Vec<&str> {
    let mut files = Vec::new();
    for step in command.split(['&', ';', '|', '\n']) {
        let words: Vec<&str> = step.split_whitespace().collect();
        let operands = match words.as_slice() {
            ["git", "checkout", operands @ ..] => operands,
            ["git", "restore", operands @ ..]
                if !operands.contains(&"--staged") || operands.contains(&"--worktree") =>
            {
                operands
            }
            _ => continue,
        };
        files.extend(
            operands
                .iter()
                .map(|word| word.trim_matches(['\'', '"']))
                .filter(|word| !word.starts_with('-'))
                .filter(|word| {
                    if *word == "." || word.ends_with('/') {
                        return true;
                    }
                    let name = word.rsplit('/').next().unwrap_or(word);
                    name.rsplit_once('.').is_some_and(|(stem, extension)| {
                        !stem.is_empty()
                            && extension.bytes().all(|byte| byte.is_ascii_alphabetic())
                            && !extension.is_empty()
                    })
                }),
        );
    }
    files
}

/// One line for a tool action and its outcome: kit's stand-in for shell, read and search tools;
/// for the others, what they acted on and, when it is short, what they answered, or how they
/// failed.
fn action_line(
    call: Option<&ToolCall>,
    kind: ToolKind,
    output: &str,
    answer: Option<&JsonAnswer>,
    failure: Option<Failure>,
    changed: Option<&str>,
) -> String {
    let Some(call) = call.filter(|_| matches!(kind, ToolKind::Write | ToolKind::Other)) else {
        return describe_tool_outcome(call, output, failure);
    };
    let name = &call.function.name;
    let arguments: Option<Value> = serde_json::from_str(&call.function.arguments).ok();
    let target = arguments
        .as_ref()
        .and_then(Value::as_object)
        .and_then(call_target)
        .or_else(|| {
            // A patch's files: `[apply_patch] changed a.rs (+1 more)`.
            let mut files = patch_files(&call.function.arguments);
            let first = files.next()?;
            Some(match files.count() {
                0 => first.to_owned(),
                more => format!("{first} (+{more} more)"),
            })
        })
        // A here-document's file, or the file open for an editor given none.
        .or_else(|| changed.map(str::to_owned));
    let verb = if kind == ToolKind::Write && failure.is_none() {
        "changed "
    } else {
        ""
    };
    let target = target
        .map(|target| format!(" {verb}{target}"))
        .unwrap_or_default();
    match failure {
        Some(Failure::Error) => {
            let error = answer
                .and_then(JsonAnswer::error)
                .unwrap_or_else(|| error_line(output));
            return format!("[{name}]{target} -> failed: {error}");
        }
        Some(stopped) => return format!("[{name}]{target} -> {}, did not run", stopped.ending()),
        None => {}
    }
    // A tool's JSON answer is quoted as its text reads: `The file … has been updated.`
    let output = answer.and_then(JsonAnswer::text).unwrap_or(output).trim();
    // What a change wrote says more than the size of the editor's answer (verify29: `[patch]
    // changed configs/ft_1p3b.yaml -> 124 chars of output`, and the OOM fix's `micro_batch_size:
    // 8` in no summary).
    let no_arguments = serde_json::Map::new();
    let wrote = (kind == ToolKind::Write)
        .then(|| {
            // `apply_patch` takes the patch as free text, not as JSON.
            let object = arguments
                .as_ref()
                .and_then(Value::as_object)
                .unwrap_or(&no_arguments);
            lines_written(object, &call.function.arguments)
        })
        .flatten()
        .map(|lines| format!("{WRITING}{lines}"))
        .unwrap_or_default();
    // A todo list's answer only says it was saved: the list is what it holds (verify37: Claude
    // Code's `[TodoWrite] -> 160 chars of output`, the plan's state in no summary).
    if let Some(todos) = arguments.as_ref().and_then(todo_list) {
        return format!("[{name}{TODOS}{todos}");
    }
    // A change's line says it succeeded (`changed`): the editor's answer adds nothing to it.
    if !wrote.is_empty() {
        format!("[{name}]{target}{wrote}")
    } else if output.len() <= 120 && !output.contains('\n') && !output.is_empty() {
        format!("[{name}]{target} -> {output}")
    } else if let Some(finding) = delegates(name)
        .then(|| first_finding(&report_text(output)))
        .flatten()
    {
        // A subagent's report is what it found (verify37: Claude Code's `[Task] -> 230 chars
        // of output`, the admin package's pinned version in no summary).
        format!("[{name}]{target} -> {finding}")
    } else {
        format!("[{name}]{target} -> {} chars of output", output.chars().count())
    }
}

/// Whether `call` searches files other than logs (`grep -rn TimeoutError src/`, `rg`, a Grep
/// tool): its hits are lines of the files, `throw new TimeoutError(…)` among them, not how a run
/// ended (verify40: listed under Errors). A search of logs finds the run's errors.
fn searches_code(call: Option<&ToolCall>, kind: ToolKind) -> bool {
    let Some(call) = call else {
        return false;
    };
    let arguments = call.function.arguments.as_str();
    let names_logs = [".log", "logs/", "/log/", "journal"]
        .iter()
        .any(|word| arguments.contains(word));
    // Every shell result is asked: its arguments are parsed only when they name a searcher.
    let names_searcher = ["grep", "rg ", "ag ", "ack "]
        .iter()
        .any(|word| arguments.contains(word));
    !names_logs
        && (kind == ToolKind::Search
            || (kind == ToolKind::Shell
                && names_searcher
                && last_step(Some(call), |words, _| {
                    matches!(
                        words,
                        ["grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack", ..] | ["git", "grep", ..]
                    )
                })))
}

/// Whether `call` lists a forge's records (`gh run list`, `gh issue list`, `glab ci list`): a
/// run's `failure` or an issue's `TypeError in checkout` is a record of the past, not how this
/// call ended (verify41: `2026-11-29T12:00:00Z 7873a59e0 failure` listed under Errors after the
/// flaky test passed 120 times).
fn lists_a_forges_records(call: Option<&ToolCall>) -> bool {
    call.is_some_and(|call| call.function.arguments.contains(" list"))
        && last_step(call, |words, _| matches!(words, ["gh" | "glab", _, "list", ..]))
}

/// Whether a tool named `name` hands a task to another agent, whose answer is its report.
fn delegates(name: &str) -> bool {
    const DELEGATES: [&str; 6] = [
        "task",
        "agent",
        "dispatch_agent",
        "delegate_task",
        "subagent",
        "spawn_agent",
    ];
    DELEGATES.iter().any(|known| name.eq_ignore_ascii_case(known))
}

/// Whether a summary's line of work done tells what a subagent found (`[Task] Check consumers
/// -> Found 6 imports of formatDate: …`): knowledge the work goes on from, ranked with the newest
/// work and carried from fold to fold as a decision is.
pub(super) fn tells_a_finding(line: &str) -> bool {
    let Some((tool, rest)) = line.strip_prefix('[').and_then(|line| line.split_once(']')) else {
        return false;
    };
    delegates(tool)
        && rest.split_once(" -> ").is_some_and(|(_, outcome)| {
            !outcome.starts_with("failed:")
                && !outcome.ends_with(" chars of output")
                && !outcome.ends_with("did not run")
        })
}

/// A subagent's report as text: its answer, or the first report a JSON answer holds under a key
/// that names one (Hermes's `delegate_task`: `{"results": [{"summary": "…"}]}`).
fn report_text(output: &str) -> Cow<'_, str> {
    fn report_in(value: &Value, depth: usize) -> Option<&str> {
        const REPORT_KEYS: [&str; 6] = ["summary", "result", "answer", "output", "content", "text"];
        match value {
            Value::Object(map) if depth > 0 => REPORT_KEYS
                .iter()
                .find_map(|key| map.get(*key)?.as_str().filter(|text| !text.trim().is_empty()))
                .or_else(|| map.values().find_map(|value| report_in(value, depth - 1))),
            Value::Array(items) if depth > 0 => items.iter().find_map(|item| report_in(item, depth - 1)),
            _ => None,
        }
    }
    if !output.starts_with(['{', '[']) {
        return Cow::Borrowed(output);
    }
    match serde_json::from_str::<Value>(output) {
        Ok(value) => report_in(&value, 4).map_or(Cow::Borrowed(output), |text| Cow::Owned(text.to_owned())),
        Err(_) => Cow::Borrowed(output),
    }
}

/// The first sentence of a report that says something, cut to a line's room: past headings,
/// short exclamations (`Perfect!`), sentences that only announce what follows (`Here is what I
/// found:`, `Now I have enough context.`) and, when a finding follows, those that tell how it was
/// looked for (`I searched apps/web/src for icon-only buttons.`, verify38).
fn first_finding(report: &str) -> Option<String> {
    const FINDING_CHARS: usize = 240;
    const ANNOUNCING: [&str; 6] = [
        "now i have",
        "i now have",
        "i have now",
        "let me",
        "i'll ",
        "i will ",
    ];
    const SEARCHING: [&str; 14] = [
        "searched",
        "looked",
        "checked",
        "reviewed",
        "analyzed",
        "analysed",
        "examined",
        "explored",
        "scanned",
        "inspected",
        "grepped",
        "investigated",
        "went",
        "ran",
    ];
    let says_something = |sentence: &&str| {
        let lower = sentence.to_ascii_lowercase();
        sentence.split_whitespace().count() > 3
            && !sentence.ends_with(':')
            && !ANNOUNCING.iter().any(|opening| lower.starts_with(opening))
    };
    let tells_the_search = |sentence: &str| {
        let mut words = sentence.split_whitespace();
        words.next() == Some("I") && words.next().is_some_and(|verb| SEARCHING.contains(&verb))
    };
    let mut candidates = report
        .lines()
        .take(40)
        .map(|line| line.trim().trim_start_matches(['-', '*', '>', ' ']).trim())
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("```"))
        .flat_map(sentences)
        .map(|sentence| sentence.trim_matches('*').trim())
        .filter(says_something);
    let first = candidates.next()?;
    let finding = if tells_the_search(first) {
        candidates
            .find(|sentence| !tells_the_search(sentence))
            .unwrap_or(first)
    } else {
        first
    };
    Some(super::draft::cut_marked(finding, FINDING_CHARS).into_owned())
}

/// The sentences of a line: each ends at `.`, `!` or `?` followed by a space, or at the line's
/// end (a path's or a version's dots are inside words).
fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .match_indices(['.', '!', '?'])
            .map(|(at, _)| at + 1)
            .find(|&after| rest[after..].starts_with(' '))
            .unwrap_or(rest.len());
        let (sentence, after) = rest.split_at(end);
        rest = after.trim_start();
        Some(sentence.trim())
    })
}

/// Whether a summary's line tells a todo list's state ([`todo_list`]): `[TodoWrite] -> todos: …`.
pub(super) fn tells_todos(line: &str) -> bool {
    line.starts_with('[') && line.contains(TODOS)
}

/// How a todo list's line tells its state, after the tool's name.
const TODOS: &str = "] -> todos: ";

/// A todo list as a call writes it whole (Claude Code's `TodoWrite`: `{"todos": [{"content",
/// "status"}…]}`), told by its state: `2 completed, 1 in progress (Fix the mypy error in api.py),
/// 2 pending (Add the CSV export; Tag 1.9.0)`.
fn todo_list(arguments: &Value) -> Option<String> {
    const SHOWN: usize = 2;
    const ITEM_CHARS: usize = 80;
    let todos = arguments.get("todos")?.as_array()?;
    let mut by_status: Vec<(&str, Vec<&str>)> = Vec::new();
    for todo in todos {
        let status = todo.get("status")?.as_str()?;
        let content = todo.get("content").and_then(Value::as_str).unwrap_or_default();
        match by_status.iter_mut().find(|(known, _)| *known == status) {
            Some((_, items)) => items.push(content),
            None => by_status.push((status, vec![content])),
        }
    }
    if by_status.is_empty() {
        return None;
    }
    // Done first, then what is under way, then what is left: the order work goes.
    let rank = |status: &str| match status {
        "completed" | "done" => 0,
        "in_progress" => 1,
        "pending" => 2,
        _ => 3,
    };
    by_status.sort_by_key(|(status, _)| rank(status));
    let parts: Vec<String> = by_status
        .iter()
        .map(|(status, items)| {
            let label = status.replace('_', " ");
            if rank(status) == 0 {
                return format!("{} {label}", items.len());
            }
            let shown: Vec<String> = items
                .iter()
                .take(SHOWN)
                .map(|item| super::draft::cut_marked(item.trim(), ITEM_CHARS).into_owned())
                .collect();
            let more = items.len().saturating_sub(SHOWN);
            let more = if more > 0 {
                format!("; +{more} more")
            } else {
                String::new()
            };
            format!("{} {label} ({}{more})", items.len(), shown.join("; "))
        })
        .collect();
    Some(parts.join(", "))
}

/// How a change's line goes on to say what it wrote (`[patch] changed a.yaml, writing: lr: 2e-4`).
pub(super) const WRITING: &str = ", writing: ";

/// The lines a change writes that were not there before, joined, cut to a line's room: a
/// replacement's new lines not among its old ones, or a patch's added lines.
fn lines_written(arguments: &serde_json::Map<String, Value>, raw: &str) -> Option<String> {
    // Short: an older change line that grew by a whole line of code gave way at 16,000 tokens
    // where its `-> 181 chars of output` had fitted (verify32).
    const WRITTEN_CHARS: usize = 60;
    let text = |keys: &[&str]| keys.iter().find_map(|key| arguments.get(*key)?.as_str());
    let script = command_under(arguments, &COMMAND_KEYS);
    let here_document = script
        .as_deref()
        .and_then(HereDocument::of)
        .map(|document| document.text);
    let written: Vec<&str> = match text(&[
        "new_string",
        "new_str",
        "new_text",
        "content",
        "file_text",
        "replace",
        // SWE-agent's windowed `edit`: lines `start_line` to `end_line` become this.
        "replacement_text",
    ])
    .or(here_document)
    {
        Some(new) => {
            // SWE-agent's `edit` replaces its `search` (verify46).
            let old: Vec<&str> = text(&["old_string", "old_str", "old_text", "search"])
                .map(|old| old.lines().map(str::trim).collect())
                .unwrap_or_default();
            new.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !old.contains(line))
                .collect()
        }
        None => {
            // A patch, as an argument or as the free text `apply_patch` takes (no JSON object).
            let patch = text(&["patch", "diff", "input"]).or_else(|| arguments.is_empty().then_some(raw))?;
            patch
                .split('\n')
                .flat_map(|line| line.split("\\n"))
                .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
                .map(|line| line[1..].trim())
                .filter(|line| !line.is_empty())
                .collect()
        }
    };
    if written.is_empty() {
        return None;
    }
    Some(cut_marked(&written.join(" | "), WRITTEN_CHARS).into_owned())
}

/// A short tool answer that is a JSON object (Hermes's `{"output": "…", "exit_code": 0,
/// "error": null}`): the keys read, the others passed over.
#[derive(serde::Deserialize)]
struct JsonAnswer {
    output: Option<String>,
    stdout: Option<String>,
    message: Option<String>,
    error: Option<Value>,
    success: Option<Value>,
}

impl JsonAnswer {
    /// `output` read as such an answer, when it is one of at most 2,000 bytes.
    fn of(output: &str) -> Option<Self> {
        let trimmed = output.trim();
        if !trimmed.starts_with('{') || trimmed.len() > 2_000 {
            return None;
        }
        serde_json::from_str(trimmed).ok()
    }

    /// Its text: `output`, `stdout` or `message`.
    fn text(&self) -> Option<&str> {
        [&self.output, &self.stdout, &self.message]
            .into_iter()
            .find_map(Option::as_deref)
    }

    /// The error it sets (`"error": "old_string not found in file"`), when it sets one.
    fn error(&self) -> Option<String> {
        match self.error.as_ref()? {
            Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
            Value::Object(map) => map.get("message")?.as_str().map(str::to_owned),
            _ => None,
        }
    }
}

/// Whether a test run's closing tally counts skipped tests and nothing that ran (pytest's `9
/// skipped in 0.11s`, jest's `Tests: 9 skipped, 9 total`): the tests it was asked to run were
/// deferred (verify36: a PDF suite marked skip read as fixing the `OSError` it failed on).
fn skips_every_test(output: &str) -> bool {
    let Some(tally) = output
        .lines()
        .rev()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take(4)
        .find(|line| line.contains(" skipped"))
    else {
        return false;
    };
    let counts = |word: &str| {
        tally.match_indices(word).any(|(at, _)| {
            tally[..at]
                .trim_end()
                .bytes()
                .next_back()
                .is_some_and(|byte| byte.is_ascii_digit())
        })
    };
    counts(" skipped") && !counts(" passed") && !counts(" failed")
}

/// Whether `output` is all a command printed, as far as can be told: short enough to be scanned
/// whole, and marked cut by nobody (`…[3000 characters omitted]…`, `<response clipped>`, a
/// compaction's `[… 120 lines of this output cut by context compaction …]`).
fn reads_whole(output: &str) -> bool {
    static CUT: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["omitted", "truncated", "clipped", "[… "])
            .expect("the cut words build")
    });
    output.len() <= SCAN_MAX && !CUT.is_match(output)
}

/// Whether a command's output says it retried after a failure on the way: `attempt 1: lock
/// timeout, retrying in 15 s`, pip's `Retrying (Retry(total=4, …))`.
fn says_it_retried(output: &str) -> bool {
    static RETRIED: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["retrying", "will retry", "retry attempt", "retried"])
            .expect("the retry words build")
    });
    RETRIED.is_match(output)
}

/// The last line of `output` that says something, when it is short and the output had more than
/// one; a tool's JSON answer (`{"output": "…\nHealthy", …}`) read as its text.
fn last_line(output: &str) -> Option<String> {
    const MAX_LAST_LINE: usize = 120;
    let trimmed = output.trim_end();
    // Bracketed is enough here: parsing every output to be sure cost a pass over each.
    let line = if trimmed.starts_with('{') && trimmed.ends_with('}') {
        // The text after the last `\n` escape that says something (an output ends with one).
        let mut end = trimmed.len();
        let mut found = String::new();
        for (at, _) in trimmed.rmatch_indices("\\n").take(4) {
            found = within_json_string(&trimmed[at + 2..end], false).trim().to_owned();
            if !found.is_empty() {
                break;
            }
            end = at;
        }
        found
    } else {
        // A shell tool's closing `Exit code: 0` says what the action line says already: the line
        // before it tells how the command ended.
        let mut lines = trimmed
            .lines()
            .rev()
            .map(str::trim)
            .filter(|line| !line.is_empty());
        // So does OpenHands's trailer: the exit code, the working directory, the interpreter.
        let mut last = lines.next()?;
        while is_exit_line(last) || is_shell_trailer(last) {
            last = lines.next()?;
        }
        lines.next()?;
        last.to_owned()
    };
    // A closing brace or a count alone says nothing of how it ended.
    let line = one_line(&line);
    let says_something = line.bytes().any(|byte| byte.is_ascii_alphabetic());
    (says_something && line.len() <= MAX_LAST_LINE).then_some(line)
}

/// `Exit code: 0`, `[exit code 1]`, `[Command finished with exit code 0]`: how a shell tool closes
/// its output.
fn is_exit_line(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let lower = lower.trim_start_matches('[');
    lower.starts_with("exit code")
        || lower.contains("finished with exit code")
        || lower.starts_with("process exited")
}

/// Whether `line` is one of the lines OpenHands writes after a command's output, other than
/// its exit code: `[Current working directory: /workspace]`, `[Python interpreter: …]`,
/// `[The command completed with exit code 1.]`; or SWE-agent's prompt that closes every
/// observation: `(Open file: n/a)`, `(Current directory: /repo)`, `bash-$`.
fn is_shell_trailer(line: &str) -> bool {
    if is_swe_agent_prompt(line) {
        return true;
    }
    let Some(inner) = line.strip_prefix('[').and_then(|line| line.strip_suffix(']')) else {
        return false;
    };
    let lower = inner.to_ascii_lowercase();
    [
        "current working directory:",
        "python interpreter:",
        "the command completed with exit code",
    ]
    .iter()
    .any(|start| lower.starts_with(start))
}

/// Every string in `value` short enough to be an identifier rather than content.
fn collect_short_strings<'v>(value: &'v Value, into: &mut Vec<&'v str>) {
    match value {
        Value::String(text) if text.len() <= MAX_ARGUMENT_SCANNED => into.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_short_strings(item, into)),
        Value::Object(map) => map.values().for_each(|item| collect_short_strings(item, into)),
        _ => {}
    }
}

/// The keys that tell a retry of `command` run by `tool`: each program its chain or pipeline
/// runs, but `cd` and its kind (the command itself when it runs nothing else), and the filters a
/// pipeline passes the output through. A check that failed on its own (`python scripts/verify.py
/// --from 2025-01`) and passed later inside a chain (`alembic upgrade head && python
/// scripts/verify.py --from 2026-03`) was retried, and is not blocked; `cd dbt && dbt run` is not
/// retried by `cd dbt && dbt test`, nor `pnpm test 2>&1 | tail -5` by `git log | tail -3`.
pub(super) fn action_keys(tool: &str, command: &str) -> Vec<String> {
    // An inline script's `;` and `|` are its own, not a chain's.
    if runs_inline_script(command) {
        return vec![format!("{tool}\u{0}{}", inline_script_key(command))];
    }
    let mut keys = Vec::new();
    // Quotes kept whole: the command `ssh` runs on another host is one argument.
    let chain = pipelines(command);
    for pipeline in unquoted_parts(&chain, b';') {
        for (position, step) in unquoted_parts(pipeline, b'|').into_iter().enumerate() {
            let Some(first) = step.split_whitespace().next() else {
                continue;
            };
            let filters = position > 0 && PIPE_FILTERS.contains(&first);
            if filters || matches!(first, "cd" | "pushd" | "popd" | "export" | "source" | "." | "set") {
                continue;
            }
            // A command run on another host, device or container is keyed by where and what it
            // runs there (verify46: `ssh pg-replica-2 uptime` passing settled a failed `ssh
            // pg-replica-2 '… pg_dump …'`, `adb -s emulator-5554 shell getprop` a failed `adb -s
            // emulator-5554 logcat`: both were keyed by their first two words).
            let programs = match remote_run(step) {
                Some((place, remote)) => action_keys("", &remote)
                    .iter()
                    .map(|key| format!("{place} {}", key.trim_start_matches('\u{0}')))
                    .collect(),
                None => vec![program_of(step)],
            };
            for program in programs {
                let key = format!("{tool}\u{0}{program}");
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
    }
    if keys.is_empty() {
        keys.push(format!("{tool}\u{0}{}", program_of(command)));
    }
    keys
}

/// Where a command runs its checks: the projects or packages its options choose
/// (`--project=firefox`, `-p ingest`) and the hosts it calls (`staging.acme.dev`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Selection {
    options: Vec<(String, String)>,
    hosts: Vec<String>,
}

/// Options whose value chooses the project, browser or package a command runs on. Not a test's
/// name (`-k test_step6`): an agent that fixes one test and moves on to the next runs it so
/// (the bundled migration), and its next test passing reads as the work going on.
const SELECTING_OPTIONS: [&str; 8] = [
    "--project",
    "--filter",
    "-F",
    "--package",
    "-p",
    "--workspace",
    "--projects",
    "--scope",
];

/// Options that run a monorepo's command in the packages they name only (pnpm's `--filter` or
/// `-F`, turbo's `--filter`, npm's and yarn's `--workspace`, nx's `--projects`, lerna's
/// `--scope`): a run that names none runs it in every package.
const PACKAGE_FILTERS: [&str; 4] = ["--filter", "--workspace", "--projects", "--scope"];

impl Selection {
    pub(super) fn of(command: &str) -> Self {
        let mut selection = Selection::default();
        let mut words = command
            .split_whitespace()
            .map(|word| word.trim_matches(|c| matches!(c, '\'' | '"')))
            .peekable();
        let chains = |word: &str| matches!(word, "&&" | "||" | ";" | "|") || word.ends_with(';');
        // A filter the output is piped through chooses nothing the command ran (`| grep -F ok`).
        let mut piped = false;
        let mut cargo = false;
        while let Some(word) = words.next() {
            piped |= word.starts_with('|');
            cargo = (cargo && !chains(word)) || word == "cargo";
            if let Some(option) = SELECTING_OPTIONS.iter().find(|option| {
                word == **option
                    || word
                        .strip_prefix(**option)
                        .is_some_and(|rest| rest.starts_with('='))
            }) {
                let value = match word.split_once('=') {
                    Some((_, value)) => Some(value),
                    // cargo's `--workspace` takes none: it runs every package.
                    None if cargo && *option == "--workspace" => None,
                    None => words.next_if(|next| !next.starts_with('-') && !chains(next)),
                };
                let option = if *option == "-F" { "--filter" } else { option };
                // nx names its projects in one value (`--projects=api,web`).
                let values = value.iter().flat_map(|value| value.split(','));
                if !piped {
                    selection.options.extend(
                        values
                            .filter(|value| !value.is_empty())
                            .map(|value| (option.to_owned(), value.to_owned())),
                    );
                }
            } else if let Some(host) = word
                .strip_prefix("https://")
                .or_else(|| word.strip_prefix("http://"))
                .and_then(|rest| rest.split(['/', '?', '#']).next())
            {
                selection.hosts.push(host.to_owned());
            }
        }
        selection
    }

    /// Whether a success of `passed` shows nothing of this selection's failure: it chose another
    /// project by the same option (`--project=chromium` after `--project=firefox`), or called
    /// another host (`localhost` after `staging.acme.dev`). A run that chooses none (the whole
    /// suite) runs what any choice of it does; one that filters a monorepo's packages does not
    /// run a whole or otherwise filtered run's (verify46: `pnpm --filter @acme/web --filter
    /// @acme/date-utils test` passing read as fixing `pnpm -r test`'s failure in @acme/api).
    pub(super) fn differs_from(&self, passed: &Selection) -> bool {
        let chosen = |selection: &'_ Selection, option: &str| -> Vec<String> {
            selection
                .options
                .iter()
                .filter(|(other, _)| other == option)
                .map(|(_, value)| value.clone())
                .collect()
        };
        let other_option = passed.options.iter().any(|(option, _)| {
            let ours = chosen(self, option);
            match ours.is_empty() {
                true => PACKAGE_FILTERS.contains(&option.as_str()),
                false => {
                    let theirs = chosen(passed, option);
                    !ours.iter().all(|value| theirs.contains(value))
                }
            }
        });
        let other_host = !self.hosts.is_empty()
            && !passed.hosts.is_empty()
            && !self.hosts.iter().any(|host| passed.hosts.contains(host));
        other_option || other_host
    }
}

/// Programs that run a command they are given elsewhere: on a host (`ssh`), a device (`adb`), in
/// a container (`docker exec`) or a pod (`kubectl exec`).
const REMOTE_WRAPPERS: [&str; 5] = ["ssh", "adb", "docker", "podman", "kubectl"];

/// Options of [`REMOTE_WRAPPERS`] that take the next word as their value, before the host,
/// device, container or pod (`ssh -i key.pem -p 2222 db-1`, `docker exec -u postgres db`,
/// `kubectl -n prod exec api-0 -c app -- …`).
const REMOTE_OPTIONS_WITH_VALUES: &[&str] = &[
    "-i",
    "-p",
    "-o",
    "-l",
    "-J",
    "-F",
    "-L",
    "-R",
    "-D",
    "-W",
    "-S",
    "-E",
    "-b",
    "-c",
    "-m",
    "-e",
    "-s",
    "-t",
    "-H",
    "-P",
    "-u",
    "-w",
    "-n",
    "--user",
    "--workdir",
    "--env",
    "--env-file",
    "--namespace",
    "--container",
    "--context",
    "--kubeconfig",
];

/// `text`'s first word and what follows it, leading blanks trimmed.
fn next_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    (!text.is_empty()).then(|| text.split_once(char::is_whitespace).unwrap_or((text, "")))
}

/// Where `step` runs a command of its own and that command, when it is a remote or device
/// wrapper's: `ssh:pg-replica-2` and `pg_dump …` of `ssh pg-replica-2 'pg_dump …'`,
/// `adb:emulator-5554` and `logcat -d` of `adb -s emulator-5554 logcat -d` (`getprop …` of its
/// `shell getprop …`), `docker:api` and `pytest` of `docker exec -it api pytest`, `kubectl:api-0`
/// and what follows `--` of `kubectl exec api-0 -- …`. Options and their values are no place.
fn remote_run(step: &str) -> Option<(String, String)> {
    let (mut program, mut rest) = next_word(step)?;
    while program == "sudo" {
        (program, rest) = next_word(rest)?;
    }
    let wrapper = program.rsplit('/').next().unwrap_or(program);
    if !REMOTE_WRAPPERS.contains(&wrapper) {
        return None;
    }
    let mut serial = "";
    let mut place = None;
    let mut runs = !matches!(wrapper, "docker" | "podman" | "kubectl");
    while let Some((word, after)) = next_word(rest) {
        let from_word = rest;
        rest = after;
        if word == "--" {
            break;
        }
        if word.starts_with('-') {
            if REMOTE_OPTIONS_WITH_VALUES.contains(&word) {
                let (value, after) = next_word(rest)?;
                if word == "-s" {
                    serial = value;
                }
                rest = after;
            }
            continue;
        }
        match (wrapper, runs) {
            // A container or pod's command comes after `exec` (`docker compose exec web …`).
            (_, false) if word == "exec" => runs = true,
            (_, false) if word == "compose" => {}
            (_, false) => return None,
            // adb's device is its `-s` serial; its subcommand what it runs (`shell` runs the
            // command after it).
            ("adb", _) => {
                place = Some(serial);
                if word != "shell" {
                    rest = from_word;
                }
                break;
            }
            _ => {
                place = Some(word);
                // kubectl's command is what follows `--`.
                if wrapper == "kubectl" {
                    rest = rest.split_once(" -- ").map_or("", |(_, command)| command);
                }
                break;
            }
        }
    }
    let command = rest.trim();
    let command = ["'", "\""]
        .iter()
        .find_map(|quote| command.strip_prefix(quote)?.strip_suffix(quote))
        .unwrap_or(command)
        .trim();
    let wrapper = if wrapper == "podman" { "docker" } else { wrapper };
    let place = place?;
    (!command.is_empty()).then(|| (format!("{wrapper}:{place}"), command.to_owned()))
}

/// A remote run's program (`ssh:pg-replica-2 pg_dump analytics`, [`remote_run`]) as where it ran
/// and what it runs there.
fn remote_program(program: &str) -> Option<(&str, &str)> {
    let (place, inner) = program.split_once(' ')?;
    place
        .split_once(':')
        .is_some_and(|(wrapper, _)| REMOTE_WRAPPERS.contains(&wrapper))
        .then_some((place, inner))
}

/// `keys` (`tool\0program`) as run at `place`: `tool\0place program`.
fn run_at(place: &str, keys: Vec<String>) -> Vec<String> {
    keys.into_iter()
        .map(|key| match key.split_once('\u{0}') {
            Some((tool, program)) => format!("{tool}\u{0}{place} {program}"),
            None => key,
        })
        .collect()
}

/// `command`'s pipelines, `;` between them however they were chained (`&&`, `||`, `;`).
fn pipelines(command: &str) -> String {
    command.replace("&&", ";").replace("||", ";")
}

/// The parts of `text` between the `separator`s outside quotes: a query's `|=` inside quotes
/// (`logcli query '{app="api"} |= "500"'`) is no pipe.
fn unquoted_parts(text: &str, separator: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (at, byte) in text.bytes().enumerate() {
        match (quote, byte) {
            (None, b'\'' | b'"') => quote = Some(byte),
            (Some(open), _) if byte == open => quote = None,
            (None, _) if byte == separator => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    // An unclosed quote is an apostrophe (`echo it's done && make`): split as if none were quoted.
    if quote.is_some() {
        return text.split(char::from(separator)).collect();
    }
    parts.push(&text[start..]);
    parts
}

/// Whether an action's key (`tool\0program`, [`action_keys`]) runs a command whose effect
/// outlives the session and must not be repeated: a publish, a push, a deploy, an apply
/// (`twine upload`, `git push`, `gh release create`, `kubectl apply`, `terraform apply`).
pub(super) fn publishes(key: &str) -> bool {
    let program = key.rsplit('\0').next().unwrap_or(key);
    // What runs on another host publishes as it does here (`ssh deploy-1 'git push'`).
    let program = remote_program(program).map_or(program, |(_, program)| program);
    let mut words = program.split_whitespace();
    let (Some(first), second) = (words.next(), words.next()) else {
        return false;
    };
    let first = first.rsplit('/').next().unwrap_or(first);
    matches!(
        (first, second),
        ("twine", Some("upload"))
            | (
                "npm" | "pnpm" | "yarn" | "cargo" | "poetry" | "gem" | "uv",
                Some("publish")
            )
            | ("git", Some("push"))
            | ("docker" | "podman", Some("push"))
            | (
                "kubectl",
                Some("apply" | "rollout" | "scale" | "delete" | "patch")
            )
            | ("helm", Some("upgrade" | "install" | "rollback" | "uninstall"))
            | ("terraform" | "tofu", Some("apply" | "destroy" | "import"))
            | ("fly" | "flyctl" | "vercel" | "netlify", Some("deploy"))
    ) || matches!(
        (first, second, words.next()),
        (
            "gh" | "glab",
            Some("release" | "pr" | "mr"),
            Some("create" | "merge")
        ) | (
            "aws" | "gcloud" | "az",
            _,
            Some("deploy" | "update-service" | "publish")
        )
    )
}

/// Programs a pipeline passes another's output through: what ran is the program before them.
const PIPE_FILTERS: &[&str] = &[
    "tail", "head", "grep", "egrep", "fgrep", "rg", "sort", "uniq", "wc", "cat", "tee", "less", "more",
    "cut", "tr", "sed", "awk", "jq", "column", "nl", "fold",
];

/// Options that take the next word as their value, where a command's options come before what
/// it runs: `pnpm --filter @acme/worker test`, `kubectl -n prod get pods`, `git -C repo status`.
const OPTIONS_WITH_VALUES: &[&str] = &[
    "--filter",
    "-F",
    "--prefix",
    "-C",
    "--dir",
    "--cwd",
    "--workspace",
    "-w",
    "--project",
    "--package",
    "-p",
    "--manifest-path",
    "-f",
    "--file",
    "-n",
    "--namespace",
    "--context",
    "--kubeconfig",
    "--region",
    "--profile",
    "--chdir",
    "--config",
];

/// The program a command runs, for telling a retry: its first two words that are neither options
/// nor an option's value (`python -m pytest -q tests/x.py` and `python -m pytest` are both
/// `python pytest`; `pnpm --filter @acme/worker test` is `pnpm test`), three for a command whose
/// second word says little (`npm run build`, `aws iam put-role-policy`, `gh pr checks`).
fn program_of(command: &str) -> String {
    // An interpreter given its script inline (`python - <<'PY' …`, `node -e '…'`) runs that
    // script: only the same script retries it (verify20: a `print(len(X))` cell "passed" a
    // failed one that wrote the features).
    if runs_inline_script(command) {
        return inline_script_key(command);
    }
    let mut words = Vec::with_capacity(3);
    let mut value_next = false;
    for word in command.split_whitespace() {
        if std::mem::take(&mut value_next) {
            continue;
        }
        if word.starts_with('-') {
            // A wrapper's user or group (`sudo -u postgres pg_dump`, `env -u HOME make`) is no
            // program either.
            value_next =
                OPTIONS_WITH_VALUES.contains(&word) || (words.is_empty() && matches!(word, "-u" | "-g"));
            continue;
        }
        // `SQLX_OFFLINE=true cargo check` runs cargo: the environment it is given is no program.
        // Nor is a wrapper that runs the command it is given (verify38: `time alembic upgrade
        // head` passing did not settle `alembic upgrade head`), nor `timeout`'s duration.
        if words.is_empty() && (is_env_assignment(word) || COMMAND_WRAPPERS.contains(&word)) {
            value_next = word == "timeout";
            continue;
        }
        words.push(word);
        let wanted = match words.as_slice() {
            [program, ..] if SERVICE_CLIS.contains(program) => 3,
            [_, runner, ..] if RUNNERS.contains(runner) => 3,
            _ => 2,
        };
        if words.len() >= wanted {
            break;
        }
    }
    // A wrapper run alone (`env`, `time`) is its own program.
    if words.is_empty() {
        return command.split_whitespace().next().unwrap_or_default().to_owned();
    }
    words.join(" ")
}

/// Programs that run the command after them, whose program is that command's.
const COMMAND_WRAPPERS: [&str; 9] = [
    "time", "nice", "nohup", "env", "sudo", "stdbuf", "timeout", "command", "exec",
];

/// Whether `word` sets an environment variable for the command after it (`RUST_LOG=debug`).
fn is_env_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// The keys of the compiler whose diagnostic a failure's error line is, whatever command printed
/// it (`src/x.ts(19,7): error TS2345: …` is tsc's, `error[E0308]` rustc's through cargo), `key`
/// being one of the failure's own: a later success of that compiler fixed it (verify41: a `git
/// apply` printing a tsc error stayed blocked after `pnpm exec tsc --noEmit` passed).
pub(super) fn keys_of_the_compiler(key: &str, error: &str) -> Vec<String> {
    let Some((tool, _)) = key.split_once('\u{0}') else {
        return Vec::new();
    };
    let programs: &[&str] = if error
        .match_indices("error TS")
        .any(|(at, found)| error[at + found.len()..].starts_with(|c: char| c.is_ascii_digit()))
    {
        &[
            "tsc",
            "npx tsc",
            "pnpm exec tsc",
            "pnpm tsc",
            "yarn tsc",
            "yarn exec tsc",
        ]
    } else if error.contains("error[E") {
        &["cargo check", "cargo build", "cargo test", "cargo clippy"]
    } else {
        &[]
    };
    programs
        .iter()
        .map(|program| format!("{tool}\u{0}{program}"))
        .collect()
}

/// The keys of other programs a success of the program keyed `key` shows to pass: a toolchain's
/// commands that compile the code before they do more (`cargo clippy` and `cargo test` compile
/// what `cargo check` does; `go test` builds what `go build` does). A failure of those is fixed
/// once one of them passes (verify22: `cargo check … -> exit 101 — error[E0308]` stood under
/// Blocked after `cargo clippy` and `cargo test` of the same workspace passed).
pub(super) fn keys_a_success_settles(key: &str) -> Vec<String> {
    let Some((tool, program)) = key.split_once('\u{0}') else {
        return Vec::new();
    };
    // On another host, what it settles there.
    if let Some((place, program)) = remote_program(program) {
        return run_at(place, keys_a_success_settles(&format!("{tool}\u{0}{program}")));
    }
    let runner = program.split(' ').next().unwrap_or(program);
    let settled: &[&str] = match (program, runner) {
        ("cargo build" | "cargo clippy", _) => &["cargo check"],
        // nextest runs the tests `cargo test` runs (verify37: a panic fixed under `cargo nextest
        // run -p ingest` stayed blocked as `cargo test -p ingest`).
        ("cargo test", _) => &["cargo check", "cargo build", "cargo nextest"],
        ("cargo nextest", _) => &["cargo check", "cargo build", "cargo test"],
        ("cargo run", _) => &["cargo check", "cargo build"],
        ("go test" | "go run", _) => &["go build"],
        // tox and nox run the suite through pytest, as `python -m pytest` does: the whole suite
        // passing settles a selection of it that failed (`broader_keys`; verify33: `pytest -k
        // test_apply_coupon_rounding` failing, then `tox -e py311` green).
        (_, "tox" | "nox") | ("python pytest" | "python3 pytest", _) => &["pytest"],
        // golangci-lint runs govet among its linters.
        (_, "golangci-lint") => &["go vet"],
        _ => &[],
    };
    let mut keys: Vec<String> = settled
        .iter()
        .map(|program| format!("{tool}\u{0}{program}"))
        .collect();
    // A task runner's target and the tool's command of that name settle each other: `make test`
    // passing settles a failed `go test ./pkg/parser -run TestParseEvent`, `terraform apply
    // managed.tfplan` passing a failed `make apply` (`broader_keys`; verify33, verify34). So does
    // a package manager's script for the others' (`npm test` after `pnpm --filter api test`).
    if let Some((_, target)) = program.rsplit_once(' ') {
        keys.push(if TASK_RUNNERS.contains(&runner) {
            target_passed(tool, target)
        } else {
            tool_passed(tool, target)
        });
        if JS_MANAGERS.contains(&runner) {
            keys.push(format!("{tool}\u{0}js {target}"));
        }
    }
    // A package's binary run through its manager is the same binary however it is asked for:
    // `pnpm --filter web exec tsc` passing settles `pnpm --filter web tsc` (verify26: a fixed
    // type error stayed blocked).
    let binary = program
        .strip_prefix("pnpm exec ")
        .or_else(|| program.strip_prefix("yarn exec "))
        .or_else(|| program.strip_prefix("npx "))
        .or_else(|| program.strip_prefix("pnpm "))
        .or_else(|| program.strip_prefix("yarn "));
    if let Some(binary) = binary.filter(|binary| !binary.contains(' ')) {
        let own_form = &program[..program.len() - binary.len() - 1];
        for form in ["pnpm exec", "yarn exec", "npx", "pnpm", "yarn"] {
            if form != own_form {
                keys.push(format!("{tool}\u{0}{form} {binary}"));
            }
        }
    }
    keys
}

/// Where a command that moves one file (`git mv src/a.py src/b.py`, `mv a b`) puts it: its last
/// step's destination, when it names one source and one destination.
fn moved_to(command: &str) -> Option<&str> {
    let step = command.rsplit(['&', ';', '|', '\n']).next()?.trim();
    let rest = step
        .strip_prefix("git mv ")
        .or_else(|| step.strip_prefix("mv "))?;
    let operands: Vec<&str> = rest
        .split_whitespace()
        .filter(|word| !word.starts_with('-'))
        .collect();
    match operands.as_slice() {
        // A file's name, not a directory's (`git mv a.py src`).
        [_, to] => Some(to.trim_matches(|c| matches!(c, '\'' | '"'))).filter(|to| {
            to.rsplit('/')
                .next()
                .is_some_and(|name| name.contains('.') && !name.starts_with('.'))
        }),
        _ => None,
    }
}

/// The files the steps of `command` edit in place: `sed -i 's/a/b/' src/x.rs`, `sed -i.bak -e …
/// f`, `perl -pi -e 's/a/b/' f g`. A script given as an operand (`sed -i SCRIPT f`) is no file.
fn edited_in_place(command: &str) -> Vec<String> {
    if !(command.contains("sed ") || command.contains("perl ")) || !command.contains("-") {
        return Vec::new();
    }
    let Some(words) = shlex::split(command) else {
        return Vec::new();
    };
    // `cd api; sed -i …`: the shell ends a step at a `;` that touches the word before it.
    let words: Vec<String> = words
        .into_iter()
        .flat_map(|word| match word.strip_suffix(';') {
            Some(before) if !before.is_empty() => vec![before.to_owned(), ";".to_owned()],
            _ => vec![word],
        })
        .collect();
    let mut files = Vec::new();
    // The folder a `cd` earlier in the chain went to: `cd api && sed -i … Dockerfile` changes
    // `api/Dockerfile`, where a repository holds several (verify48).
    let mut folder: Option<String> = None;
    for step in words.split(|word| matches!(word.as_str(), "&&" | "||" | ";" | "|")) {
        let step = match step {
            [sudo, rest @ ..] if sudo == "sudo" => rest,
            step => step,
        };
        let Some((program, words)) = step.split_first() else {
            continue;
        };
        if program == "cd" {
            folder = match (words, folder.take()) {
                // Where `~`, `..` or `-` lead is not known here.
                ([to], _) if to.starts_with('~') || to.contains("..") || to == "-" => None,
                ([to], _) if to.starts_with('/') => Some(to.trim_end_matches('/').to_owned()),
                ([to], None) => Some(to.trim_end_matches('/').to_owned()),
                ([to], Some(from)) => Some(format!("{from}/{}", to.trim_end_matches('/'))),
                _ => None,
            };
            continue;
        }
        let program = program.rsplit('/').next().unwrap_or(program);
        if !matches!(program, "sed" | "gsed" | "perl") {
            continue;
        }
        let mut in_place = false;
        let mut script_given = false;
        let mut takes_next = false;
        let mut operands = Vec::new();
        for word in words {
            if std::mem::take(&mut takes_next) {
                continue;
            }
            if let Some(long) = word.strip_prefix("--") {
                in_place |= long == "in-place" || long.starts_with("in-place=");
                if matches!(long, "expression" | "file") {
                    script_given = true;
                    takes_next = true;
                }
                script_given |= long.starts_with("expression=") || long.starts_with("file=");
                continue;
            }
            match word.strip_prefix('-').filter(|flags| !flags.is_empty()) {
                Some(flags) => {
                    // `-i` takes its backup suffix in the same word (`-i.bak`): the letters
                    // before it are flags.
                    let letters: &str = flags.split('.').next().unwrap_or(flags);
                    in_place |= letters.contains('i');
                    // `-e SCRIPT` (perl's `-pe`, sed's `-e`) and `-f FILE` take the next word.
                    if letters.ends_with('e') || letters.ends_with('f') {
                        script_given = true;
                        takes_next = true;
                    }
                }
                // macOS's `sed -i '' SCRIPT f`: the empty backup suffix.
                None if word.is_empty() => {}
                None => operands.push(word),
            }
        }
        if !in_place {
            continue;
        }
        let files_from = usize::from(!script_given);
        files.extend(
            operands
                .into_iter()
                .skip(files_from)
                .filter(|file| !file.contains(['*', '?', '$']) && file.as_str() != "-")
                .map(|file| match &folder {
                    Some(folder) if !file.starts_with('/') => {
                        format!("{folder}/{}", file.trim_start_matches("./"))
                    }
                    _ => file.clone(),
                }),
        );
    }
    files
}

/// Programs that run a target a project names (`make apply`, `just test`).
const TASK_RUNNERS: &[&str] = &["make", "just", "task"];

/// Test runners given a selection as their second word (`pytest tests/test_orders.py::test_x`,
/// `rspec spec/models/order_spec.rb`).
const TEST_RUNNERS: &[&str] = &["pytest", "rspec", "jest", "phpunit", "mocha"];

/// Package managers that run a project's scripts (`npm test`, `pnpm run lint`).
const JS_MANAGERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// The keys under which a success also settles the failure keyed `key`, besides its own: the
/// whole suite a test runner's selection is part of (`pytest tests/x.py` → `pytest`), a task
/// runner's target of the same name (`go test` → any `make test`) or, for a target, the tool's
/// command of its name (`make apply` → any `terraform apply`), and the package managers' script
/// of that name (`pnpm test`, a `vitest` run → any `npm test`). The suite passing passes
/// the tests it selects; the project's own target runs them.
pub(super) fn broader_keys(key: &str) -> Vec<String> {
    let Some((tool, program)) = key.split_once('\u{0}') else {
        return Vec::new();
    };
    // On another host, the suite or target that runs it there.
    if let Some((place, program)) = remote_program(program) {
        return run_at(place, broader_keys(&format!("{tool}\u{0}{program}")));
    }
    // A test runner given options alone (`pytest -k spring`) runs part of the suite too.
    if TEST_RUNNERS.contains(&program) {
        return vec![target_passed(tool, "test")];
    }
    // A program of one word names no target.
    let (Some((first, _)), Some((_, target))) = (program.split_once(' '), program.rsplit_once(' ')) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    // `python -m pytest …` is pytest: tox, nox or pytest passing settles it (verify37: `python -m
    // pytest tests/unit/test_tz.py` stayed blocked after `tox -e py312` passed).
    if matches!(program, "python pytest" | "python3 pytest") {
        keys.push(format!("{tool}\u{0}pytest"));
        keys.push(target_passed(tool, "test"));
    }
    if TEST_RUNNERS.contains(&first) {
        keys.push(format!("{tool}\u{0}{first}"));
        // A test runner's selection is part of the suite the project's `make test` runs
        // (verify37: `pytest tests/unit/test_tz.py` failing, then `make test` green).
        keys.push(target_passed(tool, "test"));
    }
    if program == "cargo nextest" {
        keys.push(target_passed(tool, "test"));
    }
    keys.push(if TASK_RUNNERS.contains(&first) {
        tool_passed(tool, target)
    } else {
        target_passed(tool, target)
    });
    if JS_MANAGERS.contains(&first) {
        keys.push(format!("{tool}\u{0}js {target}"));
    }
    if program.split(' ').any(|word| matches!(word, "vitest" | "jest")) {
        keys.push(format!("{tool}\u{0}js test"));
        keys.push(target_passed(tool, "test"));
    }
    keys
}

/// The key a task runner's target `target` passing leaves (`make test`): a tool's run of it that
/// failed (`go test …`) is settled.
fn target_passed(tool: &str, target: &str) -> String {
    format!("{tool}\u{0}* {target}")
}

/// The key a tool's `target` passing leaves (`terraform apply …`): the task runner's target of
/// that name that failed (`make apply`) is settled.
fn tool_passed(tool: &str, target: &str) -> String {
    format!("{tool}\u{0}{target} *")
}

/// Words of the programs whose success settles a failure keyed `key`: its own program's, and
/// those of the commands that run a suite, a target or a linter it is part of.
pub(super) fn settling_words(key: &str) -> Vec<&str> {
    let program = key.split_once('\u{0}').map_or(key, |(_, program)| program);
    // A remote run's words are its wrapper's, its place's and its program's there.
    let (place, program) = remote_program(program).unwrap_or(("", program));
    let mut words: Vec<&str> = place
        .split(':')
        .filter(|word| !word.is_empty())
        .chain(program.split_whitespace())
        .collect();
    words.extend(TASK_RUNNERS);
    if program.starts_with("pytest") || program.ends_with(" pytest") {
        words.extend(["tox", "nox", "pytest"]);
    }
    if program.starts_with("cargo ") {
        words.push("nextest");
    }
    if program == "go vet" {
        words.push("golangci-lint");
    }
    if broader_keys(&format!("\u{0}{program}"))
        .iter()
        .any(|broader| broader.contains("\u{0}js "))
    {
        words.extend(JS_MANAGERS);
    }
    words
}

/// An inline script's key: its interpreter and its first statement (`python import lightgbm as
/// lgb`). A notebook's next cell that fixes a failed one opens as it did, and an unrelated one
/// (`print(len(X))`) does not: both were retries when the key was `python <<'PY'`, and neither
/// when it was the whole script (verify20, verify21).
fn inline_script_key(command: &str) -> String {
    let program = command.split_whitespace().next().unwrap_or("");
    let program = program.rsplit('/').next().unwrap_or(program);
    let script = match command.split_once('\n') {
        // A here document: its first line of code.
        Some((_, body)) if command.contains("<<") => body,
        // `-c '…'` or `-e "…"`: the quoted script.
        _ => command
            .split_once(" -c ")
            .or_else(|| command.split_once(" -e "))
            .map_or(command, |(_, script)| script.trim_start_matches(['\'', '"'])),
    };
    let first = script
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .unwrap_or("");
    let mut statements = first.split(';').map(str::trim);
    let statement = if DATABASE_CLIENTS.contains(&program) {
        // What a database client runs is its first statement past the session's set-up: `BEGIN;
        // CREATE INDEX CONCURRENTLY …` failing is retried by `SET statement_timeout = 0; CREATE
        // INDEX CONCURRENTLY …` (verify41).
        statements
            .find(|statement| {
                let lower = statement.to_ascii_lowercase();
                !statement.is_empty()
                    && !["begin", "set ", "start transaction", "commit", "\\"]
                        .iter()
                        .any(|setup| lower.starts_with(setup))
            })
            .unwrap_or(first)
    } else {
        statements.next().unwrap_or(first)
    };
    format!("{program} {}", statement.trim_end_matches(['"', '\'']).trim())
}

/// Whether `command` runs an interpreter or a database client on a script given inline: `-`,
/// `-c` or `-e`, or a here document.
fn runs_inline_script(command: &str) -> bool {
    const INTERPRETERS: [&str; 10] = [
        "python", "python3", "node", "ruby", "perl", "bash", "sh", "zsh", "deno", "php",
    ];
    let mut words = command.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    (INTERPRETERS.contains(&program) || DATABASE_CLIENTS.contains(&program))
        && (command.contains("<<") || words.any(|word| matches!(word, "-" | "-c" | "-e")))
}

/// Database clients that take their statements inline (`psql "$STAGING_RW" -c "SELECT …"`,
/// `mysql -e`): each runs its statement, and a `CREATE INDEX` passing did not retry a `SELECT
/// pg_stat_statements_reset()` denied (verify41: listed `passed on a later run`).
const DATABASE_CLIENTS: [&str; 4] = ["psql", "mysql", "mariadb", "duckdb"];

/// Programs whose second word is a service or a group, the third what is done to it.
const SERVICE_CLIS: &[&str] = &["aws", "gcloud", "az", "gh", "glab", "doctl", "flyctl"];
/// Second words that run what the third names: `npm run build`, `bundle exec rspec`, `docker
/// compose up`, `poetry run pytest`.
const RUNNERS: &[&str] = &["run", "exec", "compose", "x", "dlx"];

/// The stage of `chain` (its `&&` and `||` made `;`) that printed the output and gave the exit
/// code: of its last pipeline, the last program that is not a filter; of a command `ssh` runs on
/// another host, that command's (`ssh db-1 'sudo systemctl start pg && sudo tail -n 80 log'`
/// printed what `tail` read).
fn last_stage(chain: &str) -> &str {
    let pipeline = unquoted_parts(chain, b';').pop().unwrap_or(chain);
    let stages: Vec<&str> = unquoted_parts(pipeline, b'|');
    let is_filter = |stage: &&str| {
        stage
            .split_whitespace()
            .next()
            .is_some_and(|program| PIPE_FILTERS.contains(&program))
    };
    let last = stages
        .iter()
        .rev()
        .find(|stage| !is_filter(stage))
        .unwrap_or(&stages[0]);
    match remote_command(last) {
        Some(remote) => last_stage(remote),
        None => last,
    }
}

/// The quoted command of `ssh host '…'`, without its quotes.
fn remote_command(stage: &str) -> Option<&str> {
    let stage = stage.trim();
    if !stage.starts_with("ssh ") {
        return None;
    }
    let quote = stage
        .ends_with('\'')
        .then_some('\'')
        .or(stage.ends_with('"').then_some('"'))?;
    let open = stage.find(quote)?;
    (open + 1 < stage.len() - 1).then(|| &stage[open + 1..stage.len() - 1])
}

/// `run` on the words of the command `call` runs last (the last of a chain, which printed the
/// output and gave the exit code; of its pipeline, the last program that is not a filter: `pnpm
/// test 2>&1 | head -n 12` printed what `pnpm test` did, `cat app.log | grep ERROR` a file),
/// without its options, `sudo` or an `ssh` host; false for a call that runs no command.
fn last_step(call: Option<&ToolCall>, run: impl FnOnce(&[&str], &[&str]) -> bool) -> bool {
    let Some(command) = call.and_then(|call| {
        let arguments: Value = serde_json::from_str(&call.function.arguments).ok()?;
        command_under(arguments.as_object()?, &COMMAND_KEYS).map(|command| command.into_owned())
    }) else {
        return false;
    };
    let chain = pipelines(&command);
    let last = last_stage(&chain);
    let (options, mut words): (Vec<&str>, Vec<&str>) = last
        .split_whitespace()
        .map(|word| word.trim_matches(['\'', '"']))
        .filter(|word| !word.is_empty())
        .partition(|word| word.starts_with('-'));
    // What runs under `sudo`, on another host (`ssh api-2 'sudo tail -n 150 access.log'`), or
    // through a package runner (`uvx pip-audit`, `pipx run safety check`, `npx audit-ci`).
    loop {
        match words.as_slice() {
            ["sudo" | "uvx" | "npx" | "bunx", _, ..] => {
                words.remove(0);
            }
            ["pipx" | "uv" | "poetry" | "pdm" | "hatch", "run", _, ..] | ["pnpm" | "yarn", "dlx", _, ..] => {
                words.drain(..2);
            }
            ["ssh", _, _, ..] => {
                words.drain(..2);
            }
            _ => break,
        }
    }
    run(&words, &options)
}

/// What a command that ran without failing tells of a CI run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CiStep {
    /// Printed a run's log (`gh run view 123 --log-failed`, `glab ci trace`): its failures are
    /// the run's.
    ReadLog,
    /// Saw a run or a pull request's checks pass (`gh run watch 124 --exit-status`, `gh pr
    /// checks`, `gh run view 124`, its whole log or `gh run list` showing only passes,
    /// [`shows_ci_passed`]).
    Checked,
    #[default]
    Other,
}

/// What `call`, which did not fail, did with a CI run, by its last step and what it printed.
fn ci_step(call: Option<&ToolCall>, output: &str) -> CiStep {
    let mut step = CiStep::Other;
    // Every shell result is asked: its arguments are parsed only when they name a CI tool.
    let arguments = call.map_or("", |call| call.function.arguments.as_str());
    if !arguments.contains("gh ") && !arguments.contains("glab ") {
        return step;
    }
    last_step(call, |words, options| {
        let log = options.iter().find_map(|option| match option.split('=').next() {
            Some(log @ ("--log" | "--log-failed")) => Some(log),
            _ => None,
        });
        step = match (words, log) {
            // A whole log that shows every test passing (`599 passed`) is a run seen passing;
            // the failed jobs' log never is.
            (["gh", "run", "view", ..], Some("--log")) if shows_ci_passed(output) => CiStep::Checked,
            (["gh", "run", "view", ..], Some(_)) | (["glab", "ci", "trace", ..], _) => CiStep::ReadLog,
            // So is a list of runs that all succeeded (`gh run list --limit 1`: `completed
            // success …`; verify41).
            (
                ["gh", "run", "view" | "watch" | "list", ..]
                | ["gh", "pr", "checks", ..]
                | ["glab", "ci", "status" | "list", ..],
                _,
            ) if shows_ci_passed(output) => CiStep::Checked,
            _ => CiStep::Other,
        };
        true
    });
    step
}

/// Whether a CI tool's report shows every run or check passing: `✓ test in 2m31s`, `test pass
/// 2m31s`, `completed with 'success'`, and no `X test`, `fail` or `exit code 1`. `gh run view`
/// and `gh run watch` exit 0 on a failed run unless asked otherwise.
fn shows_ci_passed(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    let failed = output.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("X ") || line.starts_with('✗') || line.starts_with('×')
    }) || ["fail", "exit code 1", "cancelled", "error"]
        .iter()
        .any(|word| lower.contains(word));
    !failed && (output.contains('✓') || lower.contains("success") || lower.contains("pass"))
}

/// Whether `call` runs a command that prints what it reads (`tail -n 200 error.log`, `grep`,
/// `kubectl logs`): an error line in its output is what it read, not how it ended.
fn shows_content(call: Option<&ToolCall>) -> bool {
    last_step(call, |words, options| match words {
        [program, ..] if VIEWERS.contains(program) => true,
        // An option's value may come first: `kubectl -n prod logs api-0`.
        [program, rest @ ..] => {
            LOG_SUBCOMMANDS
                .iter()
                .any(|(known, sub)| known == program && rest.iter().take(2).any(|word| word == sub))
                || rest.iter().take(3).any(|word| names_logs(word))
                // `gh run view 9981122385 --log`: a CI run's log, its failed tests among its lines
                // (verify25: listed as Blocked where no exit code said otherwise).
                || options.iter().any(|option| {
                    matches!(option.split('=').next(), Some("--log" | "--logs" | "--log-failed"))
                })
        }
        _ => false,
    })
}

/// Whether a subcommand reads a service's logs: `aws logs tail`, `aws logs get-log-events`, `aws
/// rds download-db-log-file-portion`, `gcloud logging read` (verify17: a database's log of an
/// attacker's refused logins read as the download's failure).
fn names_logs(word: &str) -> bool {
    word == "logs" || word == "logging" || word.starts_with("log-") || word.contains("-log-")
}

/// Whether `call` runs, last, a command that asks a service for records (`firebase
/// crashlytics:issues:list`, `kubectl get events`, `asc review-submissions messages`, `sentry-cli
/// issues list`): what it prints are the records, errors among them.
fn queries(call: Option<&ToolCall>) -> bool {
    last_step(call, |words, _| {
        words.iter().skip(1).take(4).any(|word| {
            let verb = word.rsplit(':').next().unwrap_or(word);
            matches!(
                verb,
                "list" | "ls" | "get" | "describe" | "view" | "show" | "messages" | "events" | "status"
            )
        })
    })
}

/// Whether `call` runs, last, a command whose exit code `code` is an answer rather than a failure:
/// `diff`, `cmp` and `kubectl diff` found differences, `grep` found no line (1); `terraform plan
/// -detailed-exitcode` found changes to make (2; 1 is its error). A schema diff that found what
/// changed is work done, and listing it as Blocked told a model it had to be fixed (verify33:
/// a plan showing the drift to reconcile listed as Blocked).
fn exit_code_answers(call: Option<&ToolCall>, code: i64) -> bool {
    last_step(call, |words, options| match (code, words) {
        (1, [program, ..]) if ANSWER_BY_EXIT_ONE.contains(program) => true,
        (1, ["git", "diff", ..] | ["npm" | "pnpm" | "yarn" | "cargo" | "bun", "audit", ..]) => true,
        (1, ["yarn", "npm", "audit", ..] | ["bundle", "audit", ..] | ["cargo", "deny", ..]) => true,
        // `python -m pip_audit` is pip-audit.
        (1, ["python" | "python3", module, ..]) if options.contains(&"-m") => {
            ANSWER_BY_EXIT_ONE.contains(&module.replace('_', "-").as_str())
        }
        // Other codes for the same answer: govulncheck's 3, safety's 64 (verify40: a CVE audit's
        // scans listed as Blocked).
        (3, ["govulncheck", ..]) | (64, ["safety", ..]) => true,
        (2, ["terraform" | "tofu", "plan", ..]) => options.contains(&"-detailed-exitcode"),
        // `kubectl diff` found differences (the words after `kubectl` may hold an option's
        // value: `kubectl --context prod-eu1 diff -k …`; verify34).
        (1, ["kubectl", rest @ ..]) => rest.iter().take(3).any(|word| *word == "diff"),
        _ => false,
    })
}

/// Whether `call` fetches pages, whose text is what they say: a web tool (`web_extract`,
/// `WebFetch`, `browser`), or a command that runs `curl` or `wget` last.
fn fetches_pages(call: Option<&ToolCall>) -> bool {
    let Some(name) = call.map(|call| call.function.name.to_ascii_lowercase()) else {
        return false;
    };
    let arguments = call.map_or("", |call| call.function.arguments.as_str());
    ["fetch", "web", "browse", "scrape", "extract"]
        .iter()
        .any(|word| name.contains(word))
        // Every result is asked: its arguments are parsed only when they name a fetcher.
        || ((arguments.contains("curl") || arguments.contains("wget"))
            && last_step(call, |words, _| matches!(words, ["curl" | "wget", ..])))
}

/// Whether a fetcher says it failed (`curl: (6) Could not resolve host: …`, `wget: unable to
/// resolve host address`), which a page's own words never do.
fn fetch_failed(output: &str) -> bool {
    let first = output.trim_start();
    (first.starts_with("curl: (") && first[7..].starts_with(|c: char| c.is_ascii_digit()))
        || first.starts_with("wget: ")
}

/// Programs whose exit code 1 says what they found: POSIX `diff`, `cmp` and `grep`, and the
/// security scanners that exit 1 on findings (a review's `bandit -r app` listed as Blocked told a
/// model the scan had to be fixed, verify20).
const ANSWER_BY_EXIT_ONE: [&str; 24] = [
    "diff",
    "cmp",
    // `oasdiff breaking` exits 1 on the breaking changes it lists (verify26: a new major's
    // expected changes listed as Blocked).
    "oasdiff",
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "rg",
    "semgrep",
    "bandit",
    "pip-audit",
    "safety",
    "gitleaks",
    "trivy",
    "osv-scanner",
    "grype",
    "snyk",
    "bundle-audit",
    "bundler-audit",
    "checkov",
    "tfsec",
    "hadolint",
    "shellcheck",
    "audit-ci",
];

/// Programs that print what they read.
const VIEWERS: [&str; 17] = [
    // A fetched page's `Known limitation: … cannot …` is what it says, not how the fetch ended;
    // the fetcher's own failure names it (`curl: (6) Could not resolve host`).
    "curl",
    "wget",
    "cat",
    "tail",
    "head",
    "less",
    "more",
    "grep",
    "egrep",
    "zgrep",
    "rg",
    "ag",
    "zcat",
    "sed",
    "awk",
    "journalctl",
    // Grafana Loki's: `logcli query '{app="api"} |= "500"'` prints the log lines it matched.
    "logcli",
];

/// Subcommands that print logs.
const LOG_SUBCOMMANDS: [(&str, &str); 6] = [
    ("kubectl", "logs"),
    ("docker", "logs"),
    ("podman", "logs"),
    ("git", "log"),
    ("git", "show"),
    ("git", "grep"),
];

/// The exit code a stand-in line reports (`-> exit 1, …`).
pub(super) fn exit_code_in(line: &str) -> Option<i64> {
    let rest = line.rsplit_once("-> exit ")?.1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

/// Whether a non-shell tool's output opens with a failure. A JSON answer read as one says so by
/// its keys (the error it sets is a `Failure` already); only a longer one is judged by its start.
fn starts_with_failure(output: &str, answer: Option<&JsonAnswer>) -> bool {
    if let Some(answer) = answer {
        return answer.success == Some(Value::Bool(false));
    }
    let start: String = output.chars().take(200).collect::<String>().to_ascii_lowercase();
    let start = start.trim_start();
    start.starts_with("error")
        || start.starts_with("failed")
        || start.starts_with("exception")
        || sets_an_error(start)
        || start.contains("\"success\": false")
        || start.contains("\"success\":false")
}

/// Whether a JSON answer's start sets its `error` key: Hermes's `{"output": "…", "exit_code": 0,
/// "error": null}` sets none (verify17: every edit listed as Blocked).
fn sets_an_error(start: &str) -> bool {
    start.match_indices("\"error\":").any(|(at, key)| {
        let value = start[at + key.len()..].trim_start();
        !["null", "\"\"", "false", "[]", "{}"]
            .iter()
            .any(|none| value.starts_with(none))
    })
}

#[cfg(test)]
mod tests {
    use super::{edited_in_place, last_line, program_of};

    /// A wrapper's program is the command it runs; run alone, it is its own, not an empty one
    /// every other bare wrapper would share.
    #[test]
    fn a_wrapper_is_the_program_it_runs_or_its_own_alone() {
        assert_eq!(program_of("time alembic upgrade head"), "alembic upgrade");
        assert_eq!(program_of("timeout 600 pytest -x tests"), "pytest tests");
        assert_eq!(program_of("env"), "env");
        assert_eq!(program_of("time"), "time");
    }

    #[test]
    fn a_commands_last_line_is_read_as_its_output_reads() {
        assert_eq!(
            last_line("Sync Revision: d1a872f\nHealth Status: Healthy\n\n").as_deref(),
            Some("Health Status: Healthy")
        );
        assert_eq!(
            last_line(r#"{"output": "Release \"checkout-api\" upgraded\nREVISION: 49\n", "metadata": {"exit_code": 0}}"#)
                .as_deref(),
            Some("REVISION: 49")
        );
        // One line is the whole output, which the action line tells already; a long one says
        // too much for a hint.
        assert_eq!(last_line("ok"), None);
        assert_eq!(
            last_line("Release upgraded\nREVISION: 49\nExit code: 0").as_deref(),
            Some("REVISION: 49")
        );
        assert_eq!(last_line("REVISION: 49\n[exit code 0]"), None);
        assert_eq!(last_line("{\n  \"enabled\": false\n}"), None);
        assert_eq!(
            last_line("Sync Revision: d1a872f\nHealth Status:      Healthy").as_deref(),
            Some("Health Status: Healthy")
        );
        assert_eq!(last_line(&format!("a\n{}", "x".repeat(200))), None);
    }

    #[test]
    fn files_edited_in_place_are_the_operands_after_the_script() {
        for (command, files) in [
            (
                "sed -i 's/unwrap()/expect(\"tls handshake\")/g' crates/pgpool/src/net/tls.rs && grep -c expect crates/pgpool/src/net/tls.rs",
                &["crates/pgpool/src/net/tls.rs"][..],
            ),
            ("perl -pi -e 's/max_size: 32/max_size: 64/' crates/pgpool/src/config.rs", &["crates/pgpool/src/config.rs"]),
            ("sed -i.bak -e 's/a/b/' -e 's/c/d/' a.toml b.toml", &["a.toml", "b.toml"]),
            ("sed -i '' 's/a/b/' src/app.ts", &["src/app.ts"]),
            ("sudo sed --in-place=.orig 's/80/8080/' /etc/nginx/conf.d/app.conf", &["/etc/nginx/conf.d/app.conf"]),
            ("cd web && perl -i -pe 's/17/18/' package.json", &["web/package.json"]),
            ("cd services/ && cd api && sed -i 's/3.11/3.12/' Dockerfile ./requirements.txt", &["services/api/Dockerfile", "services/api/requirements.txt"]),
            ("cd /srv/app && sed -i 's/a/b/' app.conf", &["/srv/app/app.conf"]),
            ("cd ../web && sed -i 's/a/b/' app.conf", &["app.conf"]),
            ("cd api; sed -i 's/a/b/' app.toml; git diff", &["api/app.toml"]),
        ] {
            assert_eq!(edited_in_place(command), files, "{command}");
        }
        for command in [
            "sed -n '1,40p' src/lib.rs",
            "sed 's/a/b/' in.txt > out.txt",
            "perl -ne 'print if /ERROR/' app.log",
            "perl scripts/bump.pl Cargo.toml",
            "sed -i 's/a/b/' src/*.rs",
        ] {
            assert!(edited_in_place(command).is_empty(), "{command}");
        }
    }
}
