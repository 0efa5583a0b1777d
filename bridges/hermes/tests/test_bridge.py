"""The bridge inside Hermes: found by Hermes's own plugin loader, compress on real transcripts with
ctxhost's compressor and with lcm, lcm's tools, a server killed mid-session, Hermes's agent loop."""

import copy
import json
import os
import shutil
import signal

import pytest
from agent.context_engine import ContextEngine

from conftest import CTXHOST_BIN, CTXHOST_CONFIG, HERMES_HOME, sequence_problems, transcript
from hermes_ctxhost import BridgeSettings, CtxhostEngine
from hermes_ctxhost.engine import COUNTERS

STATUS_FIELDS = {"last_prompt_tokens", "threshold_tokens", "context_length", "usage_percent", "compression_count"}


def engine_for(engine: str, binary=CTXHOST_BIN) -> CtxhostEngine:
    """An engine as the plugin builds it from its config block."""
    block = {"engine": engine, "binary": str(binary), "config": str(CTXHOST_CONFIG)}
    return CtxhostEngine(BridgeSettings.from_block(block, str(HERMES_HOME)))


def started(engine: CtxhostEngine, session_id: str, context_length: int = 64_000) -> CtxhostEngine:
    """The calls Hermes makes before the first turn."""
    engine.update_model(model="example/model", context_length=context_length, base_url="", api_key="secret")
    engine.on_session_start(session_id, hermes_home=str(HERMES_HOME), platform="cli", model="example/model",
                            context_length=context_length, conversation_id=None)
    return engine


def timeless(answer: str) -> dict:
    """A tool's JSON answer without its timings."""
    return {key: value for key, value in json.loads(answer).items() if not key.endswith("_ms")}


def last_user_text(messages):
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def test_hermes_own_plugin_loader_returns_the_bridges_engine():
    from hermes_cli.plugins import get_plugin_context_engine, get_plugin_manager

    engine = get_plugin_context_engine()
    assert isinstance(engine, ContextEngine)
    assert type(engine).__name__ == "CtxhostEngine"
    assert engine.name == "ctxhost"
    assert "ctxhost" in {key for key, plugin in get_plugin_manager()._plugins.items() if plugin.enabled}
    # Hermes deep-copies it per agent: the copy is clean and no server runs before the first call.
    agent_copy = copy.deepcopy(engine)
    assert agent_copy._server is None
    assert all(getattr(agent_copy, counter) == 0 for counter in COUNTERS)
    started(agent_copy, "loader")
    try:
        assert agent_copy.context_length == 64_000
        assert agent_copy.threshold_tokens == 1_280  # ctxhost.yaml: compression.threshold 0.02
        status = agent_copy.get_status()
        assert STATUS_FIELDS <= set(status), status
        assert status["engine"] == "compressor"
        agent_copy.update_from_response({"prompt_tokens": 1_500, "completion_tokens": 20, "total_tokens": 1_520})
        assert (agent_copy.last_prompt_tokens, agent_copy.last_total_tokens) == (1_500, 1_520)
        assert agent_copy.should_compress() is True
        assert agent_copy.should_compress(100) is False
        # Hermes writes some counters itself; the status shows them as the base class does.
        agent_copy.last_prompt_tokens = 50_000
        assert agent_copy.get_status()["last_prompt_tokens"] == 50_000
        assert agent_copy.threshold_tokens == int(agent_copy.context_length * agent_copy.threshold_percent)
        # A usage without counts (Hermes sends `{}` after a response without usage) is not an error.
        agent_copy.update_from_response({})
        assert agent_copy.last_prompt_tokens == 0
    finally:
        agent_copy.close()


@pytest.mark.parametrize("served", ["compressor", "lcm"])
def test_compress_on_a_real_transcript_returns_a_valid_shorter_context(served):
    engine = started(engine_for(served), f"compress-{served}")
    try:
        messages = transcript("warehouse-migration.json")
        snapshot = copy.deepcopy(messages)
        engine.update_from_response({"prompt_tokens": 60_000, "completion_tokens": 100})
        assert engine.should_compress()
        compressed = engine.compress(messages, current_tokens=60_000)
        assert messages == snapshot, "the input list is not modified"
        assert sequence_problems(compressed) == []
        assert len(compressed) < len(messages)
        assert compressed[0]["role"] == "system"
        assert compressed[0]["content"].startswith(messages[0]["content"])
        assert any(m["role"] == "user" and last_user_text(messages) in str(m["content"]) for m in compressed)
        assert engine.compression_count == 1
        assert engine._last_compression_made_progress and not engine._last_compress_aborted
        assert engine.get_status()["compression_count"] == 1
    finally:
        engine.close()


def test_lcm_grep_through_handle_tool_call_returns_json():
    engine = started(engine_for("lcm"), "grep")
    try:
        names = [schema["name"] for schema in engine.get_tool_schemas()]
        assert "lcm_grep" in names
        messages = transcript("warehouse-migration.json")
        engine.compress(messages)
        answer = engine.handle_tool_call("lcm_grep", {"pattern": "warehouse"}, messages=messages)
        assert isinstance(answer, str)
        found = json.loads(answer)
        assert isinstance(found, dict) and "error" not in found, found
        unknown = json.loads(engine.handle_tool_call("no_such_tool", {}))
        assert "error" in unknown
    finally:
        engine.close()


def test_a_server_killed_mid_session_is_restarted_and_the_context_is_unchanged():
    engine = started(engine_for("lcm"), "killed")
    try:
        messages = transcript("warehouse-migration.json")
        compressed = engine.compress(messages, current_tokens=60_000)
        grep = timeless(engine.handle_tool_call("lcm_grep", {"pattern": "migration"}))
        assert grep["matches"], grep
        count, threshold = engine.compression_count, engine.threshold_tokens
        first = engine._server.process
        os.kill(first.pid, signal.SIGKILL)
        first.wait()

        # The next call starts a new server on the same session: lcm's store answers as before.
        assert timeless(engine.handle_tool_call("lcm_grep", {"pattern": "migration"})) == grep
        assert engine._server.process.pid != first.pid
        assert (engine.compression_count, engine.threshold_tokens) == (count, threshold)
        context = compressed + [{"role": "user", "content": "and now the invoices table"}]
        snapshot = copy.deepcopy(context)
        again = engine.compress(context)
        assert context == snapshot
        assert sequence_problems(again) == []
        assert again[-1]["content"] == "and now the invoices table"
    finally:
        engine.close()


def test_a_server_that_cannot_be_restarted_leaves_the_context_as_it_was(tmp_path):
    binary = tmp_path / "ctxhost"
    shutil.copy(CTXHOST_BIN, binary)
    engine = started(engine_for("compressor", binary), "gone")
    try:
        messages = transcript("coupon-fix.json")
        os.kill(engine._server.process.pid, signal.SIGKILL)
        engine._server.process.wait()
        binary.unlink()
        assert engine.compress(messages) is messages
        assert engine._last_compress_aborted
        assert "ctxhost" in engine._last_summary_error
        assert json.loads(engine.handle_tool_call("lcm_grep", {}))["error"].startswith("ctxhost: ")
        assert STATUS_FIELDS <= set(engine.get_status())
    finally:
        engine.close()


def test_a_missing_binary_registers_no_engine(tmp_path):
    from hermes_ctxhost import register

    class Ctx:
        engines = []

        def register_context_engine(self, engine):
            self.engines.append(engine)

    from hermes_ctxhost.settings import SettingsError

    with pytest.raises(SettingsError, match="`ctxhost.binary`"):
        BridgeSettings.from_block({"binary": str(tmp_path / "nowhere")})
    ctx = Ctx()
    register(ctx)  # HERMES_HOME's config names a binary that exists
    assert [engine.name for engine in ctx.engines] == ["ctxhost"]
    # Made without arguments, the engine reads the same block.
    assert CtxhostEngine().settings == ctx.engines[0].settings


def test_an_inline_config_and_a_plugins_dir_serve_lcm_and_a_swap_changes_the_engine():
    from conftest import PLUGINS

    block = {
        "engine": "lcm",
        "binary": str(CTXHOST_BIN),
        "plugins_dir": str(PLUGINS),
        "config": {"lcm": {"database": "inline/lcm.sqlite"}, "context": {"tokenizer": "rough"}},
    }
    engine = started(CtxhostEngine(BridgeSettings.from_block(block, str(HERMES_HOME))), "inline")
    try:
        assert engine.served_engine == "lcm"
        assert "lcm_grep" in [schema["name"] for schema in engine.get_tool_schemas()]
        engine.compress(transcript("coupon-fix.json"))
        # Relative paths of an inline config are HERMES_HOME's.
        assert (HERMES_HOME / "inline" / "lcm.sqlite").is_file()
        assert engine.threshold_percent == engine.threshold_tokens / engine.context_length
        engine.swap("compressor")
        assert engine.served_engine == "compressor"
        assert engine.get_tool_schemas() == []
        assert engine.context_length == 64_000, "the swapped-in engine was told the model"
    finally:
        engine.close()


def test_observers_named_in_ctxhosts_config_watch_the_session():
    # The typical use: the compressor manages Hermes's context, LCM records every message.
    from conftest import PLUGINS

    block = {
        "engine": "compressor",
        "binary": str(CTXHOST_BIN),
        "plugins_dir": str(PLUGINS),
        "config": {"context": {"observers": ["lcm"], "tokenizer": "rough"},
                   "lcm": {"database": "observed/lcm.sqlite"}},
    }
    engine = started(CtxhostEngine(BridgeSettings.from_block(block, str(HERMES_HOME))), "observed")
    try:
        assert "lcm_grep" in [schema["name"] for schema in engine.get_tool_schemas()]
        messages = transcript("warehouse-migration.json")
        compressed = engine.compress(messages)
        assert "extract_orders_61" not in json.dumps(compressed), "the compressor kept it: pick another word"
        found = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "extract_orders_61"}))
        assert found["matches"], found
    finally:
        engine.close()


def test_a_server_that_dies_says_how_in_the_warning(caplog):
    engine = started(engine_for("compressor"), "aborted")
    try:
        os.kill(engine._server.process.pid, signal.SIGABRT)
        with caplog.at_level("WARNING", logger="hermes_ctxhost"):
            engine.compress(transcript("coupon-fix.json"))
        gone = [record.getMessage() for record in caplog.records if "starting it again" in record.getMessage()]
        assert len(gone) == 1, caplog.text
        assert "the server was killed by SIGABRT" in gone[0], gone[0]
    finally:
        engine.close()


def test_a_model_the_server_refuses_keeps_the_one_before(caplog):
    engine = started(engine_for("compressor"), "refused-model")
    try:
        with caplog.at_level("WARNING", logger="hermes_ctxhost"):
            engine.update_model(model="unknown/model", context_length=0)
        assert "`update_model` failed" in caplog.text and "context_length" in caplog.text, caplog.text
        assert (engine.context_length, engine.threshold_tokens) == (64_000, 1_280)
        # A server started again opens the session with the model it accepted.
        os.kill(engine._server.process.pid, signal.SIGKILL)
        engine._server.process.wait()
        compressed = engine.compress(transcript("coupon-fix.json"))
        assert sequence_problems(compressed) == []
        assert engine.get_status()["context_length"] == 64_000
    finally:
        engine.close()


def test_a_ctxhost_config_the_server_refuses_is_said_once_and_the_compressor_runs(tmp_path, caplog):
    broken = tmp_path / "broken.yaml"
    broken.write_text("context:\n  engine: [unclosed\n")
    block = {"engine": "lcm", "binary": str(CTXHOST_BIN), "config": str(broken)}
    engine = CtxhostEngine(BridgeSettings.from_block(block, str(HERMES_HOME)))
    try:
        with caplog.at_level("WARNING", logger="hermes_ctxhost"):
            started(engine, "broken-config", context_length=10_000)
            # The window is known, so the engine compacts: not a window of 0 that never does.
            assert (engine.context_length, engine.served_engine) == (10_000, "compressor")
            assert engine.threshold_tokens > 0
            assert engine.should_compress(10_000)
            compressed = engine.compress(transcript("coupon-fix.json"))
            assert not engine._last_compress_aborted
            assert sequence_problems(compressed) == []
        refused = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
        assert len(refused) == 1, caplog.text
        assert str(broken) in refused[0] and "runs its compressor with its defaults" in refused[0], refused[0]
    finally:
        engine.close()


def test_a_server_that_cannot_start_is_said_once_and_not_started_at_every_call(tmp_path, caplog):
    starts = tmp_path / "starts"
    binary = tmp_path / "ctxhost"
    binary.write_text(f"#!/bin/sh\necho started >> {starts}\nexit 1\n")
    binary.chmod(0o755)
    engine = CtxhostEngine(BridgeSettings.from_block({"binary": str(binary)}, str(HERMES_HOME)))
    try:
        with caplog.at_level("WARNING", logger="hermes_ctxhost"):
            started(engine, "cannot-start", context_length=10_000)
            for _ in range(5):
                assert engine.should_compress(5_000) is False
            messages = transcript("coupon-fix.json")
            assert engine.compress(messages) is messages
        # Calls degrade without raising, the window Hermes gave is kept, and the start is tried
        # once, not at each of the calls above.
        assert engine.context_length == 10_000
        assert starts.read_text().count("started") == 1
        said = [r.getMessage() for r in caplog.records]
        assert len([m for m in said if "cannot be started" in m]) == 1, caplog.text
        assert len(said) <= 2, caplog.text
    finally:
        engine.close()
