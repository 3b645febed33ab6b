//! Weight layouts through the whole model path: a w8a16 model written in each layout
//! (`ModelBuilder::lay_out`) parses, records its layout, and decodes exactly as the
//! row layout, greedy and by beam, on random models of every variant.

mod common;

use common::{random_builder, random_desc, Rng, SRC};
use s2s_kernels::{Layout, PrecisionKind, W8A16};
use seq2seq::builder::aligned;
use seq2seq::{BeamPlan, Error, ModelFile, Net, Plan, Runner, Search};

/// The tokens of a greedy decode and of a 3-wide beam search of `line` (or the error).
fn decode(bytes: &[u8], line: &str) -> (Layout, Result<Vec<u16>, Error>) {
    let words = aligned(bytes);
    let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])
        .expect("a valid file");
    let run = || {
        let net = Net::<W8A16>::bind(&file)?;
        let positions = 16;
        let need = Plan::new::<W8A16>(file.desc(), positions).bytes()
            + BeamPlan::new::<W8A16>(file.desc(), 3).bytes();
        let mut arena = vec![0u32; need / 4 + 1];
        let mut out = [0u16; 64];
        let mut tokens = Vec::new();
        let mut runner = Runner::new(&net, &mut arena, positions)?;
        let n = runner.translate_line::<Error>(
            line,
            &seq2seq::Prefix::NONE,
            &mut out,
            &mut (),
            |_| Ok(()),
        )?;
        tokens.extend_from_slice(&out[..n]);
        tokens.push(u16::MAX);
        let mut runner = Runner::with_beam(&net, &mut arena, positions, 3)?;
        let search = Search::of(file.desc(), 3);
        let n = runner.beam_line::<Error>(
            line,
            &seq2seq::Prefix::NONE,
            search,
            &mut out,
            &mut (),
            |_| Ok(()),
        )?;
        tokens.extend_from_slice(&out[..n]);
        Ok(tokens)
    };
    (file.layout(), run())
}

#[test]
fn every_layout_decodes_as_the_row_layout() {
    let mut r = Rng::new(0x1a7);
    let lines: Vec<String> = (0..4)
        .map(|k| {
            (0..1 + 3 * k)
                .map(|i| SRC[3 + (i * 5 + k) % (SRC.len() - 3)])
                .collect()
        })
        .collect();
    let mut decoded = 0;
    for _ in 0..60 {
        let d = random_desc(&mut r);
        let mut b = random_builder(&d, PrecisionKind::W8A16, &mut r);
        let row = b.to_bytes().expect("a valid model");
        for layout in Layout::ALL {
            b.lay_out(layout);
            let laid = b.to_bytes().expect("a valid model");
            assert_eq!(laid.len(), row.len());
            assert_eq!(laid != row, layout != Layout::Row, "{layout:?}");
            for line in &lines {
                let (l, got) = decode(&laid, line);
                assert_eq!(l, layout);
                let (_, want) = decode(&row, line);
                assert_eq!(got, want, "{layout:?} {line:?}\n{d:?}");
                decoded += usize::from(want.is_ok());
            }
        }
    }
    assert!(decoded > 200, "only {decoded} decodes succeeded");
}
