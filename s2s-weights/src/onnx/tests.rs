//! The ONNX reader on hand-made graphs (every storage of the data, constants, aliases,
//! external files and their confinement, damaged files) and on the committed fixtures.

use super::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto, ATTR_INT, ATTR_INTS, EXTERNAL,
};
use super::*;
use std::path::PathBuf;

use prost::Message;

use crate::{read_weights, read_weights_bytes};

fn f32_raw(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn tensor(name: &str, dims: &[i64], data_type: i32) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        ..Default::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: Vec::new(),
    }
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: ATTR_INT,
        ..Default::default()
    }
}

/// A model of every storage: raw f32, typed f32, f64, f16 and bf16 bit patterns, an
/// int64 shape (skipped), a `Constant`, an `Identity` chain over an initializer, an
/// `Identity` of a computed value, and (when `external`) a tensor in `w.data`.
pub(crate) fn sample(external: bool) -> Vec<u8> {
    let mut raw = tensor("raw", &[2, 2], 1);
    raw.raw_data = f32_raw(&[1.0, -2.0, 0.5, 4.0]);
    let mut typed = tensor("typed", &[3], 1);
    typed.float_data = vec![0.25, 0.5, 0.75];
    let mut double = tensor("double", &[1, 2], 11);
    double.double_data = vec![-1.5, 3.0];
    let mut half = tensor("half", &[2], 10);
    half.int32_data = vec![0x3c00, 0xb800]; // 1.0, -0.5
    let mut brain = tensor("brain", &[2], 16);
    brain.raw_data = vec![0x80, 0x3f, 0x40, 0xc0]; // 1.0, -3.0
    let mut shape = tensor("shape", &[2], 7);
    shape.int64_data = vec![0, -1];
    let mut initializer = vec![raw, typed, double, half, brain, shape];
    if external {
        let mut ext = tensor("ext", &[2], 1);
        ext.data_location = EXTERNAL;
        ext.external_data = [("location", "w.data"), ("offset", "4"), ("length", "8")]
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect();
        initializer.push(ext);
    }
    let mut value = tensor("", &[1], 1);
    value.float_data = vec![7.0];
    let mut constant = node("Constant", "/Constant", &[], &["const_out"]);
    constant.attribute.push(AttributeProto {
        name: "value".into(),
        t: Some(value),
        r#type: 4,
        ..Default::default()
    });
    let mut gemm = node("Gemm", "/fc/Gemm", &["x", "alias2", "typed"], &["y"]);
    gemm.attribute.push(int_attr("transB", 1));
    let model = ModelProto {
        ir_version: 8,
        producer_name: "test".into(),
        producer_version: "1".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            initializer,
            node: vec![
                constant,
                node("Identity", "/Identity", &["raw"], &["alias1"]),
                node("Identity", "/Identity_1", &["alias1"], &["alias2"]),
                node("Identity", "/Identity_2", &["y"], &["computed"]),
                gemm,
            ],
        }),
    };
    model.encode_to_vec()
}

#[test]
fn reads_every_storage_constants_and_aliases() {
    let bytes = sample(false);
    assert!(is_onnx(&bytes));
    let tensors = read_weights_bytes(&bytes, "m.onnx").expect("reads");
    let got: Vec<(&str, &[usize], &[f32])> = tensors
        .iter()
        .map(|t| (t.name.as_str(), t.shape.as_slice(), t.data.as_slice()))
        .collect();
    let square = [1.0, -2.0, 0.5, 4.0];
    assert_eq!(
        got,
        [
            ("alias1", &[2usize, 2][..], &square[..]),
            ("alias2", &[2, 2][..], &square[..]),
            ("brain", &[2][..], &[1.0, -3.0][..]),
            ("const_out", &[1][..], &[7.0][..]),
            ("double", &[1, 2][..], &[-1.5, 3.0][..]),
            ("half", &[2][..], &[1.0, -0.5][..]),
            ("raw", &[2, 2][..], &square[..]),
            ("typed", &[3][..], &[0.25, 0.5, 0.75][..]),
        ]
    );
    // The int64 shape is not read but named, with its element type.
    let w = read_onnx(&bytes, "m.onnx", None).unwrap();
    assert_eq!(w.skipped, [("shape".to_string(), "int64".to_string())]);
}

#[test]
fn lists_every_tensor_with_its_consumers() {
    let (summary, listed) = list_onnx(&sample(false), "m.onnx").expect("lists");
    assert_eq!(
        summary,
        "ONNX IR 8, opset 17, graph \"g\" of 5 nodes, 6 initializers, from test 1"
    );
    let alias = listed.iter().find(|l| l.name == "alias2").expect("alias2");
    assert_eq!(
        alias.origin,
        Origin::Identity("/Identity_1".into(), "raw".into())
    );
    assert_eq!(
        alias.consumers,
        [Consumer {
            op_type: "Gemm".into(),
            node: "/fc/Gemm".into(),
            slot: 1,
            attributes: "transB=1".into(),
        }]
    );
    let shape = listed
        .iter()
        .find(|l| l.name == "shape")
        .expect("int64 listed");
    assert_eq!(
        (shape.dtype.as_str(), &shape.shape[..]),
        ("int64", &[2usize][..])
    );
    assert!(listed.iter().all(|l| l.name != "computed"));
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("s2s-onnx-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn external_data_is_read_from_the_model_folder_only() {
    let dir = temp_dir("external");
    let model = dir.join("m.onnx");
    std::fs::write(&model, sample(true)).unwrap();
    // Offset 4, two floats.
    let data: Vec<u8> = [0u8; 4].into_iter().chain(f32_raw(&[9.0, -9.0])).collect();
    std::fs::write(dir.join("w.data"), &data).unwrap();
    let tensors = read_weights(&model).expect("reads with its data");
    let ext = tensors.iter().find(|t| t.name == "ext").expect("ext");
    assert_eq!(*ext.data, [9.0, -9.0]);
    // From memory there is no folder to look in.
    let e = read_weights_bytes(&sample(true), "m.onnx")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("m.onnx: tensor ext: its data is in the external file \"w.data\""),
        "{e}"
    );
    // A short data file.
    std::fs::write(dir.join("w.data"), &data[..8]).unwrap();
    let e = read_weights(&model).unwrap_err().to_string();
    assert!(
        e.contains("has 8 bytes, the tensor needs 8 at offset 4"),
        "{e}"
    );

    // Locations that leave the folder.
    let outside = temp_dir("outside");
    std::fs::write(outside.join("secret"), &data).unwrap();
    for location in [
        "../s2s-onnx-outside-X/secret".replace('X', &std::process::id().to_string()),
        outside.join("secret").display().to_string(),
        String::new(),
    ] {
        let mut m = ModelProto::decode(&sample(true)[..]).unwrap();
        let g = m.graph.as_mut().unwrap();
        let ext = g.initializer.iter_mut().find(|t| t.name == "ext").unwrap();
        ext.external_data[0].value = location.clone();
        std::fs::write(&model, m.encode_to_vec()).unwrap();
        let e = read_weights(&model).unwrap_err().to_string();
        assert!(
            e.contains("is not a relative path inside the model's folder"),
            "{location}: {e}"
        );
    }
    #[cfg(unix)]
    {
        // A symbolic link in the folder that points out of it.
        std::os::unix::fs::symlink(outside.join("secret"), dir.join("w.data.link")).unwrap();
        let mut m = ModelProto::decode(&sample(true)[..]).unwrap();
        let g = m.graph.as_mut().unwrap();
        let ext = g.initializer.iter_mut().find(|t| t.name == "ext").unwrap();
        ext.external_data[0].value = "w.data.link".into();
        std::fs::write(&model, m.encode_to_vec()).unwrap();
        let e = read_weights(&model).unwrap_err().to_string();
        assert!(e.contains("leads out of the model's folder"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn wrong_sizes_and_types_are_one_line_errors() {
    let edit = |f: &dyn Fn(&mut GraphProto)| {
        let mut m = ModelProto::decode(&sample(false)[..]).unwrap();
        f(m.graph.as_mut().unwrap());
        read_weights_bytes(&m.encode_to_vec(), "m.onnx")
            .unwrap_err()
            .to_string()
    };
    let find = |g: &mut GraphProto, name: &str| -> usize {
        g.initializer.iter().position(|t| t.name == name).unwrap()
    };
    assert_eq!(
        edit(&|g| {
            let i = find(g, "raw");
            g.initializer[i].raw_data.pop();
        }),
        "m.onnx: tensor raw: raw_data is 15 bytes, shape [2, 2] of float32 needs 16"
    );
    assert_eq!(
        edit(&|g| {
            let i = find(g, "typed");
            g.initializer[i].float_data.push(1.0);
        }),
        "m.onnx: tensor typed: float_data holds 4 values, shape [3] needs 3"
    );
    assert_eq!(
        edit(&|g| {
            let i = find(g, "typed");
            g.initializer[i].dims = vec![-3];
        }),
        "m.onnx: tensor typed: dimension -3 in shape [-3]"
    );
    assert_eq!(
        edit(&|g| {
            let i = find(g, "typed");
            g.initializer[i].data_type = 17;
        }),
        "m.onnx: tensor typed: unsupported element type float8e4m3fn"
    );
    assert_eq!(
        edit(&|g| {
            let i = find(g, "half");
            g.initializer[i].int32_data[0] = 70000;
        }),
        "m.onnx: tensor half: int32_data value 70000 is not a 16-bit pattern"
    );
    assert_eq!(
        edit(&|g| {
            let t = g.initializer[0].clone();
            g.initializer.push(t);
        }),
        "m.onnx: tensor name raw appears twice"
    );
    assert_eq!(
        edit(&|g| {
            let i = find(g, "typed");
            g.initializer[i].dims = vec![1 << 62, 1 << 62];
        }),
        "m.onnx: tensor typed: shape [4611686018427387904, 4611686018427387904] is too large"
    );
    let e = read_weights_bytes(b"\x08\x08\x3a\xff", "m.onnx")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("m.onnx: not a valid ONNX model (protobuf): "),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn every_truncation_and_bit_flip_is_handled_without_panic() {
    let bytes = sample(false);
    for len in 0..bytes.len() {
        let _ = read_weights_bytes(&bytes[..len], "m.onnx");
        let _ = list_onnx(&bytes[..len], "m.onnx");
    }
    for pos in 0..bytes.len() {
        for flip in [0x01u8, 0x41, 0x80] {
            let mut corrupt = bytes.clone();
            corrupt[pos] ^= flip;
            let _ = read_weights_bytes(&corrupt, "m.onnx");
            let _ = list_onnx(&corrupt, "m.onnx");
        }
    }
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/onnx")
        .join(path)
}

#[test]
fn reads_the_fixtures_initializers_externals_and_identity() {
    let shapes = |path: &str| -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
        read_weights(&fixture(path))
            .expect("fixture reads")
            .into_iter()
            .map(|t| (t.name, (t.shape, t.data.to_vec())))
            .collect()
    };
    let enc = shapes("gru/encoder.onnx");
    assert_eq!(enc["onnx::GRU_383"].0, [2, 96, 16]);
    assert_eq!(enc["onnx::GRU_385"].0, [2, 192]);
    assert_eq!(enc["onnx::GRU_403"].0, [2, 96, 64]);
    assert_eq!(enc["bridge.1.weight"].0, [48, 64]);
    let dec = shapes("gru/decoder.onnx");
    // External data, and the weight read through an Identity.
    assert_eq!(dec["generator.weight"].0, [72, 48]);
    assert!(dec["generator.weight"].1.iter().any(|&v| v != 0.0));
    assert_eq!(dec["onnx::MatMul_531"], dec["onnx::MatMul_530"]);
    assert_eq!(dec["onnx::MatMul_530"].0, [48, 64]);
    assert_eq!(dec["onnx::MatMul_512"].0, [80, 144]);
    let lstm = shapes("lstm/encoder.onnx");
    assert_eq!(lstm["onnx::LSTM_403"].0, [2, 128, 64]);
    assert!(lstm["onnx::LSTM_403"].1.iter().all(|v| v.is_finite()));

    let (_, listed) = list_onnx(
        &std::fs::read(fixture("gru/encoder.onnx")).unwrap(),
        "encoder.onnx",
    )
    .unwrap();
    let w = listed.iter().find(|l| l.name == "onnx::GRU_383").unwrap();
    assert_eq!(w.consumers.len(), 1);
    let c = &w.consumers[0];
    assert_eq!((c.op_type.as_str(), c.slot), ("GRU", 1));
    assert!(
        c.attributes.contains("linear_before_reset=1"),
        "{}",
        c.attributes
    );
    assert!(
        c.attributes.contains("direction=bidirectional"),
        "{}",
        c.attributes
    );
}

/// A graph of one initializer `w` of `values` and the given nodes.
fn graph_of(values: &[f32], nodes: Vec<NodeProto>) -> Vec<u8> {
    let mut w = tensor("w", &[values.len() as i64], 1);
    w.raw_data = f32_raw(values);
    ModelProto {
        ir_version: 8,
        graph: Some(GraphProto {
            name: "g".into(),
            initializer: vec![w],
            node: nodes,
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn identity_chains_resolve_once_and_aliases_share_their_data() {
    // Issue 30: a chain of n `Identity` nodes was walked from every node (n² steps:
    // 18 s for 5,000), and every alias copied its source's data.
    let n = 20_000;
    let nodes = (1..=n)
        .map(|i| {
            let input = if i == 1 {
                "w".into()
            } else {
                format!("a{}", i - 1)
            };
            node("Identity", &format!("n{i}"), &[&input], &[&format!("a{i}")])
        })
        .collect();
    let bytes = graph_of(&[1.0, 2.0], nodes);
    let parsed = parse(&bytes, "chain.onnx").expect("parses");
    assert_eq!(parsed.aliases.len(), n);
    assert!(parsed.aliases.values().all(|a| a.root == "w"));
    let last = &parsed.aliases[&format!("a{n}")];
    assert_eq!(last.node, format!("n{n}"));
    let w = read_onnx(&bytes, "chain.onnx", None).expect("reads");
    assert_eq!(w.tensors.len(), n + 1);
    let root = w.tensors.iter().find(|t| t.name == "w").unwrap();
    assert!(w
        .tensors
        .iter()
        .all(|t| Arc::ptr_eq(&t.data, &root.data) && t.shape == [2]));
    let (_, listed) = list_onnx(&bytes, "chain.onnx").expect("lists");
    assert_eq!(listed.len(), n + 1);
    assert!(listed.windows(2).all(|p| p[0].name < p[1].name));
    // A cycle, and a chain from a computed value, stay unresolved; a branch off the
    // chain resolves to the same root.
    let nodes = vec![
        node("Identity", "c1", &["c2"], &["c1"]),
        node("Identity", "c2", &["c1"], &["c2"]),
        node("Identity", "k", &["y"], &["k"]),
        node("Identity", "b1", &["w"], &["b1"]),
        node("Identity", "b2", &["b1"], &["b2"]),
        node("Identity", "b3", &["b1"], &["b3"]),
    ];
    let parsed = parse(&graph_of(&[1.0], nodes), "m.onnx").expect("parses");
    let names: Vec<(&str, &str)> = parsed
        .aliases
        .iter()
        .map(|(name, a)| (name.as_str(), a.root.as_str()))
        .collect();
    assert_eq!(names, [("b1", "w"), ("b2", "w"), ("b3", "w")]);
}

#[cfg(unix)]
#[test]
fn external_data_must_be_a_regular_file_and_a_readable_size() {
    let dir = temp_dir("external-hostile");
    let model = dir.join("m.onnx");
    let with_data = |dims: &[i64], location: &str, length: u64| {
        let mut ext = tensor("ext", dims, 1);
        ext.data_location = EXTERNAL;
        ext.external_data = [
            ("location", location.to_string()),
            ("length", length.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| StringStringEntryProto {
            key: k.to_string(),
            value: v,
        })
        .collect();
        ModelProto {
            ir_version: 8,
            graph: Some(GraphProto {
                initializer: vec![ext],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec()
    };
    // A FIFO is refused before it is opened (an open would wait for a writer).
    let fifo = dir.join("w.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::fs::write(&model, with_data(&[2], "w.fifo", 8)).unwrap();
    let e = read_weights(&model).unwrap_err().to_string();
    assert!(e.contains("w.fifo is not a regular file (a FIFO)"), "{e}");
    // So is a directory.
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(&model, with_data(&[2], "sub", 8)).unwrap();
    let e = read_weights(&model).unwrap_err().to_string();
    assert!(e.contains("sub is not a regular file (a directory)"), "{e}");
    // A tensor larger than any read, before its (sparse) file is touched.
    std::fs::File::create(dir.join("big.data"))
        .unwrap()
        .set_len(6 << 30)
        .unwrap();
    std::fs::write(&model, with_data(&[(6 << 30) / 4], "big.data", 6 << 30)).unwrap();
    let e = read_weights(&model).unwrap_err().to_string();
    assert!(
        e.contains("tensor ext: shape [1610612736] of float32 is 6442450944 bytes, more than the largest tensor read"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_uses_follow_identity_and_matrix_transposes_and_values_know_their_sources() {
    let mut transpose = node("Transpose", "/T", &["w"], &["wt"]);
    transpose.attribute.push(AttributeProto {
        name: "perm".into(),
        ints: vec![1, 0],
        r#type: ATTR_INTS,
        ..Default::default()
    });
    let bytes = graph_of(
        &[1.0, 2.0, 3.0, 4.0],
        vec![
            node("Identity", "/Identity", &["w"], &["w1"]),
            node("MatMul", "/MatMul", &["x", "w1"], &["y"]),
            transpose,
            node("MatMul", "/MatMul_1", &["wt", "y"], &["z"]),
            node("Reshape", "/Reshape", &["w", "shape"], &["r"]),
        ],
    );
    let w = read_onnx(&bytes, "g.onnx", None).expect("reads");
    let g = w.graph.expect("an ONNX model has a graph");
    let uses = g.uses("w", 2);
    let got: Vec<(&str, usize, bool, Vec<&str>)> = uses
        .iter()
        .map(|u| {
            (
                u.node.name.as_str(),
                u.slot,
                u.transposed,
                u.via.iter().map(|n| n.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("/MatMul", 1, false, vec!["/Identity"]),
            ("/MatMul_1", 0, true, vec!["/T"]),
            ("/Reshape", 0, false, vec![]),
        ]
    );
    assert_eq!(uses[0].node.slot_label(1), "input 1 (B)");
    // A Transpose of a tensor that is not a matrix is a use of its own.
    assert_eq!(g.uses("w", 3)[1].node.name, "/T");
    let w: std::collections::BTreeSet<String> = ["w".to_string()].into();
    let x: std::collections::BTreeSet<String> = ["x".to_string()].into();
    assert!(g.depends_on("z", &w) && g.depends_on("z", &x) && g.depends_on("y", &x));
    assert!(!g.depends_on("r", &x) && !g.depends_on("x", &w));
}

#[test]
fn graph_listing_reads_subgraphs_and_what_they_share() {
    let body = GraphProto {
        name: "body".into(),
        node: vec![node("MatMul", "/body/MatMul", &["x", "w"], &["y"])],
        initializer: vec![tensor("b", &[1], 1)],
    };
    let mut lp = node("Loop", "/loop", &["n", "c"], &["out"]);
    lp.attribute.push(AttributeProto {
        name: "body".into(),
        g: body.encode_to_vec(),
        r#type: 5,
        ..Default::default()
    });
    let bytes = graph_of(
        &[1.0, 2.0],
        vec![node("Add", "/Add", &["w", "w"], &["s"]), lp],
    );
    let g = graph_onnx(&bytes, "loop.onnx").expect("reads");
    assert_eq!(
        g.initializers.keys().collect::<Vec<_>>(),
        ["", "Loop /loop body"]
    );
    assert_eq!(
        g.nodes.last().map(|n| n.graph.as_str()),
        Some("Loop /loop body")
    );
    assert_eq!(g.shared(), [("w", "", vec!["", "Loop /loop body"])]);
    // The reader does not decode bodies: its graph is the main graph's.
    let w = read_onnx(&bytes, "loop.onnx", None).expect("reads");
    assert_eq!(w.graph.expect("graph").nodes.len(), 2);

    // A damaged body is an error naming its node, for the listing only.
    let mut bad = node("If", "/if", &["c"], &["out"]);
    bad.attribute.push(AttributeProto {
        name: "then_branch".into(),
        g: vec![0x0a, 0x05, 0x01],
        r#type: 5,
        ..Default::default()
    });
    let bytes = graph_of(&[1.0], vec![bad]);
    let e = graph_onnx(&bytes, "if.onnx").unwrap_err().to_string();
    assert!(
        e.starts_with("if.onnx: node /if: subgraph then_branch: not a valid graph"),
        "{e}"
    );
    assert!(read_onnx(&bytes, "if.onnx", None).is_ok());

    // Bodies nested too deep are refused, not followed.
    let mut inner = GraphProto::default();
    for depth in 0..12 {
        let mut n = node("Loop", &format!("/l{depth}"), &[], &[]);
        n.attribute.push(AttributeProto {
            name: "body".into(),
            g: inner.encode_to_vec(),
            r#type: 5,
            ..Default::default()
        });
        inner = GraphProto {
            node: vec![n],
            ..Default::default()
        };
    }
    let bytes = graph_of(&[1.0], inner.node);
    let e = graph_onnx(&bytes, "deep.onnx").unwrap_err().to_string();
    assert!(e.contains("subgraphs nested more than 8 deep"), "{e}");
}
