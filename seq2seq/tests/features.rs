//! The model parts of a build (cargo features): a model needing a part the build leaves
//! out is refused at bind time with `Error::NotCompiled` naming it, one needing only
//! compiled parts binds and decodes. Meant to run under reduced builds too, e.g.
//! `cargo test -p seq2seq --no-default-features --features gru,additive --test features`
//! (`cargo xtask test` runs such builds).

mod common;

use common::*;
use s2s_kernels::{PrecisionKind, W8A16};
use seq2seq::desc::{CellKind, Init, Ordering, ScoreKind};
use seq2seq::{Error, Feature, Features, ModelFile, Net, Runner};

#[test]
fn the_parts_a_model_needs_follow_its_description() {
    let mut d = small_desc();
    assert_eq!(d.features(), Features::NONE.with(Feature::Gru));
    d.cells.enc = CellKind::Lstm;
    d.attention.ordering = Ordering::Luong;
    d.attention.score = ScoreKind::General;
    d.init = Init::Mean;
    let needed: Vec<Feature> = d.features().iter().collect();
    assert_eq!(
        needed,
        [
            Feature::Gru,
            Feature::Lstm,
            Feature::Multiplicative,
            Feature::Bridge
        ]
    );
    d.attention.score = ScoreKind::Additive;
    assert!(d.features().contains(Feature::Additive));
    assert!(!d.features().contains(Feature::Multiplicative));
    assert!(!d.features().contains(Feature::Monotonic));
    (d.attention.ordering, d.attention.chunk) = (Ordering::Monotonic, 1);
    assert!(d.features().contains(Feature::Monotonic) && d.features().contains(Feature::Additive));
    assert!(!d.features().contains(Feature::Local));
    (d.attention.ordering, d.attention.chunk, d.attention.window) = (Ordering::Luong, 0, 4);
    assert!(d.features().contains(Feature::Local));
    assert!(
        !d.features().contains(Feature::Beam),
        "no model needs a beam"
    );
}

#[test]
fn the_compiled_features_are_the_cargo_features() {
    let compiled: Vec<&str> = Features::COMPILED.iter().map(Feature::name).collect();
    let expected: Vec<&str> = [
        cfg!(feature = "gru").then_some("gru"),
        cfg!(feature = "lstm").then_some("lstm"),
        cfg!(feature = "additive").then_some("additive"),
        cfg!(feature = "multiplicative").then_some("multiplicative"),
        cfg!(feature = "bridge").then_some("bridge"),
        cfg!(feature = "beam").then_some("beam"),
        // Every target but the Cortex-M0 family reads the v6m layout, feature or not.
        Some("v6m-layout"),
        cfg!(feature = "prefix-slots").then_some("prefix-slots"),
        cfg!(feature = "monotonic").then_some("monotonic"),
        cfg!(feature = "local").then_some("local"),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(compiled, expected);
}

/// Random models of every variant: each binds and decodes if the build has every part
/// it needs, and is refused at bind time naming the first missing part otherwise.
#[test]
fn a_model_needing_a_part_the_build_leaves_out_is_refused_at_bind_time() {
    let mut r = Rng::new(14);
    let (mut bound, mut refused) = (0, 0);
    for _ in 0..300 {
        let d = random_desc(&mut r);
        let bytes = random_builder(&d, PrecisionKind::W8A16, &mut r)
            .to_bytes()
            .unwrap();
        let words = seq2seq::builder::aligned(&bytes);
        let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])
            .expect("a valid model parses whatever the build compiles");
        let result = Net::<W8A16>::bind(&file);
        match (d.features().first_missing(), result) {
            (None, Ok(net)) => {
                let mut arena = vec![0u32; 1 << 16];
                let mut runner = Runner::new(&net, &mut arena, 16).unwrap();
                let mut out = [0u16; 64];
                let decoded = runner.translate_line::<Error>(
                    "abc",
                    &seq2seq::Prefix::NONE,
                    &mut out,
                    &mut (),
                    |_| Ok(()),
                );
                assert!(
                    !matches!(decoded, Err(Error::NotCompiled(_))),
                    "{decoded:?}: {d:?}"
                );
                bound += 1;
            }
            (Some(f), Err(e)) => {
                assert!(!f.compiled());
                assert_eq!(e, Error::NotCompiled(f));
                assert!(
                    e.to_string()
                        .contains(&format!("needs the {} feature", f.name())),
                    "{e}"
                );
                refused += 1;
            }
            (missing, result) => panic!(
                "missing {missing:?}, bind gave {:?}: {d:?}",
                result.map(|_| "a net")
            ),
        };
    }
    // Every build binds some of the models and, unless it has every part, refuses some.
    let all = Feature::ALL
        .iter()
        .filter(|f| **f != Feature::Beam)
        .all(|f| f.compiled());
    assert!(refused > 0 || all, "no model refused");
    assert!(bound > 0 || !Feature::Gru.compiled(), "no model bound");
}

#[test]
fn a_beam_search_needs_the_beam_feature() {
    let d = small_desc();
    let mut r = Rng::new(3);
    let bytes = random_builder(&d, PrecisionKind::W8A16, &mut r)
        .to_bytes()
        .unwrap();
    let words = seq2seq::builder::aligned(&bytes);
    let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()]).unwrap();
    let Ok(net) = Net::<W8A16>::bind(&file) else {
        assert!(!Feature::Gru.compiled());
        return;
    };
    let mut arena = vec![0u32; 1 << 16];
    match Runner::with_beam(&net, &mut arena, 16, 3) {
        Ok(runner) => {
            assert!(Feature::Beam.compiled());
            assert_eq!(runner.beam_width(), 3);
        }
        Err(e) => {
            assert!(!Feature::Beam.compiled());
            assert_eq!(e, Error::NotCompiled(Feature::Beam));
        }
    }
}
