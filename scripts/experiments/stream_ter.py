#!/usr/bin/env python3
"""Token error rate of `s2s run --stream` outputs against a running-text test file.

`s2s eval` decodes whole lines; a stream with a repeat limit (`--max-repeats`) is not a
whole-line decode, so its outputs are scored here, as `s2s eval` scores (the edit
distance of the output tokens to the reference's, summed, over the reference tokens,
in %). Standard library only. Used by docs/EXPERIMENTS.md section 6:

    grep -v '^#' T.tsv | cut -f1 | s2s run M.s2s --stream --max-repeats 4 --max-steps 12000 > out.txt
    python3 scripts/experiments/stream_ter.py T.tsv out.txt
"""
import sys


def distance(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def main(tsv, outputs):
    with open(tsv, encoding="utf-8") as f:
        refs = [l.rstrip("\n").split("\t")[1].split() for l in f if not l.startswith("#") and "\t" in l]
    with open(outputs, encoding="utf-8") as f:
        outs = [l.rstrip("\n").split() for l in f]
    if len(refs) != len(outs):
        sys.exit(f"error: {outputs}: {len(outs)} outputs for the {len(refs)} references of {tsv}")
    edits = sum(distance(o, r) for o, r in zip(outs, refs))
    tokens = sum(len(r) for r in refs)
    print(f"TER {100 * edits / tokens:.2f} % ({edits} edits / {tokens} reference tokens, {len(refs)} lines)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: stream_ter.py TEST.tsv OUTPUTS.txt")
    main(sys.argv[1], sys.argv[2])
