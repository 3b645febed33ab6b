#!/usr/bin/env python3
"""Times shell commands side by side: one run of each per round, in turn, so that a
change in the machine's load falls on all of them alike (BENCHMARKS.md, "On all cores").

Usage:
    python3 scripts/bench/alternate.py ROUNDS 'NAME=COMMAND' ['NAME=COMMAND' ...]

Prints per command the median and the fastest wall time of its runs (standard output
and error discarded), the median CPU time (user + system, all threads), and every run.
A command that fails stops the script.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = [arg.split("=", 1) for arg in sys.argv[2:]]
    wall: dict[str, list[float]] = {name: [] for name, _ in commands}
    cpu: dict[str, list[float]] = {name: [] for name, _ in commands}
    for _ in range(rounds):
        for name, command in commands:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                command,
                shell=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            wall[name].append((time.perf_counter() - start) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(used * 1000)
    for name, _ in commands:
        runs = sorted(wall[name])
        print(
            f"{name:24s} median {statistics.median(runs):6.0f} ms  fastest {runs[0]:6.0f} ms"
            f"  cpu {statistics.median(cpu[name]):6.0f} ms  runs {' '.join(f'{r:.0f}' for r in runs)}"
        )


if __name__ == "__main__":
    main()
