//! `lcm_grep` within a time budget: a search continued call after call, each stopped as early as
//! it can be, finds exactly what one unbounded search finds, in the same order.

use std::time::Duration;

use ctxhost_engine_abi::Engine;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{
    search::{grep, Hit, Mode, Query, Scope},
    store::{hash_json, NewMessage, Store},
    synthetic,
    walk::Reached,
};

/// Two sessions' messages interleaved in blocks, a second apart, in a store of `count`
/// messages: more than one window of ids, so that windows and continuations both happen.
fn store(dir: &std::path::Path, count: usize) -> Store {
    let mut store = Store::open(&dir.join("budget.sqlite")).unwrap();
    let sessions = [
        store.ensure_session("a", 0).unwrap(),
        store.ensure_session("b", 0).unwrap(),
    ];
    let mut messages = Vec::new();
    let mut block = 0;
    while messages.len() < count {
        messages.extend(synthetic::conversation(block, 150, 600));
        block += 1;
    }
    messages.truncate(count);
    // A few messages only a scan finds, spread over the store.
    for at in (97..count).step_by(1_811) {
        messages[at] = ctxhost_engine_abi::Message::user(format!("tag QWERTYUI-ASDFG {at}"));
    }
    let mut seqs = [0i64; 2];
    for (n, chunk) in messages.chunks(700).enumerate() {
        let session = n % 2;
        let rows: Vec<NewMessage> = chunk
            .iter()
            .enumerate()
            .map(|(i, message)| {
                let json = serde_json::to_string(message).unwrap();
                seqs[session] += 1;
                NewMessage {
                    seq: seqs[session],
                    role: message.role.as_str(),
                    hash: hash_json(&json),
                    json,
                    tokens: 10,
                    created_at: 1_000_000 + ((n * 700 + i) as i64) * 1_000,
                    dated: true,
                }
            })
            .collect();
        store.insert_messages(sessions[session], &rows).unwrap();
    }
    store
}

/// Calls `grep` with a zero budget, passing each partial answer's oldest id on as `before_id`,
/// until one is complete or the limit is reached; the matches of every call, and how many calls.
fn continued(store: &Store, query: &Query) -> (Vec<Hit>, usize) {
    let mut step = Query {
        budget: Duration::ZERO,
        ..query.clone()
    };
    let mut hits = Vec::new();
    let mut calls = 0;
    loop {
        let found = grep(store.connection(), &step).unwrap();
        calls += 1;
        hits.extend(found.hits);
        if hits.len() >= query.limit {
            break;
        }
        step.limit = query.limit - hits.len();
        match (found.reached, found.summaries_stopped) {
            (Reached::Deadline { oldest, newest, .. }, _) => {
                assert!(oldest <= newest, "{oldest} > {newest}");
                assert!(step.before_id.is_none_or(|before| newest < before));
                step.before_id = Some(oldest);
            }
            (_, Some(stopped)) => {
                let below = store.summary_num(&stopped.oldest).unwrap();
                assert!(below.is_some(), "{stopped:?}");
                assert!(step.before_summary.is_none_or(|before| below < Some(before)));
                step.before_summary = below;
            }
            _ => break,
        }
        assert!(calls < 10_000, "the search does not end");
    }
    (hits, calls)
}

#[test]
fn a_search_continued_in_steps_finds_what_one_unbounded_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let count = 12_000;
    let store = store(dir.path(), count);
    let mut partial_searches = 0;
    for (pattern, mode) in [
        ("warehouse", Mode::Regex),
        ("error rollback", Mode::Regex),
        ("(?i)ERROR ROLLBACK", Mode::Regex),
        ("rollback always", Mode::FullText),
        ("error[E0308]: mismatched", Mode::FullText),
        ("config.yaml 1234", Mode::FullText),
        (r"[A-Z]{8}-[A-Z]{5}", Mode::Regex),
        (r"QWERTYUI-\w+ \d+", Mode::Regex),
        (r"file\d+", Mode::Regex),
        (r"\d{4}\b", Mode::Regex),
        (r"zebra quantum", Mode::Regex),
    ] {
        for (session, since, before) in [
            (None, None, None),
            (Some(1), None, None),
            (Some(2), Some(1_000_000 + 2_500_000), Some(1_000_000 + 9_000_000)),
        ] {
            for limit in [3, 50, 200] {
                let query = Query {
                    pattern: pattern.to_owned(),
                    mode,
                    scope: Scope::Both,
                    limit,
                    since,
                    before,
                    session,
                    before_id: None,
                    before_summary: None,
                    budget: Duration::from_secs(3_600),
                };
                let whole = grep(store.connection(), &query).unwrap();
                assert!(!matches!(whole.reached, Reached::Deadline { .. }), "{pattern}");
                let (steps, calls) = continued(&store, &query);
                let steps: Vec<Hit> = steps.into_iter().take(limit).collect();
                assert_eq!(
                    steps, whole.hits,
                    "{pattern} ({mode:?}), session {session:?}, {since:?}..{before:?}, limit {limit}"
                );
                partial_searches += usize::from(calls > 1);
            }
        }
    }
    assert!(
        partial_searches > 20,
        "only {partial_searches} searches ran out of time"
    );
}

#[test]
fn a_search_below_an_id_finds_only_older_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 6_000);
    let query = |before_id| Query {
        pattern: "QWERTYUI".to_owned(),
        mode: Mode::Regex,
        scope: Scope::Messages,
        limit: 200,
        since: None,
        before: None,
        session: None,
        before_id,
        before_summary: None,
        budget: Duration::from_secs(3_600),
    };
    let all: Vec<String> = grep(store.connection(), &query(None))
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(all, ["msg_5531", "msg_3720", "msg_1909", "msg_98"]);
    let older: Vec<String> = grep(store.connection(), &query(Some(3_720)))
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(older, ["msg_1909", "msg_98"]);
    assert!(grep(store.connection(), &query(Some(1))).unwrap().hits.is_empty());
}

#[test]
fn a_partial_answer_says_how_far_it_searched_and_how_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    drop(store(dir.path(), 3_000));
    let mut engine = super::engine(
        dir.path(),
        100_000,
        json!({ "database": dir.path().join("budget.sqlite"), "grep_budget_ms": 0 }),
    );
    let mut arguments = json!({ "pattern": "[A-Z]{8}-[A-Z]{5}", "all_sessions": true });
    let first = engine.handle_tool_call("lcm_grep", &arguments, None);
    assert_eq!(first["partial"], true, "{first}");
    assert_eq!(first["searched"]["newest"], "msg_3000", "{first}");
    assert_eq!(first["searched"]["stored"], 3_000, "{first}");
    let oldest = first["searched"]["oldest"].as_str().unwrap().to_owned();
    assert_eq!(first["next_before_id"], oldest.as_str());
    let note = first["note"].as_str().unwrap();
    assert!(note.contains(&format!("\"before_id\": \"{oldest}\"")), "{note}");

    let mut found = Vec::new();
    let mut answer = first;
    let mut calls = 1;
    loop {
        found.extend(answer["matches"].as_array().unwrap().iter().cloned());
        let Some(next) = answer["next_before_id"].as_str() else {
            assert!(
                answer.get("partial").is_none(),
                "a complete answer is as before: {answer}"
            );
            break;
        };
        arguments["before_id"] = json!(next);
        answer = engine.handle_tool_call("lcm_grep", &arguments, None);
        calls += 1;
    }
    assert!(calls > 10, "{calls} calls");
    let ids: Vec<&str> = found.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["msg_1909", "msg_98"], "every planted message, newest first");

    for (bad, says) in [
        (json!("sum_0"), "`before_id` must be a message id"),
        (
            json!("sum_0123456789abcdef"),
            "no `sum_0123456789abcdef` in this store",
        ),
        (json!(-4), "`before_id` must be a message id"),
        (json!({}), "`before_id` must be a message id"),
    ] {
        let answer = engine.handle_tool_call("lcm_grep", &json!({ "pattern": "x", "before_id": bad }), None);
        assert!(
            answer["error"].as_str().is_some_and(|e| e.contains(says)),
            "{answer}"
        );
    }
}

#[test]
fn summaries_come_once_the_messages_are_all_searched_as_in_one_unbounded_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = super::engine(dir.path(), 4_000, json!({ "leaf_chunk_tokens": 600 }));
    engine
        .on_session_start("budget", &ctxhost_engine_abi::SessionInfo::default())
        .unwrap();
    let (_, compactions) = super::replay(&mut engine, &synthetic::conversation(11, 60, 800));
    assert!(compactions > 2, "{compactions} compactions");
    for arguments in [
        json!({ "pattern": "warehouse", "scope": "both", "limit": 200 }),
        json!({ "pattern": "[a-z]{5}\\.[a-z]{4}", "scope": "both", "limit": 200 }),
        json!({ "pattern": "migration", "mode": "full_text", "scope": "both", "limit": 200 }),
        json!({ "pattern": "[0-9]{4}", "scope": "summaries" }),
    ] {
        engine.config.grep_budget_ms = 600_000;
        let whole = engine.handle_tool_call("lcm_grep", &arguments, None);
        assert!(whole.get("partial").is_none(), "{whole}");
        let whole = whole["matches"].as_array().unwrap().clone();
        assert!(
            whole.iter().any(|m| m["role"] == "summary"),
            "{arguments}: no summary found"
        );

        engine.config.grep_budget_ms = 0;
        let mut step = arguments.clone();
        let mut steps = Vec::new();
        let mut calls = 0;
        let mut summary_calls = 0;
        loop {
            let answer = engine.handle_tool_call("lcm_grep", &step, None);
            calls += 1;
            let matches = answer["matches"].as_array().unwrap();
            let continued_in_summaries = step["before_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("sum_"));
            if continued_in_summaries {
                // Every message was searched by the calls before.
                summary_calls += 1;
                assert!(matches.iter().all(|m| m["role"] == "summary"), "{answer}");
            }
            steps.extend(matches.iter().cloned());
            if let Some(summaries) = answer["searched"].get("summaries") {
                // Out of time among the summaries: it says so, and continues below the oldest.
                assert_eq!(answer["searched"]["every_message"], true, "{answer}");
                assert_eq!(answer["next_before_id"], summaries["oldest"], "{answer}");
            }
            match answer.get("next_before_id") {
                Some(next) => step["before_id"] = next.clone(),
                None => break,
            }
            assert!(calls < 10_000, "{arguments}: the search does not end");
        }
        assert_eq!(steps, whole, "{arguments} in {calls} calls");
        assert!(
            calls > 1 || arguments["scope"] == "summaries",
            "{arguments}: the messages took one call"
        );
        // With no time at all, the summaries too are searched a few at a time.
        assert!(
            summary_calls > 1,
            "{arguments}: the summaries took {summary_calls} continued calls"
        );
    }
}
