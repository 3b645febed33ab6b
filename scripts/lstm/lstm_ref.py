"""Independent float64 numpy building blocks for the LSTM fixtures' reference models.

Written from the frameworks' documented equations, not from their code, so that each
fixture script can check the framework it trained against a second implementation
(and so that this file reads as the specification the Rust importer needs). Python 3.7
compatible; numpy only.

Layouts:
  Keras (2 and 3): kernel (in, 4U), recurrent_kernel (U, 4U), bias (4U,), gate blocks
                   [i, f, c, o] along the 4U axis; one bias (added once).
  PyTorch nn.LSTM: weight_ih (4H, in), weight_hh (4H, H), bias_ih (4H,), bias_hh (4H,),
                   gate blocks [i, f, g, o] along the 4H axis; both biases added.
Both compute, with `rec` the recurrent activation (gates) and tanh elsewhere:
  i = rec(.), f = rec(.), g = tanh(.), o = rec(.)
  c' = f * c + i * g,   h' = o * tanh(c')
"""

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def hard_sigmoid_keras2(x):
    """Keras 2 / tf.keras `hard_sigmoid`: clip(0.2 x + 0.5, 0, 1)."""
    return np.clip(0.2 * x + 0.5, 0.0, 1.0)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def lstm_update(z, c, rec_act):
    """The cell update from the four pre-activations `z` = [i, f, g, o] blocks."""
    i, f, g, o = np.split(z, 4)
    c = rec_act(f) * c + rec_act(i) * np.tanh(g)
    return rec_act(o) * np.tanh(c), c


def keras_lstm_step(x, h, c, kernel, recurrent, bias, rec_act):
    return lstm_update(x @ kernel + h @ recurrent + bias, c, rec_act)


def torch_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return lstm_update(w_ih @ x + b_ih + w_hh @ h + b_hh, c, sigmoid)


def masked_rnn(step, xs, mask, units, zero_output_for_mask):
    """Runs `step(x, h, c) -> (h, c)` over the rows of `xs` as a Keras recurrent layer
    does with a mask: at a masked step the state is kept and the output is zeros
    (`zero_output_for_mask`) or the previous step's output (zeros before the first
    real step). Returns (outputs (T, units), final h, final c)."""
    h = np.zeros(units)
    c = np.zeros(units)
    prev = np.zeros(units)
    outs = []
    for x, m in zip(xs, mask):
        if m:
            h, c = step(x, h, c)
            prev = h
        elif zero_output_for_mask:
            prev = np.zeros(units)
        outs.append(prev)
    return np.array(outs), h, c


def keras_bidirectional(step_fwd, step_bwd, xs, mask, units, zero_output_for_mask):
    """A Keras `Bidirectional(LSTM(return_sequences=True, return_state=True))`, concat
    merge: the backward layer reads the reversed input and mask, its outputs are
    reversed back. Returns (outputs (T, 2U) = [fwd; bwd], h_f, c_f, h_b, c_b)."""
    out_f, h_f, c_f = masked_rnn(step_fwd, xs, mask, units, zero_output_for_mask)
    out_b, h_b, c_b = masked_rnn(step_bwd, xs[::-1], mask[::-1], units, zero_output_for_mask)
    return np.concatenate([out_f, out_b[::-1]], axis=1), h_f, c_f, h_b, c_b


def keras_dot_attention_step(h, memory, w_att, b_att, w_out, b_out):
    """The Keras fixtures' decoder head for one step: scores = memory @ h over every
    (also padded) position, softmax, context = weights @ memory,
    probs = softmax(W_out tanh(W_att [context; h] + b_att) + b_out) with Keras
    (in, out) kernels. Returns (probs, attention weights)."""
    weights = softmax(memory @ h)
    context = weights @ memory
    hidden = np.tanh(np.concatenate([context, h]) @ w_att + b_att)
    return softmax(hidden @ w_out + b_out), weights


def greedy(step_probs, start_id, end_id, max_steps, forced=None):
    """Greedy decoding: `step_probs(prev_token) -> probs` is called once per step with
    the previous token (the start token first), carrying its own state; stops after
    the end token or `max_steps` steps. With `forced` (a token list, e.g. another
    implementation's output), exactly those tokens are fed instead of the argmax, so
    two implementations can be compared step by step along one path. Returns the
    list of probability vectors, one per step."""
    steps = []
    prev = start_id
    for t in range(len(forced) if forced is not None else max_steps):
        probs = step_probs(prev)
        steps.append(probs)
        prev = forced[t] if forced is not None else int(np.argmax(probs))
        if forced is None and prev == end_id:
            break
    return steps
