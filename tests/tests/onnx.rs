//! The ONNX fixtures of `tests/fixtures/onnx/` (two graphs per model, in the layout of
//! `torch.onnx.export`; their README lists every tensor): `s2s tensors` lists what a
//! configuration needs, and `s2s import` takes several `--weights` files, packed
//! recurrent tensors by direction and bias half, ONNX gate orders, transposed `MatMul`
//! weights, a weight behind an `Identity` and external data, each into the layer the
//! README says, value for value. Then each model, imported with its configuration
//! alone (`models/examples/onnx-{gru,lstm}.toml`), decodes the 500 held-out words of
//! its `reference.json` token for token as onnxruntime did (a difference is allowed
//! only at a step whose reference top-two gap is below 1e-4; the references have
//! none), quantizes to w8a16 within 99 % sequence agreement of its f32 model, and
//! runs under QEMU on the mps2-an386 and the lm3s6965evb exactly as on the host (the
//! fixtures are sized so that their w8a16 files fit the lm3s6965evb's model region).
//! And the graph decides which way round a matrix is taken: a `transpose` the graph
//! contradicts is refused (a square general attention matrix, which no shape check
//! catches), a `MatMul` weight needs none, `s2s import --explain` says why each
//! matrix has its orientation, and `s2s tensors --graph` shows the uses, concat orders,
//! subgraphs and shared tensors a configuration writer needs.

use std::path::{Path, PathBuf};

use host_tools::device::QemuOptions;
use host_tools::import::config::Config;
use host_tools::import::{import_files, WeightFile};
use s2s_tests::{
    assert_one_error, assert_only, near_tie_differences, quantize_w8a16_and_check, references,
    repo_root, run_words, s2s, s2s_ok, scratch_dir, Reference,
};
use seq2seq::format::{Role, Slot, TensorId};

fn fixture(path: &str) -> PathBuf {
    repo_root().join("tests/fixtures/onnx").join(path)
}

#[test]
fn tensors_lists_names_shapes_types_and_consumers() {
    let out = s2s_ok(
        &[
            &"tensors",
            &fixture("gru/encoder.onnx"),
            &fixture("gru/decoder.onnx"),
        ],
        "",
    );
    for want in [
        "gru/encoder.onnx: ONNX IR 8, opset 17",
        "-> GRU /encoder/rnn/GRU input 1 (W) [",
        "direction=bidirectional",
        "linear_before_reset=1",
        "-> GRU /encoder/rnn/GRU_1 input 3 (B)",
        "gru/decoder.onnx: ONNX IR 8",
        "(external: decoder.onnx.data at offset 0)",
        "onnx::MatMul_531",
        "(Identity /Identity of onnx::MatMul_530)",
        "transB=1",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not listed in\n{out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("onnx::GRU_383"), "onnx::GRU_383 2 x 96 x 16 float32");
    assert_eq!(
        line("generator.weight"),
        "generator.weight 72 x 48 float32 (external: decoder.onnx.data at offset 0)"
    );
    assert_eq!(
        line("/decoder/Constant_output_0"),
        "/decoder/Constant_output_0 scalar int64 (output of Constant /decoder/Constant)"
    );
    // Every initializer of both graphs is listed (the README's tables): the encoder's 11
    // float tensors, the decoder's 14 plus the Identity alias.
    for name in [
        "encoder.embedding.weight",
        "onnx::GRU_405",
        "bridge.1.bias",
        "decoder.rnn.layers.1.weight_hh",
        "decoder.attn.linear_out.bias",
        "generator.bias",
        "onnx::MatMul_545",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} not listed in\n{out}"
        );
    }
    // Other formats list their tensors too.
    let st = s2s_ok(
        &[
            &"tensors",
            &repo_root().join("tests/fixtures/lstm/pytorch-g2p/model.safetensors"),
        ],
        "",
    );
    assert!(st.contains("encoder.lstm.weight_ih_l0_reverse"), "{st}");
    assert!(st.contains("256 x 32"), "{st}");
}

#[test]
fn tensors_of_a_damaged_file_is_one_error_line_and_prints_nothing() {
    let dir = scratch_dir("onnx-tensors-damaged");
    let bad = dir.join("bad.onnx");
    let bytes = std::fs::read(fixture("gru/encoder.onnx")).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let out = s2s(&[&"tensors", &fixture("gru/encoder.onnx"), &bad], "");
    assert_one_error(&out, &["bad.onnx", "not a valid ONNX model"]);
    assert!(out.stdout.is_empty(), "printed before failing");
}

/// The LSTM fixture's layers that phase 1 of issue 12 can already check, as a
/// configuration: the encoder (packed `LSTM` nodes: direction, bias halves, gates
/// `iofc`, an external tensor), the general attention behind an `Identity`, the
/// unrolled decoder (a transposed `MatMul` weight), the attentional layer and the
/// output. (`init = "dense"` stands in for the fixture's mean bridge, whose matrix has
/// the same shape.)
fn lstm_config() -> String {
    let vocab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("vocab.json")).unwrap()).unwrap();
    let list = |key: &str| serde_json::to_string(&vocab[key]).unwrap();
    let mut weights = String::new();
    for l in 0..2 {
        let (w, r, b) = [(383, 384, 385), (403, 404, 405)][l];
        for (dir, d) in [("fwd", 0), ("bwd", 1)] {
            weights += &format!(
                "\"encoder.w_ih.l{l}.{dir}\" = {{ weight = \"onnx::LSTM_{w}\", bias = \"onnx::LSTM_{b}\", direction = {d}, bias_half = \"input\", gates = \"iofc\" }}\n\
                 \"encoder.w_hh.l{l}.{dir}\" = {{ weight = \"onnx::LSTM_{r}\", bias = \"onnx::LSTM_{b}\", direction = {d}, bias_half = \"recurrent\", gates = \"iofc\" }}\n"
            );
        }
        weights += &format!(
            "\"decoder.w_hh.l{l}\" = {{ weight = \"decoder.rnn.layers.{l}.weight_hh\", bias = \"decoder.rnn.layers.{l}.bias_hh\" }}\n\
             \"bridge.l{l}\" = {{ weight = \"bridge.weight\", bias = \"bridge.bias\", file = \"encoder.onnx\" }}\n"
        );
    }
    format!(
        r#"[model]
name = "onnx-lstm-phase1"

[source]
tokens = {src}
pad = "<pad>"
unk = "<unk>"

[target]
tokens = {tgt}
start = "<s>"
end = "</s>"
separator = " "
max_steps = 24

[encoder]
embedding = 16
hidden = 32
layers = 2
bidirectional = true
cell = "lstm"

[attention]
ordering = "luong"
score = "general"
attentional = 48
attentional_input = ["state", "context"]

[decoder]
embedding = 32
hidden = 48
layers = 2
cell = "lstm"
init = "dense"
init_cell = "zeros"
output = ["attentional"]

[weights]
"encoder.embedding" = "encoder.embedding.weight"
"attention.general" = "onnx::MatMul_531"
"decoder.embedding" = "decoder.embedding.weight"
"decoder.w_ih.l0" = {{ weight = "onnx::MatMul_512", bias = "decoder.rnn.layers.0.bias_ih", transpose = true }}
"decoder.w_ih.l1" = {{ weight = "decoder.rnn.layers.1.weight_ih", bias = "decoder.rnn.layers.1.bias_ih" }}
"attentional" = {{ weight = "onnx::MatMul_545", bias = "decoder.attn.linear_out.bias", transpose = true }}
"output" = {{ weight = "generator.weight", bias = "generator.bias" }}
{weights}"#,
        src = list("source"),
        tgt = list("target"),
    )
}

/// A tensor of the fixture as read.
fn onnx_tensor(files: &[WeightFile], name: &str) -> (Vec<usize>, Vec<f32>) {
    let t = files
        .iter()
        .flat_map(|f| &f.tensors)
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} in the fixture"));
    (t.shape.clone(), t.data.to_vec())
}

/// Rows `rows` (each `cols` long) of a row-major matrix, concatenated.
fn rows_of(data: &[f32], cols: usize, blocks: &[std::ops::Range<usize>]) -> Vec<f32> {
    blocks
        .iter()
        .flat_map(|r| data[r.start * cols..r.end * cols].iter().copied())
        .collect()
}

#[test]
fn the_lstm_fixture_maps_into_our_layers_value_for_value() {
    let dir = repo_root().join("tests/fixtures/onnx/lstm");
    let files: Vec<WeightFile> = ["encoder.onnx", "decoder.onnx"]
        .iter()
        .map(|f| WeightFile::read(&dir.join(f), None).expect("reads"))
        .collect();
    let cfg = Config::parse(&lstm_config(), Path::new("onnx-lstm.toml")).expect("parses");
    let b = import_files(&cfg, &files).expect("imports");
    let ours = |role, layer, dir, slot| -> Vec<f32> {
        let t = b
            .tensors
            .iter()
            .find(|t| t.id == TensorId::new(role, layer, dir, slot))
            .unwrap_or_else(|| panic!("{role:?} l{layer} d{dir} {slot:?}"));
        bytemuck::pod_collect_to_vec(&t.bytes)
    };
    // The README's sizes: source embedding, encoder hidden (per direction), target
    // embedding, decoder hidden; the memory is both directions, 2h.
    let (e_src, h, e_tgt, d_h) = (16, 32, 32, 48);
    let m = 2 * h;
    // ONNX LSTM gate blocks [i, o, f, c] of h rows -> ours [i, f, g, o].
    let perm = [0..h, 2 * h..3 * h, 3 * h..4 * h, h..2 * h];
    for (l, w_name, r_name, b_name, cols) in [
        (
            0,
            "onnx::LSTM_383",
            "onnx::LSTM_384",
            "onnx::LSTM_385",
            e_src,
        ),
        // W of layer 1 is the external tensor.
        (1, "onnx::LSTM_403", "onnx::LSTM_404", "onnx::LSTM_405", m),
    ] {
        let (w_shape, w) = onnx_tensor(&files, w_name);
        let (_, r) = onnx_tensor(&files, r_name);
        let (b_shape, bias) = onnx_tensor(&files, b_name);
        assert_eq!(w_shape, [2, 4 * h, cols]);
        assert_eq!(b_shape, [2, 8 * h]);
        for d in 0..2 {
            let w_d = &w[d * 4 * h * cols..(d + 1) * 4 * h * cols];
            let r_d = &r[d * 4 * h * h..(d + 1) * 4 * h * h];
            let b_d = &bias[d * 8 * h..(d + 1) * 8 * h];
            assert_eq!(
                ours(Role::EncWih, l, d, Slot::Weight),
                rows_of(w_d, cols, &perm),
                "W l{l} d{d}"
            );
            assert_eq!(
                ours(Role::EncWhh, l, d, Slot::Weight),
                rows_of(r_d, h, &perm),
                "R l{l} d{d}"
            );
            assert_eq!(
                ours(Role::EncWih, l, d, Slot::Bias),
                rows_of(&b_d[..4 * h], 1, &perm),
                "Wb l{l} d{d}"
            );
            assert_eq!(
                ours(Role::EncWhh, l, d, Slot::Bias),
                rows_of(&b_d[4 * h..], 1, &perm),
                "Rb l{l} d{d}"
            );
        }
    }
    // The general attention's matrix is read through the Identity, as stored (D, M).
    let (shape, general) = onnx_tensor(&files, "onnx::MatMul_530");
    assert_eq!(shape, [d_h, m]);
    assert_eq!(ours(Role::AttnGeneral, 0, 0, Slot::Weight), general);
    // MatMul weights are (in, out): transposed.
    let (shape, w_ih) = onnx_tensor(&files, "onnx::MatMul_512");
    assert_eq!(shape, [e_tgt, 4 * d_h]);
    let ours_w_ih = ours(Role::DecWih, 0, 0, Slot::Weight);
    assert_eq!(ours_w_ih.len(), w_ih.len());
    for o in 0..4 * d_h {
        for i in 0..e_tgt {
            assert_eq!(
                ours_w_ih[o * e_tgt + i],
                w_ih[i * 4 * d_h + o],
                "w_ih.l0 [{o}, {i}]"
            );
        }
    }
    let (shape, att) = onnx_tensor(&files, "onnx::MatMul_545");
    assert_eq!(shape, [d_h + m, d_h]);
    let ours_att = ours(Role::Attentional, 0, 0, Slot::Weight);
    for (o, i) in [(0, 0), (3, d_h + 4), (d_h - 1, d_h + m - 1)] {
        assert_eq!(
            ours_att[o * (d_h + m) + i],
            att[i * d_h + o],
            "attentional [{o}, {i}]"
        );
    }
}

#[test]
fn onnx_import_mistakes_are_one_error_line_and_write_nothing() {
    let dir = scratch_dir("onnx-import-errors");
    let fixtures = fixture("lstm");
    let (enc, dec) = (fixtures.join("encoder.onnx"), fixtures.join("decoder.onnx"));
    let out = dir.join("m.s2s");
    let run = |config: &str, weights: &[&Path]| {
        let cfg = dir.join("c.toml");
        std::fs::write(&cfg, config).unwrap();
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"import", &"--config"];
        args.push(&cfg);
        for w in weights {
            args.push(&"--weights");
            args.push(w);
        }
        args.push(&"-o");
        args.push(&out);
        s2s(&args, "")
    };
    let good = lstm_config();
    // Only the encoder graph given: the decoder's tensors are missing.
    assert_one_error(
        &run(&good, &[&enc]),
        &[
            "c.toml: layer attention.general",
            "tensor \"onnx::MatMul_531\" not found in the weights file encoder.onnx",
        ],
    );
    // A bridge naming a file that is not given.
    assert_one_error(
        &run(
            &good.replace("file = \"encoder.onnx\"", "file = \"enc.onnx\""),
            &[&enc, &dec],
        ),
        &["layer bridge.l0", "\"enc.onnx\" is not a --weights file"],
    );
    // The backward direction of a tensor with two.
    assert_one_error(
        &run(
            &good.replacen("direction = 1", "direction = 2", 1),
            &[&enc, &dec],
        ),
        &[
            "layer encoder.w_ih.l0.bwd",
            "direction 2 beyond its first dimension 2",
        ],
    );
    // The whole packed bias is twice too long.
    assert_one_error(
        &run(
            &good.replacen(", bias_half = \"input\"", "", 1),
            &[&enc, &dec],
        ),
        &[
            "layer encoder.w_ih.l0.fwd",
            "the configuration needs 128 values",
        ],
    );
    // The same file twice.
    assert_one_error(
        &run(&good, &[&enc, &enc, &dec]),
        &["two --weights files are named encoder.onnx"],
    );
    assert_only(&dir, &["c.toml"]);
    // And the good one imports.
    let r = run(&good, &[&enc, &dec]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

// ------------------------------------------------------------ orientation from the graph

/// The protobuf wire format, enough to write a small ONNX model: a field's key and
/// a varint, or a length-delimited field.
struct Pb(Vec<u8>);

impl Pb {
    fn new() -> Self {
        Pb(Vec::new())
    }
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn int(mut self, field: u64, v: i64) -> Self {
        self.varint(field << 3);
        self.varint(v as u64);
        self
    }
    fn bytes(mut self, field: u64, b: &[u8]) -> Self {
        self.varint((field << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
}

/// An ONNX float initializer (`TensorProto`), its values `0.01 * (i % 7) - 0.03 * k`.
fn initializer(name: &str, dims: &[usize], k: usize) -> Vec<u8> {
    let n: usize = dims.iter().product();
    let raw: Vec<u8> = (0..n)
        .flat_map(|i| (0.01 * (i % 7) as f32 - 0.03 * k as f32).to_le_bytes())
        .collect();
    let mut t = Pb::new();
    for &d in dims {
        t = t.int(1, d as i64);
    }
    t.int(2, 1).bytes(8, name.as_bytes()).bytes(9, &raw).0
}

/// An ONNX node (`NodeProto`) with integer attributes.
fn onnx_node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    ints: &[(&str, i64)],
) -> Vec<u8> {
    let mut n = Pb::new();
    for i in inputs {
        n = n.bytes(1, i.as_bytes());
    }
    for o in outputs {
        n = n.bytes(2, o.as_bytes());
    }
    n = n.bytes(3, name.as_bytes()).bytes(4, op.as_bytes());
    for (a, v) in ints {
        let attr = Pb::new().bytes(1, a.as_bytes()).int(3, *v).int(20, 2).0;
        n = n.bytes(5, &attr);
    }
    n.0
}

/// A one-graph ONNX model of a small Luong model whose general attention matrix is
/// square (decoder state D = memory M = 4): a GRU encoder, a decoder cell unrolled
/// into `Gemm`s, and the attention matrix multiplied with the decoder's state (the
/// query, as OpenNMT and tests/fixtures/onnx do) or, when `key_side`, with the memory.
fn square_general_onnx(key_side: bool) -> Vec<u8> {
    let inits = [
        initializer("enc.emb", &[3, 2], 1),
        initializer("enc.W", &[1, 12, 2], 2),
        initializer("enc.R", &[1, 12, 4], 3),
        initializer("enc.B", &[1, 24], 4),
        initializer("dec.emb", &[5, 2], 5),
        initializer("dec.w_ih", &[12, 2], 6),
        initializer("dec.b_ih", &[12], 7),
        initializer("dec.w_hh", &[12, 4], 8),
        initializer("dec.b_hh", &[12], 9),
        initializer("att.W", &[4, 4], 10),
        initializer("out.W", &[5, 8], 11),
        initializer("out.b", &[5], 12),
    ];
    let (att_in, att_out) = if key_side {
        ("memory", "keys")
    } else {
        ("state", "query")
    };
    let nodes = [
        onnx_node("Gather", "/enc/Gather", &["enc.emb", "src"], &["x"], &[]),
        onnx_node(
            "GRU",
            "/enc/GRU",
            &["x", "enc.W", "enc.R", "enc.B"],
            &["memory"],
            &[("hidden_size", 4), ("linear_before_reset", 1)],
        ),
        onnx_node("Gather", "/dec/Gather", &["dec.emb", "token"], &["e"], &[]),
        onnx_node(
            "Gemm",
            "/dec/Gemm",
            &["e", "dec.w_ih", "dec.b_ih"],
            &["gi"],
            &[("transB", 1)],
        ),
        onnx_node(
            "Gemm",
            "/dec/Gemm_1",
            &["h", "dec.w_hh", "dec.b_hh"],
            &["gh"],
            &[("transB", 1)],
        ),
        onnx_node("Add", "/dec/Add", &["gi", "gh"], &["state"], &[]),
        onnx_node(
            "MatMul",
            "/attn/MatMul",
            &[att_in, "att.W"],
            &[att_out],
            &[],
        ),
        onnx_node(
            "Concat",
            "/out/Concat",
            &["state", "context"],
            &["cat"],
            &[("axis", 1)],
        ),
        onnx_node(
            "Gemm",
            "/out/Gemm",
            &["cat", "out.W", "out.b"],
            &["logits"],
            &[("transB", 1)],
        ),
    ];
    let mut graph = Pb::new();
    for n in &nodes {
        graph = graph.bytes(1, n);
    }
    graph = graph.bytes(2, b"square");
    for t in &inits {
        graph = graph.bytes(5, t);
    }
    let opset = Pb::new().bytes(1, b"").int(2, 17).0;
    Pb::new()
        .int(1, 8)
        .bytes(2, b"s2s tests/tests/onnx.rs")
        .bytes(7, &graph.0)
        .bytes(8, &opset)
        .0
}

/// The configuration of [`square_general_onnx`], with `general` as the attention
/// matrix's entry.
fn square_general_config(general: &str) -> String {
    format!(
        r#"[model]
name = "square-general"

[source]
tokens = ["<pad>", "a", "b"]
pad = "<pad>"

[target]
tokens = ["<pad>", "<s>", "</s>", "x", "y"]
start = "<s>"
end = "</s>"
max_steps = 8

[encoder]
embedding = 2
hidden = 4
reset = "after"

[attention]
ordering = "luong"
score = "general"

[decoder]
embedding = 2
hidden = 4
reset = "after"
init = "zeros"
output = ["state", "context"]

[weights]
"encoder.embedding" = "enc.emb"
"encoder.w_ih.l0.fwd" = {{ weight = "enc.W", direction = 0 }}
"encoder.w_hh.l0.fwd" = {{ weight = "enc.R", direction = 0 }}
"decoder.embedding" = "dec.emb"
"decoder.w_ih.l0" = {{ weight = "dec.w_ih", bias = "dec.b_ih" }}
"decoder.w_hh.l0" = {{ weight = "dec.w_hh", bias = "dec.b_hh" }}
"attention.general" = {general}
"output" = {{ weight = "out.W", bias = "out.b" }}
"#
    )
}

/// `s2s import [--explain] --config CONFIG --weights WEIGHTS -o DIR/m.s2s`, the
/// configuration written into `dir` first.
fn import_with(dir: &Path, config: &str, weights: &Path, explain: bool) -> std::process::Output {
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = dir.join("m.s2s");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"import"];
    if explain {
        args.push(&"--explain");
    }
    args.extend([
        &"--config" as &dyn AsRef<std::ffi::OsStr>,
        &cfg,
        &"--weights",
        &weights,
        &"-o",
        &out,
    ]);
    s2s(&args, "")
}

/// A square general attention matrix has the right shape both ways round, so before
/// the graph was read `transpose = true` imported silently (and decoded garbage). The
/// graph says the matrix multiplies the decoder's state (the query): it is ours as
/// stored, and `transpose = true` is one error line naming the tensor, the node, its
/// input slot and both shapes. Without `transpose` it imports as stored; the matrix
/// multiplied with the memory instead is ours transposed, and `transpose = false` is
/// refused there.
#[test]
fn a_transposed_square_general_matrix_is_refused_by_the_graph() {
    let dir = scratch_dir("onnx-square-general");
    let weights = dir.join("square.onnx");
    std::fs::write(&weights, square_general_onnx(false)).unwrap();
    let line = assert_one_error(
        &import_with(
            &dir,
            &square_general_config(r#"{ weight = "att.W", transpose = true }"#),
            &weights,
            false,
        ),
        &[
            "c.toml: layer attention.general",
            "transpose = true contradicts the graph of square.onnx",
            "tensor \"att.W\" (4 x 4 as stored)",
            "input 1 (B) of MatMul node /attn/MatMul",
            "input 0 the query, from the decoder's weights",
            "this layer's 4 x 4 matrix is the tensor as stored (remove transpose)",
        ],
    );
    eprintln!("{line}");
    assert_only(&dir, &["c.toml", "square.onnx"]);
    // Silent or right: the same file, the matrix as stored.
    let r = import_with(&dir, &square_general_config(r#""att.W""#), &weights, false);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let silent = std::fs::read(dir.join("m.s2s")).unwrap();
    let r = import_with(
        &dir,
        &square_general_config(r#"{ weight = "att.W", transpose = false }"#),
        &weights,
        false,
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(silent, std::fs::read(dir.join("m.s2s")).unwrap());

    // Multiplied with the memory, it is ours transposed.
    std::fs::write(&weights, square_general_onnx(true)).unwrap();
    assert_one_error(
        &import_with(
            &dir,
            &square_general_config(r#"{ weight = "att.W", transpose = false }"#),
            &weights,
            false,
        ),
        &[
            "transpose = false contradicts the graph of square.onnx",
            "input 1 (B) of MatMul node /attn/MatMul",
            "input 0 the memory, from the encoder's weights",
            "the tensor transposed (write transpose = true)",
        ],
    );
    let r = import_with(&dir, &square_general_config(r#""att.W""#), &weights, true);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let explained = String::from_utf8_lossy(&r.stdout);
    assert!(
        explained.contains(
            "attention.general: att.W in square.onnx, 4 x 4, transposed: derived from the graph (input 1 (B) of MatMul node /attn/MatMul, input 0 the memory, from the encoder's weights)"
        ),
        "{explained}"
    );
    assert_ne!(silent, std::fs::read(dir.join("m.s2s")).unwrap());
}

/// The GRU export's configuration without `transpose` on its `MatMul` weights imports
/// to the same bytes as with it: the graph says they are `(in, out)`.
#[test]
fn onnx_matmul_weights_without_transpose_import_as_with_it() {
    let dir = scratch_dir("onnx-derived-transpose");
    let text = std::fs::read_to_string(GRU.config()).unwrap();
    let silent = text.replace(", transpose = true", "");
    assert_eq!(text.matches(", transpose = true").count(), 2);
    let config = dir.join("silent.toml");
    std::fs::write(&config, silent).unwrap();
    let out = dir.join("silent.s2s");
    let r = import_graphs(&config, GRU, &out);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(imported(GRU)).unwrap(),
        "imports differ"
    );
}

/// `s2s import --explain` prints each layer's tensor, stored shape, orientation and
/// why: from the configuration and the graph for the ONNX export, from the
/// configuration or the default for safetensors, where a square matrix gets the
/// pointer to `s2s verify`.
#[test]
fn import_explain_says_where_each_orientation_comes_from() {
    let dir = scratch_dir("onnx-import-explain");
    let [enc, dec] = GRU.graphs();
    let out = dir.join("gru.s2s");
    let text = s2s_ok(
        &[
            &"import",
            &"--explain",
            &"--config",
            &GRU.config(),
            &"--weights",
            &enc,
            &"--weights",
            &dec,
            &"-o",
            &out,
        ],
        "",
    );
    for want in [
        "encoder.w_ih.l0.fwd: onnx::GRU_383[0] in encoder.onnx, 96 x 16, as stored: derived from the graph (input 1 (W) of GRU node /encoder/rnn/GRU)",
        "bridge.l0: bridge.0.weight in encoder.onnx, 48 x 64, as stored: derived from the graph (input 1 (B) of Gemm node /bridge/0/Gemm)",
        "decoder.w_ih.l0: onnx::MatMul_512 in decoder.onnx, 80 x 144, transposed: transpose = true in the configuration, as the graph uses it (input 1 (B) of MatMul node",
        "attention.general: onnx::MatMul_531 in decoder.onnx, 48 x 64, as stored: derived from the graph (input 1 (B) of MatMul node",
        "input 0 the query, from the decoder's weights)",
        "output: generator.weight in decoder.onnx, 72 x 48, as stored: derived from the graph (input 1 (B) of Gemm node",
        "decoder.embedding: decoder.embedding.weight in decoder.onnx, 72 x 32, as stored: derived from the graph (input 0 (data) of Gather node",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{text}");
    }
    assert_eq!(text.lines().count(), 19, "{text}");
    assert!(!text.contains("s2s verify"), "{text}");

    // safetensors: no graph; the tutorial's attention matrices are square.
    let weights = dir.join("pytorch-bahdanau.safetensors");
    s2s_tests::pytorch::write_safetensors(&weights, &s2s_tests::pytorch::state_dict(1, 0.5));
    let text = s2s_ok(
        &[
            &"import",
            &"--explain",
            &"--config",
            &s2s_tests::pytorch::config(),
            &"--weights",
            &weights,
            &"-o",
            &dir.join("bahdanau.s2s"),
        ],
        "",
    );
    for want in [
        "encoder.w_ih.l0.fwd: encoder.gru.weight_ih_l0 in pytorch-bahdanau.safetensors, 36 x 12, as stored: the default (no transpose key)\n",
        "attention.query: decoder.attention.Wa.weight in pytorch-bahdanau.safetensors, 12 x 12, as stored: the default (no transpose key); square, so its shape cannot show the wrong orientation: check the import with s2s verify MODEL --expect FILE\n",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{text}");
    }
    // Keras: the configuration's transpose.
    let keras = s2s_tests::repo_root().join("tests/fixtures/lstm/keras3-g2p/model.keras");
    let text = s2s_ok(
        &[
            &"import",
            &"--explain",
            &"--config",
            &s2s_tests::repo_root().join("models/examples/keras3-lstm-g2p.toml"),
            &"--weights",
            &keras,
            &"-o",
            &dir.join("keras3.s2s"),
        ],
        "",
    );
    assert!(
        text.lines().any(|l| l.starts_with("output: ")
            && l.contains("transposed: transpose = true in the configuration")),
        "{text}"
    );
}

/// `s2s tensors --graph`: each weight's uses through `Identity` nodes, every `Concat`'s
/// inputs in order (the attentional layer's `[context; state]` of the GRU export, `[state;
/// context]` of the LSTM one), `Loop` bodies and the initializers they read from the
/// main graph, and the tensor names two files share; a file that is not ONNX is one
/// error line.
#[test]
fn tensors_graph_shows_uses_concat_orders_subgraphs_and_shared_tensors() {
    let out = s2s_ok(
        &[
            &"tensors",
            &"--graph",
            &fixture("gru/encoder.onnx"),
            &fixture("gru/decoder.onnx"),
        ],
        "",
    );
    for want in [
        "gru/decoder.onnx: graph\n",
        "\n  onnx::MatMul_530 -> MatMul /decoder/attn/MatMul input 1 (B) through Identity /Identity\n",
        "\n  Concat /decoder/Concat [axis=1]: 0 /decoder/embedding/Gather_output_0 (Gather /decoder/embedding/Gather), 1 input_feed (graph input)\n",
        "\n  Concat /decoder/attn/Concat [axis=1]: 0 /decoder/attn/Squeeze_1_output_0 (Squeeze /decoder/attn/Squeeze_1), 1 /decoder/rnn/layers.1/Add_3_output_0 (Add /decoder/rnn/layers.1/Add_3)\n",
        "\nsubgraphs: none\n",
        "\ninitializers read by another graph than their own: none\n",
        "\ntensors in more than one file: none\n",
        // The listing is still there.
        "-> Gemm /bridge/0/Gemm input 1 (B) [alpha=1 beta=1 transB=1]",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    let out = s2s_ok(
        &[
            &"tensors",
            &"--graph",
            &fixture("lstm/decoder.onnx"),
            &fixture("gru/decoder.onnx"),
        ],
        "",
    );
    for want in [
        "\n  Concat /decoder/attn/Concat [axis=1]: 0 /decoder/rnn/layers.1/Mul_2_output_0 (Mul /decoder/rnn/layers.1/Mul_2), 1 /decoder/attn/Squeeze_1_output_0 (Squeeze /decoder/attn/Squeeze_1)\n",
        "lstm/decoder.onnx, ",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }
    let shared = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("  {name}: ")))
            .unwrap_or_else(|| panic!("{name} not shared in\n{out}"))
            .to_string()
    };
    assert!(shared("decoder.embedding.weight").ends_with("(different values)"));
    assert!(shared("onnx::MatMul_531").contains("gru/decoder.onnx"));

    // A Loop whose body reads a weight of the main graph.
    let dir = scratch_dir("onnx-tensors-graph");
    let body = {
        let mut g = Pb::new().bytes(
            1,
            &onnx_node("MatMul", "/body/MatMul", &["x", "w"], &["y"], &[]),
        );
        g = g.bytes(2, b"body").bytes(5, &initializer("b", &[2], 1));
        g.0
    };
    let attr = Pb::new().bytes(1, b"body").bytes(6, &body).int(20, 5).0;
    let mut lp = Pb(onnx_node("Loop", "/loop", &["n", "c"], &["out"], &[]));
    lp = lp.bytes(5, &attr);
    let graph = Pb::new()
        .bytes(1, &lp.0)
        .bytes(2, b"main")
        .bytes(5, &initializer("w", &[2, 2], 2))
        .0;
    let model = Pb::new().int(1, 8).bytes(7, &graph).0;
    let looped = dir.join("loop.onnx");
    std::fs::write(&looped, model).unwrap();
    let out = s2s_ok(&[&"tensors", &"--graph", &looped], "");
    for want in [
        "\nsubgraphs:\n  Loop /loop body: 1 nodes, 1 initializers\n",
        "\ninitializers read by another graph than their own:\n  w (of the main graph) read in: Loop /loop body\n",
    ] {
        assert!(out.contains(want), "no {want:?} in\n{out}");
    }

    // Not an ONNX model.
    let st = repo_root().join("tests/fixtures/lstm/pytorch-g2p/model.safetensors");
    let r = s2s(
        &[&"tensors", &"--graph", &fixture("gru/encoder.onnx"), &st],
        "",
    );
    assert_one_error(
        &r,
        &["model.safetensors: not an ONNX model: --graph lists an ONNX model's nodes"],
    );
    assert!(r.stdout.is_empty(), "printed before failing");
}

// ------------------------------------------------------------ decoding the references

/// Largest reference top-two gap at which a differing token is accepted.
const NEAR_TIE: f64 = host_tools::model::NEAR_TIE as f64;
/// Least sequence agreement of a w8a16 model with its f32 model (percent).
const MIN_AGREEMENT: f64 = 99.0;

/// A model of `tests/fixtures/onnx/`: its folder and configuration.
#[derive(Clone, Copy)]
struct Model {
    name: &'static str,
}

const GRU: Model = Model { name: "gru" };
const LSTM: Model = Model { name: "lstm" };

impl Model {
    fn config(self) -> PathBuf {
        repo_root()
            .join("models/examples")
            .join(format!("onnx-{}.toml", self.name))
    }
    fn graphs(self) -> [PathBuf; 2] {
        [
            fixture(&format!("{}/encoder.onnx", self.name)),
            fixture(&format!("{}/decoder.onnx", self.name)),
        ]
    }
}

/// onnxruntime's decodes of the fixture's 500 held-out words.
fn cases(m: Model) -> Vec<Reference> {
    let path = fixture(&format!("{}/reference.json", m.name));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    references(&json["words"], &path)
}

/// `s2s import --config CONFIG --weights ENCODER --weights DECODER -o OUT`.
fn import_graphs(config: &Path, m: Model, out: &Path) -> std::process::Output {
    let [enc, dec] = m.graphs();
    s2s(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &enc,
            &"--weights",
            &dec,
            &"-o",
            &out,
        ],
        "",
    )
}

/// `s2s import` of a model with its configuration and both graphs, once per process.
fn imported(m: Model) -> &'static Path {
    static MODELS: [std::sync::OnceLock<PathBuf>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    MODELS[(m.name == "lstm") as usize].get_or_init(|| {
        let dir = scratch_dir(&format!("onnx-{}", m.name));
        let out = dir.join(format!("onnx-{}.s2s", m.name));
        let r = import_graphs(&m.config(), m, &out);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        out
    })
}

/// Decodes the 500 held-out words and compares them with onnxruntime's.
fn matches_its_references(m: Model) {
    let cases = cases(m);
    assert!(cases.len() >= 200, "{}: {} cases", m.name, cases.len());
    let ours = run_words(imported(m), &cases);
    near_tie_differences(&format!("onnx-{}", m.name), &cases, &ours, NEAR_TIE);
}

#[test]
fn the_gru_export_decodes_as_onnxruntime() {
    matches_its_references(GRU);
}

#[test]
fn the_lstm_export_decodes_as_onnxruntime() {
    matches_its_references(LSTM);
}

/// Without input feeding, or with the attentional layer's parts the other way round,
/// the GRU model decodes many words differently: the settings are what make it exact.
#[test]
fn the_gru_export_needs_input_feeding_and_its_concat_order() {
    let dir = scratch_dir("onnx-gru-variants");
    let text = std::fs::read_to_string(GRU.config()).unwrap();
    let cases = cases(GRU);
    let swapped = text.replace(
        "attentional_input = [\"context\", \"state\"]",
        "attentional_input = [\"state\", \"context\"]",
    );
    assert_ne!(swapped, text);
    let config = dir.join("swapped.toml");
    std::fs::write(&config, swapped).unwrap();
    let model = dir.join("swapped.s2s");
    let r = import_graphs(&config, GRU, &model);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let ours = run_words(&model, &cases);
    let differ = ours
        .iter()
        .zip(&cases)
        .filter(|(o, c)| **o != c.output)
        .count();
    eprintln!(
        "onnx-gru with [state; context]: {differ} of {} words differ",
        cases.len()
    );
    assert!(differ >= 100, "only {differ} words differ");
    // Without input feeding the decoder's input matrix does not fit.
    let unfed = text.replace("input_feeding = true", "input_feeding = false");
    let config = dir.join("unfed.toml");
    std::fs::write(&config, unfed).unwrap();
    let r = import_graphs(&config, GRU, &dir.join("unfed.s2s"));
    assert_one_error(
        &r,
        &[
            "layer decoder.w_ih.l0",
            "gives a 144x80 matrix",
            "needs 144x32",
        ],
    );
}

/// `s2s quantize --scheme w8a16` with the calibration words, then `s2s check` on the
/// held-out words against the f32 model (which must agree on 99 %), once per process.
fn quantized(m: Model) -> &'static Path {
    static MODELS: [std::sync::OnceLock<PathBuf>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    MODELS[(m.name == "lstm") as usize].get_or_init(|| quantize_and_check(m))
}

fn quantize_and_check(m: Model) -> PathBuf {
    let model = imported(m);
    let dir = scratch_dir(&format!("onnx-w8a16-{}", m.name));
    let q = dir.join(format!("onnx-{}-w8a16.s2s", m.name));
    let agreement = quantize_w8a16_and_check(model, &q, &cases(m), MIN_AGREEMENT);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    eprintln!(
        "onnx-{} w8a16: {agreement:.2} % of {} held-out words as the f32 model; {} bytes ({} f32)",
        m.name,
        cases(m).len(),
        size(&q),
        size(model)
    );
    q
}

#[test]
fn the_gru_export_in_w8a16_agrees_with_f32() {
    quantized(GRU);
}

#[test]
fn the_lstm_export_in_w8a16_agrees_with_f32() {
    quantized(LSTM);
}

// ------------------------------------------------------------------ under QEMU

/// Runs the 500 held-out words through the w8a16 model on `board` and on the host:
/// every token and every attention weight equal.
fn on_the_board(m: Model, board: &str) {
    let q = quantized(m);
    let words: Vec<String> = cases(m).into_iter().map(|c| c.word).collect();
    let board = s2s_device::board::find(board).expect("a board of the table");
    let options = QemuOptions {
        attention: true,
        timeout: std::time::Duration::from_secs(900),
        ..QemuOptions::new(board)
    };
    let report = host_tools::device::qemu_check(q, &words, &options)
        .unwrap_or_else(|e| panic!("onnx-{} on {}: {e}", m.name, board.name));
    println!("{}", report.render());
    assert!(report.agrees(), "{}", report.render());
    assert_eq!((report.inputs, report.rejected.len()), (words.len(), 0));
    assert_eq!(report.attention_rows, report.step.n, "every row compared");
}

#[test]
fn the_gru_export_in_w8a16_on_mps2_an386_matches_the_host() {
    on_the_board(GRU, "mps2-an386");
}

#[test]
fn the_lstm_export_in_w8a16_on_mps2_an386_matches_the_host() {
    on_the_board(LSTM, "mps2-an386");
}

#[test]
fn the_gru_export_in_w8a16_on_lm3s6965evb_matches_the_host() {
    on_the_board(GRU, "lm3s6965evb");
}

#[test]
fn the_lstm_export_in_w8a16_on_lm3s6965evb_matches_the_host() {
    on_the_board(LSTM, "lm3s6965evb");
}

// ------------------------------------------------------------------ beam search

/// The GRU export feeds its attentional vector to the next step (input feeding), which
/// every hypothesis of a beam search saves and restores with its decoder states: beam 1
/// is greedy decoding in every variant, and a 4-wide search answers every line.
#[test]
fn the_input_fed_gru_export_beam_searches_and_beam_1_is_greedy() {
    let words: Vec<String> = cases(GRU).into_iter().take(200).map(|c| c.word).collect();
    let input: String = words.iter().map(|w| format!("{w}\n")).collect();
    let model = imported(GRU);
    let greedy = s2s_ok(&[&"run", &model], &input);
    for variant in ["in-slot", "finished-set", "netra"] {
        let beam = |k: &str| {
            s2s_ok(
                &[&"run", &model, &"--beam", &k, &"--beam-variant", &variant],
                &input,
            )
        };
        assert_eq!(beam("1"), greedy, "beam 1 {variant} differs from greedy");
        let wide = beam("4");
        assert_eq!(wide.lines().count(), words.len());
        let changed = wide
            .lines()
            .zip(greedy.lines())
            .filter(|(a, b)| a != b)
            .count();
        eprintln!(
            "onnx-gru beam 4 {variant}: {changed} of {} outputs differ from greedy",
            words.len()
        );
    }
}

/// The input-fed GRU export in w8a16, beam-searched 3 wide on `board` and on the host:
/// every output equal.
fn beam_3_on_the_board(board: &str) {
    let q = quantized(GRU);
    let words: Vec<String> = cases(GRU).into_iter().take(100).map(|c| c.word).collect();
    let board = s2s_device::board::find(board).expect("a board of the table");
    let options = QemuOptions {
        beam: Some(3),
        timeout: std::time::Duration::from_secs(900),
        ..QemuOptions::new(board)
    };
    let report = host_tools::device::qemu_check(q, &words, &options)
        .unwrap_or_else(|e| panic!("onnx-gru beam 3 on {}: {e}", board.name));
    println!("{}", report.render());
    assert!(report.agrees(), "{}", report.render());
    assert_eq!((report.inputs, report.rejected.len()), (words.len(), 0));
    assert!(report.render().contains("search step     (beam 3)"));
}

#[test]
fn the_input_fed_gru_export_beam_3_on_mps2_an386_matches_the_host() {
    beam_3_on_the_board("mps2-an386");
}

/// On the lm3s6965evb the search's hypotheses share the board's small arena with the
/// workspace.
#[test]
fn the_input_fed_gru_export_beam_3_on_lm3s6965evb_matches_the_host() {
    beam_3_on_the_board("lm3s6965evb");
}

/// `tokens_file`: the published vocabulary file read instead of the typed lists (the
/// source from `vocab.json`'s `source` list, the target from a one-token-a-line file)
/// imports to the same bytes; a file with a repeated id is one error line naming it.
#[test]
fn tokens_file_imports_to_the_bytes_of_the_typed_vocabulary() {
    let dir = scratch_dir("onnx-tokens-file");
    let text = std::fs::read_to_string(GRU.config()).unwrap();
    let vocab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("vocab.json")).unwrap()).unwrap();
    let target: Vec<&str> = vocab["target"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    std::fs::write(dir.join("target.txt"), target.join("\n") + "\n").unwrap();
    let mut sections = 0;
    let from_files: String = text
        .lines()
        .map(|l| {
            if !l.starts_with("tokens = ") {
                return format!("{l}\n");
            }
            sections += 1;
            match sections {
                1 => format!("tokens_file = {:?}\n", fixture("vocab.json")),
                _ => "tokens_file = \"target.txt\"\n".to_string(),
            }
        })
        .collect();
    assert_eq!(sections, 2, "the example's two token lists");
    let config = dir.join("onnx-gru-files.toml");
    std::fs::write(&config, from_files).unwrap();
    let out = dir.join("onnx-gru-files.s2s");
    let r = import_graphs(&config, GRU, &out);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::read(&out).unwrap() == std::fs::read(imported(GRU)).unwrap());

    let ids = dir.join("ids.json");
    std::fs::write(&ids, r#"{"source": {"<pad>": 0, "<unk>": 1, "a": 1}}"#).unwrap();
    let bad = std::fs::read_to_string(&config).unwrap().replacen(
        &format!("{:?}", fixture("vocab.json")),
        "\"ids.json\"",
        1,
    );
    std::fs::write(&config, bad).unwrap();
    let r = import_graphs(&config, GRU, &dir.join("bad.s2s"));
    let line = format!(
        "error: {}: tokens \"<unk>\" and \"a\" have the same id 1",
        ids.display()
    );
    assert_eq!(assert_one_error(&r, &[]), line);
    assert!(!dir.join("bad.s2s").exists());
}
