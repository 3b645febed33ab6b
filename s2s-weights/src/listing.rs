//! `s2s tensors`: what a weights file holds, to write a configuration's `[weights]`
//! without Python: every tensor's name, shape and element type, and for ONNX the node
//! inputs each one feeds (operator, node name, input slot and the node's layout
//! attributes such as `transB` or `direction`). host-tools prints it as a table.
//! Of a Keras file, the optimizer's slots are marked ([`Listing::optimizer`]) for the
//! listing to leave out; [`read_graph`] reads an ONNX model's nodes, subgraphs included,
//! for `s2s tensors --graph`.

use std::path::Path;

use crate::archive;
use crate::error::Result;
use crate::graph::{slot_name, Graph};
use crate::npy;
use crate::onnx::{self, Origin};
use crate::read::{model_folder, read_weights_bytes_of, read_weights_in};
use crate::safetensors::{self, is_safetensors};
use crate::tensor::{is_optimizer_slot, Listing};

/// Every tensor of the weights file at `path`, sorted by name, with a one-line
/// description of the file. ONNX and safetensors files list every tensor with its
/// stored element type; the other formats list the float tensors `s2s import` reads,
/// as it reads them (`f32`).
pub fn list_tensors(path: &Path) -> Result<(String, Vec<Listing>)> {
    let bytes = read_weights_bytes_of(path)?;
    let origin = path.display().to_string();
    if is_safetensors(&bytes) {
        return list_safetensors(&bytes, &origin);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        if let Some(listed) = archive::list_npz(&bytes, &origin)? {
            let summary = format!(
                "NumPy .npz, {} arrays (from their .npy headers; the data is read by s2s import)",
                listed.len()
            );
            return Ok((summary, sorted(listed)));
        }
    }
    let is_onnx = onnx::is_onnx(&bytes) || origin.ends_with(".onnx");
    if !is_onnx {
        let tensors = read_weights_in(&bytes, &origin, None, None)?.tensors;
        let listed = tensors
            .into_iter()
            .map(|t| Listing {
                // HDF5 and `.keras` files: Keras writes its optimizer's slots there.
                optimizer: !npy::is_npy(&bytes) && is_optimizer_slot(&t.name),
                name: t.name,
                shape: t.shape,
                dtype: "f32".into(),
                note: String::new(),
                consumers: Vec::new(),
            })
            .collect::<Vec<_>>();
        let summary = format!(
            "{} float tensors (read as f32; other element types are not listed)",
            listed.len()
        );
        return Ok((summary, listed));
    }
    let (summary, listed) = onnx::list_onnx(&bytes, &origin)?;
    // Reading the data checks it too (external files included): a listed tensor
    // that `s2s import` could not read is an error here already.
    read_weights_in(&bytes, &origin, Some(&model_folder(path)), None)?;
    let listed = listed
        .into_iter()
        .map(|l| Listing {
            optimizer: false,
            note: match &l.origin {
                Origin::Initializer => String::new(),
                Origin::External(location, offset) => {
                    format!("external: {location} at offset {offset}")
                }
                Origin::Constant(node) => format!("output of Constant {node}"),
                Origin::Identity(node, of) => format!("Identity {node} of {of}"),
            },
            consumers: l
                .consumers
                .iter()
                .map(|c| {
                    let slot = match slot_name(&c.op_type, c.slot) {
                        Some(s) => format!("input {} ({s})", c.slot),
                        None => format!("input {}", c.slot),
                    };
                    let node = if c.node.is_empty() {
                        "(unnamed)"
                    } else {
                        &c.node
                    };
                    if c.attributes.is_empty() {
                        format!("{} {node} {slot}", c.op_type)
                    } else {
                        format!("{} {node} {slot} [{}]", c.op_type, c.attributes)
                    }
                })
                .collect(),
            name: l.name,
            shape: l.shape,
            dtype: l.dtype,
        })
        .collect();
    Ok((summary, listed))
}

/// How the nodes of the ONNX model at `path` use its tensors, subgraphs included
/// (`s2s tensors --graph`); `None` for a file that is not an ONNX model.
pub fn read_graph(path: &Path) -> Result<Option<Graph>> {
    let bytes = read_weights_bytes_of(path)?;
    let origin = path.display().to_string();
    if !(onnx::is_onnx(&bytes) || origin.ends_with(".onnx")) || is_safetensors(&bytes) {
        return Ok(None);
    }
    Ok(Some(onnx::graph_onnx(&bytes, &origin)?))
}

fn list_safetensors(bytes: &[u8], origin: &str) -> Result<(String, Vec<Listing>)> {
    let file = safetensors::deserialize(bytes, origin)?;
    let listed: Vec<Listing> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| Listing {
            name,
            shape: view.shape().to_vec(),
            dtype: view.dtype().to_string(),
            note: String::new(),
            consumers: Vec::new(),
            optimizer: false,
        })
        .collect();
    Ok((
        format!("safetensors, {} tensors", listed.len()),
        sorted(listed),
    ))
}

/// Listings sorted by name.
fn sorted(mut listed: Vec<Listing>) -> Vec<Listing> {
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    listed
}
