#!/usr/bin/env python3
"""Training speed of `s2s train` and Keras 3 (jax) side by side, for BENCHMARKS.md.

    python scripts/train_bench/compare.py S2S DATA.tsv VALID.tsv [--words N]
        [--epochs E] [--rounds R] [--batch B] [--threads T]

Trains the CMUdict Bahdanau model (models/experiments/cmudict-bahdanau.toml; the same
network in keras_bahdanau.py) on the first N pairs of DATA.tsv with both, R rounds,
alternating (s2s, Keras, s2s, Keras, ...) so that both see the same load on the
machine, each for E epochs with the same batch size and thread count. Prints a
Markdown table: seconds per training epoch (s2s: the `train_seconds` of its CSV log,
validation excluded; Keras: `fit` of one epoch, from the second epoch on, after jax's
compilation), their median and the fastest epoch (the one least disturbed by other
work on a shared machine), the ratios, and the CPU seconds (user + system) of each
process.

Run it with the Python of requirements.txt; S2S is the release binary
(target/release/s2s).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def cpu_of(cmd, **kw):
    """Runs cmd; returns (stdout, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("s2s")
    ap.add_argument("data")
    ap.add_argument("valid")
    ap.add_argument("--words", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="train-bench-"))
    rows = [l for l in open(a.data, encoding="utf-8") if l.strip() and not l.startswith("#")]
    (tmp / "train.tsv").write_text("".join(rows[: a.words]), encoding="utf-8")
    vrows = [l for l in open(a.valid, encoding="utf-8") if l.strip() and not l.startswith("#")]
    (tmp / "valid.tsv").write_text("".join(vrows[:200]), encoding="utf-8")

    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    for r in range(a.rounds):
        run = tmp / f"s2s-{r}"
        _, cpu = cpu_of([
            a.s2s, "train", "--config", str(ROOT / "models/experiments/cmudict-bahdanau.toml"),
            "--data", str(tmp / "train.tsv"), "--valid", str(tmp / "valid.tsv"),
            "-o", str(run) + ".s2s", "--epochs", str(a.epochs), "--batch", str(a.batch),
            "--threads", str(a.threads), "--dropout", "0.2", "--patience", "100",
            "--seed", "1", "--quiet", "--report", str(run) + ".json",
        ])
        log = (run.with_suffix(".csv")).read_text().splitlines()[1:]
        secs = [float(l.split(",")[6]) for l in log if int(l.split(",")[0]) > 0]
        ours += secs
        ours_cpu.append(cpu)
        print(f"round {r + 1}: s2s train {secs}", file=sys.stderr)
        out, cpu = cpu_of([
            sys.executable, str(HERE / "keras_bahdanau.py"), a.data, "--words", str(a.words),
            "--epochs", str(a.epochs), "--batch", str(a.batch), "--threads", str(a.threads),
        ])
        k = json.loads(out)
        theirs += k["epoch_seconds"][1:]
        theirs_cpu.append(cpu)
        print(f"round {r + 1}: keras {k['epoch_seconds']}", file=sys.stderr)
    mo, mk = statistics.median(ours), statistics.median(theirs)
    lo, lk = min(ours), min(theirs)
    params = json.loads((tmp / "s2s-0.json").read_text())["parameters"]
    print(f"| trainer | parameters | seconds per epoch ({a.words} words, batch {a.batch}, "
          f"{a.threads} threads): median, fastest (all) | CPU seconds per run ({a.epochs} epochs, "
          f"start-up and compilation included) |")
    print("|---|---|---|---|")
    print(f"| s2s train (candle 0.11) | {params} | {mo:.1f}, {lo:.1f} ({', '.join(f'{x:.1f}' for x in ours)}) "
          f"| {', '.join(f'{x:.0f}' for x in ours_cpu)} |")
    print(f"| {k['framework']} | {k['parameters']} | {mk:.1f}, {lk:.1f} ({', '.join(f'{x:.1f}' for x in theirs)}) "
          f"| {', '.join(f'{x:.0f}' for x in theirs_cpu)} |")
    print(f"\nKeras / s2s seconds per epoch: {mk / mo:.2f} (medians), {lk / lo:.2f} (fastest epochs)")


if __name__ == "__main__":
    main()
