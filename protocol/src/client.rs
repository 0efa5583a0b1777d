//! The client end: one request written, its reply read, over any reader and writer.
//!
//! Blocking and single-threaded on purpose: a context engine is called from one place at a time
//! (the agent's loop), so a pipe to a child `ctxhost serve` needs no async runtime. Process
//! spawning, deadlines and restarts belong to the caller, who owns the child.

use std::io::{self, BufRead, Write};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{value::RawValue, Value};

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
    /// A line from the server is not a JSON-RPC reply, or the result is not of the expected shape.
    #[error("the server's reply to `{method}` is malformed: {problem}")]
    Malformed {
        /// The method.
        method: String,
        /// What is wrong with the reply.
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
        let result = self.call_raw(method, params)?;
        serde_json::from_str(result.get()).map_err(|error| ClientError::Malformed {
            method: method.to_owned(),
            problem: error.to_string(),
        })
    }

    /// Sends `method` with `params` and returns its result as JSON.
    pub fn call_value(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.call(method, &params)
    }

    /// Sends `method` with `params` and returns its result as JSON text.
    fn call_raw<P: Serialize>(&mut self, method: &str, params: &P) -> Result<Box<RawValue>, ClientError> {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        let mut line = OutgoingRequest::new(&id, method, params)
            .to_line()
            .map_err(|error| ClientError::Malformed {
                method: method.to_owned(),
                problem: format!("the params do not serialise: {error}"),
            })?;
        line.push('\n');
        self.writer.write_all(line.as_bytes())?;
        self.writer.flush()?;
        let response = self.read_reply(method, &id)?;
        match (response.result, response.error) {
            (_, Some(error)) => Err(ClientError::Rpc {
                method: method.to_owned(),
                error,
            }),
            (Some(result), None) => Ok(result),
            (None, None) => Err(ClientError::Malformed {
                method: method.to_owned(),
                problem: "neither `result` nor `error`".to_owned(),
            }),
        }
    }

    /// Reads lines until the reply to `id`. A reply to another id is a protocol error: this client
    /// has one request in flight at a time.
    fn read_reply(&mut self, method: &str, id: &Id) -> Result<Response, ClientError> {
        let malformed = |problem: String| ClientError::Malformed {
            method: method.to_owned(),
            problem,
        };
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Err(ClientError::Closed {
                    method: method.to_owned(),
                });
            }
            let text = self.line.trim();
            if text.is_empty() {
                continue;
            }
            let response: Response = serde_json::from_str(text)
                .map_err(|error| malformed(format!("not a JSON-RPC reply ({error}): {}", clip(text))))?;
            match &response.id {
                Some(got) if got == id => return Ok(response),
                // A server that could not read the request's id answers with null.
                None if response.error.is_some() => return Ok(response),
                other => return Err(malformed(format!("a reply to id {other:?}, expected {id:?}"))),
            }
        }
    }

    /// The reader and writer back, e.g. to close the server's input.
    pub fn into_inner(self) -> (R, W) {
        (self.reader, self.writer)
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
