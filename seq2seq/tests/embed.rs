//! A model embedded at build time (`seq2seq::embed`, what `s2s embed` writes) binds and
//! decodes exactly as its model file: random models of every variant, at every
//! precision, their tables built from the parsed file as `s2s embed` builds them.

mod common;

use common::{random_lines, random_model, Rng};
use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::builder::aligned;
use seq2seq::embed::{Embedded, Layer};
use seq2seq::format::{Slot, Stored, TensorId};
use seq2seq::{Error, ModelFile, ModelPrecision, Net, Plan, Runner};

/// The greedy tokens of `line` through `net` (or the error).
fn decode<P: ModelPrecision>(net: &Net<'_, P>, line: &str) -> Result<Vec<u16>, Error> {
    let positions = 16;
    let mut arena = vec![0u32; Plan::new::<P>(&net.desc, positions).bytes() / 4 + 1];
    let mut runner = Runner::new(net, &mut arena, positions)?;
    let mut out = [0u16; 64];
    let n =
        runner
            .translate_line::<Error>(line, &seq2seq::Prefix::NONE, &mut out, &mut (), |_| Ok(()))?;
    Ok(out[..n].to_vec())
}

/// The file's layers as an embedded model's table.
fn layers<'a, P: ModelPrecision>(file: &ModelFile<'a>) -> Vec<Layer<'a, P>> {
    file.desc()
        .layer_specs()
        .iter()
        .map(|s| {
            let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
            Layer {
                role: s.role,
                layer: s.layer as u8,
                dir: s.dir as u8,
                rows: s.rows,
                cols: s.cols,
                parts: s.parts,
                w: data(file, id(Slot::Weight)).expect("weights"),
                q: data(file, id(Slot::RowQ)).unwrap_or(&[]),
                bias: data(file, id(Slot::Bias)),
            }
        })
        .collect()
}

/// Tensor `id` of `file` as `T`, if present.
fn data<'a, T: Stored>(file: &ModelFile<'a>, id: TensorId) -> Option<&'a [T]> {
    file.data(id).expect("typed tensor").map(|(_, d)| d)
}

/// Both bindings of `file` at `P` decode every line alike; the lines decoded.
fn same<P: ModelPrecision>(file: &ModelFile<'_>, lines: &[String]) -> usize {
    let table = layers::<P>(file);
    let model = Embedded {
        desc: *file.desc(),
        layout: file.layout(),
        layers: &table,
        src_vocab: file.src_vocab(),
        tgt_vocab: file.tgt_vocab(),
        separator: file.separator(),
        vocab_section: file.vocab_section(),
    };
    let from_file = Net::<P>::bind(file);
    let mut embedded = Err(Error::EmptyInput);
    Net::<P>::embedded_into(&model, &mut embedded);
    match (&from_file, &embedded) {
        (Ok(a), Ok(b)) => lines
            .iter()
            .filter(|line| {
                let (x, y) = (decode(a, line), decode(b, line));
                assert_eq!(x, y, "{line:?}: {:?}", file.desc());
                x.is_ok()
            })
            .count(),
        (Err(a), Err(b)) => {
            assert_eq!(a, b);
            0
        }
        _ => panic!(
            "bound from the file: {:?}, embedded: {:?}",
            from_file.err(),
            embedded.err()
        ),
    }
}

#[test]
fn an_embedded_model_decodes_as_its_file() {
    let mut r = Rng::new(32);
    let mut decoded = 0;
    for i in 0..60 {
        let precision = [
            PrecisionKind::F32,
            PrecisionKind::W8F32,
            PrecisionKind::W8A16,
        ][i % 3];
        let bytes = random_model(precision, &mut r);
        let words = aligned(&bytes);
        let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])
            .expect("a valid file");
        let lines = random_lines(&mut r, 4);
        decoded += match precision {
            PrecisionKind::F32 => same::<F32>(&file, &lines),
            PrecisionKind::W8F32 => same::<W8F32>(&file, &lines),
            PrecisionKind::W8A16 => same::<W8A16>(&file, &lines),
        };
    }
    assert!(decoded >= 120, "only {decoded} of 240 lines decoded");
}
