#!/usr/bin/env python3
"""Hermes Agent's own compressor against ctxhost's compressor through the bridge, on the same
transcripts, in one Python process (Hermes Agent 0.19.0's venv):

    .cache/hermes/venv/bin/python benches/hermes_bridge.py [target/release/ctxhost]

Both run without a summary model. Hermes's compressor, finding no auxiliary model, drops the
middle turns with its static "summary unavailable" handoff; ctxhost's writes its extractive
summary. Hermes's first call spends seconds looking for an auxiliary provider (its credential pool
reloads config.yaml some 150 times) and then stops looking for 600 s: that first call is shown
apart, and the median is of the calls after it on the same instance, so that it measures the
compaction. ctxhost's figure is the median over fresh engines (the server started before the
clock), including the pipe and the JSON both ways. It says nothing of summary quality.
"""

import json
import logging
import os
import pathlib
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))
logging.disable(logging.WARNING)

from agent.context_compressor import ContextCompressor  # noqa: E402
from hermes_ctxhost import BridgeSettings, CtxhostEngine  # noqa: E402

CONTEXT_LENGTH = 64_000
RUNS = 15


def hermes_compressor():
    return ContextCompressor(
        model="bench/model",
        threshold_percent=0.5,
        quiet_mode=True,
        config_context_length=CONTEXT_LENGTH,
    )


def ctxhost_compressor(binary):
    settings = BridgeSettings.from_block(
        {"binary": binary, "engine": "compressor", "config": {"compression": {"threshold": 0.5}}}
    )
    engine = CtxhostEngine(settings)
    engine.update_model(model="bench/model", context_length=CONTEXT_LENGTH)
    return engine


def timed_ms(engine, messages):
    started = time.perf_counter()
    result = engine.compress(messages, current_tokens=CONTEXT_LENGTH)
    return (time.perf_counter() - started) * 1e3, len(result)


def hermes_ms(messages):
    engine = hermes_compressor()
    first, _ = timed_ms(engine, messages)
    runs = [timed_ms(engine, messages) for _ in range(RUNS)]
    return first, statistics.median(ms for ms, _ in runs), sorted({size for _, size in runs})


def ctxhost_ms(binary, messages):
    runs = []
    for _ in range(RUNS):
        engine = ctxhost_compressor(binary)
        runs.append(timed_ms(engine, messages))
        engine.close()
    return statistics.median(ms for ms, _ in runs), sorted({size for _, size in runs})


def main():
    binary = str(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "target/release/ctxhost").resolve())
    print(f"median of {RUNS} runs, one Python process; window {CONTEXT_LENGTH:,}, threshold 0.5, no summary model\n")
    print(f"{'transcript':<26} {'messages':>8} {'Hermes 1st':>11} {'Hermes':>10} {'ctxhost/bridge':>15} {'ctxhost/Hermes':>15}")
    for name in ("coupon-fix.json", "warehouse-migration.json"):
        messages = json.loads((REPO / "examples/transcripts" / name).read_text())["messages"]
        first, hermes, hermes_sizes = hermes_ms(messages)
        ctxhost, ctxhost_sizes = ctxhost_ms(binary, messages)
        print(
            f"{name:<26} {len(messages):>8} {first:>8.0f} ms {hermes:>7.2f} ms {ctxhost:>12.2f} ms {ctxhost / hermes:>14.2f}x"
            f"   (messages after: Hermes {hermes_sizes}, ctxhost {ctxhost_sizes})"
        )


if __name__ == "__main__":
    main()
