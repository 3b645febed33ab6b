"""An independent float64 NumPy forward pass of the fixture graphs.

It does not run the graphs: it reads the initializers from the .onnx files
(external data included) by the names and layouts that
tests/fixtures/onnx/README.md documents -- the same facts a Rust importer's
TOML states -- and computes the model from the ONNX operator definitions
(GRU gates z, r, h with linear_before_reset = 1; LSTM gates i, o, f, c; B =
[Wb; Rb]) and the decoder equations written out in the README. reference.py
compares it with onnxruntime, so a wrong layout in the files or in the README
shows up as a difference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

# Role -> tensor name, as the README lists them (and as a model TOML would).
ENCODER = {
    "embedding": "encoder.embedding.weight",
    "rnn": {"gru": [("onnx::GRU_383", "onnx::GRU_384", "onnx::GRU_385"),
                    ("onnx::GRU_403", "onnx::GRU_404", "onnx::GRU_405")],
            "lstm": [("onnx::LSTM_383", "onnx::LSTM_384", "onnx::LSTM_385"),
                     ("onnx::LSTM_403", "onnx::LSTM_404", "onnx::LSTM_405")]},
}
DECODER = {
    "embedding": "decoder.embedding.weight",
    "l0_w_ih_T": "onnx::MatMul_512",  # (in, gates*D): transposed
    "attn_general": "onnx::MatMul_531",  # Identity output of onnx::MatMul_530, (D, M) as stored
    "combine_T": "onnx::MatMul_545",  # (parts, D): transposed
    "combine_b": "decoder.attn.linear_out.bias",
    "out_w": "generator.weight",
    "out_b": "generator.bias",
}


def load_tensors(path: Path) -> dict[str, np.ndarray]:
    """Initializers (float64), plus every Identity output whose input is one."""
    m = onnx.load(str(path), load_external_data=True)
    t = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Identity" and n.input[0] in t:
            t[n.output[0]] = t[n.input[0]]
    return t


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def onnx_gru_dir(x, W, R, Wb, Rb, reverse):
    """ONNX GRU, one direction, linear_before_reset = 1; W/R rows [z; r; h]."""
    H = R.shape[1]
    h = np.zeros(H)
    out = np.zeros((x.shape[0], H))
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in order:
        gx = W @ x[t] + Wb
        gh = R @ h
        z = sigmoid(gx[:H] + gh[:H] + Rb[:H])
        r = sigmoid(gx[H:2 * H] + gh[H:2 * H] + Rb[H:2 * H])
        n = np.tanh(gx[2 * H:] + r * (gh[2 * H:] + Rb[2 * H:]))
        h = (1.0 - z) * n + z * h
        out[t] = h
    return out


def onnx_lstm_dir(x, W, R, Wb, Rb, reverse):
    """ONNX LSTM, one direction, no peepholes; W/R rows [i; o; f; c]."""
    H = R.shape[1]
    h, c = np.zeros(H), np.zeros(H)
    out = np.zeros((x.shape[0], H))
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in order:
        g = W @ x[t] + R @ h + Wb + Rb
        i, o, f, cc = (g[k * H:(k + 1) * H] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
        h = sigmoid(o) * np.tanh(c)
        out[t] = h
    return out


class Model:
    def __init__(self, folder: Path, cfg: dict):
        self.cfg = cfg
        self.enc = load_tensors(folder / "encoder.onnx")
        self.dec = load_tensors(folder / "decoder.onnx")

    def encode(self, ids: list[int]):
        cfg, e = self.cfg, self.enc
        run = onnx_gru_dir if cfg["cell"] == "gru" else onnx_lstm_dir
        x = e[ENCODER["embedding"]][ids]
        for w, r, b in ENCODER["rnn"][cfg["cell"]]:
            W, R, B = e[w], e[r], e[b]
            half = B.shape[1] // 2
            x = np.concatenate([run(x, W[d], R[d], B[d, :half], B[d, half:], d == 1) for d in (0, 1)], axis=1)
        memory = x  # [T, 2H]: [forward; backward]
        mean = memory.mean(axis=0)
        if cfg["bridge"] == "per-layer":
            h0 = [np.tanh(e[f"bridge.{l}.weight"] @ mean + e[f"bridge.{l}.bias"]) for l in range(cfg["layers"])]
        else:
            h0 = [np.tanh(e["bridge.weight"] @ mean + e["bridge.bias"])] * cfg["layers"]
        state = [(h, np.zeros_like(h)) for h in h0] if cfg["cell"] == "lstm" else h0
        return memory, state

    def step(self, tok: int, state, feed, memory):
        """PyTorch-cell decoder step: gates [r, z, n] / [i, f, g, o] in the unrolled graph."""
        cfg, d = self.cfg, self.dec
        D = cfg["dec_hidden"]
        x = d[DECODER["embedding"]][tok]
        if cfg["input_feed"]:
            x = np.concatenate([x, feed])
        new = []
        for l in range(cfg["layers"]):
            pre = f"decoder.rnn.layers.{l}."
            gi = (x @ d[DECODER["l0_w_ih_T"]]) if l == 0 else (d[pre + "weight_ih"] @ x)
            gi = gi + d[pre + "bias_ih"]
            h = state[l][0] if cfg["cell"] == "lstm" else state[l]
            gh = d[pre + "weight_hh"] @ h + d[pre + "bias_hh"]
            if cfg["cell"] == "gru":
                r = sigmoid(gi[:D] + gh[:D])
                z = sigmoid(gi[D:2 * D] + gh[D:2 * D])
                n = np.tanh(gi[2 * D:] + r * gh[2 * D:])
                h2 = (1.0 - z) * n + z * h
                new.append(h2)
            else:
                g = gi + gh
                i, f, gg, o = (g[k * D:(k + 1) * D] for k in range(4))
                c2 = sigmoid(f) * state[l][1] + sigmoid(i) * np.tanh(gg)
                h2 = sigmoid(o) * np.tanh(c2)
                new.append((h2, c2))
            x = h2
        top = x
        scores = memory @ (d[DECODER["attn_general"]].T @ top)  # top^T W_a m_j
        alpha = np.exp(scores - scores.max())
        alpha /= alpha.sum()
        ctx = alpha @ memory
        parts = [ctx, top] if cfg["combine"] == "context-state" else [top, ctx]
        att = np.tanh(np.concatenate(parts) @ d[DECODER["combine_T"]] + d[DECODER["combine_b"]])
        logits = d[DECODER["out_w"]] @ att + d[DECODER["out_b"]]
        lse = logits.max() + np.log(np.exp(logits - logits.max()).sum())
        return logits - lse, new, att, alpha
