//! f32 precisions for the host that change how dense layers are computed but not what
//! they compute: [`HostF32`] (fast, batched) and the calibration recorder of
//! [`crate::quantize::gptq`]. Both are [`F32Like`]: every operation is `F32`'s except the dense
//! layer, which goes through a [`LinearImpl`].
//!
//! [`HostF32`]'s dense layer gives the same bits as `F32`'s: each output is the same
//! sequential sum `acc = acc + w[k] * x[k]` over the concatenated input, then
//! `0 + acc * 1 + b`, as the core defines it. It is only organised differently: the
//! weights are kept transposed so that one vector instruction advances 8 or 16 rows at
//! once (never reordering any row's sum), several lanes share every weight load, and
//! the products of inputs seen before (embedding rows fed to a GRU's input matrix) are
//! reused.

use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;

use crate::model::delegate::delegate_elementwise;
use crate::model::simd::{simd, Simd};
use s2s_kernels::{Fmt, Job, Linear, Precision, PrecisionKind, F32};

/// How an [`F32Like`] precision computes its dense layers.
pub trait LinearImpl: 'static {
    /// One input.
    fn linear(l: &Linear<'_, F32Like<Self>>, x: &[&[f32]], out: &mut [f32])
    where
        Self: Sized;
    /// Several inputs; by default one by one.
    fn linear_batch(l: &Linear<'_, F32Like<Self>>, jobs: &mut [Job<'_, F32Like<Self>>])
    where
        Self: Sized,
    {
        for j in jobs {
            Self::linear(l, j.x, j.out);
        }
    }
    /// Sees every LSTM cell state computed (the calibration records their range); by
    /// default nothing.
    fn cell_state(_c: f32) {}
}

/// `F32` with dense layers computed by `I`.
pub struct F32Like<I>(PhantomData<I>);

/// The same layer seen at another precision that stores it alike (an `F32Like` layer
/// as `F32`'s, a `HostW8A16` one as `W8A16`'s, ...).
pub fn same_layer<'a, A, B>(l: &Linear<'a, A>) -> Linear<'a, B>
where
    A: Precision,
    B: Precision<Weight = A::Weight, RowQ = A::RowQ, Bias = A::Bias>,
{
    Linear::new(
        l.rows(),
        l.cols(),
        l.parts(),
        l.weights(),
        l.row_q(),
        l.bias(),
    )
    .and_then(|same| same.with_layout(l.layout()))
    .expect("the same shapes and layout, at a precision that stores them alike")
}

impl<I: LinearImpl> Precision for F32Like<I> {
    const KIND: PrecisionKind = PrecisionKind::F32;
    const MAX_PLANES: usize = 1;
    type Act = f32;
    type Wide = f32;
    type Weight = f32;
    type RowQ = ();
    type Bias = f32;
    type Scale = f32;

    delegate_elementwise!(F32);

    fn linear(l: &Linear<'_, Self>, x: &[&[f32]], out: &mut [f32]) {
        I::linear(l, x, out)
    }
    fn linear_batch(l: &Linear<'_, Self>, jobs: &mut [Job<'_, Self>]) {
        I::linear_batch(l, jobs)
    }
    fn embed(t: &Linear<'_, Self>, row: usize, out: &mut [f32]) {
        F32::embed(&same_layer(t), row, out)
    }
    fn cell_update(f: f32, c: f32, i: f32, g: f32, fc: Fmt) -> f32 {
        let c = F32::cell_update(f, c, i, g, fc);
        I::cell_state(c);
        c
    }
}

/// Fast batched dense layers (see the module docs).
pub struct Fast;

/// The f32 precision the host runs f32 models at.
pub type HostF32 = F32Like<Fast>;

/// Lanes processed together by the kernel.
pub const LANES: usize = 8;

/// A fast hasher for input bit patterns (the caches are keyed by whole inputs).
#[derive(Default)]
pub(crate) struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Products = HashMap<Vec<u32>, Vec<f32>, std::hash::BuildHasherDefault<WordHasher>>;

/// Per-layer host state: the transposed weights and the cache of products.
struct LayerCache {
    /// `cols x rows`, column `k` of the weights as a contiguous row.
    wt: Vec<f32>,
    /// Outputs of inputs seen before, by the input's bits.
    products: Products,
    hits: usize,
    misses: usize,
}

/// Inputs remembered per layer at most (a GRU input matrix fed with embeddings sees
/// only as many distinct inputs as the vocabulary has tokens).
pub(crate) const MAX_REMEMBERED: usize = 4096;

/// Whether a layer that has found `hits` inputs among those remembered and missed
/// `misses` keeps remembering: while it finds one in five at least, or is young.
pub(crate) fn remembers(hits: usize, misses: usize) -> bool {
    hits * 4 >= misses || misses < 256
}

/// A layer's identity in the cache: its weights' address and shape, and a fingerprint
/// of their values (so that a model loaded where a dropped one lived is not mistaken
/// for it; [`forget_layers`] is also called whenever a host runner starts).
pub(crate) type LayerKey = (usize, usize, usize, u64);

thread_local! {
    static CACHE: RefCell<HashMap<LayerKey, LayerCache>> = RefCell::new(HashMap::new());
}

/// Drops every cached layer of this thread (their transposed weights and products).
pub fn forget_layers() {
    CACHE.with(|c| c.borrow_mut().clear());
}

/// The cache key of a layer.
pub(crate) fn layer_key<T: bytemuck::Pod>(w: &[T], rows: usize, cols: usize) -> LayerKey {
    let mut h = WordHasher::default();
    let step = (w.len() / 61).max(1);
    for v in w.iter().step_by(step) {
        std::hash::Hasher::write(&mut h, bytemuck::bytes_of(v));
    }
    (
        w.as_ptr() as usize,
        rows,
        cols,
        std::hash::Hasher::finish(&h),
    )
}

impl LinearImpl for Fast {
    fn linear(l: &Linear<'_, HostF32>, x: &[&[f32]], out: &mut [f32]) {
        let mut jobs = [Job { x, out }];
        Self::linear_batch(l, &mut jobs);
    }

    fn linear_batch(l: &Linear<'_, HostF32>, jobs: &mut [Job<'_, HostF32>]) {
        let (rows, cols) = (l.rows(), l.cols());
        let key = layer_key(l.weights(), rows, cols);
        CACHE.with(|c| {
            let mut cache = c.borrow_mut();
            let entry = cache.entry(key).or_insert_with(|| LayerCache {
                wt: transpose(l.weights(), rows, cols),
                products: Products::default(),
                hits: 0,
                misses: 0,
            });
            // Reuse the products of inputs seen before; collect the others.
            let remember = remembers(entry.hits, entry.misses);
            let mut todo: Vec<usize> = vec![];
            let mut inputs: Vec<Vec<f32>> = vec![];
            for (i, j) in jobs.iter_mut().enumerate() {
                let x: Vec<f32> = j.x.iter().flat_map(|p| p.iter().copied()).collect();
                if remember {
                    let bits: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
                    if let Some(y) = entry.products.get(&bits) {
                        j.out.copy_from_slice(y);
                        entry.hits += 1;
                        continue;
                    }
                    entry.misses += 1;
                }
                todo.push(i);
                inputs.push(x);
            }
            for (chunk_jobs, chunk_x) in todo.chunks(LANES).zip(inputs.chunks(LANES)) {
                let mut outs: Vec<&mut [f32]> = vec![];
                let mut it = jobs.iter_mut().enumerate();
                for &i in chunk_jobs {
                    let (_, j) = it.by_ref().find(|(k, _)| *k == i).expect("job index");
                    outs.push(&mut *j.out);
                }
                let xs: Vec<&[f32]> = chunk_x.iter().map(|v| &v[..]).collect();
                kernel(&entry.wt, rows, cols, l.bias(), &xs, &mut outs);
                if remember && entry.products.len() < MAX_REMEMBERED {
                    for (x, y) in chunk_x.iter().zip(&outs) {
                        let bits: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
                        entry.products.insert(bits, y.to_vec());
                    }
                }
            }
        });
    }
}

fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = w[r * cols + c];
        }
    }
    t
}

/// `outs[b][j] = 0 + (sum_k w[j][k] * xs[b][k]) * 1 + bias[j]`, each sum sequential in
/// `k`, for up to [`LANES`] inputs; `wt` holds the weights transposed.
fn kernel(
    wt: &[f32],
    rows: usize,
    cols: usize,
    bias: Option<&[f32]>,
    xs: &[&[f32]],
    outs: &mut [&mut [f32]],
) {
    // The inputs transposed: the lanes' k-th values side by side, unused lanes zero.
    let mut xt = vec![[0.0f32; LANES]; cols];
    for (b, x) in xs.iter().enumerate() {
        for (k, &v) in x.iter().enumerate().take(cols) {
            xt[k][b] = v;
        }
    }
    let mut acc = vec![[0.0f32; LANES]; rows];
    sums(wt, rows, &xt, &mut acc);
    for (b, out) in outs.iter_mut().enumerate() {
        for (j, o) in out.iter_mut().enumerate().take(rows) {
            let y = 0.0 + acc[j][b] * 1.0;
            *o = match bias {
                Some(bv) => y + bv[j],
                None => y,
            };
        }
    }
}

/// `acc[j][b] = sum_k wt[k][j] * xt[k][b]`, sequential in `k`, on the widest vectors the
/// CPU has.
fn sums(wt: &[f32], rows: usize, xt: &[[f32; LANES]], acc: &mut [[f32; LANES]]) {
    match simd() {
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => {
            // SAFETY: the CPU supports AVX-512F (`simd`), the only feature the function
            // enables.
            unsafe { sums_avx512(wt, rows, xt, acc) }
        }
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => {
            // SAFETY: the CPU supports AVX2 (`simd`), the only feature the function enables.
            unsafe { sums_avx2(wt, rows, xt, acc) }
        }
        Simd::Generic => sums_generic(wt, rows, xt, acc),
    }
}

/// AVX-512: blocks of 32 rows, two 16-row accumulators per lane; a multiply then an add
/// per product (never fused), so every sum is exactly the scalar one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn sums_avx512(wt: &[f32], rows: usize, xt: &[[f32; LANES]], acc: &mut [[f32; LANES]]) {
    use std::arch::x86_64::*;
    const R: usize = 32;
    let cols = xt.len();
    assert!(wt.len() >= rows * cols);
    let mut j0 = 0;
    while j0 + R <= rows {
        let mut a = [_mm512_setzero_ps(); 2 * LANES];
        for (k, x) in xt.iter().enumerate() {
            let base = k * rows + j0;
            // SAFETY: base + R <= k * rows + rows <= cols * rows <= wt.len() (asserted),
            // so both 16-float loads read inside `wt`; loadu has no alignment needs.
            let (w0, w1) = unsafe {
                (
                    _mm512_loadu_ps(wt.as_ptr().add(base)),
                    _mm512_loadu_ps(wt.as_ptr().add(base + 16)),
                )
            };
            for (b, &xb) in x.iter().enumerate() {
                let v = _mm512_set1_ps(xb);
                a[2 * b] = _mm512_add_ps(a[2 * b], _mm512_mul_ps(w0, v));
                a[2 * b + 1] = _mm512_add_ps(a[2 * b + 1], _mm512_mul_ps(w1, v));
            }
        }
        let mut tmp = [0.0f32; 32];
        for b in 0..LANES {
            // SAFETY: each store writes 16 floats into the 32-float `tmp`.
            unsafe {
                _mm512_storeu_ps(tmp.as_mut_ptr(), a[2 * b]);
                _mm512_storeu_ps(tmp.as_mut_ptr().add(16), a[2 * b + 1]);
            }
            for r in 0..R {
                acc[j0 + r][b] = tmp[r];
            }
        }
        j0 += R;
    }
    sums_tail(wt, rows, j0, xt, acc);
}

/// AVX2: blocks of 8 rows, 8 accumulators (one per lane).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sums_avx2(wt: &[f32], rows: usize, xt: &[[f32; LANES]], acc: &mut [[f32; LANES]]) {
    use std::arch::x86_64::*;
    const R: usize = 8;
    let cols = xt.len();
    assert!(wt.len() >= rows * cols);
    let mut j0 = 0;
    while j0 + R <= rows {
        let mut a = [_mm256_setzero_ps(); LANES];
        for (k, x) in xt.iter().enumerate() {
            // SAFETY: k * rows + j0 + 8 <= cols * rows <= wt.len() (asserted).
            let w = unsafe { _mm256_loadu_ps(wt.as_ptr().add(k * rows + j0)) };
            for (ab, &xb) in a.iter_mut().zip(x) {
                *ab = _mm256_add_ps(*ab, _mm256_mul_ps(w, _mm256_set1_ps(xb)));
            }
        }
        let mut tmp = [0.0f32; 8];
        for (b, ab) in a.iter().enumerate() {
            // SAFETY: the store writes 8 floats into the 8-float `tmp`.
            unsafe { _mm256_storeu_ps(tmp.as_mut_ptr(), *ab) };
            for r in 0..R {
                acc[j0 + r][b] = tmp[r];
            }
        }
        j0 += R;
    }
    sums_tail(wt, rows, j0, xt, acc);
}

/// Rows `j0..rows` one at a time (the same sums).
fn sums_tail(wt: &[f32], rows: usize, j0: usize, xt: &[[f32; LANES]], acc: &mut [[f32; LANES]]) {
    for j in j0..rows {
        let mut a = [0.0f32; LANES];
        for (k, x) in xt.iter().enumerate() {
            let w = wt[k * rows + j];
            for (v, &xb) in a.iter_mut().zip(x) {
                *v += w * xb;
            }
        }
        acc[j] = a;
    }
}

/// Without SIMD: one row at a time.
fn sums_generic(wt: &[f32], rows: usize, xt: &[[f32; LANES]], acc: &mut [[f32; LANES]]) {
    sums_tail(wt, rows, 0, xt, acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_layers_give_the_same_bits_as_f32() {
        let mut seed = 7u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for (rows, cols, lanes) in [(70, 33, 3), (768, 256, 8), (17, 5, 1), (64, 128, 5)] {
            let w: Vec<f32> = (0..rows * cols).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..rows).map(|_| rnd()).collect();
            let xs: Vec<Vec<f32>> = (0..lanes)
                .map(|_| (0..cols).map(|_| rnd()).collect())
                .collect();
            let split = cols / 3;
            let fast = Linear::<HostF32>::new(rows, cols, 2, &w, &[], Some(&b)).unwrap();
            let reference = Linear::<F32>::new(rows, cols, 2, &w, &[], Some(&b)).unwrap();
            // Twice: the second time the products come from the cache.
            for _ in 0..2 {
                let mut outs = vec![vec![0.0f32; rows]; lanes];
                {
                    let parts: Vec<[&[f32]; 2]> =
                        xs.iter().map(|x| [&x[..split], &x[split..]]).collect();
                    let mut jobs: Vec<Job<'_, HostF32>> = parts
                        .iter()
                        .zip(outs.iter_mut())
                        .map(|(p, o)| Job {
                            x: &p[..],
                            out: &mut o[..],
                        })
                        .collect();
                    fast.apply_batch(&mut jobs).unwrap();
                }
                for (x, o) in xs.iter().zip(&outs) {
                    let mut want = vec![0.0f32; rows];
                    reference
                        .apply(&[&x[..split], &x[split..]], &mut want)
                        .unwrap();
                    let same = o.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{rows}x{cols}");
                }
            }
        }
    }
}
