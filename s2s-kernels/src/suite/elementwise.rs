//! The suite's element-wise primitives: the nonlinearities ([`sigmoid`], [`tanh`],
//! [`hard_sigmoids`]), [`add`], [`gate`], [`blend`], [`widen_narrow`] and the LSTM
//! [`cell_update`].

use super::check::{cast, same_bits, twin_name, verdict};
use super::fixture::{Act, Fixture, Rng, Wide};
use super::tolerances::*;
use crate::{Fmt, Precision};

/// Wide inputs of the nonlinearities: a grid over `[-20, 20]`, random values up to
/// `±1000`, and the ends of the wide range (made one by one: no buffer).
fn nonlinearity_inputs<F: Fixture>() -> impl Iterator<Item = Wide<F>> {
    let mut rng = Rng::new(0x33);
    (0..=80_000)
        .map(|i| F::wide(-20.0 + i as f64 / 2000.0))
        .chain((0..10_000).map(move |_| F::wide(rng.uniform(-1000.0, 1000.0))))
        .chain([-65536.0, -65535.99, 65535.99, 65536.0].map(F::wide))
}

fn nonlinearity<F: Fixture, R: Precision>(
    what: &str,
    (tol, range): (f64, f64),
    exact: bool,
    f: impl Fn(Wide<F>) -> Act<F>,
    g: impl Fn(R::Wide) -> R::Act,
    reference: impl Fn(f64) -> f64,
) {
    let mut worst = 0.0f64;
    for (i, x) in nonlinearity_inputs::<F>().enumerate() {
        if F::wide_real(x).abs() > range {
            continue;
        }
        let y = f(x);
        let e = (F::act_real(y, Fmt::Q15) - reference(F::wide_real(x))).abs();
        worst = worst.max(e);
        if exact {
            let y2 = g(cast(x));
            assert!(same_bits(&[y], &[y2]), "{what} input {i}: not bit-exact");
        }
    }
    verdict::<F>(what, worst, tol, twin_name::<R>(exact));
}

/// `sigmoid` of wide values over the whole wide range.
pub fn sigmoid<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "sigmoid",
        (tol.sigmoid, tol.nonlinearity_range),
        exact,
        F::P::sigmoid,
        R::sigmoid,
        |x| 1.0 / (1.0 + libm::exp(-x)),
    );
}

/// `tanh` of wide values over the whole wide range.
pub fn tanh<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "tanh",
        (tol.tanh, tol.nonlinearity_range),
        exact,
        F::P::tanh,
        R::tanh,
        libm::tanh,
    );
}

/// `add` of wide values.
pub fn add<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x44);
    let mut worst = 0.0f64;
    for _ in 0..20_000 {
        let (a, b) = (
            F::wide(rng.uniform(-100.0, 100.0)),
            F::wide(rng.uniform(-100.0, 100.0)),
        );
        let y = F::P::add(a, b);
        let e = (F::wide_real(y) - (F::wide_real(a) + F::wide_real(b))).abs();
        worst = worst.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::add(cast(a), cast(b))]));
        }
    }
    verdict::<F>("add", worst, tol.add, twin_name::<R>(exact));
}

/// `gate` and `gate_act`: unit values times wide values and unit values.
pub fn gate<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x55);
    let (mut w1, mut w2) = (0.0f64, 0.0f64);
    for _ in 0..20_000 {
        let u = F::act(rng.unit(), Fmt::Q15);
        let x = F::wide(rng.uniform(-64.0, 64.0));
        let y = F::P::gate(u, x);
        let e = (F::wide_real(y) - F::act_real(u, Fmt::Q15) * F::wide_real(x)).abs();
        w1 = w1.max(e);
        let v = F::act(rng.uniform(-1.0, 1.0), Fmt::Q15);
        let z = F::P::gate_act(u, v);
        let e =
            (F::act_real(z, Fmt::Q15) - F::act_real(u, Fmt::Q15) * F::act_real(v, Fmt::Q15)).abs();
        w2 = w2.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::gate(cast(u), cast(x))]));
            assert!(same_bits(&[z], &[R::gate_act(cast(u), cast(v))]));
        }
    }
    verdict::<F>("gate", w1, tol.gate, twin_name::<R>(exact));
    verdict::<F>("gate_act", w2, tol.gate_act, twin_name::<R>(exact));
}

/// `blend`, the GRU update, unit values at the ends included.
pub fn blend<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x66);
    let mut worst = 0.0f64;
    let q = Fmt::Q15;
    for i in 0..50_000 {
        // The ends of the unit range included.
        let z = match i % 100 {
            0 => F::act(0.0, q),
            1 => F::act(1.0, q),
            _ => F::act(rng.unit(), q),
        };
        let h = F::act(rng.uniform(-1.0, 1.0), q);
        let n = F::act(
            if i % 7 == 0 {
                -1.0
            } else {
                rng.uniform(-1.0, 1.0)
            },
            q,
        );
        let y = F::P::blend(z, h, n);
        let (zr, hr, nr) = (F::act_real(z, q), F::act_real(h, q), F::act_real(n, q));
        let e = (F::act_real(y, q) - ((1.0 - zr) * nr + zr * hr)).abs();
        worst = worst.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::blend(cast(z), cast(h), cast(n))]));
        }
    }
    verdict::<F>("blend", worst, tol.blend, twin_name::<R>(exact));
}

/// `widen` of every activation of every format `Q(15-f).f` is exact, and `narrow` gives
/// it back; `narrow` of wide values in range rounds to [`NARROW_FMT`].
pub fn widen_narrow<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x77);
    let mut worst = (0.0f64, 0.0f64);
    for frac in 0..=15 {
        let f = Fmt { frac };
        let r = pow2(15 - frac as i32);
        for i in 0..4000 {
            let x = if i == 0 { -r } else { rng.uniform(-r, r) };
            let a = F::act(x, f);
            let w = F::P::widen(a, f);
            worst.0 = worst.0.max((F::wide_real(w) - F::act_real(a, f)).abs());
            let back = F::P::narrow(w, f);
            assert_eq!(back, a, "narrow(widen({a:?}, {f:?}))");
            if exact {
                assert!(same_bits(&[w], &[R::widen(cast(a), f)]));
            }
        }
    }
    for _ in 0..50_000 {
        let x = F::wide(rng.uniform(-7.99, 7.99));
        let a = F::P::narrow(x, NARROW_FMT);
        worst.1 = worst
            .1
            .max((F::act_real(a, NARROW_FMT) - F::wide_real(x)).abs());
        if exact {
            assert!(same_bits(&[a], &[R::narrow(cast(x), NARROW_FMT)]));
        }
    }
    verdict::<F>("widen", worst.0, tol.widen, twin_name::<R>(exact));
    verdict::<F>("narrow", worst.1, tol.narrow, twin_name::<R>(exact));
}

/// `hard_sigmoid_keras2` and `hard_sigmoid_keras3` over the nonlinearities' inputs.
pub fn hard_sigmoids<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "hard_sigm_k2",
        (tol.hard_sigmoid_keras2, f64::INFINITY),
        exact,
        F::P::hard_sigmoid_keras2,
        R::hard_sigmoid_keras2,
        |x| (0.2 * x + 0.5).clamp(0.0, 1.0),
    );
    nonlinearity::<F, R>(
        "hard_sigm_k3",
        (tol.hard_sigmoid_keras3, f64::INFINITY),
        exact,
        F::P::hard_sigmoid_keras3,
        R::hard_sigmoid_keras3,
        |x| (x / 6.0 + 0.5).clamp(0.0, 1.0),
    );
}

/// `cell_update` on random operands in range (the ends of the unit range included);
/// saturation at the ends of the cell format, where the precision has one, must keep
/// the sign.
pub fn cell_update<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xBB);
    let mut worst = 0.0f64;
    let q = Fmt::Q15;
    for k in 0..50_000 {
        let f = F::act(if k % 97 == 0 { 1.0 } else { rng.unit() }, q);
        let i = F::act(if k % 89 == 0 { 1.0 } else { rng.unit() }, q);
        let g = F::act(rng.uniform(-1.0, 1.0), q);
        let c = F::act(rng.uniform(-6.0, 6.0), CELL_FMT);
        let y = F::P::cell_update(f, c, i, g, CELL_FMT);
        let want =
            F::act_real(f, q) * F::act_real(c, CELL_FMT) + F::act_real(i, q) * F::act_real(g, q);
        worst = worst.max((F::act_real(y, CELL_FMT) - want).abs());
        if exact {
            let y2 = R::cell_update(cast(f), cast(c), cast(i), cast(g), CELL_FMT);
            assert!(same_bits(&[y], &[y2]), "cell_update: not bit-exact");
        }
    }
    // Pushed past the top and the bottom of the format: never wraps.
    let top = F::act(7.99, CELL_FMT);
    let up = F::P::cell_update(
        F::act(1.0, q),
        top,
        F::act(1.0, q),
        F::act(1.0, q),
        CELL_FMT,
    );
    assert!(
        F::act_real(up, CELL_FMT) >= 7.99,
        "cell_update wrapped at the top"
    );
    let bottom = F::act(-8.0, CELL_FMT);
    let down = F::P::cell_update(
        F::act(1.0, q),
        bottom,
        F::act(1.0, q),
        F::act(-1.0, q),
        CELL_FMT,
    );
    assert!(
        F::act_real(down, CELL_FMT) <= -7.99,
        "cell_update wrapped at the bottom"
    );
    verdict::<F>("cell_update", worst, tol.cell_update, twin_name::<R>(exact));
}
