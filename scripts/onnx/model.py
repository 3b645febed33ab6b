"""The fixture models in JAX, with PyTorch's parameter names and layouts.

Parameters are a flat dict of arrays named and shaped as a PyTorch state dict
would be (`(out, in)` matrices, GRU gates stacked [r, z, n], LSTM gates
[i, f, g, o], separate input and recurrent biases). `export_onnx.py` turns them
into the ONNX layouts; `numpy_forward.py` re-implements the exported graphs
independently. Used for training only: the references come from onnxruntime.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from variants import gates


def param_shapes(cfg: dict, n_src: int, n_tgt: int) -> dict[str, tuple[int, ...]]:
    g, H, D, L = gates(cfg), cfg["enc_hidden"], cfg["dec_hidden"], cfg["layers"]
    M = 2 * H
    s = {"encoder.embedding.weight": (n_src, cfg["src_emb"])}
    for l in range(L):
        inp = cfg["src_emb"] if l == 0 else M
        for sfx in ("", "_reverse"):
            s[f"encoder.rnn.weight_ih_l{l}{sfx}"] = (g * H, inp)
            s[f"encoder.rnn.weight_hh_l{l}{sfx}"] = (g * H, H)
            s[f"encoder.rnn.bias_ih_l{l}{sfx}"] = (g * H,)
            s[f"encoder.rnn.bias_hh_l{l}{sfx}"] = (g * H,)
    if cfg["bridge"] == "per-layer":
        for l in range(L):
            s[f"bridge.{l}.weight"] = (D, M)
            s[f"bridge.{l}.bias"] = (D,)
    else:
        s["bridge.weight"] = (D, M)
        s["bridge.bias"] = (D,)
    s["decoder.embedding.weight"] = (n_tgt, cfg["tgt_emb"])
    for l in range(L):
        inp = (cfg["tgt_emb"] + (D if cfg["input_feed"] else 0)) if l == 0 else D
        s[f"decoder.rnn.layers.{l}.weight_ih"] = (g * D, inp)
        s[f"decoder.rnn.layers.{l}.weight_hh"] = (g * D, D)
        s[f"decoder.rnn.layers.{l}.bias_ih"] = (g * D,)
        s[f"decoder.rnn.layers.{l}.bias_hh"] = (g * D,)
    s["decoder.attn.linear_in.weight"] = (M, D)  # q = linear_in(h); score_j = q . m_j
    s["decoder.attn.linear_out.weight"] = (D, M + D)
    s["decoder.attn.linear_out.bias"] = (D,)
    s["generator.weight"] = (n_tgt, D)
    s["generator.bias"] = (n_tgt,)
    return s


def init_params(cfg: dict, n_src: int, n_tgt: int, seed: int) -> dict[str, np.ndarray]:
    """PyTorch's default initialisations: N(0, 1) embeddings, U(+-1/sqrt(fan)) else."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in param_shapes(cfg, n_src, n_tgt).items():
        if name.endswith("embedding.weight"):
            a = rng.standard_normal(shape)
        else:
            if name.startswith(("encoder.rnn", "decoder.rnn")):
                fan = cfg["enc_hidden"] if name.startswith("encoder") else cfg["dec_hidden"]
            elif name.endswith("bias"):
                fan = param_shapes(cfg, n_src, n_tgt)[name[: -len("bias")] + "weight"][1]
            else:
                fan = shape[1]
            k = 1.0 / np.sqrt(fan)
            a = rng.uniform(-k, k, shape)
        out[name] = a.astype(np.float32)
    return out


# ---------------------------------------------------------------------------
# Cells (PyTorch equations and gate orders)
# ---------------------------------------------------------------------------


def gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    i_r, i_z, i_n = jnp.split(gi, 3, axis=-1)
    h_r, h_z, h_n = jnp.split(gh, 3, axis=-1)
    r = jax.nn.sigmoid(i_r + h_r)
    z = jax.nn.sigmoid(i_z + h_z)
    n = jnp.tanh(i_n + r * h_n)
    return (1.0 - z) * n + z * h


def lstm_cell(x, hc, w_ih, w_hh, b_ih, b_hh):
    h, c = hc
    g = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, gg, o = jnp.split(g, 4, axis=-1)
    c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
    return jax.nn.sigmoid(o) * jnp.tanh(c2), c2


def _cell(cfg):
    return gru_cell if cfg["cell"] == "gru" else lstm_cell


def _top_h(cfg, state):
    return state if cfg["cell"] == "gru" else state[0]


def _zeros_state(cfg, batch, size):
    z = jnp.zeros((batch, size), jnp.float32)
    return z if cfg["cell"] == "gru" else (z, z)


# ---------------------------------------------------------------------------
# Encoder over a post-padded batch, equal to running each sequence unpadded
# ---------------------------------------------------------------------------


def _run_direction(cfg, w, xs, mask):
    """One direction over [T, B, in] with PyTorch cell weights w = (w_ih, w_hh, b_ih, b_hh)."""
    cell = _cell(cfg)

    def step(state, inp):
        x, m = inp
        new = cell(x, state, *w)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(m[:, None], a, b), new, state)
        return new, _top_h(cfg, new) * m[:, None]

    _, ys = jax.lax.scan(step, _zeros_state(cfg, xs.shape[1], cfg["enc_hidden"]), (xs, mask))
    return ys


_RNN_KEYS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _reverse_within(xs, lengths):
    """Reverse each column's first `len` steps; padding stays where it is."""
    T = xs.shape[0]
    t = jnp.arange(T)[:, None]
    idx = jnp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
    return jnp.take_along_axis(xs, idx[:, :, None], axis=0)


def encode(cfg, p, src, lengths):
    """src [T, B] int, lengths [B] -> memory [T, B, 2H] (0 at padding), init state."""
    mask = jnp.arange(src.shape[0])[:, None] < lengths[None, :]
    x = p["encoder.embedding.weight"][src]
    for l in range(cfg["layers"]):
        wf, wb = ([p[f"encoder.rnn.{k}_l{l}{sfx}"] for k in _RNN_KEYS] for sfx in ("", "_reverse"))
        fwd = _run_direction(cfg, wf, x, mask)
        bwd = _reverse_within(_run_direction(cfg, wb, _reverse_within(x, lengths), mask), lengths)
        x = jnp.concatenate([fwd, bwd], axis=-1)
    memory = x
    mean = memory.sum(0) / lengths[:, None].astype(jnp.float32)
    if cfg["bridge"] == "per-layer":
        hs = [jnp.tanh(mean @ p[f"bridge.{l}.weight"].T + p[f"bridge.{l}.bias"]) for l in range(cfg["layers"])]
    else:
        hs = [jnp.tanh(mean @ p["bridge.weight"].T + p["bridge.bias"])] * cfg["layers"]
    if cfg["cell"] == "gru":
        state = tuple(hs)
    else:
        state = tuple((h, jnp.zeros_like(h)) for h in hs)
    return memory, mask, state


# ---------------------------------------------------------------------------
# One decoder step
# ---------------------------------------------------------------------------


def decode_step(cfg, p, tok, state, feed, memory, mask):
    """tok [B] int; state per layer; feed [B, D] -> (log_probs, state, attentional, alpha)."""
    cell = _cell(cfg)
    x = p["decoder.embedding.weight"][tok]
    if cfg["input_feed"]:
        x = jnp.concatenate([x, feed], axis=-1)
    new_state = []
    for l in range(cfg["layers"]):
        pre = f"decoder.rnn.layers.{l}."
        s = cell(x, state[l], *(p[pre + k] for k in _RNN_KEYS))
        new_state.append(s)
        x = _top_h(cfg, s)
    top = x
    q = top @ p["decoder.attn.linear_in.weight"].T  # [B, M]
    scores = jnp.einsum("bm,tbm->bt", q, memory)
    scores = jnp.where(mask.T, scores, -1e30)
    alpha = jax.nn.softmax(scores, axis=-1)
    ctx = jnp.einsum("bt,tbm->bm", alpha, memory)
    parts = [ctx, top] if cfg["combine"] == "context-state" else [top, ctx]
    att = jnp.tanh(jnp.concatenate(parts, -1) @ p["decoder.attn.linear_out.weight"].T + p["decoder.attn.linear_out.bias"])
    logits = att @ p["generator.weight"].T + p["generator.bias"]
    return jax.nn.log_softmax(logits, axis=-1), tuple(new_state), att, alpha


def loss_fn(cfg, p, src, lengths, tgt_in, tgt_out, tgt_mask):
    memory, mask, state = encode(cfg, p, src, lengths)
    feed = jnp.zeros((src.shape[1], cfg["dec_hidden"]), jnp.float32)

    def step(carry, inp):
        state, feed = carry
        tok, = inp
        lp, state, att, _ = decode_step(cfg, p, tok, state, feed, memory, mask)
        return (state, att), lp

    _, lps = jax.lax.scan(step, (state, feed), (tgt_in,))
    nll = -jnp.take_along_axis(lps, tgt_out[:, :, None], axis=-1)[:, :, 0]
    return (nll * tgt_mask).sum() / tgt_mask.sum()


def greedy_batch(cfg, p, src, lengths, start, steps):
    memory, mask, state = encode(cfg, p, src, lengths)
    B = src.shape[1]
    feed = jnp.zeros((B, cfg["dec_hidden"]), jnp.float32)
    tok = jnp.full((B,), start, jnp.int32)

    def step(carry, _):
        tok, state, feed = carry
        lp, state, att, _ = decode_step(cfg, p, tok, state, feed, memory, mask)
        nxt = jnp.argmax(lp, axis=-1).astype(jnp.int32)
        return (nxt, state, att), nxt

    _, toks = jax.lax.scan(step, (tok, state, feed), None, length=steps)
    return toks.T  # [B, steps]
