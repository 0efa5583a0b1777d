//! The boundary guard: turns any [`Engine`] into an [`EngineBox`] whose every method catches
//! panics and speaks JSON.
//!
//! A panic that unwinds into an `extern "C"` frame aborts the whole process (abi_stable prints
//! "Attempted to panic across the ffi boundary"), so every method body runs under `catch_unwind`
//! here, once, and engine authors cannot forget it.

use std::{
    any::Any,
    cell::RefCell,
    panic::{self, AssertUnwindSafe},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RStr, RString},
};
use serde_json::Value;

use crate::{
    ffi::{Counters, EngineBox, EngineError, EngineObject, EngineObject_TO, ErrorKind, HostBox, Usage},
    message::{messages_from_json, messages_to_json},
    observe::{Fact, RawFact, EXT_INTERESTS, EXT_OBSERVE, EXT_OBSERVE_IDLE},
    sdk::{CompressRequest, Engine, Host, ModelInfo, SessionInfo},
};

thread_local! {
    /// Where the last caught panic happened, recorded by the hook that `install_panic_hook` sets.
    static LAST_PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Creates engine `E` from its config block (JSON) and wraps it for the host.
///
/// The host calls this for engines it links statically; the export macro calls it for plugins.
/// A panic in `E::new` is an error, never an abort.
pub fn instantiate<E: Engine>(config: &str, host: HostBox) -> Result<EngineBox, EngineError> {
    let config: Value = if config.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(config)
            .map_err(|error| EngineError::config(format!("config is not valid JSON: {error}")))?
    };
    let host = Host::new(host);
    let engine = guard("new", || E::new(&config, host)).into_result()?;
    let guarded = Guarded {
        engine,
        context: ParsedContext::default(),
    };
    Ok(EngineObject_TO::from_value(guarded, TD_Opaque))
}

/// Makes panics inside this library record their location quietly instead of printing to the
/// host's stderr; the guard puts the location into the error it returns.
pub(crate) fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
        LAST_PANIC_LOCATION.with(|last| *last.borrow_mut() = location);
    }));
}

/// Runs `body`, turning a panic into an [`ErrorKind::PANIC`] error that names `method`.
pub(crate) fn guard<T>(
    method: &str,
    body: impl FnOnce() -> Result<T, EngineError>,
) -> RResult<T, EngineError> {
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result.into(),
        Err(payload) => {
            let location = LAST_PANIC_LOCATION.with(|last| last.borrow_mut().take());
            let at = location.map(|l| format!(" at {l}")).unwrap_or_default();
            let message = format!("`{method}` panicked{at}: {}", panic_message(payload.as_ref()));
            RResult::RErr(EngineError::new(ErrorKind::PANIC, message))
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "non-string panic payload"
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> Result<T, EngineError> {
    serde_json::from_str(json).map_err(|error| EngineError::invalid_input(format!("{what}: {error}")))
}

fn parse_messages(json: RStr<'_>) -> Result<Vec<crate::Message>, EngineError> {
    messages_from_json(json.as_str())
        .map_err(|error| EngineError::invalid_input(format!("messages: {error}")))
}

fn to_json(value: &Value) -> RString {
    RString::from(value.to_string())
}

/// `call_ext` for every engine the SDK wraps: the capability names the SDK itself answers
/// (`methods`, the observer's `observe` and `observe.interests`), then the engine's own.
pub(crate) fn call_ext_of<E: Engine>(
    engine: &mut E,
    method: &str,
    request: &Value,
) -> Result<Value, EngineError> {
    match method {
        "methods" => {
            let mut names = vec!["methods", EXT_OBSERVE, EXT_INTERESTS, EXT_OBSERVE_IDLE];
            names.extend(engine.ext_methods());
            Ok(serde_json::json!(names))
        }
        EXT_INTERESTS => Ok(serde_json::json!(engine.interests())),
        EXT_OBSERVE_IDLE => {
            engine.observe_idle()?;
            Ok(Value::Null)
        }
        EXT_OBSERVE => {
            let fact: Fact = serde_json::from_value(request.clone())
                .map_err(|error| EngineError::invalid_input(format!("fact: {error}")))?;
            engine.observe(&fact)?;
            Ok(Value::Null)
        }
        other => engine.call_ext(other, request),
    }
}

/// An engine behind the boundary.
struct Guarded<E> {
    engine: E,
    /// The last context the host sent or was answered, parsed: the host asks before every model
    /// call, and a context between compactions only grows.
    context: ParsedContext,
}

/// The messages of the last context seen, with its JSON.
///
/// Between compactions the host's context only grows by appending, so the JSON of the next call
/// starts with the JSON of the last one minus its closing `]`. Checking that prefix is a byte
/// comparison; parsing only the appended messages makes a preflight cost what the new messages
/// cost, not what the whole context costs (it was most of a replay's time).
#[derive(Default)]
struct ParsedContext {
    json: String,
    messages: Vec<crate::Message>,
}

impl ParsedContext {
    fn update(&mut self, json: &str) -> Result<&[crate::Message], EngineError> {
        match self.appended_part(json) {
            Some(tail) => {
                let new: Vec<crate::Message> = messages_from_json(&tail)
                    .map_err(|error| EngineError::invalid_input(format!("messages: {error}")))?;
                self.messages.extend(new);
            }
            None => self.messages = parse_messages(RStr::from(json))?,
        }
        self.json.clear();
        self.json.push_str(json);
        Ok(&self.messages)
    }

    /// Takes `messages`, written as `json`, as the last context seen.
    fn set(&mut self, json: String, messages: Vec<crate::Message>) {
        self.json = json;
        self.messages = messages;
    }

    /// The messages `json` adds to the last context, as a JSON array, when it only appends.
    fn appended_part(&self, json: &str) -> Option<String> {
        let kept = self.json.strip_suffix(']')?;
        let rest = json.strip_prefix(kept)?;
        if rest == "]" {
            return Some("[]".to_owned());
        }
        let items = if kept == "[" {
            rest
        } else {
            rest.strip_prefix(',')?
        };
        Some(format!("[{items}"))
    }
}

impl<E: Engine> EngineObject for Guarded<E> {
    fn counters(&self) -> RResult<Counters, EngineError> {
        guard("counters", || Ok(*self.engine.counters()))
    }

    fn update_from_response(&mut self, usage: Usage) -> RResult<(), EngineError> {
        guard("update_from_response", || {
            self.engine.update_from_response(&usage);
            Ok(())
        })
    }

    fn should_compress(&mut self, prompt_tokens: ROption<u64>) -> RResult<bool, EngineError> {
        guard("should_compress", || {
            Ok(self.engine.should_compress(prompt_tokens.into_option()))
        })
    }

    fn should_compress_preflight(&mut self, messages: RStr<'_>) -> RResult<bool, EngineError> {
        guard("should_compress_preflight", || {
            let messages = self.context.update(messages.as_str())?;
            Ok(self.engine.should_compress_preflight(messages))
        })
    }

    fn has_content_to_compress(&mut self, messages: RStr<'_>) -> RResult<bool, EngineError> {
        guard("has_content_to_compress", || {
            let messages = self.context.update(messages.as_str())?;
            Ok(self.engine.has_content_to_compress(messages))
        })
    }

    fn compress(
        &mut self,
        messages: RStr<'_>,
        current_tokens: ROption<u64>,
        focus_topic: ROption<RStr<'_>>,
    ) -> RResult<RString, EngineError> {
        guard("compress", || {
            let json = messages.as_str();
            let messages = self.context.update(json)?;
            let request = CompressRequest {
                current_tokens: current_tokens.into_option(),
                focus_topic: focus_topic.into_option().map(|focus| focus.as_str().to_owned()),
            };
            let compacted = self.engine.compress_borrowed(messages, &request)?;
            // Nothing compacted: the very text received goes back, which the host recognises
            // with a byte comparison instead of reading the whole context again.
            if compacted.as_slice() == messages {
                return Ok(RString::from(json));
            }
            let answer = messages_to_json(&compacted);
            // The host's next context starts with this one: the next call parses what it adds.
            self.context.set(answer.clone(), compacted);
            Ok(RString::from(answer))
        })
    }

    fn on_session_start(&mut self, session_id: RStr<'_>, info: RStr<'_>) -> RResult<(), EngineError> {
        guard("on_session_start", || {
            let info: SessionInfo = parse_json("session info", info.as_str())?;
            self.engine.on_session_start(session_id.as_str(), &info)
        })
    }

    fn on_session_end(&mut self, session_id: RStr<'_>, messages: RStr<'_>) -> RResult<(), EngineError> {
        guard("on_session_end", || {
            let messages = parse_messages(messages)?;
            self.engine.on_session_end(session_id.as_str(), &messages)
        })
    }

    fn on_session_reset(&mut self) -> RResult<(), EngineError> {
        guard("on_session_reset", || {
            self.engine.on_session_reset();
            Ok(())
        })
    }

    fn update_model(&mut self, model: RStr<'_>) -> RResult<(), EngineError> {
        guard("update_model", || {
            let model: ModelInfo = parse_json("model info", model.as_str())?;
            self.engine.update_model(&model);
            Ok(())
        })
    }

    fn get_tool_schemas(&self) -> RResult<RString, EngineError> {
        guard("get_tool_schemas", || {
            Ok(to_json(&Value::Array(self.engine.get_tool_schemas())))
        })
    }

    fn handle_tool_call(
        &mut self,
        name: RStr<'_>,
        arguments: RStr<'_>,
        messages: ROption<RStr<'_>>,
    ) -> RResult<RString, EngineError> {
        guard("handle_tool_call", || {
            let arguments: Value = match serde_json::from_str(arguments.as_str()) {
                Ok(arguments) => arguments,
                Err(error) => {
                    let answer =
                        serde_json::json!({ "error": format!("arguments are not valid JSON: {error}") });
                    return Ok(to_json(&answer));
                }
            };
            let messages = messages.into_option().map(parse_messages).transpose()?;
            let answer = self
                .engine
                .handle_tool_call(name.as_str(), &arguments, messages.as_deref());
            Ok(to_json(&answer))
        })
    }

    fn get_status(&self) -> RResult<RString, EngineError> {
        guard("get_status", || Ok(to_json(&self.engine.get_status())))
    }

    fn call_ext(&mut self, method: RStr<'_>, request: RStr<'_>) -> RResult<RString, EngineError> {
        // A panic names the extension method (`observe`), not the door it came through.
        guard(method.as_str(), || {
            // Facts come often and can be large: handed over as the JSON they are, never read
            // into a `Value` first (the engine reads them into a `Fact`, or only what it needs).
            if method.as_str() == EXT_OBSERVE {
                self.engine.observe_raw(&RawFact::new(request.as_str()))?;
                return Ok(RString::from("null"));
            }
            let request: Value = if request.trim().is_empty() {
                Value::Null
            } else {
                parse_json("request", request.as_str())?
            };
            Ok(to_json(&call_ext_of(
                &mut self.engine,
                method.as_str(),
                &request,
            )?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{messages_to_json, Message};

    /// Keeps the first message and the last two; a context of three or fewer it leaves alone.
    struct KeepsEnds(Counters);

    impl Engine for KeepsEnds {
        const NAME: &'static str = "keeps-ends";

        fn new(_: &Value, _: Host) -> Result<Self, EngineError> {
            Ok(Self(Counters::default()))
        }

        fn counters(&self) -> &Counters {
            &self.0
        }

        fn counters_mut(&mut self) -> &mut Counters {
            &mut self.0
        }

        fn compress(
            &mut self,
            mut messages: Vec<Message>,
            _: &CompressRequest,
        ) -> Result<Vec<Message>, EngineError> {
            if messages.len() > 3 {
                messages.drain(1..messages.len() - 2);
            }
            Ok(messages)
        }
    }

    fn compress(guarded: &mut Guarded<KeepsEnds>, json: &str) -> String {
        guarded
            .compress(RStr::from(json), ROption::RNone, ROption::RNone)
            .unwrap()
            .into_string()
    }

    #[test]
    fn an_unchanged_context_goes_back_as_the_text_received_and_a_compacted_one_is_remembered() {
        let mut guarded = Guarded {
            engine: KeepsEnds(Counters::default()),
            context: ParsedContext::default(),
        };
        // Spaces a serialiser would not write: only the text received gives them back.
        let short = r#"[ {"role": "system", "content": "s"}, {"role": "user", "content": "u"} ]"#;
        assert_eq!(compress(&mut guarded, short), short);

        let long: Vec<Message> = std::iter::once(Message::system("s"))
            .chain((0..4).map(|i| Message::user(format!("message {i}"))))
            .collect();
        let answer = compress(&mut guarded, &messages_to_json(&long));
        let kept = vec![long[0].clone(), long[3].clone(), long[4].clone()];
        assert_eq!(answer, messages_to_json(&kept));
        // The host's next context starts with the answer: only what it appends will be parsed.
        assert_eq!(guarded.context.json, answer);
        assert_eq!(guarded.context.messages, kept);
    }

    #[test]
    fn a_growing_context_is_parsed_once_and_any_other_one_in_full() {
        let mut parsed = ParsedContext::default();
        let mut context = vec![Message::system("s")];
        for step in 0..5 {
            let json = messages_to_json(&context);
            assert_eq!(parsed.update(&json).unwrap(), &context[..], "step {step}");
            context.push(Message::user(format!("message {step}")));
        }
        let same = messages_to_json(&context);
        assert_eq!(parsed.update(&same).unwrap(), &context[..]);
        assert_eq!(parsed.update(&same).unwrap(), &context[..], "unchanged");
        let compacted = vec![Message::system("s"), Message::user("[summary]")];
        assert_eq!(
            parsed.update(&messages_to_json(&compacted)).unwrap(),
            &compacted[..]
        );
        assert_eq!(parsed.update("[]").unwrap(), &[] as &[Message]);
        assert!(parsed.update("[{\"role\":7}]").is_err());
    }
}
