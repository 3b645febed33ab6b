//! The ONNX fixtures of `tests/fixtures/onnx/` (two graphs per model, in the layout of
//! `torch.onnx.export`; their README lists every tensor): `s2s tensors` lists what a
//! configuration needs, and `s2s import` takes several `--weights` files, packed
//! recurrent tensors by direction and bias half, ONNX gate orders, transposed `MatMul`
//! weights, a weight behind an `Identity` and external data, each into the layer the
//! README says, value for value.

use std::path::{Path, PathBuf};

use host_tools::import::config::Config;
use host_tools::import::{import_files, WeightFile};
use s2s_tests::{assert_one_error, assert_only, repo_root, s2s, s2s_ok, scratch_dir};
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
    assert_eq!(line("onnx::GRU_383"), "onnx::GRU_383 2 x 192 x 32 float32");
    assert_eq!(
        line("generator.weight"),
        "generator.weight 72 x 96 float32 (external: decoder.onnx.data at offset 0)"
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
embedding = 32
hidden = 64
layers = 2
bidirectional = true
cell = "lstm"

[attention]
ordering = "luong"
score = "general"
attentional = 96
attentional_input = ["state", "context"]

[decoder]
embedding = 48
hidden = 96
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
    (t.shape.clone(), t.data.clone())
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
        .map(|f| WeightFile::read(&dir.join(f)).expect("reads"))
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
    // ONNX LSTM gate blocks [i, o, f, c] of 64 rows -> ours [i, f, g, o].
    let h = 64;
    let perm = [0..h, 2 * h..3 * h, 3 * h..4 * h, h..2 * h];
    for (l, w_name, r_name, b_name, cols) in [
        (0, "onnx::LSTM_383", "onnx::LSTM_384", "onnx::LSTM_385", 32),
        // W of layer 1 is the external tensor.
        (1, "onnx::LSTM_403", "onnx::LSTM_404", "onnx::LSTM_405", 128),
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
    assert_eq!(shape, [96, 128]);
    assert_eq!(ours(Role::AttnGeneral, 0, 0, Slot::Weight), general);
    // MatMul weights are (in, out): transposed.
    let (shape, w_ih) = onnx_tensor(&files, "onnx::MatMul_512");
    assert_eq!(shape, [48, 384]);
    let ours_w_ih = ours(Role::DecWih, 0, 0, Slot::Weight);
    for (o, i) in [(0, 0), (5, 17), (383, 47)] {
        assert_eq!(
            ours_w_ih[o * 48 + i],
            w_ih[i * 384 + o],
            "w_ih.l0 [{o}, {i}]"
        );
    }
    let (_, att) = onnx_tensor(&files, "onnx::MatMul_545");
    let ours_att = ours(Role::Attentional, 0, 0, Slot::Weight);
    assert_eq!(ours_att[3 * 224 + 200], att[200 * 96 + 3]);
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
            "the configuration needs 256 values",
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
