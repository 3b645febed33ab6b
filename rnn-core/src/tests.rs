use super::*;
use s2s_kernels::{Fmt, Linear, Requant, F32, W8A16};

// One cell with I = H = 1, rows [r, z, n]:
//   W_ih = [0.5, -0.5, 1.0], b_ih = [0.1, 0.2, 0.3]
//   W_hh = [0.4, 0.3, -0.6], b_hh = [0.0, -0.1, 0.5]
// At x = 2, h = 0.5:
//   r = sigmoid(0.5*2 + 0.1 + 0.4*0.5 + 0.0)  = sigmoid(1.3)   = 0.785835
//   z = sigmoid(-0.5*2 + 0.2 + 0.3*0.5 - 0.1) = sigmoid(-0.75) = 0.320821
//   reset after:  n = tanh(1.0*2 + 0.3 + r * (-0.6*0.5 + 0.5)) = tanh(2.3 + 0.2 r) = 0.985426
//   reset before: n = tanh(1.0*2 + 0.3 + (-0.6 * (r*0.5)) + 0.5) = tanh(2.8 - 0.3 r) = 0.988219
//   h' = (1 - z) n + z h  = 0.829691 (after), 0.831588 (before)
const W_IH: [f32; 3] = [0.5, -0.5, 1.0];
const B_IH: [f32; 3] = [0.1, 0.2, 0.3];
const W_HH: [f32; 3] = [0.4, 0.3, -0.6];
const B_HH: [f32; 3] = [0.0, -0.1, 0.5];

fn cell(mode: ResetMode) -> GruCell<'static, F32> {
    let w_ih = Linear::new(3, 1, 1, &W_IH, &[], Some(&B_IH)).unwrap();
    let w_hh = Linear::new(3, 1, 1, &W_HH, &[], Some(&B_HH)).unwrap();
    GruCell::new(w_ih, w_hh, mode).unwrap()
}

fn step(c: &GruCell<'_, F32>, x: f32, h: f32) -> f32 {
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let mut h = [h];
    c.step(&[&[x]], &mut h, &mut s).unwrap();
    h[0]
}

#[test]
fn hand_computed_step_reset_after() {
    assert!((step(&cell(ResetMode::After), 2.0, 0.5) - 0.829_691).abs() < 1e-6);
}

#[test]
fn hand_computed_step_reset_before() {
    assert!((step(&cell(ResetMode::Before), 2.0, 0.5) - 0.831_588).abs() < 1e-6);
}

#[test]
fn the_two_forms_differ_only_through_the_recurrent_candidate_bias_and_reset() {
    // With h = 0 both forms see W_hn h = 0, so they differ only by r * b_hn vs b_hn.
    let a = step(&cell(ResetMode::After), 1.0, 0.0);
    let b = step(&cell(ResetMode::Before), 1.0, 0.0);
    let r = 1.0 / (1.0 + (-(0.5f32 + 0.1)).exp());
    let z = 1.0 / (1.0 + (-(-0.5f32 + 0.2 - 0.1)).exp());
    assert!((a - (1.0 - z) * (1.3 + r * 0.5f32).tanh()).abs() < 1e-6);
    assert!((b - (1.0 - z) * (1.3f32 + 0.5).tanh()).abs() < 1e-6);
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let w_ih = Linear::<F32>::new(3, 1, 1, &W_IH, &[], None).unwrap();
    let w_hh = Linear::<F32>::new(1, 3, 1, &W_HH, &[], None).unwrap();
    assert!(matches!(
        GruCell::new(w_ih, w_hh, ResetMode::After),
        Err(Error::GateRows { .. })
    ));
    let c = cell(ResetMode::After);
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let mut h = [0.0, 0.0];
    assert!(c.step(&[&[1.0]], &mut h, &mut s).is_err());
    let mut h = [0.0];
    assert!(c.step(&[&[1.0, 2.0]], &mut h, &mut s).is_err());
    let (mut wide, mut act) = ([0.0; 5], [0.0; 1]);
    assert!(CellScratch::<F32>::with_hidden(1, &mut wide, &mut act).is_err());
}

/// Compares a bidirectional pass against stepping each cell by hand.
#[test]
fn bidirectional_output_is_forward_then_backward_per_position() {
    let fwd = cell(ResetMode::After);
    let bwd = cell(ResetMode::Before);
    let layer = RnnLayer::new(Cell::Gru(fwd), Some(Cell::Gru(bwd))).unwrap();
    let xs = [1.0f32, -2.0, 0.5];
    let mut out = [0.0f32; 6];
    let mut last = [0.0f32; 2];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    layer
        .run(
            &Rows::new(&xs, 1),
            3,
            &mut out,
            &mut last,
            &mut [],
            &mut xbuf,
            &mut s,
        )
        .unwrap();

    let mut hf = [0.0f32; 3];
    let mut h = 0.0;
    for (p, &x) in xs.iter().enumerate() {
        h = step(&fwd, x, h);
        hf[p] = h;
    }
    let mut hb = [0.0f32; 3];
    let mut h = 0.0;
    for p in (0..3).rev() {
        h = step(&bwd, xs[p], h);
        hb[p] = h;
    }
    for p in 0..3 {
        assert_eq!(out[2 * p], hf[p], "forward at {p}");
        assert_eq!(out[2 * p + 1], hb[p], "backward at {p}");
    }
    assert_eq!(last, [hf[2], hb[0]]);
}

#[test]
fn stack_feeds_each_layer_the_previous_outputs() {
    // Two unidirectional layers of H = 1: the second reads the first's outputs.
    let c = cell(ResetMode::After);
    let layers = [
        RnnLayer::new(Cell::Gru(c), None).unwrap(),
        RnnLayer::new(Cell::Gru(c), None).unwrap(),
    ];
    let xs = [0.3f32, 0.7];
    let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
    let mut lasts = [0.0f32; 2];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    let top = run_stack(
        &layers,
        &Rows::new(&xs, 1),
        2,
        [&mut a, &mut b],
        &mut lasts,
        &mut [],
        &mut xbuf,
        &mut s,
    )
    .unwrap();
    assert_eq!(top, 1);
    let h1 = [step(&c, 0.3, 0.0), step(&c, 0.7, step(&c, 0.3, 0.0))];
    let h2a = step(&c, h1[0], 0.0);
    let h2 = [h2a, step(&c, h1[1], h2a)];
    assert_eq!(a, h1);
    assert_eq!(b, h2);
    assert_eq!(lasts, [h1[1], h2[1]]);
}

#[test]
fn over_long_sequence_is_an_error() {
    let c = cell(ResetMode::After);
    let layer = RnnLayer::new(Cell::Gru(c), None).unwrap();
    let xs = [1.0f32; 4];
    let mut out = [0.0f32; 3];
    let mut last = [0.0f32; 1];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    assert_eq!(
        layer.run(
            &Rows::new(&xs, 1),
            4,
            &mut out,
            &mut last,
            &mut [],
            &mut xbuf,
            &mut s
        ),
        Err(Error::SequenceTooLong {
            len: 4,
            capacity: 3
        })
    );
}

#[test]
fn batched_lanes_of_different_lengths_equal_single_runs() {
    // Two bidirectional layers over three sequences of lengths 3, 1 and 2.
    let fwd = cell(ResetMode::After);
    let bwd = cell(ResetMode::Before);
    let w2 = [0.3f32, -0.2, 0.1, 0.4, 0.2, -0.5];
    let b2 = [0.05f32, 0.0, -0.1];
    let w_hh = Linear::new(3, 1, 1, &W_HH, &[], Some(&B_HH)).unwrap();
    let up = GruCell::new(
        Linear::new(3, 2, 1, &w2, &[], Some(&b2)).unwrap(),
        w_hh,
        ResetMode::After,
    )
    .unwrap();
    let layers = [
        RnnLayer::new(Cell::Gru(fwd), Some(Cell::Gru(bwd))).unwrap(),
        RnnLayer::new(Cell::Gru(up), Some(Cell::Gru(up))).unwrap(),
    ];
    let seqs: [&[f32]; 3] = [&[1.0, -2.0, 0.5], &[0.7], &[-0.3, 0.9]];
    let single: Vec<(Vec<f32>, [f32; 4])> = seqs
        .iter()
        .map(|x| {
            let (mut a, mut b, mut lasts, mut xb) = (vec![0.0; 6], vec![0.0; 6], [0.0; 4], [0.0]);
            let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
            let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
            let top = run_stack(
                &layers,
                &Rows::new(x, 1),
                x.len(),
                [&mut a, &mut b],
                &mut lasts,
                &mut [],
                &mut xb,
                &mut s,
            )
            .unwrap();
            assert_eq!(top, 1);
            (b[..2 * x.len()].to_vec(), lasts)
        })
        .collect();
    // Per lane: two layer buffers, final states, input row, GRU scratch.
    type LaneStore = (Vec<f32>, Vec<f32>, [f32; 4], [f32; 1], [f32; 6], [f32; 1]);
    let mut store: Vec<LaneStore> = seqs
        .iter()
        .map(|_| (vec![0.0; 6], vec![0.0; 6], [0.0; 4], [0.0], [0.0; 6], [0.0]))
        .collect();
    let inputs: Vec<Rows<'_, F32>> = seqs.iter().map(|x| Rows::new(x, 1)).collect();
    let mut lanes: Vec<SeqLane<'_, F32>> = store
        .iter_mut()
        .zip(&inputs)
        .map(|((a, b, lasts, xb, wide, act), input)| SeqLane {
            input,
            len: input.len(),
            bufs: [a, b],
            lasts,
            cells: &mut [],
            xbuf: xb,
            scratch: CellScratch::with_hidden(1, wide, act).unwrap(),
        })
        .collect();
    assert_eq!(
        run_stack_batch::<F32, 4>(&layers, &mut lanes, &mut ()).unwrap(),
        1
    );
    drop(lanes);
    for ((_, b, lasts, ..), (out, l)) in store.iter().zip(&single) {
        assert_eq!(&b[..out.len()], &out[..]);
        assert_eq!(lasts, l);
    }
    // More lanes than the batch holds is an error, not a panic.
    let mut lanes: Vec<SeqLane<'_, F32>> = store
        .iter_mut()
        .zip(&inputs)
        .map(|((a, b, lasts, xb, wide, act), input)| SeqLane {
            input,
            len: input.len(),
            bufs: [a, b],
            lasts,
            cells: &mut [],
            xbuf: xb,
            scratch: CellScratch::with_hidden(1, wide, act).unwrap(),
        })
        .collect();
    assert!(run_stack_batch::<F32, 2>(&layers, &mut lanes, &mut ()).is_err());
}

// ------------------------------------------------------------------------- LSTM

/// A small deterministic generator for test weights, uniform in `[-1, 1)`.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// An LSTM's float weights: `W_ih` (4H x I), `W_hh` (4H x H), one bias each, `[i, f,
/// g, o]` blocks.
struct LstmWeights {
    h: usize,
    i: usize,
    w_ih: Vec<f64>,
    w_hh: Vec<f64>,
    b_ih: Vec<f64>,
    b_hh: Vec<f64>,
}

impl LstmWeights {
    fn random(h: usize, i: usize, seed: u64) -> Self {
        let mut r = Rng(seed);
        LstmWeights {
            h,
            i,
            w_ih: r.vec(4 * h * i, 0.9),
            w_hh: r.vec(4 * h * h, 0.9),
            b_ih: r.vec(4 * h, 0.5),
            b_hh: r.vec(4 * h, 0.5),
        }
    }

    /// One step of the f64 reference: `(h, c) <- LSTM(x, (h, c))`.
    fn step(&self, rec: Recurrent, x: &[f64], h: &mut [f64], c: &mut [f64]) {
        let n = self.h;
        let act = |v: f64| match rec {
            Recurrent::Sigmoid => 1.0 / (1.0 + (-v).exp()),
            Recurrent::HardSigmoidKeras2 => (0.2 * v + 0.5).clamp(0.0, 1.0),
            Recurrent::HardSigmoidKeras3 => (v / 6.0 + 0.5).clamp(0.0, 1.0),
        };
        let z: Vec<f64> = (0..4 * n)
            .map(|r| {
                let a: f64 = (0..self.i).map(|k| self.w_ih[r * self.i + k] * x[k]).sum();
                let b: f64 = (0..n).map(|k| self.w_hh[r * n + k] * h[k]).sum();
                a + self.b_ih[r] + b + self.b_hh[r]
            })
            .collect();
        for j in 0..n {
            let (i, f) = (act(z[j]), act(z[n + j]));
            let (g, o) = (z[2 * n + j].tanh(), act(z[3 * n + j]));
            c[j] = f * c[j] + i * g;
            h[j] = o * c[j].tanh();
        }
    }
}

/// The f32 storage of an LSTM's layers.
struct F32Lstm {
    w_ih: Vec<f32>,
    w_hh: Vec<f32>,
    b_ih: Vec<f32>,
    b_hh: Vec<f32>,
}

impl F32Lstm {
    fn new(w: &LstmWeights) -> Self {
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect();
        F32Lstm {
            w_ih: f(&w.w_ih),
            w_hh: f(&w.w_hh),
            b_ih: f(&w.b_ih),
            b_hh: f(&w.b_hh),
        }
    }
    fn cell(&self, w: &LstmWeights, rec: Recurrent) -> LstmCell<'_, F32> {
        let (h, i) = (w.h, w.i);
        let w_ih = Linear::new(4 * h, i, 1, &self.w_ih, &[], Some(&self.b_ih)).unwrap();
        let w_hh = Linear::new(4 * h, h, 1, &self.w_hh, &[], Some(&self.b_hh)).unwrap();
        LstmCell::new(w_ih, w_hh, rec, Fmt::default()).unwrap()
    }
}

/// A W8A16 layer's storage: int8 codes, requantizers, biases.
type IntLayer = (Vec<i8>, Vec<Requant>, Vec<i32>);

/// The W8A16 storage of an LSTM's layers: per-row int8, inputs in `Q0.15`.
struct IntLstm {
    w_ih: IntLayer,
    w_hh: IntLayer,
}

/// Per-row symmetric int8 of a row-major matrix, requantizers for `Q0.15` inputs, and
/// the bias in `Q16.15`; also the dequantized weights.
fn int_layer(w: &[f64], b: &[f64], cols: usize) -> (IntLayer, Vec<f64>) {
    let (mut codes, mut rq, mut deq) = (vec![], vec![], vec![]);
    for row in w.chunks(cols) {
        let s = row.iter().fold(0.0f64, |m, v| m.max(v.abs())) / 127.0;
        rq.push(Requant::from_real(s));
        for &v in row {
            let q = (v / s).round().clamp(-127.0, 127.0) as i8;
            codes.push(q);
            deq.push(q as f64 * s);
        }
    }
    let bias = b.iter().map(|&v| (v * 32768.0).round() as i32).collect();
    ((codes, rq, bias), deq)
}

impl IntLstm {
    /// The layers and the weights they represent (dequantized, biases rounded).
    fn new(w: &LstmWeights) -> (Self, LstmWeights) {
        let (ih, deq_ih) = int_layer(&w.w_ih, &w.b_ih, w.i);
        let (hh, deq_hh) = int_layer(&w.w_hh, &w.b_hh, w.h);
        let round = |b: &[i32]| b.iter().map(|&v| v as f64 / 32768.0).collect();
        let deq = LstmWeights {
            h: w.h,
            i: w.i,
            w_ih: deq_ih,
            w_hh: deq_hh,
            b_ih: round(&ih.2),
            b_hh: round(&hh.2),
        };
        (IntLstm { w_ih: ih, w_hh: hh }, deq)
    }
    fn cell(&self, w: &LstmWeights, rec: Recurrent, fc: Fmt) -> LstmCell<'_, W8A16> {
        let (h, i) = (w.h, w.i);
        let (c, q, b) = &self.w_ih;
        let w_ih = Linear::new(4 * h, i, 1, c, q, Some(b)).unwrap();
        let (c, q, b) = &self.w_hh;
        let w_hh = Linear::new(4 * h, h, 1, c, q, Some(b)).unwrap();
        LstmCell::new(w_ih, w_hh, rec, fc).unwrap()
    }
}

const RECS: [Recurrent; 3] = [
    Recurrent::Sigmoid,
    Recurrent::HardSigmoidKeras2,
    Recurrent::HardSigmoidKeras3,
];

#[test]
fn hand_computed_lstm_step() {
    // I = H = 1; rows [i, f, g, o]; x = 1, h = 0.5, c = -0.25, b_hh = 0.
    //   z = W_ih x + b_ih + W_hh h = [0.5 + 0.1 + 0.2, -0.4 + 0.2 + 0.15, 0.8 - 0.1 - 0.3, 0.3 + 0.0 + 0.05]
    let w_ih = [0.5f32, -0.4, 0.8, 0.3];
    let b_ih = [0.1f32, 0.2, -0.1, 0.0];
    let w_hh = [0.4f32, 0.3, -0.6, 0.1];
    let l_ih = Linear::<F32>::new(4, 1, 1, &w_ih, &[], Some(&b_ih)).unwrap();
    let l_hh = Linear::<F32>::new(4, 1, 1, &w_hh, &[], None).unwrap();
    for rec in RECS {
        let cell = LstmCell::new(l_ih, l_hh, rec, Fmt::default()).unwrap();
        let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
        let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
        let (mut h, mut c) = ([0.5f32], [-0.25f32]);
        cell.step(&[&[1.0]], &mut h, &mut c, &mut s).unwrap();
        let a = |v: f64| match rec {
            Recurrent::Sigmoid => 1.0 / (1.0 + (-v).exp()),
            Recurrent::HardSigmoidKeras2 => (0.2 * v + 0.5).clamp(0.0, 1.0),
            Recurrent::HardSigmoidKeras3 => (v / 6.0 + 0.5).clamp(0.0, 1.0),
        };
        let (i, f, g, o) = (a(0.8), a(-0.05), 0.4f64.tanh(), a(0.35));
        let c1 = f * -0.25 + i * g;
        assert!(
            (c[0] as f64 - c1).abs() < 1e-6,
            "{rec:?}: c {} vs {c1}",
            c[0]
        );
        assert!((h[0] as f64 - o * c1.tanh()).abs() < 1e-6, "{rec:?}: h");
    }
}

/// An LSTM over 40 steps against the f64 reference, in f32 (the same weights) and in
/// W8A16 (against the reference of its dequantized weights), with every recurrent
/// activation; the cell states of this model reach about ±3, in `Q3.12`.
#[test]
fn lstm_matches_f64_reference_in_f32_and_w8a16() {
    let (n, ni) = (5, 3);
    for (k, rec) in RECS.into_iter().enumerate() {
        let mut w = LstmWeights::random(n, ni, 7 + k as u64);
        // Forget gates mostly open, so that cell states build up beyond one.
        for b in &mut w.b_ih[n..2 * n] {
            *b += 2.0;
        }
        let mut r = Rng(99 + k as u64);
        let xs: Vec<Vec<f64>> = (0..40).map(|_| r.vec(ni, 1.0)).collect();
        // f32.
        let f = F32Lstm::new(&w);
        let cell = f.cell(&w, rec);
        let (mut wide, mut act) = ([0.0f32; 30], [0.0f32; 5]);
        let mut s = CellScratch::with_hidden(n, &mut wide, &mut act).unwrap();
        let (mut h, mut c) = (vec![0.0f32; n], vec![0.0f32; n]);
        let (mut hr, mut cr) = (vec![0.0; n], vec![0.0; n]);
        let mut worst = (0.0f64, 0.0f64);
        for x in &xs {
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            cell.step(&[&xf], &mut h, &mut c, &mut s).unwrap();
            w.step(rec, x, &mut hr, &mut cr);
            for j in 0..n {
                worst.0 = worst.0.max((h[j] as f64 - hr[j]).abs());
                worst.1 = worst.1.max((c[j] as f64 - cr[j]).abs());
            }
        }
        assert!(worst.0 < 2e-6 && worst.1 < 5e-6, "f32 {rec:?}: {worst:?}");
        // W8A16: inputs in Q0.15, cell state in Q3.12.
        let fc = Fmt { frac: 12 };
        let (q, deq) = IntLstm::new(&w);
        let cell = q.cell(&w, rec, fc);
        let (mut wide, mut act) = ([0i32; 30], [0i16; 5]);
        let mut s = CellScratch::with_hidden(n, &mut wide, &mut act).unwrap();
        let (mut h, mut c) = (vec![0i16; n], vec![0i16; n]);
        let (mut hr, mut cr) = (vec![0.0; n], vec![0.0; n]);
        let (mut worst, mut cmax) = ((0.0f64, 0.0f64), 0.0f64);
        for x in &xs {
            let xq: Vec<i16> = x
                .iter()
                .map(|&v| (v * 32768.0).round().clamp(-32768.0, 32767.0) as i16)
                .collect();
            let xr: Vec<f64> = xq.iter().map(|&v| v as f64 / 32768.0).collect();
            cell.step(&[&xq], &mut h, &mut c, &mut s).unwrap();
            deq.step(rec, &xr, &mut hr, &mut cr);
            for j in 0..n {
                worst.0 = worst.0.max((h[j] as f64 / 32768.0 - hr[j]).abs());
                worst.1 = worst.1.max((c[j] as f64 / 4096.0 - cr[j]).abs());
                cmax = cmax.max(cr[j].abs());
            }
        }
        // Table errors (~4e-5 per nonlinearity) and Q3.12 rounding (1.2e-4), carried
        // through the recurrence.
        eprintln!(
            "lstm {rec:?}: w8a16 max |h - h_ref| {:.2e}, |c - c_ref| {:.2e}, max |c| {cmax:.2}",
            worst.0, worst.1
        );
        assert!(worst.0 < 2e-3 && worst.1 < 2e-3, "w8a16 {rec:?}: {worst:?}");
        assert!(
            cmax > 1.0,
            "{rec:?}: the test should exercise |c| > 1, max {cmax}"
        );
    }
}

/// Saturation of the W8A16 cell state: an LSTM whose gates are all open and whose
/// candidate is one adds one to its cell state every step (the f64 reference grows
/// without bound); in `Q3.12` the state climbs to the top of the format (8 - 2^-12)
/// and stays there, never wrapping, and `h = o tanh(c)` stays at its maximum.
#[test]
fn w8a16_cell_state_saturates_at_the_top_of_its_format() {
    // I = H = 1, every weight 0, biases 20: i = f = o = 1, g = tanh(20) = 1.
    let w = LstmWeights {
        h: 1,
        i: 1,
        w_ih: vec![0.0; 4],
        w_hh: vec![0.0; 4],
        b_ih: vec![20.0; 4],
        b_hh: vec![0.0; 4],
    };
    let (q, _) = IntLstm::new(&w);
    for (rec, frac) in [(Recurrent::Sigmoid, 12), (Recurrent::HardSigmoidKeras2, 13)] {
        let fc = Fmt { frac };
        let cell = q.cell(&w, rec, fc);
        let (mut wide, mut act) = ([0i32; 6], [0i16; 1]);
        let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
        let (mut h, mut c) = ([0i16], [0i16]);
        let top = 1i32 << (15 - frac);
        let mut prev = 0i16;
        for t in 1..=3 * top {
            cell.step(&[&[0]], &mut h, &mut c, &mut s).unwrap();
            assert!(
                c[0] >= prev,
                "{rec:?}: the cell state fell from {prev} to {}",
                c[0]
            );
            prev = c[0];
            if t > top {
                assert_eq!(c[0], i16::MAX, "{rec:?}: step {t}");
                assert!(h[0] >= 32700, "{rec:?}: h {}", h[0]);
            } else {
                // Each step adds (1 - 2^-15)^2 in the cell format.
                let want = t as f64 * (32767.0f64 / 32768.0).powi(2);
                assert!((c[0] as f64 / (1 << frac) as f64 - want).abs() < t as f64 * 1e-3);
            }
        }
    }
    // At the bottom: the candidate -1.
    let w = LstmWeights {
        b_ih: vec![20.0, 20.0, -20.0, 20.0],
        ..w
    };
    let (q, _) = IntLstm::new(&w);
    let cell = q.cell(&w, Recurrent::Sigmoid, Fmt { frac: 12 });
    let (mut wide, mut act) = ([0i32; 6], [0i16; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let (mut h, mut c) = ([0i16], [0i16]);
    for _ in 0..20 {
        cell.step(&[&[0]], &mut h, &mut c, &mut s).unwrap();
    }
    assert_eq!(c[0], i16::MIN);
    assert!(h[0] <= -32700);
}

#[test]
fn lstm_shapes_and_formats_are_checked() {
    let w = [0.1f32; 12];
    let l3 = Linear::<F32>::new(3, 1, 1, &w[..3], &[], None).unwrap();
    let l4 = Linear::<F32>::new(4, 1, 1, &w[..4], &[], None).unwrap();
    assert!(matches!(
        LstmCell::new(l3, l4, Recurrent::Sigmoid, Fmt::default()),
        Err(Error::GateRows { gates: 4, .. })
    ));
    assert_eq!(
        LstmCell::new(l4, l4, Recurrent::Sigmoid, Fmt { frac: 16 }).unwrap_err(),
        Error::CellFormat(16)
    );
    let cell = LstmCell::new(l4, l4, Recurrent::Sigmoid, Fmt::default()).unwrap();
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
    let (mut h, mut c) = ([0.0f32], [0.0f32; 2]);
    assert!(cell.step(&[&[1.0]], &mut h, &mut c, &mut s).is_err());
    // A GRU and an LSTM cannot be the two directions of one layer.
    let g = cell_gru();
    assert_eq!(
        RnnLayer::new(Cell::Lstm(cell), Some(Cell::Gru(g))).unwrap_err(),
        Error::DirectionMismatch
    );
}

fn cell_gru() -> GruCell<'static, F32> {
    cell(ResetMode::After)
}

/// A bidirectional LSTM layer: outputs `[forward; backward]`, final states and final
/// cell states as stepping each cell by hand; lanes of different lengths batched
/// give each what it gets alone.
#[test]
fn bidirectional_lstm_pass_and_lanes() {
    let (n, ni) = (3, 2);
    let (wf, wb) = (LstmWeights::random(n, ni, 1), LstmWeights::random(n, ni, 2));
    let (ff, fb) = (F32Lstm::new(&wf), F32Lstm::new(&wb));
    let (cf, cb) = (
        ff.cell(&wf, Recurrent::Sigmoid),
        fb.cell(&wb, Recurrent::HardSigmoidKeras2),
    );
    let layer = RnnLayer::new(Cell::Lstm(cf), Some(Cell::Lstm(cb))).unwrap();
    let seqs: [Vec<f32>; 2] = [
        vec![0.5, -1.0, 0.25, 0.75, -0.5, 0.0, 1.0, 0.3],
        vec![-0.2, 0.9],
    ];
    let by_hand = |x: &[f32]| {
        let t = x.len() / ni;
        let mut out = vec![0.0f32; t * 2 * n];
        let (mut wide, mut act) = ([0.0f32; 18], [0.0f32; 3]);
        let mut s = CellScratch::with_hidden(n, &mut wide, &mut act).unwrap();
        let (mut h, mut c) = (vec![0.0; n], vec![0.0; n]);
        for p in 0..t {
            cf.step(&[&x[p * ni..][..ni]], &mut h, &mut c, &mut s)
                .unwrap();
            out[p * 2 * n..][..n].copy_from_slice(&h);
        }
        let (hf, cfin) = (h.clone(), c.clone());
        let (mut h, mut c) = (vec![0.0; n], vec![0.0; n]);
        for p in (0..t).rev() {
            cb.step(&[&x[p * ni..][..ni]], &mut h, &mut c, &mut s)
                .unwrap();
            out[p * 2 * n + n..][..n].copy_from_slice(&h);
        }
        ([hf, h].concat(), [cfin, c].concat(), out)
    };
    let (mut a0, mut a1) = (vec![0.0f32; 24], vec![0.0f32; 6]);
    let (mut l0, mut l1, mut c0, mut c1) = ([0.0f32; 6], [0.0f32; 6], [0.0f32; 6], [0.0f32; 6]);
    let (mut x0, mut x1) = ([0.0f32; 2], [0.0f32; 2]);
    let (mut w0, mut w1, mut v0, mut v1) = ([0.0f32; 18], [0.0f32; 18], [0.0f32; 3], [0.0f32; 3]);
    let inputs = [Rows::new(&seqs[0], ni), Rows::new(&seqs[1], ni)];
    let mut lanes = [
        SeqLane {
            input: &inputs[0],
            len: 4,
            bufs: [&mut a0, &mut []],
            lasts: &mut l0,
            cells: &mut c0,
            xbuf: &mut x0,
            scratch: CellScratch::with_hidden(n, &mut w0, &mut v0).unwrap(),
        },
        SeqLane {
            input: &inputs[1],
            len: 1,
            bufs: [&mut a1, &mut []],
            lasts: &mut l1,
            cells: &mut c1,
            xbuf: &mut x1,
            scratch: CellScratch::with_hidden(n, &mut w1, &mut v1).unwrap(),
        },
    ];
    run_stack_batch::<F32, 2>(core::slice::from_ref(&layer), &mut lanes, &mut ()).unwrap();
    for (x, (last, cells, out)) in seqs.iter().zip([(l0, c0, a0), (l1, c1, a1)]) {
        let (hl, cl, o) = by_hand(x);
        assert_eq!(&out[..o.len()], &o[..]);
        assert_eq!(&last[..], &hl[..]);
        assert_eq!(&cells[..], &cl[..]);
    }
    // An LSTM stack needs room for its cell states.
    let mut out = vec![0.0f32; 24];
    let (mut last, mut xb) = ([0.0f32; 6], [0.0f32; 2]);
    let (mut wide, mut act) = ([0.0f32; 18], [0.0f32; 3]);
    let mut s = CellScratch::with_hidden(n, &mut wide, &mut act).unwrap();
    assert!(layer
        .run(
            &inputs[0],
            4,
            &mut out,
            &mut last,
            &mut [0.0; 5],
            &mut xb,
            &mut s
        )
        .is_err());
}

/// Masked positions: a pass over the valid positions, then the padded rows as Keras
/// gives them.
#[test]
fn masked_positions_repeat_or_zero_the_forward_half_and_zero_the_backward_half() {
    let g = cell_gru();
    let layer = RnnLayer::new(Cell::Gru(g), Some(Cell::Gru(g))).unwrap();
    let xs = [0.4f32, -0.8, 0.0, 0.0, 0.0];
    for rule in [Masked::Previous, Masked::Zeros] {
        let mut out = [9.0f32; 10];
        let mut last = [0.0f32; 2];
        let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
        let mut s = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
        let mut xb = [0.0f32];
        layer
            .run(
                &Rows::new(&xs, 1),
                2,
                &mut out,
                &mut last,
                &mut [],
                &mut xb,
                &mut s,
            )
            .unwrap();
        let real = out;
        fill_masked(&layer, &mut out, 2, 5, rule).unwrap();
        assert_eq!(out[..4], real[..4]);
        for p in 2..5 {
            let fwd = if rule == Masked::Previous {
                real[2]
            } else {
                0.0
            };
            assert_eq!(out[2 * p..2 * p + 2], [fwd, 0.0], "{rule:?} at {p}");
        }
        // The final states are those after the real steps.
        assert_eq!(last, [real[2], real[1]]);
    }
    let mut short = [0.0f32; 4];
    assert!(fill_masked(&layer, &mut short, 2, 5, Masked::Zeros).is_err());
}
