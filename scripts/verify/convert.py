#!/usr/bin/env python3
"""Reference lines converted from the committed golden fixtures, for what no framework
run here gives: netra-transliterate's own `transliterate()` (its beam search of width
3), whose outputs are in tests/fixtures/beam/netra-1.0.1-transliterate-b3.tsv (written
by scripts/golden/netra_beam.py with the package imported whole).

    python scripts/verify/convert.py netra-beam [--n 20]   # prints the lines

`fixtures.py netra` appends these lines to its framework-run greedy lines. Text is
turned back into target ids with tests/fixtures/golden/netra-1.0.1-vocab.json (the
package's tokenizer, one character per token).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import s2s_expect  # noqa: E402


def tsv_rows(path):
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line and not line.startswith("#"):
            word, out = line.split("\t")[:2]  # word, output, then the search's diagnostics
            yield word, out


def netra_beam(n):
    vocab = json.loads((ROOT / "tests/fixtures/golden/netra-1.0.1-vocab.json")
                       .read_text(encoding="utf-8"))["target"]
    ids = {tok: i for i, tok in enumerate(vocab) if tok is not None and len(tok) == 1}
    rows = list(tsv_rows(ROOT / "tests/fixtures/beam/netra-1.0.1-transliterate-b3.tsv"))[:n]
    return [s2s_expect.record(word, ids=[ids[ch] for ch in out], beam=3) for word, out in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["netra-beam"])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    for line in netra_beam(args.n):
        print(json.dumps(line, ensure_ascii=False))


if __name__ == "__main__":
    main()
