//! Which way round a stored matrix becomes one of our layers: as stored, or
//! transposed (`transpose` in `[weights]`), and why.
//!
//! Our matrices are `(out, in)`: a layer computes `y = W x`. `attention.general` is no
//! exception: the runtime computes `W k_j` of each memory vector `k_j` (attention-core's
//! `General`, `W` of `(D, M)`), and the score is `q . (W k_j) = q^T W k_j`. An ONNX
//! graph says how each of its matrices is used, and so which orientation is ours:
//!
//! - `GRU`/`LSTM`/`RNN` `W` and `R` (per direction), and a `Gather` table: as stored;
//! - `MatMul(x, B)` computes `x B`: `B` is `(in, out)`, transposed for a layer; for
//!   `attention.general` it depends on what `x` is: the query (computed from the
//!   decoder's weights) makes `B` our `(D, M)` as stored, a memory (computed from the
//!   encoder's weights) our matrix transposed;
//! - `MatMul(A, x)` computes `A x`: the other way round from the above;
//! - `Gemm` is `MatMul` with `transA`/`transB` flipping its operand;
//! - `Identity` nodes are followed, and so are `Transpose`s of a matrix (each flips it).
//!
//! Anything else (another operator, a `Reshape` on the way, a general matrix multiplied
//! with a value computed from neither side's weights) decides nothing, and neither does
//! a weight used both ways. A configuration's `transpose` that contradicts a decided
//! orientation is refused; without one, the decided orientation is taken, else the
//! matrix as stored.

use std::collections::BTreeSet;
use std::fmt;

use s2s_weights::graph::{Graph, Use};
use seq2seq::desc::Role;

/// How a layer's product with its matrix is read: what each side of a graph's product
/// means for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// An embedding table, `(tokens, size)`: read by `Gather`.
    Table,
    /// `y = W x`, `W (out, in)`.
    Linear,
    /// `q^T W k`, `W (D, M)` applied to the memory vector `k`.
    General,
}

fn kind(role: Role) -> Kind {
    match role {
        Role::EncEmb | Role::DecEmb => Kind::Table,
        Role::AttnGeneral => Kind::General,
        _ => Kind::Linear,
    }
}

/// Why a matrix has its orientation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The configuration's `transpose`; no graph says anything.
    Config,
    /// The configuration's `transpose`, as the graph uses the matrix (the use).
    ConfigAndGraph(String),
    /// No `transpose` key; the graph's use (described) decides.
    Graph(String),
    /// No `transpose` key and nothing in a graph decides (why not, for a graph): as
    /// stored.
    Default(Option<String>),
}

/// The orientation a layer's matrix gets, as `s2s import --explain` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// Our layer.
    pub layer: String,
    /// The weight as the configuration names it (with `[d]` for a `direction`).
    pub tensor: String,
    /// The weights file holding it.
    pub file: String,
    /// Its matrix as stored (after the index), rows x columns.
    pub stored: (usize, usize),
    /// Whether it is transposed.
    pub transpose: bool,
    /// Why.
    pub why: Why,
}

impl Explained {
    /// Whether the orientation rests on the configuration or the default alone for a
    /// square matrix, which its shape cannot check.
    pub fn unchecked_square(&self) -> bool {
        self.stored.0 == self.stored.1
            && self.stored.0 > 1
            && matches!(self.why, Why::Config | Why::Default(_))
    }
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, c) = self.stored;
        let how = if self.transpose {
            "transposed"
        } else {
            "as stored"
        };
        write!(
            f,
            "{}: {} in {}, {r} x {c}, {how}: ",
            self.layer, self.tensor, self.file
        )?;
        match &self.why {
            Why::Config => write!(f, "transpose = {} in the configuration", self.transpose)?,
            Why::ConfigAndGraph(u) => write!(
                f,
                "transpose = {} in the configuration, as the graph uses it ({u})",
                self.transpose
            )?,
            Why::Graph(u) => write!(f, "derived from the graph ({u})")?,
            Why::Default(None) => write!(f, "the default (no transpose key)")?,
            Why::Default(Some(why)) => write!(
                f,
                "the default (no transpose key; the graph does not decide: {why})"
            )?,
        }
        if self.unchecked_square() {
            write!(
                f,
                "; square, so its shape cannot show the wrong orientation: check the import with s2s verify MODEL --expect FILE"
            )?;
        }
        Ok(())
    }
}

/// The weights the configuration maps to the decoder (whose values are the query's
/// sources) and to the encoder (the memory's), by tensor name.
pub struct Sides {
    /// Tensors of `decoder.*` layers.
    pub decoder: BTreeSet<String>,
    /// Tensors of `encoder.*` layers.
    pub encoder: BTreeSet<String>,
}

/// What a graph says of a matrix: an orientation and the use that decides it, or why
/// nothing does.
enum Decision {
    Decided(bool, String),
    Undecided(String),
}

/// ` through Identity /Identity`, for a use reached through other nodes.
fn via(u: &Use<'_>) -> String {
    if u.via.is_empty() {
        return String::new();
    }
    let nodes: Vec<String> = u
        .via
        .iter()
        .map(|n| format!("{} {}", n.op_type, n.label()))
        .collect();
    format!(" through {}", nodes.join(", "))
}

/// What one use says, for a layer of `kind`.
fn decide_use(kind: Kind, u: &Use<'_>, graph: &Graph, sides: &Sides) -> Decision {
    let n = u.node;
    let at = format!(
        "{} of {} node {}{}",
        n.slot_label(u.slot),
        n.op_type,
        n.label(),
        via(u)
    );
    let flip = u.transposed;
    match (n.op_type.as_str(), u.slot, kind) {
        ("GRU" | "LSTM" | "RNN", 1 | 2, Kind::Linear) => Decision::Decided(flip, at),
        ("Gather", 0, Kind::Table) if n.int("axis", 0) == 0 => Decision::Decided(flip, at),
        ("MatMul" | "Gemm", 0 | 1, Kind::Linear | Kind::General) => {
            let right = u.slot == 1;
            let attr = if right { "transB" } else { "transA" };
            let f = flip ^ (n.op_type == "Gemm" && n.int(attr, 0) != 0);
            if kind == Kind::Linear {
                return Decision::Decided(right ^ f, at);
            }
            let other_slot = 1 - u.slot;
            let Some(other) = n.inputs.get(other_slot).filter(|o| !o.is_empty()) else {
                return Decision::Undecided(format!("{at} has no input {other_slot}"));
            };
            let query = graph.depends_on(other, &sides.decoder);
            let key = !query && graph.depends_on(other, &sides.encoder);
            if !query && !key {
                return Decision::Undecided(format!(
                    "{at}: its input {other_slot} is computed from neither the decoder's nor the encoder's weights"
                ));
            }
            let side = if query {
                "the query, from the decoder's weights"
            } else {
                "the memory, from the encoder's weights"
            };
            Decision::Decided(
                f ^ (right == key),
                format!("{at}, input {other_slot} {side}"),
            )
        }
        _ => Decision::Undecided(at),
    }
}

/// What the graph says of the matrix `tensor` (stored with `rank` dimensions) of a
/// layer of `role`.
fn decide(role: Role, tensor: &str, rank: usize, graph: &Graph, sides: &Sides) -> Decision {
    let uses = graph.uses(tensor, rank);
    if uses.is_empty() {
        return Decision::Undecided("no node reads it".into());
    }
    let kind = kind(role);
    let mut decided: Vec<(bool, String)> = Vec::new();
    let mut undecided = Vec::new();
    for u in &uses {
        match decide_use(kind, u, graph, sides) {
            Decision::Decided(t, why) => decided.push((t, why)),
            Decision::Undecided(why) => undecided.push(why),
        }
    }
    match &decided[..] {
        [] => Decision::Undecided(undecided.join("; ")),
        [(t, why), rest @ ..] => {
            if let Some((_, other)) = rest.iter().find(|(o, _)| o != t) {
                Decision::Undecided(format!("read both ways: {why}; {other}"))
            } else {
                Decision::Decided(*t, why.clone())
            }
        }
    }
}

/// What the import needs to orient one layer's matrix.
pub struct Matrix<'a> {
    /// Our layer's role and name.
    pub role: Role,
    /// Our layer's name.
    pub layer: &'a str,
    /// The weight as named in the file (no index).
    pub name: &'a str,
    /// The weight as the configuration gives it (index and direction).
    pub spec: String,
    /// The file holding it, and its graph if it is an ONNX model.
    pub file: &'a str,
    /// Its graph, for an ONNX model.
    pub graph: Option<&'a Graph>,
    /// The tensor's number of dimensions as stored.
    pub rank: usize,
    /// The matrix as stored (after the index), rows x columns.
    pub stored: (usize, usize),
    /// Our layer's (rows, columns).
    pub needed: (usize, usize),
    /// The configuration's `transpose`.
    pub configured: Option<bool>,
}

/// The orientation of `m`'s matrix and why; an error line when the configuration's
/// `transpose` contradicts the graph.
pub fn orient(m: &Matrix<'_>, sides: &Sides) -> Result<Explained, String> {
    let decision = m.graph.map(|g| decide(m.role, m.name, m.rank, g, sides));
    let (transpose, why) = match (m.configured, decision) {
        (Some(t), Some(Decision::Decided(d, use_))) if t != d => {
            let (r, c) = m.stored;
            let (nr, nc) = m.needed;
            let how = if d { "transposed" } else { "as stored" };
            let fix = if d {
                "write transpose = true".to_string()
            } else {
                "remove transpose".to_string()
            };
            return Err(format!(
                "transpose = {t} contradicts the graph of {}: tensor {:?} ({r} x {c} as stored) is {use_}, so this layer's {nr} x {nc} matrix is the tensor {how} ({fix})",
                m.file, m.spec
            ));
        }
        (Some(t), Some(Decision::Decided(_, use_))) => (t, Why::ConfigAndGraph(use_)),
        (Some(t), _) => (t, Why::Config),
        (None, Some(Decision::Decided(d, use_))) => (d, Why::Graph(use_)),
        (None, Some(Decision::Undecided(why))) => (false, Why::Default(Some(why))),
        (None, None) => (false, Why::Default(None)),
    };
    Ok(Explained {
        layer: m.layer.to_string(),
        tensor: m.spec.clone(),
        file: m.file.to_string(),
        stored: m.stored,
        transpose,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use s2s_weights::graph::Node;

    fn node(op: &str, name: &str, inputs: &[&str], ints: &[(&str, i64)]) -> Node {
        Node {
            name: name.into(),
            op_type: op.into(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: vec![format!("{name}_out")],
            ints: ints.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            int_lists: Default::default(),
            graph: String::new(),
        }
    }

    fn sides() -> Sides {
        Sides {
            decoder: ["dec.w".to_string()].into(),
            encoder: ["enc.w".to_string()].into(),
        }
    }

    /// The orientation of tensor `w` (square) of a layer of `role` in `nodes`, or what
    /// the refusal of `configured` says.
    fn oriented(
        role: Role,
        nodes: Vec<Node>,
        configured: Option<bool>,
    ) -> Result<Explained, String> {
        let graph = Graph {
            nodes,
            ..Default::default()
        };
        orient(
            &Matrix {
                role,
                layer: "layer",
                name: "w",
                spec: "w".into(),
                file: "m.onnx",
                graph: Some(&graph),
                rank: 2,
                stored: (4, 4),
                needed: (4, 4),
                configured,
            },
            &sides(),
        )
    }

    #[test]
    fn each_side_of_each_product_orients_a_layer() {
        let linear = |nodes, t| {
            let e = oriented(Role::Out, nodes, None).expect("no contradiction");
            assert!(matches!(e.why, Why::Graph(_)), "{e}");
            assert_eq!(e.transpose, t, "{e}");
        };
        linear(vec![node("MatMul", "m", &["x", "w"], &[])], true);
        linear(vec![node("MatMul", "m", &["w", "x"], &[])], false);
        linear(
            vec![node("Gemm", "g", &["x", "w"], &[("transB", 1)])],
            false,
        );
        linear(vec![node("Gemm", "g", &["x", "w"], &[("transB", 0)])], true);
        linear(vec![node("Gemm", "g", &["w", "x"], &[("transA", 1)])], true);
        // Through a Transpose, the other way round.
        let mut t = node("Transpose", "t", &["w"], &[]);
        t.outputs = vec!["wt".into()];
        linear(vec![t, node("MatMul", "m", &["x", "wt"], &[])], false);
    }

    #[test]
    fn a_general_matrix_is_oriented_by_what_it_multiplies() {
        let general = |nodes: Vec<Node>| oriented(Role::AttnGeneral, nodes, None).unwrap();
        let query = node("Add", "q", &["dec.w", "h"], &[]);
        let memory = node("Add", "k", &["enc.w", "x"], &[]);
        // q^T W: as stored; W k: as stored; k W: transposed; W q: transposed.
        for (nodes, t) in [
            (
                vec![query.clone(), node("MatMul", "m", &["q_out", "w"], &[])],
                false,
            ),
            (
                vec![memory.clone(), node("MatMul", "m", &["w", "k_out"], &[])],
                false,
            ),
            (
                vec![memory.clone(), node("MatMul", "m", &["k_out", "w"], &[])],
                true,
            ),
            (
                vec![query.clone(), node("MatMul", "m", &["w", "q_out"], &[])],
                true,
            ),
        ] {
            let e = general(nodes);
            assert_eq!(e.transpose, t, "{e}");
            assert!(matches!(e.why, Why::Graph(_)), "{e}");
        }
        // Multiplied with a graph input: the graph does not say.
        let e = general(vec![node("MatMul", "m", &["x", "w"], &[])]);
        assert!(
            matches!(&e.why, Why::Default(Some(w)) if w.contains("computed from neither")),
            "{e}"
        );
        assert!(e.unchecked_square());
    }

    #[test]
    fn unknown_or_two_way_uses_decide_nothing_and_a_contradiction_is_refused() {
        let e = oriented(
            Role::Out,
            vec![node("Reshape", "r", &["w", "s"], &[])],
            None,
        )
        .unwrap();
        assert!(!e.transpose);
        assert!(
            e.to_string()
                .contains("the graph does not decide: input 0 of Reshape node r"),
            "{e}"
        );
        let both = vec![
            node("MatMul", "m", &["x", "w"], &[]),
            node("MatMul", "m2", &["w", "x"], &[]),
        ];
        let e = oriented(Role::Out, both, Some(true)).unwrap();
        assert_eq!((e.transpose, e.why), (true, Why::Config));
        let e = oriented(
            Role::Out,
            vec![node("MatMul", "m", &["x", "w"], &[])],
            Some(false),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "transpose = false contradicts the graph of m.onnx: tensor \"w\" (4 x 4 as stored) is input 1 (B) of MatMul node m, so this layer's 4 x 4 matrix is the tensor transposed (write transpose = true)"
        );
    }
}
