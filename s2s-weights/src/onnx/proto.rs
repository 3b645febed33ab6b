//! The ONNX protobuf messages the reader decodes (`ModelProto`, `GraphProto`,
//! `NodeProto`, `AttributeProto`, `TensorProto`, with the field numbers of
//! `onnx.proto`), declared for `prost`'s derive; every other field is skipped unread.
//! And the codes of `onnx.proto` the reader uses: element types (their names, and
//! whether they are read), external data, attribute types.

use prost::Message;

use crate::convert::FloatKind;

/// `ModelProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ModelProto {
    #[prost(int64, tag = "1")]
    pub(crate) ir_version: i64,
    #[prost(string, tag = "2")]
    pub(crate) producer_name: String,
    #[prost(string, tag = "3")]
    pub(crate) producer_version: String,
    #[prost(message, optional, tag = "7")]
    pub(crate) graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "8")]
    pub(crate) opset_import: Vec<OperatorSetIdProto>,
}

/// `OperatorSetIdProto`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    pub(crate) domain: String,
    #[prost(int64, tag = "2")]
    pub(crate) version: i64,
}

/// `GraphProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub(crate) node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    pub(crate) name: String,
    #[prost(message, repeated, tag = "5")]
    pub(crate) initializer: Vec<TensorProto>,
}

/// `NodeProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub(crate) input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub(crate) output: Vec<String>,
    #[prost(string, tag = "3")]
    pub(crate) name: String,
    #[prost(string, tag = "4")]
    pub(crate) op_type: String,
    #[prost(message, repeated, tag = "5")]
    pub(crate) attribute: Vec<AttributeProto>,
}

/// `AttributeProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct AttributeProto {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(float, tag = "2")]
    pub(crate) f: f32,
    #[prost(int64, tag = "3")]
    pub(crate) i: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub(crate) s: Vec<u8>,
    #[prost(message, optional, tag = "5")]
    pub(crate) t: Option<TensorProto>,
    #[prost(float, repeated, tag = "7")]
    pub(crate) floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    pub(crate) ints: Vec<i64>,
    /// A subgraph (`If` branches, `Loop` and `Scan` bodies), kept as its bytes:
    /// decoded only by the graph listing, so that a damaged body costs a read nothing.
    #[prost(bytes = "vec", tag = "6")]
    pub(crate) g: Vec<u8>,
    /// A list of subgraphs, as bytes.
    #[prost(bytes = "vec", repeated, tag = "11")]
    pub(crate) graphs: Vec<Vec<u8>>,
    #[prost(int32, tag = "20")]
    pub(crate) r#type: i32,
}

/// `TensorProto`: the fields read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub(crate) dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    pub(crate) data_type: i32,
    #[prost(float, repeated, tag = "4")]
    pub(crate) float_data: Vec<f32>,
    #[prost(int32, repeated, tag = "5")]
    pub(crate) int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    pub(crate) int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    pub(crate) name: String,
    #[prost(bytes = "vec", tag = "9")]
    pub(crate) raw_data: Vec<u8>,
    #[prost(double, repeated, tag = "10")]
    pub(crate) double_data: Vec<f64>,
    #[prost(message, repeated, tag = "13")]
    pub(crate) external_data: Vec<StringStringEntryProto>,
    #[prost(int32, tag = "14")]
    pub(crate) data_location: i32,
}

/// `StringStringEntryProto`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct StringStringEntryProto {
    #[prost(string, tag = "1")]
    pub(crate) key: String,
    #[prost(string, tag = "2")]
    pub(crate) value: String,
}

/// `TensorProto.DataLocation.EXTERNAL`.
pub(crate) const EXTERNAL: i32 = 1;
/// `AttributeProto.AttributeType` of a float, shown in listings.
pub(crate) const ATTR_FLOAT: i32 = 1;
/// `AttributeProto.AttributeType` of an integer, shown in listings.
pub(crate) const ATTR_INT: i32 = 2;
/// `AttributeProto.AttributeType` of a string, shown in listings.
pub(crate) const ATTR_STRING: i32 = 3;
/// `AttributeProto.AttributeType` of a list of floats, shown in listings (up to 4).
pub(crate) const ATTR_FLOATS: i32 = 6;
/// `AttributeProto.AttributeType` of a list of integers, shown in listings (up to 8).
pub(crate) const ATTR_INTS: i32 = 7;

/// The name of an ONNX element type (`TensorProto.DataType`).
pub(crate) fn dtype_name(code: i32) -> String {
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
pub(crate) enum Kind {
    /// Floats, converted to `f32`.
    Float(FloatKind),
    /// Integers, booleans, strings, complex numbers: listed, not read.
    Skip,
    /// 8- and 4-bit floats: an error.
    Unsupported,
}

/// What the readers do with element type `code`.
pub(crate) fn kind_of(code: i32) -> Kind {
    match code {
        1 => Kind::Float(FloatKind::F32),
        10 => Kind::Float(FloatKind::F16),
        11 => Kind::Float(FloatKind::F64),
        16 => Kind::Float(FloatKind::Bf16),
        2..=9 | 12..=15 | 21 | 22 => Kind::Skip,
        _ => Kind::Unsupported,
    }
}
