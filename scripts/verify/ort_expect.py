"""Reference decodes for `s2s verify` from ONNX graphs run by onnxruntime.

An export of a seq2seq model is usually two graphs: an encoder, and a decoder that
runs one step. Describe how they connect and `OrtSeq2Seq` runs the greedy loop:

    m = ort_expect.OrtSeq2Seq(
        "encoder.onnx", "decoder.onnx",
        encoder_feeds=lambda ids: {"src": np.array(ids, np.int64)[:, None]},
        first_state=lambda enc: {"hidden": enc["dec_h0"], "memory": enc["memory"]},
        token_input="input_token",                 # fed np.array([prev_id], int64)
        scores_output="log_probs", kind="log_probs",
        next_state={"hidden_out": "hidden"},       # decoder output -> next step's input
        constant_state=["memory"])                 # fed again unchanged every step
    lines = m.decode(words, encode_source, start_id, end_id, max_steps)
    ort_expect.write("expect.jsonl", lines)

`encoder_feeds(ids)` builds the encoder's inputs from your token ids (`encode_source`
turns a word into them); `first_state(encoder_outputs)` the decoder's first inputs
(a dict by input name; add zeros for states the encoder does not give). The sessions
run on the CPU with one thread, as a reference should. Token ids are your export's,
which must be the order of `[target] tokens` in the s2s configuration. See
scripts/verify/README.md.
"""

from __future__ import annotations

import numpy as np

import s2s_expect
from s2s_expect import write  # noqa: F401  (re-exported for callers)


class OrtSeq2Seq:
    def __init__(self, encoder_path, decoder_path, encoder_feeds, first_state, token_input,
                 scores_output, next_state, constant_state=(), kind="logits"):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        cpu = ["CPUExecutionProvider"]
        self.enc = ort.InferenceSession(str(encoder_path), so, providers=cpu)
        self.dec = ort.InferenceSession(str(decoder_path), so, providers=cpu)
        self.enc_out = [o.name for o in self.enc.get_outputs()]
        self.dec_out = [o.name for o in self.dec.get_outputs()]
        for name in [scores_output, *next_state]:
            if name not in self.dec_out:
                raise ValueError("the decoder has no output %r (it has %s)" % (name, self.dec_out))
        self.encoder_feeds = encoder_feeds
        self.first_state = first_state
        self.token_input = token_input
        self.scores_output = scores_output
        self.next_state = dict(next_state)
        self.constant_state = list(constant_state)
        self.kind = kind

    def encode(self, ids):
        outs = dict(zip(self.enc_out, self.enc.run(None, self.encoder_feeds(ids))))
        return self.first_state(outs)

    def step(self, prev, state):
        feeds = dict(state)
        feeds[self.token_input] = np.array([prev], np.int64)
        outs = dict(zip(self.dec_out, self.dec.run(None, feeds)))
        new = {k: state[k] for k in self.constant_state}
        for out_name, in_name in self.next_state.items():
            new[in_name] = outs[out_name]
        return outs[self.scores_output], new

    def decode(self, sources, encode_source, start_id, end_id, max_steps):
        """Greedy decodes of `sources` (strings; `encode_source(s)` gives the ids)."""
        return [s2s_expect.record(s, s2s_expect.greedy(self.step, self.encode(encode_source(s)),
                                                        start_id, end_id, max_steps, self.kind))
                for s in sources]
