//! `compress/unchecked`: the context handed to the engine as the JSON it came in, and the engine's
//! answer sent back as it wrote it, for a client that reads and checks it itself (the host's
//! handle on an isolated engine, which checks it as it does in process).
//!
//! - The server only makes sure the answer is JSON on one line (it goes into the reply's line).
//! - A session with observers gets the checked `compress` instead, so that they are told what
//!   the context became.
//! - The request carries the whole context, and is read in one pass, envelope and params
//!   together ([`read_request`]): the general way reads the params a second time.

use std::borrow::Cow;

use ctxhost_engine_abi::Message;
use ctxhost_protocol::{method, parse_params, CompressParams, Id, RpcError, Unchecked};
use serde::{
    de::{value::MapAccessDeserializer, Error as _, MapAccess, Visitor},
    Deserialize, Deserializer,
};
use serde_json::{value::RawValue, Value};

use super::{
    dispatch::{answer, compress, engine_error},
    session::LastContext,
    table::SessionTable,
};
use crate::engine::CompressCall;

/// `compress/unchecked` params: the messages kept as the JSON text they came in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UncheckedParams<'a> {
    session: String,
    #[serde(borrow)]
    messages: &'a RawValue,
    #[serde(default)]
    current_tokens: Option<u64>,
    #[serde(default, borrow)]
    focus_topic: Option<Cow<'a, str>>,
    /// Read for a session with observers, which gets the checked `compress`.
    #[serde(default)]
    user_message: Option<usize>,
}

/// A `compress/unchecked` request read in one pass.
#[derive(Deserialize)]
struct UncheckedRequest<'a> {
    #[serde(rename = "jsonrpc", deserialize_with = "json_rpc_2")]
    _jsonrpc: (),
    id: Id,
    #[serde(rename = "method", deserialize_with = "this_method")]
    _method: (),
    #[serde(borrow, deserialize_with = "object")]
    params: UncheckedParams<'a>,
}

/// `line` as a `compress/unchecked` request (with an id, for a reply), in one pass; `None` for
/// any other line, and for one that does not read that way (the general way then reads it and
/// words what is wrong). A line naming another method stops being read at its `method`, when that
/// comes before its params, as clients write it.
pub fn read_request(line: &str) -> Option<(Id, UncheckedParams<'_>)> {
    let request: UncheckedRequest<'_> = serde_json::from_str(line).ok()?;
    Some((request.id, request.params))
}

/// The params, from an object only (as the general way reads them), never from an array.
fn object<'de, D: Deserializer<'de>>(deserializer: D) -> Result<UncheckedParams<'de>, D::Error> {
    struct Object;
    impl<'de> Visitor<'de> for Object {
        type Value = UncheckedParams<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            UncheckedParams::deserialize(MapAccessDeserializer::new(map))
        }
    }
    deserializer.deserialize_map(Object)
}

fn json_rpc_2<'de, D: Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    match <Cow<'de, str>>::deserialize(deserializer)? {
        version if version == ctxhost_protocol::jsonrpc::JSONRPC => Ok(()),
        _ => Err(D::Error::custom("not JSON-RPC 2.0")),
    }
}

fn this_method<'de, D: Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    match <Cow<'de, str>>::deserialize(deserializer)? {
        name if name == method::COMPRESS_UNCHECKED => Ok(()),
        _ => Err(D::Error::custom("another method")),
    }
}

/// Runs `compress/unchecked` on its session.
pub fn compress_unchecked(
    params: UncheckedParams<'_>,
    table: &mut SessionTable,
) -> Result<Box<RawValue>, RpcError> {
    let session = table.get_mut(&params.session)?;
    let _session = super::in_session(&params.session);
    if !session.watch.is_empty() {
        let messages: Vec<Message> = parse_params(method::COMPRESS_UNCHECKED, params.messages.get())?;
        let checked = CompressParams {
            session: params.session,
            messages,
            current_tokens: params.current_tokens,
            focus_topic: params.focus_topic.map(Cow::into_owned),
            user_message: params.user_message,
        };
        let reply = compress(session, checked);
        session.watch.flush();
        return reply;
    }
    let call = CompressCall {
        current_tokens: params.current_tokens,
        focus_topic: params.focus_topic.as_deref(),
        user_message: None,
    };
    let written = session
        .engine
        .compress_json(params.messages.get(), &call)
        .map_err(engine_error)?;
    let messages = one_line_json(written).map_err(|problem| {
        let engine = session.engine.name();
        RpcError::invalid_output(
            engine,
            method::COMPRESS,
            format!("engine `{engine}` returned an invalid result from `compress`: {problem}"),
        )
    })?;
    let unchecked = Unchecked { messages };
    let reply = answer(session, &unchecked);
    session.last_messages = LastContext::Json(unchecked.messages);
    reply
}

/// `text` as JSON on one line: checked to be JSON, and written again without its line breaks
/// when it has any (an engine may pretty-print).
fn one_line_json(text: String) -> Result<Box<RawValue>, String> {
    let not_json = |error: serde_json::Error| format!("not a JSON array of messages: {error}");
    if !text.contains('\n') {
        return RawValue::from_string(text).map_err(not_json);
    }
    let value: Value = serde_json::from_str(&text).map_err(not_json)?;
    Ok(serde_json::value::to_raw_value(&value).expect("a JSON value serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchecked_answer_goes_back_on_one_line_and_one_that_is_not_json_is_refused() {
        let compact = r#"[{"role":"user","content":"a\nb"}]"#;
        assert_eq!(one_line_json(compact.to_owned()).unwrap().get(), compact);
        let pretty = "[\n  {\n    \"role\": \"user\",\n    \"content\": \"a\\nb\"\n  }\n]";
        assert_eq!(one_line_json(pretty.to_owned()).unwrap().get(), compact);
        let refused = one_line_json("[{\"role\":".to_owned()).unwrap_err();
        assert!(
            refused.starts_with("not a JSON array of messages: EOF while parsing"),
            "{refused}"
        );
    }

    #[test]
    fn only_a_compress_unchecked_request_reads_in_one_pass() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"compress/unchecked","params":{"session":"s1","current_tokens":9,"messages":[{"role":"user","content":"hi"}]}}"#;
        let (id, params) = read_request(line).unwrap();
        assert_eq!(id, Id::Number(7));
        assert_eq!(params.session, "s1");
        assert_eq!(params.current_tokens, Some(9));
        assert_eq!(params.messages.get(), r#"[{"role":"user","content":"hi"}]"#);
        for other in [
            line.replace("compress/unchecked", "compress"),
            line.replace("2.0", "1.0"),
            line.replace("\"id\":7,", ""),
            line.replace("\"id\":7", "\"id\":null"),
            line.replace("current_tokens", "surprise"),
            line.replace("\"messages\":", "\"messages\":7,\"x\":"),
            line.replace(
                r#"{"session":"s1","current_tokens":9,"messages":[{"role":"user","content":"hi"}]}"#,
                r#"["s1",[{"role":"user","content":"hi"}]]"#,
            ),
        ] {
            assert!(read_request(&other).is_none(), "{other}");
        }
    }
}
