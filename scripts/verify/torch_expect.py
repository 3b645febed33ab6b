"""Reference decodes for `s2s verify` from a PyTorch model.

    import torch_expect
    lines = torch_expect.decode(words, encode, step, start_id=1, end_id=2, max_steps=20)
    torch_expect.write("expect.jsonl", lines)

* `encode(source) -> state`: the encoder on one source string (your tokenisation,
  batch 1), returning whatever the decoder needs (hidden state, memory, ...).
* `step(prev_id, state) -> (logits, state)`: one decoder step from the previous
  token id (the start token first); `logits` a tensor of the target vocabulary's size
  (any shape that flattens to it; `kind="log_probs"` or `"probs"` if your step
  returns those).

Everything runs under `torch.no_grad()` with the model in the mode you left it in
(call `model.eval()` first: dropout must be off). Token ids are your model's, which
must be the order of `[target] tokens` in the s2s configuration. See
scripts/verify/README.md.
"""

from __future__ import annotations

import numpy as np

import s2s_expect
from s2s_expect import write  # noqa: F401  (re-exported for callers)


def to_numpy(x):
    """A tensor (any device, any float type) or array as a flat float64 numpy vector."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64).reshape(-1)


def decode(sources, encode, step, start_id, end_id, max_steps, kind="logits"):
    """Greedy decodes of `sources` (strings): the expect file's lines."""
    import torch

    def numpy_step(prev, state):
        scores, state = step(prev, state)
        return to_numpy(scores), state

    lines = []
    with torch.no_grad():
        for source in sources:
            decoded = s2s_expect.greedy(numpy_step, encode(source), start_id, end_id,
                                        max_steps, kind)
            lines.append(s2s_expect.record(source, decoded))
    return lines
