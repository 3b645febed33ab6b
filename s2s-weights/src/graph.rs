//! How an ONNX graph uses its tensors: the nodes (operator, inputs in order, integer
//! attributes), each weight's uses followed through `Identity` nodes and 2-D
//! `Transpose`s, and whether a value is computed from given tensors. `s2s import`
//! derives a matrix's orientation from it (a `MatMul`'s `B` is `(in, out)`, a `Gemm`'s
//! `B` with `transB=1` is `(out, in)`...), and `s2s tensors --graph` prints it.

use std::collections::{BTreeMap, BTreeSet};

/// The name of input `slot` of the ONNX operator `op`, for the operators whose weights
/// a configuration maps (`MatMul` `A`, `B`; `Gemm` `A`, `B`, `C`; `GRU`/`LSTM`/`RNN`
/// `X`, `W`, `R`, `B`...).
pub fn slot_name(op: &str, slot: usize) -> Option<&'static str> {
    let names: &[&str] = match op {
        "GRU" | "LSTM" | "RNN" => &["X", "W", "R", "B", "sequence_lens", "initial_h"],
        "Gemm" => &["A", "B", "C"],
        "MatMul" => &["A", "B"],
        "Gather" => &["data", "indices"],
        "Conv" => &["X", "W", "B"],
        _ => return None,
    };
    names.get(slot).copied()
}

/// One node of a graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its name (may be empty in a hand-made graph).
    pub name: String,
    /// Its operator (`MatMul`, `Gemm`, `GRU`...).
    pub op_type: String,
    /// Its inputs in order (an empty name is an omitted optional input).
    pub inputs: Vec<String>,
    /// Its outputs in order.
    pub outputs: Vec<String>,
    /// Its integer attributes (`transB`, `axis`...).
    pub ints: BTreeMap<String, i64>,
    /// Its lists of integers (`perm`...).
    pub int_lists: BTreeMap<String, Vec<i64>>,
    /// The graph it is in: empty for the main graph, else the path of the node and
    /// attribute whose body it is (`/loop/Loop body`).
    pub graph: String,
}

impl Node {
    /// The node's name for messages: its name, or `(unnamed)`.
    pub fn label(&self) -> &str {
        if self.name.is_empty() {
            "(unnamed)"
        } else {
            &self.name
        }
    }

    /// The name of input `slot` of this node's operator ([`slot_name`]).
    pub fn slot_name(&self, slot: usize) -> Option<&'static str> {
        slot_name(&self.op_type, slot)
    }

    /// `input 1 (B)`, or `input 4` for a slot without a name.
    pub fn slot_label(&self, slot: usize) -> String {
        match self.slot_name(slot) {
            Some(s) => format!("input {slot} ({s})"),
            None => format!("input {slot}"),
        }
    }

    /// An integer attribute, or `default` when the node does not set it.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.ints.get(name).copied().unwrap_or(default)
    }
}

/// Where a tensor is read: a node input, reached from the tensor through the
/// `Identity` and 2-D `Transpose` nodes of `via`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use<'g> {
    /// The node reading it.
    pub node: &'g Node,
    /// The input slot, from 0.
    pub slot: usize,
    /// The `Identity` and `Transpose` nodes passed on the way, in order.
    pub via: Vec<&'g Node>,
    /// Whether the node reads it transposed (an odd number of `Transpose`s on the
    /// way).
    pub transposed: bool,
}

/// The nodes of an ONNX model's main graph and of the bodies of its `If`, `Loop` and
/// `Scan` nodes, with the initializers of each graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Every node, the main graph's first, in file order.
    pub nodes: Vec<Node>,
    /// The initializers (and `Constant` outputs) of each graph, by graph path (empty
    /// for the main graph).
    pub initializers: BTreeMap<String, Vec<String>>,
}

impl Graph {
    /// The node that computes `value`, if a node does.
    pub fn producer(&self, value: &str) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| n.outputs.iter().any(|o| o == value))
    }

    /// The node inputs that read `tensor`, directly or through `Identity` nodes and
    /// `Transpose`s of a matrix (`rank` 2, `perm` absent or `[1, 0]`); a `Transpose` of
    /// anything else is a use of its own. In node order, each chain at most once.
    pub fn uses(&self, tensor: &str, rank: usize) -> Vec<Use<'_>> {
        let mut readers: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for (slot, input) in node.inputs.iter().enumerate() {
                if !input.is_empty() {
                    readers.entry(input).or_default().push((i, slot));
                }
            }
        }
        let mut out = Vec::new();
        // (value, the nodes passed, transposed); each value is followed once, which
        // also ends a cycle.
        let mut todo: Vec<(&str, Vec<&Node>, bool)> = vec![(tensor, Vec::new(), false)];
        let mut seen = BTreeSet::new();
        while let Some((value, via, transposed)) = todo.pop() {
            if !seen.insert(value) {
                continue;
            }
            for &(i, slot) in readers.get(value).map_or(&[][..], Vec::as_slice) {
                let node = &self.nodes[i];
                let flip = match node.op_type.as_str() {
                    "Identity" => Some(false),
                    "Transpose"
                        if rank == 2
                            && node.int_lists.get("perm").is_none_or(|p| p[..] == [1, 0]) =>
                    {
                        Some(true)
                    }
                    _ => None,
                };
                match (flip, node.outputs.first()) {
                    (Some(flip), Some(output)) if !output.is_empty() => {
                        let mut path = via.clone();
                        path.push(node);
                        todo.push((output, path, transposed ^ flip));
                    }
                    _ => out.push((
                        i,
                        Use {
                            node,
                            slot,
                            via: via.clone(),
                            transposed,
                        },
                    )),
                }
            }
        }
        out.sort_by_key(|(i, u)| (*i, u.slot));
        out.into_iter().map(|(_, u)| u).collect()
    }

    /// Whether `value` is computed (through any nodes) from one of `tensors`, or is
    /// one of them.
    pub fn depends_on(&self, value: &str, tensors: &BTreeSet<String>) -> bool {
        let producers: BTreeMap<&str, &Node> = self
            .nodes
            .iter()
            .flat_map(|n| n.outputs.iter().map(move |o| (o.as_str(), n)))
            .collect();
        let mut todo = vec![value];
        let mut seen = BTreeSet::new();
        while let Some(v) = todo.pop() {
            if tensors.contains(v) {
                return true;
            }
            if !seen.insert(v) {
                continue;
            }
            if let Some(n) = producers.get(v) {
                todo.extend(
                    n.inputs
                        .iter()
                        .map(String::as_str)
                        .filter(|i| !i.is_empty()),
                );
            }
        }
        false
    }

    /// The graphs (by path, empty for the main graph) whose nodes read `name`
    /// directly, in order.
    pub fn graphs_reading(&self, name: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for n in &self.nodes {
            if n.inputs.iter().any(|i| i == name) && !out.contains(&n.graph.as_str()) {
                out.push(&n.graph);
            }
        }
        out
    }

    /// The initializers read by the nodes of another graph than their own, or of
    /// several graphs (a `Loop` body reading a weight of the main graph, two `If`
    /// branches sharing one): `(name, its graph, the graphs reading it)`.
    pub fn shared(&self) -> Vec<(&str, &str, Vec<&str>)> {
        let mut out = Vec::new();
        for (graph, names) in &self.initializers {
            for name in names {
                let readers = self.graphs_reading(name);
                if readers.len() > 1 || readers.iter().any(|r| r != graph) {
                    out.push((name.as_str(), graph.as_str(), readers));
                }
            }
        }
        out
    }
}
