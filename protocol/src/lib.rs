//! The wire protocol between `ctxhost serve` and the agents (or hosts) that drive its engines.
//!
//! JSON-RPC 2.0, one JSON object per line, over a child process's stdin and stdout (stderr
//! carries its logs). This crate holds the types both ends agree on and nothing that runs an
//! engine or a process:
//!
//! - [`jsonrpc`]: the envelope ([`Request`], [`Response`], [`RpcError`] and its [`code`]s), with
//!   the engine error's kind carried in `error.data.kind`;
//! - [`methods`]: the method names ([`method`]), their params and results, every session reply an
//!   [`Answer`] carrying the six counters;
//! - [`ProtocolVersion`] and its compatibility rule ([`ProtocolVersion::is_compatible_with`]);
//! - [`Client`]: a blocking client over any reader and writer, for a host that runs an engine in a
//!   child process, and for tests.
//!
//! The server end is `ctxhost serve` (the `ctxhost` crate's `serve` module).
//!
//! # Example
//!
//! A client talking to a server over a pipe (here an in-memory reply stands in for the server):
//!
//! ```
//! use ctxhost_protocol::{method, Answer, Client, SessionParams};
//!
//! let reply = r#"{"jsonrpc":"2.0","id":1,"result":{"value":null,"counters":{"last_prompt_tokens":0,
//!     "last_completion_tokens":0,"last_total_tokens":0,"threshold_tokens":96000,
//!     "context_length":128000,"compression_count":0}}}"#.replace('\n', "") + "\n";
//! let mut sent = Vec::new();
//! let mut client = Client::new(reply.as_bytes(), &mut sent);
//! let answer: Answer<()> = client.call(method::COUNTERS, &SessionParams { session: "s1".into() })?;
//! assert_eq!(answer.counters.threshold_tokens, 96_000);
//! drop(client);
//! assert!(String::from_utf8(sent)?.contains(r#""method":"counters""#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod client;
pub mod jsonrpc;
pub mod methods;
mod version;

pub use client::{Client, ClientError};
pub use jsonrpc::{code, parse_params, ErrorData, Id, OutgoingRequest, Request, Response, RpcError};
pub use methods::*;
pub use version::{BadVersion, ProtocolVersion, PROTOCOL_VERSION};
