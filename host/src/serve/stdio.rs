//! The stdio transport: one JSON-RPC request a line on the input, one reply a line on the output.

use std::io::{self, BufRead, Write};

use ctxhost_protocol::{code, Response, RpcError};

use super::Server;

/// Why the server stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A `shutdown` request.
    Asked,
    /// A client of an incompatible protocol version, refused with this message.
    Incompatible(String),
    /// The input ended.
    EndOfInput,
    /// The output could not be written: the client is gone.
    ClientGone,
}

/// Serves `input` until a stop, answering on `output`, then ends every session.
pub fn serve_lines(server: &mut Server, mut input: impl BufRead, mut output: impl Write) -> io::Result<Stop> {
    let mut buffer = Vec::new();
    let stop = loop {
        buffer.clear();
        if input.read_until(b'\n', &mut buffer)? == 0 {
            break Stop::EndOfInput;
        }
        let reply = match std::str::from_utf8(&buffer) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => server.handle_line(line),
            Err(error) => Some(
                Response::error(
                    None,
                    RpcError::new(code::PARSE_ERROR, format!("the line is not UTF-8: {error}")),
                )
                .to_line(),
            ),
        };
        if let Some(reply) = reply {
            let written = output
                .write_all(reply.as_bytes())
                .and_then(|()| output.write_all(b"\n"))
                .and_then(|()| output.flush());
            if let Err(error) = written {
                tracing::info!("the client is gone ({error})");
                break Stop::ClientGone;
            }
        }
        if let Some(stop) = server.stop() {
            break stop;
        }
    };
    // `shutdown` has ended them already; after the end of input or a client gone this flushes.
    server.end_all();
    Ok(stop)
}
