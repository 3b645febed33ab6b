//! The w8a16 precision the host runs w8a16 models at: [`HostW8A16`], every operation
//! [`W8A16`]'s except the dense layer, which gives the same integers by a faster route.
//!
//! The core's dense layer computes, per row, the bias, then for each weight plane and
//! each input part in that order the part's exact dot product `d` (an `i32`: a part
//! has at most [`I32_EXACT_RUN`] columns, so no partial sum can wrap, in any order)
//! requantized by that row, plane and part's [`Requant`], added with saturation. Here
//! the dot products are computed for [`LANES`] inputs at once on weights packed per
//! part in column pairs, rows side by side (`[pair][row][2]`, as `i16`), so that one
//! `pmaddwd` advances 16 (AVX-512) or 8 (AVX2) rows by two columns for one input, each
//! weight load shared by the lanes; then the same requantizers and saturating
//! additions, in the same order, give each output. The outputs of inputs seen before
//! (embedding rows fed to a GRU's input matrix) are reused, as in `hostf32`. A layer
//! with a part longer than [`I32_EXACT_RUN`] columns (none of the bundled models) goes
//! through the core's kernel.

use std::cell::RefCell;
use std::collections::HashMap;

use s2s_kernels::precision::I32_EXACT_RUN;
use s2s_kernels::{Fmt, Job, Linear, Precision, PrecisionKind, Requant, ShapeError, W8A16};

use crate::model::delegate::delegate_elementwise;
use crate::model::hostf32::{
    layer_key, remembers, same_layer, LayerKey, WordHasher, MAX_REMEMBERED,
};
use crate::model::simd::{simd, Simd};

/// Lanes processed together by the kernel.
pub const LANES: usize = crate::model::hostf32::LANES;

/// [`W8A16`] with the host's batched dense layers (see the module docs).
pub struct HostW8A16;

/// The same layer as a [`W8A16`] layer.
fn as_core<'a>(l: &Linear<'a, HostW8A16>) -> Linear<'a, W8A16> {
    same_layer(l)
}

impl Precision for HostW8A16 {
    const KIND: PrecisionKind = W8A16::KIND;
    const MAX_PLANES: usize = W8A16::MAX_PLANES;
    type Act = i16;
    type Wide = i32;
    type Weight = i8;
    type RowQ = Requant;
    type Bias = i32;
    type Scale = Requant;

    delegate_elementwise!(W8A16);

    fn linear(l: &Linear<'_, Self>, x: &[&[i16]], out: &mut [i32]) {
        Self::linear_batch(l, &mut [Job { x, out }]);
    }
    fn linear_batch(l: &Linear<'_, Self>, jobs: &mut [Job<'_, Self>]) {
        linear_batch(l, jobs);
    }
    fn embed(t: &Linear<'_, Self>, row: usize, out: &mut [i16]) {
        W8A16::embed(&as_core(t), row, out)
    }
    fn cell_update(f: i16, c: i16, i: i16, g: i16, fc: Fmt) -> i16 {
        W8A16::cell_update(f, c, i, g, fc)
    }
    fn additive_scores(
        q: &[i32],
        keys: &[i16],
        fk: Fmt,
        v: &Linear<'_, Self>,
        tanh: &mut [i16],
        scores: &mut [i32],
    ) -> Result<(), ShapeError> {
        // One row per key: the core's kernel (the packed one pays off on many rows).
        W8A16::additive_scores(q, keys, fk, &as_core(v), tanh, scores)
    }
}

/// Rows are packed in blocks of this many (zero rows pad the last block).
const ROW_BLOCK: usize = 32;

/// One layer's weights packed for the kernel, for one split of its input into parts.
struct Packed {
    /// Rows rounded up to [`ROW_BLOCK`].
    rows_pad: usize,
    /// The parts' lengths.
    parts: Vec<usize>,
    /// Per plane, then per part: `[pair][row][2]` weights of the part's columns
    /// `2 pair` and `2 pair + 1` (zero past the part's end and the last row).
    planes: Vec<Vec<Vec<i16>>>,
}

impl Packed {
    fn new(l: &Linear<'_, HostW8A16>, parts: &[usize]) -> Self {
        let (rows, cols, planes) = (l.rows(), l.cols(), l.planes());
        let rows_pad = rows.div_ceil(ROW_BLOCK) * ROW_BLOCK;
        let (w, layout) = (l.weights(), l.layout());
        let planes = (0..planes)
            .map(|p| {
                let mut start = 0;
                parts
                    .iter()
                    .map(|&n| {
                        let pairs = n.div_ceil(2);
                        let mut packed = vec![0i16; pairs * rows_pad * 2];
                        for r in 0..rows {
                            let row = &w[r * cols * l.planes() + p * cols + start..][..n];
                            for (k, &v) in row.iter().enumerate() {
                                packed[((k / 2) * rows_pad + r) * 2 + k % 2] =
                                    layout.load(v) as i16;
                            }
                        }
                        start += n;
                        packed
                    })
                    .collect()
            })
            .collect();
        Packed {
            rows_pad,
            parts: parts.to_vec(),
            planes,
        }
    }
}

type Products = HashMap<Vec<i16>, Vec<i32>, std::hash::BuildHasherDefault<WordHasher>>;

/// Per-layer host state: the packed weights and the outputs of inputs seen before.
struct LayerCache {
    packed: Packed,
    products: Products,
    hits: usize,
    misses: usize,
}

thread_local! {
    static CACHE: RefCell<HashMap<(LayerKey, Vec<usize>), LayerCache>> = RefCell::new(HashMap::new());
}

/// Drops every cached layer of this thread (their packed weights and products).
pub fn forget_layers() {
    CACHE.with(|c| c.borrow_mut().clear());
}

fn linear_batch(l: &Linear<'_, HostW8A16>, jobs: &mut [Job<'_, HostW8A16>]) {
    let Some(first) = jobs.first() else {
        return;
    };
    let parts: Vec<usize> = first.x.iter().map(|p| p.len()).collect();
    let same = jobs
        .iter()
        .all(|j| j.x.len() == parts.len() && j.x.iter().zip(&parts).all(|(p, &n)| p.len() == n));
    if l.cols() == 0 || parts.iter().any(|&n| n > I32_EXACT_RUN) || !same {
        let core = as_core(l);
        for j in jobs {
            W8A16::linear(&core, j.x, j.out);
        }
        return;
    }
    let key = (layer_key(l.weights(), l.rows(), l.cols()), parts);
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        let entry = cache
            .entry(key)
            .or_insert_with_key(|(_, parts)| LayerCache {
                packed: Packed::new(l, parts),
                products: Products::default(),
                hits: 0,
                misses: 0,
            });
        // Reuse the outputs of inputs seen before; collect the others.
        let remember = remembers(entry.hits, entry.misses);
        let mut todo: Vec<(Vec<i16>, &mut [i32])> = vec![];
        for j in jobs.iter_mut() {
            let x: Vec<i16> = j.x.concat();
            if remember {
                if let Some(y) = entry.products.get(&x) {
                    j.out.copy_from_slice(y);
                    entry.hits += 1;
                    continue;
                }
                entry.misses += 1;
            }
            todo.push((x, &mut *j.out));
        }
        for chunk in todo.chunks_mut(LANES) {
            kernel(l, &entry.packed, chunk);
            if remember && entry.products.len() < MAX_REMEMBERED {
                for (x, y) in chunk.iter() {
                    entry.products.insert(x.clone(), y.to_vec());
                }
            }
        }
    });
}

/// Up to [`LANES`] inputs (each concatenated) through the layer, into their outputs:
/// per row the bias, then per plane and part the dot product requantized, added with
/// saturation (the core's order).
fn kernel(l: &Linear<'_, HostW8A16>, packed: &Packed, lanes: &mut [(Vec<i16>, &mut [i32])]) {
    let (rows, np) = (l.rows(), l.parts());
    let (q, row_q) = (l.row_q(), l.planes() * np);
    let mut y = vec![[0i32; LANES]; rows];
    if let Some(bias) = l.bias() {
        for (yr, &b) in y.iter_mut().zip(bias) {
            *yr = [b; LANES];
        }
    }
    let mut d = vec![[0i32; LANES]; packed.rows_pad];
    for (p, plane) in packed.planes.iter().enumerate() {
        let mut start = 0;
        for (i, (w, &n)) in plane.iter().zip(&packed.parts).enumerate() {
            let pairs = n.div_ceil(2);
            // The lanes' columns `2 k`, `2 k + 1` of this part as one i32 each, as
            // pmaddwd reads them (low half first); zero past the part's end and in
            // unused lanes.
            let mut xp = vec![[0i32; LANES]; pairs];
            for (b, (x, _)) in lanes.iter().enumerate() {
                let part = &x[start..start + n];
                for (k, xk) in xp.iter_mut().enumerate() {
                    let lo = part.get(2 * k).map_or(0, |&v| v as u16 as u32);
                    let hi = part.get(2 * k + 1).map_or(0, |&v| v as u16 as u32);
                    xk[b] = (lo | hi << 16) as i32;
                }
            }
            start += n;
            dots(w, packed.rows_pad, &xp, &mut d);
            for (r, (yr, dr)) in y.iter_mut().zip(&d).enumerate() {
                let rq = q[r * row_q + p * np + i];
                for (v, &dv) in yr.iter_mut().zip(dr) {
                    *v = v.saturating_add(rq.apply(dv));
                }
            }
        }
    }
    for (b, (_, out)) in lanes.iter_mut().enumerate() {
        for (o, yr) in out.iter_mut().zip(&y) {
            *o = yr[b];
        }
    }
}

/// `d[r][b] = sum_k w[k][r][0] * lo(xp[k][b]) + w[k][r][1] * hi(xp[k][b])`, exact in
/// `i32` (see the module docs), on the widest vectors the CPU has.
fn dots(w: &[i16], rows_pad: usize, xp: &[[i32; LANES]], d: &mut [[i32; LANES]]) {
    assert!(w.len() >= xp.len() * rows_pad * 2 && d.len() >= rows_pad);
    assert!(rows_pad.is_multiple_of(ROW_BLOCK));
    match simd() {
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => {
            // SAFETY: the CPU supports AVX-512BW (`simd`), the only feature the function
            // enables.
            unsafe { dots_avx512(w, rows_pad, xp, d) }
        }
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => {
            // SAFETY: the CPU supports AVX2 (`simd`), the only feature the function enables.
            unsafe { dots_avx2(w, rows_pad, xp, d) }
        }
        Simd::Generic => dots_generic(w, rows_pad, xp, d),
    }
}

/// AVX-512BW: blocks of 32 rows, two 16-row accumulators per lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
fn dots_avx512(w: &[i16], rows_pad: usize, xp: &[[i32; LANES]], d: &mut [[i32; LANES]]) {
    use std::arch::x86_64::*;
    for r0 in (0..rows_pad).step_by(ROW_BLOCK) {
        let mut a = [_mm512_setzero_si512(); 2 * LANES];
        for (k, x) in xp.iter().enumerate() {
            let base = (k * rows_pad + r0) * 2;
            // SAFETY: base + 64 <= (k * rows_pad + rows_pad) * 2 <= w.len() (asserted by
            // `dots`, r0 + 32 <= rows_pad), so both 32-i16 loads read inside `w`; loadu
            // has no alignment needs.
            let (w0, w1) = unsafe {
                (
                    _mm512_loadu_si512(w.as_ptr().add(base).cast()),
                    _mm512_loadu_si512(w.as_ptr().add(base + 32).cast()),
                )
            };
            for (b, &xb) in x.iter().enumerate() {
                let v = _mm512_set1_epi32(xb);
                a[2 * b] = _mm512_add_epi32(a[2 * b], _mm512_madd_epi16(w0, v));
                a[2 * b + 1] = _mm512_add_epi32(a[2 * b + 1], _mm512_madd_epi16(w1, v));
            }
        }
        let mut tmp = [0i32; ROW_BLOCK];
        for b in 0..LANES {
            // SAFETY: each store writes 16 i32 into the 32-i32 `tmp`.
            unsafe {
                _mm512_storeu_si512(tmp.as_mut_ptr().cast(), a[2 * b]);
                _mm512_storeu_si512(tmp.as_mut_ptr().add(16).cast(), a[2 * b + 1]);
            }
            for (r, &t) in tmp.iter().enumerate() {
                d[r0 + r][b] = t;
            }
        }
    }
}

/// AVX2: blocks of 8 rows, one accumulator per lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2(w: &[i16], rows_pad: usize, xp: &[[i32; LANES]], d: &mut [[i32; LANES]]) {
    use std::arch::x86_64::*;
    for r0 in (0..rows_pad).step_by(8) {
        let mut a = [_mm256_setzero_si256(); LANES];
        for (k, x) in xp.iter().enumerate() {
            // SAFETY: (k * rows_pad + r0) * 2 + 16 <= w.len() (asserted by `dots`,
            // r0 + 8 <= rows_pad).
            let wv = unsafe { _mm256_loadu_si256(w.as_ptr().add((k * rows_pad + r0) * 2).cast()) };
            for (ab, &xb) in a.iter_mut().zip(x) {
                *ab = _mm256_add_epi32(*ab, _mm256_madd_epi16(wv, _mm256_set1_epi32(xb)));
            }
        }
        let mut tmp = [0i32; 8];
        for (b, ab) in a.iter().enumerate() {
            // SAFETY: the store writes 8 i32 into the 8-i32 `tmp`.
            unsafe { _mm256_storeu_si256(tmp.as_mut_ptr().cast(), *ab) };
            for (r, &t) in tmp.iter().enumerate() {
                d[r0 + r][b] = t;
            }
        }
    }
}

/// Without SIMD: the same sums, one row at a time.
fn dots_generic(w: &[i16], rows_pad: usize, xp: &[[i32; LANES]], d: &mut [[i32; LANES]]) {
    for (r, dr) in d.iter_mut().enumerate().take(rows_pad) {
        let mut a = [0i32; LANES];
        for (k, x) in xp.iter().enumerate() {
            let (w0, w1) = (
                w[(k * rows_pad + r) * 2] as i32,
                w[(k * rows_pad + r) * 2 + 1] as i32,
            );
            for (v, &xb) in a.iter_mut().zip(x) {
                *v = v.wrapping_add(w0 * (xb as i16 as i32) + w1 * (xb >> 16));
            }
        }
        *dr = a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_layers_give_the_same_integers_as_w8a16() {
        let mut seed = 11u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed >> 8
        };
        // Shapes with row tails, odd parts, two planes, one to eight lanes; weights
        // and activations up to their extremes (-128, i16::MIN) so that the sums come
        // near the i32 bound of a 511-column part.
        for (rows, parts, planes, lanes) in [
            (70, vec![33], 1, 3),
            (768, vec![256, 256], 2, 8),
            (17, vec![5, 0, 3], 1, 1),
            (64, vec![511], 2, 5),
            (40, vec![511, 7], 1, 8),
            (3, vec![600, 2], 1, 2),
        ] {
            let cols: usize = parts.iter().sum();
            let w: Vec<i8> = (0..rows * cols * planes)
                .map(|i| if i % 7 == 0 { -128 } else { rnd() as i8 })
                .collect();
            let q: Vec<Requant> = (0..rows * parts.len() * planes)
                .map(|_| Requant::from_real((rnd() % 1000 + 1) as f64 * 1e-7))
                .collect();
            let b: Vec<i32> = (0..rows).map(|_| rnd() as i32 - (1 << 23)).collect();
            let fast = Linear::<HostW8A16>::new(rows, cols, parts.len(), &w, &q, Some(&b)).unwrap();
            let core = Linear::<W8A16>::new(rows, cols, parts.len(), &w, &q, Some(&b)).unwrap();
            let xs: Vec<Vec<i16>> = (0..lanes)
                .map(|l| {
                    (0..cols)
                        .map(|k| match (l + k) % 5 {
                            0 => i16::MIN,
                            1 => i16::MAX,
                            _ => rnd() as i16,
                        })
                        .collect()
                })
                .collect();
            let split = |x: &[i16]| -> Vec<Vec<i16>> {
                let mut start = 0;
                parts
                    .iter()
                    .map(|&n| {
                        start += n;
                        x[start - n..start].to_vec()
                    })
                    .collect()
            };
            let split_xs: Vec<Vec<Vec<i16>>> = xs.iter().map(|x| split(x)).collect();
            // Twice: the second time the outputs come from the cache.
            for _ in 0..2 {
                let mut outs = vec![vec![0i32; rows]; lanes];
                {
                    let refs: Vec<Vec<&[i16]>> = split_xs
                        .iter()
                        .map(|p| p.iter().map(|v| &v[..]).collect())
                        .collect();
                    let mut jobs: Vec<Job<'_, HostW8A16>> = refs
                        .iter()
                        .zip(outs.iter_mut())
                        .map(|(p, o)| Job {
                            x: &p[..],
                            out: &mut o[..],
                        })
                        .collect();
                    fast.apply_batch(&mut jobs).unwrap();
                }
                for (x, o) in split_xs.iter().zip(&outs) {
                    let refs: Vec<&[i16]> = x.iter().map(|v| &v[..]).collect();
                    let mut want = vec![0i32; rows];
                    core.apply(&refs, &mut want).unwrap();
                    assert_eq!(o, &want, "{rows} rows, parts {parts:?}, {planes} planes");
                }
            }
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_sums() {
        let rows_pad = 2 * ROW_BLOCK;
        let pairs = 9;
        let w: Vec<i16> = (0..pairs * rows_pad * 2)
            .map(|i| ((i * 37 % 256) as i16) - 128)
            .collect();
        let xp: Vec<[i32; LANES]> = (0..pairs)
            .map(|k| {
                core::array::from_fn(|b| {
                    ((k * 7919 + b * 104_729) as u32).wrapping_mul(2_654_435_761) as i32
                })
            })
            .collect();
        let mut want = vec![[0i32; LANES]; rows_pad];
        dots_generic(&w, rows_pad, &xp, &mut want);
        let mut got = vec![[0i32; LANES]; rows_pad];
        dots(&w, rows_pad, &xp, &mut got);
        assert_eq!(got, want);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut got = vec![[0i32; LANES]; rows_pad];
            // SAFETY: the CPU supports AVX2.
            unsafe { dots_avx2(&w, rows_pad, &xp, &mut got) };
            assert_eq!(got, want);
        }
    }
}
