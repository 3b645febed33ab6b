//! Beam search on random valid models of every variant and precision: width 1 is greedy
//! decoding in every variant, results come ranked and consistent, and widths the
//! workspace does not hold are refused.

mod common;

use common::{random_builder, random_desc, Rng};
use s2s_kernels::logprob::Score;
use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::builder::aligned;
use seq2seq::{
    BeamPlan, BeamVariant, Error, ModelFile, ModelPrecision, Net, Plan, Prefix, Runner, Search,
};

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

/// A random description that beam search takes (a monotonic model decodes greedily
/// only: `a_monotonic_model_refuses_beam_search`).
fn beam_desc(r: &mut Rng) -> seq2seq::ModelDesc {
    loop {
        let d = random_desc(r);
        if d.attention.ordering != seq2seq::desc::Ordering::Monotonic {
            return d;
        }
    }
}

#[test]
fn a_monotonic_model_refuses_beam_search() {
    let mut r = Rng::new(7);
    let d = loop {
        let d = random_desc(&mut r);
        if d.attention.ordering == seq2seq::desc::Ordering::Monotonic {
            break d;
        }
    };
    let bytes = random_builder(&d, PrecisionKind::F32, &mut r)
        .to_bytes()
        .expect("a valid model");
    let words = aligned(&bytes);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let file = ModelFile::parse(bytes).expect("parses");
    let got = decode_both::<F32>(&file, LINES[0], &[2]);
    assert_eq!(got.map(|_| ()), Err(Error::GreedyOnly));
}

fn check_model(kind: PrecisionKind, seed: u64) {
    let mut r = Rng::new(seed);
    let d = beam_desc(&mut r);
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
    let d = beam_desc(&mut r);
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

/// Every ranked result of each line's search alone: `(tokens, score bits, len, ended)`,
/// or the line's error.
type Ranked = Result<Vec<(Vec<u16>, i64, usize, bool)>, Error>;

fn ranked_of<P: ModelPrecision, const L: usize>(
    runner: &Runner<'_, '_, '_, P, L>,
    lane: usize,
) -> Vec<(Vec<u16>, i64, usize, bool)> {
    (0..runner.hypotheses_of(lane))
        .map(|r| {
            let h = runner.hypothesis_of(lane, r).unwrap();
            let mut bits = [0u8; 8];
            let b = bytemuck::bytes_of(&h.score);
            bits[..b.len()].copy_from_slice(b);
            (h.tokens.to_vec(), i64::from_le_bytes(bits), h.len, h.ended)
        })
        .collect()
}

/// Searches side by side over 4 lanes (`Runner::beam_batch`, what the host runs) give
/// every line exactly the results of its search alone, in every variant, width and
/// precision, lines the model cannot take keeping their error in their place.
fn side_by_side<P: ModelPrecision>(file: &ModelFile<'_>, seed: u64) -> usize {
    let net = Net::<P>::bind(file).unwrap();
    let d = file.desc();
    let positions = 16;
    let one = Plan::new::<P>(d, positions).bytes() + BeamPlan::new::<P>(d, 3).bytes();
    let mut arena = vec![0u32; one / 4];
    let mut alone = Runner::with_beam(&net, &mut arena, positions, 3).unwrap();
    let mut arena4 = vec![0u32; 4 * one / 4];
    let mut four = Runner::<P, 4>::with_beam_lanes(&net, &mut arena4, positions, 3).unwrap();
    let mut out = vec![0u16; d.max_steps];
    let mut searched = 0;
    for variant in BeamVariant::ALL {
        for w in 1..=3 {
            let mut search = Search::of(d, w);
            search.rule.variant = variant;
            let want: Vec<Ranked> = LINES
                .iter()
                .map(|line| {
                    alone.beam_line::<Error>(
                        line,
                        &Prefix::NONE,
                        search,
                        &mut out,
                        &mut (),
                        |_| Ok(()),
                    )?;
                    Ok(ranked_of(&alone, 0))
                })
                .collect();
            let mut got: Vec<Ranked> = Vec::new();
            for chunk in LINES.chunks(4) {
                let lanes = four.beam_batch(chunk, &[], search, &mut [(); 4]);
                got.extend(
                    lanes
                        .into_iter()
                        .map(|l| l.map(|lane| ranked_of(&four, lane))),
                );
            }
            assert_eq!(got, want, "seed {seed}, {variant:?}, width {w}");
            searched += want.iter().filter(|r| r.is_ok()).count();
        }
    }
    searched
}

#[test]
fn searches_side_by_side_give_each_line_its_search_alone() {
    let mut searched = 0;
    for seed in 0..20 {
        let mut r = Rng::new(seed);
        let d = beam_desc(&mut r);
        for kind in PrecisionKind::ALL {
            let bytes = random_builder(&d, kind, &mut r).to_bytes().unwrap();
            let words = aligned(&bytes);
            let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
            let file = ModelFile::parse(bytes).unwrap();
            searched += match kind {
                PrecisionKind::F32 => side_by_side::<F32>(&file, seed),
                PrecisionKind::W8F32 => side_by_side::<W8F32>(&file, seed),
                PrecisionKind::W8A16 => side_by_side::<W8A16>(&file, seed),
            };
        }
    }
    // Most lines are searched (a random model may lack a line's symbols).
    assert!(
        searched > 20 * 3 * 9 * LINES.len() / 2,
        "only {searched} searches"
    );
}
