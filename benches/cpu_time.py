#!/usr/bin/env python3
"""Times a whole command the way a user runs it: wall time and CPU time (user + system, all
threads), best and median of N runs.

On a machine shared with other work, wall time measures the queue as much as the program; CPU
time moves far less with the load, so both are printed. Several commands, separated by `--`, are
run in turn, round after round, so that they share the same load.

    python3 benches/cpu_time.py 20 target/release/ctxhost compress target/heavy.jsonl --context-length 200000
"""
import resource
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit("usage: cpu_time.py RUNS COMMAND [ARGS...] [-- COMMAND [ARGS...]]...")
    runs = int(sys.argv[1])
    commands, current = [], []
    for arg in sys.argv[2:]:
        if arg == "--":
            commands.append(current)
            current = []
        else:
            current.append(arg)
    commands.append(current)
    times = [([], []) for _ in commands]
    for _ in range(runs):
        for command, (walls, cpus) in zip(commands, times):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            walls.append((time.perf_counter() - started) * 1e3)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3)
    for command, (walls, cpus) in zip(commands, times):
        print(" ".join(command))
        print(f"  wall: best {min(walls):.1f} ms, median {statistics.median(walls):.1f} ms")
        print(f"  CPU:  best {min(cpus):.1f} ms, median {statistics.median(cpus):.1f} ms  ({runs} runs)")


if __name__ == "__main__":
    main()
