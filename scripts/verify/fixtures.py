#!/usr/bin/env python3
"""Writes tests/fixtures/verify/MODEL.jsonl: reference decodes of the project's fixture
models by their own frameworks, through the helpers of this folder.

Usage (from the repository root; each model in its own environment, see README.md):

    python scripts/verify/fixtures.py MODEL [--n 40] [--pkg-dir target/pkgs] [--out FILE]

MODEL          framework, helper                                      environment
g2p-en         the g2p-en 2.1.0 package's own numpy code, s2s_expect  keras3-py311
netra          netra-transliterate 1.0.1's Keras inference models     keras3-py311
               (KERAS_BACKEND=numpy), keras_expect; plus beam-3 lines
               converted from tests/fixtures/beam/ (convert.py)
keras2-lstm-g2p  Keras 2.3.1 (TensorFlow 1.15), keras_expect, teacher-forced   keras2-py37
keras3-lstm-g2p  Keras 3 (KERAS_BACKEND=jax), keras_expect, teacher-forced     keras3-py311
pytorch-lstm-g2p PyTorch nn.Module loading model.safetensors, torch_expect     torch-py311
onnx-gru, onnx-lstm  onnxruntime on the two graphs, ort_expect                 onnx-py311

Sources: the first N words of tests/fixtures/golden/words-eval.txt (g2p-en, netra,
ONNX), or of the fixture's reference.json for the LSTM fixtures (the words that fit
their 16 letters).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import s2s_expect  # noqa: E402

OUT_DIR = ROOT / "tests" / "fixtures" / "verify"
LSTM_DIRS = {"keras2-lstm-g2p": "keras2-g2p", "keras3-lstm-g2p": "keras3-g2p",
             "pytorch-lstm-g2p": "pytorch-g2p"}


def eval_words(n):
    words = (ROOT / "tests/fixtures/golden/words-eval.txt").read_text(encoding="utf-8").split()
    return words[:n]


def config_target(name):
    """The `[target]` of the model's s2s configuration (Python 3.11: tomllib)."""
    import tomllib
    path = ROOT / "models" / ("examples/%s.toml" % name if name not in ("g2p-en", "netra")
                              else "%s.toml" % name)
    return tomllib.loads(path.read_text(encoding="utf-8"))["target"]


def check_vocab(name, tokens):
    """The framework's target ids must be the configuration's: the same token list."""
    want = config_target(name)["tokens"]
    if list(tokens) != list(want):
        sys.exit("error: %s: the framework's target tokens differ from the configuration's" % name)


# ------------------------------------------------------------------ g2p-en (numpy)


def g2p_en(args):
    sys.path.insert(0, str(ROOT / "scripts/golden"))
    import g2p_en_golden
    import common
    import numpy as np

    root, _ = common.wheel(Path(args.pkg_dir), "g2p_en", "g2p_en", "2.1.0")
    g2p_en_golden.install_import_stubs()
    sys.path.insert(0, str(root))
    from g2p_en.g2p import G2p

    g = G2p()
    check_vocab("g2p-en", g.phonemes)

    def encode(word):
        enc = g.encode(word)
        enc = g.gru(enc, len(word) + 1, g.enc_w_ih, g.enc_w_hh, g.enc_b_ih, g.enc_b_hh,
                    h0=np.zeros((1, g.enc_w_hh.shape[-1]), np.float32))
        return enc[:, -1, :]

    def step(prev, h):
        dec = np.take(g.dec_emb, [prev], axis=0)
        h = g.grucell(dec, h, g.dec_w_ih, g.dec_w_hh, g.dec_b_ih, g.dec_b_hh)
        return np.matmul(h, g.fc_w.T) + g.fc_b, h

    lines = []
    for w in eval_words(args.n):
        d = s2s_expect.greedy(step, encode(w), 2, 3, 20, kind="logits")
        # The package's own predict() must give the same output.
        assert [g.idx2p[i] for i in d["ids"]] == g.predict(w), w
        lines.append(s2s_expect.record(w, d))
    return lines


# ------------------------------------------------------------------ netra (Keras 3)


def netra(args):
    sys.path.insert(0, str(ROOT / "scripts/golden"))
    import netra_golden as ng  # sets KERAS_BACKEND=numpy and one thread before keras
    import common
    import keras
    import numpy as np
    import convert
    import keras_expect

    root, _ = common.wheel(Path(args.pkg_dir), ng.PKG, "netra_transliterate", "1.0.1")
    module = ng.import_model_module(root / ng.MODEL_PY_REL)
    model = keras.models.load_model(root / ng.MODEL_REL)
    encoder, decoder, units = module.build_inference_models(model)
    assets = ng.load_assets(root / ng.ASSETS_REL)
    eng, khm = assets["eng_tokenizer"], assets["khm_tokenizer"]
    check_vocab("netra", ng.vocab_list(khm))
    start, end = khm.word_index["\t"], khm.word_index["\n"]

    def encode(word):
        _, proj = keras_expect.predict(encoder, ng.encode(word, eng, assets["max_eng_len"]))
        return np.zeros((1, units)), proj  # float64 zeros, as the package builds them

    def step(prev, state):
        h, proj = state
        probs, h = keras_expect.predict(decoder, [np.array([[prev]]), h, proj])
        return probs[0, -1], (h, proj)

    words = eval_words(args.n)
    lines = keras_expect.decode(words, encode, step, start, end, ng.MAX_STEPS)
    return lines + convert.netra_beam(args.beam_n)


# ------------------------------------------------------------------ the LSTM fixtures


def lstm_words(name, n):
    ref = json.loads((ROOT / "tests/fixtures/lstm" / LSTM_DIRS[name] / "reference.json")
                     .read_text(encoding="utf-8"))
    return [c["word"] for c in ref["cases"][:n]]


def lstm_vocab(name):
    v = json.loads((ROOT / "tests/fixtures/lstm" / LSTM_DIRS[name] / "vocab.json")
                   .read_text(encoding="utf-8"))
    return v["source"], v["target"]


def keras_lstm(args):
    import numpy as np
    import keras
    import keras_expect

    major = int(keras.__version__.split(".")[0])
    name = "keras%d-lstm-g2p" % major
    if args.model != name:
        sys.exit("error: %s needs Keras %s, this is Keras %s" % (args.model, args.model[5], keras.__version__))
    if major == 3 and keras.backend.backend() != "jax":
        sys.exit("error: run with KERAS_BACKEND=jax")
    src, tgt = lstm_vocab(name)
    path = ROOT / "tests/fixtures/lstm" / LSTM_DIRS[name] / ("model.h5" if major == 2 else "model.keras")
    model = keras.models.load_model(str(path), compile=False)

    def encode_source(word):
        x = np.zeros((1, src["pad_to"]), np.int32)
        x[0, :len(word)] = [src["tokens"].index(c) for c in word]
        return x

    t = tgt["tokens"]
    end = t.index("</s>") if "</s>" in t else t.index("<pad>")  # Keras 2's fixture ends on <pad>
    assert end == tgt["end"]
    return keras_expect.decode_teacher_forced(model, lstm_words(name, args.n), encode_source,
                                              t.index("<s>"), end, tgt["max_steps"])


def pytorch_lstm(args):
    import torch
    from torch import nn
    from safetensors.torch import load_file
    import torch_expect

    torch.set_num_threads(1)
    name = "pytorch-lstm-g2p"
    src, tgt = lstm_vocab(name)
    check_vocab(name, tgt["tokens"])
    emb, enc, dec, att = 32, 64, 96, 64
    n_src, n_tgt = len(src["tokens"]), len(tgt["tokens"])

    class Attention(nn.Module):  # Bahdanau: Va tanh(Wa h + Ua k)
        def __init__(self):
            super().__init__()
            self.Wa = nn.Linear(dec, att)
            self.Ua = nn.Linear(2 * enc, att)
            self.Va = nn.Linear(att, 1)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(n_src, emb)
            self.lstm = nn.LSTM(emb, enc, bidirectional=True, batch_first=True)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(n_tgt, emb)
            self.attention = Attention()
            self.lstm = nn.LSTM(emb + 2 * enc, dec, batch_first=True)
            self.out = nn.Linear(dec + 2 * enc, n_tgt)

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()
            self.bridge_h = nn.Linear(2 * enc, dec)
            self.bridge_c = nn.Linear(2 * enc, dec)
            self.decoder = Decoder()

        def encode(self, word):
            x = torch.tensor([[src["tokens"].index(c) for c in word]])
            keys, (h, c) = self.encoder.lstm(self.encoder.embedding(x))
            h0 = torch.tanh(self.bridge_h(torch.cat([h[0], h[1]], -1)))
            c0 = torch.tanh(self.bridge_c(torch.cat([c[0], c[1]], -1)))
            return keys, self.decoder.attention.Ua(keys), (h0[None], c0[None])

        def step(self, prev, state):
            keys, proj, (h, c) = state
            a = self.decoder.attention
            e = a.Va(torch.tanh(a.Wa(h[0])[:, None, :] + proj))[..., 0]
            ctx = torch.softmax(e, -1)[:, None, :] @ keys
            x = torch.cat([self.decoder.embedding(torch.tensor([[prev]])), ctx], -1)
            out, (h, c) = self.decoder.lstm(x, (h, c))
            logits = self.decoder.out(torch.cat([out, ctx], -1))
            return logits, (keys, proj, (h, c))

    model = Seq2Seq()
    weights = load_file(str(ROOT / "tests/fixtures/lstm/pytorch-g2p/model.safetensors"))
    model.load_state_dict(weights, strict=True)
    model.eval()
    t = tgt["tokens"]
    return torch_expect.decode(lstm_words(name, args.n), model.encode, model.step,
                               t.index("<s>"), t.index("</s>"), tgt["max_steps"])


# ------------------------------------------------------------------ ONNX (onnxruntime)


def onnx_model(args):
    import numpy as np
    import ort_expect

    variant = args.model.split("-")[1]
    sys.path.insert(0, str(ROOT / "scripts/onnx"))
    import data
    from variants import VARIANTS

    cfg = VARIANTS[variant]
    vocab = json.loads((ROOT / "tests/fixtures/onnx/vocab.json").read_text(encoding="utf-8"))
    check_vocab(args.model, vocab["target"])
    folder = ROOT / "tests/fixtures/onnx" / variant
    lstm = cfg["cell"] == "lstm"

    def first_state(enc):
        state = {"memory": enc["memory"]}
        if lstm:
            state.update(h=enc["dec_h0"], c=np.zeros_like(enc["dec_h0"]))
        else:
            state["hidden"] = enc["dec_h0"]
        if cfg["input_feed"]:
            state["input_feed"] = np.zeros((1, cfg["dec_hidden"]), np.float32)
        return state

    next_state = {"h_out": "h", "c_out": "c"} if lstm else {"hidden_out": "hidden"}
    if cfg["input_feed"]:
        next_state["attn_vector"] = "input_feed"
    m = ort_expect.OrtSeq2Seq(
        folder / "encoder.onnx", folder / "decoder.onnx",
        encoder_feeds=lambda ids: {"src": np.array(ids, np.int64)[:, None]},
        first_state=first_state, token_input="input_token",
        scores_output="log_probs", kind="log_probs",
        next_state=next_state, constant_state=["memory"])
    return m.decode(eval_words(args.n), data.encode_source, data.TARGET_START,
                    data.TARGET_END, data.MAX_STEPS)


MODELS = {
    "g2p-en": g2p_en,
    "netra": netra,
    "keras2-lstm-g2p": keras_lstm,
    "keras3-lstm-g2p": keras_lstm,
    "pytorch-lstm-g2p": pytorch_lstm,
    "onnx-gru": onnx_model,
    "onnx-lstm": onnx_model,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--n", type=int, default=40, help="sources (default 40)")
    ap.add_argument("--beam-n", type=int, default=20,
                    help="netra: beam-3 lines converted from tests/fixtures/beam (default 20)")
    ap.add_argument("--pkg-dir", default=str(ROOT / "target/pkgs"),
                    help="the unpacked wheels of `cargo xtask models` (g2p-en, netra)")
    ap.add_argument("--out", help="default: tests/fixtures/verify/MODEL.jsonl")
    args = ap.parse_args()
    lines = MODELS[args.model](args)
    out = Path(args.out) if args.out else OUT_DIR / ("%s.jsonl" % args.model)
    out.parent.mkdir(parents=True, exist_ok=True)
    s2s_expect.write(out, lines)
    print("wrote %s (%d sources)" % (out, len(lines)), file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
