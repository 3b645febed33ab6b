//! The suite's verdicts and shared helpers: the measurements printed in the tests
//! (`say!`), the comparisons bit for bit, the error against its tolerance, the names
//! of the precisions, and the random layer shapes.

use alloc::vec::Vec;

use bytemuck::Pod;

use super::fixture::{Fixture, Rng};
use super::tolerances::{pow2, Scale, LINEAR_FMTS};
use crate::{Fmt, Precision};

/// Prints a measurement in the tests; on a board (no `std`, little flash) nothing. The
/// assertions' messages name the case in integers only, for the same reason: a failing
/// case is reproduced on the host, where the measurements are printed.
macro_rules! say {
    ($($t:tt)*) => {{
        #[cfg(test)]
        eprintln!($($t)*);
    }};
}
pub(super) use say;

/// The same bits, seen as another type of the same size.
pub(super) fn cast<A: Pod, B: Pod>(a: A) -> B {
    bytemuck::cast(a)
}

/// Whether two slices hold the same bits.
pub(super) fn same_bits<A: Pod, B: Pod>(a: &[A], b: &[B]) -> bool {
    bytemuck::cast_slice::<A, u8>(a) == bytemuck::cast_slice::<B, u8>(b)
}

/// Checks the largest error against its tolerance and prints both.
pub(super) fn verdict<F: Fixture>(what: &str, worst: f64, tol: f64, twin: Option<&str>) {
    let name = label::<F::P>();
    let (with, twin) = twin.map_or(("", ""), |r| (", bit-exact with ", r));
    say!("suite: {name:<14} {what:<13} max error {worst:.3e}  tolerance {tol:.3e}{with}{twin}");
    assert!(worst <= tol, "{name} {what}: error above the tolerance");
}

/// For the tolerances with a relative part: the largest absolute error and the largest
/// error relative to `sum |terms|`, against the two parts of the tolerance.
pub(super) fn verdict_rel<F: Fixture>(
    what: &str,
    worst: (f64, f64, f64),
    tol: (f64, f64),
    twin: Option<&str>,
) {
    let name = label::<F::P>();
    let (with, twin) = twin.map_or(("", ""), |r| (", bit-exact with ", r));
    say!(
        "suite: {name:<14} {what:<13} max error {:.3e} (max error / sum|terms| {:.3e}, max error / tolerance {:.3})  tolerance {:.3e} + {:.3e} sum|terms|{with}{twin}",
        worst.0, worst.1, worst.2, tol.0, tol.1
    );
    assert!(worst.2 <= 1.0, "{name} {what}: error above the tolerance");
}

pub(super) fn twin_name<R: Precision>(exact: bool) -> Option<&'static str> {
    exact.then(label::<R>)
}

/// A precision's name in the printed measurements: its kind, and `portable` for the
/// portable kernels' reference types.
pub(super) fn label<P: Precision>() -> &'static str {
    let portable = core::any::type_name::<P>().contains("Portable");
    match (P::KIND.name(), portable) {
        ("f32", true) => "f32 portable",
        ("w8a16", true) => "w8a16 portable",
        (name, _) => name,
    }
}

/// The largest input magnitude used for a part of format `f`.
pub(super) fn input_range(f: Fmt) -> f64 {
    (0.9 * pow2(15 - f.frac as i32)).min(4.0)
}

/// A random dense layer's shape: 1 to 15 rows (at most the scale's) and 1 to
/// `max_parts` input parts in random formats, of 1 to 95 columns each, or, for a `long`
/// case, of 517 to 1023 (longer than `I32_EXACT_RUN`; at most the scale's).
pub(super) fn random_shape(
    rng: &mut Rng,
    scale: &Scale,
    long: bool,
    max_parts: usize,
) -> (usize, Vec<(usize, Fmt)>) {
    let nparts = rng.range(1, max_parts);
    let rows = rng
        .range(1, 16)
        .min(if long { scale.long_rows } else { scale.rows });
    let parts = (0..nparts)
        .map(|_| {
            let len = if long {
                rng.range(517, 1024).min(scale.long_cols)
            } else {
                rng.range(1, 96)
            };
            (len, LINEAR_FMTS[rng.range(0, LINEAR_FMTS.len() - 1)])
        })
        .collect();
    (rows, parts)
}
