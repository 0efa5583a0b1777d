//! The JSON-RPC 2.0 envelope: requests, replies, errors and their codes, one JSON object a line.

use ctxhost_engine_abi::{EngineError, ErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{value::RawValue, Value};

/// The only `jsonrpc` value there is.
pub const JSONRPC: &str = "2.0";

/// The error codes a server answers with.
///
/// The first five are JSON-RPC's own; the others are this protocol's, in the range JSON-RPC
/// leaves to servers.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC 2.0 request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The method exists; its params are missing, of the wrong type, or impossible.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed on its own (a bug): the session is as it was before the call.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The engine returned an error or panicked; `data.kind` is its kind.
    pub const ENGINE_FAILED: i64 = -32001;
    /// The engine answered, but the answer breaks the contract (`data.kind` is `invalid_output`).
    pub const INVALID_OUTPUT: i64 = -32002;
    /// No open session has that id.
    pub const UNKNOWN_SESSION: i64 = -32003;
    /// A method other than `initialize` before the handshake.
    pub const NOT_INITIALIZED: i64 = -32004;
    /// The client's protocol version cannot talk to the server's; the server exits after saying so.
    pub const INCOMPATIBLE_VERSION: i64 = -32005;
    /// The session's config (file or inline) cannot be used.
    pub const CONFIG_ERROR: i64 = -32006;
    /// Something this server does not do (reserved for capabilities a server may lack).
    pub const UNSUPPORTED: i64 = -32007;
}

/// A request id: a number or a string (JSON-RPC also allows null, which this protocol refuses).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A number.
    Number(i64),
    /// A string.
    Text(String),
}

/// A request, as a server reads it: its params kept as JSON text, borrowed from the line, read
/// into their type by the method ([`Request::params`]).
#[derive(Debug)]
pub struct Request<'a> {
    /// Absent on a notification (no reply is sent).
    pub id: Option<Id>,
    /// The method.
    pub method: String,
    /// Its params, an object (absent for methods without any).
    pub params: Option<&'a RawValue>,
}

/// A request as a client writes it.
#[derive(Serialize)]
pub struct OutgoingRequest<'a, P: Serialize> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The id its reply will carry.
    pub id: &'a Id,
    /// The method.
    pub method: &'a str,
    /// Its params.
    pub params: &'a P,
}

impl<'a, P: Serialize> OutgoingRequest<'a, P> {
    /// A request with `id`.
    pub fn new(id: &'a Id, method: &'a str, params: &'a P) -> Self {
        Self {
            jsonrpc: JSONRPC,
            id,
            method,
            params,
        }
    }

    /// The request as one line of JSON, without its newline.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// The envelope's fields, read without reading the params.
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

impl<'a> Request<'a> {
    /// Reads one line as a request. A line that is not a request is refused with the error to
    /// send back, and the id when one could be read (JSON-RPC replies to an unreadable id with null).
    pub fn parse(line: &'a str) -> Result<Self, (Option<Id>, RpcError)> {
        let not_json = |error: serde_json::Error| {
            (
                None,
                RpcError::new(code::PARSE_ERROR, format!("not JSON: {error}")),
            )
        };
        if !line.trim_start().starts_with('{') {
            let value: Value = serde_json::from_str(line).map_err(not_json)?;
            let message = format!("a request is a JSON object, got {}", kind_of(&value));
            return Err((None, RpcError::new(code::INVALID_REQUEST, message)));
        }
        let envelope: Envelope = serde_json::from_str(line).map_err(not_json)?;
        let id = envelope
            .id
            .as_ref()
            .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok());
        let invalid = |message: String| (id.clone(), RpcError::new(code::INVALID_REQUEST, message));
        if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some(JSONRPC) {
            return Err(invalid(format!("`jsonrpc` must be \"{JSONRPC}\"")));
        }
        if envelope
            .id
            .as_ref()
            .is_some_and(|raw| id.is_none() || raw.is_null())
        {
            return Err(invalid("`id` must be a number or a string".to_owned()));
        }
        let method = match envelope.method {
            Some(Value::String(method)) => method,
            Some(other) => {
                return Err(invalid(format!(
                    "`method` must be a string, got {}",
                    kind_of(&other)
                )))
            }
            None => return Err(invalid("`method` is missing".to_owned())),
        };
        let params = match envelope.params {
            Some(raw) if raw.get() == "null" => None,
            Some(raw) if raw.get().starts_with('{') => Some(raw),
            Some(raw) => {
                let kind =
                    serde_json::from_str::<Value>(raw.get()).map_or("not JSON", |value| kind_of(&value));
                return Err(invalid(format!(
                    "`params` must be an object (named params), got {kind}"
                )));
            }
            None => None,
        };
        Ok(Self { id, method, params })
    }

    /// The params as `T` (which may borrow from the line); an error names the method and the
    /// field.
    pub fn params<T: Deserialize<'a>>(&self) -> Result<T, RpcError> {
        parse_params(&self.method, self.params.map_or("{}", RawValue::get))
    }
}

/// Reads `params` (JSON text) of `method` as `T`: an error names the method and the path of the
/// field that is wrong (`messages[3]: missing field `role``).
pub fn parse_params<'a, T: Deserialize<'a>>(method: &str, params: &'a str) -> Result<T, RpcError> {
    // Tracking the path costs on every field of a large context: it is paid only to word an
    // error, by reading the params a second time.
    if let Ok(parsed) = serde_json::from_str(params) {
        return Ok(parsed);
    }
    let mut deserializer = serde_json::Deserializer::from_str(params);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let at = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        RpcError::new(
            code::INVALID_PARAMS,
            format!(
                "invalid params for `{method}`: {at}{}",
                strip_position(&inner.to_string())
            ),
        )
    })
}

/// serde_json appends " at line L column C" to its messages; over the wire that is noise.
fn strip_position(message: &str) -> &str {
    message.rfind(" at line ").map_or(message, |at| &message[..at])
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A reply, as the server sends it: `result` or `error`, never both.
#[derive(Debug, Serialize, Deserialize)]
pub struct Response {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// The request's id; null when the request's could not be read.
    pub id: Option<Id>,
    /// What the method returned, as JSON text (`null` is a result, not an absent one).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub result: Option<Box<RawValue>>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    /// A successful reply.
    pub fn result(id: Option<Id>, result: Box<RawValue>) -> Self {
        Self {
            jsonrpc: JSONRPC.to_owned(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// A failed reply.
    pub fn error(id: Option<Id>, error: RpcError) -> Self {
        Self {
            jsonrpc: JSONRPC.to_owned(),
            id,
            result: None,
            error: Some(error),
        }
    }

    /// The reply as one line of JSON, without its newline.
    pub fn to_line(&self) -> String {
        // Every key is a string and every value came from JSON: this cannot fail.
        serde_json::to_string(self).expect("a reply serialises")
    }
}

/// A field that is there, even as `null`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(deserializer).map(Some)
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    /// One of [`code`].
    pub code: i64,
    /// One line, naming what failed and where.
    pub message: String,
    /// For engine failures: the engine, its method and the error's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<ErrorData>>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An engine's failure in `method`: code [`code::ENGINE_FAILED`], its kind in `data`.
    pub fn engine_failed(engine: &str, method: &str, error: &EngineError, message: String) -> Self {
        Self {
            code: code::ENGINE_FAILED,
            message,
            data: Some(Box::new(ErrorData {
                kind: kind_name(error.kind).into_owned(),
                engine: Some(engine.to_owned()),
                method: Some(method.to_owned()),
            })),
        }
    }

    /// An engine's answer that breaks the contract: code [`code::INVALID_OUTPUT`].
    pub fn invalid_output(engine: &str, method: &str, message: String) -> Self {
        Self {
            code: code::INVALID_OUTPUT,
            message,
            data: Some(Box::new(ErrorData {
                kind: INVALID_OUTPUT_KIND.to_owned(),
                engine: Some(engine.to_owned()),
                method: Some(method.to_owned()),
            })),
        }
    }

    /// The engine error this stands for, for a client that acts as an engine handle (process
    /// isolation): an engine failure keeps its kind; anything else is [`ErrorKind::OTHER`].
    pub fn to_engine_error(&self) -> EngineError {
        let kind = match (&self.data, self.code) {
            (Some(data), code::ENGINE_FAILED) => kind_from_name(&data.kind),
            _ => ErrorKind::OTHER,
        };
        EngineError::new(kind, self.message.clone())
    }
}

/// What an engine failure carries besides its message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorData {
    /// The engine error's kind: `other`, `panic`, `invalid_input`, `config`, `unavailable`,
    /// `unknown_method`, `kind_<n>` for a kind this version does not name; `invalid_output`
    /// when the host refused the engine's answer.
    pub kind: String,
    /// The engine's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The contract method that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// `data.kind` of an answer the host refused.
pub const INVALID_OUTPUT_KIND: &str = "invalid_output";

const KIND_NAMES: [(ErrorKind, &str); 6] = [
    (ErrorKind::OTHER, "other"),
    (ErrorKind::PANIC, "panic"),
    (ErrorKind::INVALID_INPUT, "invalid_input"),
    (ErrorKind::CONFIG, "config"),
    (ErrorKind::UNAVAILABLE, "unavailable"),
    (ErrorKind::UNKNOWN_METHOD, "unknown_method"),
];

/// The wire name of an engine error's kind.
pub fn kind_name(kind: ErrorKind) -> std::borrow::Cow<'static, str> {
    match KIND_NAMES.iter().find(|(known, _)| *known == kind) {
        Some((_, name)) => (*name).into(),
        // A newer engine's kind: the number survives the trip.
        None => format!("kind_{}", kind.0).into(),
    }
}

/// The kind a wire name stands for ([`ErrorKind::OTHER`] for a name this version does not know).
pub fn kind_from_name(name: &str) -> ErrorKind {
    if let Some((kind, _)) = KIND_NAMES.iter().find(|(_, known)| *known == name) {
        return *kind;
    }
    name.strip_prefix("kind_")
        .and_then(|number| number.parse().ok())
        .map_or(ErrorKind::OTHER, ErrorKind)
}

#[cfg(test)]
mod tests;
