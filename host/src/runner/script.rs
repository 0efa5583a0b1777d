//! Scripted commands: what a person types in Hermes between turns, replayed at given points.
//!
//! A command comes two ways:
//! - a user message whose whole text (trimmed) is `/compress`, `/compress <focus>`, `/new`,
//!   `/reset` or `/engine NAME`: a command, not a message, so it never enters the context;
//! - `--at N:/compress[:focus]`, `--at N:/new`, `--at N:/reset`, `--at N:/engine:NAME`: run
//!   before transcript message `N`
//!   (0-based) is fed; an `N` at or past the transcript's end runs after its last message, and
//!   one aimed at a tool result runs once that tool turn is over (a person types between turns,
//!   never between a call and its result).
//!
//! What each does is the runner's business ([`super::Replayer::run_command`]).

use std::{fmt, str::FromStr};

use serde::Serialize;

/// A command a person types between turns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum SessionCommand {
    /// `/compress [focus]`: a manual compaction now.
    Compress {
        /// What the summary should spend its budget on.
        focus: Option<String>,
    },
    /// `/new`: a new session (a new id); the context restarts from the system message.
    New,
    /// `/reset`: the engine's per-session state is reset; the context restarts from the system
    /// message; the session id stays.
    Reset,
    /// `/engine NAME`: another engine takes over the context, live.
    Engine {
        /// The engine asked for, resolved like `context.engine`.
        name: String,
    },
}

impl SessionCommand {
    /// The command a message's whole text spells, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        match text {
            "/new" => return Some(Self::New),
            "/reset" => return Some(Self::Reset),
            _ => {}
        }
        if let Some(name) = text.strip_prefix("/engine") {
            // One word, as `context.engine` takes it: `/engine` alone or `/engines` is no command.
            let name = name.strip_prefix(char::is_whitespace)?.trim();
            return (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| Self::Engine {
                name: name.to_owned(),
            });
        }
        let rest = text.strip_prefix("/compress")?;
        if rest.is_empty() {
            return Some(Self::Compress { focus: None });
        }
        // `/compressor` is not `/compress`: the word must end there.
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        Some(Self::Compress {
            focus: Some(rest.trim().to_owned()),
        })
    }
}

/// Why `text` reads like a command that is not one, as far as a user typing it would expect it
/// to run: `/engine` with no name, or with more than one word.
pub fn malformed_command(text: &str) -> Option<&'static str> {
    let rest = text.trim().strip_prefix("/engine")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) || SessionCommand::parse(text).is_some() {
        return None;
    }
    Some(if rest.trim().is_empty() {
        "`/engine` names no engine"
    } else {
        "`/engine` takes one engine name"
    })
}

impl fmt::Display for SessionCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Compress { focus: None } => f.write_str("/compress"),
            Self::Compress { focus: Some(focus) } => write!(f, "/compress {focus}"),
            Self::New => f.write_str("/new"),
            Self::Reset => f.write_str("/reset"),
            Self::Engine { name } => write!(f, "/engine {name}"),
        }
    }
}

/// Where a command came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    /// A user message of the transcript.
    Message,
    /// `--at`.
    Flag,
}

/// A command given by flag: `N:/compress[:focus]`, `N:/new`, `N:/reset`, `N:/engine:NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptedCommand {
    /// Run before the transcript message of this 0-based index is fed.
    pub before_message: usize,
    /// What to run.
    pub command: SessionCommand,
}

impl FromStr for ScriptedCommand {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "expected N:/compress[:focus], N:/new, N:/reset or N:/engine:NAME (N: a transcript message index)";
        let (index, command) = text.split_once(':').ok_or_else(|| format!("`{text}`: {usage}"))?;
        let before_message = index
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{index}` is not a message index; {usage}"))?;
        // `/compress:focus` as the flag spells it, or `/compress focus` as a person types it.
        let command = match command.strip_prefix("/compress:") {
            Some(focus) if !focus.trim().is_empty() => SessionCommand::Compress {
                focus: Some(focus.trim().to_owned()),
            },
            Some(_) => SessionCommand::Compress { focus: None },
            None if command.starts_with("/engine:") => {
                let typed = command.replacen(':', " ", 1);
                SessionCommand::parse(&typed).ok_or_else(|| {
                    let why = malformed_command(&typed).unwrap_or("`/engine` takes one engine name");
                    format!("`{text}`: {why}; {usage}")
                })?
            }
            None => SessionCommand::parse(command).ok_or_else(|| format!("`{text}`: {usage}"))?,
        };
        Ok(Self {
            before_message,
            command,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn compress(focus: Option<&str>) -> SessionCommand {
        SessionCommand::Compress {
            focus: focus.map(str::to_owned),
        }
    }

    #[test]
    fn a_message_is_a_command_only_when_its_whole_text_is_one() {
        assert_eq!(SessionCommand::parse("/compress"), Some(compress(None)));
        assert_eq!(
            SessionCommand::parse("  /compress the coupon lookup \n"),
            Some(compress(Some("the coupon lookup")))
        );
        assert_eq!(SessionCommand::parse("/new"), Some(SessionCommand::New));
        assert_eq!(SessionCommand::parse("/reset\n"), Some(SessionCommand::Reset));
        assert_eq!(
            SessionCommand::parse("/engine masking"),
            Some(SessionCommand::Engine {
                name: "masking".into()
            })
        );
        for text in [
            "/compressor",
            "please /compress",
            "/new chat",
            "/resets",
            "/engine",
            "/engines lcm",
            "/engine two words",
            "compress",
            "",
        ] {
            assert_eq!(SessionCommand::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn only_an_engine_command_without_one_name_reads_as_a_malformed_command() {
        assert_eq!(malformed_command(" /engine "), Some("`/engine` names no engine"));
        assert_eq!(
            malformed_command("/engine two words"),
            Some("`/engine` takes one engine name")
        );
        for text in [
            "/engine masking",
            "/engines lcm",
            "/compress",
            "use /engine masking",
            "",
        ] {
            assert_eq!(malformed_command(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_flag_names_a_message_index_and_a_command() {
        let parse = |text: &str| text.parse::<ScriptedCommand>();
        assert_eq!(
            parse("12:/compress:auth flow"),
            Ok(ScriptedCommand {
                before_message: 12,
                command: compress(Some("auth flow")),
            })
        );
        assert_eq!(parse("0:/compress").unwrap().command, compress(None));
        assert_eq!(parse("3:/compress:").unwrap().command, compress(None));
        assert_eq!(parse("3:/compress auth").unwrap().command, compress(Some("auth")));
        assert_eq!(parse("7:/new").unwrap().command, SessionCommand::New);
        assert_eq!(parse("7:/reset").unwrap().command, SessionCommand::Reset);
        let masking = SessionCommand::Engine {
            name: "masking".into(),
        };
        assert_eq!(parse("20:/engine:masking").unwrap().command, masking);
        assert_eq!(parse("20:/engine masking").unwrap().command, masking);
        for bad in [
            "/compress",
            "x:/compress",
            "-1:/new",
            "4:/explode",
            "4:",
            "4:/engine:",
            "4:/engine",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_command_reads_back_as_typed() {
        assert_eq!(compress(Some("auth")).to_string(), "/compress auth");
        assert_eq!(SessionCommand::New.to_string(), "/new");
    }
}
