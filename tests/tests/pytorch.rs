//! A model in the layout of the PyTorch seq2seq tutorial, imported from a safetensors
//! state dict with `models/examples/pytorch-bahdanau.toml`, against an independent f64
//! implementation of the tutorial's equations.
//!
//! The tutorial (`EncoderRNN`, `BahdanauAttention`, `AttnDecoderRNN.forward_step`):
//!
//! ```text
//! encoder:  h_t = GRU(embedding(x_t), h_{t-1}),  h_0 = 0;  keys = [h_1 .. h_T]
//! decoder:  s_0 = h_T,  y_0 = SOS
//!           e_i   = Va(tanh(Wa(s_{t-1}) + Ua(keys_i)))
//!           a     = softmax(e),  c_t = sum_i a_i keys_i
//!           s_t   = GRU([embedding(y_{t-1}); c_t], s_{t-1})
//!           logits_t = out(s_t),  y_t = argmax logits_t   (stop at EOS)
//! GRU:      r = sig(W_ir x + b_ir + W_hr h + b_hr),  z = sig(W_iz x + b_iz + W_hz h + b_hz)
//!           n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),  h' = (1 - z) * n + z * h
//! ```

use std::collections::HashMap;

use host_tools::model::{decode_lines, Keep, LoadedModel};
use s2s_tests::pytorch::{self, EOS, HIDDEN, MAX_STEPS, SOS, SRC, TGT};
use s2s_tests::{s2s_ok, scratch_dir};

/// The state dict as f64 matrices.
struct Weights(HashMap<String, (Vec<usize>, Vec<f64>)>);

impl Weights {
    fn new(tensors: &[pytorch::Tensor]) -> Self {
        Weights(
            tensors
                .iter()
                .map(|(n, s, d)| {
                    (
                        n.clone(),
                        (s.clone(), d.iter().map(|&v| v as f64).collect()),
                    )
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> &(Vec<usize>, Vec<f64>) {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("no tensor {name}"))
    }

    /// `W x + b` of the `nn.Linear`-shaped `(out, in)` weight `w` and bias `b`.
    fn linear(&self, w: &str, b: &str, x: &[f64]) -> Vec<f64> {
        let (shape, w) = self.get(w);
        let (_, b) = self.get(b);
        let (rows, cols) = (shape[0], shape[1]);
        assert_eq!(cols, x.len(), "{w:?} input size");
        (0..rows)
            .map(|r| b[r] + (0..cols).map(|c| w[r * cols + c] * x[c]).sum::<f64>())
            .collect()
    }

    /// Row `i` of an embedding table.
    fn embed(&self, table: &str, i: usize) -> Vec<f64> {
        let (shape, w) = self.get(table);
        w[i * shape[1]..(i + 1) * shape[1]].to_vec()
    }

    /// One step of `nn.GRU` layer 0 of module `m`.
    fn gru(&self, m: &str, x: &[f64], h: &[f64]) -> Vec<f64> {
        let gi = self.linear(&format!("{m}.weight_ih_l0"), &format!("{m}.bias_ih_l0"), x);
        let gh = self.linear(&format!("{m}.weight_hh_l0"), &format!("{m}.bias_hh_l0"), h);
        let n = h.len();
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        (0..n)
            .map(|j| {
                let r = sig(gi[j] + gh[j]);
                let z = sig(gi[n + j] + gh[n + j]);
                let cand = (gi[2 * n + j] + r * gh[2 * n + j]).tanh();
                (1.0 - z) * cand + z * h[j]
            })
            .collect()
    }
}

/// The reference's decode of one source: output tokens, logits of every step (the EOS
/// step included) and attention weights of every step.
struct Reference {
    tokens: Vec<usize>,
    logits: Vec<Vec<f64>>,
    weights: Vec<Vec<f64>>,
}

fn reference(w: &Weights, source: &str) -> Reference {
    let mut ids: Vec<usize> = source
        .chars()
        .map(|c| {
            SRC.iter()
                .position(|t| *t == c.to_string())
                .expect("source in the vocabulary")
        })
        .collect();
    ids.push(EOS);
    // Encoder.
    let mut h = vec![0.0; HIDDEN];
    let mut keys = vec![];
    for &id in &ids {
        h = w.gru("encoder.gru", &w.embed("encoder.embedding.weight", id), &h);
        keys.push(h.clone());
    }
    // Keys through Ua once, as the tutorial's Ua(keys) does for all positions.
    let ua: Vec<Vec<f64>> = keys
        .iter()
        .map(|k| {
            w.linear(
                "decoder.attention.Ua.weight",
                "decoder.attention.Ua.bias",
                k,
            )
        })
        .collect();
    // Decoder.
    let mut s = h;
    let mut y = SOS;
    let mut out = Reference {
        tokens: vec![],
        logits: vec![],
        weights: vec![],
    };
    for _ in 0..MAX_STEPS {
        let emb = w.embed("decoder.embedding.weight", y);
        let wq = w.linear(
            "decoder.attention.Wa.weight",
            "decoder.attention.Wa.bias",
            &s,
        );
        let scores: Vec<f64> = ua
            .iter()
            .map(|uk| {
                let t: Vec<f64> = wq.iter().zip(uk).map(|(a, b)| (a + b).tanh()).collect();
                w.linear(
                    "decoder.attention.Va.weight",
                    "decoder.attention.Va.bias",
                    &t,
                )[0]
            })
            .collect();
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let exp: Vec<f64> = scores.iter().map(|e| (e - max).exp()).collect();
        let sum: f64 = exp.iter().sum();
        let a: Vec<f64> = exp.iter().map(|e| e / sum).collect();
        let mut context = vec![0.0; HIDDEN];
        for (ai, k) in a.iter().zip(&keys) {
            for (c, kv) in context.iter_mut().zip(k) {
                *c += ai * kv;
            }
        }
        let x: Vec<f64> = emb.iter().chain(&context).copied().collect();
        s = w.gru("decoder.gru", &x, &s);
        let logits = w.linear("decoder.out.weight", "decoder.out.bias", &s);
        // torch.topk / argmax: the first maximum.
        let best = (0..logits.len()).fold(0, |b, i| if logits[i] > logits[b] { i } else { b });
        out.logits.push(logits);
        out.weights.push(a);
        if best == EOS {
            break;
        }
        out.tokens.push(best);
        y = best;
    }
    out
}

/// Gap between the largest and the second largest value.
fn top2_gap(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| b.total_cmp(a));
    s[0] - s[1]
}

const SOURCES: [&str; 8] = [
    "a",
    "abc",
    "hgfe",
    "badcafe",
    "cabbage",
    "deadbeef",
    "hhhhhhhhhhhh",
    "gafhdcbe",
];

#[test]
fn pytorch_tutorial_model_decodes_like_the_f64_reference() {
    let dir = scratch_dir("pytorch-reference");
    let (weights_path, model_path) = pytorch::build_model(&dir);
    let tensors = pytorch::state_dict(pytorch::SEED, pytorch::SCALE);

    // The library import gives the same bytes as the CLI's.
    let cfg = host_tools::import::config::Config::load(&pytorch::config()).expect("config loads");
    let read = host_tools::formats::read_weights(&weights_path).expect("safetensors reads");
    assert_eq!(read.len(), tensors.len());
    let bytes = host_tools::import::import(&cfg, &read)
        .expect("import")
        .to_bytes()
        .expect("a valid model");
    assert_eq!(
        std::fs::read(&model_path).expect("model file"),
        bytes,
        "s2s import and host_tools::import::import differ"
    );

    let w = Weights::new(&tensors);
    let model = LoadedModel::load(&model_path).expect("model loads");
    let lines: Vec<String> = SOURCES.iter().map(|s| s.to_string()).collect();
    let ours = decode_lines(
        &model,
        &lines,
        Keep {
            weights: true,
            logits: true,
            ..Keep::default()
        },
    )
    .expect("decodes");

    let mut outputs = vec![];
    let mut worst_logit: f64 = 0.0;
    let mut worst_weight: f64 = 0.0;
    for (src, d) in SOURCES.iter().zip(&ours) {
        let r = reference(&w, src);
        // The check is only meaningful without near ties in the reference.
        for (step, l) in r.logits.iter().enumerate() {
            assert!(
                top2_gap(l) > 1e-3,
                "{src:?} step {step}: reference near tie ({}); pick another seed",
                top2_gap(l)
            );
        }
        let ids: Vec<usize> = d.ids.iter().map(|&i| i as usize).collect();
        assert_eq!(ids, r.tokens, "{src:?}: greedy tokens differ");
        let text: Vec<&str> = r.tokens.iter().map(|&t| TGT[t]).collect();
        assert_eq!(d.text, text.join(" "), "{src:?}: output text");
        assert_eq!(d.logits.len(), r.logits.len(), "{src:?}: steps");
        for (step, (a, b)) in d.logits.iter().zip(&r.logits).enumerate() {
            for (x, y) in a.iter().zip(b) {
                let e = (*x as f64 - y).abs();
                worst_logit = worst_logit.max(e);
                assert!(e < 1e-4, "{src:?} step {step}: logit {x} vs reference {y}");
            }
        }
        for (step, (a, b)) in d.weights.iter().zip(&r.weights).enumerate() {
            assert_eq!(
                a.len(),
                src.chars().count() + 1,
                "{src:?}: attended positions"
            );
            for (x, y) in a.iter().zip(b) {
                let e = (*x as f64 - y).abs();
                worst_weight = worst_weight.max(e);
                assert!(e < 1e-5, "{src:?} step {step}: weight {x} vs reference {y}");
            }
        }
        outputs.push(r.tokens);
    }
    // The weights make real decodes: different outputs of several tokens, most of them
    // ended by EOS before the step limit.
    let ended = outputs.iter().filter(|t| t.len() < MAX_STEPS).count();
    let longest = outputs.iter().map(Vec::len).max().unwrap_or(0);
    outputs.sort();
    outputs.dedup();
    assert!(
        outputs.len() >= 6 && ended >= 5 && longest >= 3,
        "degenerate decodes: {} distinct outputs, {ended} ended by EOS, longest {longest}",
        outputs.len()
    );
    eprintln!("max |logit error| {worst_logit:.2e}, max |weight error| {worst_weight:.2e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pytorch_tutorial_model_runs_through_the_cli() {
    let dir = scratch_dir("pytorch-cli");
    let (_, model) = pytorch::build_model(&dir);
    let w = Weights::new(&pytorch::state_dict(pytorch::SEED, pytorch::SCALE));
    let out = s2s_ok(&[&"run", &model, &"--tsv"], "abc\ncabbage\n");
    let expected: String = ["abc", "cabbage"]
        .iter()
        .map(|s| {
            let r = reference(&w, s);
            let t: Vec<&str> = r.tokens.iter().map(|&t| TGT[t]).collect();
            format!("{s}\t{}\n", t.join(" "))
        })
        .collect();
    assert_eq!(out, expected);
    let inspect = s2s_ok(&[&"inspect", &model], "");
    assert!(
        inspect.to_lowercase().contains("bahdanau"),
        "inspect does not name the ordering:\n{inspect}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The mistake shapes cannot show (issue 31): the tutorial's square 12x12 `Wa` taken
/// transposed imports without an error from safetensors (no graph to say otherwise), and
/// `s2s verify` against the reference's decodes catches it, where the right import
/// agrees on every source.
#[test]
fn verify_catches_a_transposed_square_matrix_that_imports() {
    let dir = scratch_dir("pytorch-verify");
    let (weights, model) = pytorch::build_model(&dir);
    let w = Weights::new(&pytorch::state_dict(pytorch::SEED, pytorch::SCALE));
    let expect = dir.join("expect.jsonl");
    let lines: String = SOURCES
        .iter()
        .map(|s| {
            let ids: Vec<String> = reference(&w, s)
                .tokens
                .iter()
                .map(usize::to_string)
                .collect();
            format!("{{\"source\": \"{s}\", \"ids\": [{}]}}\n", ids.join(", "))
        })
        .collect();
    std::fs::write(&expect, lines).unwrap();
    let agree = s2s_ok(&[&"verify", &model, &"--expect", &expect], "");
    assert!(
        agree.contains(&format!("{n} of {n}", n = SOURCES.len())),
        "{agree}"
    );

    let right = "\"attention.query\" = { weight = \"decoder.attention.Wa.weight\", bias = \"decoder.attention.Wa.bias\" }";
    let config = std::fs::read_to_string(pytorch::config()).unwrap();
    assert!(
        config.contains(right),
        "the example's attention.query entry"
    );
    let wrong = config.replace(right, &right.replace(" }", ", transpose = true }"));
    let wrong_config = dir.join("transposed.toml");
    std::fs::write(&wrong_config, wrong).unwrap();
    let wrong_model = dir.join("transposed.s2s");
    s2s_ok(
        &[
            &"import",
            &"--config",
            &wrong_config,
            &"--weights",
            &weights,
            &"-o",
            &wrong_model,
        ],
        "",
    );
    let r = s2s_tests::s2s(&[&"verify", &wrong_model, &"--expect", &expect], "");
    let (out, err) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    assert_eq!(r.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("first differences"), "{out}");
    assert!(
        err.contains("decode differently from the reference"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
