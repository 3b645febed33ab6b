//! The graph walk of the ONNX reader: the model decoded, and the tensors that hold
//! weights collected by name with where each comes from (initializers, their external
//! data's place, `Constant` outputs, and `Identity` aliases of those).

use std::collections::BTreeMap;

use prost::Message;

use super::proto::{ModelProto, NodeProto, TensorProto, EXTERNAL};
use crate::error::{Error, Place, Result};

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

/// Tensors by name, with where they come from.
pub(crate) type Tensors = BTreeMap<String, (TensorProto, Origin)>;

/// An `Identity` output over a tensor of [`Tensors`]: the node, and the tensor at the
/// root of its chain, whose data it shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    /// The `Identity` node whose output it is.
    pub(crate) node: String,
    /// The tensor its chain of `Identity` nodes starts from.
    pub(crate) root: String,
}

/// A decoded file: the graph's weight-holding tensors by name.
pub(crate) struct Parsed {
    /// Model facts for the listing's heading.
    pub(crate) summary: String,
    /// Name -> (tensor, origin): initializers and constants, each held once.
    pub(crate) tensors: Tensors,
    /// Name -> the `Identity` alias of one of `tensors` (never a copy of it).
    pub(crate) aliases: BTreeMap<String, Alias>,
    /// The nodes, for consumers.
    pub(crate) nodes: Vec<NodeProto>,
}

/// Decodes the protobuf and collects initializers, constants and their `Identity`
/// aliases. Errors name `origin`.
pub(crate) fn parse(bytes: &[u8], origin: &str) -> Result<Parsed> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        Error::onnx(
            origin,
            Place::File,
            format!("not a valid ONNX model (protobuf): {e}"),
        )
    })?;
    if model.ir_version <= 0 {
        return Err(Error::onnx(
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
        .ok_or_else(|| Error::onnx(origin, Place::File, "the ONNX model has no graph"))?;
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
            return Err(Error::onnx(origin, Place::File, "a tensor has no name"));
        }
        if tensors.insert(name.to_string(), (t, from)).is_some() {
            return Err(Error::DuplicateName {
                file: origin.to_string(),
                name: name.to_string(),
            });
        }
        Ok(())
    };
    let (graph_nodes, initializers) = (graph.node, graph.initializer);
    for t in initializers {
        let from = if t.data_location == EXTERNAL {
            let entry = |key: &str| {
                t.external_data
                    .iter()
                    .find(|e| e.key == key)
                    .map(|e| e.value.clone())
            };
            let offset = entry("offset").unwrap_or_else(|| "0".into());
            let offset = offset.parse::<u64>().map_err(|_| {
                Error::onnx(
                    origin,
                    Place::Tensor(t.name.clone()),
                    format!("external data offset {offset:?} is not a number"),
                )
            })?;
            let location = entry("location").ok_or_else(|| {
                Error::onnx(
                    origin,
                    Place::Tensor(t.name.clone()),
                    "external data without a location",
                )
            })?;
            Origin::External(location, offset)
        } else {
            Origin::Initializer
        };
        let name = t.name.clone();
        add(&mut tensors, &name, t, from)?;
    }
    for node in graph_nodes.iter().filter(|n| n.op_type == "Constant") {
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
                return Err(Error::onnx(
                    origin,
                    Place::Inside(format!("node {}", node.name)),
                    "a Constant with external data is unsupported",
                ));
            }
            t.name = output.clone();
            add(&mut tensors, output, t, Origin::Constant(node.name.clone()))?;
        }
    }
    let aliases = resolve_aliases(&graph_nodes, &tensors, origin)?;
    Ok(Parsed {
        summary,
        tensors,
        aliases,
        nodes: graph_nodes,
    })
}

/// The `Identity` outputs whose chain of `Identity` nodes starts from one of
/// `tensors`, each with its root, in time linear in the nodes (times a logarithm): each
/// name is resolved once and remembered, so a chain of n nodes costs n steps, not n²
/// (a 5,000-node chain took 18 s). A cycle of `Identity` nodes, or a chain from a
/// computed value, resolves to nothing. An output that is already a tensor's name is
/// left alone.
fn resolve_aliases(
    nodes: &[NodeProto],
    tensors: &Tensors,
    origin: &str,
) -> Result<BTreeMap<String, Alias>> {
    let identity: BTreeMap<&str, (&str, &str)> = nodes
        .iter()
        .filter(|n| n.op_type == "Identity" && n.input.len() == 1)
        .flat_map(|n| {
            n.output
                .first()
                .map(|o| (o.as_str(), (n.input[0].as_str(), n.name.as_str())))
        })
        .collect();
    // Name -> its root; `None` for a name that leads to no tensor, or (while its walk
    // is under way) one on the current path, so that a cycle ends there.
    let mut root: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    let mut aliases = BTreeMap::new();
    for (&out, &(_, node)) in &identity {
        if tensors.contains_key(out) {
            continue;
        }
        let mut path = Vec::new();
        let mut at = out;
        let found = loop {
            if tensors.contains_key(at) {
                break Some(at);
            }
            if let Some(&known) = root.get(at) {
                break known;
            }
            match identity.get(at) {
                Some(&(input, _)) => {
                    path.push(at);
                    root.insert(at, None);
                    at = input;
                }
                None => break None,
            }
        };
        for name in path {
            root.insert(name, found);
        }
        if let Some(found) = found {
            if out.is_empty() {
                return Err(Error::onnx(origin, Place::File, "a tensor has no name"));
            }
            aliases.insert(
                out.to_string(),
                Alias {
                    node: node.to_string(),
                    root: found.to_string(),
                },
            );
        }
    }
    Ok(aliases)
}
