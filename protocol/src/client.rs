//! The client end: one request written, its reply read, over any reader and writer.
//!
//! Blocking and single-threaded on purpose: a context engine is called from one place at a time
//! (the agent's loop), so a pipe to a child `ctxhost serve` needs no async runtime. Process
//! spawning, deadlines and restarts belong to the caller, who owns the child.

use std::io::{self, BufRead, Write};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use crate::{
    jsonrpc::{Id, OutgoingRequest, Response, RpcError},
    methods::{method, InitializeParams, Initialized},
    ProtocolVersion, PROTOCOL_VERSION,
};

/// Why a call got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Writing the request or reading the reply failed.
    #[error("the server's pipe failed: {0}")]
    Io(#[from] io::Error),
    /// The server closed its output before replying (it exited or crashed).
    #[error("the server closed the connection before replying to `{method}`")]
    Closed {
        /// The method that got no reply.
        method: String,
    },
    /// A line from the server is not a JSON-RPC reply (or not the reply to the request sent).
    #[error("the server's reply to `{method}` is malformed: {problem}")]
    Malformed {
        /// The method.
        method: String,
        /// What is wrong with the reply.
        problem: String,
    },
    /// A well-formed reply whose result is not of the expected shape: the server is alive and
    /// answered, but not with what the method returns.
    #[error("the server's reply to `{method}` is not of the expected shape: {problem}")]
    UnexpectedResult {
        /// The method.
        method: String,
        /// What is wrong with the result.
        problem: String,
    },
    /// The server answered with an error.
    #[error("`{method}` failed: {error}")]
    Rpc {
        /// The method.
        method: String,
        /// The server's error.
        error: RpcError,
    },
    /// The server speaks a protocol version this client cannot talk to.
    #[error("the server speaks protocol {server}, this client {client}: incompatible")]
    Incompatible {
        /// The server's version.
        server: ProtocolVersion,
        /// This client's.
        client: ProtocolVersion,
    },
}

/// A client over a reader of the server's output and a writer to its input.
pub struct Client<R, W> {
    reader: R,
    writer: W,
    next_id: i64,
    line: String,
}

impl<R: BufRead, W: Write> Client<R, W> {
    /// A client; call [`Client::initialize`] first.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader,
            writer,
            next_id: 1,
            line: String::new(),
        }
    }

    /// The handshake. A server of an incompatible version is refused here even if it did not
    /// refuse first (the rule is checked on both sides).
    pub fn initialize(&mut self, client_name: &str) -> Result<Initialized, ClientError> {
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client_name: client_name.to_owned(),
            client_version: None,
        };
        let initialized: Initialized = self.call(method::INITIALIZE, &params)?;
        if !PROTOCOL_VERSION.is_compatible_with(initialized.protocol_version) {
            return Err(ClientError::Incompatible {
                server: initialized.protocol_version,
                client: PROTOCOL_VERSION,
            });
        }
        Ok(initialized)
    }

    /// Sends `method` with `params` and reads its reply as `T`.
    pub fn call<P: Serialize, T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<T, ClientError> {
        let id = self.next_id();
        let mut line = OutgoingRequest::new(&id, method, params)
            .to_line()
            .map_err(|error| ClientError::Malformed {
                method: method.to_owned(),
                problem: format!("the params do not serialise: {error}"),
            })?;
        line.push('\n');
        self.writer.write_all(line.as_bytes())?;
        self.writer.flush()?;
        self.read_reply(method, &id)
    }

    /// Sends `method` with params already written as JSON text, in pieces written one after the
    /// other (an object's text once joined), and reads its reply as `T`. The text goes out as it
    /// is: it must be compact JSON (no line break), as `serde_json` writes it, or the server reads
    /// a broken line. For params holding a large piece of JSON the caller already has
    /// ([`crate::compress_params_around`]): it is written to the server, never copied.
    pub fn call_json<T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &[&str],
    ) -> Result<T, ClientError> {
        let id = self.next_id();
        // The envelope around the params, written as `OutgoingRequest` would write it.
        let head = OutgoingRequest::new(&id, method, &())
            .to_line()
            .expect("an id and a method serialise");
        let head = head.strip_suffix("null}").expect("the params are written last");
        self.writer.write_all(head.as_bytes())?;
        for piece in params {
            self.writer.write_all(piece.as_bytes())?;
        }
        self.writer.write_all(b"}\n")?;
        self.writer.flush()?;
        self.read_reply(method, &id)
    }

    /// Sends `method` with `params` and returns its result as JSON.
    pub fn call_value(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.call(method, &params)
    }

    fn next_id(&mut self) -> Id {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        id
    }

    /// Reads lines until the reply to `id`, and its result as `T`. A reply to another id is a
    /// protocol error: this client has one request in flight at a time.
    ///
    /// The reply is read into `T` in one pass over the line, as it comes; only a line that does
    /// not read that way is read again, to say what is wrong with it.
    fn read_reply<T: DeserializeOwned>(&mut self, method: &str, id: &Id) -> Result<T, ClientError> {
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Err(ClientError::Closed {
                    method: method.to_owned(),
                });
            }
            if self.line.trim().is_empty() {
                continue;
            }
            if let Ok(reply) = serde_json::from_str::<TypedResponse<T>>(&self.line) {
                if reply.id.as_ref() == Some(id) {
                    match (reply.result, reply.error) {
                        (_, Some(error)) => {
                            return Err(ClientError::Rpc {
                                method: method.to_owned(),
                                error,
                            })
                        }
                        (Some(result), None) => return Ok(result),
                        (None, None) => {}
                    }
                }
            }
            return Err(explain_reply::<T>(method, id, self.line.trim()));
        }
    }
    /// The reader and writer back, e.g. to close the server's input.
    pub fn into_inner(self) -> (R, W) {
        (self.reader, self.writer)
    }
}

/// A reply read straight into the result's type.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: DeserializeOwned"))]
struct TypedResponse<T> {
    id: Option<Id>,
    #[serde(default = "none", deserialize_with = "present")]
    result: Option<T>,
    #[serde(default)]
    error: Option<RpcError>,
}

fn none<T>() -> Option<T> {
    None
}

/// A field that is there, even as `null` (a result of `()` is `null`).
fn present<'de, D: serde::Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// Why `text`, which did not read as the reply to `id` with a result of the expected type, is
/// not that reply: the error [`Client::call`] returns for it.
fn explain_reply<T: DeserializeOwned>(method: &str, id: &Id, text: &str) -> ClientError {
    let malformed = |problem: String| ClientError::Malformed {
        method: method.to_owned(),
        problem,
    };
    let response: Response = match serde_json::from_str(text) {
        Ok(response) => response,
        Err(error) => return malformed(format!("not a JSON-RPC reply ({error}): {}", clip(text))),
    };
    match &response.id {
        Some(got) if got == id => {}
        // A server that could not read the request's id answers with null.
        None if response.error.is_some() => {}
        other => return malformed(format!("a reply to id {other:?}, expected {id:?}")),
    }
    match (response.result, response.error) {
        (_, Some(error)) => ClientError::Rpc {
            method: method.to_owned(),
            error,
        },
        (Some(result), None) => ClientError::UnexpectedResult {
            method: method.to_owned(),
            problem: serde_json::from_str::<T>(result.get()).err().map_or_else(
                || "the reply does not read in one pass".to_owned(),
                |error| error.to_string(),
            ),
        },
        (None, None) => malformed("neither `result` nor `error`".to_owned()),
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
