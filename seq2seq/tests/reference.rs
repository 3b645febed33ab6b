//! The decoder against a plain f64 reference written from the papers' equations, for
//! every ordering and most variants, on small models with random weights; plus
//! hand-built models whose greedy output is known by construction, and the error paths.

mod common;

use std::collections::HashMap;

use common::{small_desc, SRC, TGT};

use rnn_core::{Masked, Recurrent, ResetMode};
use s2s_kernels::{PrecisionKind, F32};
use seq2seq::builder::{aligned, ModelBuilder};
use seq2seq::desc::{
    Activation, CellKind, Init, Logits as LogitsKind, ModelDesc, Ordering, Part, ScoreKind,
    MAX_OUT_PARTS, NO_TOKEN,
};
use seq2seq::format::{Role, Slot, TensorId};
use seq2seq::run::{Observer, Step};
use seq2seq::{BeamPlan, BeamVariant, Error, ModelFile, Net, Plan, Runner, Search};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// The small model of `common`, with additive attention's fields set for the tests
/// that switch attention on.
fn base_desc() -> ModelDesc {
    let mut d = small_desc();
    d.attention.dim = 5;
    d.attention.query_proj = true;
    d.attention.key_proj = true;
    d
}

/// `d` with the attention fields its variant does not use at zero, as the model file
/// requires (the tests below switch variants on one base description).
fn tidy(mut d: ModelDesc) -> ModelDesc {
    if d.attention.ordering == Ordering::None {
        d.attention.score = ScoreKind::Additive;
        d.attention.mask_padding = false;
    }
    if d.attention.ordering == Ordering::None || d.attention.score != ScoreKind::Additive {
        d.attention.dim = 0;
        d.attention.query_proj = false;
        d.attention.key_proj = false;
    }
    d.attention.chunk = match d.attention.ordering {
        Ordering::Monotonic => d.attention.chunk.max(1),
        _ => 0,
    };
    if !matches!(d.attention.ordering, Ordering::Bahdanau | Ordering::Luong) {
        d.attention.window = 0;
    }
    if d.attention.window == 0 {
        d.attention.predict = 0;
    }
    d
}

/// Weights by tensor id: (rows, cols, data).
type Weights = HashMap<u32, (usize, usize, Vec<f32>)>;

/// A model file with random weights for `d`, and the same weights for the reference.
fn random_model(d: &ModelDesc, seed: u64) -> (Vec<u64>, Weights) {
    let mut rng = Rng(seed);
    let mut b = ModelBuilder::new(PrecisionKind::F32, tidy(*d));
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    b.separator = " ".into();
    let mut w = Weights::new();
    for s in d.layer_specs() {
        let scale = if s.is_embedding() { 1.0 } else { 0.8 };
        let data: Vec<f32> = (0..s.rows * s.cols).map(|_| rng.next() * scale).collect();
        let bias: Vec<f32> = (0..s.rows).map(|_| rng.next() * 0.3).collect();
        let bias = if s.is_embedding() {
            None
        } else {
            Some(&bias[..])
        };
        b.linear_f32((s.role, s.layer, s.dir), s.rows, s.cols, &data, bias);
        w.insert(
            TensorId::new(s.role, s.layer, s.dir, Slot::Weight).to_u32(),
            (s.rows, s.cols, data),
        );
        if let Some(bias) = bias {
            w.insert(
                TensorId::new(s.role, s.layer, s.dir, Slot::Bias).to_u32(),
                (s.rows, 1, bias.to_vec()),
            );
        }
    }
    (aligned(&b.to_bytes().unwrap()), w)
}

// ---------------------------------------------------------------- reference, f64

struct Ref<'w> {
    d: ModelDesc,
    w: &'w Weights,
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The gates' activation.
fn rec_act(rec: Recurrent, x: f64) -> f64 {
    match rec {
        Recurrent::Sigmoid => sig(x),
        Recurrent::HardSigmoidKeras2 => (0.2 * x + 0.5).clamp(0.0, 1.0),
        Recurrent::HardSigmoidKeras3 => (x / 6.0 + 0.5).clamp(0.0, 1.0),
    }
}

impl Ref<'_> {
    fn mat(&self, role: Role, l: usize, dir: usize) -> (&[f32], Option<&[f32]>, usize) {
        let (_, cols, w) = &self.w[&TensorId::new(role, l, dir, Slot::Weight).to_u32()];
        let b = self
            .w
            .get(&TensorId::new(role, l, dir, Slot::Bias).to_u32())
            .map(|(_, _, b)| &b[..]);
        (w, b, *cols)
    }
    /// y = W x + b
    fn lin(&self, role: Role, l: usize, dir: usize, x: &[f64]) -> Vec<f64> {
        let (w, b, cols) = self.mat(role, l, dir);
        assert_eq!(cols, x.len(), "{role:?}");
        w.chunks(cols)
            .enumerate()
            .map(|(r, row)| {
                row.iter().zip(x).map(|(a, b)| *a as f64 * b).sum::<f64>()
                    + b.map_or(0.0, |b| b[r] as f64)
            })
            .collect()
    }
    fn emb(&self, role: Role, id: u16) -> Vec<f64> {
        let (w, _, cols) = self.mat(role, 0, 0);
        w[id as usize * cols..][..cols]
            .iter()
            .map(|&v| v as f64)
            .collect()
    }
    /// One step of encoder (`enc`) or decoder layer `l`, direction `dir`: the new `h`
    /// and (LSTM) `c`.
    fn cell(
        &self,
        enc: bool,
        l: usize,
        dir: usize,
        x: &[f64],
        h: &[f64],
        c: &[f64],
    ) -> (Vec<f64>, Vec<f64>) {
        let (kind, rec) = if enc {
            (self.d.cells.enc, self.d.cells.enc_recurrent)
        } else {
            (self.d.cells.dec, self.d.cells.dec_recurrent)
        };
        match kind {
            CellKind::Gru => (self.gru(enc, l, dir, x, h, rec), vec![]),
            CellKind::Lstm => self.lstm(enc, l, dir, x, h, c, rec),
        }
    }

    /// One LSTM step: gates `[i, f, g, o]`, `c' = f c + i g`, `h' = o tanh(c')`.
    #[allow(clippy::too_many_arguments)]
    fn lstm(
        &self,
        enc: bool,
        l: usize,
        dir: usize,
        x: &[f64],
        h: &[f64],
        c: &[f64],
        rec: Recurrent,
    ) -> (Vec<f64>, Vec<f64>) {
        let (role_ih, role_hh) = if enc {
            (Role::EncWih, Role::EncWhh)
        } else {
            (Role::DecWih, Role::DecWhh)
        };
        let n = h.len();
        let gi = self.lin(role_ih, l, dir, x);
        let gh = self.lin(role_hh, l, dir, h);
        let z: Vec<f64> = gi.iter().zip(&gh).map(|(a, b)| a + b).collect();
        let mut c2 = vec![0.0; n];
        let mut h2 = vec![0.0; n];
        for j in 0..n {
            let i = rec_act(rec, z[j]);
            let f = rec_act(rec, z[n + j]);
            let g = z[2 * n + j].tanh();
            let o = rec_act(rec, z[3 * n + j]);
            c2[j] = f * c[j] + i * g;
            h2[j] = o * c2[j].tanh();
        }
        (h2, c2)
    }

    /// One GRU step of encoder (`enc`) or decoder layer `l`, direction `dir`.
    fn gru(
        &self,
        enc: bool,
        l: usize,
        dir: usize,
        x: &[f64],
        h: &[f64],
        rec: Recurrent,
    ) -> Vec<f64> {
        let (role_ih, role_hh, mode) = if enc {
            (Role::EncWih, Role::EncWhh, self.d.enc_reset)
        } else {
            (Role::DecWih, Role::DecWhh, self.d.dec_reset)
        };
        let n = h.len();
        let gi = self.lin(role_ih, l, dir, x);
        let (whh, bhh, _) = self.mat(role_hh, l, dir);
        let row = |r: usize, v: &[f64]| -> f64 {
            whh[r * n..(r + 1) * n]
                .iter()
                .zip(v)
                .map(|(a, b)| *a as f64 * b)
                .sum::<f64>()
                + bhh.map_or(0.0, |b| b[r] as f64)
        };
        let r: Vec<f64> = (0..n).map(|j| rec_act(rec, gi[j] + row(j, h))).collect();
        let z: Vec<f64> = (0..n)
            .map(|j| rec_act(rec, gi[n + j] + row(n + j, h)))
            .collect();
        let rh: Vec<f64> = (0..n).map(|j| r[j] * h[j]).collect();
        (0..n)
            .map(|j| {
                let c = match mode {
                    ResetMode::After => (gi[2 * n + j] + r[j] * row(2 * n + j, h)).tanh(),
                    ResetMode::Before => (gi[2 * n + j] + row(2 * n + j, &rh)).tanh(),
                };
                (1.0 - z[j]) * c + z[j] * h[j]
            })
            .collect()
    }

    /// Greedy output tokens and every step's logits.
    fn run(&self, src: &[u16], valid: usize) -> (Vec<u16>, Vec<Vec<f64>>) {
        self.run_path(src, valid, None)
    }

    /// Greedy decoding, or with `forced` the decoding of exactly those tokens (each
    /// step's logits, then the forced token as the next input).
    fn run_path(
        &self,
        src: &[u16],
        valid: usize,
        forced: Option<&[u16]>,
    ) -> (Vec<u16>, Vec<Vec<f64>>) {
        let d = &self.d;
        let t = src.len();
        // Encoder.
        let mut xs: Vec<Vec<f64>> = src.iter().map(|&id| self.emb(Role::EncEmb, id)).collect();
        // With a mask, the layers step over the real positions only; a padded
        // position's output is the previous one (forward) or zeros.
        let steps = if d.cells.enc_mask.is_some() { valid } else { t };
        let (mut finals, mut final_cells) = (vec![], vec![]);
        for l in 0..d.enc_layers {
            let h0 = vec![0.0; d.enc_hidden];
            let mut fwd = vec![];
            let (mut h, mut c) = (h0.clone(), h0.clone());
            for x in &xs[..steps] {
                (h, c) = self.cell(true, l, 0, x, &h, &c);
                fwd.push(h.clone());
            }
            for _ in steps..t {
                fwd.push(match d.cells.enc_mask {
                    Some(Masked::Previous) => h.clone(),
                    _ => h0.clone(),
                });
            }
            let (mut fin, mut fin_c) = (h.clone(), c.clone());
            let mut outs = fwd.clone();
            if d.enc_bidir {
                let (mut h, mut c) = (h0.clone(), h0.clone());
                let mut bwd = vec![h0.clone(); t];
                for p in (0..steps).rev() {
                    (h, c) = self.cell(true, l, 1, &xs[p], &h, &c);
                    bwd[p] = h.clone();
                }
                fin.extend(&bwd[0]);
                fin_c.extend(&c);
                for p in 0..t {
                    outs[p].extend(&bwd[p]);
                }
            }
            finals.push(fin);
            final_cells.push(fin_c);
            xs = outs;
        }
        let memory: Vec<Vec<f64>> = match d.memory_proj {
            Some(_) => xs
                .iter()
                .map(|x| self.lin(Role::MemoryProj, 0, 0, x))
                .collect(),
            None => xs.clone(),
        };
        let keys: Vec<Vec<f64>> = memory
            .iter()
            .map(|m| match d.attention.score {
                _ if !d.has_attention() => m.clone(),
                ScoreKind::Additive if d.attention.key_proj => self.lin(Role::AttnKey, 0, 0, m),
                ScoreKind::General => self.lin(Role::AttnGeneral, 0, 0, m),
                _ => m.clone(),
            })
            .collect();
        // The mean of the top layer's outputs over the valid positions.
        let mut mean = vec![0.0; xs[0].len()];
        for x in &xs[..valid] {
            for (m, v) in mean.iter_mut().zip(x) {
                *m += v / valid as f64;
            }
        }
        let bridge = |l: usize| if d.extras.bridge_shared { 0 } else { l };
        let mut states: Vec<Vec<f64>> = (0..d.dec_layers)
            .map(|l| match d.init {
                Init::Zeros => vec![0.0; d.dec_hidden],
                Init::Last => finals[l + d.enc_layers - d.dec_layers].clone(),
                Init::Dense => self
                    .lin(Role::Bridge, bridge(l), 0, &finals[d.enc_layers - 1])
                    .iter()
                    .map(|v| v.tanh())
                    .collect(),
                Init::Mean => self
                    .lin(Role::Bridge, bridge(l), 0, &mean)
                    .iter()
                    .map(|v| v.tanh())
                    .collect(),
            })
            .collect();
        // A GRU encoder's "cell states" are its final states (for a cell bridge).
        let top_cells = match d.cells.enc {
            CellKind::Lstm => &final_cells[d.enc_layers - 1],
            CellKind::Gru => &finals[d.enc_layers - 1],
        };
        let mut cells: Vec<Vec<f64>> = (0..d.dec_layers)
            .map(|l| match d.cells.init_cell {
                Init::Zeros => vec![0.0; d.dec_hidden],
                Init::Last => final_cells[l + d.enc_layers - d.dec_layers].clone(),
                Init::Dense => self
                    .lin(Role::BridgeC, l, 0, top_cells)
                    .iter()
                    .map(|v| v.tanh())
                    .collect(),
                Init::Mean => unreachable!("refused by the description"),
            })
            .collect();
        let n_att = if d.attention.mask_padding { t } else { valid };
        let energy = |q: &[f64], k: &[f64]| -> f64 {
            match d.attention.score {
                ScoreKind::Additive => {
                    let wq = if d.attention.query_proj {
                        self.lin(Role::AttnQuery, 0, 0, q)
                    } else {
                        q.to_vec()
                    };
                    let tv: Vec<f64> = wq.iter().zip(k).map(|(a, b)| (a + b).tanh()).collect();
                    self.lin(Role::AttnV, 0, 0, &tv)[0]
                }
                _ => q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>() * d.attention.scale as f64,
            }
        };
        // The softmax of the energies of positions `range` and their memory rows' sum;
        // with `gauss = (p, D)`, each weight times `exp(-(s - p)^2 / (2 (D / 2)^2))`.
        let soft_gauss = |q: &[f64], range: std::ops::Range<usize>, gauss: Option<(f64, f64)>| {
            let e: Vec<f64> = keys[range.clone()].iter().map(|k| energy(q, k)).collect();
            let m = e.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = e.iter().map(|v| (v - m).exp()).sum();
            let alpha: Vec<f64> = e
                .iter()
                .zip(range.clone())
                .map(|(v, i)| {
                    let g = gauss.map_or(1.0, |(p, d)| {
                        let sigma = d / 2.0;
                        (-(i as f64 - p).powi(2) / (2.0 * sigma * sigma)).exp()
                    });
                    (v - m).exp() / s * g
                })
                .collect();
            let mut c = vec![0.0; memory[0].len()];
            for (a, row) in alpha.iter().zip(&memory[range]) {
                for (cj, v) in c.iter_mut().zip(row) {
                    *cj += a * v;
                }
            }
            c
        };
        let soft = |q: &[f64], range: std::ops::Range<usize>| soft_gauss(q, range, None);
        // Hard monotonic: from the last position attended, the first whose energy is
        // not negative, and MoChA's softmax over the chunk of `w` positions ending
        // there; none: a zero context, and no position is left.
        let (mut at, w) = (0, usize::from(d.attention.chunk));
        let mut monotonic = |q: &[f64]| -> Vec<f64> {
            while at < n_att {
                if energy(q, &keys[at]) >= 0.0 {
                    return soft(q, (at + 1).saturating_sub(w)..at + 1);
                }
                at += 1;
            }
            vec![0.0; memory[0].len()]
        };
        // Global attention: every position; local-m (Luong et al., 2015): the 2D + 1
        // positions around the step's index, which stops at the last position; local-p:
        // around the position nearest p = n sigmoid(v_p . tanh(W_p q)), weighed by the
        // Gaussian about p.
        let attend = |q: &[f64], step: usize| match usize::from(d.attention.window) {
            0 => soft(q, 0..n_att),
            half => {
                let gauss = d.attention.predicted().then(|| {
                    let h: Vec<f64> = self
                        .lin(Role::AttnPosW, 0, 0, q)
                        .iter()
                        .map(|v| v.tanh())
                        .collect();
                    let e = self.lin(Role::AttnPosV, 0, 0, &h)[0];
                    (n_att as f64 / (1.0 + (-e).exp()), half as f64)
                });
                let centre = gauss.map_or(step, |(p, _)| (p + 0.5).floor() as usize);
                let centre = centre.min(n_att - 1);
                soft_gauss(
                    q,
                    centre.max(half) - half..(centre + half + 1).min(n_att),
                    gauss,
                )
            }
        };
        let mut y = d.tgt_start;
        let (mut out, mut all_logits) = (vec![], vec![]);
        // Input feeding: the previous attentional vector, zeros at the first step.
        let mut fed = vec![0.0; d.attentional.unwrap_or(0)];
        for step in 0..d.max_steps {
            let e = self.emb(Role::DecEmb, y);
            let mut ctx = vec![];
            match d.attention.ordering {
                Ordering::Bahdanau => ctx = attend(&states[d.dec_layers - 1], step),
                Ordering::Monotonic => ctx = monotonic(&states[d.dec_layers - 1]),
                _ => {}
            }
            for l in 0..d.dec_layers {
                let x = if l == 0 {
                    let mut x = e.clone();
                    if d.attention.ordering.context_first() {
                        x.extend(&ctx);
                    }
                    if d.extras.input_feed {
                        x.extend(&fed);
                    }
                    x
                } else {
                    states[l - 1].clone()
                };
                (states[l], cells[l]) = self.cell(false, l, 0, &x, &states[l], &cells[l]);
            }
            let s = states[d.dec_layers - 1].clone();
            if d.attention.ordering == Ordering::Luong {
                ctx = attend(&s, step);
            }
            let att: Vec<f64> = if d.attentional.is_some() {
                let mut x = vec![];
                for p in d.att_parts.iter().flatten() {
                    x.extend(match p {
                        Part::State => &s,
                        Part::Context => &ctx,
                        Part::Embedding => &e,
                        Part::Attentional => unreachable!("checked by the description"),
                    });
                }
                self.lin(Role::Attentional, 0, 0, &x)
                    .iter()
                    .map(|&v| match d.extras.att_act {
                        Activation::Tanh => v.tanh(),
                        Activation::Relu => v.max(0.0),
                        Activation::Identity => v,
                    })
                    .collect()
            } else {
                vec![]
            };
            fed.clone_from(&att);
            let mut x = vec![];
            for p in d.out_parts() {
                x.extend(match p {
                    Part::State => &s,
                    Part::Context => &ctx,
                    Part::Embedding => &e,
                    Part::Attentional => &att,
                });
            }
            let logits = self.lin(Role::Out, 0, 0, &x);
            let (mut best, mut bv) = (0, f64::MIN);
            for (i, &v) in logits.iter().enumerate() {
                if v > bv {
                    (best, bv) = (i, v);
                }
            }
            all_logits.push(logits);
            y = best as u16;
            if let Some(path) = forced {
                y = path[step];
                out.push(y);
                if step + 1 == path.len() {
                    break;
                }
                continue;
            }
            if y == d.tgt_end {
                break;
            }
            out.push(y);
        }
        (out, all_logits)
    }
}

/// Every step's logits, and whether the model is local-p (whose weights sum to less than
/// 1).
struct Logits(Vec<Vec<f32>>, bool);
impl Observer<F32> for Logits {
    fn step(&mut self, s: &Step<'_, F32>) {
        self.0.push(s.logits.to_vec());
        if let Some(w) = s.weights {
            // (All 0 when a monotonic step attends no position; less than 1 when
            // local-p's Gaussian weighs them, and more than 0: the position nearest
            // its centre weighs at least exp(-1/2) times its softmax weight.)
            let sum: f32 = w.iter().sum();
            assert!(
                (sum - 1.0).abs() < 1e-5 || sum == 0.0 || (self.1 && sum > 0.0 && sum < 1.0 + 1e-5),
                "weights sum {sum}"
            );
        }
    }
}

/// Output ids, output text and every step's logits.
type RunOutput = (Vec<u16>, String, Vec<Vec<f32>>);

fn run_line(bytes: &[u64], line: &str) -> Result<RunOutput, Error> {
    let file = ModelFile::parse(bytemuck::cast_slice(bytes))?;
    let net = Net::<F32>::bind(&file)?;
    let mut arena = vec![0u32; 1 << 14];
    let mut runner = Runner::new(&net, &mut arena, 16)?;
    let mut out = vec![0u16; file.desc().max_steps];
    let mut text = String::new();
    let mut obs = Logits(vec![], file.desc().attention.predicted());
    let n =
        runner.translate_line::<Error>(line, &seq2seq::Prefix::NONE, &mut out, &mut obs, |s| {
            text.push_str(s);
            Ok(())
        })?;
    Ok((out[..n].to_vec(), text, obs.0))
}

/// Checks the runtime against the reference on several sources.
/// The source ids of `line` (letters `a`.. as ids 3..) as the runtime makes them: the
/// prefix tokens, the letters, the end token; and how many there are (before padding).
fn source_ids(d: &ModelDesc, line: &str) -> (Vec<u16>, usize) {
    let mut src: Vec<u16> = d.extras.prefix().collect();
    src.extend(line.bytes().map(|b| (b - b'a' + 3) as u16));
    if let Some(eos) = d.src_eos {
        src.push(eos);
    }
    let valid = src.len();
    (src, valid)
}

fn check_against_reference(d: &ModelDesc, seed: u64) {
    tidy(*d).check().unwrap();
    let (bytes, w) = random_model(d, seed);
    let r = Ref { d: tidy(*d), w: &w };
    for line in ["abc", "dab", "a", "ccbdaa", "bad"] {
        let (mut src, valid) = source_ids(d, line);
        if d.src_pad_to > 0 {
            src.resize(d.src_pad_to, d.src_pad);
        }
        let (expect, ref_logits) = r.run(&src, valid);
        let (got, text, logits) = run_line(&bytes, line).unwrap();
        assert_eq!(got, expect, "{d:?} on {line:?}");
        assert_eq!(logits.len(), ref_logits.len());
        for (a, b) in logits.iter().zip(&ref_logits) {
            for (x, y) in a.iter().zip(b) {
                assert!((*x as f64 - y).abs() < 1e-4, "logit {x} vs {y}");
            }
        }
        let words: Vec<&str> = got.iter().map(|&i| TGT[i as usize]).collect();
        assert_eq!(text, words.join(" "));
    }
}

fn parts(p: &[Part]) -> [Option<Part>; MAX_OUT_PARTS] {
    let mut o = [None; MAX_OUT_PARTS];
    for (i, &x) in p.iter().enumerate() {
        o[i] = Some(x);
    }
    o
}

#[test]
fn vanilla_from_last_encoder_state_matches_reference() {
    let mut d = base_desc();
    d.init = Init::Last;
    check_against_reference(&d, 1);
    d.enc_reset = ResetMode::Before;
    d.dec_reset = ResetMode::Before;
    d.out_parts = parts(&[Part::State, Part::Embedding]);
    check_against_reference(&d, 2);
}

#[test]
fn vanilla_stacks_and_bidirectional_encoder_match_reference() {
    let mut d = base_desc();
    d.enc_layers = 2;
    d.dec_layers = 2;
    d.enc_bidir = true;
    d.dec_hidden = 12;
    d.init = Init::Last;
    check_against_reference(&d, 3);
    d.init = Init::Dense;
    d.dec_hidden = 7;
    d.dec_layers = 1;
    check_against_reference(&d, 4);
}

#[test]
fn bahdanau_matches_reference() {
    let mut d = base_desc();
    d.attention.ordering = Ordering::Bahdanau;
    d.init = Init::Dense;
    d.out_parts = parts(&[Part::State, Part::Context, Part::Embedding]);
    check_against_reference(&d, 5);
    // The PyTorch tutorial layout: output from the state only, initial state = last.
    d.init = Init::Last;
    d.out_parts = parts(&[Part::State]);
    check_against_reference(&d, 6);
    d.enc_bidir = true;
    d.dec_hidden = 12;
    d.memory_proj = Some(4); // narrower than the encoder output: projected in place
    check_against_reference(&d, 7);
    d.enc_bidir = false;
    d.dec_hidden = 6;
    d.memory_proj = Some(9); // wider: a buffer of its own
    check_against_reference(&d, 8);
}

#[test]
fn monotonic_matches_reference() {
    let mut d = base_desc();
    d.attention.ordering = Ordering::Monotonic;
    d.init = Init::Dense;
    d.out_parts = parts(&[Part::State, Part::Context, Part::Embedding]);
    for seed in 40..46 {
        check_against_reference(&d, seed);
    }
    d.enc_bidir = true;
    d.dec_hidden = 12;
    d.memory_proj = Some(4);
    check_against_reference(&d, 46);
    // MoChA: the chunk's softmax, of widths past the source's start and past its end.
    for (w, seed) in [(2, 47), (3, 48), (8, 49)] {
        d.attention.chunk = w;
        check_against_reference(&d, seed);
    }
    d.attention.chunk = 1;
    // Only the additive score carries the energy's offset.
    d.attention.score = ScoreKind::Dot;
    d.attention.dim = 0;
    (d.attention.query_proj, d.attention.key_proj) = (false, false);
    d.memory_proj = Some(12);
    assert_eq!(
        tidy(d).check(),
        Err(Error::Inconsistent("monotonic: needs the additive score"))
    );
}

#[test]
fn luong_matches_reference_for_every_score() {
    let mut d = base_desc();
    d.attention.ordering = Ordering::Luong;
    d.attentional = Some(5);
    d.att_parts = parts(&[Part::State, Part::Context]);
    d.out_parts = parts(&[Part::Attentional]);
    for (i, score) in [
        ScoreKind::Dot,
        ScoreKind::ScaledDot,
        ScoreKind::General,
        ScoreKind::Additive,
    ]
    .into_iter()
    .enumerate()
    {
        d.attention.score = score;
        d.attention.scale = if score == ScoreKind::ScaledDot {
            1.0 / (d.dec_hidden as f32).sqrt()
        } else {
            1.0
        };
        check_against_reference(&d, 10 + i as u64);
    }
}

#[test]
fn local_attention_matches_reference() {
    // Windows of 3 to 7 positions on sources of 2 to 7, every step past the source's
    // end (up to 12) attending around its last position.
    let mut d = base_desc();
    d.init = Init::Dense;
    d.out_parts = parts(&[Part::State, Part::Context, Part::Embedding]);
    d.attention.ordering = Ordering::Bahdanau;
    for (half, seed) in [(1, 60), (2, 61)] {
        d.attention.window = half;
        check_against_reference(&d, seed);
    }
    d.attention.mask_padding = true;
    d.src_pad_to = 9;
    check_against_reference(&d, 62);
    (d.attention.mask_padding, d.src_pad_to) = (false, 0);
    d.attention.ordering = Ordering::Luong;
    d.attentional = Some(5);
    d.att_parts = parts(&[Part::State, Part::Context]);
    d.out_parts = parts(&[Part::Attentional]);
    for (i, score) in [ScoreKind::Dot, ScoreKind::General, ScoreKind::Additive]
        .into_iter()
        .enumerate()
    {
        d.attention.score = score;
        d.attention.window = 1 + i as u16;
        check_against_reference(&tidy(d), 63 + i as u64);
    }
    // Local-p: the window about a predicted position, its weights times the Gaussian.
    for (i, (score, half)) in [(ScoreKind::General, 2), (ScoreKind::Additive, 3)]
        .into_iter()
        .enumerate()
    {
        d.attention.score = score;
        d.attention.window = half;
        d.attention.predict = 3 + i as u16;
        check_against_reference(&tidy(d), 70 + i as u64);
    }
    d.attention.ordering = Ordering::Bahdanau;
    d.attention.predict = 4;
    check_against_reference(&tidy(d), 72);
    d.attention.predict = 0;
    // Only the Bahdanau and Luong orderings have a local form.
    d.attention.ordering = Ordering::Monotonic;
    d.attention.score = ScoreKind::Additive;
    let mut m = tidy(d);
    m.attention.window = 2;
    assert_eq!(
        m.check(),
        Err(Error::Inconsistent(
            "window: local attention needs the Bahdanau or Luong ordering"
        ))
    );
}

/// An OpenNMT-style decoder: two layers, general Luong attention, a mean bridge, a
/// tanh attentional layer of [context; state] as the output's input, input feeding.
fn input_fed_luong() -> ModelDesc {
    let mut d = base_desc();
    d.dec_layers = 2;
    d.dec_hidden = 7;
    d.attention.ordering = Ordering::Luong;
    d.attention.score = ScoreKind::General;
    d.init = Init::Mean;
    d.attentional = Some(5);
    d.att_parts = parts(&[Part::Context, Part::State]);
    d.out_parts = parts(&[Part::Attentional]);
    d.extras.input_feed = true;
    d
}

/// The decoders of ONNX exports of OpenNMT-style PyTorch models (issue 12): bridges
/// from the mean of the encoder outputs, per layer or shared; input feeding; the
/// attentional layer's input in either order and its three activations; a
/// log-softmax output; a source prefix token.
#[test]
fn onnx_style_decoders_match_reference() {
    let mut d = input_fed_luong();
    d.enc_layers = 2;
    d.enc_bidir = true;
    d.extras.logits = LogitsKind::LogSoftmax;
    check_against_reference(&tidy(d), 20);
    d.extras.bridge_shared = true;
    d.extras.input_feed = false;
    d.att_parts = parts(&[Part::State, Part::Context]);
    check_against_reference(&tidy(d), 21);
    d.extras.input_feed = true;
    for (i, act) in [Activation::Relu, Activation::Identity]
        .into_iter()
        .enumerate()
    {
        d.extras.att_act = act;
        check_against_reference(&tidy(d), 22 + i as u64);
    }
    // A prefix token before every source, with the mean over a padded source.
    d.extras.src_prefix[0] = Some(1);
    d.src_pad_to = 9;
    check_against_reference(&tidy(d), 24);
    // A shared dense bridge of the final states.
    d.init = Init::Dense;
    check_against_reference(&tidy(d), 25);
}

/// A beam search carries each hypothesis's whole decoder state from step to step: every
/// result's score is the sum of the reference's log-probabilities along its tokens
/// (decoding exactly those), in every variant, so a state restored wrongly (an
/// input-fed model's attentional vector, an LSTM's cell states) shows.
#[test]
fn beam_scores_are_the_reference_along_every_hypothesis() {
    let d = input_fed_luong();
    let fed_lstm = lstm(d);
    let mut unfed = d;
    unfed.extras.input_feed = false;
    for (i, d) in [d, fed_lstm, unfed, base_desc()].into_iter().enumerate() {
        let d = tidy(d);
        d.check().unwrap();
        let (bytes, w) = random_model(&d, 40 + i as u64);
        let r = Ref { d, w: &w };
        let file = ModelFile::parse(bytemuck::cast_slice(&bytes)).unwrap();
        let net = Net::<F32>::bind(&file).unwrap();
        let positions = 16;
        let width = 3;
        let need =
            Plan::new::<F32>(&d, positions).bytes() + BeamPlan::new::<F32>(&d, width).bytes();
        let mut arena = vec![0u32; need / 4];
        let mut runner = Runner::with_beam(&net, &mut arena, positions, width).unwrap();
        let mut out = vec![0u16; d.max_steps];
        let mut checked = 0;
        for line in ["abc", "dab", "a", "ccbdaa", "bad"] {
            let (src, valid) = source_ids(&d, line);
            for variant in BeamVariant::ALL {
                let mut search = Search::of(&d, width);
                search.rule.variant = variant;
                runner
                    .beam_line::<Error>(
                        line,
                        &seq2seq::Prefix::NONE,
                        search,
                        &mut out,
                        &mut (),
                        |_| Ok(()),
                    )
                    .unwrap();
                for rank in 0..runner.hypotheses() {
                    let h = runner.hypothesis(rank).unwrap();
                    let mut path = h.tokens.to_vec();
                    if h.ended {
                        path.push(d.tgt_end);
                    }
                    if path.is_empty() {
                        continue;
                    }
                    let (_, logits) = r.run_path(&src, valid, Some(&path));
                    let expect: f64 = logits
                        .iter()
                        .zip(&path)
                        .map(|(l, &y)| {
                            let m = l.iter().cloned().fold(f64::MIN, f64::max);
                            let z: f64 = l.iter().map(|v| (v - m).exp()).sum();
                            l[y as usize] - m - z.ln()
                        })
                        .sum();
                    assert!(
                        (h.score as f64 - expect).abs() < 1e-3,
                        "model {i}, {variant:?}, {line:?}, result {rank} {path:?}: score {} vs the reference's {expect}",
                        h.score
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 5 * 3 * 2, "model {i}: only {checked} results");
    }
}

#[test]
fn keras_style_luong_with_padding_attended_matches_reference() {
    // netra's layout: zero initial state, GRU first, Keras additive score over a
    // projected memory, output from [s_t; c_t], source post-padded and unmasked.
    let mut d = base_desc();
    d.attention.ordering = Ordering::Luong;
    d.enc_bidir = true;
    d.memory_proj = Some(6);
    d.attention.query_proj = false;
    d.attention.key_proj = false;
    d.attention.dim = 6;
    d.init = Init::Zeros;
    d.src_eos = None;
    d.src_pad_to = 9;
    d.attention.mask_padding = true;
    d.out_parts = parts(&[Part::State, Part::Context]);
    let (bytes, w) = random_model(&d, 21);
    let r = Ref { d, w: &w };
    let src: Vec<u16> = vec![3, 4, 5, 0, 0, 0, 0, 0, 0];
    let (expect, _) = r.run(&src, 3);
    let (got, _, _) = run_line(&bytes, "abc").unwrap();
    assert_eq!(got, expect);
    // Masking the padding instead gives a different computation.
    d.attention.mask_padding = false;
    check_against_reference(&d, 22);
}

/// `d` with LSTM cells in the encoder and the decoder.
fn lstm(mut d: ModelDesc) -> ModelDesc {
    d.cells.enc = CellKind::Lstm;
    d.cells.dec = CellKind::Lstm;
    d
}

/// The Keras fixtures' layout: a bidirectional LSTM, the decoder from the encoder's
/// final `[forward; backward]` states and cell states, Luong dot attention, an
/// attentional layer over `[context; state]` (context first).
fn keras_lstm() -> ModelDesc {
    let mut d = lstm(base_desc());
    d.enc_bidir = true;
    d.dec_hidden = 12;
    d.init = Init::Last;
    d.cells.init_cell = Init::Last;
    d.attention.ordering = Ordering::Luong;
    d.attention.score = ScoreKind::Dot;
    d.attentional = Some(5);
    d.att_parts = parts(&[Part::Context, Part::State]);
    d.out_parts = parts(&[Part::Attentional]);
    d
}

#[test]
fn lstm_encoder_and_decoder_match_reference() {
    // The Keras layout with each recurrent activation.
    let mut d = keras_lstm();
    for (i, rec) in [
        Recurrent::HardSigmoidKeras2,
        Recurrent::Sigmoid,
        Recurrent::HardSigmoidKeras3,
    ]
    .into_iter()
    .enumerate()
    {
        d.cells.enc_recurrent = rec;
        d.cells.dec_recurrent = rec;
        check_against_reference(&d, 40 + i as u64);
    }
    // Two layers each, the decoder's cell states from zeros, an attentional layer over
    // [state; context; embedding].
    d.enc_layers = 2;
    d.dec_layers = 2;
    d.cells.init_cell = Init::Zeros;
    d.att_parts = parts(&[Part::State, Part::Context, Part::Embedding]);
    check_against_reference(&d, 43);
}

#[test]
fn pytorch_style_lstm_with_bridges_for_h_and_c_matches_reference() {
    // The PyTorch fixture's layout: Bahdanau additive attention, dense tanh bridges of
    // the final states and of the final cell states, output over [state; context].
    let mut d = lstm(base_desc());
    d.enc_bidir = true;
    d.dec_hidden = 7;
    d.attention.ordering = Ordering::Bahdanau;
    d.init = Init::Dense;
    d.cells.init_cell = Init::Dense;
    d.out_parts = parts(&[Part::State, Part::Context]);
    check_against_reference(&d, 50);
    // Bridges into a two-layer decoder.
    d.dec_layers = 2;
    check_against_reference(&d, 51);
}

#[test]
fn mixed_gru_and_lstm_stacks_match_reference() {
    // A GRU encoder feeding an LSTM decoder: h from the encoder, c from zeros or from
    // a bridge of the GRU's final state.
    let mut d = base_desc();
    d.cells.dec = CellKind::Lstm;
    d.cells.dec_recurrent = Recurrent::HardSigmoidKeras3;
    d.init = Init::Last;
    d.cells.init_cell = Init::Zeros;
    check_against_reference(&d, 60);
    d.cells.init_cell = Init::Dense;
    check_against_reference(&d, 61);
    // An LSTM encoder feeding a GRU decoder (h only), and a GRU with a hard sigmoid.
    let mut d = base_desc();
    d.cells.enc = CellKind::Lstm;
    d.init = Init::Last;
    d.cells.dec_recurrent = Recurrent::HardSigmoidKeras2;
    check_against_reference(&d, 62);
}

/// Post-padded sources with a masked encoder, as each Keras runs `mask_zero=True`:
/// Keras 2 repeats the forward half's last real output over the padding (backward
/// half 0), Keras 3's `Bidirectional` gives zeros; the final states are those after
/// the real steps; the attention covers the padding (Keras' `Dot` drops the mask).
#[test]
fn masked_encoders_match_reference_for_both_keras_behaviours() {
    let mut d = keras_lstm();
    d.src_eos = None;
    d.src_pad_to = 9;
    d.attention.mask_padding = true;
    let mut outputs = vec![];
    for (i, rule) in [Masked::Previous, Masked::Zeros].into_iter().enumerate() {
        d.cells.enc_mask = Some(rule);
        check_against_reference(&d, 70);
        let (bytes, _) = random_model(&d, 70);
        outputs.push(run_line(&bytes, "ab").unwrap().2);
        // Stacked: each layer masked the same way.
        let mut d2 = d;
        d2.enc_layers = 2;
        check_against_reference(&d2, 71 + i as u64);
    }
    // The two behaviours compute different things on the same weights.
    assert_ne!(outputs[0], outputs[1]);
    // A GRU encoder is masked the same way.
    d.cells.enc = CellKind::Gru;
    d.cells.init_cell = Init::Zeros;
    d.cells.enc_mask = Some(Masked::Previous);
    check_against_reference(&d, 73);
}

/// A model that stops when it predicts the padding token: the end token may be any
/// target token, the padding token included.
#[test]
fn the_end_token_may_be_the_padding_token() {
    let mut d = lstm(base_desc());
    d.init = Init::Last;
    d.cells.init_cell = Init::Last;
    d.tgt_end = 0; // <pad>
    check_against_reference(&d, 80);
}

/// A vanilla model whose output layer reads only the input embedding through a
/// permutation, the cycle `<s>` -> w -> x -> y -> `</s>`: whatever the GRUs compute, the
/// output must be "w x y".
#[test]
fn hand_built_cycle_model_has_known_output() {
    let mut d = base_desc();
    d.dec_emb = TGT.len();
    d.out_parts = parts(&[Part::Embedding]);
    let (bytes, _) = random_model(&d, 30);
    let file = ModelFile::parse(bytemuck::cast_slice(&bytes)).unwrap();
    let mut b = ModelBuilder::new(PrecisionKind::F32, tidy(d));
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    b.separator = "-".into();
    // Keep the random encoder/decoder GRUs, replace the embedding and output layers.
    for t in file.tensors() {
        let bytes = &file.bytes()[t.offset..t.offset + t.len];
        b.tensor::<u8>(t.id, t.dtype, t.rows, t.cols, bytes);
    }
    let v = TGT.len();
    let eye: Vec<f32> = (0..v * v).map(|i| (i / v == i % v) as u8 as f32).collect();
    b.linear_f32((Role::DecEmb, 0, 0), v, v, &eye, None);
    let next = [0usize, 3, 2, 4, 5, 2, 7, 6]; // y -> next[y]
    let mut perm = vec![0.0f32; v * v];
    for (y, &n) in next.iter().enumerate() {
        perm[n * v + y] = 10.0;
    }
    b.linear_f32((Role::Out, 0, 0), v, v, &perm, Some(&vec![0.0; v]));
    let bytes = aligned(&b.to_bytes().unwrap());
    let (ids, text, _) = run_line(&bytes, "abc").unwrap();
    assert_eq!(ids, [3, 4, 5]);
    assert_eq!(text, "w-x-y");
}

#[test]
fn capacity_and_input_errors() {
    let d = base_desc();
    let (bytes, _) = random_model(&d, 40);
    // 16 positions: 15 letters plus the end token fit, 16 letters do not.
    assert!(run_line(&bytes, &"a".repeat(15)).is_ok());
    assert_eq!(
        run_line(&bytes, &"a".repeat(16)).unwrap_err(),
        Error::InputTooLong { len: 17, max: 16 }
    );
    // Unknown characters map to <unk> when the model has one...
    assert!(run_line(&bytes, "a%b").is_ok());
    // ...and are an error naming the character and position when it has none.
    let mut d2 = d;
    d2.src_unk = None;
    let (bytes2, _) = random_model(&d2, 41);
    assert_eq!(
        run_line(&bytes2, "ab%").unwrap_err(),
        Error::UnknownSymbol {
            position: 3,
            ch: '%'
        }
    );
    // An empty line still gets the end token; without one it is empty.
    assert!(run_line(&bytes2, "").is_ok());
    let mut d3 = d2;
    d3.src_eos = None;
    let (bytes3, _) = random_model(&d3, 42);
    assert_eq!(run_line(&bytes3, "").unwrap_err(), Error::EmptyInput);
    // An arena too small is reported with the exact size needed.
    let file = ModelFile::parse(bytemuck::cast_slice(&bytes)).unwrap();
    let net = Net::<F32>::bind(&file).unwrap();
    // The plan of the file's (checked) description: `d` is the untidied base.
    let need = seq2seq::Plan::new::<F32>(file.desc(), 16).bytes();
    let mut small = vec![0u32; need / 4 - 1];
    assert_eq!(
        Runner::new(&net, &mut small, 16).err(),
        Some(Error::ArenaTooSmall {
            needed: need,
            available: need - 4
        })
    );
    let mut exact = vec![0u32; need / 4];
    assert!(Runner::new(&net, &mut exact, 16).is_ok());
    // Binding at the wrong precision is refused.
    assert!(matches!(
        Net::<s2s_kernels::W8A16>::bind(&file),
        Err(Error::PrecisionMismatch { .. })
    ));
}

#[test]
fn corrupted_files_are_rejected_with_precise_errors() {
    let d = base_desc();
    let (words, _) = random_model(&d, 50);
    let bytes: Vec<u8> = bytemuck::cast_slice(&words).to_vec();
    let file = ModelFile::parse(&bytes).unwrap();
    let len = file.bytes().len();
    assert!(matches!(
        ModelFile::parse(&bytes[..len - 1]),
        Err(Error::Truncated { .. })
    ));
    let mut flipped = bytes.clone();
    flipped[len / 2] ^= 0x10;
    assert!(matches!(
        ModelFile::parse(&flipped),
        Err(Error::CrcMismatch { .. })
    ));
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert_eq!(ModelFile::parse(&magic).unwrap_err(), Error::BadMagic);
    // Every truncation is an error, never a panic.
    for n in 0..len {
        assert!(ModelFile::parse(&bytes[..n]).is_err());
    }
    // A missing tensor is named.
    let out_weight = TensorId::new(Role::Out, 0, 0, Slot::Weight).to_u32();
    let mut b = ModelBuilder::new(PrecisionKind::F32, tidy(d));
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    for t in file.tensors() {
        if t.id.role != Role::Out || t.id.slot != Slot::Weight {
            b.tensor::<u8>(
                t.id,
                t.dtype,
                t.rows,
                t.cols,
                &file.bytes()[t.offset..t.offset + t.len],
            );
        }
    }
    // The writer refuses it, naming the tensor.
    let e = b.to_bytes().unwrap_err();
    assert_eq!(e, Error::MissingTensor(out_weight));
    assert_eq!(e.to_string(), "tensor output.weight is missing");
    // A tensor of the wrong shape is named with both shapes.
    b.linear_f32(
        (Role::Out, 0, 0),
        TGT.len(),
        5,
        &vec![0.0; TGT.len() * 5],
        None,
    );
    let e = b.to_bytes().unwrap_err();
    assert_eq!(
        e.to_string(),
        "tensor output.weight has shape 8x5, expected 8x6"
    );
    // Token ids outside their vocabulary are refused by the description check.
    let mut raw = tidy(d).to_raw().unwrap();
    raw.tgt_end = 99;
    assert!(matches!(
        ModelDesc::from_raw(&raw),
        Err(Error::TokenOutOfRange { .. })
    ));
    raw.tgt_end = 2;
    raw.src_unk = NO_TOKEN;
    assert!(ModelDesc::from_raw(&raw).is_ok());
    raw.ordering = 7;
    assert_eq!(
        ModelDesc::from_raw(&raw).unwrap_err(),
        Error::BadField("ordering")
    );
}

/// Every lane of a batched run gives exactly its single run, whatever the mix of
/// lengths, finishing steps and failing lines.
#[test]
fn batched_lanes_equal_single_runs() {
    for (seed, ordering, lstm_masked) in [
        (60, Ordering::Bahdanau, false),
        (61, Ordering::Luong, false),
        (62, Ordering::None, false),
        (63, Ordering::Luong, true),
    ] {
        let mut d = base_desc();
        d.attention.ordering = ordering;
        d.enc_bidir = true;
        d.enc_layers = 2;
        d.init = Init::Dense;
        d.dec_layers = 2;
        d.dec_reset = ResetMode::Before;
        d.src_unk = None; // so that "%%bad" fails in its own lane
        if ordering != Ordering::None {
            d.memory_proj = Some(5);
            d.out_parts = parts(&[Part::State, Part::Context]);
        }
        if lstm_masked {
            // LSTMs in lanes of different real lengths, masked padding.
            d = lstm(d);
            d.dec_reset = ResetMode::After;
            d.cells.init_cell = Init::Dense;
            d.src_eos = None;
            d.src_pad_to = 9;
            d.cells.enc_mask = Some(Masked::Previous);
        }
        let (bytes, _) = random_model(&d, seed);
        let file = ModelFile::parse(bytemuck::cast_slice(&bytes)).unwrap();
        let net = Net::<F32>::bind(&file).unwrap();
        let lines = ["abcd", "a", "%%bad", "dcbaabcd", "b"];
        let single: Vec<Result<RunOutput, Error>> =
            lines.iter().map(|l| run_line(&bytes, l)).collect();
        let bytes_needed = seq2seq::Plan::new::<F32>(&d, 16).bytes();
        let mut arena = vec![0u32; 4 * bytes_needed / 4];
        let mut runner = Runner::<F32, 4>::with_lanes(&net, &mut arena, 16).unwrap();
        let mut failed = 0;
        for chunk in lines.chunks(4) {
            let mut store = vec![vec![0u16; d.max_steps]; chunk.len()];
            let mut outs: Vec<&mut [u16]> = store.iter_mut().map(|v| &mut v[..]).collect();
            let mut obs: Vec<Logits> = chunk
                .iter()
                .map(|_| Logits(vec![], d.attention.predicted()))
                .collect();
            let results = runner.translate_batch(chunk, &[], &mut outs, &mut obs);
            for (i, r) in results.iter().enumerate() {
                let k = lines.iter().position(|l| l == &chunk[i]).unwrap();
                match (&single[k], r) {
                    (Ok((ids, _, logits)), Ok(n)) => {
                        assert_eq!(&outs[i][..*n], &ids[..], "{ordering:?} {:?}", chunk[i]);
                        assert_eq!(&obs[i].0, logits);
                    }
                    (Err(e), Err(f)) => {
                        assert_eq!(e, f);
                        failed += 1;
                    }
                    (a, b) => panic!("{:?}: single {:?} batched {b:?}", chunk[i], a.is_ok()),
                }
            }
        }
        assert_eq!(failed, 1);
    }
}

/// Sign patterns of the four letters a, b, c, d (source ids 3..=6): +1 at the letter,
/// -1 elsewhere. The encoder below turns every source letter into its pattern.
fn pattern(letter: usize) -> [f32; 4] {
    let mut p = [-1.0; 4];
    p[letter] = 1.0;
    p
}

/// A hand-built attention model with a known output. Encoder: one GRU whose update
/// gate is shut (bias -20) and whose candidate reads only the input, so each memory row
/// is the sign pattern of its letter (tanh(+-5)). The decoder's state is likewise set
/// by its input alone, to the pattern of the letter to look for: c after `<s>`, a after
/// y. Dot attention (scale 5) then puts all the weight on that letter wherever it is,
/// the output layer reads the context (letter a, b, c, d -> w, x, y, z), and the input
/// embedding of w sends `</s>`. So any source holding a c and an a translates to "y w".
/// With Bahdanau ordering the query is the previous state, so the first pattern comes
/// from a dense bridge and the GRU sets the next one.
fn finder(ordering: Ordering) -> Vec<u64> {
    let (v_src, v_tgt, h) = (SRC.len(), TGT.len(), 4);
    let mut d = base_desc();
    d.enc_emb = v_src;
    d.dec_emb = v_tgt;
    d.enc_hidden = h;
    d.dec_hidden = h;
    d.attention.ordering = ordering;
    d.attention.score = ScoreKind::Dot;
    d.attention.scale = 5.0;
    d.init = if ordering == Ordering::Bahdanau {
        Init::Dense
    } else {
        Init::Zeros
    };
    d.out_parts = parts(&[Part::Context, Part::Embedding]);
    tidy(d).check().unwrap();
    let mut b = ModelBuilder::new(PrecisionKind::F32, tidy(d));
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    b.separator = " ".into();
    let eye =
        |n: usize| -> Vec<f32> { (0..n * n).map(|i| (i / n == i % n) as u8 as f32).collect() };
    b.linear_f32((Role::EncEmb, 0, 0), v_src, v_src, &eye(v_src), None);
    b.linear_f32((Role::DecEmb, 0, 0), v_tgt, v_tgt, &eye(v_tgt), None);
    // GRU matrices with rows [r, z, n]: z shut, n = tanh(10 * (row of the input) - 5 * ...).
    let gru = |cols: usize, n_rows: &dyn Fn(usize, usize) -> f32| -> (Vec<f32>, Vec<f32>) {
        let mut w = vec![0.0; 3 * h * cols];
        let mut bias = vec![0.0; 3 * h];
        for j in 0..h {
            bias[h + j] = -20.0;
            for c in 0..cols {
                w[(2 * h + j) * cols + c] = n_rows(j, c);
            }
        }
        (w, bias)
    };
    let zeros = vec![0.0; 3 * h * h];
    // Encoder: letter k (id 3 + k) -> pattern(k); other tokens -> all -1.
    let (w, bias) = gru(v_src, &|j, c| if c == 3 + j { 10.0 } else { 0.0 });
    let bias: Vec<f32> = bias
        .iter()
        .enumerate()
        .map(|(i, &v)| if i >= 2 * h { -5.0 } else { v })
        .collect();
    b.linear_f32((Role::EncWih, 0, 0), 3 * h, v_src, &w, Some(&bias));
    b.linear_f32((Role::EncWhh, 0, 0), 3 * h, h, &zeros, None);
    // Decoder: the state after reading a token is the pattern of the letter to look
    // for next (all -1 after any other token). Luong queries with that state in the
    // same step; Bahdanau with it in the next one, its first query coming from the
    // bridge.
    let state_after = |tok: usize| match (ordering, tok) {
        (Ordering::Luong, 1) => Some(pattern(2)),
        (Ordering::Luong, 5) => Some(pattern(0)),
        (Ordering::Bahdanau, 1) => Some(pattern(0)),
        _ => None,
    };
    // Bahdanau's GRU also reads the context, with weight 0.
    let cols = if ordering == Ordering::Bahdanau {
        v_tgt + h
    } else {
        v_tgt
    };
    let (w, bias) = gru(cols, &|j, c| match (c < v_tgt, state_after(c)) {
        (true, Some(p)) => 10.0 * p[j],
        (true, None) => -10.0,
        (false, _) => 0.0,
    });
    b.linear_f32((Role::DecWih, 0, 0), 3 * h, cols, &w, Some(&bias));
    b.linear_f32((Role::DecWhh, 0, 0), 3 * h, h, &zeros, None);
    if ordering == Ordering::Bahdanau {
        // s_0 = tanh(0 * x + 10 * pattern(c)): the first query looks for c.
        let bias: Vec<f32> = pattern(2).iter().map(|v| 10.0 * v).collect();
        b.linear_f32((Role::Bridge, 0, 0), h, h, &vec![0.0; h * h], Some(&bias));
    }
    // Output: context pattern of letter k -> w, x, y, z (ids 3..=6); input w -> </s>.
    let cols = h + v_tgt;
    let mut w = vec![0.0; v_tgt * cols];
    for k in 0..4 {
        for (j, &p) in pattern(k).iter().enumerate() {
            w[(3 + k) * cols + j] = p;
        }
    }
    w[2 * cols + h + 3] = 10.0;
    b.linear_f32((Role::Out, 0, 0), v_tgt, cols, &w, None);
    aligned(&b.to_bytes().unwrap())
}

/// The position each step attends to most.
#[derive(Default)]
struct Peaks(Vec<usize>);
impl Observer<F32> for Peaks {
    fn step(&mut self, s: &Step<'_, F32>) {
        let w = s.weights.expect("an attention model");
        self.0.push(s2s_kernels::float::argmax(w).unwrap());
    }
}

/// Runs a finder model on `src` and checks its output and where it looked.
fn check_finder(model: &[u64], src: &str) {
    let (ids, text, _) = run_line(model, src).unwrap();
    assert_eq!((ids, text.as_str()), (vec![5, 3], "y w"), "{src}");
    let file = ModelFile::parse(bytemuck::cast_slice(model)).unwrap();
    let net = Net::<F32>::bind(&file).unwrap();
    let mut arena = vec![0u32; 1 << 14];
    let mut runner = Runner::new(&net, &mut arena, 16).unwrap();
    let mut out = [0u16; 12];
    let mut peaks = Peaks::default();
    runner
        .translate_line::<Error>(
            src,
            &seq2seq::Prefix::NONE,
            &mut out,
            &mut peaks,
            |_| Ok(()),
        )
        .unwrap();
    let at = |ch| src.find(ch).unwrap();
    assert_eq!(&peaks.0[..2], &[at('c'), at('a')], "{src}");
}

#[test]
fn hand_built_luong_model_finds_its_letters_wherever_they_are() {
    let model = finder(Ordering::Luong);
    for src in ["ca", "ac", "dcab", "bbacd", "cdba"] {
        check_finder(&model, src);
    }
}

#[test]
fn hand_built_bahdanau_model_finds_its_letters_wherever_they_are() {
    let model = finder(Ordering::Bahdanau);
    for src in ["ca", "ac", "dcab", "bbacd", "cdba"] {
        check_finder(&model, src);
    }
}
