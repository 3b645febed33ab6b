//! The weights readers, from the `s2s-weights` crate, under their old path
//! (`host_tools::formats::...`), and the table `s2s tensors` prints of a weights file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use s2s_weights::{
    read_bounded, read_bytes_as, read_onnx_bytes, read_weights, read_weights_bytes,
    read_weights_file, Graph, Listing, Reader, Tensor, Weights, KERAS_WEIGHTS_ENTRY,
    MAX_FILE_BYTES, MAX_TENSOR_BYTES,
};

use crate::error::{Error, Place, Result};
use crate::io::STDOUT_NAME;

/// [`s2s_weights::list_tensors`] with this crate's [`Error`]: every tensor of the
/// weights file at `path`, sorted by name, with a one-line description of the file.
pub fn list_tensors(path: &Path) -> Result<(String, Vec<Listing>)> {
    Ok(s2s_weights::list_tensors(path)?)
}

/// `s2s tensors`: the listing of every file (a Keras file's optimizer slots left out
/// unless `all`, with a line saying how many), and with `graph` how each ONNX graph
/// uses its tensors and which initializers the graphs and the files share. Every file
/// is read before anything is printed: a bad one (or, with `graph`, one that is not an
/// ONNX model) prints nothing.
pub fn print_tensors(
    files: &[PathBuf],
    graph: bool,
    all: bool,
    out: &mut dyn std::io::Write,
) -> Result {
    let mut listings = Vec::new();
    for f in files {
        let (summary, listed) = list_tensors(f)?;
        let g = if graph {
            Some(s2s_weights::read_graph(f)?.ok_or_else(|| {
                Error::invalid(
                    f.display(),
                    Place::File,
                    "not an ONNX model: --graph lists an ONNX model's nodes",
                )
            })?)
        } else {
            None
        };
        listings.push((summary, listed, g));
    }
    let shared = if graph && files.len() > 1 {
        Some(shared_between_files(files, &listings)?)
    } else {
        None
    };
    let mut text = Vec::new();
    for (i, (file, (summary, listed, g))) in files.iter().zip(&listings).enumerate() {
        if i > 0 {
            text.push(b'\n');
        }
        let (shown, hidden): (Vec<Listing>, Vec<Listing>) =
            listed.iter().cloned().partition(|l| all || !l.optimizer);
        write_listing(file, summary, &shown, &mut text)?;
        if !hidden.is_empty() {
            text.extend(
                format!(
                    "({} optimizer slots not listed, such as {}: --all lists them)\n",
                    hidden.len(),
                    hidden[0].name
                )
                .as_bytes(),
            );
        }
        if let Some(g) = g {
            text.extend(graph_text(file, g, listed).as_bytes());
        }
    }
    if let Some(shared) = shared {
        text.extend(shared.as_bytes());
    }
    out.write_all(&text).map_err(Error::io(STDOUT_NAME))
}

/// What an ONNX graph's nodes do with its tensors, as `s2s tensors --graph` prints it
/// after the file's listing.
fn graph_text(path: &Path, g: &Graph, listed: &[Listing]) -> String {
    let mut text = format!("{}: graph\n", path.display());
    let node = |n: &s2s_weights::graph::Node| {
        let at = if n.graph.is_empty() {
            String::new()
        } else {
            format!(" (in {})", n.graph)
        };
        format!("{} {}{at}", n.op_type, n.label())
    };
    // Uses through Identity and Transpose nodes (the listing shows direct readers).
    let mut through = Vec::new();
    for l in listed {
        for u in g.uses(&l.name, l.shape.len()) {
            if u.via.is_empty() {
                continue;
            }
            let via: Vec<String> = u.via.iter().map(|n| node(n)).collect();
            through.push(format!(
                "  {} -> {} {} through {}{}\n",
                l.name,
                node(u.node),
                u.node.slot_label(u.slot),
                via.join(", "),
                if u.transposed { " (transposed)" } else { "" }
            ));
        }
    }
    text += "uses through Identity and Transpose nodes:";
    text += if through.is_empty() { " none\n" } else { "\n" };
    text.extend(through);
    // Concat orders.
    let initializers: BTreeSet<&str> = g
        .initializers
        .values()
        .flatten()
        .map(String::as_str)
        .collect();
    let concats: Vec<&s2s_weights::graph::Node> =
        g.nodes.iter().filter(|n| n.op_type == "Concat").collect();
    text += "concat orders:";
    text += if concats.is_empty() { " none\n" } else { "\n" };
    for c in concats {
        let parts: Vec<String> = c
            .inputs
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let from = match g.producer(v) {
                    Some(p) => node(p),
                    None if initializers.contains(v.as_str()) => "initializer".into(),
                    None => "graph input".into(),
                };
                format!("{i} {v} ({from})")
            })
            .collect();
        text += &format!(
            "  {} [axis={}]: {}\n",
            node(c),
            c.int("axis", 0),
            parts.join(", ")
        );
    }
    // Subgraphs and what they share.
    let bodies: Vec<(&String, &Vec<String>)> = g
        .initializers
        .iter()
        .filter(|(p, _)| !p.is_empty())
        .collect();
    text += "subgraphs:";
    text += if bodies.is_empty() { " none\n" } else { "\n" };
    for (path, inits) in bodies {
        let nodes = g.nodes.iter().filter(|n| &n.graph == path).count();
        text += &format!("  {path}: {nodes} nodes, {} initializers\n", inits.len());
    }
    let shared = g.shared();
    text += "initializers read by another graph than their own:";
    text += if shared.is_empty() { " none\n" } else { "\n" };
    let name = |p: &str| {
        if p.is_empty() {
            "main graph".to_string()
        } else {
            p.to_string()
        }
    };
    for (tensor, own, readers) in shared {
        let readers: Vec<String> = readers.iter().map(|r| name(r)).collect();
        text += &format!(
            "  {tensor} (of the {}) read in: {}\n",
            name(own),
            readers.join("; ")
        );
    }
    text
}

/// The tensor names two or more of the `files` hold, with whether their values are
/// the same, as `s2s tensors --graph` prints it after the files.
fn shared_between_files(
    files: &[PathBuf],
    listings: &[(String, Vec<Listing>, Option<Graph>)],
) -> Result<String> {
    let mut holders: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, listed, _)) in listings.iter().enumerate() {
        for l in listed {
            holders.entry(l.name.as_str()).or_default().push(i);
        }
    }
    holders.retain(|_, h| h.len() > 1);
    let label = |i: usize| files[i].display().to_string();
    let mut text = String::from("\ntensors in more than one file:");
    if holders.is_empty() {
        text += " none\n";
        return Ok(text);
    }
    text.push('\n');
    let wanted: BTreeSet<String> = holders.keys().map(|k| k.to_string()).collect();
    let mut data = Vec::new();
    for f in files {
        data.push(read_weights_file(f, Some(&wanted))?.tensors);
    }
    for (name, files_of) in &holders {
        let values: Vec<Option<&Tensor>> = files_of
            .iter()
            .map(|&i| data[i].iter().find(|t| t.name == *name))
            .collect();
        let same = match &values[..] {
            [Some(first), rest @ ..] => {
                if rest
                    .iter()
                    .all(|t| t.is_some_and(|t| t.shape == first.shape && t.data == first.data))
                {
                    "same values"
                } else {
                    "different values"
                }
            }
            _ => "not floats: values not compared",
        };
        let labels: Vec<String> = files_of.iter().map(|&i| label(i)).collect();
        text += &format!("  {name}: {} ({same})\n", labels.join(", "));
    }
    Ok(text)
}

/// Writes a listing as a table: name, shape, type, then the note and each consumer.
pub fn write_listing(
    path: &Path,
    summary: &str,
    listed: &[Listing],
    out: &mut dyn std::io::Write,
) -> Result {
    let shape = |s: &[usize]| match s {
        [] => "scalar".to_string(),
        _ => s
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" x "),
    };
    let width = listed
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let swidth = listed
        .iter()
        .map(|l| shape(&l.shape).len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut text = format!("{}: {summary}\n", path.display());
    text += &format!("{:width$}  {:swidth$}  dtype\n", "name", "shape");
    for l in listed {
        let mut line = format!(
            "{:width$}  {:swidth$}  {}",
            l.name,
            shape(&l.shape),
            l.dtype
        );
        if !l.note.is_empty() {
            line += &format!("  ({})", l.note);
        }
        text += line.trim_end();
        text.push('\n');
        for c in &l.consumers {
            text += &format!("{:width$}  -> {c}\n", "");
        }
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io(STDOUT_NAME))
}
