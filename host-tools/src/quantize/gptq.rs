//! Error-compensating rounding of int8 weights (GPTQ, Frantar et al. 2022).
//!
//! Rounding each weight to its nearest int8 code independently adds an error to the
//! layer's output that depends on the inputs the layer actually sees. GPTQ rounds the
//! columns of a row one after the other and spreads each rounding error over the
//! columns not yet rounded, weighted by the inverse of `H = sum x x^T` over calibration
//! inputs, so that the error lands where the inputs have little energy. The codes and
//! the per-row scales stay exactly those of plain rounding's format; only which codes
//! are chosen changes, so the device kernels are untouched.
//!
//! The inputs are collected by running the f32 model through the core with
//! [`Recording`], a precision identical to `F32` that also records the input of every
//! dense layer it applies (host-only state in a thread-local; the core has none). The
//! lines run on all of rayon's threads, and `H` is summed in line order whatever their
//! number ([`collect`]); the rows of a layer are then rounded on all threads too, each
//! on its own. So the quantized file is the same bits with any number of threads.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use s2s_kernels::Linear;

use crate::model::hostf32::{same_layer, F32Like, Fast, HostF32, LinearImpl};
use seq2seq::format::{Role, Slot, TensorId};
use seq2seq::{Net, Observer, Runner};

use crate::error::{Error, Result};
use crate::model::LoadedModel;

/// Identifies the inputs of (part of) a dense layer: layer and first row.
pub type Key = (Role, usize, usize, usize);

/// `sum x x^T` of the inputs of each dense layer (and row range).
#[derive(Clone, Debug, Default)]
pub struct Hessians {
    /// Input size and the upper triangle, row-major `n x n` (lower part unused).
    pub map: HashMap<Key, (usize, Vec<f64>)>,
}

/// A calibration thread's recording state (in a thread-local: the core calls the
/// dense layers without context).
struct State {
    /// Weight address ranges of every layer of the bound model.
    layers: Vec<(Range<usize>, Role, usize, usize, usize)>,
    /// The inputs of the line being run, in the order the layers saw them.
    line: LineInputs,
    /// The role of the last layer applied: an LSTM step applies its recurrent matrix
    /// right before it updates its cell states, so this says whose cell states follow.
    last: Option<Role>,
    /// Largest `|c|` of the encoder's and the decoder's LSTM cell states.
    cell_max: [f32; 2],
}

/// What the dense layers saw during one line: each input (its parts concatenated, as
/// f32) with the key of the layer (and row range) it went to, in call order.
#[derive(Default)]
struct LineInputs {
    keys: Vec<(Key, Range<usize>)>,
    values: Vec<f32>,
}

/// What a calibration pass records: the dense layers' input statistics and the largest
/// LSTM cell states.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// `sum x x^T` per layer (and row range).
    pub hessians: Hessians,
    /// Largest `|c|` over every step of the encoder's and the decoder's LSTM cells.
    pub cell_max: [f32; 2],
}

impl Hessians {
    /// Adds `x x^T` of every input of `inputs`, in their order, to the layers' sums.
    ///
    /// Every entry of a sum receives its terms in the order of the inputs, whatever the
    /// number of threads: the threads share out the rows of each `H` (disjoint entries),
    /// never the inputs, so the sums are the same bits as one thread adding them one
    /// input after the other.
    fn add_all<'i>(&mut self, inputs: impl IntoIterator<Item = (Key, &'i [f32])>) {
        use rayon::prelude::*;
        let mut by_key: HashMap<Key, Vec<&[f32]>> = HashMap::new();
        for (key, v) in inputs {
            self.map
                .entry(key)
                .or_insert_with(|| (v.len(), vec![0.0; v.len() * v.len()]));
            by_key.entry(key).or_default().push(v);
        }
        let mut work: Vec<_> = self
            .map
            .iter_mut()
            .filter_map(|(k, h)| Some((h, by_key.remove(k)?)))
            .collect();
        work.par_iter_mut().for_each(|((n, h), vs)| {
            let n = *n;
            h.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
                for v in vs.iter().filter(|v| v.len() == n) {
                    let vi = v[i] as f64;
                    if vi == 0.0 {
                        continue;
                    }
                    for (h, &vj) in row[i..].iter_mut().zip(&v[i..]) {
                        *h += vi * vj as f64;
                    }
                }
            });
        });
    }
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// Dense layers computed as `F32` computes them (by `HostF32`'s kernel, which gives the
/// same bits), after recording their inputs.
pub struct Record;

/// `F32` that records the inputs of every dense layer (see the module docs).
pub type Recording = F32Like<Record>;

impl LinearImpl for Record {
    fn linear(l: &Linear<'_, Recording>, x: &[&[f32]], out: &mut [f32]) {
        STATE.with(|s| {
            if let Some(st) = s.borrow_mut().as_mut() {
                let addr = l.weights().as_ptr() as usize;
                if let Some((r, role, layer, dir, _)) =
                    st.layers.iter().find(|(r, ..)| r.contains(&addr)).cloned()
                {
                    st.last = Some(role);
                    let row0 = (addr - r.start) / 4 / l.cols();
                    let line = &mut st.line;
                    let start = line.values.len();
                    line.values.extend(x.iter().flat_map(|p| p.iter().copied()));
                    line.keys
                        .push(((role, layer, dir, row0), start..line.values.len()));
                }
            }
        });
        Fast::linear(&same_layer::<_, HostF32>(l), x, out)
    }

    fn cell_state(c: f32) {
        STATE.with(|s| {
            if let Some(st) = s.borrow_mut().as_mut() {
                let stack = match st.last {
                    Some(Role::EncWhh) => 0,
                    Some(Role::DecWhh) => 1,
                    _ => return,
                };
                st.cell_max[stack] = st.cell_max[stack].max(c.abs());
            }
        });
    }
}

/// Lines run by each calibration thread between two additions to the sums.
const LINES_PER_THREAD: usize = 32;

/// Runs the f32 model over `lines` and returns the input statistics of every layer and
/// the largest LSTM cell states, with the observers that saw the runs (the calibration's
/// ranges come from the same pass): one made by `observer` for each of rayon's threads,
/// each having seen some of the lines. `progress` gets the number of lines done.
///
/// The lines are run on all threads, each its own runner; the statistics are then
/// added in line order, the threads sharing out the entries of each sum, never the
/// inputs, so they are the same bits whatever the number of threads.
pub fn collect<O: Observer<Recording> + Send>(
    m: &LoadedModel,
    lines: &[String],
    observer: impl Fn() -> O,
    mut progress: impl FnMut(usize),
) -> Result<(Recorded, Vec<O>)> {
    use rayon::prelude::*;
    let file = m.file();
    let mut layers = vec![];
    for s in file.desc().layer_specs() {
        if let Ok(Some((_, w))) =
            file.data::<f32>(TensorId::new(s.role, s.layer, s.dir, Slot::Weight))
        {
            let a = w.as_ptr() as usize;
            layers.push((a..a + w.len() * 4, s.role, s.layer, s.dir, s.cols));
        }
    }
    let net = Net::<Recording>::bind(&file).map_err(Error::model(&m.path))?;
    let positions = m.positions();
    let bytes = seq2seq::Plan::new::<Recording>(&net.desc, positions).bytes();
    // One worker per thread: its workspace and its observer.
    let mut workers: Vec<(Vec<u32>, O)> = (0..rayon::current_num_threads().max(1))
        .map(|_| (vec![0u32; bytes.div_ceil(4)], observer()))
        .collect();
    let mut rec = Recorded::default();
    let block = LINES_PER_THREAD * workers.len();
    for (b, block_lines) in lines.chunks(block).enumerate() {
        let per = block_lines.len().div_ceil(workers.len());
        let runs: Vec<Result<(Vec<LineInputs>, [f32; 2])>> = workers
            .par_iter_mut()
            .zip(block_lines.par_chunks(per))
            .map(|((arena, obs), chunk)| {
                let mut runner =
                    Runner::new(&net, arena, positions).map_err(Error::model(&m.path))?;
                STATE.with(|st| {
                    *st.borrow_mut() = Some(State {
                        layers: layers.clone(),
                        line: LineInputs::default(),
                        last: None,
                        cell_max: [0.0; 2],
                    })
                });
                let mut out = vec![0u16; net.desc.max_steps];
                let mut inputs = Vec::with_capacity(chunk.len());
                for l in chunk {
                    // Lines the model cannot read are simply not calibration data.
                    let _ = runner.translate_line::<seq2seq::Error>(
                        l,
                        &seq2seq::Prefix::NONE,
                        &mut out,
                        obs,
                        |_| Ok(()),
                    );
                    inputs.push(STATE.with(|st| {
                        st.borrow_mut()
                            .as_mut()
                            .map(|s| std::mem::take(&mut s.line))
                            .unwrap_or_default()
                    }));
                }
                let cells = STATE.with(|st| st.borrow_mut().take().map(|s| s.cell_max));
                Ok((inputs, cells.unwrap_or_default()))
            })
            .collect();
        let mut block_inputs = vec![];
        for run in runs {
            let (inputs, cells) = run?;
            for (max, c) in rec.cell_max.iter_mut().zip(cells) {
                *max = max.max(c);
            }
            block_inputs.extend(inputs);
        }
        rec.hessians.add_all(
            block_inputs
                .iter()
                .flat_map(|l| l.keys.iter().map(|(k, r)| (*k, &l.values[r.clone()]))),
        );
        progress((b * block + block_lines.len()).min(lines.len()));
    }
    Ok((rec, workers.into_iter().map(|(_, o)| o).collect()))
}

/// Cholesky factor `L` (lower) of a symmetric positive definite `n x n` matrix given
/// by its upper triangle; `None` if it is not positive definite.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[j * n + i]; // upper triangle holds (j, i), j <= i
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s <= 0.0 {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// The upper Cholesky factor of `H^-1` (GPTQ's update matrix), from `H`'s upper triangle,
/// with dampening `lambda * mean(diag H)` added to the diagonal.
fn inverse_factor(h: &[f64], n: usize, lambda: f64) -> Option<Vec<f64>> {
    let mut a = h.to_vec();
    let mean = (0..n).map(|i| a[i * n + i]).sum::<f64>() / n as f64;
    let damp = lambda * mean.max(1e-12);
    for i in 0..n {
        if a[i * n + i] == 0.0 {
            a[i * n + i] = 1.0; // a column whose input is always zero
        }
        a[i * n + i] += damp;
    }
    let l = cholesky(&a, n)?;
    // H^-1 = L^-T L^-1. Invert L (lower) by forward substitution.
    let mut li = vec![0.0; n * n];
    for i in 0..n {
        li[i * n + i] = 1.0 / l[i * n + i];
        for j in 0..i {
            let mut s = 0.0;
            for k in j..i {
                s += l[i * n + k] * li[k * n + j];
            }
            li[i * n + j] = -s / l[i * n + i];
        }
    }
    // Hinv[i][j] = sum_k li[k][i] li[k][j], upper triangle.
    let mut hinv = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            let mut s = 0.0;
            for k in j..n {
                s += li[k * n + i] * li[k * n + j];
            }
            hinv[i * n + j] = s;
        }
    }
    // Upper Cholesky factor U of Hinv (Hinv = U^T U): U = L'^T with L' lower of Hinv.
    let lh = cholesky(&hinv, n)?;
    let mut u = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            u[j * n + i] = lh[i * n + j];
        }
    }
    Some(u)
}

/// Scale factors tried for each row, as fractions of `max |w| / 127` (smaller ones clip
/// the largest weights but round the others more finely).
const SCALE_CANDIDATES: [f64; 6] = [1.0, 0.95, 0.9, 0.85, 0.8, 0.75];

/// int8 codes and row scales of `rows x cols` weights, rounding column by column (in
/// order of decreasing input energy) with error compensation under `H` (upper
/// triangle, `cols x cols`), and choosing each row's scale among `SCALE_CANDIDATES`
/// by the output error `d^T H d` it leaves. Falls back to plain rounding at the
/// maximum scale when `H` is not usable.
pub fn quantize_rows(w: &[f32], cols: usize, h: &[f64]) -> (Vec<i8>, Vec<f32>) {
    let n = cols;
    let diag = |i: usize| h[i * n + i];
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| diag(b).total_cmp(&diag(a)));
    // H with rows and columns in processing order (upper triangle).
    let mut hp = vec![0.0; n * n];
    for (i, &oi) in order.iter().enumerate() {
        for (j, &oj) in order.iter().enumerate().skip(i) {
            let (a, b) = if oi <= oj { (oi, oj) } else { (oj, oi) };
            hp[i * n + j] = h[a * n + b];
        }
    }
    let u = inverse_factor(&hp, n, 0.01);
    let err_of = |d: &[f64]| -> f64 {
        // d^T H d with H symmetric, upper triangle stored.
        let mut e = 0.0;
        for i in 0..n {
            e += hp[i * n + i] * d[i] * d[i];
            for j in i + 1..n {
                e += 2.0 * hp[i * n + j] * d[i] * d[j];
            }
        }
        e
    };
    // Each row on its own (rows spread over the threads, results in row order).
    let row = |row: &[f32]| -> (Vec<i8>, f32) {
        let orig: Vec<f64> = order.iter().map(|&j| row[j] as f64).collect();
        let max = orig.iter().fold(0.0f64, |m, v| m.max(v.abs())) / 127.0;
        let mut best: Option<(f64, f64, Vec<i8>)> = None;
        let candidates: &[f64] = if u.is_some() {
            &SCALE_CANDIDATES
        } else {
            &[1.0]
        };
        for &f in candidates {
            let s = max * f;
            let mut rem = orig.clone();
            let mut q = vec![0i8; n];
            for j in 0..n {
                let code = if s == 0.0 {
                    0.0
                } else {
                    (rem[j] / s).round().clamp(-127.0, 127.0)
                };
                q[j] = code as i8;
                if let Some(u) = &u {
                    let e = (rem[j] - code * s) / u[j * n + j];
                    for k in j + 1..n {
                        rem[k] -= e * u[j * n + k];
                    }
                }
            }
            let d: Vec<f64> = (0..n).map(|j| orig[j] - q[j] as f64 * s).collect();
            let e = err_of(&d);
            if best.as_ref().is_none_or(|b| e < b.0) {
                best = Some((e, s, q));
            }
        }
        let (_, s, q) = best.expect("one candidate at least");
        let mut codes = vec![0i8; n];
        for (j, &oj) in order.iter().enumerate() {
            codes[oj] = q[j];
        }
        (codes, s as f32)
    };
    let rows: Vec<(Vec<i8>, f32)> = {
        use rayon::prelude::*;
        w.par_chunks(n.max(1)).map(row).collect()
    };
    let scales = rows.iter().map(|r| r.1).collect();
    (rows.into_iter().flat_map(|r| r.0).collect(), scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensation_lowers_the_output_error_on_correlated_inputs() {
        // Inputs that live near a 1-d subspace: x = t * (1, 1, 1, 1) + small noise.
        let n = 4;
        let xs: Vec<[f64; 4]> = (0..200)
            .map(|i| {
                let t = (i as f64 * 0.37).sin();
                let e = |k: f64| 0.01 * (i as f64 * k).cos();
                [t + e(1.1), t + e(2.3), t + e(3.7), t + e(5.9)]
            })
            .collect();
        let mut h = vec![0.0; n * n];
        for x in &xs {
            for i in 0..n {
                for j in i..n {
                    h[i * n + j] += x[i] * x[j];
                }
            }
        }
        let w = [0.113f32, -0.287, 0.391, 0.054];
        let s = [0.391f32 / 127.0];
        let rtn: Vec<i8> = w.iter().map(|v| (v / s[0]).round() as i8).collect();
        let (gq, gs) = quantize_rows(&w, n, &h);
        let err = |q: &[i8], sc: f32| -> f64 {
            xs.iter()
                .map(|x| {
                    (0..n)
                        .map(|k| (w[k] as f64 - q[k] as f64 * sc as f64) * x[k])
                        .sum::<f64>()
                        .powi(2)
                })
                .sum()
        };
        let (eg, er) = (err(&gq, gs[0]), err(&rtn, s[0]));
        assert!(eg < 0.5 * er, "gptq {eg} rtn {er}");
    }

    #[test]
    fn cholesky_inverse_of_identity() {
        let n = 3;
        let mut h = vec![0.0; 9];
        for i in 0..n {
            h[i * n + i] = 4.0;
        }
        let u = inverse_factor(&h, n, 0.0).unwrap();
        for i in 0..n {
            assert!((u[i * n + i] - 0.5).abs() < 1e-12);
        }
    }
}
