//! The explorer's decodes are the host's (`s2s run`, `s2s run --attention`, `s2s run
//! --beam`), which the firmware tests prove are the device's: the same output ids and
//! text, every attention weight equal as an f32, the same entropies, and a beam
//! search's best equal to the host's, on real models at every precision. The page
//! shows what this crate computes (tests/tests/explorer.rs reads it back from the page).

use host_tools::model::beam::BeamOptions;
use host_tools::model::{decode_lines, Keep, LoadedModel};
use s2s_explorer::{trace, Model};
use s2s_tests::{eval_words, model_file};

/// Every word through the explorer and through the host, greedy and with `beam`.
fn agree(name: &str, words: &[String], beam: usize) {
    let path = model_file(name);
    let bytes = std::fs::read(&path).unwrap();
    let model = Model::load(name, &bytes).unwrap();
    let host = LoadedModel::load(&path).unwrap();
    let keep = Keep {
        weights: true,
        ..Keep::default()
    };
    let greedy = decode_lines(&host, words, keep).unwrap();
    let searched = Keep {
        beam: Some(BeamOptions {
            width: beam,
            variant: None,
            alpha: None,
        }),
        ..Keep::default()
    };
    let beamed = decode_lines(&host, words, searched).unwrap();
    for ((word, g), b) in words.iter().zip(&greedy).zip(&beamed) {
        let t = trace::decode(&model, word, beam).unwrap();
        assert_eq!(t.greedy.ids, g.ids, "{name}: {word}: greedy ids");
        assert_eq!(t.greedy.text, g.text, "{name}: {word}: greedy text");
        assert_eq!(t.source_tokens, g.source, "{name}: {word}: source tokens");
        let weights: Vec<Vec<f32>> = t.steps.iter().filter_map(|s| s.weights.clone()).collect();
        assert_eq!(weights.len(), g.weights.len(), "{name}: {word}: rows");
        for (i, (a, h)) in weights.iter().zip(&g.weights).enumerate() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a), bits(h), "{name}: {word}: step {i}'s weights");
            let e = attention_core::entropy::<s2s_kernels::F32>(h);
            assert_eq!(
                t.steps[i].entropy.map(f32::to_bits),
                Some(e.to_bits()),
                "{name}: {word}: step {i}'s entropy"
            );
        }
        assert_eq!(t.output.ids, b.ids, "{name}: {word}: beam {beam} ids");
        assert_eq!(t.output.text, b.text, "{name}: {word}: beam {beam} text");
        let steps = &t.beam.as_ref().expect("a beam trace").steps;
        assert!(!steps.is_empty(), "{name}: {word}: beam steps");
        // Each step's hypotheses extend the previous step's (one token more at most).
        let last = steps.last().unwrap();
        let all: Vec<_> = last.live.iter().chain(&last.finished).collect();
        assert!(
            all.iter().any(|h| h.ids == b.ids),
            "{name}: {word}: the best is among the last step's hypotheses"
        );
        // The top next token of every greedy step is the token chosen (ties aside).
        for (i, s) in t.steps.iter().enumerate() {
            let top = &s.top[0];
            assert!(
                top.id == s.id || (top.p - s.top[1].p).abs() < 1e-6,
                "{name}: {word}: step {i}: top {} but chose {}",
                top.id,
                s.id
            );
        }
    }
}

#[test]
fn netra_at_every_precision_decodes_as_the_host() {
    let words = eval_words(60, 12);
    for name in ["netra.s2s", "netra-w8f32.s2s", "netra-w8a16.s2s"] {
        agree(name, &words, 3);
    }
}

#[test]
fn g2p_en_without_attention_decodes_as_the_host() {
    let words = eval_words(30, 12);
    agree("g2p-en-w8a16.s2s", &words, 2);
    let t = trace::decode(
        &Model::load("g", &std::fs::read(model_file("g2p-en-w8a16.s2s")).unwrap()).unwrap(),
        "hello",
        1,
    )
    .unwrap();
    assert!(t
        .steps
        .iter()
        .all(|s| s.weights.is_none() && s.entropy.is_none()));
    assert!(t.beam.is_none());
}

#[test]
fn lstm_models_decode_as_the_host() {
    let words = eval_words(30, 12);
    agree("keras2-lstm-g2p-w8a16.s2s", &words, 2);
    agree("pytorch-lstm-g2p.s2s", &words, 3);
}

#[test]
fn a_character_the_vocabulary_cannot_spell_is_one_line_naming_it() {
    // The Keras 2 LSTM has no unknown token: a digit cannot be spelled.
    let name = "keras2-lstm-g2p-w8a16.s2s";
    let model = Model::load(name, &std::fs::read(model_file(name)).unwrap()).unwrap();
    let e = trace::decode(&model, "ab3", 1)
        .expect_err("a digit")
        .to_string();
    assert!(e.starts_with("keras2-lstm-g2p-w8a16.s2s: "), "{e}");
    assert!(e.contains('3'), "{e} does not name the character");
    assert!(!e.contains('\n'), "{e}");
    // The same model still decodes the next source.
    assert!(trace::decode(&model, "abc", 1).is_ok());
}

#[test]
fn a_damaged_file_is_one_line_naming_it() {
    let mut bytes = std::fs::read(model_file("netra-w8a16.s2s")).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    let e = Model::load("broken.s2s", &bytes)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.starts_with("broken.s2s: "), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = Model::load("text.s2s", b"hello, not a model")
        .err()
        .expect("refused")
        .to_string();
    assert!(e.starts_with("text.s2s: "), "{e}");
}

#[test]
fn a_source_the_model_cannot_take_is_an_error_of_one_line() {
    let name = "netra-w8a16.s2s";
    let model = Model::load(name, &std::fs::read(model_file(name)).unwrap()).unwrap();
    let long: String = "a".repeat(600);
    let e = trace::decode(&model, &long, 1)
        .expect_err("too long a source")
        .to_string();
    assert!(e.starts_with("netra-w8a16.s2s: "), "{e}");
    assert!(!e.contains('\n'), "{e}");
}
