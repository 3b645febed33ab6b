"""Reference decodes for `s2s verify`, from any framework: the greedy loop and the writer.

`s2s verify MODEL.s2s --expect FILE.jsonl` reads one JSON object per line:

    {"source": "kelso", "ids": [5, 12, 13, 2, 6, 24], "probs": [...], "gaps": [...]}
    {"source": "kelso", "ids": [5, 12, 13, 2, 6, 24], "beam": 3}

* ids: the output's target token ids in the model's target vocabulary (the order of
  `[target] tokens` in its configuration), WITHOUT the start token and WITHOUT the end
  token: exactly what `s2s run --ids` prints.
* beam (optional): the width of the framework's beam search; without it, greedy.
* probs (optional, greedy): the top-1 probability at each step, the step that chose
  the end token included when the decode ended (len(ids) + 1 values; len(ids) when it
  stopped at the step cap).
* gaps (optional, greedy): the top-two probability gap p1 - p2 at each step, as many
  as probs. `s2s verify` then judges a disagreement a near tie by this gap (< 1e-4).

This module needs only numpy and runs under Python 3.7 or later. The framework helpers
(`torch_expect`, `keras_expect`, `ort_expect`) turn a model into the `step` function
`greedy` calls; a framework without a helper can call `greedy` directly.
"""

from __future__ import annotations

import json

import numpy as np


def softmax(scores):
    """float64 softmax of a vector."""
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    e = np.exp(x - x.max())
    return e / e.sum()


def as_probs(scores, kind):
    """A step's output as float64 probabilities: `kind` is "probs" (already a
    distribution), "logits" or "log_probs"."""
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    if kind == "probs":
        return x
    if kind in ("logits", "log_probs"):
        return softmax(x)
    raise ValueError("kind must be probs, logits or log_probs, not %r" % (kind,))


def top_two(probs):
    """(argmax, gap p1 - p2): the first maximum wins, as numpy's and s2s's argmax."""
    first = int(np.argmax(probs))
    rest = np.array(probs, dtype=np.float64)
    rest[first] = -np.inf
    second = float(rest.max()) if len(rest) > 1 else 0.0
    return first, float(probs[first] - second)


def greedy(step, state, start_id, end_id, max_steps, kind="logits"):
    """Greedy decoding of one source.

    `step(prev_id, state) -> (scores, state)` runs the decoder one step from the
    previous token (the start token first); `scores` is one vector over the target
    vocabulary (logits, log-probabilities or probabilities: `kind`), anything numpy
    can read. Stops after the end token or `max_steps` steps (the model's
    `max_steps`). Returns {"ids", "probs", "gaps"} in the expect format.
    """
    ids, probs, gaps = [], [], []
    prev = start_id
    for _ in range(max_steps):
        scores, state = step(prev, state)
        p = as_probs(scores, kind)
        tok, gap = top_two(p)
        probs.append(float(p[tok]))
        gaps.append(gap)
        if tok == end_id:
            break
        ids.append(tok)
        prev = tok
    return {"ids": ids, "probs": probs, "gaps": gaps}


def record(source, decoded=None, ids=None, beam=None):
    """One line of the expect file: `decoded` from `greedy`, or the `ids` of another
    search (with `beam` its width)."""
    if decoded is not None:
        line = {"source": source, "ids": [int(i) for i in decoded["ids"]]}
        line["probs"] = [float("%.9g" % p) for p in decoded["probs"]]
        line["gaps"] = [float("%.9g" % g) for g in decoded["gaps"]]
        return line
    line = {"source": source, "ids": [int(i) for i in ids]}
    if beam is not None:
        line["beam"] = int(beam)
    return line


def write(path, lines):
    """Writes the expect file (UTF-8, one JSON object per line)."""
    with open(str(path), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
