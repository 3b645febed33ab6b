//! The suite's dense layers: [`linear`] (and `linear_batch`), [`wide_layers`] (wide
//! layers in batches), [`embed`], and [`layouts`], every weight layout against the row
//! layout.

use alloc::vec;
use alloc::vec::Vec;

use super::check::{input_range, random_shape, same_bits, say, twin_name, verdict, verdict_rel};
use super::fixture::{Act, Fixture, IntFixture, OwnedLayer, Rng, Wide};
use super::tolerances::*;
use crate::{Fmt, Job, Layout, Linear, Precision, Requant};

/// Every output row of `layer` on `x` against the f64 reference from the layer's
/// dequantized weights and bias, within `tol`'s linear tolerance; the worst absolute,
/// relative and bound-relative errors go into `worst`. The first row over its bound is
/// the error.
fn against_reference<F: Fixture>(
    layer: &OwnedLayer<F::P>,
    parts: &[(usize, Fmt)],
    x: &[&[Act<F>]],
    out: &[Wide<F>],
    tol: &Tolerances,
    worst: &mut (f64, f64, f64),
) -> Result<(), usize> {
    let cols: usize = parts.iter().map(|p| p.0).sum();
    let xr: Vec<f64> = parts
        .iter()
        .zip(x)
        .flat_map(|(&(_, f), v)| v.iter().map(move |&a| F::act_real(a, f)))
        .collect();
    for (r, &o) in out.iter().enumerate() {
        let (mut y, mut mag) = (layer.deq_bias[r], 0.0f64);
        for (k, &xk) in xr.iter().enumerate() {
            let t = layer.deq[r * cols + k] * xk;
            y += t;
            mag += t.abs();
        }
        let e = (F::wide_real(o) - y).abs();
        let bound = tol.linear_abs + tol.linear_rel * mag;
        if e > bound {
            return Err(r);
        }
        *worst = (
            worst.0.max(e),
            worst.1.max(e / mag.max(f64::MIN_POSITIVE)),
            worst.2.max(e / bound),
        );
    }
    Ok(())
}

/// `linear` on random layers: 1-2 input parts, 1-2 planes (as the precision allows),
/// with and without bias; every 20th layer has parts longer than `I32_EXACT_RUN`. Also
/// `linear_batch` (through `Linear::apply_batch`), which must give every output exactly
/// as `linear`.
pub fn linear<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    let mut rng = Rng::new(0x11);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for case in 0..300 {
        let long = case % 20 == 0;
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (rows, parts) = random_shape(&mut rng, scale, long, 2);
        let cols: usize = parts.iter().map(|p| p.0).sum();
        let a = 2.0 / libm::sqrt(cols as f64);
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-a, a)).collect();
        let bias: Option<Vec<f64>> =
            (case % 2 == 0).then(|| (0..rows).map(|_| rng.uniform(-2.0, 2.0)).collect());
        let layer = F::layer(rows, &parts, planes, &w, bias.as_deref(), false);
        drop(w); // the layer's `deq` is the reference's weights (a board's heap is small)
        let xs: Vec<Vec<Act<F>>> = parts
            .iter()
            .map(|&(len, f)| {
                let r = input_range(f);
                (0..len).map(|_| F::act(rng.uniform(-r, r), f)).collect()
            })
            .collect();
        let x: Vec<&[Act<F>]> = xs.iter().map(|v| v.as_slice()).collect();
        let mut out = vec![Wide::<F>::default(); rows];
        layer.linear().apply(&x, &mut out).expect("shapes");
        if let Err(r) = against_reference::<F>(&layer, &parts, &x, &out, tol, &mut worst) {
            panic!("linear case {case} row {r}: error above the tolerance");
        }
        // `linear_batch` gives every output exactly as `linear` does: the same input
        // and two others (scaled copies) in one batch.
        let others: Vec<Vec<Vec<Act<F>>>> = [0.5, -1.0]
            .iter()
            .map(|&k| {
                parts
                    .iter()
                    .zip(&xs)
                    .map(|(&(_, f), v)| {
                        v.iter()
                            .map(|&a| F::act(k * F::act_real(a, f), f))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let inputs: Vec<Vec<&[Act<F>]>> = core::iter::once(x.clone())
            .chain(
                others
                    .iter()
                    .map(|o| o.iter().map(|v| v.as_slice()).collect()),
            )
            .collect();
        let mut outs = vec![vec![Wide::<F>::default(); rows]; inputs.len()];
        {
            let mut jobs: Vec<Job<'_, F::P>> = inputs
                .iter()
                .zip(outs.iter_mut())
                .map(|(x, out)| Job { x, out })
                .collect();
            layer.linear().apply_batch(&mut jobs).expect("shapes");
        }
        for (xi, bo) in inputs.iter().zip(&outs) {
            let mut one = vec![Wide::<F>::default(); rows];
            layer.linear().apply(xi, &mut one).expect("shapes");
            assert!(
                same_bits(&one, bo),
                "linear_batch case {case}: not as linear"
            );
        }
        if exact {
            let x2: Vec<&[R::Act]> = x.iter().map(|p| bytemuck::cast_slice(p)).collect();
            let mut o2 = vec![R::Wide::default(); rows];
            layer.linear_as::<R>().apply(&x2, &mut o2).expect("shapes");
            assert!(same_bits(&out, &o2), "linear case {case}: not bit-exact");
            let inputs2: Vec<Vec<&[R::Act]>> = inputs
                .iter()
                .map(|x| x.iter().map(|p| bytemuck::cast_slice(p)).collect())
                .collect();
            let mut outs2 = vec![vec![R::Wide::default(); rows]; inputs.len()];
            let mut jobs: Vec<Job<'_, R>> = inputs2
                .iter()
                .zip(outs2.iter_mut())
                .map(|(x, out)| Job { x, out })
                .collect();
            layer
                .linear_as::<R>()
                .apply_batch(&mut jobs)
                .expect("shapes");
            drop(jobs);
            for (a, b) in outs.iter().zip(&outs2) {
                assert!(same_bits(a, b), "linear_batch case {case}: not bit-exact");
            }
        }
    }
    verdict_rel::<F>(
        "linear",
        worst,
        (tol.linear_abs, tol.linear_rel),
        twin_name::<R>(exact),
    );
}

/// `linear_batch` on wide layers: 17 to 100 rows (more than [`linear`]'s 16, so that an
/// implementation that blocks rows by 8, 16 or 32 runs whole blocks and their tails), 1-2
/// input parts of 1-95 columns, 1-2 planes, batches of 1 to 12 inputs (more than one
/// pass of 8 lanes), some of them repeated, every batch applied twice (a second pass
/// may come from a cache). Every output within `linear`'s tolerance, the same bits both
/// times, and, when `exact`, `R`'s bits. Not in [`run_all`](super::run_all): it holds
/// the host's batched kernels to the suite; the devices run [`linear`].
pub fn wide_layers<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    let mut rng = Rng::new(0x1B);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for case in 0..60 {
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (_, parts) = random_shape(&mut rng, scale, false, 2);
        let rows = rng.range(17, 100);
        let cols: usize = parts.iter().map(|p| p.0).sum();
        let a = 2.0 / libm::sqrt(cols as f64);
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-a, a)).collect();
        let bias: Option<Vec<f64>> =
            (case % 2 == 0).then(|| (0..rows).map(|_| rng.uniform(-2.0, 2.0)).collect());
        let layer = F::layer(rows, &parts, planes, &w, bias.as_deref(), false);
        drop(w);
        let n = rng.range(1, 12);
        let inputs: Vec<Vec<Vec<Act<F>>>> = (0..n)
            .map(|_| {
                parts
                    .iter()
                    .map(|&(len, f)| {
                        let r = input_range(f);
                        (0..len).map(|_| F::act(rng.uniform(-r, r), f)).collect()
                    })
                    .collect()
            })
            .collect();
        // Every third input is the first again.
        let inputs: Vec<&Vec<Vec<Act<F>>>> = inputs
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 3 == 2 { &inputs[0] } else { x })
            .collect();
        let xs: Vec<Vec<&[Act<F>]>> = inputs
            .iter()
            .map(|x| x.iter().map(|p| p.as_slice()).collect())
            .collect();
        let mut passes = [vec![vec![Wide::<F>::default(); rows]; n], vec![]];
        passes[1] = passes[0].clone();
        for outs in passes.iter_mut() {
            let mut jobs: Vec<Job<'_, F::P>> = xs
                .iter()
                .zip(outs.iter_mut())
                .map(|(x, out)| Job { x, out })
                .collect();
            layer.linear().apply_batch(&mut jobs).expect("shapes");
        }
        let [outs, again] = &passes;
        for (i, (x, out)) in xs.iter().zip(outs).enumerate() {
            assert!(
                same_bits(out, &again[i]),
                "wide_layers case {case} input {i}: not the same bits twice"
            );
            if let Err(r) = against_reference::<F>(&layer, &parts, x, out, tol, &mut worst) {
                panic!("wide_layers case {case} input {i} row {r}: error above the tolerance");
            }
            if exact {
                let x2: Vec<&[R::Act]> = x.iter().map(|p| bytemuck::cast_slice(p)).collect();
                let mut o2 = vec![R::Wide::default(); rows];
                layer.linear_as::<R>().apply(&x2, &mut o2).expect("shapes");
                assert!(
                    same_bits(out, &o2),
                    "wide_layers case {case} input {i}: not bit-exact"
                );
            }
        }
    }
    verdict_rel::<F>(
        "wide_layers",
        worst,
        (tol.linear_abs, tol.linear_rel),
        twin_name::<R>(exact),
    );
}

/// `embed` of every row of random tables with 1-2 planes.
pub fn embed<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    let mut rng = Rng::new(0x22);
    let mut worst = 0.0f64;
    for case in 0..100 {
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (rows, cols) = (rng.range(1, 20).min(scale.embed_rows), rng.range(1, 64));
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-6.0, 6.0)).collect();
        let table = F::layer(rows, &[(cols, EMBED_FMT)], planes, &w, None, true);
        drop(w);
        for r in 0..rows {
            let mut out = vec![Act::<F>::default(); cols];
            table.linear().embed(r, &mut out).expect("shapes");
            for (k, &o) in out.iter().enumerate() {
                let e = (F::act_real(o, EMBED_FMT) - table.deq[r * cols + k]).abs();
                worst = worst.max(e);
            }
            if exact {
                let mut o2 = vec![R::Act::default(); cols];
                table.linear_as::<R>().embed(r, &mut o2).expect("shapes");
                assert!(same_bits(&out, &o2), "embed case {case}: not bit-exact");
            }
        }
    }
    verdict::<F>("embed", worst, tol.embed, twin_name::<R>(exact));
}

/// The integer precisions' storage types (what [`layouts`] re-encodes).
pub trait IntPrecision:
    Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32, Scale = Requant>
{
}
impl<P> IntPrecision for P where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32, Scale = Requant>
{
}

/// Every weight [`Layout`](crate::Layout): `linear` (1-3 parts, 1-2 planes, parts longer than
/// `I32_EXACT_RUN` every 20th case, with and without bias, every third case with
/// arbitrary int8 codes, -128 included, and every seventh at the extremes of both
/// weights and inputs), `linear_batch`, `embed` and `additive_scores`, on weights
/// re-encoded in the layout and run by `P`, give exactly the bits of the same weights
/// in [`Layout::Row`] run by `R` (the portable kernels). The other arguments are the
/// suite's (no tolerance: exactness only).
pub fn layouts<P: IntPrecision, R: IntPrecision>(_: &Tolerances, _: bool, scale: &Scale) {
    let mut rng = Rng::new(0x1A);
    for case in 0..150 {
        let long = case % 20 == 0;
        let extreme = case % 7 == 0;
        let planes = rng.range(1, P::MAX_PLANES);
        let (rows, parts) = random_shape(&mut rng, scale, long, 3);
        let cols: usize = parts.iter().map(|p| p.0).sum();
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let bias: Option<Vec<f64>> =
            (case % 2 == 0).then(|| (0..rows).map(|_| rng.uniform(-2.0, 2.0)).collect());
        let mut layer = IntFixture::<R>::layer(rows, &parts, planes, &w, bias.as_deref(), false);
        drop(w);
        if extreme {
            layer.w.fill(i8::MIN);
        } else if case % 3 == 0 {
            for c in layer.w.iter_mut() {
                *c = rng.u64() as i8;
            }
        }
        let xs: Vec<Vec<i16>> = parts
            .iter()
            .map(|&(len, _)| {
                (0..len)
                    .map(|_| if extreme { i16::MIN } else { rng.u64() as i16 })
                    .collect()
            })
            .collect();
        let x: Vec<&[i16]> = xs.iter().map(|v| v.as_slice()).collect();
        let mut want = vec![0i32; rows];
        layer.linear().apply(&x, &mut want).expect("shapes");
        for layout in Layout::ALL {
            let stored: Vec<i8> = layer.w.iter().map(|&c| layout.store(c)).collect();
            let l = Linear::<P>::new(
                rows,
                cols,
                parts.len(),
                &stored,
                &layer.q,
                layer.bias.as_deref(),
            )
            .and_then(|l| l.with_layout(layout))
            .expect("shapes");
            let mut got = vec![0i32; rows];
            l.apply(&x, &mut got).expect("shapes");
            assert!(
                got == want,
                "layout {} linear case {case}: not as the row layout",
                layout as u8
            );
            let mut outs = [vec![0i32; rows], vec![0i32; rows]];
            let [o0, o1] = &mut outs;
            let mut jobs = [Job { x: &x, out: o0 }, Job { x: &x, out: o1 }];
            l.apply_batch(&mut jobs).expect("shapes");
            assert!(
                outs.iter().all(|o| *o == want),
                "layout {} linear_batch case {case}: not as the row layout",
                layout as u8
            );
        }
    }
    // Embedding tables.
    for case in 0..40 {
        let planes = rng.range(1, P::MAX_PLANES);
        let (rows, cols) = (rng.range(1, 20).min(scale.embed_rows), rng.range(1, 64));
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-6.0, 6.0)).collect();
        let table = IntFixture::<R>::layer(rows, &[(cols, EMBED_FMT)], planes, &w, None, true);
        drop(w);
        for layout in Layout::ALL {
            let stored: Vec<i8> = table.w.iter().map(|&c| layout.store(c)).collect();
            let t = Linear::<P>::new(rows, cols, 1, &stored, &table.q, None)
                .and_then(|l| l.with_layout(layout))
                .expect("shapes");
            for r in 0..rows {
                let (mut got, mut want) = (vec![0i16; cols], vec![0i16; cols]);
                t.embed(r, &mut got).expect("shapes");
                table.linear().embed(r, &mut want).expect("shapes");
                assert!(
                    got == want,
                    "layout {} embed case {case}: not as the row layout",
                    layout as u8
                );
            }
        }
    }
    // The attention's fused scores (`v` one row).
    for case in 0..60 {
        let planes = rng.range(1, P::MAX_PLANES);
        let (a, n) = (rng.range(1, 96), rng.range(1, 30));
        let vw: Vec<f64> = (0..a).map(|_| rng.uniform(-2.0, 2.0)).collect();
        let bias: Option<Vec<f64>> = (case % 2 == 0).then(|| vec![rng.uniform(-1.0, 1.0)]);
        let v = IntFixture::<R>::layer(1, &[(a, Fmt::Q15)], planes, &vw, bias.as_deref(), false);
        let q: Vec<i32> = (0..a)
            .map(|_| IntFixture::<R>::wide(rng.uniform(-6.0, 6.0)))
            .collect();
        let kf = KEY_FMTS[case % KEY_FMTS.len()];
        let r = input_range(kf);
        let keys: Vec<i16> = (0..n * a)
            .map(|_| IntFixture::<R>::act(rng.uniform(-r, r), kf))
            .collect();
        let (mut t, mut want) = (vec![0i16; a], vec![0i32; n]);
        R::additive_scores(&q, &keys, kf, &v.linear(), &mut t, &mut want).expect("shapes");
        for layout in Layout::ALL {
            let stored: Vec<i8> = v.w.iter().map(|&c| layout.store(c)).collect();
            let l = Linear::<P>::new(1, a, 1, &stored, &v.q, v.bias.as_deref())
                .and_then(|l| l.with_layout(layout))
                .expect("shapes");
            let mut got = vec![0i32; n];
            P::additive_scores(&q, &keys, kf, &l, &mut t, &mut got).expect("shapes");
            assert!(
                got == want,
                "layout {} additive_scores case {case}: not as the row layout",
                layout as u8
            );
        }
    }
    say!("layouts: every layout as the row layout, bit for bit");
}
