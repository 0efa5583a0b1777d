"""Hermes's own agent loop (``AIAgent``) against the e2e suite's local model server, with the
ctxhost engine selected by config; the threshold in ctxhost.yaml is low enough that the short
conversation compacts."""

from conftest import sequence_problems

# A conversation already under way: enough turns that the compressor has a middle to summarise.
HISTORY = [
    message
    for turn in range(8)
    for message in (
        {"role": "user", "content": f"Step {turn}: list what changed in module_{turn}.py and why. " * 4},
        {"role": "assistant", "content": f"In module_{turn}.py the parser now rejects empty keys; "
                                         f"the cache key moved to a hash of the path. " * 4},
    )
]


def test_hermes_agent_loop_compacts_through_the_ctxhost_engine(model_server):
    from run_agent import AIAgent

    agent = AIAgent(
        base_url=model_server,
        api_key="local-test-key",
        model="SmolLM2-135M-Instruct",
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        enabled_toolsets=[],
        max_iterations=2,
    )
    engine = agent.context_compressor
    try:
        assert type(engine).__name__ == "CtxhostEngine", type(engine)
        assert engine.name == "ctxhost"
        assert engine.context_length == 64_000
        result = agent.run_conversation("Summarise the changes in one sentence.", conversation_history=HISTORY)
        assert engine.compression_count >= 1, result
        records = engine.compactions()
        applied = [record for record in records if record["outcome"]["status"] == "applied"]
        assert applied, records
        assert applied[0]["engine"] == "compressor"
        assert applied[0]["messages_after"] < applied[0]["messages_before"]
        messages = result["messages"]
        assert sequence_problems([m for m in messages if m.get("role") != "system"]) == []
        assert any("Summarise the changes" in str(m.get("content")) for m in messages)
        assert any(str(m.get("content")).startswith("[CONTEXT COMPACTION]") for m in messages), messages
        # The model answered on the compacted context: the turn ran to its end.
        assert messages[-1]["role"] == "assistant" and messages[-1]["content"], result.get("final_response")
    finally:
        engine.close()
