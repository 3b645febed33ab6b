#!/usr/bin/env python3
"""The numpy side of BENCHMARKS.md's host benchmark: g2p-en 2.1.0's own `predict`.

Usage:
    python scripts/bench/g2p_en_predict.py PKG_DIR WORDS [--repeat N]

PKG_DIR holds the unpacked g2p_en 2.1.0 wheel (`cargo xtask models` unpacks it into
target/pkgs/); WORDS is one word per line. Prints `word<TAB>phonemes` for every word,
as `s2s run MODEL --tsv` does, then on standard error the words per second of the
decoding alone (without Python's and numpy's start-up), single-threaded.

It calls the package's unchanged `G2p().predict(word)`, with nltk and inflect (imported
by g2p_en but unused by `predict`) stubbed exactly as scripts/golden/g2p_en_golden.py
does. Python environment: requirements.txt beside this file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "golden"))

import common  # noqa: E402

common.single_thread_env()  # before numpy is imported

from g2p_en_golden import install_import_stubs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked g2p_en wheel")
    ap.add_argument("words", type=Path, help="one word per line")
    ap.add_argument("--repeat", type=int, default=1, help="decode the list this many times")
    args = ap.parse_args()

    root = common.find_wheel_root(args.pkg_dir, "g2p_en", "g2p_en")
    sys.path.insert(0, str(root))
    install_import_stubs()
    from g2p_en.g2p import G2p  # noqa: E402

    words = [w.strip() for w in args.words.read_text().splitlines() if w.strip()]
    g2p = G2p()
    start = time.perf_counter()
    for _ in range(args.repeat):
        out = [g2p.predict(w) for w in words]
    elapsed = time.perf_counter() - start
    sys.stdout.write("".join(f"{w}\t{' '.join(p)}\n" for w, p in zip(words, out)))
    n = len(words) * args.repeat
    print(f"{n} words in {elapsed:.3f} s: {n / elapsed:,.0f} words/s", file=sys.stderr)


if __name__ == "__main__":
    main()
