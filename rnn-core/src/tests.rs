use super::*;
use s2s_kernels::F32;

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
    let mut s = GruScratch::new(c, &mut wide, &mut act).unwrap();
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
    let mut s = GruScratch::new(&c, &mut wide, &mut act).unwrap();
    let mut h = [0.0, 0.0];
    assert!(c.step(&[&[1.0]], &mut h, &mut s).is_err());
    let mut h = [0.0];
    assert!(c.step(&[&[1.0, 2.0]], &mut h, &mut s).is_err());
    let (mut wide, mut act) = ([0.0; 5], [0.0; 1]);
    assert!(GruScratch::new(&c, &mut wide, &mut act).is_err());
}

/// Compares a bidirectional pass against stepping each cell by hand.
#[test]
fn bidirectional_output_is_forward_then_backward_per_position() {
    let fwd = cell(ResetMode::After);
    let bwd = cell(ResetMode::Before);
    let layer = GruLayer::new(fwd, Some(bwd)).unwrap();
    let xs = [1.0f32, -2.0, 0.5];
    let mut out = [0.0f32; 6];
    let mut last = [0.0f32; 2];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = GruScratch::new(&fwd, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    layer
        .run(
            &Rows::new(&xs, 1),
            3,
            &mut out,
            &mut last,
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
        GruLayer::new(c, None).unwrap(),
        GruLayer::new(c, None).unwrap(),
    ];
    let xs = [0.3f32, 0.7];
    let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
    let mut lasts = [0.0f32; 2];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = GruScratch::new(&c, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    let top = run_stack(
        &layers,
        &Rows::new(&xs, 1),
        2,
        [&mut a, &mut b],
        &mut lasts,
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
    let layer = GruLayer::new(c, None).unwrap();
    let xs = [1.0f32; 4];
    let mut out = [0.0f32; 3];
    let mut last = [0.0f32; 1];
    let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
    let mut s = GruScratch::new(&c, &mut wide, &mut act).unwrap();
    let mut xbuf = [0.0f32; 1];
    assert_eq!(
        layer.run(
            &Rows::new(&xs, 1),
            4,
            &mut out,
            &mut last,
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
        GruLayer::new(fwd, Some(bwd)).unwrap(),
        GruLayer::new(up, Some(up)).unwrap(),
    ];
    let seqs: [&[f32]; 3] = [&[1.0, -2.0, 0.5], &[0.7], &[-0.3, 0.9]];
    let single: Vec<(Vec<f32>, [f32; 4])> = seqs
        .iter()
        .map(|x| {
            let (mut a, mut b, mut lasts, mut xb) = (vec![0.0; 6], vec![0.0; 6], [0.0; 4], [0.0]);
            let (mut wide, mut act) = ([0.0; 6], [0.0; 1]);
            let mut s = GruScratch::new(&fwd, &mut wide, &mut act).unwrap();
            let top = run_stack(
                &layers,
                &Rows::new(x, 1),
                x.len(),
                [&mut a, &mut b],
                &mut lasts,
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
            xbuf: xb,
            scratch: GruScratch::with_hidden(1, wide, act).unwrap(),
        })
        .collect();
    assert_eq!(run_stack_batch::<F32, 4>(&layers, &mut lanes).unwrap(), 1);
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
            xbuf: xb,
            scratch: GruScratch::with_hidden(1, wide, act).unwrap(),
        })
        .collect();
    assert!(run_stack_batch::<F32, 2>(&layers, &mut lanes).is_err());
}
