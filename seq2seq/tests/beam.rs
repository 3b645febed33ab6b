//! Beam search on random valid models of every variant and precision: width 1 is greedy
//! decoding in every variant, results come ranked and consistent, and widths the
//! workspace does not hold are refused.

mod common;

use common::{random_builder, random_desc, Rng};
use s2s_kernels::logprob::Score;
use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::builder::aligned;
use seq2seq::{BeamPlan, BeamVariant, Error, ModelFile, ModelPrecision, Net, Plan, Runner, Search};

const LINES: [&str; 5] = ["a", "abc", "dcba", "b b", "cadcab"];

/// Outputs of beam searches: `(variant, width, ids)`.
type Beams = Vec<(BeamVariant, usize, Vec<u16>)>;

/// Greedy and beam outputs of `line`.
fn decode_both<P: ModelPrecision>(
    file: &ModelFile<'_>,
    line: &str,
    widths: &[usize],
) -> Result<(Vec<u16>, Beams), Error> {
    let net = Net::<P>::bind(file)?;
    let positions = 16;
    let d = file.desc();
    let mut arena = vec![0u32; Plan::new::<P>(d, positions).bytes() / 4];
    let mut greedy = Runner::new(&net, &mut arena, positions)?;
    let mut out = vec![0u16; d.max_steps];
    let n =
        greedy
            .translate_line::<Error>(line, &seq2seq::Prefix::NONE, &mut out, &mut (), |_| Ok(()))?;
    let greedy_ids = out[..n].to_vec();
    let k = *widths.iter().max().unwrap();
    let bytes = Plan::new::<P>(d, positions).bytes() + BeamPlan::new::<P>(d, k).bytes();
    let mut arena = vec![0u32; bytes / 4];
    let mut runner = Runner::with_beam(&net, &mut arena, positions, k)?;
    let mut results = Vec::new();
    for variant in BeamVariant::ALL {
        for &w in widths {
            let mut search = Search::of(d, w);
            search.rule.variant = variant;
            let n = runner.beam_line::<Error>(
                line,
                &seq2seq::Prefix::NONE,
                search,
                &mut out,
                &mut (),
                |_| Ok(()),
            )?;
            let best = runner.hypothesis(0).expect("a best hypothesis");
            assert_eq!(best.tokens, &out[..n], "the best result is the output");
            assert!(runner.hypotheses() >= 1 && runner.hypotheses() <= 2 * w);
            for r in 1..runner.hypotheses() {
                let (a, b) = (
                    runner.hypothesis(r - 1).unwrap(),
                    runner.hypothesis(r).unwrap(),
                );
                let alpha = match variant {
                    BeamVariant::Netra => s2s_kernels::logprob::Alpha::ZERO,
                    _ => search.rule.alpha,
                };
                assert_ne!(
                    a.score
                        .cmp_normalised(a.len.max(1), b.score, b.len.max(1), alpha),
                    core::cmp::Ordering::Less,
                    "{variant:?} {w}: result {r} ranks above result {}",
                    r - 1
                );
            }
            for r in 0..runner.hypotheses() {
                let h = runner.hypothesis(r).unwrap();
                assert!(h.len <= d.max_steps && h.tokens.len() <= h.len);
                assert_eq!(h.tokens.len() + h.ended as usize, h.len);
            }
            results.push((variant, w, out[..n].to_vec()));
        }
    }
    Ok((greedy_ids, results))
}

fn check_model(kind: PrecisionKind, seed: u64) {
    let mut r = Rng::new(seed);
    let d = random_desc(&mut r);
    let bytes = random_builder(&d, kind, &mut r)
        .to_bytes()
        .expect("a valid model");
    let words = aligned(&bytes);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let file = ModelFile::parse(bytes).expect("parses");
    for line in LINES {
        let got = match kind {
            PrecisionKind::F32 => decode_both::<F32>(&file, line, &[1, 2, 4]),
            PrecisionKind::W8F32 => decode_both::<W8F32>(&file, line, &[1, 2, 4]),
            PrecisionKind::W8A16 => decode_both::<W8A16>(&file, line, &[1, 2, 4]),
        };
        let (greedy, beams) = match got {
            Ok(g) => g,
            // A line the model cannot take (a symbol it lacks, too long): same for both.
            Err(Error::UnknownSymbol { .. } | Error::InputTooLong { .. }) => continue,
            Err(e) => panic!("seed {seed}, {kind:?}, {line:?}: {e}"),
        };
        for (variant, w, ids) in beams {
            if w == 1 {
                assert_eq!(
                    ids, greedy,
                    "seed {seed}, {kind:?}, {line:?}: {variant:?} beam 1"
                );
            }
        }
    }
}

#[test]
fn beam_one_is_greedy_in_every_variant_and_precision() {
    for seed in 0..40 {
        for kind in PrecisionKind::ALL {
            check_model(kind, seed);
        }
    }
}

#[test]
fn widths_the_workspace_lacks_are_refused() {
    let mut r = Rng::new(7);
    let d = random_desc(&mut r);
    let bytes = random_builder(&d, PrecisionKind::W8A16, &mut r)
        .to_bytes()
        .unwrap();
    let words = aligned(&bytes);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let file = ModelFile::parse(bytes).unwrap();
    let net = Net::<W8A16>::bind(&file).unwrap();
    let positions = 16;
    let greedy = Plan::new::<W8A16>(&d, positions).bytes();
    let beam = BeamPlan::new::<W8A16>(&d, 2).bytes();
    // One word short of the beam workspace.
    let mut arena = vec![0u32; (greedy + beam) / 4 - 1];
    assert_eq!(
        Runner::with_beam(&net, &mut arena, positions, 2).err(),
        Some(Error::ArenaTooSmall {
            needed: greedy + beam,
            available: greedy + beam - 4
        })
    );
    let mut arena = vec![0u32; (greedy + beam) / 4];
    let mut runner = Runner::with_beam(&net, &mut arena, positions, 2).unwrap();
    let mut out = vec![0u16; d.max_steps];
    for width in [0, 3] {
        let search = Search::of(&d, width);
        assert_eq!(
            runner.beam(&[3, 4, 2], 3, search, &mut out, &mut ()).err(),
            Some(Error::BeamTooWide { width, max: 2 })
        );
    }
    // A runner without a beam workspace refuses every search.
    let mut arena = vec![0u32; greedy / 4];
    let mut plain = Runner::new(&net, &mut arena, positions).unwrap();
    assert_eq!(
        plain
            .beam(&[3, 4, 2], 3, Search::of(&d, 1), &mut out, &mut ())
            .err(),
        Some(Error::BeamTooWide { width: 1, max: 0 })
    );
    assert!(BeamPlan::bytes_per_beam::<W8A16>(&d) > 0);
}
