//! f32 kernels: elementary functions, dot products, softmax, argmax.
//!
//! Every dot product is a plain sequential sum `acc = acc + w[k] * x[k]` in index order,
//! with a separate multiply and add (Rust never fuses them). That order is the contract
//! of the f32 path: an implementation that vectorises across rows or across sequences
//! (the host's batched runner) keeps it per element and gives the same bits.

/// Largest absolute error of [`exp`] against `libm::expf` relative to the result, over
/// `[-20, 10]`, with the `fast-math` feature (0 without it). Checked by a test.
pub const MAX_REL_ERROR_EXP: f32 = if cfg!(feature = "fast-math") {
    2.4e-3
} else {
    0.0
};
/// Largest absolute error of [`tanh`] against `libm::tanhf` over `[-20, 20]`.
pub const MAX_ERROR_TANH: f32 = if cfg!(feature = "fast-math") {
    1.1e-3
} else {
    0.0
};
/// Largest absolute error of [`sigmoid`] against `1 / (1 + libm::expf(-x))` over `[-20, 20]`.
pub const MAX_ERROR_SIGMOID: f32 = if cfg!(feature = "fast-math") {
    5.4e-4
} else {
    0.0
};

/// `e^x`.
#[inline]
pub fn exp(x: f32) -> f32 {
    #[cfg(feature = "fast-math")]
    {
        // micromath's exp overflows internally just below f32's own limit.
        if x > 88.5 {
            f32::INFINITY
        } else if x < -87.0 {
            0.0
        } else {
            micromath::F32Ext::exp(x)
        }
    }
    #[cfg(not(feature = "fast-math"))]
    {
        libm::expf(x)
    }
}

/// Hyperbolic tangent.
#[inline]
pub fn tanh(x: f32) -> f32 {
    #[cfg(feature = "fast-math")]
    {
        // tanh(x) = 1 - 2 / (e^{2x} + 1), clamped where e^{2x} over- or underflows.
        if x > 9.0 {
            1.0
        } else if x < -9.0 {
            -1.0
        } else {
            1.0 - 2.0 / (exp(2.0 * x) + 1.0)
        }
    }
    #[cfg(not(feature = "fast-math"))]
    {
        libm::tanhf(x)
    }
}

/// Logistic sigmoid `1 / (1 + e^-x)`.
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// Natural logarithm (used for entropies and log-softmax; never on the integer path).
#[inline]
pub fn ln(x: f32) -> f32 {
    libm::logf(x)
}

/// Dot product of two slices (extra elements of the longer one are ignored), summed
/// sequentially onto `acc`.
#[inline]
pub fn dot_acc(mut acc: f32, a: &[f32], b: &[f32]) -> f32 {
    for (x, y) in a.iter().zip(b) {
        acc += x * y;
    }
    acc
}

/// Dot product of two slices, summed sequentially from zero.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_acc(0.0, a, b)
}

/// Dot product of int8 weights (converted exactly to f32) with f32 activations, summed
/// sequentially onto `acc`; the caller applies the row scale.
#[inline]
pub fn dot_i8_acc(mut acc: f32, w: &[i8], x: &[f32]) -> f32 {
    for (p, q) in w.iter().zip(x) {
        acc += f32::from(*p) * q;
    }
    acc
}

/// Index of the first largest element; `None` when there is none (empty, or all NaN).
/// NaN is never the largest.
pub fn argmax<T: PartialOrd + Copy>(x: &[T]) -> Option<usize> {
    let mut best: Option<(usize, T)> = None;
    for (i, &v) in x.iter().enumerate() {
        let is_nan = v.partial_cmp(&v).is_none();
        if !is_nan && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// [`argmax`] leaving index `skip` out (a token that cannot be chosen at this step):
/// the first largest element of the others. Out of line: it serves a model's first
/// steps only.
#[inline(never)]
pub fn argmax_but<T: PartialOrd + Copy>(x: &[T], skip: usize) -> Option<usize> {
    let mut best: Option<(usize, T)> = None;
    for (i, &v) in x.iter().enumerate() {
        let is_nan = v.partial_cmp(&v).is_none();
        if i != skip && !is_nan && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Numerically stable softmax: `out_i = e^(x_i - max) / sum_j e^(x_j - max)`.
///
/// Writes `min(x.len(), out.len())` elements and returns the denominator
/// `sum_j e^(x_j - max)`. An empty input writes nothing and returns 0.
pub fn softmax(x: &[f32], out: &mut [f32]) -> f32 {
    let n = x.len().min(out.len());
    let Some(max) = x[..n].iter().copied().reduce(f32::max) else {
        return 0.0;
    };
    let mut sum = 0.0;
    for (o, &v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = exp(v - max);
        sum += *o;
    }
    let inv = 1.0 / sum;
    for o in &mut out[..n] {
        *o *= inv;
    }
    sum
}

/// Numerically stable log-softmax: `out_i = x_i - max - ln(sum_j e^(x_j - max))`.
pub fn log_softmax(x: &[f32], out: &mut [f32]) {
    let n = x.len().min(out.len());
    let Some(max) = x[..n].iter().copied().reduce(f32::max) else {
        return;
    };
    let sum: f32 = x[..n].iter().map(|&v| exp(v - max)).sum();
    let log_sum = ln(sum);
    for (o, &v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v - max - log_sum;
    }
}

/// Entropy `-sum_i p_i ln p_i` in nats of a probability vector (zeros contribute 0).
pub fn entropy(p: &[f32]) -> f32 {
    -p.iter()
        .filter(|&&v| v > 0.0)
        .map(|&v| v * ln(v))
        .sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
    }

    #[test]
    fn elementary_functions_within_stated_error_of_libm() {
        let mut worst = [0.0f32; 3];
        for x in grid(-20.0, 10.0, 30_000) {
            let r = libm::expf(x);
            worst[0] = worst[0].max((exp(x) - r).abs() / r);
        }
        for x in grid(-20.0, 20.0, 40_000) {
            worst[1] = worst[1].max((tanh(x) - libm::tanhf(x)).abs());
            let s = 1.0 / (1.0 + libm::expf(-x));
            worst[2] = worst[2].max((sigmoid(x) - s).abs());
        }
        assert!(worst[0] <= MAX_REL_ERROR_EXP, "exp: {}", worst[0]);
        assert!(worst[1] <= MAX_ERROR_TANH, "tanh: {}", worst[1]);
        assert!(worst[2] <= MAX_ERROR_SIGMOID, "sigmoid: {}", worst[2]);
    }

    #[test]
    fn dot_matches_naive_sum_closely_and_handles_remainders() {
        for n in [0, 1, 7, 8, 9, 31, 256] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot(&a, &b) as f64 - naive).abs() < 1e-4, "n={n}");
            let w: Vec<i8> = (0..n).map(|i| (i % 255 - 127) as i8).collect();
            let naive: f64 = w.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!(
                (dot_i8_acc(0.0, &w, &b) as f64 - naive).abs() < 1e-2,
                "n={n}"
            );
        }
    }

    #[test]
    fn argmax_takes_first_maximum_and_skips_nan() {
        assert_eq!(argmax::<f32>(&[]), None);
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), Some(1));
        assert_eq!(argmax(&[f32::NAN, 1.0, 0.5]), Some(1));
        assert_eq!(argmax(&[0.5, f32::NAN, 1.0]), Some(2));
        assert_eq!(argmax(&[-4i32, -2, -2]), Some(1));
    }

    #[test]
    fn argmax_but_is_the_first_maximum_of_the_others() {
        // Every index left out (and one past the end) of rows with ties and NaN, against
        // the first maximum of the rest.
        let rows: [&[f32]; 5] = [
            &[1.0, 3.0, 3.0, 2.0],
            &[3.0, 1.0, 3.0],
            &[f32::NAN, 1.0, 0.5],
            &[2.0],
            &[],
        ];
        for x in rows {
            for skip in 0..=x.len() + 1 {
                let want = (0..x.len()).filter(|&i| i != skip && !x[i].is_nan()).fold(
                    None,
                    |b: Option<usize>, i| match b {
                        Some(j) if x[j] >= x[i] => Some(j),
                        _ => Some(i),
                    },
                );
                assert_eq!(argmax_but(x, skip), want, "{x:?} without {skip:?}");
            }
        }
    }

    #[test]
    fn softmax_is_stable_and_sums_to_one() {
        let x = [1000.0, 1001.0, 999.0];
        let mut p = [0.0; 3];
        softmax(&x, &mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(p[1] > p[0] && p[0] > p[2]);
        let mut lp = [0.0; 3];
        log_softmax(&x, &mut lp);
        for i in 0..3 {
            let tol = 1e-6 + 2.0 * MAX_REL_ERROR_EXP;
            assert!((lp[i].exp() - p[i]).abs() < tol);
        }
    }
}
