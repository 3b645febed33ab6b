"""Reference decodes for `s2s verify` from a Keras model (Keras 2.3+ or Keras 3).

Two ways to give the model:

1. The training graph, teacher-forced: a model `model([source, target_in]) -> probs`
   of shape (1, T, V) whose decoder is causal (every seq2seq model trained with
   teacher forcing). Step t runs the whole model on the first t + 1 decoder inputs
   and reads position t (slow, quadratic in the output length, but it needs nothing
   but the trained model):

       lines = keras_expect.decode_teacher_forced(model, words, encode_source,
                                                  start_id, end_id, max_steps)

   `encode_source(word) -> array (1, S)` is your tokenisation and padding.

2. Split inference models (an encoder and a one-step decoder, as many Keras
   tutorials and packages build): write `encode(source) -> state` and
   `step(prev_id, state) -> (probs, state)` with `keras_expect.predict` and call

       lines = keras_expect.decode(words, encode, step, start_id, end_id, max_steps)

Token ids are your tokenizer's, which must be the order of `[target] tokens` in the
s2s configuration. See scripts/verify/README.md.
"""

from __future__ import annotations

import numpy as np

import s2s_expect
from s2s_expect import write  # noqa: F401  (re-exported for callers)


def predict(model, inputs):
    """`model.predict(inputs)` for a batch of one, quietly."""
    return model.predict(inputs, batch_size=1, verbose=0)


def decode(sources, encode, step, start_id, end_id, max_steps, kind="probs"):
    """Greedy decodes of `sources` with your own `encode` / `step` (see above)."""
    return [s2s_expect.record(s, s2s_expect.greedy(step, encode(s), start_id, end_id,
                                                    max_steps, kind))
            for s in sources]


def decode_teacher_forced(model, sources, encode_source, start_id, end_id, max_steps,
                          kind="probs"):
    """Greedy decodes of `sources` with a teacher-forced training model (see above)."""

    def encode(source):
        return (encode_source(source), [])

    def step(prev, state):
        src, prefix = state
        prefix = prefix + [prev]
        out = predict(model, [src, np.array([prefix], dtype=np.int32)])
        return out[0, len(prefix) - 1], (src, prefix)

    return decode(sources, encode, step, start_id, end_id, max_steps, kind)
