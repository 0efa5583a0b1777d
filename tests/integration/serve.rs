//! `ctxhost serve` through the real binary: every method over the pipe, several sessions, the
//! errors a client can cause or meet (malformed lines, unknown methods, wrong types, a version
//! mismatch, engine failures), and the ways a server stops, each ending its sessions.

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Child, ChildStdin, ChildStdout, Stdio},
};

use ctxhost::formats::read_transcript;
use ctxhost_engine_abi::{messages_from_json, Message, Role, SessionInfo};
use ctxhost_protocol::{
    code, method, Answer, Client, ClientError, CompactionOutcome, CompactionRecord, Compressed, EngineInfo,
    ErrorData, RpcError, ShutdownReport, Unchecked,
};
use pretty_assertions::assert_eq;
use rusqlite::Connection;
use serde_json::{json, Value};

use crate::support::{ctxhost, example, PluginDir, FAULTY_BAD_TOOLS_WARNINGS};

/// A running `ctxhost serve` and a client on its pipes.
struct Served {
    child: Child,
    client: Client<BufReader<ChildStdout>, ChildStdin>,
}

impl Served {
    /// `ctxhost -v serve` in `dir`, handshake done.
    fn start(dir: &Path) -> Self {
        let mut served = Self::spawn(dir);
        let initialized = served.client.initialize("integration-tests").unwrap();
        assert_eq!(initialized.capabilities, method::ALL.map(str::to_owned).to_vec());
        served
    }

    fn spawn(dir: &Path) -> Self {
        Self::spawn_with(dir, &[])
    }

    /// `ctxhost <flags> -v serve` in `dir`, before the handshake.
    fn spawn_with(dir: &Path, flags: &[&str]) -> Self {
        let mut child = ctxhost()
            .current_dir(dir)
            .args(flags)
            .args(["-v", "serve"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ctxhost serve starts");
        let client = Client::new(
            BufReader::new(child.stdout.take().unwrap()),
            child.stdin.take().unwrap(),
        );
        Self { child, client }
    }

    fn call<T: serde::de::DeserializeOwned>(&mut self, method: &str, params: Value) -> T {
        self.client
            .call(method, &params)
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    fn refused(&mut self, method: &str, params: Value) -> RpcError {
        match self.client.call_value(method, params) {
            Err(ClientError::Rpc { error, .. }) => error,
            other => panic!("{method}: expected an error reply, got {other:?}"),
        }
    }

    fn open(&mut self, params: Value) -> Answer<EngineInfo> {
        self.call(method::SESSION_OPEN, params)
    }

    /// Closes the input and waits: the exit status and everything the server logged.
    fn finish(self) -> (std::process::ExitStatus, String) {
        let (_, stdin) = self.client.into_inner();
        drop(stdin);
        let output = self.child.wait_with_output().unwrap();
        (
            output.status,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// Starts agent session `warehouse` on `session`, compresses the first half of `messages`, and
/// gives the context the agent sends next: that result, then the second half.
fn start_and_compress_the_first_half(
    served: &mut Served,
    session: &str,
    messages: &[Message],
) -> Vec<Message> {
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "warehouse"}),
    );
    let half = messages.len() / 2;
    let first: Answer<Compressed> = served.call(
        method::COMPRESS,
        json!({"session": session, "messages": messages[..half]}),
    );
    let mut context = first.value.messages;
    context.extend_from_slice(&messages[half..]);
    context
}

fn transcript(name: &str) -> Vec<Message> {
    read_transcript(&example(&format!("transcripts/{name}")), None)
        .unwrap()
        .messages
}

fn model(context_length: u64) -> Value {
    json!({"model": "example/model", "context_length": context_length})
}

/// After a server exited cleanly, ending `session`: how many messages lcm's store holds.
fn stored_after_a_clean_end(
    status: std::process::ExitStatus,
    log: &str,
    session: &str,
    root: &Path,
) -> usize {
    assert!(status.success(), "{log}");
    assert!(
        log.contains(&format!("session {session}: ended (on_session_end)")),
        "{log}"
    );
    let store = Connection::open(root.join("store/lcm.sqlite")).unwrap();
    let stored: i64 = store
        .query_row("SELECT count(*) FROM messages", [], |row| row.get(0))
        .unwrap();
    stored as usize
}

fn is_error_kind(error: &RpcError, code: i64, kind: Option<&str>) -> bool {
    error.code == code && error.data.as_ref().map(|data| data.kind.as_str()) == kind
}

#[test]
fn every_contract_method_round_trips_with_the_counters_in_every_reply() {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    let mut served = Served::start(tree.root());
    let config = json!({"context": {"tokenizer": "rough"}, "compression": {"threshold": 0.5}});
    let opened = served.open(json!({"config": config, "model": model(16_000)}));
    assert_eq!(opened.value.engine, "compressor");
    assert_eq!(opened.value.origin, "built-in");
    assert_eq!(opened.value.fallback, None);
    assert_eq!(opened.counters.context_length, 16_000);
    assert_eq!(opened.counters.threshold_tokens, 8_000);
    let session = opened.value.session.clone();
    let s = |extra: Value| {
        let mut params = json!({"session": session});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        params
    };

    let updated: Answer<()> = served.call(method::UPDATE_MODEL, s(json!({"model": model(20_000)})));
    assert_eq!(updated.counters.threshold_tokens, 10_000);
    let info = SessionInfo {
        model: "example/model".into(),
        context_length: 20_000,
        platform: "tests".into(),
        ..SessionInfo::default()
    };
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        s(json!({"session_id": "conv-1", "info": info})),
    );
    let usage = json!({"prompt_tokens": 12_000, "completion_tokens": 300});
    let after_usage: Answer<()> = served.call(method::UPDATE_FROM_RESPONSE, s(json!({"usage": usage})));
    assert_eq!(after_usage.counters.last_prompt_tokens, 12_000);
    assert_eq!(after_usage.counters.last_total_tokens, 12_300);
    let fire: Answer<bool> = served.call(method::SHOULD_COMPRESS, s(json!({})));
    assert!(fire.value);
    let below: Answer<bool> = served.call(method::SHOULD_COMPRESS, s(json!({"prompt_tokens": 9_999})));
    assert!(!below.value);

    let messages = transcript("coupon-fix.json");
    // The example is over the 10,000-token threshold by the compressor's estimate.
    let preflight: Answer<bool> = served.call(
        method::SHOULD_COMPRESS_PREFLIGHT,
        s(json!({"messages": messages})),
    );
    assert!(preflight.value);
    let has: Answer<bool> = served.call(method::HAS_CONTENT_TO_COMPRESS, s(json!({"messages": messages})));
    assert!(has.value);
    let compressed: Answer<Compressed> = served.call(
        method::COMPRESS,
        s(json!({"messages": messages, "current_tokens": 12_000, "focus_topic": "the coupon bug"})),
    );
    let result = &compressed.value.messages;
    assert!(
        result.len() < messages.len(),
        "{} → {}",
        messages.len(),
        result.len()
    );
    assert_eq!(result[0].role, Role::System);
    assert!(
        result[0].text().starts_with(messages[0].text().as_ref()),
        "the system message stays first"
    );
    let last_user = messages.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert!(result.contains(last_user));
    assert_eq!(compressed.counters.compression_count, 1);
    let record = &compressed.value.record;
    assert_eq!(record.outcome, CompactionOutcome::Applied);
    assert_eq!(
        (record.messages_before, record.messages_after),
        (messages.len(), result.len())
    );
    assert!(record.tokens_after < record.tokens_before, "{record:?}");
    assert_eq!(record.focus_topic.as_deref(), Some("the coupon bug"));

    let tools: Answer<Vec<Value>> = served.call(method::GET_TOOL_SCHEMAS, s(json!({})));
    assert_eq!(tools.value, Vec::<Value>::new());
    let unknown_tool: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        s(json!({"name": "lcm_grep", "arguments": {}})),
    );
    assert_eq!(
        unknown_tool.value,
        json!({"error": "Unknown context engine tool: lcm_grep"})
    );
    let status: Answer<Value> = served.call(method::GET_STATUS, s(json!({})));
    assert_eq!(status.value["compression_count"], 1);
    assert_eq!(status.value["context_length"], 20_000);
    let counters: Answer<()> = served.call(method::COUNTERS, s(json!({})));
    assert_eq!(counters.counters, status.counters);
    let records: Answer<Vec<CompactionRecord>> = served.call(method::COMPACTIONS, s(json!({})));
    assert_eq!(records.value, vec![record.clone()]);
    let reset: Answer<()> = served.call(method::ON_SESSION_RESET, s(json!({})));
    assert_eq!(reset.counters.compression_count, 0);
    assert_eq!(reset.counters.last_prompt_tokens, 0);

    // Swap to lcm on the same agent session: the window carries over; lcm's tools appear.
    let swapped: Answer<EngineInfo> = served.call(method::SWAP, s(json!({"engine": "lcm"})));
    assert_eq!(swapped.value.engine, "lcm");
    assert!(
        swapped.value.origin.starts_with("plugin "),
        "{}",
        swapped.value.origin
    );
    assert_eq!(swapped.counters.context_length, 20_000);
    let names: Vec<&str> = swapped
        .value
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"lcm_grep"), "{names:?}");
    let _: Answer<()> = served.call(
        method::ON_SESSION_END,
        s(json!({"session_id": "conv-1", "messages": result})),
    );
    let closed: Value = served.call(method::SESSION_CLOSE, s(json!({})));
    assert_eq!(closed, Value::Null);
    let gone = served.refused(method::COUNTERS, s(json!({})));
    assert_eq!(gone.code, code::UNKNOWN_SESSION);

    let report: ShutdownReport = served.call(method::SHUTDOWN, json!({}));
    assert_eq!(report, ShutdownReport::default());
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
}

#[test]
fn several_sessions_run_their_own_engines_side_by_side() {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.config("lcm:\n  database: store/lcm.sqlite\n");
    let mut served = Served::start(tree.root());
    let config = tree.root().join("config.yaml");
    let one = served.open(json!({"config": config, "model": model(100_000)}));
    let two = served.open(json!({"config": config, "engine": "lcm", "model": model(64_000)}));
    assert_eq!(
        (one.value.engine.as_str(), two.value.engine.as_str()),
        ("compressor", "lcm")
    );
    assert_ne!(one.value.session, two.value.session);
    let _: Answer<()> = served.call(
        method::UPDATE_FROM_RESPONSE,
        json!({"session": one.value.session, "usage": {"prompt_tokens": 500, "completion_tokens": 5}}),
    );
    let first: Answer<()> = served.call(method::COUNTERS, json!({"session": one.value.session}));
    let second: Answer<()> = served.call(method::COUNTERS, json!({"session": two.value.session}));
    assert_eq!(first.counters.last_prompt_tokens, 500);
    assert_eq!(second.counters.last_prompt_tokens, 0);
    assert_eq!(
        (first.counters.context_length, second.counters.context_length),
        (100_000, 64_000)
    );
}

#[test]
fn lcm_compresses_a_real_transcript_answers_its_tools_and_is_flushed_at_the_end_of_input() {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.config(
        "context:\n  engine: lcm\n  tokenizer: rough\nlcm:\n  database: store/lcm.sqlite\n  fresh_tail: 16\n",
    );
    let mut served = Served::start(tree.root());
    let config = tree.root().join("config.yaml");
    let opened = served.open(json!({"config": config, "model": model(24_000)}));
    assert_eq!(opened.value.engine, "lcm");
    let session = opened.value.session;
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "warehouse"}),
    );
    let messages = transcript("warehouse-migration.json");
    let compressed: Answer<Compressed> = served.call(
        method::COMPRESS,
        json!({"session": session, "messages": messages}),
    );
    assert!(compressed.value.messages.len() < messages.len());
    assert!(
        compressed.value.record.details.is_some(),
        "lcm gives its own account"
    );
    let grep: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "lcm_grep", "arguments": {"pattern": "warehouse"}}),
    );
    assert!(grep.value.is_object(), "{}", grep.value);
    assert!(grep.value.get("error").is_none(), "{}", grep.value);

    // The end of input ends the session with the last context the server saw: lcm stores it.
    let (status, log) = served.finish();
    let stored = stored_after_a_clean_end(status, &log, &session, tree.root());
    assert!(stored >= messages.len(), "{stored} messages stored");
}

#[test]
fn malformed_lines_unknown_methods_and_wrong_types_get_errors_and_the_server_goes_on() {
    let tree = PluginDir::new();
    let mut served = Served::spawn(tree.root());
    let early = served.refused(method::COUNTERS, json!({"session": "s1"}));
    assert_eq!(early.code, code::NOT_INITIALIZED);
    served.client.initialize("tests").unwrap();
    let session = served.open(json!({})).value.session;

    let unknown = served.refused("compress_everything", json!({}));
    assert_eq!(unknown.code, code::METHOD_NOT_FOUND);
    assert_eq!(
        unknown.message,
        "unknown method `compress_everything` (`initialize` lists the methods this server serves)"
    );
    let wrong = served.refused(
        method::SHOULD_COMPRESS,
        json!({"session": session, "prompt_tokens": "many"}),
    );
    assert_eq!(wrong.code, code::INVALID_PARAMS);
    assert_eq!(
        wrong.message,
        "invalid params for `should_compress`: prompt_tokens: invalid type: string \"many\", expected u64"
    );
    let bad_message = served.refused(
        method::COMPRESS,
        json!({"session": session, "messages": [{"role": "user", "content": "hi"}, {"role": "boss"}]}),
    );
    assert_eq!(bad_message.code, code::INVALID_PARAMS);
    assert!(
        bad_message
            .message
            .starts_with("invalid params for `compress`: messages[1].role: unknown variant `boss`"),
        "{}",
        bad_message.message
    );
    // A window no engine can work with is refused, as the config refuses it.
    let no_window = served.refused(
        method::UPDATE_MODEL,
        json!({"session": session, "model": model(0)}),
    );
    assert_eq!(no_window.code, code::INVALID_PARAMS);
    assert_eq!(
        no_window.message,
        "invalid params for `update_model`: `model.context_length` must be a positive number of tokens, got 0"
    );
    let all_reserved = served.refused(
        method::SESSION_OPEN,
        json!({"model": {"model": "m", "context_length": 1000, "max_tokens": 1000}}),
    );
    assert_eq!(
        all_reserved.message,
        "invalid params for `session/open`: `model.max_tokens` (1000) must be smaller than `model.context_length` (1000)"
    );
    let no_session = served.refused(method::GET_STATUS, json!({}));
    assert_eq!(
        no_session.message,
        "invalid params for `get_status`: missing field `session`"
    );
    let bad_config = served.refused(
        method::SESSION_OPEN,
        json!({"config": {"compression": {"threshold": 3}}}),
    );
    assert_eq!(bad_config.code, code::CONFIG_ERROR);
    // The key, not a line of the YAML the server wrote the object out as.
    assert_eq!(
        bad_config.message,
        "inline config: `compression.threshold` must be between 0 and 1, got 3"
    );
    let missing_file = served.refused(method::SESSION_OPEN, json!({"config": "nowhere/config.yaml"}));
    assert_eq!(missing_file.code, code::CONFIG_ERROR);
    assert!(missing_file
        .message
        .starts_with("nowhere/config.yaml: cannot read the config file"));
    let observers = served.refused(method::SESSION_OPEN, json!({"observers": ["nowhere"]}));
    assert_eq!(observers.code, code::CONFIG_ERROR);
    assert!(
        observers
            .message
            .starts_with("observer `nowhere` cannot be used: "),
        "{}",
        observers.message
    );

    // Raw lines: not JSON, not UTF-8, not a request. Each gets one error line with a null id.
    let (mut reader, mut writer) = served.client.into_inner();
    let mut replies = Vec::new();
    for line in [
        &b"{not json\n"[..],
        b"\xff\xfe\n",
        b"[1,2]\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":5}\n",
    ] {
        writer.write_all(line).unwrap();
        writer.flush().unwrap();
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        let reply: Value = serde_json::from_str(&reply).unwrap();
        replies.push((reply["id"].clone(), reply["error"]["code"].as_i64().unwrap()));
    }
    assert_eq!(
        replies,
        [
            (Value::Null, code::PARSE_ERROR),
            (Value::Null, code::PARSE_ERROR),
            (Value::Null, code::INVALID_REQUEST),
            (json!(5), code::INVALID_REQUEST),
        ]
    );
    // Still serving.
    served.client = Client::new(reader, writer);
    let counters: Answer<()> = served.call(method::COUNTERS, json!({"session": session}));
    assert_eq!(counters.counters.compression_count, 0);
}

#[test]
fn a_client_of_another_major_version_is_refused_and_the_server_exits_saying_why() {
    let tree = PluginDir::new();
    let mut served = Served::spawn(tree.root());
    let refused = served.refused(
        method::INITIALIZE,
        json!({"protocol_version": "2.0", "client_name": "from-the-future"}),
    );
    assert_eq!(refused.code, code::INCOMPATIBLE_VERSION);
    let expected = format!(
        "client `from-the-future` speaks protocol 2.0, this server {}: incompatible; the server stops",
        ctxhost_protocol::PROTOCOL_VERSION
    );
    assert_eq!(refused.message, expected);
    let (status, log) = served.finish();
    assert!(!status.success());
    assert!(log.contains(&format!("error: {expected}")), "{log}");
}

#[test]
fn engine_failures_are_error_replies_with_their_kind_and_the_session_goes_on() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    let messages = transcript("coupon-fix.json");
    let faulty =
        |block: Value| json!({"engine": "faulty", "config": {"faulty": block}, "model": model(50_000)});

    let panicking = served.open(faulty(json!({"panic_in": "compress"}))).value.session;
    let panic = served.refused(
        method::COMPRESS,
        json!({"session": panicking, "messages": messages}),
    );
    assert!(
        is_error_kind(&panic, code::ENGINE_FAILED, Some("panic")),
        "{panic:?}"
    );
    assert!(
        panic.message.starts_with("engine `faulty` failed in `compress`"),
        "{}",
        panic.message
    );
    let records: Answer<Vec<CompactionRecord>> =
        served.call(method::COMPACTIONS, json!({"session": panicking}));
    assert!(matches!(
        records.value[0].outcome,
        CompactionOutcome::Failed { .. }
    ));
    let status: Answer<Value> = served.call(method::GET_STATUS, json!({"session": panicking}));
    assert_eq!(status.value["compression_count"], 0);

    for (spoil, problem) in [
        ("drop_last_user", "the last user message was lost"),
        ("drop_system", "the system message was lost or altered"),
        ("orphan_result", "not a valid sequence"),
    ] {
        let session = served
            .open(faulty(json!({"invalid_output": spoil})))
            .value
            .session;
        let refused = served.refused(
            method::COMPRESS,
            json!({"session": session, "messages": messages}),
        );
        assert!(
            is_error_kind(&refused, code::INVALID_OUTPUT, Some("invalid_output")),
            "{refused:?}"
        );
        assert!(refused.message.contains(problem), "{spoil}: {}", refused.message);
    }

    // An engine that writes a user-role note after the user's message, compacting again and again:
    // its note is never taken for the user's message, so each result is accepted.
    let noting = served.open(faulty(json!({"user_note": true}))).value.session;
    let mut context = messages.clone();
    for round in 0..3 {
        context.push(Message::assistant(format!("round {round} done")));
        let compressed: Answer<Compressed> =
            served.call(method::COMPRESS, json!({"session": noting, "messages": context}));
        context = compressed.value.messages;
    }

    let factory = served.open(faulty(json!({"fail_factory": "no database here"})));
    let fallback = factory.value.fallback.expect("the compressor runs instead");
    assert_eq!(fallback.requested, "faulty");
    assert!(
        fallback.reason.contains("no database here"),
        "{}",
        fallback.reason
    );
    assert_eq!(factory.value.engine, "compressor");
    let swap = served.refused(
        method::SWAP,
        json!({"session": factory.value.session, "engine": "missing"}),
    );
    assert_eq!(swap.code, code::CONFIG_ERROR);
    assert!(
        swap.message.ends_with("the session keeps `compressor`"),
        "{}",
        swap.message
    );
}

#[test]
fn a_client_gone_mid_request_stops_the_server_cleanly_ending_its_sessions() {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.config("context:\n  engine: lcm\nlcm:\n  database: store/lcm.sqlite\n");
    let mut served = Served::start(tree.root());
    let config = tree.root().join("config.yaml");
    let session = served
        .open(json!({"config": config, "model": model(24_000)}))
        .value
        .session;
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "gone"}),
    );
    let messages = transcript("warehouse-migration.json");
    // Write a compress and hang up without reading its reply.
    let (reader, mut writer) = served.client.into_inner();
    let request = json!({"jsonrpc": "2.0", "id": 99, "method": "compress",
        "params": {"session": session, "messages": messages}});
    writeln!(writer, "{request}").unwrap();
    drop(reader);
    drop(writer);
    let output = served.child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(stored_after_a_clean_end(output.status, &log, &session, tree.root()) > 0);
}

#[test]
fn shutdown_ends_every_started_session_and_says_how_many() {
    let tree = PluginDir::new();
    let mut served = Served::start(tree.root());
    for id in ["a", "b"] {
        let session = served.open(json!({"model": model(64_000)})).value.session;
        let _: Answer<()> = served.call(
            method::ON_SESSION_START,
            json!({"session": session, "session_id": id}),
        );
    }
    let _never_started = served.open(json!({}));
    let report: ShutdownReport = served.call(method::SHUTDOWN, json!({}));
    assert_eq!(
        report,
        ShutdownReport {
            sessions_ended: 2,
            problems: vec![]
        }
    );
    let (status, _) = served.finish();
    assert!(status.success());
}

#[test]
fn a_served_session_with_lcm_observing_keeps_the_compressors_context_and_finds_what_it_summarised() {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    tree.config(
        "context:\n  engine: compressor\n  tokenizer: rough\nlcm:\n  database: store/lcm.sqlite\ntelemetry:\n  path: telemetry.jsonl\n",
    );
    let config = tree.root().join("config.yaml");
    let messages = transcript("warehouse-migration.json");
    // The same calls on a session without observers and on one with them.
    let mut results = Vec::new();
    for observers in [json!([]), json!(["lcm", "telemetry"])] {
        let mut served = Served::start(tree.root());
        let opened = served.open(json!({"config": config, "model": model(16_000), "observers": observers}));
        let session = opened.value.session;
        let tools: Vec<String> = opened
            .value
            .tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let context = start_and_compress_the_first_half(&mut served, &session, &messages);
        let second: Answer<Compressed> =
            served.call(method::COMPRESS, json!({"session": session, "messages": context}));
        let grep = (!observers.as_array().unwrap().is_empty()).then(|| {
            let answer: Answer<Value> = served.call(
                method::HANDLE_TOOL_CALL,
                json!({"session": session, "name": "lcm_grep", "arguments": {"pattern": "extract_orders_61"}}),
            );
            answer.value
        });
        let (status, log) = served.finish();
        assert!(status.success(), "{log}");
        results.push((second.value.messages, tools, grep));
    }
    let (alone, alone_tools, _) = &results[0];
    let (watched, tools, grep) = &results[1];
    assert!(alone == watched, "the observers changed the context");
    assert!(alone_tools.is_empty(), "{alone_tools:?}");
    assert_eq!(tools, &["lcm_grep", "lcm_describe", "lcm_expand", "lcm_status"]);
    let grep = grep.as_ref().unwrap();
    let final_text = serde_json::to_string(watched).unwrap();
    assert!(
        !final_text.contains("extract_orders_61"),
        "the compressor kept it: pick another word"
    );
    assert!(!grep["matches"].as_array().unwrap().is_empty(), "{grep:#}");
    // Telemetry heard the session start and end, the messages once each, and both compactions.
    let lines: Vec<Value> = std::fs::read_to_string(tree.root().join("telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "compacted").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(kinds.first(), Some(&"session_started"));
    assert_eq!(kinds.last(), Some(&"session_ended"));
    let appended: usize = lines
        .iter()
        .filter(|l| l["kind"] == "messages_appended")
        .map(|l| l["messages"].as_array().unwrap().len())
        .sum();
    assert_eq!(appended, messages.len());
}

#[test]
fn the_configs_observers_watch_a_session_opened_without_naming_any() {
    // What the Hermes bridge sends: a config (its `ctxhost.config`) and an engine, no `observers`.
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    tree.config(
        "context:\n  engine: compressor\n  observers: [lcm, telemetry, telemetry]\n  tokenizer: rough\nlcm:\n  database: store/lcm.sqlite\ntelemetry:\n  path: telemetry.jsonl\ncompression:\n  treshold: 0.5\n",
    );
    let config = tree.root().join("config.yaml");
    let messages = transcript("warehouse-migration.json");
    let mut served = Served::start(tree.root());
    let opened = served.open(json!({"config": config, "engine": "compressor", "model": model(16_000)}));
    // The client is told what the server warned about, as a user of `run` sees it on stderr.
    let [misspelt, twice] = opened.value.warnings.as_slice() else {
        panic!("{:?}", opened.value.warnings)
    };
    assert!(
        misspelt.contains("config.yaml:10: unknown key") && misspelt.contains("`compression.treshold`"),
        "{misspelt}"
    );
    assert_eq!(
        twice,
        "`context.observers` names `telemetry` twice; it observes once"
    );
    let names: Vec<&str> = opened
        .value
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_status"]);
    let session = opened.value.session;
    let context = start_and_compress_the_first_half(&mut served, &session, &messages);
    let _: Answer<Compressed> =
        served.call(method::COMPRESS, json!({"session": session, "messages": context}));
    let grep: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "lcm_grep", "arguments": {"pattern": "extract_orders_61"}}),
    );
    assert!(
        !grep.value["matches"].as_array().unwrap().is_empty(),
        "{:#}",
        grep.value
    );
    // `observers: []` says none, whatever the config lists; the engine itself is never its own
    // observer (two instances would write one store).
    let none = served.open(json!({"config": config, "model": model(16_000), "observers": []}));
    assert!(none.value.tools.is_empty(), "{:?}", none.value.tools);
    let lcm_config = tree.root().join("lcm.yaml");
    std::fs::write(
        &lcm_config,
        "context:\n  observers: [lcm]\n  tokenizer: rough\nlcm:\n  database: store/lcm.sqlite\n",
    )
    .unwrap();
    let lcm = served.open(json!({"config": lcm_config, "engine": "lcm", "model": model(16_000)}));
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": lcm.value.session, "session_id": "lcm-active"}),
    );
    let _: Answer<Compressed> = served.call(
        method::COMPRESS,
        json!({"session": lcm.value.session, "messages": messages[..40]}),
    );
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    assert!(!log.contains("detached") && !log.contains("ERROR"), "{log}");
    assert!(
        log.contains("`context.observers` names `telemetry` twice"),
        "{log}"
    );
    // Telemetry was attached once: each message appended once.
    let appended: usize = std::fs::read_to_string(tree.root().join("telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["kind"] == "messages_appended")
        .map(|line| line["messages"].as_array().unwrap().len())
        .sum();
    assert_eq!(appended, messages.len());
}

#[test]
fn two_sessions_logging_to_one_telemetry_file_keep_each_others_lines() {
    let tree = PluginDir::new();
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    tree.config(
        "context:\n  observers: [telemetry]\n  tokenizer: rough\ntelemetry:\n  path: telemetry.jsonl\n",
    );
    let config = tree.root().join("config.yaml");
    let messages = transcript("coupon-fix.json");
    let mut served = Served::start(tree.root());
    // The second session opens after the first has logged: it must not cut the file under it.
    for agent_session in ["first", "second"] {
        let session = served.open(json!({"config": config})).value.session;
        let _: Answer<()> = served.call(
            method::ON_SESSION_START,
            json!({"session": session, "session_id": agent_session}),
        );
        let _: Answer<Compressed> = served.call(
            method::COMPRESS,
            json!({"session": session, "messages": messages}),
        );
    }
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    let text = std::fs::read_to_string(tree.root().join("telemetry.jsonl")).unwrap();
    let mut ended = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let fact: Value = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("line {}: {error}: {line:?}", number + 1));
        if fact["kind"] == "session_ended" {
            ended.push(fact["session_id"].as_str().unwrap().to_owned());
        }
    }
    ended.sort();
    assert_eq!(ended, ["first", "second"]);
}

#[test]
fn an_observer_that_fails_in_one_of_several_sessions_is_detached_with_a_warning_naming_that_session() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let messages = transcript("coupon-fix.json");
    let mut served = Served::start(tree.root());
    let mut contexts = Vec::new();
    for observe in ["count", "fail"] {
        let config = json!({"faulty": {"observe": observe, "observe_fail_at": 1}});
        let session = served
            .open(json!({"config": config, "observers": ["faulty"], "model": model(16_000)}))
            .value
            .session;
        let context = start_and_compress_the_first_half(&mut served, &session, &messages);
        let echo = served.client.call_value(
            method::HANDLE_TOOL_CALL,
            json!({"session": session, "name": "faulty_echo", "arguments": {"said": observe}}),
        );
        let echo = match echo {
            Ok(answer) => answer["value"].clone(),
            Err(ClientError::Rpc { error, .. }) => json!({"error": error.message}),
            Err(other) => panic!("{other}"),
        };
        contexts.push((session, context, echo));
    }
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    assert!(
        contexts[0].1 == contexts[1].1,
        "the failing observer changed the context"
    );
    assert_eq!(contexts[0].2, json!({"said": "count"}));
    assert!(
        contexts[1].2["error"].as_str().unwrap().contains("detached"),
        "{}",
        contexts[1].2
    );
    let detached: Vec<&str> = log.lines().filter(|line| line.contains("detached")).collect();
    assert_eq!(detached.len(), 1, "{log}");
    assert!(
        detached[0].contains(&format!("session {}: observer `faulty` detached", contexts[1].0)),
        "{log}"
    );
}

/// A served session of the compressor with lcm observing, its first half compressed: the tree
/// (kept alive), the server, the session, the transcript and the context the agent sends next.
fn lcm_observing_the_compressor() -> (PluginDir, Served, String, Vec<Message>, Vec<Message>) {
    let tree = PluginDir::new();
    tree.engine("lcm", "ctxhost_engine_lcm");
    tree.config("context:\n  engine: compressor\n  tokenizer: rough\nlcm:\n  database: store/lcm.sqlite\n");
    let config = tree.root().join("config.yaml");
    let messages = transcript("warehouse-migration.json");
    let mut served = Served::start(tree.root());
    let opened = served.open(json!({"config": config, "model": model(16_000), "observers": ["lcm"]}));
    let session = opened.value.session;
    let context = start_and_compress_the_first_half(&mut served, &session, &messages);
    (tree, served, session, messages, context)
}

#[test]
fn an_observer_swapped_in_then_out_goes_back_to_observing_as_in_a_replay() {
    let (_tree, mut served, session, _, context) = lcm_observing_the_compressor();
    let _: Answer<EngineInfo> = served.call(method::SWAP, json!({"session": session, "engine": "lcm"}));
    let back: Answer<EngineInfo> =
        served.call(method::SWAP, json!({"session": session, "engine": "compressor"}));
    let names: Vec<&str> = back
        .value
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_status"],
        "lcm observes again"
    );
    let mut later = context.clone();
    later.push(Message::new(
        Role::User,
        "remember the word zanzibar-after-the-swaps",
    ));
    let _: Answer<bool> = served.call(
        method::SHOULD_COMPRESS_PREFLIGHT,
        json!({"session": session, "messages": later}),
    );
    let grep: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "lcm_grep", "arguments": {"pattern": "zanzibar-after-the-swaps"}}),
    );
    assert!(
        !grep.value["matches"].as_array().unwrap().is_empty(),
        "{:#}",
        grep.value
    );
    // Swapped to itself, lcm starts afresh: the instance it replaces ends, and does not stay on
    // observing beside it (its tools would be offered twice, its store written by two).
    let _: Answer<EngineInfo> = served.call(method::SWAP, json!({"session": session, "engine": "lcm"}));
    let again: Answer<EngineInfo> = served.call(method::SWAP, json!({"session": session, "engine": "lcm"}));
    assert!(again.value.warnings.is_empty(), "{:?}", again.value.warnings);
    assert_eq!(again.value.tools.len(), 4, "{:?}", again.value.tools);
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    assert!(!log.contains("WARN") && !log.contains("error"), "{log}");
}

#[test]
fn a_swap_to_the_engine_observing_the_session_makes_it_stop_observing_first() {
    let (_tree, mut served, session, messages, context) = lcm_observing_the_compressor();
    let swapped: Answer<EngineInfo> = served.call(method::SWAP, json!({"session": session, "engine": "lcm"}));
    assert_eq!(swapped.value.engine, "lcm");
    // Two instances of lcm writing one store failed here on its unique keys.
    let _: Answer<Compressed> =
        served.call(method::COMPRESS, json!({"session": session, "messages": context}));
    let status: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "lcm_status", "arguments": {}}),
    );
    let (exit, log) = served.finish();
    assert!(exit.success(), "{log}");
    assert!(!log.contains("WARN") && !log.contains("error"), "{log}");
    // Every message is stored (what lcm observed, then what it was given as the engine; the
    // compressor's summary and the tail around it are new messages to it).
    assert!(status.value.get("error").is_none(), "{:#}", status.value);
    assert!(
        status.value["messages"].as_u64().unwrap() >= messages.len() as u64,
        "{:#}",
        status.value
    );
}

#[test]
fn a_swap_to_an_observer_whose_new_instance_fails_to_start_keeps_the_engine_and_the_observer_observing() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.config("faulty:\n  fail_session_start_from: 2\n");
    let mut served = Served::start(tree.root());
    let messages = transcript("coupon-fix.json");
    let opened =
        served.open(json!({"engine": "compressor", "observers": ["faulty"], "model": model(16_000)}));
    let session = opened.value.session;
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "swap-fails"}),
    );
    let refused = served.refused(method::SWAP, json!({"session": session, "engine": "faulty"}));
    assert_eq!(refused.code, code::CONFIG_ERROR, "{refused:?}");
    assert!(
        refused.message.ends_with(
            "instance 2 refuses to start a session; the session keeps `compressor` (`faulty` keeps observing the session)"
        ),
        "{}",
        refused.message
    );
    // The compressor still owns the context, and the observer still answers its tool.
    let compressed: Answer<Compressed> = served.call(
        method::COMPRESS,
        json!({"session": session, "messages": messages}),
    );
    assert!(compressed.value.messages.len() < messages.len());
    let status: Answer<Value> = served.call(method::GET_STATUS, json!({"session": session}));
    assert_eq!(status.value["engine"], "compressor", "{:#}", status.value);
    let echo: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "faulty_echo", "arguments": {"said": "still here"}}),
    );
    assert_eq!(echo.value, json!({"said": "still here"}));
    let (exit, log) = served.finish();
    assert!(exit.success(), "{log}");
}

#[test]
fn compress_unchecked_hands_back_the_engines_answer_as_written_while_compress_still_refuses_it() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    let mut served = Served::start(tree.root());
    let messages = transcript("coupon-fix.json");
    let telemetry = tree.root().join("telemetry.jsonl");
    let spoiling = |observers: Value| {
        json!({"engine": "faulty", "model": model(50_000), "observers": observers,
               "config": {"faulty": {"invalid_output": "drop_system"}, "telemetry": {"path": telemetry}}})
    };
    let session = served.open(spoiling(json!([]))).value.session;
    let request = json!({"session": session, "messages": messages});
    // A protocol client (the Hermes bridge) asking for `compress` gets the server's check.
    let refused = served.refused(method::COMPRESS, request.clone());
    assert!(
        is_error_kind(&refused, code::INVALID_OUTPUT, Some("invalid_output")),
        "{refused:?}"
    );
    // `compress/unchecked` hands back what the engine wrote, for a client that checks it itself.
    let unchecked: Answer<Unchecked> = served.call(method::COMPRESS_UNCHECKED, request);
    let written = messages_from_json(unchecked.value.messages.get()).unwrap();
    assert!(!written.is_empty());
    assert!(
        written.iter().all(|m| m.role != Role::System),
        "as the engine wrote it"
    );
    assert_eq!(unchecked.counters.compression_count, 2);
    let records: Answer<Vec<CompactionRecord>> =
        served.call(method::COMPACTIONS, json!({"session": session}));
    assert_eq!(records.value.len(), 1, "only the checked call is recorded");

    // With observers, the server checks anyway: they are told only what the context became.
    let watched = served.open(spoiling(json!(["telemetry"]))).value.session;
    let refused = served.refused(
        method::COMPRESS_UNCHECKED,
        json!({"session": watched, "messages": messages}),
    );
    assert!(
        is_error_kind(&refused, code::INVALID_OUTPUT, Some("invalid_output")),
        "{refused:?}"
    );
    assert!(
        refused.message.contains("the system message was lost or altered"),
        "{}",
        refused.message
    );
}

#[test]
fn the_servers_isolation_flag_holds_for_a_session_that_brings_its_own_config() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::spawn_with(tree.root(), &["--isolation", "process"]);
    served.client.initialize("integration-tests").unwrap();
    // Its config says nothing of isolation (in process, by default): the server's flag decides.
    let crashing = json!({
        "config": {"context": {"engine": "faulty"}, "faulty": {"crash_in": "compress", "crash": "exit"}},
        "model": model(50_000),
    });
    let session = served.open(crashing).value.session;
    let lost = served.refused(
        method::COMPRESS,
        json!({"session": session, "messages": transcript("coupon-fix.json")}),
    );
    assert!(
        lost.message.contains("its process exited with code"),
        "{}",
        lost.message
    );
    // The crash took the engine's process, not the server.
    let other = served.open(json!({"engine": "compressor", "model": model(50_000)}));
    assert_eq!(other.value.engine, "compressor");
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
}

#[test]
fn a_session_opened_without_a_model_takes_the_window_of_its_config() {
    let tree = PluginDir::new();
    let mut served = Served::start(tree.root());
    let config = json!({"model": {"default": "some/model", "context_length": 32_000}});
    let session = served.open(json!({"config": config})).value.session;
    let counters: Answer<()> = served.call(method::COUNTERS, json!({"session": session}));
    assert_eq!(
        counters.counters.context_length, 32_000,
        "{:?}",
        counters.counters
    );
    assert!(counters.counters.threshold_tokens > 0, "{:?}", counters.counters);
    let compress: Answer<bool> = served.call(
        method::SHOULD_COMPRESS,
        json!({"session": session, "prompt_tokens": 1_000_000}),
    );
    assert!(compress.value, "a context far over the window is to be compacted");
    // Without a window anywhere, the client is told.
    let bare = served.open(json!({"config": {"context": {"engine": "compressor"}}}));
    assert!(
        bare.value.warnings.iter().any(|w| w.starts_with("no window: ")),
        "{:?}",
        bare.value.warnings
    );
}

#[test]
fn a_plugins_warning_about_its_block_is_one_of_the_sessions_warnings() {
    let tree = PluginDir::new();
    tree.engine("masking", "ctxhost_engine_masking");
    let mut served = Served::start(tree.root());
    let config = json!({"context": {"engine": "masking"}, "masking": {"keep_lats": 3}});
    let opened = served.open(json!({"config": config, "model": model(16_000)}));
    assert_eq!(
        opened.value.warnings,
        ["engine `masking`: masking.keep_lats: unknown setting, ignored; did you mean `masking.keep_last`?"],
        "{:?}",
        opened.value
    );
    // A session with a config file: its line. The library's logger was set up by the first
    // session's engine, whose config has no file: each warning is placed by its own config.
    let file = tree.config("context:\n  engine: masking\nmasking:\n  keep_lats: 3\n");
    let opened = served.open(json!({"config": file, "model": model(16_000)}));
    assert_eq!(
        opened.value.warnings,
        [format!(
            "engine `masking`: {}:4: masking.keep_lats: unknown setting, ignored; did you mean `masking.keep_last`?",
            file.display()
        )],
    );
    let opened = served.open(json!({"config": config, "model": model(16_000)}));
    assert!(
        !opened.value.warnings[0].contains("config.yaml"),
        "{:?}",
        opened.value.warnings
    );
}

#[test]
fn an_engines_own_log_line_is_led_by_the_session_it_is_about_in_process_and_isolated() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let messages = transcript("coupon-fix.json");
    // Isolated, the engine's line comes from a child `serve` whose own session is `s1`, whichever
    // session of this server it runs for.
    for flags in [&[][..], &["--isolation", "process"]] {
        let mut served = Served::spawn_with(tree.root(), flags);
        served.client.initialize("integration-tests").unwrap();
        let config = json!({"context": {"engine": "faulty"}});
        let sessions: Vec<String> = (0..2)
            .map(|_| {
                served
                    .open(json!({"config": config, "model": model(16_000)}))
                    .value
                    .session
            })
            .collect();
        // Only the second session compacts: its line alone says it, naming it.
        start_and_compress_the_first_half(&mut served, &sessions[1], &messages);
        let (status, log) = served.finish();
        assert!(status.success(), "{log}");
        let compressing: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("faulty engine compressing"))
            .collect();
        assert_eq!(
            compressing,
            [format!(
                "warning: session {}: engine `faulty`: faulty engine compressing {} messages",
                sessions[1],
                messages.len() / 2
            )],
            "{flags:?}: {log}"
        );
    }
}

#[test]
fn hermes_starting_the_session_again_after_a_compaction_does_not_hand_observers_the_kept_messages_twice() {
    let tree = PluginDir::new();
    tree.engine("telemetry", "ctxhost_engine_telemetry");
    let messages = transcript("warehouse-migration.json");
    // Hermes after each compaction: the same id (in place), or a new one continuing the old.
    for (case, next_id) in [("in place", "warehouse"), ("rotated", "warehouse-2")] {
        let log = tree.root().join(format!("telemetry-{next_id}.jsonl"));
        let config = json!({
            "context": {"engine": "compressor", "observers": ["telemetry"]},
            "telemetry": {"path": log},
        });
        let mut served = Served::start(tree.root());
        let session = served
            .open(json!({"config": config, "model": model(16_000)}))
            .value
            .session;
        let context = start_and_compress_the_first_half(&mut served, &session, &messages);
        let info = json!({"model": "example/model", "context_length": 16_000, "platform": "hermes",
                          "boundary_reason": "compression", "old_session_id": "warehouse"});
        let _: Answer<()> = served.call(
            method::ON_SESSION_START,
            json!({"session": session, "session_id": next_id, "info": info}),
        );
        let _: Answer<()> = served.call(
            method::ON_SESSION_END,
            json!({"session": session, "session_id": next_id, "messages": context}),
        );
        let (status, stderr) = served.finish();
        assert!(status.success(), "{stderr}");
        let appended: usize = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|line| line["kind"] == "messages_appended")
            .map(|line| line["messages"].as_array().unwrap().len())
            .sum();
        assert_eq!(appended, messages.len(), "{case}: each message once");
    }
}

#[test]
fn a_session_is_offered_each_tool_once_by_name_as_a_replay_is_and_told_what_was_left_out() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    // The session's engine, then an observer of the compressor's session: told the same way.
    let engine = json!({"config": {"context": {"engine": "faulty"}, "faulty": {"bad_tools": true}}});
    let observer = json!({"config": {"faulty": {"bad_tools": true}}, "observers": ["faulty"]});
    for mut params in [engine, observer] {
        params["model"] = model(16_000);
        let opened = served.open(params.clone());
        let names: Vec<&str> = opened
            .value
            .tools
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["faulty_echo", "faulty_host_services"], "{params}");
        assert_eq!(opened.value.warnings, FAULTY_BAD_TOOLS_WARNINGS, "{params}");
        let session = opened.value.session;
        let tools: Answer<Vec<Value>> = served.call(method::GET_TOOL_SCHEMAS, json!({"session": session}));
        assert_eq!(tools.value.len(), 2, "{:?}", tools.value);
    }
}

#[test]
fn an_observers_tool_the_engine_offers_already_stays_the_engines_and_the_warning_names_the_observer() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    tree.engine("lcm", "ctxhost_engine_lcm");
    let mut served = Served::start(tree.root());
    let config = json!({
        "context": {"engine": "lcm", "observers": ["faulty"]},
        "lcm": {"database": "store/lcm.sqlite"},
        "faulty": {"echo_tool": "lcm_grep"},
    });
    let opened = served.open(json!({"config": config, "model": model(16_000)}));
    assert_eq!(
        opened.value.warnings,
        ["observer `faulty` offers the tool `lcm_grep`, which the active engine offers already; the first keeps it"]
    );
    let names: Vec<&str> = opened
        .value
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "lcm_grep",
            "lcm_describe",
            "lcm_expand",
            "lcm_status",
            "faulty_host_services"
        ]
    );
    // The engine's tool answers, not the observer's echo of its arguments.
    let grep: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": opened.value.session, "name": "lcm_grep", "arguments": {"pattern": "x"}}),
    );
    assert!(grep.value.get("matches").is_some(), "{:#}", grep.value);
}

#[test]
fn shutdown_names_an_observer_detached_as_its_session_ended_among_the_problems() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    // Its second fact is the session's end: it fails there, as the session closes.
    let config = json!({"faulty": {"observe": "fail", "observe_fail_at": 2}});
    let session = served
        .open(json!({"config": config, "observers": ["faulty"], "model": model(16_000)}))
        .value
        .session;
    let _: Answer<()> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "ending"}),
    );
    let report: ShutdownReport = served.call(method::SHUTDOWN, json!({}));
    assert_eq!(report.sessions_ended, 1);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].starts_with(&format!("session {session}: observer `faulty` detached: ")),
        "{:?}",
        report.problems
    );
    let (status, _) = served.finish();
    assert!(status.success());
}

#[test]
fn a_detached_observers_tools_are_offered_no_more_and_a_call_of_one_says_why_it_was_detached() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    let config = json!({"faulty": {"observe": "fail", "observe_fail_at": 1}});
    let opened = served.open(json!({"config": config, "observers": ["faulty"], "model": model(16_000)}));
    let session = opened.value.session;
    assert_eq!(
        tool_names(&opened.value.tools),
        ["faulty_echo", "faulty_host_services"]
    );
    // Its first fact (the session's start) fails it.
    start_and_compress_the_first_half(&mut served, &session, &transcript("coupon-fix.json"));
    let tools: Answer<Vec<Value>> = served.call(method::GET_TOOL_SCHEMAS, json!({"session": session}));
    assert_eq!(tool_names(&tools.value), Vec::<String>::new());
    let refused = served.refused(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "faulty_echo", "arguments": {"said": "hello"}}),
    );
    assert_eq!(
        refused,
        RpcError {
            code: code::ENGINE_FAILED,
            message: "observer `faulty` was detached: engine `faulty` failed in `observe`: faulty engine: told to fail in `observe`; its tool `faulty_echo` is offered no more".to_owned(),
            data: Some(Box::new(ErrorData {
                kind: "unavailable".to_owned(),
                engine: Some("faulty".to_owned()),
                method: Some(method::HANDLE_TOOL_CALL.to_owned()),
            })),
        }
    );
    // The session goes on: a tool nobody offered is still the engine's to answer.
    let unknown: Answer<Value> = served.call(
        method::HANDLE_TOOL_CALL,
        json!({"session": session, "name": "nobodys_tool", "arguments": {}}),
    );
    assert!(unknown.value["error"].is_string(), "{}", unknown.value);
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    let detached: Vec<&str> = log.lines().filter(|line| line.contains("detached")).collect();
    assert_eq!(detached.len(), 1, "{log}");
}

/// An observer stuck in a fact it was handed is detached by the tool call that waits for it past
/// the observer timeout: that call is the same error as every later one, not an answer.
#[test]
fn the_tool_call_that_detaches_a_stuck_observer_is_the_error_later_calls_are() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    let config =
        json!({"context": {"observer_timeout": 1}, "faulty": {"observe": "hang", "observe_fail_at": 1}});
    let opened = served.open(json!({"config": config, "observers": ["faulty"], "model": model(16_000)}));
    let session = opened.value.session;
    let _: Answer<Value> = served.call(
        method::ON_SESSION_START,
        json!({"session": session, "session_id": "stuck"}),
    );
    let call = || json!({"session": session, "name": "faulty_echo", "arguments": {"said": "hello"}});
    let first = served.refused(method::HANDLE_TOOL_CALL, call());
    let second = served.refused(method::HANDLE_TOOL_CALL, call());
    assert_eq!(first, second);
    assert_eq!(first.code, code::ENGINE_FAILED);
    assert!(
        first
            .message
            .starts_with("observer `faulty` was detached: it finished no call in 1 s"),
        "{}",
        first.message
    );
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
}

fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_observers_tool_named_like_one_the_agent_has_itself_is_left_to_the_agent() {
    let tree = PluginDir::new();
    tree.engine("faulty", "ctxhost_test_faulty");
    let mut served = Served::start(tree.root());
    let config = json!({"faulty": {"echo_tool": "terminal"}});
    let call = json!({"name": "terminal", "arguments": {"command": "ls"}});
    // A client that does not say which tools its agent has (as before protocol 1.4): the
    // observer's `terminal` is offered and answers.
    let unaware = served.open(json!({"config": config, "observers": ["faulty"], "model": model(16_000)}));
    assert_eq!(
        tool_names(&unaware.value.tools),
        ["terminal", "faulty_host_services"]
    );
    assert_eq!(unaware.value.warnings, Vec::<String>::new());
    let mut params = call.clone();
    params["session"] = json!(unaware.value.session);
    let echo: Answer<Value> = served.call(method::HANDLE_TOOL_CALL, params);
    assert_eq!(echo.value, json!({"command": "ls"}));
    // One that does: the observer's `terminal` is neither offered nor asked, said once.
    let aware = served.open(json!({
        "config": config, "observers": ["faulty"], "model": model(16_000),
        "agent_tools": ["terminal", "read_file"],
    }));
    let session = aware.value.session;
    let warning = "observer `faulty` offers the tool `terminal`, which the agent has itself; it is not offered as the observer's, and the agent's calls of it are not given to the observer";
    assert_eq!(tool_names(&aware.value.tools), ["faulty_host_services"]);
    assert_eq!(aware.value.warnings, [warning]);
    let tools: Answer<Vec<Value>> = served.call(method::GET_TOOL_SCHEMAS, json!({"session": session}));
    assert_eq!(tool_names(&tools.value), ["faulty_host_services"]);
    let mut params = call.clone();
    params["session"] = json!(session);
    let answer: Answer<Value> = served.call(method::HANDLE_TOOL_CALL, params);
    assert_eq!(
        answer.value,
        json!({"error": "Unknown context engine tool: terminal"}),
        "the engine answers a tool it does not offer; the observer is not asked"
    );
    let (status, log) = served.finish();
    assert!(status.success(), "{log}");
    assert_eq!(log.matches(warning).count(), 1, "{log}");
}
