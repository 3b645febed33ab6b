//! Property tests of the integer path at the ends of its ranges: int8 weights at ±127
//! against int16 activations at `i16::MIN`/`i16::MAX` over rows longer than
//! [`I32_EXACT_RUN`], wide values at `i32::MIN`/`i32::MAX` into the nonlinearities and
//! the softmax, requantizers at their extremes (`mult` `2^31 - 1`, shift 0 and 62).
//!
//! Run in the test profile these have overflow checks on, so "no panic" is checked
//! along with the values: every result equals the exact `i128` computation where the
//! documentation says exact, its saturation where it says saturated, and stays within
//! the one unit that `portable.rs` documents for runs longer than `I32_EXACT_RUN`.

use proptest::prelude::*;

use crate::fixed::{mul_q15, mul_q15_i32, shift_round_i32, shift_round_i64, ONE_Q15};
use crate::lut::{
    exp_neg_q16, sigmoid_q15, softmax_q15, tanh_q15, MAX_ERROR_SIGMOID_Q15, MAX_ERROR_TANH_Q15,
};
use crate::precision::I32_EXACT_RUN;
use crate::suite::Rng;
use crate::{dot_i16, dot_i8_i16, Fmt, Linear, Precision, Requant, W8A16};

// ---- exact references -------------------------------------------------------------

/// `x * 2^-s` rounded half up (`s > 0`) or `x * 2^-s` (`s <= 0`), exactly.
fn round_shift(x: i128, s: i32) -> i128 {
    if s > 0 {
        (x + (1i128 << (s - 1))) >> s
    } else {
        x << -s
    }
}

fn sat32(x: i128) -> i32 {
    x.clamp(i32::MIN as i128, i32::MAX as i128) as i32
}

fn sat16(x: i128) -> i16 {
    x.clamp(i16::MIN as i128, i16::MAX as i128) as i16
}

/// `round(x * mult / 2^shift)`, saturated: what [`Requant::apply`] documents.
fn requant_exact(x: i128, q: Requant) -> i32 {
    sat32(round_shift(x * q.mult as i128, q.shift))
}

// ---- strategies -------------------------------------------------------------------

/// Mostly the extremes, sometimes anything.
fn act() -> impl Strategy<Value = i16> {
    prop_oneof![
        4 => Just(i16::MIN),
        2 => Just(i16::MAX),
        1 => Just(i16::MIN + 1),
        2 => any::<i16>(),
    ]
}

/// ±127 mostly (int8 weights are symmetric: `-128` is never produced), sometimes anything.
fn weight() -> impl Strategy<Value = i8> {
    prop_oneof![4 => Just(127i8), 2 => Just(-127i8), 1 => -127i8..=127]
}

fn wide() -> impl Strategy<Value = i32> {
    prop_oneof![
        2 => Just(i32::MIN),
        2 => Just(i32::MAX),
        1 => Just(i32::MIN + 1),
        1 => Just(0),
        2 => any::<i32>(),
        2 => -(40i32 << 15)..(40i32 << 15),
    ]
}

/// Valid requantizers (`mult >= 0`, shift `0..=62`), extremes first.
fn requant() -> impl Strategy<Value = Requant> {
    let mult = prop_oneof![
        Just(i32::MAX),
        Just(1 << 30),
        Just(1),
        Just(0),
        0..=i32::MAX,
        (1 << 30)..=i32::MAX,
    ];
    let shift = prop_oneof![Just(0), Just(62), Just(31), Just(30), Just(15), 0..=62];
    (mult, shift).prop_map(|(mult, shift)| Requant { mult, shift })
}

// ---- requantization and the fixed-point helpers -----------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn requant_apply_is_exact_and_saturated(x in wide(), q in requant()) {
        prop_assert_eq!(q.apply(x), requant_exact(x as i128, q));
    }

    #[test]
    fn from_real_is_valid_and_within_half_a_mantissa_unit(e in -32.0f64..31.0, m in 1.0f64..2.0) {
        let real = m * 2f64.powf(e.floor());
        let q = Requant::from_real(real);
        prop_assert!(q.is_valid());
        prop_assert!((1 << 30..=i32::MAX).contains(&q.mult));
        // 31-bit mantissa rounded to nearest.
        prop_assert!((q.to_real() - real).abs() <= real * 2f64.powi(-31), "{real} -> {q:?}");
    }

    #[test]
    fn shift_round_is_exact_rounding_half_up_then_saturation(
        x in prop_oneof![Just(1i64 << 62), Just(-(1i64 << 62)), -(1i64 << 62)..=(1 << 62), any::<i32>().prop_map(i64::from)],
        s in -32i32..=62,
    ) {
        // |x| <= 2^62 covers every product `Requant::apply` makes (|x * mult| <= 2^62).
        // Closer to i64::MAX the rounding term saturates (see `shift_round_near_i64_max`).
        prop_assert_eq!(shift_round_i64(x, s), sat32(round_shift(x as i128, s)));
        let y = x as i32;
        prop_assert_eq!(shift_round_i32(y, s), sat32(round_shift(y as i128, s)));
    }

    #[test]
    fn mul_q15_i32_is_exact_over_the_whole_wide_range(u in prop_oneof![Just(0i16), Just(i16::MAX), 0..=i16::MAX], x in wide()) {
        // Documented domain: u in [0, 1). No saturation can happen there.
        prop_assert_eq!(mul_q15_i32(u, x) as i128, round_shift(u as i128 * x as i128, 15));
        prop_assert_eq!(W8A16::gate(u, x), mul_q15_i32(u, x));
    }

    #[test]
    fn mul_q15_is_exact_then_saturated(a in act(), b in act()) {
        prop_assert_eq!(mul_q15(a, b), sat16(round_shift(a as i128 * b as i128, 15)));
        prop_assert_eq!(W8A16::gate_act(a, b), mul_q15(a, b));
    }

    #[test]
    fn add_saturates(a in wide(), b in wide()) {
        prop_assert_eq!(W8A16::add(a, b), sat32(a as i128 + b as i128));
    }

    #[test]
    fn blend_is_exact_then_saturated_and_convex(z in act(), h in act(), n in act(), zu in 0..=i16::MAX) {
        // Any z: n + round(z (h - n) / 2^15), saturated; never an overflow.
        let exact = |z: i16| sat16(n as i128 + round_shift(z as i128 * (h as i128 - n as i128), 15));
        prop_assert_eq!(W8A16::blend(z, h, n), exact(z));
        // A unit z in [0, 1): the result lies between n and h.
        let y = W8A16::blend(zu, h, n);
        prop_assert_eq!(y, exact(zu));
        prop_assert!(h.min(n) <= y && y <= h.max(n));
    }

    #[test]
    fn widen_and_narrow_are_exact_then_saturated(w in wide(), a in act(), frac in -8i8..=30) {
        // Every format the model parser accepts.
        let f = Fmt { frac };
        prop_assert_eq!(W8A16::narrow(w, f), sat16(sat32(round_shift(w as i128, 15 - frac as i32)) as i128));
        prop_assert_eq!(W8A16::widen(a, f), sat32(round_shift(a as i128, frac as i32 - 15)));
    }
}

// ---- long rows: int8 x int16 and int16 x int16 accumulators ---------------------

/// Long vectors drawn from a seed: proptest shrinks the length and the seed, and
/// generating 2048 elements stays cheap in the test profile. The skew of the draws
/// makes most products of a row share one sign, so the sum of a 2048-long row goes far
/// beyond `i32`.
fn acts(n: usize, seed: u64) -> Vec<i16> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| match rng.range(0, 8) {
            0..=5 => i16::MIN,
            6 => i16::MAX,
            7 => i16::MIN + 1,
            _ => rng.u64() as i16,
        })
        .collect()
}

fn weights(n: usize, seed: u64) -> Vec<i8> {
    let mut rng = Rng::new(seed ^ 0x5555);
    (0..n)
        .map(|_| match rng.range(0, 6) {
            0..=4 => 127,
            5 => -127,
            _ => (rng.range(0, 254) as i32 - 127) as i8,
        })
        .collect()
}

fn long_acts(max: usize) -> impl Strategy<Value = Vec<i16>> {
    (1..=max, any::<u64>()).prop_map(|(n, seed)| acts(n, seed))
}

/// A row of weights and the activations it meets.
fn row(max: usize) -> impl Strategy<Value = (Vec<i8>, Vec<i16>)> {
    (1..=max, any::<u64>()).prop_map(|(n, seed)| (weights(n, seed), acts(n, seed)))
}

fn dot_exact(w: &[i8], x: &[i16]) -> i128 {
    w.iter().zip(x).map(|(&a, &b)| a as i128 * b as i128).sum()
}

#[test]
fn i32_exact_run_is_the_longest_run_that_fits() {
    // Every i8 weight, -128 included, against i16::MIN.
    let worst = 128i64 * 32768;
    assert!(I32_EXACT_RUN as i64 * worst <= i32::MAX as i64);
    assert!((I32_EXACT_RUN as i64 + 1) * worst > i32::MAX as i64);
    for n in [
        I32_EXACT_RUN - 1,
        I32_EXACT_RUN,
        I32_EXACT_RUN + 1,
        1024,
        2048,
        4099,
    ] {
        for (w, x) in [
            (127i8, i16::MIN),
            (-127, i16::MIN),
            (127, i16::MAX),
            (-127, i16::MAX),
        ] {
            let (w, x) = (vec![w; n], vec![x; n]);
            assert_eq!(dot_i8_i16(&w, &x) as i128, dot_exact(&w, &x), "{n}");
        }
        let a = vec![i16::MIN; n];
        assert_eq!(dot_i16(&a, &a) as i128, n as i128 * (1 << 30));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn dot_i8_i16_is_exact_on_long_extreme_rows((w, x) in row(2048)) {
        prop_assert_eq!(dot_i8_i16(&w, &x) as i128, dot_exact(&w, &x));
    }

    #[test]
    fn dot_i16_is_exact_on_long_extreme_rows(a in long_acts(2048), b in long_acts(2048)) {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let exact: i128 = a.iter().zip(b).map(|(&x, &y)| x as i128 * y as i128).sum();
        prop_assert_eq!(dot_i16(a, b) as i128, exact);
    }

    #[test]
    fn score_dot_is_exact_rounding_then_scale(
        a in long_acts(2048),
        b in long_acts(2048),
        fa in 0i8..=15, fb in 0i8..=15, s in requant(),
    ) {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let exact: i128 = a.iter().zip(b).map(|(&x, &y)| x as i128 * y as i128).sum();
        let wide = sat32(round_shift(exact, fa as i32 + fb as i32 - 15));
        let y = W8A16::dot(a, Fmt { frac: fa }, b, Fmt { frac: fb }, s);
        prop_assert_eq!(y, requant_exact(wide as i128, s));
    }

    #[test]
    fn weighted_sum_is_exact_then_saturated(
        w in long_acts(2048),
        d in 1usize..=3,
        seed in any::<u64>(),
    ) {
        let rows = &acts(w.len() * d, seed)[..];
        let mut out = vec![0i16; d];
        W8A16::weighted_sum(&w, rows, &mut out);
        for (j, &o) in out.iter().enumerate() {
            let exact: i128 = w.iter().enumerate().map(|(i, &wi)| wi as i128 * rows[i * d + j] as i128).sum();
            prop_assert_eq!(o, sat16(round_shift(exact, 15)));
        }
    }

    /// A dense layer of 1-2 rows, 1-2 input parts, 1-2 planes over rows of up to 2048
    /// columns at the extremes, extreme requantizers and biases: every (row, plane,
    /// part) term is `round(d * m)` saturated, exact when the part's dot product fits
    /// `i32` and within one unit otherwise; the terms add up with saturation.
    #[test]
    fn linear_on_extreme_layers_matches_exact_arithmetic(
        rows in 1usize..=2,
        planes in 1usize..=2,
        (w, x) in row(2048),
        split in any::<prop::sample::Index>(),
        two_parts in any::<bool>(),
        q in prop::collection::vec(requant(), 8),
        bias in prop::collection::vec(wide(), 2),
        with_bias in any::<bool>(),
    ) {
        let cols = x.len();
        let parts = if two_parts && cols > 1 { 2 } else { 1 };
        let cut = if parts == 2 { 1 + split.index(cols - 1) } else { cols };
        let xs: Vec<&[i16]> = if parts == 2 { vec![&x[..cut], &x[cut..]] } else { vec![&x[..]] };
        // Weights: rows x planes copies of the row, negated in every other copy.
        let mut weights = Vec::with_capacity(rows * planes * cols);
        for k in 0..rows * planes {
            weights.extend(w.iter().map(|&v| if k % 2 == 0 { v } else { -v }));
        }
        let q = &q[..rows * planes * parts];
        let bias = &bias[..rows];
        let layer = Linear::<W8A16>::new(rows, cols, parts, &weights, q, with_bias.then_some(bias)).unwrap();
        let mut out = vec![0i32; rows];
        layer.apply(&xs, &mut out).unwrap();
        for (r, &o) in out.iter().enumerate() {
            let mut acc: i128 = if with_bias { bias[r] as i128 } else { 0 };
            let mut inexact = 0;
            for p in 0..planes {
                let wp = &weights[(r * planes + p) * cols..][..cols];
                let mut off = 0;
                for (k, part) in xs.iter().enumerate() {
                    let d = dot_exact(&wp[off..off + part.len()], part);
                    off += part.len();
                    if i32::try_from(d).is_err() {
                        inexact += 1;
                    }
                    acc = sat32(acc + requant_exact(d, q[(r * planes + p) * parts + k]) as i128) as i128;
                }
            }
            let diff = (o as i128 - acc).abs();
            prop_assert!(diff <= inexact, "row {r}: {o} vs exact {acc} ({inexact} long terms)");
        }
    }

    #[test]
    fn embed_is_exact_then_saturated(
        codes in prop::collection::vec(weight(), 2 * 64),
        q in prop::collection::vec(requant(), 2),
        planes in 1usize..=2,
        cols in 1usize..=64,
    ) {
        let w = &codes[..planes * cols];
        let q = &q[..planes];
        let table = Linear::<W8A16>::new(1, cols, 1, w, q, None).unwrap();
        let mut out = vec![0i16; cols];
        table.embed(0, &mut out).unwrap();
        for (j, &o) in out.iter().enumerate() {
            let mut acc = 0i128;
            for p in 0..planes {
                acc = sat32(acc + requant_exact(w[p * cols + j] as i128, q[p]) as i128) as i128;
            }
            prop_assert_eq!(o, sat16(acc));
        }
    }
}

// ---- local-p's predicted position and Gaussian ----------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// At every position, centre, half-width and weight (past the ends of their ranges
    /// too), W8A16's predicted position is exact, its nearest position the rounded
    /// real one, and its Gaussian within 2^-13 (and no more than the weight) of the
    /// real product, as is the f32 path's within 10^-4 (and `fast-math`'s exponential's
    /// relative error).
    #[test]
    fn local_p_position_and_gaussian_of_any_input(
        s in any::<i16>(),
        n in 0usize..70_000,
        i in 0usize..70_000,
        d in 0usize..300,
        w in any::<i16>(),
    ) {
        let p = W8A16::position(s, n);
        let exact = n.min(65_535) as i64 * i64::from(s.max(0));
        prop_assert_eq!(i64::from(p), exact);
        let real = exact as f64 / 32768.0;
        prop_assert_eq!(W8A16::nearest(p), (real + 0.5).floor() as usize);
        let g = W8A16::gaussian(w, i, p, d);
        let (wr, sigma) = (f64::from(w) / 32768.0, d.clamp(1, 65_535) as f64 / 2.0);
        let x = i.min(65_535) as f64 - real;
        let want = wr * (-x * x / (2.0 * sigma * sigma)).exp();
        prop_assert!((f64::from(g) / 32768.0 - want.max(0.0)).abs() <= 1.0 / 8192.0, "{g} vs {want}");
        prop_assert!((0..=i32::from(w).max(0)).contains(&i32::from(g)));
        // (The f32 path does not cap the position; with `fast-math`, within its
        // exponential's relative error.)
        let f = crate::F32::gaussian(wr as f32, i, real as f32, d);
        let x = i as f64 - real;
        let want = wr * (-x * x / (2.0 * sigma * sigma)).exp();
        let rel = f64::from(crate::float::MAX_REL_ERROR_EXP);
        prop_assert!((f64::from(f) - want).abs() <= 1e-4 + rel * want.abs());
    }
}

// ---- saturated wide values into the nonlinearities and the softmax --------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn tanh_and_sigmoid_of_any_wide_value(x in wide(), y in wide()) {
        let r = x as f64 / 32768.0;
        let t = tanh_q15(x);
        let s = sigmoid_q15(x);
        prop_assert!((t as f64 / 32768.0 - r.tanh()).abs() <= MAX_ERROR_TANH_Q15);
        prop_assert!((s as f64 / 32768.0 - 1.0 / (1.0 + (-r).exp())).abs() <= MAX_ERROR_SIGMOID_Q15);
        prop_assert!((-ONE_Q15..=ONE_Q15).contains(&t));
        prop_assert!((0..=ONE_Q15).contains(&s));
        // Odd, and sigmoid(-x) = 1 - sigmoid(x) within one unit.
        if x != i32::MIN {
            prop_assert_eq!(tanh_q15(-x), -t);
            prop_assert!((sigmoid_q15(-x) as i32 + s as i32 - 32768).abs() <= 1);
        }
        // Monotone.
        let (lo, hi) = (x.min(y), x.max(y));
        prop_assert!(tanh_q15(lo) <= tanh_q15(hi));
        prop_assert!(sigmoid_q15(lo) <= sigmoid_q15(hi));
        prop_assert!(exp_neg_q16(hi) <= exp_neg_q16(lo));
        prop_assert!(exp_neg_q16(x) <= 65536);
        prop_assert_eq!(W8A16::tanh(x), t);
        prop_assert_eq!(W8A16::sigmoid(x), s);
    }
}

/// Checks one softmax against the exact one: non-negative weights, each within
/// `1e-4` of exact, the sum within `n / 2 + 1` units of one.
fn check_softmax(x: &[i32]) -> Result<(), TestCaseError> {
    let n = x.len();
    let mut w = vec![-1i16; n];
    let sum = softmax_q15(x, &mut w);
    prop_assert!(sum >= 65536, "the largest score contributes one");
    let m = *x.iter().max().unwrap() as f64;
    let den: f64 = x.iter().map(|&v| ((v as f64 - m) / 32768.0).exp()).sum();
    let mut total = 0i64;
    for (&v, &wi) in x.iter().zip(&w) {
        prop_assert!(wi >= 0);
        let exact = ((v as f64 - m) / 32768.0).exp() / den;
        prop_assert!(
            (wi as f64 / 32768.0 - exact).abs() <= 1e-4,
            "{wi} vs {exact}"
        );
        total += wi as i64;
    }
    prop_assert!(
        (total - 32768).abs() <= n as i64 / 2 + 1,
        "sum {total} of {n}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn softmax_of_saturated_scores(x in prop::collection::vec(wide(), 1..=300)) {
        check_softmax(&x)?;
        prop_assert_eq!(
            { let mut a = vec![0i16; x.len()]; W8A16::softmax(&x, &mut a); a },
            { let mut b = vec![0i16; x.len()]; softmax_q15(&x, &mut b); b }
        );
    }
}

#[test]
fn softmax_at_its_longest_input() {
    // 32768 equal scores at either end: the sum reaches 2^31 and stays in u32.
    for v in [i32::MAX, i32::MIN, 0] {
        let x = vec![v; 1 << 15];
        let mut w = vec![0i16; 1 << 15];
        assert_eq!(softmax_q15(&x, &mut w), 1 << 31);
        assert!(w.iter().all(|&v| v == 1));
    }
    // One winner among the rest at i32::MIN.
    let mut x = vec![i32::MIN; 1 << 15];
    x[123] = i32::MAX;
    check_softmax(&x).unwrap();
    // Beyond 32768 elements only the first 32768 are written (documented limit).
    let x = vec![0; (1 << 15) + 5];
    let mut w = vec![-7i16; x.len()];
    softmax_q15(&x, &mut w);
    assert!(w[..1 << 15].iter().all(|&v| v == 1));
    assert!(w[1 << 15..].iter().all(|&v| v == -7));
}

// ---- inputs outside what the quantizer writes -------------------------------------
//
// A model file may hold them: the kernels must neither panic nor wrap.

/// `-128` weights: 511 products of `-128 * -32768` still fit `i32`, 512 would make
/// exactly `2^31` (before `I32_EXACT_RUN` became 511 this overflowed: a panic with
/// overflow checks, a wrong sign without, i.e. debug and release disagreed).
#[test]
fn dot_i8_i16_with_minus_128_weights() {
    for n in [511, 512, 1022, 1023, 2048] {
        let (w, x) = (vec![-128i8; n], vec![i16::MIN; n]);
        assert_eq!(dot_i8_i16(&w, &x) as i128, dot_exact(&w, &x), "{n}");
        let layer = Linear::<W8A16>::new(1, n, 1, &w, &[Requant::ONE], None).unwrap();
        let mut out = [0i32];
        layer.apply(&[&x], &mut out).unwrap();
        assert_eq!(out[0], sat32(dot_exact(&w, &x)), "{n}");
    }
}

/// A negative row shift (which `Requant::is_valid` rejects, and which the quantizer
/// never writes) on a part longer than `I32_EXACT_RUN`: `requant_i64` used to compute
/// `clamp(0, shift)`, which panics when `shift < 0`.
#[test]
fn linear_with_an_invalid_row_requantizer_does_not_panic() {
    let (w, x) = (vec![127i8; 600], vec![i16::MAX; 600]);
    let q = [Requant {
        mult: 1 << 30,
        shift: -1,
    }];
    let layer = Linear::<W8A16>::new(1, 600, 1, &w, &q, None).unwrap();
    let mut out = [0i32];
    layer.apply(&[&x], &mut out).unwrap();
    assert_eq!(out[0], i32::MAX);
}

/// The `fast-math` f32 functions on grids ten times finer than `float.rs`'s own test
/// (the maxima `docs/NUMERICS.md` quotes), within the constants of `float.rs`.
#[cfg(feature = "fast-math")]
#[test]
fn fast_math_errors_on_a_fine_grid() {
    use crate::float::{exp, sigmoid, tanh, MAX_ERROR_SIGMOID, MAX_ERROR_TANH, MAX_REL_ERROR_EXP};
    let grid =
        |lo: f32, hi: f32, n: usize| (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32);
    let mut worst = [0.0f32; 3];
    for x in grid(-20.0, 10.0, 300_000) {
        let r = libm::expf(x);
        worst[0] = worst[0].max((exp(x) - r).abs() / r);
    }
    for x in grid(-20.0, 20.0, 400_000) {
        worst[1] = worst[1].max((tanh(x) - libm::tanhf(x)).abs());
        worst[2] = worst[2].max((sigmoid(x) - 1.0 / (1.0 + libm::expf(-x))).abs());
    }
    eprintln!(
        "fast-math: max relative error exp {:.4e}, max error tanh {:.4e}, sigmoid {:.4e}",
        worst[0], worst[1], worst[2]
    );
    assert!(worst[0] <= MAX_REL_ERROR_EXP);
    assert!(worst[1] <= MAX_ERROR_TANH);
    assert!(worst[2] <= MAX_ERROR_SIGMOID);
}

/// micromath's exp (the `fast-math` feature) fails for arguments in about
/// `[88.72, 89.42]`; `float::exp` clamps before it, so the sigmoid stays finite with
/// and without the feature.
#[test]
fn f32_sigmoid_is_finite_everywhere() {
    let mut x = -200.0f32;
    while x < 200.0 {
        let s = crate::float::sigmoid(x);
        assert!((0.0..=1.0).contains(&s), "sigmoid({x}) = {s}");
        x += 0.001;
    }
}

/// Every `Q16.15` input in `[-40, 40]` (beyond, all three are saturated or zero and
/// within `2^-15` of exact): the largest errors of the tables against f64, which
/// `docs/NUMERICS.md` quotes, are within the constants of `lut.rs`.
#[test]
fn lut_errors_over_every_input() {
    let (mut et, mut es, mut ee) = ((0.0f64, 0i32), (0.0f64, 0i32), (0.0f64, 0i32));
    for x in -(40i32 << 15)..=(40i32 << 15) {
        let r = x as f64 / 32768.0;
        let e = (tanh_q15(x) as f64 / 32768.0 - r.tanh()).abs();
        if e > et.0 {
            et = (e, x);
        }
        let e = (sigmoid_q15(x) as f64 / 32768.0 - 1.0 / (1.0 + (-r).exp())).abs();
        if e > es.0 {
            es = (e, x);
        }
        if x >= 0 {
            let e = (exp_neg_q16(x) as f64 / 65536.0 - (-r).exp()).abs();
            if e > ee.0 {
                ee = (e, x);
            }
        }
    }
    let at = |x: i32| x as f64 / 32768.0;
    eprintln!(
        "lut: max error tanh {:.4e} (at {}), sigmoid {:.4e} (at {}), exp {:.4e} (at {})",
        et.0,
        at(et.1),
        es.0,
        at(es.1),
        ee.0,
        at(ee.1)
    );
    assert!(et.0 <= MAX_ERROR_TANH_Q15);
    assert!(es.0 <= MAX_ERROR_SIGMOID_Q15);
    assert!(ee.0 <= crate::lut::MAX_ERROR_EXP_Q16);
}
