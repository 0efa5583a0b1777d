//! The summarizer over real HTTP: a loopback server written here (std's `TcpListener` on
//! 127.0.0.1:0) answers canned responses, and the client, the service and the compressor talk to
//! it as they would to a model server.

mod engine;
mod failures;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use ctxhost_engine_abi::{Message, ToolCall};
use serde_json::{json, Value};

use super::{SummarizeRequest, Summarizer};
use crate::config::{ApiKey, SummarizerSettings};

/// What the canned server does with one connection.
#[derive(Clone, Debug)]
pub(super) enum Reply {
    /// Answers with this status and body.
    Http(u16, String),
    /// Reads the request and never answers (until the test is long over).
    Silence,
}

impl Reply {
    /// A 200 answer whose completion is `content`.
    pub(super) fn completion(content: &str) -> Self {
        let body = json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        });
        Self::Http(200, body.to_string())
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
pub(super) struct Received {
    pub(super) head: String,
    pub(super) body: Value,
}

/// A loopback HTTP server that answers each connection with the next canned reply.
pub(super) struct CannedServer {
    pub(super) base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

/// How long a silent connection is held open, and how long the server waits for connections.
const SERVER_LIFETIME: Duration = Duration::from_secs(20);

impl CannedServer {
    pub(super) fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        thread::spawn(move || {
            let started = Instant::now();
            let mut replies = replies.into_iter();
            let mut held = Vec::new();
            while started.elapsed() < SERVER_LIFETIME {
                let stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                let Some(reply) = replies.next() else { break };
                stream.set_nonblocking(false).unwrap();
                let request = read_request(&stream);
                log.lock().unwrap().push(request);
                match reply {
                    Reply::Http(status, body) => answer(stream, status, &body),
                    // Kept open, unanswered, until the server's lifetime ends.
                    Reply::Silence => held.push(stream),
                }
                if replies.len() == 0 {
                    break;
                }
            }
            if !held.is_empty() {
                thread::sleep(SERVER_LIFETIME.saturating_sub(started.elapsed()));
            }
        });
        Self { base_url, received }
    }

    /// The requests received so far.
    pub(super) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Received {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap_or_default();
    Received {
        head,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

fn answer(mut stream: TcpStream, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        500 => "Internal Server Error",
        _ => "Status",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

/// A loopback URL where nothing listens: connections are refused.
pub(super) fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}/v1")
}

/// The key the tests configure; it must never show up anywhere.
pub(super) const KEY: &str = "sk-test-DO-NOT-LEAK-4242";

/// Settings for the model `tiny` at `base_url`, with a key and a one-second timeout.
pub(super) fn settings(base_url: &str) -> SummarizerSettings {
    SummarizerSettings {
        model: "tiny".into(),
        base_url: base_url.into(),
        api_key: ApiKey::new(KEY),
        timeout: 1.0,
        max_tokens: Some(300),
        extra: json!({"temperature": 0, "stop": ["</s>"]})
            .as_object()
            .unwrap()
            .clone(),
        ..SummarizerSettings::default()
    }
}

pub(super) fn summarizer(base_url: &str) -> Summarizer {
    let settings = settings(base_url);
    Summarizer::new(&settings, settings.api_key.clone())
}

fn shell(id: &str, command: &str) -> Message {
    Message::assistant_calls(vec![ToolCall::new(
        id,
        "terminal",
        json!({ "command": command }).to_string(),
    )])
}

/// A debugging session: requests, commands, an error, files; about 2,500 tokens.
pub(super) fn conversation() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user(
            "The coupon discount is wrong at checkout. Fix src/coupons/apply.py and never touch migrations/.",
        ),
    ];
    for step in 0..8 {
        let id = format!("c{step}");
        messages.push(shell(&id, "pytest -q tests/test_coupons.py"));
        messages.push(Message::tool(
            &id,
            format!(
                "{}FAILED tests/test_coupons.py::test_percent_off - AssertionError: expected 90.0, got 100.0\nExit code: 1",
                "collected 12 items\n".repeat(12)
            ),
        ));
        messages.push(Message::assistant(format!(
            "Attempt {step}: the discount in src/coupons/apply.py is applied after rounding; I will look at src/coupons/rules.py next."
        )));
        messages.push(Message::user(format!(
            "Go on (step {step}), and keep the API of apply_coupon unchanged."
        )));
    }
    messages.push(Message::user(
        "Now also add a CHANGELOG.md entry for issue #481 and rerun `pytest -q`.",
    ));
    messages.push(Message::assistant("On it."));
    messages
}

/// A `summarize` request for the middle of [`conversation`].
pub(super) fn request() -> SummarizeRequest {
    let messages = conversation();
    SummarizeRequest {
        messages: messages[1..messages.len() - 2].to_vec(),
        input_tokens: Some(2_400),
        target_tokens: Some(500),
        ..SummarizeRequest::default()
    }
}

/// A good model summary that forgets most facts.
pub(super) const THIN_SUMMARY: &str = "## Goal\nFix the coupon discount.";
