//! The suite's attention primitives: [`dot`], [`softmax`], [`weighted_sum`] and
//! [`additive_scores`].

use alloc::vec;
use alloc::vec::Vec;

#[cfg(test)]
use super::check::label;
use super::check::{input_range, same_bits, say, twin_name, verdict, verdict_rel};
use super::fixture::{Act, Fixture, Rng, Wide};
use super::tolerances::*;
use crate::{Fmt, Precision, Requant};

/// `dot`, the attention's scaled dot product, with and without `1 / sqrt(len)`.
pub fn dot<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x88);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    let (fa, fb) = DOT_FMTS;
    for case in 0..3000 {
        let n = rng.range(1, 256);
        let a: Vec<Act<F>> = (0..n).map(|_| F::act(rng.uniform(-4.0, 4.0), fa)).collect();
        let b: Vec<Act<F>> = (0..n).map(|_| F::act(rng.uniform(-1.0, 1.0), fb)).collect();
        let real = if case % 3 == 0 {
            1.0
        } else {
            1.0 / libm::sqrt(n as f64)
        };
        let q = Requant::from_real(real);
        let y = F::P::dot(&a, fa, &b, fb, F::P::scale(real as f32, q));
        let (mut d, mut mag) = (0.0f64, 0.0f64);
        for (&x, &z) in a.iter().zip(&b) {
            let t = F::act_real(x, fa) * F::act_real(z, fb);
            d += t;
            mag += t.abs();
        }
        let e = (F::wide_real(y) - real * d).abs();
        let bound = tol.dot_abs + tol.dot_rel * real * mag;
        assert!(e <= bound, "dot case {case}: error above the tolerance");
        worst = (
            worst.0.max(e),
            worst.1.max(e / (real * mag).max(f64::MIN_POSITIVE)),
            worst.2.max(e / bound),
        );
        if exact {
            let y2 = R::dot(
                bytemuck::cast_slice(&a),
                fa,
                bytemuck::cast_slice(&b),
                fb,
                R::scale(real as f32, q),
            );
            assert!(same_bits(&[y], &[y2]), "dot case {case}: not bit-exact");
        }
    }
    verdict_rel::<F>(
        "dot",
        worst,
        (tol.dot_abs, tol.dot_rel),
        twin_name::<R>(exact),
    );
}

/// `softmax` of 1-300 scores, its weights and their sum.
pub fn softmax<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x99);
    let (mut worst, mut worst_sum, mut worst_dev) = (0.0f64, 0.0f64, (0.0f64, 0.0f64));
    for case in 0..2000 {
        let n = if case % 50 == 0 {
            rng.range(100, 300)
        } else {
            rng.range(1, 64)
        };
        let spread = [0.1, 1.0, 4.0, 10.0, 20.0][case % 5];
        let x: Vec<Wide<F>> = (0..n)
            .map(|_| F::wide(rng.uniform(-spread, spread)))
            .collect();
        let mut out = vec![Act::<F>::default(); n];
        F::P::softmax(&x, &mut out);
        let xr: Vec<f64> = x.iter().map(|&v| F::wide_real(v)).collect();
        let m = xr.iter().copied().fold(f64::MIN, f64::max);
        let den: f64 = xr.iter().map(|v| libm::exp(v - m)).sum();
        let mut sum = 0.0;
        for (o, v) in out.iter().zip(&xr) {
            let w = F::act_real(*o, Fmt::Q15);
            worst = worst.max((w - libm::exp(v - m) / den).abs());
            sum += w;
        }
        let dev = (sum - 1.0).abs();
        assert!(
            dev <= tol.softmax_sum + tol.softmax_sum_per_element * n as f64,
            "softmax case {case}: the sum of {n} weights is off by more than the tolerance"
        );
        worst_sum = worst_sum.max(dev - tol.softmax_sum_per_element * n as f64);
        worst_dev = (worst_dev.0.max(dev), worst_dev.1.max(dev / n as f64));
        if exact {
            let mut o2 = vec![R::Act::default(); n];
            R::softmax(bytemuck::cast_slice(&x), &mut o2);
            assert!(same_bits(&out, &o2), "softmax case {case}: not bit-exact");
        }
    }
    verdict::<F>("softmax", worst, tol.softmax, twin_name::<R>(exact));
    say!(
        "suite: {:<14} softmax sum:  max |sum - 1| {:.3e}, max |sum - 1| / n {:.3e}",
        label::<F::P>(),
        worst_dev.0,
        worst_dev.1
    );
    // What is left of the deviation of the sum once the per-element part is taken.
    verdict::<F>("softmax sum", worst_sum.max(0.0), tol.softmax_sum, None);
}

/// `weighted_sum`, the attention's context.
pub fn weighted_sum<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xAA);
    let mut worst = 0.0f64;
    for case in 0..2000 {
        let (n, d) = (rng.range(1, 64), rng.range(1, 32));
        let raw: Vec<f64> = (0..n).map(|_| rng.unit()).collect();
        let total: f64 = raw.iter().sum::<f64>().max(1e-9);
        let w: Vec<Act<F>> = raw.iter().map(|v| F::act(v / total, Fmt::Q15)).collect();
        let rows: Vec<Act<F>> = (0..n * d)
            .map(|_| F::act(rng.uniform(-7.0, 7.0), WSUM_FMT))
            .collect();
        let mut out = vec![Act::<F>::default(); d];
        F::P::weighted_sum(&w, &rows, &mut out);
        for (j, &o) in out.iter().enumerate() {
            let y: f64 = (0..n)
                .map(|i| F::act_real(w[i], Fmt::Q15) * F::act_real(rows[i * d + j], WSUM_FMT))
                .sum();
            worst = worst.max((F::act_real(o, WSUM_FMT) - y).abs());
        }
        if exact {
            let mut o2 = vec![R::Act::default(); d];
            R::weighted_sum(
                bytemuck::cast_slice(&w),
                bytemuck::cast_slice(&rows),
                &mut o2,
            );
            assert!(
                same_bits(&out, &o2),
                "weighted_sum case {case}: not bit-exact"
            );
        }
    }
    verdict::<F>(
        "weighted_sum",
        worst,
        tol.weighted_sum,
        twin_name::<R>(exact),
    );
}

/// `additive_scores` (the attention's `v . tanh(q + k_i) + b` for every key at once)
/// against f64, on 500 random attentions.
pub fn additive_scores<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xBB);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for case in 0..500 {
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (a, n) = (rng.range(1, 96), rng.range(1, 30));
        let vw: Vec<f64> = (0..a).map(|_| rng.uniform(-2.0, 2.0)).collect();
        let bias: Option<Vec<f64>> = (case % 2 == 0).then(|| vec![rng.uniform(-1.0, 1.0)]);
        let v = F::layer(1, &[(a, Fmt::Q15)], planes, &vw, bias.as_deref(), false);
        let q: Vec<Wide<F>> = (0..a).map(|_| F::wide(rng.uniform(-6.0, 6.0))).collect();
        let kf = KEY_FMTS[case % KEY_FMTS.len()];
        let r = input_range(kf);
        let keys: Vec<Act<F>> = (0..n * a).map(|_| F::act(rng.uniform(-r, r), kf)).collect();
        let mut tanh = vec![Act::<F>::default(); a];
        let mut scores = vec![Wide::<F>::default(); n];
        F::P::additive_scores(&q, &keys, kf, &v.linear(), &mut tanh, &mut scores).expect("shapes");
        let mag: f64 = v.deq.iter().map(|w| w.abs()).sum();
        for (i, &e) in scores.iter().enumerate() {
            let mut y = v.deq_bias[0];
            for j in 0..a {
                let t = F::wide_real(q[j]) + F::act_real(keys[i * a + j], kf);
                y += v.deq[j] * libm::tanh(t);
            }
            let err = (F::wide_real(e) - y).abs();
            let bound = tol.additive_abs + tol.additive_rel * mag;
            assert!(
                err <= bound,
                "additive_scores case {case} key {i}: error above the tolerance"
            );
            worst = (
                worst.0.max(err),
                worst.1.max(err / mag.max(f64::MIN_POSITIVE)),
                worst.2.max(err / bound),
            );
        }
        if exact {
            let mut t2 = vec![R::Act::default(); a];
            let mut s2 = vec![R::Wide::default(); n];
            R::additive_scores(
                bytemuck::cast_slice(&q),
                bytemuck::cast_slice(&keys),
                kf,
                &v.linear_as::<R>(),
                &mut t2,
                &mut s2,
            )
            .expect("shapes");
            assert!(
                same_bits(&scores, &s2),
                "additive_scores case {case}: not bit-exact"
            );
        }
    }
    verdict_rel::<F>(
        "additive",
        worst,
        (tol.additive_abs, tol.additive_rel),
        twin_name::<R>(exact),
    );
}
