use ctxhost_engine_abi::{Counters, Message};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::{code, methods::*, Request, PROTOCOL_VERSION};

/// A client whose server has already written `replies` (one per line).
fn client_reading(replies: &[serde_json::Value]) -> Client<&'static [u8], Vec<u8>> {
    let text: String = replies.iter().map(|reply| format!("{reply}\n")).collect();
    Client::new(Box::leak(text.into_boxed_str()).as_bytes(), Vec::new())
}

fn counters() -> serde_json::Value {
    json!({"last_prompt_tokens": 10, "last_completion_tokens": 2, "last_total_tokens": 12,
           "threshold_tokens": 96000, "context_length": 128000, "compression_count": 1})
}

#[test]
fn a_call_writes_one_request_line_and_reads_its_typed_answer() {
    let messages = vec![Message::system("s"), Message::user("hi")];
    let mut client = client_reading(&[json!({"jsonrpc": "2.0", "id": 1,
        "result": {"value": {"messages": messages, "record": {"engine": "compressor",
        "messages_before": 2, "messages_after": 2, "tokens_before": 5, "tokens_after": 5,
        "duration_ms": 0.5, "outcome": {"status": "unchanged"}}}, "counters": counters()}})]);
    let params = CompressParams {
        session: "s1".into(),
        messages: messages.clone(),
        current_tokens: None,
        focus_topic: Some("tests".into()),
        user_message: Some(1),
    };
    let answer: Answer<Compressed> = client.call(method::COMPRESS, &params).unwrap();
    assert_eq!(answer.value.messages, messages);
    assert_eq!(answer.value.record.outcome, CompactionOutcome::Unchanged);
    assert_eq!(answer.counters.compression_count, 1);
    let (_, sent) = client.into_inner();
    let sent = String::from_utf8(sent).unwrap();
    assert_eq!(sent.lines().count(), 1);
    let request = Request::parse(sent.trim_end()).unwrap();
    assert_eq!(request.method, "compress");
    let params: serde_json::Value = serde_json::from_str(request.params.unwrap().get()).unwrap();
    assert_eq!(params["focus_topic"], "tests");
    assert_eq!(params.get("current_tokens"), None);
}

#[test]
fn an_error_reply_is_an_rpc_error_with_the_engines_kind() {
    let mut client = client_reading(&[
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code::ENGINE_FAILED,
        "message": "engine `lcm` failed in `compress`: unavailable: the model is down",
        "data": {"kind": "unavailable", "engine": "lcm", "method": "compress"}}}),
    ]);
    let error = client
        .call::<_, Answer<bool>>(method::SHOULD_COMPRESS, &SessionParams { session: "s".into() })
        .unwrap_err();
    let ClientError::Rpc { method, error } = error else {
        panic!("{error}")
    };
    assert_eq!(method, "should_compress");
    assert_eq!(
        error.to_engine_error().kind,
        ctxhost_engine_abi::ErrorKind::UNAVAILABLE
    );
}

#[test]
fn a_server_that_closes_its_output_before_replying_is_reported_as_closed() {
    let mut client = client_reading(&[]);
    let error = client
        .call::<_, Answer<()>>(method::COUNTERS, &SessionParams { session: "s".into() })
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the server closed the connection before replying to `counters`"
    );
}

#[test]
fn replies_that_are_not_json_rpc_are_malformed_and_results_of_another_shape_unexpected() {
    let mut client = Client::new("hello there\n".as_bytes(), Vec::new());
    let error = client.call_value("counters", json!({})).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the server's reply to `counters` is malformed: not a JSON-RPC reply"),
        "{error}"
    );
    let mut client = client_reading(&[json!({"jsonrpc": "2.0", "id": 9, "result": {}})]);
    assert!(client
        .call_value("counters", json!({}))
        .unwrap_err()
        .to_string()
        .contains("a reply to id"));
    let mut client = client_reading(&[json!({"jsonrpc": "2.0", "id": 1, "result": {"value": "yes"}})]);
    let error = client
        .call::<_, Answer<bool>>("should_compress", &json!({}))
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::UnexpectedResult { problem, .. } if problem.starts_with("invalid type: string \"yes\", expected a boolean")),
        "{error}"
    );
}

#[test]
fn params_written_as_json_text_reach_the_server_as_the_typed_params_would() {
    let messages = vec![Message::system("s"), Message::user("line one\nline \"two\"")];
    let reply = json!({"jsonrpc": "2.0", "id": 1, "result": {"value": {"messages": messages}, "counters": counters()}});
    let mut client = client_reading(&[reply]);
    let json = serde_json::to_string(&messages).unwrap();
    let (head, tail) = compress_params_around("s1", Some(1_200), Some("the \"focus\""), Some(1));
    let answer: Answer<Unchecked> = client
        .call_json(method::COMPRESS_UNCHECKED, &[&head, &json, tail])
        .unwrap();
    assert_eq!(answer.value.messages.get(), json);
    let (_, sent) = client.into_inner();
    let sent = String::from_utf8(sent).unwrap();
    assert_eq!(sent.lines().count(), 1, "one line: {sent}");
    let request = Request::parse(sent.trim_end()).unwrap();
    assert_eq!(request.method, method::COMPRESS_UNCHECKED);
    assert_eq!(request.id, Some(crate::Id::Number(1)));
    let read: CompressParams = request.params().unwrap();
    assert_eq!(
        read,
        CompressParams {
            session: "s1".into(),
            messages,
            current_tokens: Some(1_200),
            focus_topic: Some("the \"focus\"".into()),
            user_message: Some(1),
        }
    );
    let (head, tail) = compress_params_around("s2", None, None, None);
    assert_eq!(format!("{head}[]{tail}"), r#"{"session":"s2","messages":[]}"#);
}

#[test]
fn the_handshake_refuses_a_server_of_another_major_version() {
    let initialized = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocol_version": version, "server_name": "ctxhost",
            "server_version": "9.9.9", "abi_version": 1, "capabilities": ["initialize"]}})
    };
    let mut client = client_reading(&[initialized("1.7")]);
    assert_eq!(client.initialize("test").unwrap().server_version, "9.9.9");
    let mut client = client_reading(&[initialized("2.0")]);
    assert_eq!(
        client.initialize("test").unwrap_err().to_string(),
        format!("the server speaks protocol 2.0, this client {PROTOCOL_VERSION}: incompatible")
    );
}

#[test]
fn usage_crosses_with_its_optional_counts() {
    let wire = WireUsage {
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: None,
        cache_read_tokens: Some(64),
        ..WireUsage::default()
    };
    let usage: ctxhost_engine_abi::Usage = wire.into();
    assert_eq!(usage.total_tokens, 120);
    assert_eq!(usage.cache_read_tokens.into_option(), Some(64));
    let back = WireUsage::from(usage);
    assert_eq!(back.total_tokens, Some(120));
    let counters: Counters = serde_json::from_value(counters()).unwrap();
    assert_eq!(counters.last_total_tokens, 12);
}
