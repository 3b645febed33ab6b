#!/usr/bin/env python3
"""The package side of BENCHMARKS.md's host beam-search benchmark: netra's own search.

Usage:
    python scripts/bench/netra_transliterate.py PKG_DIR WORDS

PKG_DIR holds the unpacked netra_transliterate 1.0.1 wheel (`cargo xtask models`
unpacks it into target/pkgs/); WORDS is one word per line. Calls the package's public
`transliterate(word)` (its beam search, width 3) on every word, single-threaded, as
scripts/golden/netra_beam.py imports it (Keras 3 on its numpy backend, the same shims
and stub), and prints `word<TAB>output` like `s2s run MODEL --tsv --beam 3`, then on
standard error the words per second of the decoding alone (without start-up).
Python environment: scripts/golden/requirements.txt.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "golden"))

import common  # noqa: E402

common.single_thread_env()  # before numpy / keras are imported

import netra_beam  # noqa: E402  (sets KERAS_BACKEND=numpy unless set)
from netra_golden import EXPECTED_VERSION, PKG  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked netra_transliterate wheel")
    ap.add_argument("words", type=Path, help="one word per line")
    args = ap.parse_args()
    root, _ = common.wheel(args.pkg_dir, PKG, "netra_transliterate", EXPECTED_VERSION)
    pkg = netra_beam.import_package(root)
    words = args.words.read_text(encoding="utf-8").split()
    t0 = time.perf_counter()
    rows = [f"{w}\t{pkg.transliterate(w)}" for w in words]
    took = time.perf_counter() - t0
    sys.stdout.write("".join(r + "\n" for r in rows))
    print(f"{len(words)} words in {took:.3f} s: {len(words) / took:.1f} words/s", file=sys.stderr)


if __name__ == "__main__":
    main()
