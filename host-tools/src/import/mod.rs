//! `s2s import`: a configuration plus a trained weights file into an f32 model file.

pub mod config;

use std::collections::BTreeMap;
use std::path::Path;

use s2s_kernels::PrecisionKind;
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::LayerSpec;
use seq2seq::format::{DType, Slot, TensorId};

use crate::error::{Error, Place, Result};
use crate::formats::{read_weights, Tensor};
use crate::import::config::Config;
use crate::io::write_atomic;
use crate::model::LoadedModel;

/// The canonical gate order of our GRU matrices.
const OUR_GATES: [char; 3] = ['r', 'z', 'n'];

/// The name of a layer in `[weights]`.
pub fn layer_name(s: &LayerSpec) -> String {
    TensorId::new(s.role, s.layer, s.dir, Slot::Weight)
        .layer_name()
        .to_string()
}

/// Looks up `name` or `name[i]` (index `i` of the first dimension) among `tensors`.
fn resolve<'t>(
    tensors: &'t BTreeMap<&str, &Tensor>,
    spec: &str,
) -> Result<(Vec<usize>, &'t [f32]), String> {
    let (name, index) = match spec.strip_suffix(']').and_then(|s| s.rsplit_once('[')) {
        Some((n, i)) => (
            n,
            Some(
                i.parse::<usize>()
                    .map_err(|_| format!("tensor reference {spec:?}: bad index"))?,
            ),
        ),
        None => (spec, None),
    };
    let t = tensors.get(name).ok_or_else(|| {
        let near: Vec<&str> = tensors
            .keys()
            .filter(|k| k.contains(name.rsplit('/').next().unwrap_or(name)))
            .take(4)
            .copied()
            .collect();
        if near.is_empty() {
            format!("tensor {name:?} not found in the weights file")
        } else {
            format!(
                "tensor {name:?} not found in the weights file (similar: {})",
                near.join(", ")
            )
        }
    })?;
    match index {
        None => Ok((t.shape.clone(), &t.data)),
        Some(i) => {
            let first = *t.shape.first().unwrap_or(&0);
            if i >= first {
                return Err(format!(
                    "tensor {spec:?}: index {i} beyond its first dimension {first}"
                ));
            }
            let rest: Vec<usize> = t.shape[1..].to_vec();
            let n: usize = rest.iter().product();
            Ok((rest, &t.data[i * n..(i + 1) * n]))
        }
    }
}

/// Rows and columns of a stored tensor seen as a matrix (a vector is one row).
fn as_matrix(shape: &[usize]) -> Option<(usize, usize)> {
    match shape {
        [n] => Some((1, *n)),
        [r, c] => Some((*r, *c)),
        _ => None,
    }
}

/// Row order that turns gate blocks stored in `from` order into ours.
fn gate_perm(from: &str) -> Result<[usize; 3], String> {
    let from: Vec<char> = from
        .chars()
        .map(|c| if c == 'h' { 'n' } else { c })
        .collect();
    let mut perm = [0; 3];
    for (i, g) in OUR_GATES.iter().enumerate() {
        perm[i] = from
            .iter()
            .position(|c| c == g)
            .filter(|_| from.len() == 3)
            .ok_or_else(|| format!("gates {from:?}: need a permutation of r, z and n (or h)"))?;
    }
    Ok(perm)
}

/// Reorders the three gate blocks of a `3H x cols` row-major matrix (or a `3H` vector).
fn reorder_gates(data: &[f32], rows: usize, cols: usize, perm: [usize; 3]) -> Vec<f32> {
    let block = rows / 3 * cols;
    perm.iter()
        .flat_map(|&p| data[p * block..(p + 1) * block].iter().copied())
        .collect()
}

fn transpose(data: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; data.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = data[r * cols + c];
        }
    }
    out
}

/// `s2s import`: reads the configuration and the weights, and writes the f32 model file
/// (checked as a reader will read it, written atomically). Returns its size in bytes and
/// its number of tensors.
pub fn import_file(config: &Path, weights: &Path, output: &Path) -> Result<(usize, usize)> {
    let cfg = Config::load(config)?;
    let tensors = read_weights(weights)?;
    let builder = import(&cfg, &tensors)?;
    let bytes = builder.to_bytes().map_err(Error::model(output))?;
    LoadedModel::from_bytes(output, &bytes)?;
    write_atomic(output, &bytes)?;
    Ok((bytes.len(), builder.tensors.len()))
}

/// Builds the f32 model file of `cfg` from the tensors of a weights file; errors name
/// the configuration and the layer.
pub fn import(cfg: &Config, tensors: &[Tensor]) -> Result<ModelBuilder> {
    let desc = cfg.desc()?;
    import_desc(cfg, desc, tensors).map_err(|(layer, message)| {
        let place = match layer {
            Some(name) => Place::Inside(format!("layer {name}")),
            None => Place::File,
        };
        cfg.error(place, message)
    })
}

/// [`import`] once the description is checked; errors are (layer, message).
fn import_desc(
    cfg: &Config,
    desc: seq2seq::ModelDesc,
    tensors: &[Tensor],
) -> Result<ModelBuilder, (Option<String>, String)> {
    let by_name: BTreeMap<&str, &Tensor> = tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let specs = desc.layer_specs();
    let names: Vec<String> = specs.iter().map(layer_name).collect();
    for key in cfg.weights.keys() {
        if !names.contains(key) {
            return Err((
                None,
                format!(
                    "[weights] {key:?} is not a layer of this model (its layers: {})",
                    names.join(", ")
                ),
            ));
        }
    }
    let mut b = ModelBuilder::new(PrecisionKind::F32, desc);
    b.src_vocab = cfg.source.tokens.clone();
    b.tgt_vocab = cfg.target.tokens.clone();
    b.separator = cfg.target.separator.clone();
    for (spec, name) in specs.iter().zip(&names) {
        let m = cfg
            .weights
            .get(name)
            .ok_or_else(|| (None, format!("[weights] has no entry for layer {name:?}")))?
            .full();
        let ctx = |e: String| (Some(name.clone()), e);
        let perm = m.gates.as_deref().map(gate_perm).transpose().map_err(ctx)?;
        let is_gru = spec.rows % 3 == 0
            && matches!(
                spec.role,
                seq2seq::format::Role::EncWih
                    | seq2seq::format::Role::EncWhh
                    | seq2seq::format::Role::DecWih
                    | seq2seq::format::Role::DecWhh
            );
        if perm.is_some() && !is_gru {
            return Err(ctx("gates only apply to GRU matrices".into()));
        }

        let (shape, data) = resolve(&by_name, &m.weight).map_err(ctx)?;
        let (mut r, mut c) = as_matrix(&shape).ok_or_else(|| {
            ctx(format!(
                "tensor {:?} has shape {shape:?}, not a matrix",
                m.weight
            ))
        })?;
        let mut w = data.to_vec();
        if m.transpose {
            w = transpose(&w, r, c);
            (r, c) = (c, r);
        }
        if (r, c) != (spec.rows, spec.cols) {
            return Err(ctx(format!(
                "tensor {:?} gives a {r}x{c} matrix{}, the configuration needs {}x{}",
                m.weight,
                if m.transpose {
                    " after transposing"
                } else {
                    ""
                },
                spec.rows,
                spec.cols
            )));
        }
        if let Some(p) = perm {
            w = reorder_gates(&w, r, c, p);
        }
        let bias = match &m.bias {
            None => None,
            Some(_) if spec.is_embedding() => {
                return Err(ctx("an embedding has no bias".into()));
            }
            Some(bn) => {
                let (bshape, bdata) = resolve(&by_name, bn).map_err(ctx)?;
                if bdata.len() != spec.rows {
                    return Err(ctx(format!(
                        "bias {bn:?} has shape {bshape:?}, the configuration needs {} values",
                        spec.rows
                    )));
                }
                Some(match perm {
                    Some(p) => reorder_gates(bdata, spec.rows, 1, p),
                    None => bdata.to_vec(),
                })
            }
        };
        b.linear_f32((spec.role, spec.layer, spec.dir), r, c, &w, bias.as_deref());
    }
    if let Some(t) = b.tensors.iter().find(|t| t.dtype != DType::F32) {
        return Err((None, format!("internal: tensor {} is not f32", t.id)));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_permutations() {
        assert_eq!(gate_perm("rzn").unwrap(), [0, 1, 2]);
        assert_eq!(gate_perm("zrh").unwrap(), [1, 0, 2]);
        assert!(gate_perm("rz").is_err());
        assert!(gate_perm("rzq").is_err());
        // Keras [z, r, h] blocks of one row each -> ours [r, z, n].
        assert_eq!(
            reorder_gates(&[1.0, 2.0, 3.0], 3, 1, [1, 0, 2]),
            [2.0, 1.0, 3.0]
        );
    }

    #[test]
    fn transpose_and_indexing() {
        assert_eq!(
            transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3),
            [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        );
        let t = Tensor {
            name: "b".into(),
            shape: vec![2, 3],
            data: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        };
        let m: BTreeMap<&str, &Tensor> = [("b", &t)].into_iter().collect();
        assert_eq!(
            resolve(&m, "b[1]").unwrap(),
            (vec![3], &[4.0, 5.0, 6.0][..])
        );
        assert!(resolve(&m, "b[2]").unwrap_err().contains("beyond"));
        assert!(resolve(&m, "c").unwrap_err().contains("not found"));
    }
}
