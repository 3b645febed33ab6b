//! `s2s import`: a configuration plus a trained weights file into an f32 model file.

pub mod cells;
pub mod config;
pub mod decoding;
pub mod describe;
pub mod orient;
pub mod tokens_file;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use s2s_kernels::PrecisionKind;
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::{LayerSpec, Role};
use seq2seq::format::{DType, Slot, TensorId};

use crate::error::{Error, Place, Result};
use crate::formats::{read_weights_file, Tensor};
use crate::import::cells::{cell_of, gate_perm, our_gates, reorder_gates};
use crate::import::config::{tensor_reference, Config, HalfName};
use crate::import::orient::{orient, Explained, Matrix, Sides, Why};
use crate::io::write_atomic;
use crate::model::LoadedModel;
use s2s_weights::Graph;

/// The name of a layer in `[weights]`.
pub fn layer_name(s: &LayerSpec) -> String {
    TensorId::new(s.role, s.layer, s.dir, Slot::Weight)
        .layer_name()
        .to_string()
}

/// The tensors of one weights file, under the file name a configuration's `file` key
/// uses.
pub struct WeightFile {
    /// The file name (the last component of the path given to `--weights`).
    pub label: String,
    /// Its float tensors.
    pub tensors: Vec<Tensor>,
    /// Its tensors that are not floats, `(name, element type)`.
    pub skipped: Vec<(String, String)>,
    /// How an ONNX model's nodes use its tensors (`None` for the other formats).
    pub graph: Option<Graph>,
}

impl WeightFile {
    /// Reads a weights file (any supported format): the tensors named in `wanted`,
    /// or all of them for `None`.
    pub fn read(path: &Path, wanted: Option<&BTreeSet<String>>) -> Result<WeightFile> {
        let w = read_weights_file(path, wanted)?;
        Ok(WeightFile {
            label: path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            tensors: w.tensors,
            skipped: w.skipped,
            graph: w.graph,
        })
    }
}

/// An import error before the configuration file is added ([`import_files`]): the
/// message of its line, and the layer it is about, if any.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct LayerError {
    layer: Option<String>,
    message: String,
}

impl LayerError {
    /// An error about no layer in particular (or not yet known).
    fn new(message: impl Into<String>) -> Self {
        LayerError {
            layer: None,
            message: message.into(),
        }
    }

    /// The same error, about `layer`.
    fn of(self, layer: &str) -> Self {
        LayerError {
            layer: Some(layer.to_string()),
            ..self
        }
    }
}

/// The tensors of every weights file, by file and name.
struct Sources<'t> {
    files: Vec<(&'t str, BTreeMap<&'t str, &'t Tensor>)>,
    /// The ONNX graphs, by file label.
    graphs: BTreeMap<&'t str, &'t Graph>,
    /// The tensors that are not floats, by name: their element type.
    skipped: BTreeMap<&'t str, &'t str>,
}

impl<'t> Sources<'t> {
    fn new(files: &'t [WeightFile]) -> Self {
        Sources {
            files: files
                .iter()
                .map(|f| {
                    let by_name = f.tensors.iter().map(|t| (t.name.as_str(), t)).collect();
                    (f.label.as_str(), by_name)
                })
                .collect(),
            graphs: files
                .iter()
                .filter_map(|f| Some((f.label.as_str(), f.graph.as_ref()?)))
                .collect(),
            skipped: files
                .iter()
                .flat_map(|f| &f.skipped)
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect(),
        }
    }

    /// What a missing tensor's message says about the files looked in.
    fn where_looked(&self) -> String {
        match &self.files[..] {
            [(label, _)] => format!("the weights file {label}"),
            files => {
                let labels: Vec<&str> = files.iter().map(|(l, _)| *l).collect();
                format!("the weights files {}", labels.join(", "))
            }
        }
    }

    /// The tensor `name` of `file`, or of whichever file holds it (exactly one may),
    /// with the label of its file.
    fn find(&self, name: &str, file: Option<&str>) -> Result<(&'t str, &'t Tensor), LayerError> {
        let files: Vec<&(&str, BTreeMap<&str, &Tensor>)> = match file {
            Some(f) => {
                let chosen: Vec<_> = self.files.iter().filter(|(l, _)| *l == f).collect();
                if chosen.is_empty() {
                    let labels: Vec<&str> = self.files.iter().map(|(l, _)| *l).collect();
                    return Err(LayerError::new(format!(
                        "file {f:?} is not a --weights file (they are: {})",
                        labels.join(", ")
                    )));
                }
                chosen
            }
            None => self.files.iter().collect(),
        };
        let found: Vec<(&str, &Tensor)> = files
            .iter()
            .filter_map(|(l, m)| m.get(name).map(|t| (*l, *t)))
            .collect();
        match &found[..] {
            [(l, t)] => Ok((*l, *t)),
            [] if self.skipped.contains_key(name) => Err(LayerError::new(format!(
                "tensor {name:?} has dtype {}, expected float (f16, bf16, f32 or f64)",
                self.skipped[name]
            ))),
            [] => {
                let tail = name.rsplit(['/', '.', ':']).next().unwrap_or(name);
                let near: Vec<&str> = files
                    .iter()
                    .flat_map(|(_, m)| m.keys())
                    .filter(|k| !tail.is_empty() && k.contains(tail))
                    .take(4)
                    .copied()
                    .collect();
                let looked = match file {
                    Some(f) => format!("the weights file {f}"),
                    None => self.where_looked(),
                };
                if near.is_empty() {
                    Err(LayerError::new(format!(
                        "tensor {name:?} not found in {looked}"
                    )))
                } else {
                    Err(LayerError::new(format!(
                        "tensor {name:?} not found in {looked} (similar: {})",
                        near.join(", ")
                    )))
                }
            }
            several => {
                let labels: Vec<&str> = several.iter().map(|(l, _)| *l).collect();
                Err(LayerError::new(format!(
                    "tensor {name:?} is in {}: say which with file = {:?}",
                    labels.join(" and "),
                    labels[0]
                )))
            }
        }
    }

    /// Looks up `spec`, i.e. `name` or `name[i]` (index `i` of the first dimension),
    /// in `file` (or in the one file holding it), then takes index `direction` of the
    /// first dimension and the `half` of the last one when asked. Returns the shape and
    /// the data, and the tensor's file label and stored rank.
    fn resolve(
        &self,
        spec: &str,
        file: Option<&str>,
        direction: Option<usize>,
        half: Option<HalfName>,
    ) -> Result<Resolved<'t>, LayerError> {
        let (name, index) = match tensor_reference(spec) {
            (n, Some(i)) => (
                n,
                Some(i.parse::<usize>().map_err(|_| {
                    LayerError::new(format!("tensor reference {spec:?}: bad index"))
                })?),
            ),
            (n, None) => (n, None),
        };
        if index.is_some() && direction.is_some() {
            return Err(LayerError::new(format!(
                "tensor reference {spec:?}: give the index as [i] or as direction, not both"
            )));
        }
        let (label, t) = self.find(name, file)?;
        let rank = t.shape.len();
        let (mut shape, mut data) = (t.shape.clone(), &t.data[..]);
        if let Some(i) = index.or(direction) {
            let first = *shape.first().unwrap_or(&0);
            if i >= first {
                let what = if index.is_some() {
                    "index"
                } else {
                    "direction"
                };
                return Err(LayerError::new(format!(
                    "tensor {spec:?} of shape {shape:?}: {what} {i} beyond its first dimension {first}"
                )));
            }
            shape.remove(0);
            let n: usize = shape.iter().product();
            data = &data[i * n..(i + 1) * n];
        }
        if let Some(h) = half {
            let Some(&last) = shape.last().filter(|&&n| n % 2 == 0 && shape.len() == 1) else {
                return Err(LayerError::new(format!(
                    "tensor {spec:?} of shape {shape:?}: bias_half needs a vector of an even length (after direction)"
                )));
            };
            let n = last / 2;
            shape = vec![n];
            data = match h {
                HalfName::Input => &data[..n],
                HalfName::Recurrent => &data[n..],
            };
        }
        Ok(Resolved {
            shape,
            data,
            file: label,
            rank,
        })
    }
}

/// A tensor reference resolved: the part of the tensor it names.
#[derive(Debug, PartialEq)]
struct Resolved<'t> {
    /// Its shape (after the index and half).
    shape: Vec<usize>,
    /// Its values.
    data: &'t [f32],
    /// The label of the file holding the tensor.
    file: &'t str,
    /// The tensor's number of dimensions as stored.
    rank: usize,
}

/// Rows and columns of a stored tensor seen as a matrix (a vector is one row).
fn as_matrix(shape: &[usize]) -> Option<(usize, usize)> {
    match shape {
        [n] => Some((1, *n)),
        [r, c] => Some((*r, *c)),
        _ => None,
    }
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

/// `s2s import`: reads the configuration and the weights files (one, or several whose
/// tensors the configuration tells apart by name or by `file`), and writes the f32
/// model file (checked as a reader will read it, written atomically). Returns its size
/// in bytes, its number of tensors, and the orientation each layer's matrix got and
/// why (`s2s import --explain`).
pub fn import_file(
    config: &Path,
    weights: &[PathBuf],
    output: &Path,
) -> Result<(usize, usize, Vec<Explained>)> {
    let cfg = Config::load(config)?;
    if weights.is_empty() {
        return Err(Error::usage("s2s import needs at least one --weights file"));
    }
    let mut files: Vec<WeightFile> = Vec::new();
    let wanted = cfg.tensor_names();
    for path in weights {
        let file = WeightFile::read(path, Some(&wanted))?;
        if let Some(same) = files.iter().find(|f| f.label == file.label) {
            return Err(Error::usage(format!(
                "two --weights files are named {} ({} is the second): a configuration tells files apart by name",
                same.label,
                path.display()
            )));
        }
        files.push(file);
    }
    let (builder, explained) = import_explained(&cfg, &files)?;
    let bytes = builder.to_bytes().map_err(Error::model(output))?;
    LoadedModel::from_bytes(output, &bytes)?;
    write_atomic(output, &bytes)?;
    Ok((bytes.len(), builder.tensors.len(), explained))
}

/// Builds the f32 model file of `cfg` from the tensors of a weights file; errors name
/// the configuration and the layer.
pub fn import(cfg: &Config, tensors: &[Tensor]) -> Result<ModelBuilder> {
    let file = WeightFile {
        label: "weights".into(),
        tensors: tensors.to_vec(),
        skipped: Vec::new(),
        graph: None,
    };
    import_files(cfg, std::slice::from_ref(&file))
}

/// [`import`] from several weights files (the configuration's `file` keys name them by
/// [`WeightFile::label`]).
pub fn import_files(cfg: &Config, files: &[WeightFile]) -> Result<ModelBuilder> {
    Ok(import_explained(cfg, files)?.0)
}

/// [`import_files`], with the orientation each layer's matrix got and why.
pub fn import_explained(
    cfg: &Config,
    files: &[WeightFile],
) -> Result<(ModelBuilder, Vec<Explained>)> {
    let desc = cfg.desc()?;
    let mut b = import_desc(cfg, desc, files).map_err(|LayerError { layer, message }| {
        let place = match layer {
            Some(name) => Place::Inside(format!("layer {name}")),
            None => Place::File,
        };
        cfg.error(place, message)
    })?;
    // The prefix slots' names and tokens (the description holds their sizes).
    for s in decoding::slots(cfg)? {
        b.0.slot(&s.name, &s.tokens, s.default)
            .map_err(|e| cfg.error(Place::File, e.to_string()))?;
    }
    Ok(b)
}

/// The tensors `[weights]` maps to the decoder's layers and to the encoder's (and the
/// memory projection): what a general attention matrix's other operand is computed
/// from tells the query from the memory ([`orient`]).
fn sides(cfg: &Config, specs: &[LayerSpec], names: &[String]) -> Sides {
    let mut sides = Sides {
        decoder: BTreeSet::new(),
        encoder: BTreeSet::new(),
    };
    for (spec, name) in specs.iter().zip(names) {
        let side = match spec.role {
            Role::DecEmb | Role::DecWih | Role::DecWhh => &mut sides.decoder,
            Role::EncEmb | Role::EncWih | Role::EncWhh | Role::MemoryProj => &mut sides.encoder,
            _ => continue,
        };
        if let Some(m) = cfg.weights.get(name) {
            side.extend(m.tensor_names());
        }
    }
    sides
}

/// [`import`] once the description is checked; errors name the layer when they are
/// about one.
fn import_desc(
    cfg: &Config,
    desc: seq2seq::ModelDesc,
    files: &[WeightFile],
) -> Result<(ModelBuilder, Vec<Explained>), LayerError> {
    let sources = Sources::new(files);
    let specs = desc.layer_specs();
    let names: Vec<String> = specs.iter().map(layer_name).collect();
    for key in cfg.weights.keys() {
        if !names.contains(key) {
            return Err(LayerError::new(format!(
                "[weights] {key:?} is not a layer of this model (its layers: {})",
                names.join(", ")
            )));
        }
    }
    let sides = sides(cfg, &specs, &names);
    let mut explains = Vec::new();
    let mut b = ModelBuilder::new(PrecisionKind::F32, desc);
    b.src_vocab = cfg.source.tokens.clone();
    b.tgt_vocab = cfg.target.tokens.clone();
    b.separator = cfg.target.separator.clone();
    for (spec, name) in specs.iter().zip(&names) {
        let m = cfg
            .weights
            .get(name)
            .ok_or_else(|| LayerError::new(format!("[weights] has no entry for layer {name:?}")))?
            .full();
        let cell = cell_of(&desc, spec.role);
        let perm = match (cell, m.gates.as_deref()) {
            (_, None) => None,
            (Some(kind), Some(g)) => {
                Some(gate_perm(kind, g).map_err(|e| LayerError::new(e.to_string()).of(name))?)
            }
            (None, Some(_)) => {
                return Err(LayerError::new("gates only apply to recurrent matrices").of(name))
            }
        };
        let ctx = |e: String| LayerError::new(e).of(name);
        // What a recurrent matrix of the wrong size most likely is.
        let fits = |r: usize| match cell {
            Some(kind) => {
                let g = our_gates(kind);
                let h = spec.rows / g.len();
                let gates: Vec<String> = g.iter().map(|c| c.to_string()).collect();
                if r == 3 * h || r == 4 * h {
                    format!(
                        " (a {} of {h} units has {} x {h} = {} rows, gates [{}])",
                        kind.name(),
                        g.len(),
                        spec.rows,
                        gates.join(", ")
                    )
                } else {
                    String::new()
                }
            }
            None => String::new(),
        };

        let file = m.file.as_deref();
        let Resolved {
            shape,
            data,
            file: label,
            rank,
        } = sources
            .resolve(&m.weight, file, m.direction, None)
            .map_err(|e| e.of(name))?;
        let (mut r, mut c) = as_matrix(&shape).ok_or_else(|| {
            ctx(format!(
                "tensor {:?} has shape {shape:?}, not a matrix",
                m.weight
            ))
        })?;
        let explained = orient(
            &Matrix {
                role: spec.role,
                layer: name,
                name: tensor_reference(&m.weight).0,
                spec: match m.direction {
                    Some(d) => format!("{}[{d}]", m.weight),
                    None => m.weight.clone(),
                },
                file: label,
                // A vector is a row as stored, whatever the graph does with it.
                graph: sources
                    .graphs
                    .get(label)
                    .copied()
                    .filter(|_| shape.len() == 2),
                rank,
                stored: (r, c),
                needed: (spec.rows, spec.cols),
                configured: m.transpose,
            },
            &sides,
        )
        .map_err(ctx)?;
        let mut w = data.to_vec();
        if explained.transpose {
            w = transpose(&w, r, c);
            (r, c) = (c, r);
        }
        if (r, c) != (spec.rows, spec.cols) {
            return Err(ctx(format!(
                "tensor {:?} gives a {r}x{c} matrix{}, the configuration needs {}x{}{}",
                m.weight,
                match (&explained.why, explained.transpose) {
                    (Why::Graph(_), true) => " after transposing it as the graph uses it",
                    (_, true) => " after transposing",
                    (_, false) => "",
                },
                spec.rows,
                spec.cols,
                fits(r)
            )));
        }
        if let Some(p) = &perm {
            w = reorder_gates(&w, r, c, p);
        }
        let bias = match &m.bias {
            None if m.bias_half.is_some() => {
                return Err(ctx("bias_half without a bias".into()));
            }
            None => None,
            Some(_) if spec.is_embedding() => {
                return Err(ctx("an embedding has no bias".into()));
            }
            Some(bn) => {
                let Resolved {
                    shape: bshape,
                    data: bdata,
                    ..
                } = sources
                    .resolve(bn, file, m.direction, m.bias_half)
                    .map_err(|e| e.of(name))?;
                if bdata.len() != spec.rows {
                    return Err(ctx(format!(
                        "bias {bn:?} has shape {bshape:?}, the configuration needs {} values",
                        spec.rows
                    )));
                }
                Some(match &perm {
                    Some(p) => reorder_gates(bdata, spec.rows, 1, p),
                    None => bdata.to_vec(),
                })
            }
        };
        b.linear_f32((spec.role, spec.layer, spec.dir), r, c, &w, bias.as_deref());
        explains.push(explained);
    }
    if let Some(t) = b.tensors.iter().find(|t| t.dtype != DType::F32) {
        return Err(LayerError::new(format!(
            "internal: tensor {} is not f32",
            t.id
        )));
    }
    Ok((b, explains))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolved reference's shape and data.
    fn sd(r: Resolved<'_>) -> (Vec<usize>, &[f32]) {
        (r.shape, r.data)
    }

    fn file(label: &str, tensors: &[(&str, &[usize], &[f32])]) -> WeightFile {
        WeightFile {
            label: label.into(),
            tensors: tensors
                .iter()
                .map(|(name, shape, data)| Tensor {
                    name: name.to_string(),
                    shape: shape.to_vec(),
                    data: data.to_vec().into(),
                })
                .collect(),
            skipped: Vec::new(),
            graph: None,
        }
    }

    #[test]
    fn transpose_and_indexing() {
        assert_eq!(
            transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3),
            [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        );
        let files = [file(
            "w",
            &[("b", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
        )];
        let s = Sources::new(&files);
        assert_eq!(
            s.resolve("b[1]", None, None, None).map(sd).unwrap(),
            (vec![3], &[4.0, 5.0, 6.0][..])
        );
        assert!(s
            .resolve("b[2]", None, None, None)
            .unwrap_err()
            .to_string()
            .contains("beyond"));
        assert!(s
            .resolve("c", None, None, None)
            .unwrap_err()
            .to_string()
            .contains("not found"));
    }

    #[test]
    fn directions_and_bias_halves_of_packed_onnx_tensors() {
        // B [2 directions, 2 * 2]: [Wb; Rb] per direction.
        let b: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let w: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let files = [file(
            "enc.onnx",
            &[("B", &[2, 4], &b), ("W", &[2, 2, 3], &w)],
        )];
        let s = Sources::new(&files);
        let half = |d, h| s.resolve("B", None, Some(d), Some(h)).map(sd).unwrap();
        assert_eq!(half(0, HalfName::Input), (vec![2], &[0.0, 1.0][..]));
        assert_eq!(half(0, HalfName::Recurrent), (vec![2], &[2.0, 3.0][..]));
        assert_eq!(half(1, HalfName::Input), (vec![2], &[4.0, 5.0][..]));
        assert_eq!(half(1, HalfName::Recurrent), (vec![2], &[6.0, 7.0][..]));
        assert_eq!(
            s.resolve("W", None, Some(1), None).map(sd).unwrap(),
            (vec![2, 3], &w[6..])
        );
        let e = s.resolve("W", None, Some(2), None).unwrap_err().to_string();
        assert!(
            e.contains("direction 2 beyond its first dimension 2"),
            "{e}"
        );
        let e = s
            .resolve("W[0]", None, Some(0), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not both"), "{e}");
        // A half of a matrix, or of an odd length, is refused.
        let e = s
            .resolve("W", None, Some(0), Some(HalfName::Input))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bias_half needs a vector"), "{e}");
    }

    #[test]
    fn tensors_of_several_files_by_name_or_by_file() {
        let files = [
            file(
                "encoder.onnx",
                &[("emb", &[1], &[1.0]), ("shared", &[1], &[2.0])],
            ),
            file(
                "decoder.onnx",
                &[("out", &[1], &[3.0]), ("shared", &[1], &[4.0])],
            ),
        ];
        let s = Sources::new(&files);
        assert_eq!(s.resolve("out", None, None, None).map(sd).unwrap().1, [3.0]);
        assert_eq!(s.resolve("emb", None, None, None).map(sd).unwrap().1, [1.0]);
        let e = s
            .resolve("shared", None, None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "tensor \"shared\" is in encoder.onnx and decoder.onnx: say which with file = \"encoder.onnx\""
        );
        assert_eq!(
            s.resolve("shared", Some("decoder.onnx"), None, None)
                .map(sd)
                .unwrap()
                .1,
            [4.0]
        );
        let e = s
            .resolve("out", Some("encoder.onnx"), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not found in the weights file encoder.onnx"),
            "{e}"
        );
        let e = s
            .resolve("out", Some("dec.onnx"), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a --weights file (they are: encoder.onnx, decoder.onnx)"),
            "{e}"
        );
        let e = s
            .resolve("missing", None, None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not found in the weights files encoder.onnx, decoder.onnx"),
            "{e}"
        );
    }
}
