#!/usr/bin/env python3
"""lcm (this repository's plugin) and lossless-hermes-py 0.1.6 side by side, on the same messages.

    cargo bench -p ctxhost-lcm --bench lcm -- 10000,100000,1000000   # our figures, and the sessions
    python3 benches/lcm_compare.py [1000,10000[,100000]]               # theirs, then both tables

lossless-hermes-py (PyPI) is installed into .cache/py/venv on first use. It is fed the very
messages our bench stored (.cache/lcm-bench/session-<n>.jsonl, ~1 KB of JSON each, tool-heavy),
through its own ingestion (`_ingest_messages`, what its `compress` and `on_session_end` call), in
batches of 1,000 as ours are. Its tools are called through its `handle_tool_call`. The summarizer is
not involved in any figure.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
VENV = CACHE / "py" / "venv"
BENCH = CACHE / "lcm-bench"
PACKAGE = "lossless-hermes-py==0.1.6"
SENTINEL = "SENTINEL-BENCH-4242"


def ensure_installed():
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(python), "-c", "import lossless_hermes, yaml"], capture_output=True)
    if probe.returncode != 0:
        # Its __init__ imports yaml without declaring it.
        subprocess.run([str(python), "-m", "pip", "install", "-q", PACKAGE, "pyyaml"], check=True)
    return python


def load_session(n):
    source = BENCH / f"session-{n}.jsonl"
    if not source.exists():
        bigger = sorted(BENCH.glob("session-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
        bigger = [p for p in bigger if int(p.stem.split("-")[1]) >= n]
        if not bigger:
            sys.exit(f"{source} is missing: run `cargo bench -p ctxhost-lcm --bench lcm` first")
        source = bigger[0]
    with open(source) as f:
        lines = [next(f) for _ in range(n)]
    messages = [json.loads(line) for line in lines]
    if not any(SENTINEL in json.dumps(m) for m in messages):
        messages[n // 10] = {"role": "user", "content": f"please deploy {SENTINEL} to staging"}
    return messages


def median_ms(runs, f):
    f()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_theirs(n):
    """Runs inside the venv (see the bottom of this file)."""
    import logging
    import sqlite3

    logging.disable(logging.CRITICAL)
    database = BENCH / f"hermes-{n}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    os.environ["LCM_DATABASE_PATH"] = str(database)
    from lossless_hermes import LcmContextEngine

    messages = load_session(n)
    json_bytes = sum(len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in messages)
    engine = LcmContextEngine(config_context_length=128_000)
    engine._ensure_initialized()
    engine.on_session_start("bench")
    conversation = engine.current_conversation_id
    start = time.perf_counter()
    for at in range(0, n, 1000):
        engine._ingest_messages(conversation, messages[at : at + 1000])
    ingest_seconds = time.perf_counter() - start
    db = sqlite3.connect(database)
    stored = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    disk = sum(os.path.getsize(f"{database}{s}") for s in ("", "-wal") if os.path.exists(f"{database}{s}"))

    def tool(name, args):
        return json.loads(engine.handle_tool_call(name, args))

    def grep(query, mode):
        answer = {}

        def call():
            answer.update(tool("lcm_grep", {"query": query, "mode": mode, "limit": 50}))

        ms = median_ms(3, call)
        return {"ms": ms, "matches": answer.get("results_count", 0), "error": answer.get("error")}

    grep_regex = grep(SENTINEL, "regex")
    grep_full_text = grep(SENTINEL, "full_text")
    # A plain, rare word (only in the sentinel's message): what its search can answer.
    grep_word_regex = grep("staging", "regex")
    grep_word_full_text = grep("staging", "full_text")
    middle = stored // 2
    expand = median_ms(3, lambda: tool("lcm_expand", {"target_type": "message", "target_id": str(middle)}))
    return {
        "messages": n,
        "stored": stored,
        "stored_share": stored / n,
        "ingest_msgs_per_s": n / ingest_seconds,
        "json_bytes_per_message": json_bytes / n,
        "disk_bytes_per_message": disk / n,
        "disk_over_json": disk / json_bytes,
        "grep_regex": grep_regex,
        "grep_full_text": grep_full_text,
        "grep_word_regex": grep_word_regex,
        "grep_word_full_text": grep_word_full_text,
        "expand_message_ms": expand,
    }


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "1000,10000").split(",")]
    python = ensure_installed()
    theirs = []
    for n in sizes:
        out = subprocess.run(
            [str(python), __file__, "--measure", str(n)], capture_output=True, text=True, check=True
        )
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps(figures))
        theirs.append(figures)
    results = BENCH / "results.json"
    ours = json.loads(results.read_text())["sizes"] if results.exists() else []
    by_size = {r["messages"]: r for r in ours}

    def ms(value):
        return f"{value:.2f} ms" if value is not None else "-"

    def grep_ms(o, label):
        """Our median `lcm_grep` call for the case `label` of benches/lcm.rs."""
        return next(case["figures"]["ms"] for case in o["grep"] if case["label"] == label)

    print("\n| figure | messages | lcm (ctxhost) | lossless-hermes-py 0.1.6 | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for t in theirs:
        n = t["messages"]
        o = by_size.get(n)
        rows = [
            ("ingest, messages/s (wall)", f"{o['ingest_msgs_per_s']:.0f}" if o and o["ingest_msgs_per_s"] else "-",
             f"{t['ingest_msgs_per_s']:.0f}",
             f"{o['ingest_msgs_per_s'] / t['ingest_msgs_per_s']:.0f}x faster" if o and o["ingest_msgs_per_s"] else ""),
            ("messages stored", f"{o['stored']} (100%)" if o else "-", f"{t['stored']} ({t['stored_share']:.0%})", ""),
            ("disk per message (x its JSON)",
             f"{o['disk_bytes_per_message']:.0f} B ({o['disk_over_json']:.2f}x)" if o else "-",
             f"{t['disk_bytes_per_message']:.0f} B ({t['disk_over_json']:.2f}x)",
             f"{t['disk_bytes_per_message'] / o['disk_bytes_per_message']:.1f}x smaller" if o else ""),
            ("lcm_grep regex, sentinel", ms(grep_ms(o, "regex, a rare literal")) if o else "-",
             f"{ms(t['grep_regex']['ms'])}, {t['grep_regex']['matches']} found",
             f"{t['grep_regex']['ms'] / grep_ms(o, 'regex, a rare literal'):.0f}x faster" if o else ""),
            ("lcm_grep full text, sentinel", ms(grep_ms(o, "full text, the sentinel (hyphens, digits)")) if o else "-",
             f"{ms(t['grep_full_text']['ms'])}, {t['grep_full_text']['matches']} found"
             + (f" ({t['grep_full_text']['error']})" if t["grep_full_text"]["error"] else ""), ""),
            ("lcm_grep regex, `staging`", ms(grep_ms(o, "regex, a rare word")) if o else "-",
             f"{ms(t['grep_word_regex']['ms'])}, {t['grep_word_regex']['matches']} found",
             f"{t['grep_word_regex']['ms'] / grep_ms(o, 'regex, a rare word'):.0f}x faster" if o else ""),
            ("lcm_grep full text (ours: the sentinel; theirs: `staging`)", ms(grep_ms(o, "full text, the sentinel (hyphens, digits)")) if o else "-",
             f"{ms(t['grep_word_full_text']['ms'])}, {t['grep_word_full_text']['matches']} found", ""),
            ("lcm_expand one message", ms(o["expand_message_ms"]) if o else "-", ms(t["expand_message_ms"]),
             f"{t['expand_message_ms'] / o['expand_message_ms']:.0f}x faster" if o else ""),
        ]
        for name, a, b, ratio in rows:
            print(f"| {name} | {n:,} | {a} | {b} | {ratio} |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--measure":
        print(json.dumps(measure_theirs(int(sys.argv[2]))))
    else:
        main()
