#!/usr/bin/env python3
"""Write a trained fixture model as two ONNX graphs laid out like `torch.onnx.export`.

Usage:
    python scripts/onnx/export_onnx.py --variant gru|lstm [--work-dir DIR] [--out-dir DIR]

Reads WORK_DIR/params-VARIANT.npz (from train.py) and writes, under
OUT_DIR/VARIANT/ (default tests/fixtures/onnx/VARIANT/):

  encoder.onnx   src [src_len, batch] int64 -> memory [src_len, batch, 2H], dec_h0 [2, batch, D]
  decoder.onnx   one decoder step (inputs and outputs in tests/fixtures/onnx/README.md)
  *.onnx.data    the one tensor stored as ONNX external data (gru: decoder, lstm: encoder)

The graphs are written node by node with `onnx.helper`, copying what the
PyTorch exporter (opset 17, TorchScript exporter) produces for such a model:
an embedding as `Gather`; each bidirectional RNN layer as one `GRU`/`LSTM` node
with packed weights under generated names (`onnx::GRU_383`), no sequence_lens and
no initial state, followed by Transpose + Reshape to [T, B, 2H]; `nn.Linear` on
2-D inputs as `Gemm(transB=1)` with the parameter's own name; `x @ W` as `MatMul`
with the transposed weight folded into a new initializer (`onnx::MatMul_512`,
stored (in, out)); one initializer read through an `Identity` node (what the
exporter's initializer de-duplication leaves); node and value names in the
`/scope/Op_output_0` style; `Constant` nodes for indices, axes and split sizes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

import data
from variants import VARIANTS, gates

REPO_ROOT = Path(__file__).resolve().parents[2]
OPSET = 17
IR_VERSION = 8
PRODUCER = ("s2s scripts/onnx/export_onnx.py", "1")

# ONNX gate order from PyTorch's: GRU [r, z, n] -> [z, r, h]; LSTM [i, f, g, o] -> [i, o, f, c].
ONNX_GATE_BLOCKS = {"gru": [1, 0, 2], "lstm": [0, 3, 1, 2]}

# Generated initializer names, as the exporter numbers its values.
ENC_RNN_NAMES = {0: (383, 384, 385), 1: (403, 404, 405)}  # (W, R, B) per layer
DEC_L0_W_IH_T = "onnx::MatMul_512"  # decoder layer 0 input weights, (in, gates*D)
ATTN_W = "onnx::MatMul_530"  # Luong general W_a, (D, M), read through Identity
ATTN_W_IDENTITY_OUT = "onnx::MatMul_531"
COMBINE_W_T = "onnx::MatMul_545"  # attentional layer, (in, D)
EXTERNAL = {"gru": ("decoder", "generator.weight"), "lstm": ("encoder", "onnx::LSTM_403")}


def reorder_gates(a: np.ndarray, cell: str) -> np.ndarray:
    blocks = np.split(a, len(ONNX_GATE_BLOCKS[cell]), axis=0)
    return np.concatenate([blocks[i] for i in ONNX_GATE_BLOCKS[cell]], axis=0)


class Graph:
    """A node list with the exporter's naming: /scope/Op, /scope/Op_1, /scope/Op_output_0."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.counts: dict[str, int] = {}

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array, np.float32), name))
        return name

    def op(self, scope: str, op: str, inputs: list[str], n_out: int = 1, outputs=None, **attrs) -> list[str]:
        key = f"/{scope}/{op}" if scope else f"/{op}"
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = key if k == 0 else f"{key}_{k}"
        outs = outputs or [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs

    def const(self, scope: str, value) -> str:
        arr = np.asarray(value)
        t = numpy_helper.from_array(arr, "")
        return self.op(scope, "Constant", [], value=t)[0]


def rnn_layer(g: Graph, cfg: dict, p: dict, layer: int, x: str, scope: str) -> str:
    """One bidirectional ONNX GRU/LSTM node, then Transpose + Reshape to [T, B, 2H]."""
    cell, H = cfg["cell"], cfg["enc_hidden"]
    w, r, b = (f"onnx::{cell.upper()}_{n}" for n in ENC_RNN_NAMES[layer])
    dirs = ("", "_reverse")
    g.init(w, np.stack([reorder_gates(p[f"encoder.rnn.weight_ih_l{layer}{s}"], cell) for s in dirs]))
    g.init(r, np.stack([reorder_gates(p[f"encoder.rnn.weight_hh_l{layer}{s}"], cell) for s in dirs]))
    g.init(b, np.stack([
        np.concatenate([reorder_gates(p[f"encoder.rnn.bias_ih_l{layer}{s}"], cell),
                        reorder_gates(p[f"encoder.rnn.bias_hh_l{layer}{s}"], cell)])
        for s in dirs
    ]))
    attrs = {"hidden_size": H, "direction": "bidirectional"}
    if cell == "gru":
        attrs["linear_before_reset"] = 1
    y = g.op(scope, cell.upper(), [x, w, r, b], n_out=1, **attrs)[0]  # Y [T, 2, B, H]
    yt = g.op(scope, "Transpose", [y], perm=[0, 2, 1, 3])[0]  # [T, B, 2, H]
    return g.op(scope, "Reshape", [yt, g.const(scope, np.array([0, 0, -1], np.int64))])[0]


def encoder_graph(cfg: dict, p: dict) -> onnx.GraphProto:
    g = Graph()
    D, L = cfg["dec_hidden"], cfg["layers"]
    g.init("encoder.embedding.weight", p["encoder.embedding.weight"])
    x = g.op("encoder/embedding", "Gather", ["encoder.embedding.weight", "src"])[0]
    for l in range(L):
        x = rnn_layer(g, cfg, p, l, x, "encoder/rnn")
    g.op("encoder", "Identity", [x], outputs=["memory"])
    mean = g.op("bridge", "ReduceMean", ["memory"], axes=[0], keepdims=0)[0]  # [B, 2H]
    zero_axis = lambda s: g.const(s, np.array([0], np.int64))  # noqa: E731
    if cfg["bridge"] == "per-layer":
        hs = []
        for l in range(L):
            s = f"bridge/{l}"
            g.init(f"bridge.{l}.weight", p[f"bridge.{l}.weight"])
            g.init(f"bridge.{l}.bias", p[f"bridge.{l}.bias"])
            y = g.op(s, "Gemm", [mean, f"bridge.{l}.weight", f"bridge.{l}.bias"], alpha=1.0, beta=1.0, transB=1)[0]
            hs.append(g.op("bridge", "Unsqueeze", [g.op("bridge", "Tanh", [y])[0], zero_axis("bridge")])[0])
    else:
        g.init("bridge.weight", p["bridge.weight"])
        g.init("bridge.bias", p["bridge.bias"])
        y = g.op("bridge", "Gemm", [mean, "bridge.weight", "bridge.bias"], alpha=1.0, beta=1.0, transB=1)[0]
        h = g.op("bridge", "Unsqueeze", [g.op("bridge", "Tanh", [y])[0], zero_axis("bridge")])[0]
        hs = [h] * L
    g.op("bridge", "Concat", hs, outputs=["dec_h0"], axis=0)
    M = 2 * cfg["enc_hidden"]
    return helper.make_graph(
        g.nodes, "main_graph",
        [helper.make_tensor_value_info("src", TensorProto.INT64, ["src_len", "batch"])],
        [helper.make_tensor_value_info("memory", TensorProto.FLOAT, ["src_len", "batch", M]),
         helper.make_tensor_value_info("dec_h0", TensorProto.FLOAT, [L, "batch", D])],
        g.inits,
    )


def linear_gemm(g: Graph, scope: str, x: str, p: dict, w: str, b: str) -> str:
    g.init(w, p[w])
    g.init(b, p[b])
    return g.op(scope, "Gemm", [x, w, b], alpha=1.0, beta=1.0, transB=1)[0]


def linear_matmul(g: Graph, scope: str, x: str, p: dict, w: str, folded: str, b: str) -> str:
    g.init(folded, p[w].T)  # stored (in, out)
    g.init(b, p[b])
    return g.op(scope, "Add", [g.op(scope, "MatMul", [x, folded])[0], b])[0]


def decoder_cell(g: Graph, cfg: dict, p: dict, l: int, x: str, h: str, c: str | None):
    """The unrolled PyTorch cell of decoder layer l: returns (h', c')."""
    s = f"decoder/rnn/layers.{l}"
    pre = f"decoder.rnn.layers.{l}."
    n = gates(cfg)
    if l == 0:
        gi = linear_matmul(g, s, x, p, pre + "weight_ih", DEC_L0_W_IH_T, pre + "bias_ih")
    else:
        gi = linear_gemm(g, s, x, p, pre + "weight_ih", pre + "bias_ih")
    gh = linear_gemm(g, s, h, p, pre + "weight_hh", pre + "bias_hh")
    D = cfg["dec_hidden"]
    split = lambda t: g.op(s, "Split", [t, g.const(s, np.array([D] * n, np.int64))], n_out=n, axis=1)  # noqa: E731
    if cfg["cell"] == "gru":
        i_r, i_z, i_n = split(gi)
        h_r, h_z, h_n = split(gh)
        r = g.op(s, "Sigmoid", [g.op(s, "Add", [i_r, h_r])[0]])[0]
        z = g.op(s, "Sigmoid", [g.op(s, "Add", [i_z, h_z])[0]])[0]
        nn_ = g.op(s, "Tanh", [g.op(s, "Add", [i_n, g.op(s, "Mul", [r, h_n])[0]])[0]])[0]
        one_minus_z = g.op(s, "Sub", [g.const(s, np.array(1.0, np.float32)), z])[0]
        h2 = g.op(s, "Add", [g.op(s, "Mul", [one_minus_z, nn_])[0], g.op(s, "Mul", [z, h])[0]])[0]
        return h2, None
    i, f, gg, o = split(g.op(s, "Add", [gi, gh])[0])
    c2 = g.op(s, "Add", [
        g.op(s, "Mul", [g.op(s, "Sigmoid", [f])[0], c])[0],
        g.op(s, "Mul", [g.op(s, "Sigmoid", [i])[0], g.op(s, "Tanh", [gg])[0]])[0],
    ])[0]
    h2 = g.op(s, "Mul", [g.op(s, "Sigmoid", [o])[0], g.op(s, "Tanh", [c2])[0]])[0]
    return h2, c2


def decoder_graph(cfg: dict, p: dict) -> onnx.GraphProto:
    g = Graph()
    D, L, M = cfg["dec_hidden"], cfg["layers"], 2 * cfg["enc_hidden"]
    V = p["generator.weight"].shape[0]
    lstm = cfg["cell"] == "lstm"
    g.init("decoder.embedding.weight", p["decoder.embedding.weight"])
    x = g.op("decoder/embedding", "Gather", ["decoder.embedding.weight", "input_token"])[0]  # [B, E]
    if cfg["input_feed"]:
        x = g.op("decoder", "Concat", [x, "input_feed"], axis=1)[0]
    layer_state = lambda t, l: g.op("decoder", "Gather", [t, g.const("decoder", np.array(l, np.int64))], axis=0)[0]  # noqa: E731
    hs, cs = [], []
    for l in range(L):
        h, c = decoder_cell(g, cfg, p, l, x, layer_state("h" if lstm else "hidden", l), layer_state("c", l) if lstm else None)
        hs.append(h)
        cs.append(c)
        x = h
    top = x
    unsq = lambda t, a: g.op("decoder", "Unsqueeze", [t, g.const("decoder", np.array([a], np.int64))])[0]  # noqa: E731
    g.op("decoder", "Concat", [unsq(h, 0) for h in hs], outputs=["h_out" if lstm else "hidden_out"], axis=0)
    if lstm:
        g.op("decoder", "Concat", [unsq(c, 0) for c in cs], outputs=["c_out"], axis=0)

    # Luong general attention: score_j = top^T W_a m_j, W_a = linear_in.weight^T (D, M).
    a = "decoder/attn"
    g.init(ATTN_W, p["decoder.attn.linear_in.weight"].T)
    g.op("", "Identity", [ATTN_W], outputs=[ATTN_W_IDENTITY_OUT])
    q = g.op(a, "MatMul", [top, ATTN_W_IDENTITY_OUT])[0]  # [B, M]
    mem = g.op(a, "Transpose", ["memory"], perm=[1, 0, 2])[0]  # [B, T, M]
    scores = g.op(a, "MatMul", [mem, g.op(a, "Unsqueeze", [q, g.const(a, np.array([2], np.int64))])[0]])[0]
    scores = g.op(a, "Squeeze", [scores, g.const(a, np.array([2], np.int64))])[0]  # [B, T]
    g.op(a, "Softmax", [scores], outputs=["attn"], axis=1)
    alpha = g.op(a, "Unsqueeze", ["attn", g.const(a, np.array([1], np.int64))])[0]  # [B, 1, T]
    ctx = g.op(a, "Squeeze", [g.op(a, "MatMul", [alpha, mem])[0], g.const(a, np.array([1], np.int64))])[0]
    parts = [ctx, top] if cfg["combine"] == "context-state" else [top, ctx]
    cat = g.op(a, "Concat", parts, axis=1)[0]
    comb = linear_matmul(g, a + "/linear_out", cat, p, "decoder.attn.linear_out.weight", COMBINE_W_T, "decoder.attn.linear_out.bias")
    att_vec = g.op(a, "Tanh", [comb], outputs=["attn_vector"] if cfg["input_feed"] else None)[0]
    logits = linear_gemm(g, "generator", att_vec, p, "generator.weight", "generator.bias")
    g.op("", "LogSoftmax", [logits], outputs=["log_probs"], axis=1)

    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("input_token", TensorProto.INT64, ["batch"])]
    if lstm:
        inputs += [helper.make_tensor_value_info(n, f, [L, "batch", D]) for n in ("h", "c")]
    else:
        inputs += [helper.make_tensor_value_info("hidden", f, [L, "batch", D])]
    if cfg["input_feed"]:
        inputs += [helper.make_tensor_value_info("input_feed", f, ["batch", D])]
    inputs += [helper.make_tensor_value_info("memory", f, ["src_len", "batch", M])]
    outputs = [helper.make_tensor_value_info("log_probs", f, ["batch", V])]
    outputs += [helper.make_tensor_value_info(n, f, [L, "batch", D]) for n in (["h_out", "c_out"] if lstm else ["hidden_out"])]
    if cfg["input_feed"]:
        outputs += [helper.make_tensor_value_info("attn_vector", f, ["batch", D])]
    outputs += [helper.make_tensor_value_info("attn", f, ["batch", "src_len"])]
    return helper.make_graph(g.nodes, "main_graph", inputs, outputs, g.inits)


def save(graph: onnx.GraphProto, path: Path, external: str | None, doc: str) -> None:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER[0],
                          producer_version=PRODUCER[1], doc_string=doc)
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m, full_check=True)
    data_file = path.with_name(path.name + ".data")
    data_file.unlink(missing_ok=True)  # onnx appends to an existing data file
    if external is not None:
        (t,) = [t for t in m.graph.initializer if t.name == external]
        set_external_data(t, data_file.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(m, str(path))
    if external is not None:
        data_file.chmod(0o644)  # onnx creates it private
    onnx.checker.check_model(str(path), full_check=True)
    print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/s2s-onnx-work"))
    ap.add_argument("--out-dir", type=Path, default=REPO_ROOT / "tests" / "fixtures" / "onnx")
    args = ap.parse_args()
    cfg = VARIANTS[args.variant]
    with np.load(args.work_dir / f"params-{args.variant}.npz") as z:
        p = {k: z[k].astype(np.float32) for k in z.files}
    out = args.out_dir / args.variant
    ext_graph, ext_name = EXTERNAL[args.variant]
    doc = (f"s2s ONNX fixture '{args.variant}' (CMUdict g2p, trained with JAX), written by "
           "scripts/onnx/export_onnx.py in the layout of torch.onnx.export; see tests/fixtures/onnx/README.md")
    save(encoder_graph(cfg, p), out / "encoder.onnx", ext_name if ext_graph == "encoder" else None, doc)
    save(decoder_graph(cfg, p), out / "decoder.onnx", ext_name if ext_graph == "decoder" else None, doc)


if __name__ == "__main__":
    main()
