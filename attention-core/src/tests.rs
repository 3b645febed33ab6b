use super::*;
use proptest::prelude::*;
use s2s_kernels::F32;

/// Runs `attend` with freshly sized scratch.
fn attend(
    att: &Attention<'_, F32>,
    query: &[f32],
    keys: &[f32],
    memory: &[f32],
    t: usize,
    mask: Mask,
) -> (Vec<f32>, Vec<f32>) {
    let (qa, ta) = att.query_scratch_len();
    let (mut scores, mut qw, mut tv) = (vec![0.0; t], vec![0.0; qa], vec![0.0; ta]);
    let mut s = AttnScratch {
        scores: &mut scores,
        query: &mut qw,
        tanh: &mut tv,
    };
    let mut w = vec![0.0; t];
    let mut c = vec![0.0; att.memory_dim()];
    att.attend(query, keys, memory, t, mask, &mut s, &mut w, &mut c)
        .unwrap();
    (w, c)
}

/// Keys of `memory` (or the memory itself).
fn keys_of(att: &Attention<'_, F32>, memory: &[f32], t: usize) -> Vec<f32> {
    if att.keys_are_memory() {
        return memory.to_vec();
    }
    let mut keys = vec![0.0; t * att.key_dim()];
    let mut wide = vec![0.0; att.key_dim()];
    att.precompute_keys(memory, t, &mut keys, &mut wide)
        .unwrap();
    keys
}

#[test]
fn worked_example() {
    // Softmax of (0.3, 2.1, 0.5): e^0.3 + e^2.1 + e^0.5 = 11.165.
    let mut w = [0.0f32; 3];
    let sum = float::softmax(&[0.3, 2.1, 0.5], &mut w) * 2.1f32.exp();
    assert!((sum - 11.165).abs() < 5e-4, "denominator {sum}");
    let rounded: Vec<f32> = w.iter().map(|v| (v * 100.0).round() / 100.0).collect();
    assert_eq!(rounded, [0.12, 0.73, 0.15]);

    // The same scores through a General score that reads the first coordinate of each
    // memory row: the context is the weighted sum of the rows.
    let wm = [1.0f32, 0.0];
    let att = Attention::<F32>::new(
        Score::General {
            w: Linear::new(1, 2, 1, &wm, &[], None).unwrap(),
            scale: 1.0,
        },
        1,
        2,
        Fmt::Q15,
        Fmt::Q15,
    )
    .unwrap();
    let h = [0.3f32, 1.0, 2.1, -2.0, 0.5, 4.0];
    let (aw, c) = attend(&att, &[1.0], &keys_of(&att, &h, 3), &h, 3, Mask::None);
    for i in 0..3 {
        assert!((aw[i] - w[i]).abs() < 1e-6);
    }
    for j in 0..2 {
        let expect = w[0] * h[j] + w[1] * h[2 + j] + w[2] * h[4 + j];
        assert!((c[j] - expect).abs() < 1e-6);
        let two_decimals = 0.12 * h[j] + 0.73 * h[2 + j] + 0.15 * h[4 + j];
        assert!((c[j] - two_decimals).abs() < 0.02);
    }
}

#[test]
fn equal_scores_are_uniform_with_entropy_log_t() {
    let t = 7;
    let memory = vec![0.25f32; t * 2];
    let att = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 2, 2, Fmt::Q15, Fmt::Q15).unwrap();
    let (w, _) = attend(&att, &[1.0, -1.0], &memory, &memory, t, Mask::None);
    for &v in &w {
        assert!((v - 1.0 / t as f32).abs() < 1e-7);
    }
    assert!((entropy::<F32>(&w) - (t as f32).ln()).abs() < 1e-6);
}

#[test]
fn one_dominant_score_has_entropy_near_zero() {
    let memory = [0.0f32, 0.0, 30.0, 0.0, 0.0, 0.0];
    let att = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 2, 2, Fmt::Q15, Fmt::Q15).unwrap();
    let (w, _) = attend(&att, &[1.0, 0.0], &memory, &memory, 3, Mask::None);
    assert!(w[1] > 0.999_999);
    assert!(entropy::<F32>(&w) < 1e-5);
}

#[test]
fn mask_zeroes_padding_and_equals_attending_the_valid_prefix() {
    let memory = [0.1f32, 0.5, -0.3, 0.9, 0.7, 0.2, 3.0, 3.0];
    let att = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 2, 2, Fmt::Q15, Fmt::Q15).unwrap();
    let (w, c) = attend(&att, &[1.0, 1.0], &memory, &memory, 4, Mask::Valid(3));
    assert_eq!(w[3], 0.0);
    let (w3, c3) = attend(&att, &[1.0, 1.0], &memory[..6], &memory[..6], 3, Mask::None);
    assert_eq!(&w[..3], &w3[..]);
    assert_eq!(c, c3);
    // Attending the padding changes the result.
    let (wall, _) = attend(&att, &[1.0, 1.0], &memory, &memory, 4, Mask::None);
    assert!(wall[3] > 0.5);
    let (qa, ta) = att.query_scratch_len();
    let (mut sc, mut qw, mut tv) = (vec![0.0; 4], vec![0.0; qa], vec![0.0; ta]);
    let mut s = AttnScratch {
        scores: &mut sc,
        query: &mut qw,
        tanh: &mut tv,
    };
    let (mut w, mut c) = ([0.0; 4], [0.0; 2]);
    for bad in [Mask::Valid(0), Mask::Valid(5)] {
        assert!(matches!(
            att.attend(
                &[1.0, 1.0],
                &memory,
                &memory,
                4,
                bad,
                &mut s,
                &mut w,
                &mut c
            ),
            Err(Error::BadMask { .. })
        ));
    }
}

#[test]
fn monotonic_attends_the_first_position_from_the_last_whose_energy_is_not_negative() {
    // e_j = tanh(q + k_j) - 0.3 over keys = memory (-2, -1, 0.5, 2), q = 0:
    // (-1.26, -1.06, 0.16, 0.66).
    let (v, r) = ([1.0f32], [-0.3f32]);
    let att = Attention::<F32>::new(
        Score::Additive {
            query: None,
            key: None,
            v: Linear::new(1, 1, 1, &v, &[], Some(&r)).unwrap(),
        },
        1,
        1,
        Fmt::Q15,
        Fmt::Q15,
    )
    .unwrap();
    let memory = [-2.0f32, -1.0, 0.5, 2.0];
    let chunked = |from: usize, n: usize, w: usize| {
        let (mut scores, mut qw, mut tv) = ([9.0f32; 4], [0.0; 1], [0.0; 1]);
        let mut s = AttnScratch {
            scores: &mut scores,
            query: &mut qw,
            tanh: &mut tv,
        };
        let (mut c, mut weights) = ([7.0f32], [5.0f32; 4]);
        let scan = (from, n, w);
        let at = att
            .monotonic_marked(
                &[0.0],
                &memory,
                &memory,
                scan,
                &mut s,
                &mut weights,
                &mut c,
                &mut (),
            )
            .unwrap();
        (at, c[0], scores, weights)
    };
    let run = |from: usize, n: usize| {
        let (at, c, scores, weights) = chunked(from, n, 1);
        // A chunk of 1 writes the attended position's weight, 1, and no other.
        for (j, &w) in weights.iter().enumerate() {
            let expect = if at == Some(j) { 1.0 } else { 5.0 };
            assert_eq!(
                w, expect,
                "weight {j} of a scan from {from} stopping at {at:?}"
            );
        }
        (at, c, scores)
    };
    let (at, c, scores) = run(0, 4);
    assert_eq!((at, c), (Some(2), 0.5));
    for (j, k) in memory.iter().enumerate().take(3) {
        assert!((scores[j] - (k.tanh() - 0.3)).abs() < 1e-6, "energy {j}");
    }
    // (The positions after it in the same chunk are scored too: MONOTONIC_CHUNK.)
    assert!((scores[3] - (2.0f32.tanh() - 0.3)).abs() < 1e-6);
    let (_, _, scores) = run(1, 4);
    assert_eq!(scores[0], 9.0, "a position before `from` is not scored");
    assert_eq!(
        run(2, 4).0,
        Some(2),
        "the last position attended can be attended again"
    );
    assert_eq!(run(3, 4).0, Some(3));
    let (at, c, _) = run(0, 2);
    assert_eq!((at, c), (None, 0.0), "none stops: zero context");
    assert_eq!(run(4, 4).0, None, "past the end");
    // MoChA: from 3 with a chunk of 3, positions 1 and 2 are scored but do not stop;
    // 3 stops, and the context is the softmax over 1..=3 of their memory rows.
    let (at, c, scores, weights) = chunked(3, 4, 3);
    assert_eq!(at, Some(3));
    assert_eq!(
        scores[0], 9.0,
        "only the chunk's positions before `from` are scored"
    );
    let e: Vec<f64> = memory[1..]
        .iter()
        .map(|&k| (k as f64).tanh() - 0.3)
        .collect();
    let sum: f64 = e.iter().map(|x| x.exp()).sum();
    let alpha: Vec<f64> = e.iter().map(|x| x.exp() / sum).collect();
    let expect: f64 = alpha
        .iter()
        .zip(&memory[1..])
        .map(|(a, &m)| a * m as f64)
        .sum();
    assert!((c as f64 - expect).abs() < 1e-6, "{c} vs {expect}");
    assert_eq!(
        weights[0], 5.0,
        "the weights outside the chunk are not written"
    );
    for (w, a) in weights[1..].iter().zip(&alpha) {
        assert!((*w as f64 - a).abs() < 1e-6);
    }
    // A chunk past the start holds the positions there are: from 0, 2 stops, over 0..=2.
    let (at, _, _, weights) = chunked(0, 4, 8);
    assert_eq!(at, Some(2));
    assert!((weights[..3].iter().sum::<f32>() - 1.0).abs() < 1e-6 && weights[3] == 5.0);
    assert_eq!(chunked(0, 2, 3).1, 0.0, "none stops: zero context");
    let dot = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 1, 1, Fmt::Q15, Fmt::Q15).unwrap();
    let (mut scores, mut c, mut w) = ([0.0f32; 4], [0.0f32], [0.0f32; 4]);
    let mut s = AttnScratch {
        scores: &mut scores,
        query: &mut [],
        tanh: &mut [],
    };
    assert_eq!(
        dot.monotonic_marked(
            &[0.0],
            &memory,
            &memory,
            (0, 4, 1),
            &mut s,
            &mut w,
            &mut c,
            &mut ()
        ),
        Err(Error::NotAdditive)
    );
}

#[test]
fn keras_additive_without_matrices_is_sum_of_scaled_tanh() {
    // e_i = sum_j scale_j tanh(q_j + k_ij)
    let scale = [0.5f32, -2.0];
    let att = Attention::<F32>::new(
        Score::Additive {
            query: None,
            key: None,
            v: Linear::new(1, 2, 1, &scale, &[], None).unwrap(),
        },
        2,
        2,
        Fmt::Q15,
        Fmt::Q15,
    )
    .unwrap();
    assert!(att.keys_are_memory());
    let memory = [0.2f32, -0.4, 1.0, 0.3];
    let q = [0.1f32, 0.6];
    let (w, _) = attend(&att, &q, &memory, &memory, 2, Mask::None);
    let e: Vec<f32> = (0..2)
        .map(|i| {
            (0..2)
                .map(|j| scale[j] * (q[j] + memory[2 * i + j]).tanh())
                .sum()
        })
        .collect();
    let mut expect = [0.0; 2];
    float::softmax(&e, &mut expect);
    assert!((w[0] - expect[0]).abs() < 1e-6 && (w[1] - expect[1]).abs() < 1e-6);
}

#[test]
fn mismatched_dimensions_are_rejected() {
    let v = [1.0f32; 3];
    let r = Attention::<F32>::new(
        Score::Additive {
            query: None,
            key: None,
            v: Linear::new(1, 3, 1, &v, &[], None).unwrap(),
        },
        2,
        3,
        Fmt::Q15,
        Fmt::Q15,
    );
    assert!(matches!(r, Err(Error::Dimensions { .. })));
    let r = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 2, 3, Fmt::Q15, Fmt::Q15);
    assert!(matches!(r, Err(Error::Dimensions { .. })));
}

/// Random weights of one Bahdanau and one General attention (query 3, memory 4, attention 5).
#[derive(Debug, Clone)]
struct Params {
    wq: Vec<f32>,
    bq: Vec<f32>,
    uk: Vec<f32>,
    v: Vec<f32>,
    wg: Vec<f32>,
}

impl Params {
    fn additive(&self) -> Attention<'_, F32> {
        Attention::new(
            Score::Additive {
                query: Some(Linear::new(5, 3, 1, &self.wq, &[], Some(&self.bq)).unwrap()),
                key: Some(Linear::new(5, 4, 1, &self.uk, &[], None).unwrap()),
                v: Linear::new(1, 5, 1, &self.v, &[], None).unwrap(),
            },
            3,
            4,
            Fmt::Q15,
            Fmt::Q15,
        )
        .unwrap()
    }
    fn general(&self) -> Attention<'_, F32> {
        Attention::new(
            Score::General {
                w: Linear::new(3, 4, 1, &self.wg, &[], None).unwrap(),
                scale: 0.5,
            },
            3,
            4,
            Fmt::Q15,
            Fmt::Q15,
        )
        .unwrap()
    }
}

fn vecf(n: usize) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(-2.0f32..2.0, n)
}

fn params() -> impl Strategy<Value = Params> {
    (vecf(15), vecf(5), vecf(20), vecf(5), vecf(12)).prop_map(|(wq, bq, uk, v, wg)| Params {
        wq,
        bq,
        uk,
        v,
        wg,
    })
}

fn case() -> impl Strategy<Value = (Params, Vec<f32>, Vec<f32>, Vec<usize>)> {
    (2usize..9).prop_flat_map(|t| {
        (
            params(),
            vecf(3),
            vecf(4 * t),
            Just((0..t).collect::<Vec<_>>()).prop_shuffle(),
        )
    })
}

proptest! {
    #[test]
    fn permuting_the_memory_permutes_weights_and_keeps_context((p, q, mem, perm) in case()) {
        let t = perm.len();
        let permuted: Vec<f32> = perm.iter().flat_map(|&i| mem[4 * i..4 * i + 4].to_vec()).collect();
        for att in [p.additive(), p.general()] {
            let (w, c) = attend(&att, &q, &keys_of(&att, &mem, t), &mem, t, Mask::None);
            let (wp, cp) = attend(&att, &q, &keys_of(&att, &permuted, t), &permuted, t, Mask::None);
            for (k, &i) in perm.iter().enumerate() {
                prop_assert!((wp[k] - w[i]).abs() < 1e-5, "weight {} vs {}", wp[k], w[i]);
            }
            for j in 0..4 {
                prop_assert!((cp[j] - c[j]).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn context_lies_in_the_convex_hull_of_the_memory((p, q, mem, perm) in case()) {
        let t = perm.len();
        for att in [p.additive(), p.general()] {
            let (w, c) = attend(&att, &q, &keys_of(&att, &mem, t), &mem, t, Mask::None);
            prop_assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            for j in 0..4 {
                let col = (0..t).map(|i| mem[4 * i + j]);
                let lo = col.clone().fold(f32::INFINITY, f32::min);
                let hi = col.fold(f32::NEG_INFINITY, f32::max);
                prop_assert!(c[j] >= lo - 1e-5 && c[j] <= hi + 1e-5, "{} not in [{lo}, {hi}]", c[j]);
            }
        }
    }
}
