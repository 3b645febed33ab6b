//! Reader for ONNX models (`.onnx`, e.g. from `torch.onnx.export`): the weights are the
//! graph's initializers.
//!
//! The protobuf wire format is decoded by `prost` into the few messages declared below
//! (`ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `TensorProto`, with the
//! field numbers of `onnx.proto`); every other field is skipped unread, so subgraphs,
//! type information and documentation cost nothing and cannot fail.
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

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use prost::Message;

use super::convert::{decode, ByteOrder, FloatKind};
use super::{Tensor, Weights};
use crate::error::{Error, Place, Result};

/// `ModelProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(int64, tag = "1")]
    ir_version: i64,
    #[prost(string, tag = "2")]
    producer_name: String,
    #[prost(string, tag = "3")]
    producer_version: String,
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "8")]
    opset_import: Vec<OperatorSetIdProto>,
}

/// `OperatorSetIdProto`.
#[derive(Clone, PartialEq, Message)]
struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    domain: String,
    #[prost(int64, tag = "2")]
    version: i64,
}

/// `GraphProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
}

/// `NodeProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    op_type: String,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttributeProto>,
}

/// `AttributeProto`: the fields read (not subgraphs).
#[derive(Clone, PartialEq, Message)]
struct AttributeProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(float, tag = "2")]
    f: f32,
    #[prost(int64, tag = "3")]
    i: i64,
    #[prost(bytes = "vec", tag = "4")]
    s: Vec<u8>,
    #[prost(message, optional, tag = "5")]
    t: Option<TensorProto>,
    #[prost(float, repeated, tag = "7")]
    floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    ints: Vec<i64>,
    #[prost(int32, tag = "20")]
    r#type: i32,
}

/// `TensorProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(float, repeated, tag = "4")]
    float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "vec", tag = "9")]
    raw_data: Vec<u8>,
    #[prost(double, repeated, tag = "10")]
    double_data: Vec<f64>,
    #[prost(message, repeated, tag = "13")]
    external_data: Vec<StringStringEntryProto>,
    #[prost(int32, tag = "14")]
    data_location: i32,
}

/// `StringStringEntryProto`.
#[derive(Clone, PartialEq, Message)]
struct StringStringEntryProto {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: i32 = 1;
/// `AttributeProto.AttributeType` codes of the attributes shown in listings.
const ATTR_FLOAT: i32 = 1;
const ATTR_INT: i32 = 2;
const ATTR_STRING: i32 = 3;
const ATTR_FLOATS: i32 = 6;
const ATTR_INTS: i32 = 7;

/// The name of an ONNX element type (`TensorProto.DataType`).
fn dtype_name(code: i32) -> String {
    match code {
        1 => "float32",
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        8 => "string",
        9 => "bool",
        10 => "float16",
        11 => "float64",
        12 => "uint32",
        13 => "uint64",
        14 => "complex64",
        15 => "complex128",
        16 => "bfloat16",
        17 => "float8e4m3fn",
        18 => "float8e4m3fnuz",
        19 => "float8e5m2",
        20 => "float8e5m2fnuz",
        21 => "uint4",
        22 => "int4",
        23 => "float4e2m1",
        other => return format!("data type {other}"),
    }
    .to_string()
}

/// What the readers do with an element type: convert it, skip it, or refuse it.
enum Kind {
    Float(FloatKind),
    Skip,
    Unsupported,
}

fn kind_of(code: i32) -> Kind {
    match code {
        1 => Kind::Float(FloatKind::F32),
        10 => Kind::Float(FloatKind::F16),
        11 => Kind::Float(FloatKind::F64),
        16 => Kind::Float(FloatKind::Bf16),
        2..=9 | 12..=15 | 21 | 22 => Kind::Skip,
        _ => Kind::Unsupported,
    }
}

/// Whether `bytes` starts like a serialized `ModelProto`: its first field is
/// `ir_version` (field 1, a varint: tag byte `0x08`), as every ONNX writer orders it.
pub(crate) fn is_onnx(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0x08)
}

/// Where a tensor of the file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An initializer of the graph, its data in the file.
    Initializer,
    /// An initializer whose data is in an external file (`location`, `offset`).
    External(String, u64),
    /// The output of a `Constant` node (its name).
    Constant(String),
    /// The output of an `Identity` node (its name) over the named tensor.
    Identity(String, String),
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

/// Tensors by name, with where they come from.
type Tensors = BTreeMap<String, (TensorProto, Origin)>;

/// A decoded file: the graph's weight-holding tensors by name.
struct Parsed {
    /// Model facts for the listing's heading.
    summary: String,
    /// Name -> (tensor, origin); aliases point at a copy of their source.
    tensors: Tensors,
    /// The nodes, for consumers.
    nodes: Vec<NodeProto>,
}

/// Decodes the protobuf and collects initializers, constants and their `Identity`
/// aliases. Errors name `origin`.
fn parse(bytes: &[u8], origin: &str) -> Result<Parsed> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        Error::invalid(
            origin,
            Place::File,
            format!("not a valid ONNX model (protobuf): {e}"),
        )
    })?;
    if model.ir_version <= 0 {
        return Err(Error::invalid(
            origin,
            Place::File,
            format!(
                "not an ONNX model: ir_version is {} (an exporter writes 3 or more)",
                model.ir_version
            ),
        ));
    }
    let graph = model
        .graph
        .ok_or_else(|| Error::invalid(origin, Place::File, "the ONNX model has no graph"))?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map_or_else(
            || "no default opset".to_string(),
            |o| format!("opset {}", o.version),
        );
    let producer = match (
        model.producer_name.as_str(),
        model.producer_version.as_str(),
    ) {
        ("", _) => "unknown producer".to_string(),
        (name, "") => name.to_string(),
        (name, version) => format!("{name} {version}"),
    };
    let summary = format!(
        "ONNX IR {}, {opset}, graph {:?} of {} nodes, {} initializers, from {producer}",
        model.ir_version,
        graph.name,
        graph.node.len(),
        graph.initializer.len()
    );
    let mut tensors: Tensors = BTreeMap::new();
    let add = |tensors: &mut Tensors, name: &str, t: TensorProto, from: Origin| {
        if name.is_empty() {
            return Err(Error::invalid(origin, Place::File, "a tensor has no name"));
        }
        if tensors.insert(name.to_string(), (t, from)).is_some() {
            return Err(Error::invalid(
                origin,
                Place::File,
                format!("tensor name {name} appears twice"),
            ));
        }
        Ok(())
    };
    for t in &graph.initializer {
        let from = if t.data_location == EXTERNAL {
            let entry = |key: &str| {
                t.external_data
                    .iter()
                    .find(|e| e.key == key)
                    .map(|e| e.value.clone())
            };
            let offset = entry("offset").unwrap_or_else(|| "0".into());
            let offset = offset.parse::<u64>().map_err(|_| {
                Error::invalid(
                    origin,
                    Place::Tensor(t.name.clone()),
                    format!("external data offset {offset:?} is not a number"),
                )
            })?;
            let location = entry("location").ok_or_else(|| {
                Error::invalid(
                    origin,
                    Place::Tensor(t.name.clone()),
                    "external data without a location",
                )
            })?;
            Origin::External(location, offset)
        } else {
            Origin::Initializer
        };
        add(&mut tensors, &t.name, t.clone(), from)?;
    }
    for node in graph.node.iter().filter(|n| n.op_type == "Constant") {
        let Some(output) = node.output.first() else {
            continue;
        };
        let value = node.attribute.iter().find_map(|a| match a.name.as_str() {
            "value" => a.t.clone(),
            "value_float" => Some(TensorProto {
                data_type: 1,
                float_data: vec![a.f],
                ..Default::default()
            }),
            "value_floats" => Some(TensorProto {
                data_type: 1,
                dims: vec![a.floats.len() as i64],
                float_data: a.floats.clone(),
                ..Default::default()
            }),
            _ => None,
        });
        if let Some(mut t) = value {
            if t.data_location == EXTERNAL {
                return Err(Error::invalid(
                    origin,
                    Place::Inside(format!("node {}", node.name)),
                    "a Constant with external data is unsupported",
                ));
            }
            t.name = output.clone();
            add(&mut tensors, output, t, Origin::Constant(node.name.clone()))?;
        }
    }
    // Identity chains: follow each output back to a known tensor, at most one step per
    // node (a cycle of Identity nodes ends there, unresolved).
    let identity: BTreeMap<&str, (&str, &str)> = graph
        .node
        .iter()
        .filter(|n| n.op_type == "Identity" && n.input.len() == 1)
        .flat_map(|n| {
            n.output
                .first()
                .map(|o| (o.as_str(), (n.input[0].as_str(), n.name.as_str())))
        })
        .collect();
    let mut aliases = Vec::new();
    for (&out, &(input, node)) in &identity {
        if tensors.contains_key(out) {
            continue;
        }
        let mut source = input;
        for _ in 0..identity.len() {
            match identity.get(source) {
                Some(&(next, _)) if !tensors.contains_key(source) => source = next,
                _ => break,
            }
        }
        if let Some((t, _)) = tensors.get(source) {
            let mut t = t.clone();
            t.name = out.to_string();
            aliases.push((
                out.to_string(),
                t,
                Origin::Identity(node.into(), source.into()),
            ));
        }
    }
    for (name, t, from) in aliases {
        add(&mut tensors, &name, t, from)?;
    }
    Ok(Parsed {
        summary,
        tensors,
        nodes: graph.node,
    })
}

/// A tensor's shape as sizes; negative dimensions are refused.
fn shape_of(t: &TensorProto) -> Result<Vec<usize>, String> {
    t.dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} in shape {:?}", t.dims)))
        .collect()
}

/// Reads every float tensor (initializers, constants, their `Identity` aliases).
/// External data files are looked up in `folder` (the model's own folder); without one
/// (bytes from memory) a tensor with external data is an error.
pub(crate) fn read_onnx(bytes: &[u8], origin: &str, folder: Option<&Path>) -> Result<Weights> {
    let parsed = parse(bytes, origin)?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    // Aliases are copies of their source once it is read (its errors name it).
    let mut aliases = Vec::new();
    for (name, (t, from)) in &parsed.tensors {
        if let Origin::Identity(_, source) = from {
            aliases.push((name, source));
            continue;
        }
        let fail = |m: String| Error::invalid(origin, Place::Tensor(name.clone()), m);
        let kind = match kind_of(t.data_type) {
            Kind::Float(kind) => kind,
            Kind::Skip => {
                skipped.push((name.clone(), dtype_name(t.data_type)));
                continue;
            }
            Kind::Unsupported => {
                return Err(fail(format!(
                    "unsupported element type {}",
                    dtype_name(t.data_type)
                )))
            }
        };
        let shape = shape_of(t).map_err(fail)?;
        let count = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| fail(format!("shape {shape:?} is too large")))?;
        let size = count
            .checked_mul(kind.size())
            .ok_or_else(|| fail(format!("shape {shape:?} is too large")))?;
        let data = match from {
            Origin::External(location, offset) => {
                let folder = folder.ok_or_else(|| {
                    fail(format!(
                        "its data is in the external file {location:?}, which is looked for beside the model: read the model from its file"
                    ))
                })?;
                let raw = read_external(folder, location, *offset, size, t).map_err(fail)?;
                decode(&raw, kind, ByteOrder::Little)
            }
            _ => typed_data(t, kind, count, size).map_err(fail)?,
        };
        out.push(Tensor {
            name: name.clone(),
            shape,
            data,
        });
    }
    for (name, source) in aliases {
        if let Some(t) = out.iter().find(|t| &t.name == source) {
            let alias = Tensor {
                name: name.clone(),
                ..t.clone()
            };
            out.push(alias);
        } else if let Some((_, dtype)) = skipped.iter().find(|(n, _)| n == source) {
            let dtype = dtype.clone();
            skipped.push((name.clone(), dtype));
        }
    }
    Ok(Weights {
        tensors: out,
        skipped,
    })
}

/// The elements of a tensor stored in the file: `raw_data` or the typed field of its
/// element type, exactly `count` of them.
fn typed_data(
    t: &TensorProto,
    kind: FloatKind,
    count: usize,
    size: usize,
) -> Result<Vec<f32>, String> {
    if !t.raw_data.is_empty() {
        if t.raw_data.len() != size {
            return Err(format!(
                "raw_data is {} bytes, shape {:?} of {} needs {size}",
                t.raw_data.len(),
                t.dims,
                dtype_name(t.data_type)
            ));
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
        return Err(format!(
            "{field} holds {} values, shape {:?} needs {count}",
            values.len(),
            t.dims
        ));
    }
    Ok(values)
}

/// `size` bytes at `offset` of the external data file `location`, which must lie
/// inside `folder`.
fn read_external(
    folder: &Path,
    location: &str,
    offset: u64,
    size: usize,
    t: &TensorProto,
) -> Result<Vec<u8>, String> {
    let relative = Path::new(location);
    let confined = !location.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !confined {
        return Err(format!(
            "external data location {location:?} is not a relative path inside the model's folder"
        ));
    }
    let path: PathBuf = folder.join(relative);
    let shown = path.display();
    let real = path
        .canonicalize()
        .map_err(|e| format!("external data file {shown}: {e}"))?;
    let root = folder
        .canonicalize()
        .map_err(|e| format!("model folder {}: {e}", folder.display()))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "external data file {shown} leads out of the model's folder (to {})",
            real.display()
        ));
    }
    if let Some(length) = t.external_data.iter().find(|e| e.key == "length") {
        let length: u64 = length
            .value
            .parse()
            .map_err(|_| format!("external data length {:?} is not a number", length.value))?;
        if length != size as u64 {
            return Err(format!(
                "external data length {length} bytes, shape {:?} of {} needs {size}",
                t.dims,
                dtype_name(t.data_type)
            ));
        }
    }
    let mut file =
        std::fs::File::open(&real).map_err(|e| format!("external data file {shown}: {e}"))?;
    let file_len = file
        .metadata()
        .map_err(|e| format!("external data file {shown}: {e}"))?
        .len();
    let end = offset.checked_add(size as u64);
    if end.is_none_or(|end| end > file_len) {
        return Err(format!(
            "external data file {shown} has {file_len} bytes, the tensor needs {size} at offset {offset}"
        ));
    }
    let mut raw = vec![0u8; size];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut raw))
        .map_err(|e| format!("external data file {shown}: {e}"))?;
    Ok(raw)
}

/// Every tensor of an ONNX file (of any element type) with the node inputs it feeds,
/// sorted by name, and a one-line summary of the model. Data is not read.
pub(crate) fn list_onnx(bytes: &[u8], origin: &str) -> Result<(String, Vec<Listed>)> {
    let parsed = parse(bytes, origin)?;
    let names: BTreeSet<&str> = parsed.tensors.keys().map(String::as_str).collect();
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
            shape_of(t).map_err(|m| Error::invalid(origin, Place::Tensor(name.clone()), m))?;
        listed.push(Listed {
            name: name.clone(),
            shape,
            dtype: dtype_name(t.data_type),
            origin: from.clone(),
            consumers: consumers.remove(name.as_str()).unwrap_or_default(),
        });
    }
    Ok((parsed.summary, listed))
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
