"""The two fixture architectures: the one definition of their sizes and choices.

Both: source embedding -> two-layer bidirectional RNN encoder (memory = the top
layer's [forward; backward] outputs) -> bridge from the mean of the memory ->
two-layer RNN decoder -> Luong general attention -> attentional (combine) layer
tanh(W_c [..] + b) -> output projection -> log-softmax.

They differ on purpose, so that between them they exercise every option issue 12
asks the runtime for:

* gru:  per-layer bridge (decoder layer l starts from tanh(W_l mean + b_l));
        input feeding (decoder layer 0 reads [embedding; previous attentional
        vector], zeros at the first step); combine input [context; state].
* lstm: one bridge shared by both decoder layers for h (c starts at zeros);
        no input feeding; combine input [state; context].
"""

VARIANTS = {
    "gru": {
        "cell": "gru",
        "src_emb": 16,
        "enc_hidden": 32,  # per direction; memory size M = 64
        "tgt_emb": 32,
        "dec_hidden": 48,  # D; the attentional vector has D values too
        "layers": 2,
        "bridge": "per-layer",
        "input_feed": True,
        "combine": "context-state",
        "seed": 1201,
    },
    "lstm": {
        "cell": "lstm",
        "src_emb": 16,
        "enc_hidden": 32,
        "tgt_emb": 32,
        "dec_hidden": 48,
        "layers": 2,
        "bridge": "shared",
        "input_feed": False,
        "combine": "state-context",
        "seed": 1202,
    },
}


def gates(cfg: dict) -> int:
    return 3 if cfg["cell"] == "gru" else 4
