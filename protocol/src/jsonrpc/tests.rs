use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::methods::{CompressParams, InitializeParams};

fn refused(line: &str) -> (Option<Id>, i64, String) {
    let (id, error) = Request::parse(line).unwrap_err();
    (id, error.code, error.message)
}

#[test]
fn a_well_formed_request_reads_with_its_id_method_and_params() {
    let request =
        Request::parse(r#"{"jsonrpc":"2.0","id":7,"method":"counters","params":{"session":"s1"}}"#).unwrap();
    assert_eq!(
        (request.id, request.method.as_str()),
        (Some(Id::Number(7)), "counters")
    );
    assert_eq!(request.params.unwrap().get(), r#"{"session":"s1"}"#);
    let notification = Request::parse(r#"{"jsonrpc":"2.0","method":"shutdown"}"#).unwrap();
    assert_eq!(notification.id, None);
    let text_id = Request::parse(r#"{"jsonrpc":"2.0","id":"a-1","method":"x"}"#).unwrap();
    assert_eq!(text_id.id, Some(Id::Text("a-1".into())));
}

#[test]
fn lines_that_are_not_requests_are_refused_with_the_code_json_rpc_gives_them() {
    assert_eq!(refused("{not json").1, code::PARSE_ERROR);
    assert!(refused("{not json").2.starts_with("not JSON: "));
    assert_eq!(
        refused("[1, 2]"),
        (
            None,
            code::INVALID_REQUEST,
            "a request is a JSON object, got an array".into()
        )
    );
    assert_eq!(
        refused(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#),
        (
            Some(Id::Number(3)),
            code::INVALID_REQUEST,
            "`jsonrpc` must be \"2.0\"".into()
        )
    );
    assert_eq!(
        refused(r#"{"jsonrpc":"2.0","id":4}"#),
        (
            Some(Id::Number(4)),
            code::INVALID_REQUEST,
            "`method` is missing".into()
        )
    );
    assert_eq!(
        refused(r#"{"jsonrpc":"2.0","id":5,"method":17}"#),
        (
            Some(Id::Number(5)),
            code::INVALID_REQUEST,
            "`method` must be a string, got a number".into()
        )
    );
    assert_eq!(
        refused(r#"{"jsonrpc":"2.0","id":6,"method":"x","params":[1]}"#),
        (
            Some(Id::Number(6)),
            code::INVALID_REQUEST,
            "`params` must be an object (named params), got an array".into()
        )
    );
    assert_eq!(
        refused(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#),
        (
            None,
            code::INVALID_REQUEST,
            "`id` must be a number or a string".into()
        )
    );
}

#[test]
fn wrong_params_name_the_method_and_the_field() {
    let params = json!({"session": "s1", "messages": [{"role": "user", "content": "hi"}, {"content": "x"}]});
    let error = parse_params::<CompressParams>("compress", &params.to_string()).unwrap_err();
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert_eq!(
        error.message,
        "invalid params for `compress`: messages[1]: missing field `role`"
    );
    let error =
        parse_params::<CompressParams>("compress", &json!({"session": 3, "messages": []}).to_string())
            .unwrap_err();
    assert_eq!(
        error.message,
        "invalid params for `compress`: session: invalid type: integer `3`, expected a string"
    );
    let error = parse_params::<InitializeParams>(
        "initialize",
        &json!({"protocol_version": "one", "client_name": "x"}).to_string(),
    )
    .unwrap_err();
    assert!(
        error
            .message
            .contains("protocol_version: `one` is not a protocol version"),
        "{}",
        error.message
    );
    let error = parse_params::<CompressParams>("compress", "{}").unwrap_err();
    assert_eq!(
        error.message,
        "invalid params for `compress`: missing field `session`"
    );
    let error = parse_params::<CompressParams>(
        "compress",
        &json!({"session": "s", "messages": [], "focus": "x"}).to_string(),
    )
    .unwrap_err();
    assert!(
        error.message.contains("unknown field `focus`"),
        "{}",
        error.message
    );
}

#[test]
fn an_engine_error_keeps_its_kind_across_the_wire() {
    for kind in [
        ErrorKind::OTHER,
        ErrorKind::PANIC,
        ErrorKind::INVALID_INPUT,
        ErrorKind::CONFIG,
        ErrorKind::UNAVAILABLE,
        ErrorKind::UNKNOWN_METHOD,
        ErrorKind(42),
    ] {
        let error = EngineError::new(kind, "the summarizer is down");
        let wire = RpcError::engine_failed("lcm", "compress", &error, "engine `lcm` failed".into());
        let line = Response::error(Some(Id::Number(1)), wire).to_line();
        let back: Response = serde_json::from_str(&line).unwrap();
        let back = back.error.unwrap();
        assert_eq!(back.code, code::ENGINE_FAILED);
        assert_eq!(back.to_engine_error().kind, kind, "{line}");
    }
    assert_eq!(kind_name(ErrorKind::UNAVAILABLE), "unavailable");
    assert_eq!(kind_name(ErrorKind(42)), "kind_42");
    assert_eq!(kind_from_name("no-such-kind"), ErrorKind::OTHER);
    let refused = RpcError::invalid_output("lcm", "compress", "lost the system message".into());
    assert_eq!(refused.data.as_ref().unwrap().kind, "invalid_output");
    assert_eq!(refused.to_engine_error().kind, ErrorKind::OTHER);
}

#[test]
fn a_reply_has_a_result_or_an_error_never_both() {
    let raw = |value: Value| serde_json::value::to_raw_value(&value).unwrap();
    let ok = Response::result(Some(Id::Text("x".into())), raw(json!({"value": true}))).to_line();
    assert_eq!(ok, r#"{"jsonrpc":"2.0","id":"x","result":{"value":true}}"#);
    let null = Response::result(Some(Id::Number(2)), raw(Value::Null));
    let back: Response = serde_json::from_str(&null.to_line()).unwrap();
    assert_eq!(
        back.result.map(|raw| raw.get().to_owned()),
        Some("null".to_owned()),
        "a null result is a result"
    );
    let failed = Response::error(None, RpcError::new(code::PARSE_ERROR, "not JSON")).to_line();
    assert_eq!(
        failed,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not JSON"}}"#
    );
}

#[test]
fn session_open_reads_the_agents_tools_when_given_and_none_from_an_older_client() {
    let older =
        Request::parse(r#"{"jsonrpc":"2.0","id":1,"method":"session/open","params":{"observers":["lcm"]}}"#)
            .unwrap();
    let params: crate::OpenParams = older.params().unwrap();
    assert_eq!(params.agent_tools, Vec::<String>::new());
    // Sent only when there are some: a server before 1.4 refuses a field it does not know.
    assert_eq!(
        serde_json::to_value(&params).unwrap(),
        json!({"observers": ["lcm"]})
    );
    let newer = Request::parse(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/open","params":{"agent_tools":["terminal"]}}"#,
    )
    .unwrap();
    let params: crate::OpenParams = newer.params().unwrap();
    assert_eq!(params.agent_tools, ["terminal"]);
}
