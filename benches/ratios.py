#!/usr/bin/env python3
"""Prints the ratios the targets are stated in, from criterion's last run (target/criterion)."""
import json
import pathlib
import sys

TARGET = pathlib.Path(__file__).resolve().parent.parent / "target"
ROOT = TARGET / "criterion"
MEMORY = TARGET / "bench-memory.json"
LCM = TARGET.parent / ".cache" / "lcm-bench" / "results.json"


def mean_ns(*parts):
    path = ROOT.joinpath(*parts, "new", "estimates.json")
    if not path.is_file():
        return None
    return json.loads(path.read_text())["mean"]["point_estimate"]


def throughput_bytes(*parts):
    path = ROOT.joinpath(*parts, "new", "benchmark.json")
    if not path.is_file():
        return None
    return (json.loads(path.read_text()).get("throughput") or {}).get("Bytes")


def mb_per_s(*parts):
    ns, size = mean_ns(*parts), throughput_bytes(*parts)
    return None if ns is None or size is None else size / ns * 1e9 / 1e6


def show(label, value, target=None, fmt="{:.2f}"):
    text = "n/a (not measured)" if value is None else fmt.format(value)
    print(f"{label:<58} {text:>12}   {target or ''}")


def ratio(a, b):
    return None if a is None or b is None else a / b


def main():
    if not ROOT.is_dir():
        sys.exit(f"{ROOT}: no criterion results; run `cargo xtask bench` first")
    print("figures from one run of `cargo xtask bench` (this machine is shared and noisy)\n")
    show("trivial call through the library (ns)", mean_ns("trivial_call", "library"), "target < 10 ns")
    show("trivial call, static (ns)", mean_ns("trivial_call", "static"))
    show("trivial call, direct Rust call (ns)", mean_ns("trivial_call", "direct"))
    for n in ("500", "5000"):
        lib, sta = mean_ns("compress", "library", n), mean_ns("compress", "static", n)
        show(f"compress {n} messages: library / static", ratio(lib, sta), "target <= 1.3x", "{:.3f}x")
    direct = mean_ns("compress", "direct", "5000")
    show("compress 5,000 tool-heavy messages, direct (ms)", None if direct is None else direct / 1e6, "target < 10 ms")
    static = mean_ns("compress", "static", "5000")
    show("compress 5,000 messages through the host, static (ms)", None if static is None else static / 1e6)
    heavy = mean_ns("compress_heavy", "5000")
    show(
        "compress heavy session, 5,000 msgs ~8.7 MB, 200k window (ms)",
        None if heavy is None else heavy / 1e6,
        "target <= 5 ms (engine call)",
    )
    whole = mean_ns("process", "compress_heavy")
    show("whole `ctxhost compress` of the heavy session, spawn to exit (ms)", None if whole is None else whole / 1e6, "target <= 25 ms")
    for name in ("claude-code", "openhands", "hermes", "codex", "codex-legacy", "swe-agent"):
        other = mean_ns("process", f"compress_heavy_{name}")
        if other is not None:
            show(f"  the same session as {name} writes it (ms)", other / 1e6, "target <= 25 ms")
    replay = mean_ns("process", "run_heavy")
    show("whole `ctxhost run` of the heavy session (ms)", None if replay is None else replay / 1e6)
    show("  run / compress", ratio(replay, whole), "target <= 2x", "{:.2f}x")
    per = {n: mean_ns("compress_scaling", str(n)) for n in (1000, 10000, 100000)}
    for n in (1000, 10000, 100000):
        value = None if per[n] is None else per[n] / n
        show(f"compress_scaling {n:>6}: ns per message", value, "flat or falling = linear", "{:.0f}")
    show(
        "  100,000 vs 1,000 per-message cost",
        ratio(per[100000] and per[100000] / 100000, per[1000] and per[1000] / 1000),
        "<= ~1.0 = at most linear",
        "{:.2f}x",
    )
    disc = mean_ns("discovery_100_folders")
    show("discovery of 100 plugin folders (ms)", None if disc is None else disc / 1e6, "target < 20 ms", "{:.3f}")
    print()
    for counter in ("rough", "o200k_base", "cl100k_base"):
        show(f"token counting, {counter} (MB/s)", mb_per_s("token_throughput", counter), fmt="{:.1f}")
    for counter in ("o200k_base", "cl100k_base"):
        load = mean_ns("tokenizer_load", counter)
        show(f"loading {counter}, once per process (ms)", None if load is None else load / 1e6, fmt="{:.0f}")
    for counter in ("rough", "o200k_base"):
        recount = mean_ns("per_turn_200k", "recount", counter)
        cached = mean_ns("per_turn_200k", "cached", counter)
        show(f"per turn at 200k tokens, {counter}, recount all (us)", recount and recount / 1e3, fmt="{:.1f}")
        show(f"per turn at 200k tokens, {counter}, LiveContext cache (us)", cached and cached / 1e3, fmt="{:.1f}")
        show(f"  recount / cache, {counter}", ratio(recount, cached), "cost of one new message only", "{:.0f}x")
    print()
    replay = {n: mean_ns("replay", str(n)) for n in (10000, 100000)}
    for n in (10000, 100000):
        show(f"replay of {n:,} messages from JSONL, compressor (s)", replay[n] and replay[n] / 1e9, fmt="{:.2f}")
        show(f"  per message (us)", replay[n] and replay[n] / n / 1e3, fmt="{:.0f}")
        show(f"  file read and replayed (MB/s)", mb_per_s("replay", str(n)), fmt="{:.1f}")
    show(
        "  100,000 vs 10,000 per-message cost",
        ratio(replay[100000] and replay[100000] / 100000, replay[10000] and replay[10000] / 10000),
        "<= ~1.0 = at most linear",
        "{:.2f}x",
    )
    show_observers()
    show_serve()
    show_isolation()
    show_memory()


def show_observers():
    print()
    none = mean_ns("observers", "none")
    show("replay of 10,000 messages, no observer (ms)", none and none / 1e6, fmt="{:.0f}")
    for label, what, target in [
        ("idle-1", "one observer asking for no fact (lifecycle only)", "target < 1.05x"),
        ("idle-4", "four observers asking for no fact", "target < 1.20x (5% each)"),
        # Every message crosses the library boundary as JSON: the host writes it, the SDK parses it.
        ("count-1", "one observer taking every fact, doing nothing", None),
        ("count-4", "four observers taking every fact, doing nothing", None),
        ("lcm", "lcm observing (every message stored)", "target < 2x"),
    ]:
        with_it = mean_ns("observers", label)
        show(f"  {what}: / none", ratio(with_it, none), target, "{:.2f}x")


def show_serve():
    """`ctxhost serve` against the same engine in process (benches/serve.rs)."""
    print()
    served, local = mean_ns("serve_trivial_call", "served"), mean_ns("serve_trivial_call", "in_process")
    show("trivial call (`counters`) through `ctxhost serve` (us)", served and served / 1e3, fmt="{:.1f}")
    show("trivial call in process (ns)", local, fmt="{:.1f}")
    for n in ("500", "5000"):
        served, local = mean_ns("serve_compress", "served", n), mean_ns("serve_compress", "in_process", n)
        show(f"compress {n} messages through serve (ms)", served and served / 1e6)
        show(f"compress {n} messages in process (ms)", local and local / 1e6)
        show(f"  served / in process, {n}", ratio(served, local), fmt="{:.2f}x")


def show_isolation():
    """`cargo bench -p ctxhost --bench isolation`: the masking plugin in process and in a child."""
    print()
    inside, isolated = mean_ns("isolation_trivial", "in_process"), mean_ns("isolation_trivial", "isolated")
    show("trivial call (should_compress), in process (us)", inside and inside / 1e3, fmt="{:.3f}")
    show("trivial call (should_compress), isolated (us)", isolated and isolated / 1e3, fmt="{:.1f}")
    for n in ("500", "5000"):
        inside = mean_ns("isolation_compress", "in_process", n)
        isolated = mean_ns("isolation_compress", "isolated", n)
        show(f"compress {n} messages, in process (ms)", inside and inside / 1e6, fmt="{:.2f}")
        show(f"compress {n} messages, isolated (ms)", isolated and isolated / 1e6, fmt="{:.2f}")
        target = "target <= 2x" if n == "5000" else ""
        show(f"  isolated / in process, {n} messages", ratio(isolated, inside), target, "{:.2f}x")


def show_memory():
    print()
    if not MEMORY.is_file():
        show("peak memory (benches/memory.rs)", None)
        return
    figures = json.loads(MEMORY.read_text())
    for row in figures.get("compress", []):
        show(
            f"compress {row['messages']:,} messages: peak MB (input {row['input_bytes'] / 1e6:.0f} MB)",
            row["peak_bytes"] / 1e6,
            fmt="{:.1f}",
        )
    rows = {row["messages"]: row for row in figures.get("replay", [])}
    for n, row in sorted(rows.items()):
        show(
            f"replay {n:,} messages: peak MB (file {row['file_bytes'] / 1e6:.0f} MB)",
            row["peak_bytes"] / 1e6,
            fmt="{:.1f}",
        )
        show("  peak / file size", row["peak_bytes"] / row["file_bytes"], fmt="{:.3f}")
        show("  reading the stream alone, its own peak (MB)", row["reading_alone_peak_bytes"] / 1e6, fmt="{:.1f}")
        show("  outcome kept to the end (MB)", row["outcome_bytes"] / 1e6, fmt="{:.1f}")
        show("  largest live context, as text (MB)", row["live_context_text_bytes"] / 1e6, fmt="{:.2f}")
    small, large = rows.get(10000), rows.get(100000)
    if small and large:
        show(
            "replay peak memory, 100,000 vs 10,000 messages",
            large["peak_bytes"] / small["peak_bytes"],
            "flat = 1.0x; the transcript is 10x",
            "{:.2f}x",
        )
        growth = large["peak_bytes"] - small["peak_bytes"]
        explained = (large["outcome_bytes"] - small["outcome_bytes"]) + (
            large["reading_alone_peak_bytes"] - small["reading_alone_peak_bytes"]
        )
        show(
            "  peak growth (MB), against outcome + reader growth",
            growth / 1e6,
            f"outcome + reader grew {explained / 1e6:.1f} MB",
            "{:.1f}",
        )


def show_lcm_grep():
    """`lcm_grep` latency from the last `cargo bench -p ctxhost-lcm --bench lcm` (benches/lcm.rs)."""
    if not LCM.is_file():
        print(f"\nlcm_grep: n/a ({LCM} not found; run `cargo bench -p ctxhost-lcm --bench lcm`)")
        return
    sizes = json.loads(LCM.read_text())["sizes"]
    print("\nlcm_grep, median call (ms) at " + " / ".join(f"{r['messages']:,}" for r in sizes)
          + " stored messages; target < 100 ms at 1,000,000")
    for case, first in enumerate(sizes[0]["grep"]):
        cells, notes = [], []
        for r in sizes:
            figures = r["grep"][case]["figures"]
            cells.append(f"{figures['ms']:.2f}")
            if figures["partial"]:
                end = figures["to_the_end"]
                notes.append(f"at {r['messages']:,}: partial, {figures['searched']:,} searched; "
                             f"all in {end['calls']} calls of at most {end['slowest_call_ms']:.0f} ms")
        million = next((r["grep"][case]["figures"] for r in sizes if r["messages"] == 1_000_000), None)
        if million is None:
            verdict = ""
        elif million["ms"] >= 100:
            verdict = "MISSED"
        else:
            verdict = "under 100 ms, partial" if million["partial"] else "met"
        label = f"{first['label']}: {first['arguments']['pattern']}"
        print(f"  {label[:70]:<70} {' / '.join(cells):>26}   {verdict}")
        for note in notes:
            print(f"  {'':<70}   {note}")


def retention():
    path = ROOT.parent / "bench-retention.json"
    if not path.is_file():
        return
    print("\nfact retention (identifiers kept verbatim), mean / lowest over compactions")
    for entry in json.loads(path.read_text()):
        for row in entry["report"]["engines"]:
            kept = row.get("retention") or {}
            if row.get("status") != "ran" or not kept.get("compactions"):
                continue
            label = f"{entry['example']}: {row['label']}"
            print(f"  {label:<56} {kept['mean_share'] * 100:5.1f}% / {kept['min_share'] * 100:5.1f}%   "
                  f"{kept['compactions']} compactions")


def retention_table():
    """Fact retention of one forced compaction per transcript (cargo xtask retention)."""
    path = ROOT.parent / "bench-retention-table.json"
    if not path.is_file():
        return
    rows = json.loads(path.read_text())
    print("\nfact retention, one `ctxhost compress FILE --context-length W` each (compressor defaults, extractive)")
    print(f"  {'transcript':<52} {'window':>6} {'input':>8} {'result':>7} {'cut':>5} {'facts kept':>16}")
    groups = {}
    for row in rows:
        total, kept = row["facts_total"], row["facts_kept"]
        share = f"{kept}/{total} {kept / total * 100:5.1f}%" if total else "nothing compacted"
        cut = 1 - row["result_tokens"] / row["input_tokens"] if row["input_tokens"] else 0
        name = f"{row['group']}/{row['transcript']}"
        print(f"  {name[:52]:<52} {row['window']:>6} {row['input_tokens']:>8,} {row['result_tokens']:>7,} {cut * 100:4.0f}% {share:>16}")
        group = groups.setdefault((row["group"], row["window"]), [0, 0, 0, 0])
        group[0] += kept
        group[1] += total
        group[2] += row["input_tokens"]
        group[3] += row["result_tokens"]
    print()
    for (group, window), (kept, total, inputs, results) in sorted(groups.items(), key=lambda item: (item[0][0], -item[0][1])):
        share = kept / total * 100 if total else 100.0
        target = "target >= 90%" if window == 16000 else "target >= 75%"
        print(f"  {group + ' overall':<52} {window:>6} {inputs:>8,} {results:>7,}       {kept}/{total} {share:5.1f}%   {target}")
    replayed = [row for row in rows if row.get("replay", {}).get("compactions")]
    if not replayed:
        return
    print("\nfact retention in a replay, `ctxhost run FILE --context-length W`: every compaction's facts summed")
    print(f"  {'transcript':<52} {'window':>6} {'compactions':>11} {'final':>7} {'facts kept':>18}")
    replay_groups = {}
    for row in replayed:
        replay = row["replay"]
        kept, total = replay["facts_kept"], replay["facts_total"]
        share = f"{kept}/{total} {kept / total * 100:5.1f}%" if total else "no facts"
        name = f"{row['group']}/{row['transcript']}"
        print(f"  {name[:52]:<52} {row['window']:>6} {replay['compactions']:>11} {replay['final_tokens'] or 0:>7,} {share:>18}")
        group = replay_groups.setdefault((row["group"], row["window"]), [0, 0])
        group[0] += kept
        group[1] += total
    print()
    for (group, window), (kept, total) in sorted(replay_groups.items(), key=lambda item: (item[0][0], -item[0][1])):
        share = kept / total * 100 if total else 100.0
        print(f"  {group + ' overall':<52} {window:>6} {'':>11} {'':>7}   {kept}/{total} {share:5.1f}%")


if __name__ == "__main__":
    if "--retention" in sys.argv:
        retention_table()
        sys.exit(0)
    if "--lcm" in sys.argv:
        show_lcm_grep()
        sys.exit(0)
    main()
    show_lcm_grep()
    retention()
    retention_table()
