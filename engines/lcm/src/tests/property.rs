//! Properties over many generated conversations: losslessness and convergence.

use std::collections::BTreeSet;

use ctxhost_engine_abi::{CompressRequest, Content, Engine, Message, Role, SessionInfo};
use ctxhost_engine_kit::tokens::estimate_messages_tokens;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{assert_valid_compaction, engine, replay};
use crate::{assemble, synthetic, synthetic::Rng, Lcm, Slot};

/// Every message id reachable from `context` by expanding its summaries transitively, plus the
/// raw messages it holds; each message's JSON as `lcm_expand` returned it.
fn reachable(engine: &mut Lcm, context: &[Message]) -> Vec<(i64, String)> {
    let mut found = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for entry in engine.ingest(context.to_vec()).unwrap() {
        match entry.slot {
            Slot::Summaries(ids) => pending.extend(ids),
            Slot::System { id } | Slot::Raw { id, .. } => {
                let answer =
                    engine.handle_tool_call("lcm_expand", &json!({ "id": format!("msg_{id}") }), None);
                found.push((id, answer["json"].as_str().unwrap().to_owned()));
            }
            Slot::Foreign { .. } => panic!("lcm's own contexts hold no other engine's message"),
        }
    }
    while let Some(id) = pending.pop() {
        let mut cursor = 0;
        loop {
            // A small page, to exercise paging.
            let answer = engine.handle_tool_call(
                "lcm_expand",
                &json!({ "id": id, "max_tokens": 300, "cursor": cursor }),
                None,
            );
            assert!(answer.get("error").is_none(), "{answer}");
            for source in answer["sources"].as_array().unwrap() {
                let source_id = source["id"].as_str().unwrap();
                match source_id.strip_prefix("msg_") {
                    Some(n) => {
                        // A message larger than the page is read by its own id, page by page.
                        let json = match source["json"].as_str() {
                            Some(json) => json.to_owned(),
                            None => read_in_pages(engine, source_id),
                        };
                        found.push((n.parse().unwrap(), json));
                    }
                    None => pending.push(source_id.to_owned()),
                }
            }
            match answer.get("next_cursor").and_then(Value::as_u64) {
                Some(next) => cursor = next,
                None => break,
            }
        }
    }
    found
}

/// The JSON of message `id`, put together from `lcm_expand`'s pages of 300 tokens.
fn read_in_pages(engine: &mut Lcm, id: &str) -> String {
    let (mut json, mut cursor) = (String::new(), 0);
    loop {
        let page = engine.handle_tool_call(
            "lcm_expand",
            &json!({ "id": id, "max_tokens": 300, "cursor": cursor }),
            None,
        );
        json.push_str(page["json_part"].as_str().unwrap_or_else(|| panic!("{page}")));
        match page.get("next_cursor").and_then(Value::as_u64) {
            Some(next) => cursor = next,
            None => return json,
        }
    }
}

/// Every match of `lcm_grep` with `arguments`, calling again with each partial answer's
/// `next_before_id` until an answer is complete.
fn grep_to_the_end(engine: &mut Lcm, mut arguments: Value) -> Vec<Value> {
    let mut matches = Vec::new();
    for _ in 0..10_000 {
        let answer = engine.handle_tool_call("lcm_grep", &arguments, None);
        matches.extend(
            answer["matches"]
                .as_array()
                .unwrap_or_else(|| panic!("{answer}"))
                .iter()
                .cloned(),
        );
        match answer.get("next_before_id") {
            Some(next) => arguments["before_id"] = next.clone(),
            None => return matches,
        }
    }
    panic!("lcm_grep {arguments} never completes")
}

fn plant_sentinel(messages: &mut [Message], rng: &mut Rng, sentinel: &str) -> usize {
    let at = 1 + rng.below(messages.len() - 1);
    let message = &mut messages[at];
    match &mut message.content {
        Content::Text(text) => text.push_str(&format!(" {sentinel} ")),
        Content::Parts(parts) => parts.push(json!({ "type": "text", "text": sentinel })),
        Content::Null => {
            // An assistant message that only calls tools: plant it in the arguments.
            let call = &mut message.tool_calls.as_mut().unwrap()[0];
            call.function.arguments = json!({ "command": format!("echo {sentinel}") }).to_string();
        }
    }
    at
}

#[test]
fn every_message_stays_reachable_and_exact_after_any_number_of_compactions() {
    for seed in 0..12u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng::new(seed);
        let window = 3_000 + rng.below(9_000) as u64;
        let config = json!({
            "fresh_tail": 2 + rng.below(20),
            "leaf_chunk_tokens": 300 + rng.below(3_000),
            "fan_in": 2 + rng.below(4),
            "max_depth": 1 + rng.below(3),
            // Every other seed answers each lcm_grep call after the least search it makes.
            "grep_budget_ms": if seed % 2 == 0 { 0 } else { 60 },
        });
        let mut engine = engine(dir.path(), window, config.clone());
        engine.on_session_start("prop", &SessionInfo::default()).unwrap();
        let mut messages = synthetic::conversation(seed, 40 + rng.below(120), 200 + rng.below(2_500));
        let sentinel = format!("SENTINEL-{seed}-7f3a");
        let planted = plant_sentinel(&mut messages, &mut rng, &sentinel);

        let (context, compactions) = replay(&mut engine, &messages);
        assert!(compactions >= 1, "seed {seed}: no compaction ({config})");

        let found = reachable(&mut engine, &context);
        let ids: BTreeSet<i64> = found.iter().map(|(id, _)| *id).collect();
        let stored = super::count(&mut engine, "messages") as usize;
        assert_eq!(stored, messages.len(), "seed {seed}: not every message stored");
        assert_eq!(
            ids.len(),
            stored,
            "seed {seed}: not every message reachable ({config})"
        );
        let mut by_id: Vec<_> = found
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect();
        by_id.sort();
        let originals: Vec<String> = messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        let expanded: Vec<String> = by_id.into_iter().map(|(_, json)| json).collect();
        assert_eq!(
            expanded, originals,
            "seed {seed}: an expansion differs from its original"
        );

        // The sentinel as typed, and as a regex with no word to narrow on, which reads every
        // message: followed through every partial answer.
        for (pattern, mode) in [
            (sentinel.clone(), "regex"),
            (sentinel.clone(), "full_text"),
            (r"[A-Z]{8}-[0-9]+-[0-9a-f]{4}".to_owned(), "regex"),
        ] {
            let matches = grep_to_the_end(&mut engine, json!({ "pattern": pattern, "mode": mode }));
            assert_eq!(matches.len(), 1, "seed {seed} {pattern} {mode}: {matches:?}");
            let expanded = engine.handle_tool_call("lcm_expand", &json!({ "id": matches[0]["id"] }), None);
            assert_eq!(
                expanded["json"].as_str().unwrap(),
                originals[planted],
                "seed {seed}"
            );
        }
    }
}

#[test]
fn compaction_of_any_input_terminates_and_never_grows_the_context() {
    for seed in 100..160u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng::new(seed);
        let window = 200 + rng.below(6_000) as u64;
        let mut engine = engine(
            dir.path(),
            window,
            json!({ "fresh_tail": 1 + rng.below(10), "leaf_chunk_tokens": 50 + rng.below(2_000), "fan_in": 2 + rng.below(3) }),
        );
        let messages = synthetic::conversation(seed, 1 + rng.below(60), 10 + rng.below(4_000));
        let mut context = messages;
        // Compacting the result again and again: each never grows, and it settles.
        for _ in 0..6 {
            let compacted = engine
                .compress(context.clone(), &CompressRequest::default())
                .unwrap();
            assert_valid_compaction(&context, &compacted);
            context = compacted;
        }
        let settled = engine
            .compress(context.clone(), &CompressRequest::default())
            .unwrap();
        assert!(estimate_messages_tokens(&settled) <= estimate_messages_tokens(&context));
    }
}

#[test]
fn a_summary_message_is_never_a_user_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path(), 4_000, json!({ "fresh_tail": 4 }));
    let messages = synthetic::conversation(5, 80, 1_000);
    let (context, compactions) = replay(&mut engine, &messages);
    assert!(compactions > 0);
    let summary = context
        .iter()
        .find(|m| assemble::parse_summary_message(m).is_some())
        .unwrap();
    assert_eq!(summary.role, Role::Assistant);
    assert_eq!(
        context
            .iter()
            .filter(|m| m.text().contains(assemble::SUMMARY_HEADER))
            .count(),
        1
    );
}
