#!/usr/bin/env python3
"""Keras 3 (jax backend) side of the training-speed comparison in BENCHMARKS.md.

    python scripts/train_bench/keras_bahdanau.py DATA.tsv [--words N] [--epochs E]
        [--batch B] [--threads T]

Trains the architecture of models/experiments/cmudict-bahdanau.toml, as `s2s train`
trains it, on the first N pairs of DATA.tsv (`word<TAB>PH1 PH2 ...`, e.g.
target/experiments/cmudict/train.tsv from `cargo xtask experiment --stage cmudict-data`)
and prints the seconds of every epoch as JSON on standard output. The first epoch
includes jax's compilation; the comparison uses the later ones.

The model, layer for layer:

    source chars + </s>, padded with 0 -> Embedding(V_src, 64, mask_zero) -> Dropout(0.2)
      -> Bidirectional(GRU(128, reset_after=True), return_sequences, return_state)
      -> memory (T, 256); keys = Dense(128, no bias)(memory)
    s_0 = Dense(256, tanh)([h_fwd; h_bwd])
    every step t (teacher forcing, the input <s> then the target):
      e_t = Dropout(0.2)(Embedding(V_tgt, 64)(y_{t-1}))
      score_i = v . tanh(W s_{t-1} + b + keys_i) over the source positions (masked)
      c_t = sum_i softmax(score)_i memory_i
      s_t = GRUCell(256)([e_t; c_t], s_{t-1})
      logits_t = Dense(V_tgt)(Dropout(0.2)([s_t; c_t]))
    loss: cross-entropy over the target tokens and the end token (padding masked);
    Adam(1e-3) with the gradients clipped to global norm 1.

Sources and targets are padded to the longest of the data set (Keras' usual fixed
shapes: one compilation); `s2s train` pads each batch to its own longest. Threads: jax
runs its CPU work on an XLA pool; --threads sets its size (the environment variable
XLA_FLAGS must be set before jax starts, so this script sets it first).

Environment: requirements.txt beside this file (Keras 3.10.0, jax 0.10.2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="word<TAB>phonemes lines (comments with #)")
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


ARGS = parse()
os.environ["KERAS_BACKEND"] = "jax"
os.environ["XLA_FLAGS"] = (
    f"--xla_cpu_multi_thread_eigen={'true' if ARGS.threads > 1 else 'false'} "
    f"intra_op_parallelism_threads={ARGS.threads}"
)

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402

EMB, ENC, DEC, ATT, DROP = 64, 128, 256, 128, 0.2


def load(path, n):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            w, p = line.rstrip("\n").split("\t")
            pairs.append((w, p.split()))
            if len(pairs) == n:
                break
    return pairs


def encode(pairs):
    """Ids as s2s train builds them: 0 pads; sources end with </s>."""
    chars = sorted({c for w, _ in pairs for c in w})
    phones = sorted({p for _, ps in pairs for p in ps})
    src = {c: i + 3 for i, c in enumerate(chars)}  # 0 <pad>, 1 <unk>, 2 </s>
    tgt = {p: i + 2 for i, p in enumerate(phones)}  # 0 <s> (also padding), 1 </s>
    t = max(len(w) for w, _ in pairs) + 1
    s = max(len(ps) for _, ps in pairs) + 1
    x = np.zeros((len(pairs), t), "int32")
    y_in = np.zeros((len(pairs), s), "int32")
    y_out = np.zeros((len(pairs), s), "int32")
    w_out = np.zeros((len(pairs), s), "float32")
    for k, (w, ps) in enumerate(pairs):
        ids = [src[c] for c in w] + [2]
        x[k, : len(ids)] = ids
        out = [tgt[p] for p in ps] + [1]
        y_out[k, : len(out)] = out
        y_in[k, 1 : len(out)] = out[:-1]
        w_out[k, : len(out)] = 1.0
    return x, y_in, y_out, w_out, len(src) + 3, len(tgt) + 2


class BahdanauDecoder(layers.Layer):
    """The decoder loop: attention with the previous state, then the GRU step."""

    def __init__(self, steps, vocab, **kw):
        super().__init__(**kw)
        self.steps = steps
        self.query = layers.Dense(ATT)
        self.v = layers.Dense(1, use_bias=False)
        self.cell = layers.GRUCell(DEC)
        self.drop = layers.Dropout(DROP)

    def call(self, emb, memory, keys, mask, s, training=None):
        big_neg = (1.0 - ops.cast(mask, "float32")) * -1e9
        outs = []
        for t in range(self.steps):
            q = self.query(s)
            score = ops.squeeze(self.v(ops.tanh(keys + q[:, None, :])), -1) + big_neg
            alpha = ops.softmax(score, axis=-1)
            c = ops.sum(alpha[:, :, None] * memory, axis=1)
            s, _ = self.cell(ops.concatenate([emb[:, t], c], -1), [s], training=training)
            s = s if not isinstance(s, (list, tuple)) else s[0]
            outs.append(ops.concatenate([s, c], -1))
        return self.drop(ops.stack(outs, 1), training=training)


def build(t, s, v_src, v_tgt):
    src = keras.Input((t,), dtype="int32")
    y_in = keras.Input((s,), dtype="int32")
    e = layers.Dropout(DROP)(layers.Embedding(v_src, EMB, mask_zero=True)(src))
    mem, h_f, h_b = layers.Bidirectional(
        layers.GRU(ENC, return_sequences=True, return_state=True), merge_mode="concat"
    )(e)
    keys = layers.Dense(ATT, use_bias=False)(mem)
    s0 = layers.Dense(DEC, activation="tanh")(layers.Concatenate()([h_f, h_b]))
    d = layers.Dropout(DROP)(layers.Embedding(v_tgt, EMB)(y_in))
    mask = ops.not_equal(src, 0)
    x = BahdanauDecoder(s, v_tgt)(d, mem, keys, mask, s0)
    logits = layers.Dense(v_tgt)(x)
    return keras.Model([src, y_in], logits)


def main():
    keras.utils.set_random_seed(ARGS.seed)
    x, y_in, y_out, w, v_src, v_tgt = encode(load(ARGS.data, ARGS.words))
    model = build(x.shape[1], y_in.shape[1], v_src, v_tgt)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3, global_clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[],
    )
    print(
        f"{model.count_params()} parameters, {len(x)} pairs, shapes {x.shape} {y_in.shape}",
        file=sys.stderr,
    )
    times, losses = [], []
    for _ in range(ARGS.epochs):
        t0 = time.perf_counter()
        h = model.fit([x, y_in], y_out, sample_weight=w, batch_size=ARGS.batch, epochs=1,
                      shuffle=True, verbose=0)
        times.append(time.perf_counter() - t0)
        losses.append(float(h.history["loss"][0]))
        print(f"epoch {len(times)}: {times[-1]:.1f} s, loss {losses[-1]:.4f}", file=sys.stderr)
    json.dump({"framework": f"keras {keras.__version__} / jax {__import__('jax').__version__}",
               "parameters": model.count_params(), "pairs": len(x), "batch": ARGS.batch,
               "threads": ARGS.threads, "epoch_seconds": times, "loss": losses},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
