//! Reader for ONNX models (`.onnx`, e.g. from `torch.onnx.export`): the weights are the
//! graph's initializers.
//!
//! The protobuf wire format is decoded by `prost` into the few messages declared in
//! `proto` (`ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `TensorProto`,
//! with the field numbers of `onnx.proto`); every other field is skipped unread, so
//! type information and documentation cost nothing and cannot fail. Subgraphs (`If`,
//! `Loop`, `Scan` bodies) are kept as bytes, decoded only by [`graph_onnx`] for
//! `s2s tensors --graph`: their weights are not read. The
//! graph walk (`graph`) collects the tensors below by name; external data is read by
//! `external`; this file reads the tensors' data and lists them with their consumers.
//!
//! Tensors returned, by name:
//! - every initializer of the main graph;
//! - the output of every `Constant` node whose value is a dense tensor (`value`) or a
//!   float (`value_float`, `value_floats`);
//! - the output of an `Identity` node (or a chain of them) whose input is one of the
//!   above: exporters put weights shared by two places, or read under a second name,
//!   behind an `Identity` (`onnx::MatMul_531 = Identity(onnx::MatMul_530)`).
//!
//! Element data comes from `raw_data` (little-endian), from the typed fields
//! (`float_data`, `double_data`, `int32_data` holding the bit patterns of float16 and
//! bfloat16), or from an external data file (`data_location = EXTERNAL`): its
//! `location` must be a relative path inside the model's folder (no `..`, no absolute
//! path, and no symbolic link that leads out of the folder), `offset` and `length`
//! must lie within the file and match the tensor's size. Float, double, float16 and
//! bfloat16 tensors become `f32`; integer and boolean tensors (shapes, indices) are
//! not read but listed with their element type, as by the other readers; 8-bit and
//! 4-bit floats are errors.

mod external;
mod graph;
mod proto;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::convert::{decode, ByteOrder, FloatKind};
use crate::error::{Error, Place, Problem, Result};
use crate::graph::{Graph, Node};
use crate::tensor::{Tensor, Weights, MAX_TENSOR_BYTES};
use external::read_external;
use graph::parse;
pub(crate) use graph::Origin;
use prost::Message;
use proto::{
    dtype_name, kind_of, Kind, NodeProto, TensorProto, ATTR_FLOAT, ATTR_FLOATS, ATTR_INT,
    ATTR_INTS, ATTR_STRING,
};

/// Whether `bytes` starts like a serialized `ModelProto`: its first field is
/// `ir_version` (field 1, a varint: tag byte `0x08`), as every ONNX writer orders it.
pub(crate) fn is_onnx(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0x08)
}

/// A node input that a tensor feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Consumer {
    /// The node's operator (`GRU`, `Gemm`, `MatMul`...).
    pub op_type: String,
    /// The node's name (may be empty in a hand-made graph).
    pub node: String,
    /// The input slot, from 0.
    pub slot: usize,
    /// The node's scalar attributes that decide a weight's layout (`transB=1`,
    /// `direction=bidirectional`, `hidden_size=64`, `linear_before_reset=1`...).
    pub attributes: String,
}

/// One tensor of an ONNX file, as listed by `s2s tensors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Its name (for an `Identity` alias, the node's output).
    pub name: String,
    /// Its dimensions.
    pub shape: Vec<usize>,
    /// Its element type.
    pub dtype: String,
    /// Where it comes from.
    pub origin: Origin,
    /// Every node input it feeds.
    pub consumers: Vec<Consumer>,
}

/// A tensor's shape as sizes; negative dimensions are refused.
fn shape_of(t: &TensorProto) -> Result<Vec<usize>, Problem> {
    t.dims
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| Problem(format!("dimension {d} in shape {:?}", t.dims)))
        })
        .collect()
}

/// Reads every float tensor (initializers, constants, their `Identity` aliases).
/// External data files are looked up in `folder` (the model's own folder); without one
/// (bytes from memory) a tensor with external data is an error. An alias shares its
/// root's data (one `Arc`), however many aliases a tensor has.
pub(crate) fn read_onnx(bytes: &[u8], origin: &str, folder: Option<&Path>) -> Result<Weights> {
    let parsed = parse(bytes, origin)?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    // Roots by name, for their aliases.
    let mut read: BTreeMap<&str, Arc<Vec<f32>>> = BTreeMap::new();
    let mut skipped_roots: BTreeMap<&str, String> = BTreeMap::new();
    for (name, (t, from)) in &parsed.tensors {
        let fail = |m: Problem| Error::onnx(origin, Place::Tensor(name.clone()), m.0);
        let kind = match kind_of(t.data_type) {
            Kind::Float(kind) => kind,
            Kind::Skip => {
                skipped.push((name.clone(), dtype_name(t.data_type)));
                skipped_roots.insert(name, dtype_name(t.data_type));
                continue;
            }
            Kind::Unsupported => {
                return Err(fail(Problem(format!(
                    "unsupported element type {}",
                    dtype_name(t.data_type)
                ))))
            }
        };
        let shape = shape_of(t).map_err(fail)?;
        let count = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| fail(Problem(format!("shape {shape:?} is too large"))))?;
        let size = count
            .checked_mul(kind.size())
            .filter(|&size| size as u64 <= MAX_TENSOR_BYTES)
            .ok_or_else(|| {
                fail(Problem(format!(
                    "shape {shape:?} of {} is {} bytes, more than the largest tensor read ({MAX_TENSOR_BYTES} bytes)",
                    dtype_name(t.data_type),
                    (count as u128) * (kind.size() as u128)
                )))
            })?;
        let data = Arc::new(match from {
            Origin::External(location, offset) => {
                let folder = folder.ok_or_else(|| {
                    fail(Problem(format!(
                        "its data is in the external file {location:?}, which is looked for beside the model: read the model from its file"
                    )))
                })?;
                let raw = read_external(folder, location, *offset, size, t).map_err(fail)?;
                decode(&raw, kind, ByteOrder::Little)
            }
            _ => typed_data(t, kind, count, size).map_err(fail)?,
        });
        read.insert(name, Arc::clone(&data));
        out.push(Tensor {
            name: name.clone(),
            shape,
            data,
        });
    }
    for (name, alias) in &parsed.aliases {
        let root = alias.root.as_str();
        if let Some(data) = read.get(root) {
            let (t, _) = &parsed.tensors[root];
            out.push(Tensor {
                name: name.clone(),
                shape: shape_of(t)
                    .map_err(|m| Error::onnx(origin, Place::Tensor(root.into()), m.0))?,
                data: Arc::clone(data),
            });
        } else if let Some(dtype) = skipped_roots.get(root) {
            skipped.push((name.clone(), dtype.clone()));
        }
    }
    Ok(Weights {
        tensors: out,
        skipped,
        graph: Some(graph_nodes(&parsed)),
    })
}

/// The elements of a tensor stored in the file: `raw_data` or the typed field of its
/// element type, exactly `count` of them.
fn typed_data(
    t: &TensorProto,
    kind: FloatKind,
    count: usize,
    size: usize,
) -> Result<Vec<f32>, Problem> {
    if !t.raw_data.is_empty() {
        if t.raw_data.len() != size {
            return Err(Problem(format!(
                "raw_data is {} bytes, shape {:?} of {} needs {size}",
                t.raw_data.len(),
                t.dims,
                dtype_name(t.data_type)
            )));
        }
        return Ok(decode(&t.raw_data, kind, ByteOrder::Little));
    }
    let (field, values): (&str, Vec<f32>) = match kind {
        FloatKind::F32 => ("float_data", t.float_data.clone()),
        FloatKind::F64 => (
            "double_data",
            t.double_data.iter().map(|&v| v as f32).collect(),
        ),
        FloatKind::F16 | FloatKind::Bf16 => {
            // Each int32 holds one 16-bit pattern in its low half.
            let mut raw = Vec::with_capacity(t.int32_data.len().saturating_mul(2));
            for &v in &t.int32_data {
                let bits = u16::try_from(v)
                    .map_err(|_| format!("int32_data value {v} is not a 16-bit pattern"))?;
                raw.extend_from_slice(&bits.to_le_bytes());
            }
            ("int32_data", decode(&raw, kind, ByteOrder::Little))
        }
    };
    if values.len() != count {
        return Err(Problem(format!(
            "{field} holds {} values, shape {:?} needs {count}",
            values.len(),
            t.dims
        )));
    }
    Ok(values)
}

/// Every tensor of an ONNX file (of any element type) with the node inputs it feeds,
/// sorted by name, and a one-line summary of the model. Data is not read.
pub(crate) fn list_onnx(bytes: &[u8], origin: &str) -> Result<(String, Vec<Listed>)> {
    let parsed = parse(bytes, origin)?;
    let names: BTreeSet<&str> = parsed
        .tensors
        .keys()
        .chain(parsed.aliases.keys())
        .map(String::as_str)
        .collect();
    let mut consumers: BTreeMap<&str, Vec<Consumer>> = BTreeMap::new();
    for node in &parsed.nodes {
        for (slot, input) in node.input.iter().enumerate() {
            if names.contains(input.as_str()) {
                consumers.entry(input.as_str()).or_default().push(Consumer {
                    op_type: node.op_type.clone(),
                    node: node.name.clone(),
                    slot,
                    attributes: attributes(node),
                });
            }
        }
    }
    let mut listed = Vec::new();
    for (name, (t, from)) in &parsed.tensors {
        let shape =
            shape_of(t).map_err(|m| Error::onnx(origin, Place::Tensor(name.clone()), m.0))?;
        listed.push(Listed {
            name: name.clone(),
            shape,
            dtype: dtype_name(t.data_type),
            origin: from.clone(),
            consumers: consumers.remove(name.as_str()).unwrap_or_default(),
        });
    }
    for (name, alias) in &parsed.aliases {
        let (t, _) = &parsed.tensors[&alias.root];
        let shape =
            shape_of(t).map_err(|m| Error::onnx(origin, Place::Tensor(alias.root.clone()), m.0))?;
        listed.push(Listed {
            name: name.clone(),
            shape,
            dtype: dtype_name(t.data_type),
            origin: Origin::Identity(alias.node.clone(), alias.root.clone()),
            consumers: consumers.remove(name.as_str()).unwrap_or_default(),
        });
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((parsed.summary, listed))
}

/// How deep subgraphs are read by [`graph_onnx`] (a `Loop` body is depth 1, an `If`
/// inside it depth 2).
const MAX_SUBGRAPH_DEPTH: usize = 8;

/// The nodes of the main graph and its initializers, for [`Graph`] (subgraphs are not
/// read: see [`graph_onnx`]).
fn graph_nodes(parsed: &graph::Parsed) -> Graph {
    let mut g = Graph::default();
    add_nodes(&mut g, "", &parsed.nodes);
    g.initializers
        .insert(String::new(), parsed.tensors.keys().cloned().collect());
    g
}

/// Adds `nodes` to `g` as the nodes of the graph at `path`.
fn add_nodes(g: &mut Graph, path: &str, nodes: &[NodeProto]) {
    g.nodes.extend(nodes.iter().map(|n| {
        Node {
            name: n.name.clone(),
            op_type: n.op_type.clone(),
            inputs: n.input.clone(),
            outputs: n.output.clone(),
            ints: n
                .attribute
                .iter()
                .filter(|a| a.r#type == ATTR_INT)
                .map(|a| (a.name.clone(), a.i))
                .collect(),
            int_lists: n
                .attribute
                .iter()
                .filter(|a| a.r#type == ATTR_INTS)
                .map(|a| (a.name.clone(), a.ints.clone()))
                .collect(),
            graph: path.to_string(),
        }
    }));
}

/// The subgraphs of `nodes` (`If` branches, `Loop` and `Scan` bodies), decoded and
/// added to `g` with their nodes' subgraphs, at most [`MAX_SUBGRAPH_DEPTH`] deep.
fn add_subgraphs(
    g: &mut Graph,
    path: &str,
    nodes: &[NodeProto],
    depth: usize,
    origin: &str,
) -> Result<()> {
    for node in nodes {
        for a in &node.attribute {
            let bodies = std::iter::once(&a.g)
                .filter(|b| !b.is_empty())
                .chain(&a.graphs);
            for (i, bytes) in bodies.enumerate() {
                let place = || Place::Inside(format!("node {}", node.name));
                if depth >= MAX_SUBGRAPH_DEPTH {
                    return Err(Error::onnx(
                        origin,
                        place(),
                        format!("subgraphs nested more than {MAX_SUBGRAPH_DEPTH} deep"),
                    ));
                }
                let body = proto::GraphProto::decode(bytes.as_slice()).map_err(|e| {
                    Error::onnx(
                        origin,
                        place(),
                        format!("subgraph {}: not a valid graph (protobuf): {e}", a.name),
                    )
                })?;
                let name = if a.graphs.is_empty() {
                    a.name.clone()
                } else {
                    format!("{}[{i}]", a.name)
                };
                let label = if node.name.is_empty() {
                    "(unnamed)"
                } else {
                    &node.name
                };
                let here = format!("{} {label} {name}", node.op_type);
                let sub = if path.is_empty() {
                    here
                } else {
                    format!("{path} / {here}")
                };
                add_nodes(g, &sub, &body.node);
                g.initializers.insert(
                    sub.clone(),
                    body.initializer.iter().map(|t| t.name.clone()).collect(),
                );
                add_subgraphs(g, &sub, &body.node, depth + 1, origin)?;
            }
        }
    }
    Ok(())
}

/// The nodes of an ONNX model's main graph and of its subgraphs (`If` branches, `Loop`
/// and `Scan` bodies, at most [`MAX_SUBGRAPH_DEPTH`] deep), with each graph's
/// initializers: what `s2s tensors --graph` prints. A damaged subgraph is an error
/// naming its node.
pub(crate) fn graph_onnx(bytes: &[u8], origin: &str) -> Result<Graph> {
    let parsed = parse(bytes, origin)?;
    let mut g = graph_nodes(&parsed);
    add_subgraphs(&mut g, "", &parsed.nodes, 0, origin)?;
    Ok(g)
}

/// A node's scalar attributes as `name=value` (lists of at most 8 integers too).
fn attributes(node: &NodeProto) -> String {
    let mut parts = Vec::new();
    for a in &node.attribute {
        let value = match a.r#type {
            ATTR_INT => a.i.to_string(),
            ATTR_FLOAT => a.f.to_string(),
            ATTR_STRING => String::from_utf8_lossy(&a.s).into_owned(),
            ATTR_INTS if a.ints.len() <= 8 => format!("{:?}", a.ints),
            ATTR_FLOATS if a.floats.len() <= 4 => format!("{:?}", a.floats),
            _ => continue,
        };
        parts.push(format!("{}={value}", a.name));
    }
    parts.join(" ")
}

#[cfg(test)]
pub(crate) mod tests;
