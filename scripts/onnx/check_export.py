#!/usr/bin/env python3
"""Check that the written graphs compute the trained JAX model.

Usage:
    python scripts/onnx/check_export.py --variant gru|lstm [--work-dir DIR] [--n 50]

Runs the JAX model of model.py on WORK_DIR/params-VARIANT.npz and
onnxruntime on tests/fixtures/onnx/VARIANT/ side by side, one held-out word
at a time along onnxruntime's greedy tokens, and prints the largest absolute
difference of the encoder memory and of the log-probabilities. Exits non-zero
above 1e-3 (both are float32; a wrong gate order or transpose gives O(1)).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import data  # noqa: E402
import model  # noqa: E402
import reference  # noqa: E402
from variants import VARIANTS  # noqa: E402

LIMIT = 1e-3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/s2s-onnx-work"))
    ap.add_argument("--fixture-dir", type=Path, default=reference.FIXTURE_DIR)
    ap.add_argument("--n", type=int, default=50)
    args = ap.parse_args()
    cfg = VARIANTS[args.variant]
    with np.load(args.work_dir / f"params-{args.variant}.npz") as z:
        p = {k: jnp.asarray(z[k]) for k in z.files}
    om = reference.OrtModel(args.fixture_dir / args.variant, cfg)
    words = (reference.common.FIXTURE_DIR / "words-eval.txt").read_text(encoding="utf-8").split()[: args.n]
    worst = 0.0
    for w in words:
        ids = data.encode_source(w)
        memory, mask, state = model.encode(cfg, p, jnp.asarray(np.array(ids, np.int32)[:, None]), jnp.asarray([len(ids)]))
        o_memory, o_state = om.encode(ids)
        worst = max(worst, float(np.abs(np.asarray(memory)[:, 0] - o_memory[:, 0]).max()))
        feed = jnp.zeros((1, cfg["dec_hidden"]), jnp.float32)
        tok = data.TARGET_START
        for _ in range(data.MAX_STEPS):
            lp, state, feed, _ = model.decode_step(cfg, p, jnp.asarray([tok]), state, feed, memory, mask)
            o_lp, o_state, _ = om.step(tok, o_state, o_memory)
            worst = max(worst, float(np.abs(np.asarray(lp)[0] - o_lp).max()))
            tok = int(np.argmax(o_lp))
            if tok == data.TARGET_END:
                break
    print(f"{args.variant}: JAX model vs onnxruntime on {len(words)} held-out words: max abs diff {worst:.3g}")
    if worst > LIMIT:
        sys.exit(f"error: the graphs do not compute the trained model (max abs diff {worst:.3g} > {LIMIT})")


if __name__ == "__main__":
    main()
