//! Training against the runtime: every architecture decodes, logit for logit, as the
//! no_std core decodes the written file; a seed and a thread count give the same
//! weights, resumed or not; vocabularies follow their rule; bad inputs are errors.

use std::path::{Path, PathBuf};

use candle_core::Device;

use super::adam::Adam;
use super::examples::{build_vocabularies, encode_pairs, make_batch, Example};
use super::fit::decode_all;
use super::model::Model;
use super::params::Params;
use super::{train_file, Start, TrainOptions};
use crate::data::rng::SplitMix64;
use crate::data::{dates, Pair};
use crate::import::config::Config;
use crate::model::{decode_lines, Keep, LoadedModel};

/// A fresh directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s2s-train-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Date pairs as read from a file.
fn pairs(n: usize, seed: u64) -> Vec<Pair> {
    dates::generate(n, seed)
        .into_iter()
        .enumerate()
        .map(|(i, (source, target))| Pair {
            line: i + 1,
            source,
            target,
        })
        .collect()
}

const HEAD: &str = r#"
[model]
name = "t"
[source]
split = "chars"
lowercase = true
pad = "<pad>"
unk = "<unk>"
[target]
start = "<s>"
end = "</s>"
max_steps = 12
"#;

/// The architectures the runtime runs (after the common head).
const VARIANTS: &[(&str, &str)] = &[
    (
        "no attention, last state",
        r#"[encoder]
embedding = 6
hidden = 10
reset = "after"
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "last"
output = ["state"]"#,
    ),
    (
        "no attention, reset before, 2 bidirectional layers, embedding part",
        r#"[encoder]
embedding = 6
hidden = 8
layers = 2
bidirectional = true
reset = "before"
[decoder]
embedding = 5
hidden = 16
reset = "before"
init = "last"
output = ["state", "embedding"]"#,
    ),
    (
        "bahdanau additive, bidirectional, dense bridge, 2 decoder layers",
        r#"[encoder]
embedding = 6
hidden = 8
bidirectional = true
reset = "after"
[attention]
ordering = "bahdanau"
score = "additive"
dim = 7
[decoder]
embedding = 5
hidden = 12
layers = 2
reset = "after"
init = "dense"
output = ["state", "context"]"#,
    ),
    (
        "bahdanau additive without matrices, memory projection, zeros",
        r#"[encoder]
embedding = 6
hidden = 8
bidirectional = true
reset = "after"
[attention]
ordering = "bahdanau"
score = "additive"
query_proj = false
key_proj = false
memory_proj = 12
[decoder]
embedding = 5
hidden = 12
reset = "after"
init = "zeros"
output = ["state", "context"]"#,
    ),
    (
        "monotonic additive, bidirectional, dense bridge",
        r#"[encoder]
embedding = 6
hidden = 6
bidirectional = true
reset = "after"
[attention]
ordering = "monotonic"
score = "additive"
dim = 7
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "dense"
output = ["state", "context"]"#,
    ),
    (
        "MoChA, chunk 3, forwards only, from zeros",
        r#"[encoder]
embedding = 6
hidden = 8
reset = "after"
[attention]
ordering = "monotonic"
score = "additive"
dim = 7
chunk = 3
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "zeros"
output = ["state", "context"]"#,
    ),
    (
        "local-m bahdanau additive, window 2, forwards only",
        r#"[encoder]
embedding = 6
hidden = 8
reset = "after"
[attention]
ordering = "bahdanau"
score = "additive"
dim = 7
window = 2
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "zeros"
output = ["state", "context"]"#,
    ),
    (
        "local-m luong general, window 1, attentional layer",
        r#"[encoder]
embedding = 6
hidden = 5
bidirectional = true
reset = "after"
[attention]
ordering = "luong"
score = "general"
attentional = 9
window = 1
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "last"
output = ["attentional"]"#,
    ),
    (
        "local-p luong general, window 2, predictor 6, attentional layer",
        r#"[encoder]
embedding = 6
hidden = 10
reset = "after"
[attention]
ordering = "luong"
score = "general"
attentional = 9
window = 2
centre = "predicted"
predictor = 6
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "last"
output = ["attentional"]"#,
    ),
    (
        "local-p bahdanau additive, window 1, padding attended",
        r#"[encoder]
embedding = 6
hidden = 8
reset = "after"
[attention]
ordering = "bahdanau"
score = "additive"
dim = 7
mask = "none"
window = 1
centre = "predicted"
[decoder]
embedding = 5
hidden = 10
reset = "after"
init = "zeros"
output = ["state", "context"]"#,
    ),
    (
        "luong dot, attentional layer, last state",
        r#"[encoder]
embedding = 6
hidden = 12
reset = "after"
[attention]
ordering = "luong"
score = "dot"
attentional = 9
[decoder]
embedding = 5
hidden = 12
reset = "after"
init = "last"
output = ["attentional"]"#,
    ),
    (
        "luong scaled dot over fixed-length padding, no mask, three output parts",
        r#"[encoder]
embedding = 6
hidden = 12
reset = "after"
[attention]
ordering = "luong"
score = "scaled-dot"
mask = "none"
[decoder]
embedding = 5
hidden = 12
reset = "after"
init = "zeros"
output = ["state", "context", "embedding"]"#,
    ),
    (
        "luong general, reset before, bidirectional, 2 decoder layers, dense bridge",
        r#"[encoder]
embedding = 6
hidden = 6
bidirectional = true
reset = "before"
[attention]
ordering = "luong"
score = "general"
attentional = 10
[decoder]
embedding = 5
hidden = 9
layers = 2
reset = "before"
init = "dense"
output = ["attentional", "state"]"#,
    ),
];

/// A configuration file with the head, optional source padding and a variant.
fn config(dir: &Path, name: &str, body: &str, pad_to: bool) -> PathBuf {
    let mut head = HEAD.to_string();
    if pad_to {
        head = head.replace("unk = \"<unk>\"", "unk = \"<unk>\"\npad_to = 20");
    }
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, format!("{head}{body}\n")).unwrap();
    p
}

#[test]
fn every_architecture_decodes_like_the_runtime() {
    let dir = tmp("archs");
    let data = pairs(24, 11);
    for (i, (what, body)) in VARIANTS.iter().enumerate() {
        let path = config(
            &dir,
            &format!("v{i}"),
            body,
            body.contains("mask = \"none\""),
        );
        let mut cfg = Config::load(&path).unwrap();
        build_vocabularies(&mut cfg, data.iter());
        let desc = cfg.desc().unwrap();
        let params = Params::init(&desc, &mut SplitMix64::new(i as u64), &Device::Cpu).unwrap();
        let (s, t) = (&cfg.source.tokens, &cfg.target.tokens);
        let sep = &cfg.target.separator;
        let skeleton = params
            .to_builder(desc, s, t, sep)
            .unwrap()
            .to_bytes()
            .unwrap();
        let skeleton = LoadedModel::from_bytes(&path, &skeleton).unwrap();
        let ex = encode_pairs(&skeleton.file(), &data, &path).unwrap();
        // A few updates, so that outputs are longer than the untrained end token.
        let mut adam = Adam::new(&params, 1e-2).unwrap();
        let refs: Vec<&Example> = ex.iter().collect();
        let (start, end) = (u32::from(desc.tgt_start), u32::from(desc.tgt_end));
        let batch = make_batch(&refs, start, end, &Device::Cpu).unwrap();
        let mut rng = SplitMix64::new(1);
        for _ in 0..15 {
            let loss = Model::train(&desc, &params, 0.1, &mut rng)
                .loss(&batch)
                .unwrap();
            adam.update(&params, &loss.backward().unwrap(), 1.0)
                .unwrap();
        }
        let bytes = params
            .to_builder(desc, s, t, sep)
            .unwrap()
            .to_bytes()
            .unwrap();
        let model = LoadedModel::from_bytes(&path, &bytes).unwrap();
        let ours = decode_all(&desc, &params, &ex, true).unwrap();
        let sources: Vec<String> = data.iter().map(|p| p.source.clone()).collect();
        let keep = Keep {
            weights: true,
            logits: true,
            ..Keep::default()
        };
        let theirs = decode_lines(&model, &sources, keep).unwrap();
        let mut compared = 0;
        for ((src, a), b) in sources.iter().zip(&ours).zip(&theirs) {
            // Up to the first step where the outputs part (only at a near tie).
            let same = a
                .ids
                .iter()
                .zip(&b.ids)
                .take_while(|(x, y)| **x == u32::from(**y))
                .count();
            let steps = (same + 1).min(a.logits.len()).min(b.logits.len());
            for k in 0..steps {
                for (x, y) in a.logits[k].iter().zip(&b.logits[k]) {
                    assert!(
                        (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
                        "{what}: {src:?} step {k}: logit {x} against the runtime's {y}"
                    );
                }
                if desc.has_attention() {
                    assert_eq!(a.weights[k].len(), b.weights[k].len(), "{what}: {src:?}");
                    for (x, y) in a.weights[k].iter().zip(&b.weights[k]) {
                        assert!(
                            (x - y).abs() <= 1e-5,
                            "{what}: {src:?} step {k}: weight {x} vs {y}"
                        );
                    }
                }
                compared += 1;
            }
            if a.ids.len() != b.ids.len() || same < a.ids.len() {
                assert!(
                    a.gaps[same] < 1e-4,
                    "{what}: {src:?} differs away from a tie"
                );
            }
        }
        assert!(
            compared > 3 * data.len(),
            "{what}: compared {compared} steps"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A short training run of the smallest attention variant.
fn small_run(dir: &Path, out: &str, epochs: usize, resume: bool) -> (Vec<u8>, super::TrainReport) {
    let cfg = config(dir, "small", VARIANTS[2].1, false);
    let data = dir.join("train.tsv");
    let valid = dir.join("valid.tsv");
    if !data.exists() {
        let all = dates::generate(120, 5);
        crate::data::write_pairs(&data, &all[..100]).unwrap();
        crate::data::write_pairs(&valid, &all[100..]).unwrap();
    }
    let output = dir.join(out);
    let opt = TrainOptions {
        epochs,
        batch: 16,
        lr: 3e-3,
        seed: 7,
        threads: 2,
        resume,
        quiet: true,
        ..TrainOptions::default()
    };
    let r = train_file(Start::Config(&cfg), &data, Some(&valid), &output, &opt).unwrap();
    (std::fs::read(&output).unwrap(), r)
}

#[test]
fn the_same_seed_gives_the_same_weights_resumed_or_not() {
    let dir = tmp("seed");
    let (a, ra) = small_run(&dir, "a.s2s", 3, false);
    let (b, _) = small_run(&dir, "b.s2s", 3, false);
    assert_eq!(a, b, "two runs with the same seed and threads");
    assert!(ra.best_valid_loss < ra.initial_valid_loss);
    assert!(ra.agreement.holds(99.5), "{}", ra.agreement.summary());
    // Two epochs, then a resumed run to three: the same file as three at once.
    let (_, r2) = small_run(&dir, "c.s2s", 2, false);
    assert_eq!(r2.epochs, 2);
    let (c, r3) = small_run(&dir, "c.s2s", 3, true);
    assert_eq!(r3.epochs, 3);
    assert_eq!(a, c, "a resumed run");
    // Without --resume an existing checkpoint is not overwritten.
    let cfg = config(&dir, "small", VARIANTS[2].1, false);
    let opt = TrainOptions {
        quiet: true,
        ..TrainOptions::default()
    };
    let e = train_file(
        Start::Config(&cfg),
        &dir.join("train.tsv"),
        None,
        &dir.join("c.s2s"),
        &opt,
    )
    .unwrap_err();
    assert!(e.to_string().contains("--resume"), "{e}");
    // A different seed gives other weights.
    let d = {
        let mut o = opt.clone();
        o.seed = 8;
        o.epochs = 1;
        o.checkpoints = Some(dir.join("d.ckpt"));
        train_file(
            Start::Config(&cfg),
            &dir.join("train.tsv"),
            None,
            &dir.join("d.s2s"),
            &o,
        )
        .unwrap();
        std::fs::read(dir.join("d.s2s")).unwrap()
    };
    assert_ne!(a, d);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_untrained_model_does_not_count_against_the_patience() {
    // A learning rate too small to change a weight: every epoch decodes like the
    // untrained model. The first epoch is still the best one (the untrained model is
    // the baseline, not a rival), the second is not better, and patience 1 stops there.
    let dir = tmp("patience");
    let cfg = config(&dir, "small", VARIANTS[2].1, false);
    let (data, valid) = (dir.join("train.tsv"), dir.join("valid.tsv"));
    let all = dates::generate(60, 5);
    crate::data::write_pairs(&data, &all[..40]).unwrap();
    crate::data::write_pairs(&valid, &all[40..]).unwrap();
    let opt = TrainOptions {
        epochs: 4,
        lr: 1e-30,
        patience: 1,
        seed: 3,
        threads: 1,
        quiet: true,
        ..TrainOptions::default()
    };
    let r = train_file(
        Start::Config(&cfg),
        &data,
        Some(&valid),
        &dir.join("p.s2s"),
        &opt,
    )
    .unwrap();
    assert_eq!((r.epochs, r.best_epoch), (2, 1), "{r:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn vocabularies_follow_the_rule() {
    let dir = tmp("vocab");
    let path = config(&dir, "v", VARIANTS[0].1, false);
    let mut cfg = Config::load(&path).unwrap();
    let data = [
        Pair {
            line: 1,
            source: "Ba a".into(),
            target: "x-y".into(),
        },
        Pair {
            line: 2,
            source: "c".into(),
            target: "yz".into(),
        },
    ];
    build_vocabularies(&mut cfg, data.iter());
    assert_eq!(cfg.source.tokens, ["<pad>", "<unk>", " ", "a", "b", "c"]);
    assert_eq!(cfg.target.tokens, ["<s>", "</s>", "-", "x", "y", "z"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tmp("bad");
    let path = config(&dir, "c", VARIANTS[0].1, false);
    let out = dir.join("m.s2s");
    let opt = TrainOptions {
        quiet: true,
        ..TrainOptions::default()
    };
    let data = dir.join("d.tsv");
    std::fs::write(&data, "abc\tx\nno tab here\n").unwrap();
    let e = train_file(Start::Config(&path), &data, None, &out, &opt)
        .unwrap_err()
        .to_string();
    assert!(e.contains("d.tsv:2") && e.contains("source<TAB>"), "{e}");
    std::fs::write(&data, "abc\tx\nabd\t0123456789abcdef\n").unwrap();
    let e = train_file(Start::Config(&path), &data, None, &out, &opt)
        .unwrap_err()
        .to_string();
    assert!(e.contains("d.tsv:2") && e.contains("max_steps"), "{e}");
    let with_weights = dir.join("w.toml");
    let text = std::fs::read_to_string(&path).unwrap() + "[weights]\n\"output\" = \"fc\"\n";
    std::fs::write(&with_weights, text).unwrap();
    let e = train_file(Start::Config(&with_weights), &data, None, &out, &opt)
        .unwrap_err()
        .to_string();
    assert!(e.contains("w.toml") && e.contains("[weights]"), "{e}");
    std::fs::write(&data, "abc\tx\nabd\ty\n").unwrap();
    let lstm = dir.join("lstm.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("[encoder]\n"), "{text}");
    // An LSTM has no reset gate: the encoder's `reset` line (the first) goes.
    let text = match text.find("reset =") {
        Some(at) => {
            let end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
            format!("{}{}", &text[..at], &text[end..])
        }
        None => text,
    };
    std::fs::write(
        &lstm,
        text.replace("[encoder]\n", "[encoder]\ncell = \"lstm\"\n"),
    )
    .unwrap();
    let e = train_file(Start::Config(&lstm), &data, None, &out, &opt)
        .unwrap_err()
        .to_string();
    assert!(e.contains("lstm.toml") && e.contains("GRU cells"), "{e}");
    let mean = dir.join("mean.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = ["dense", "zeros", "last"].iter().fold(text, |t, i| {
        t.replace(&format!("init = \"{i}\""), "init = \"mean\"")
    });
    assert!(text.contains("init = \"mean\""), "{text}");
    std::fs::write(&mean, text).unwrap();
    let e = train_file(Start::Config(&mean), &data, None, &out, &opt)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mean.toml") && e.contains("mean or shared bridge"),
        "{e}"
    );
    assert!(
        !e.contains("  ") && !e.contains('\n'),
        "one line, single spaces: {e}"
    );
    assert!(!out.exists(), "nothing written on an error");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Training sources longer than a named board's positions get one warning line per
/// board, counting them and naming the longest; a board that takes them all, none.
#[test]
fn sources_longer_than_a_board_takes_are_counted_per_board() {
    let microbit = s2s_device::board::find("microbit").unwrap();
    let an386 = s2s_device::board::find("mps2-an386").unwrap();
    let cap = microbit.capacities.max_positions;
    assert!(an386.capacities.max_positions > cap + 5);
    let lens = [cap - 1, cap + 2, cap, cap + 5, cap + 5];
    let pairs: Vec<Pair> = (0..lens.len())
        .map(|i| Pair {
            line: i + 10,
            source: String::new(),
            target: String::new(),
        })
        .collect();
    let examples: Vec<Example> = lens
        .iter()
        .map(|&n| Example {
            src: vec![1; n],
            attend: n,
            tgt: vec![],
        })
        .collect();
    let warnings = super::too_long_for(&[microbit, an386], 0, &pairs, &examples);
    assert_eq!(
        warnings,
        [format!(
            "3 of 5 training sources are longer than the {cap} positions microbit plans this \
             model for, which rejects them (the longest: {} positions, line 13)",
            cap + 5
        )]
    );
    // A fixed length over the board's cap.
    let fixed = super::too_long_for(&[microbit], cap + 1, &pairs, &examples);
    assert_eq!(
        fixed,
        [format!(
            "the model's fixed length of {} positions is over the {cap} microbit takes: it \
             cannot serve the model",
            cap + 1
        )]
    );
}

/// A short run of every architecture with `--quantize`: the file written is in that
/// format, decodes every validation source as the training code's integer model does,
/// and its teacher-forced loss is the one training minimised.
#[test]
fn quantization_aware_training_writes_the_integer_model_it_trained() {
    use crate::quantize::Scheme;
    let dir = tmp("qat");
    let all = dates::generate(90, 6);
    let (data, valid) = (dir.join("train.tsv"), dir.join("valid.tsv"));
    crate::data::write_pairs(&data, &all[..60]).unwrap();
    crate::data::write_pairs(&valid, &all[60..]).unwrap();
    for (i, (what, body)) in VARIANTS.iter().enumerate() {
        let scheme = [Scheme::W8a16, Scheme::W8f32][i % 2];
        let path = config(
            &dir,
            &format!("q{i}"),
            body,
            body.contains("mask = \"none\""),
        );
        let out = dir.join(format!("q{i}.s2s"));
        let opt = TrainOptions {
            epochs: 2,
            batch: 16,
            lr: 3e-3,
            seed: 5,
            threads: 2,
            quiet: true,
            quantize: Some(scheme),
            ..TrainOptions::default()
        };
        let r = train_file(Start::Config(&path), &data, Some(&valid), &out, &opt)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let m = LoadedModel::load(&out).unwrap();
        let want = super::quant::scheme_name(scheme);
        assert_eq!(m.file().precision().name(), want, "{what}");
        assert_eq!(r.precision, want);
        assert_eq!(
            r.agreement.equal,
            r.agreement.sequences,
            "{what}: {}",
            r.agreement.summary()
        );
        assert_eq!(r.agreement.sequences, 30);
        // The loss of the integer model, teacher-forced, is what the training graph
        // computes with the integer logits put in.
        let desc = *m.file().desc();
        let ex = encode_pairs(&m.file(), &pairs(8, 9), Path::new("x")).unwrap();
        let refs: Vec<&Example> = ex.iter().collect();
        let (start, end) = (u32::from(desc.tgt_start), u32::from(desc.tgt_end));
        let b = make_batch(&refs, start, end, &Device::Cpu).unwrap();
        let exact = super::quant::forced_logits(&m, &refs, b.steps, &b.tgt_mask).unwrap();
        let p = Params::init(&desc, &mut SplitMix64::new(1), &Device::Cpu).unwrap();
        let graph = Model::quantized(&desc, &p, super::model::Bounds::of(&desc))
            .unwrap()
            .loss_with(&b, Some(&exact))
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let (integer, _, _) = super::quant::evaluate(&m, &ex).unwrap();
        assert!(
            (f64::from(graph) - integer).abs() < 1e-4 * integer.max(1.0),
            "{what}: the graph's loss {graph} is not the integer model's {integer}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--init`: the run starts from the file's weights (its first validation is the file's
/// own), and refuses a quantized file and data outside its vocabularies in one line.
#[test]
fn init_starts_from_the_model_file() {
    let dir = tmp("init");
    let (_, first) = small_run(&dir, "a.s2s", 2, false);
    let (data, valid) = (dir.join("train.tsv"), dir.join("valid.tsv"));
    let opt = TrainOptions {
        epochs: 1,
        batch: 16,
        lr: 1e-3,
        threads: 2,
        quiet: true,
        ..TrainOptions::default()
    };
    let a = dir.join("a.s2s");
    let r = train_file(
        Start::Init(&a),
        &data,
        Some(&valid),
        &dir.join("b.s2s"),
        &opt,
    )
    .unwrap();
    assert!(
        (r.initial_valid_loss - first.best_valid_loss).abs() < 1e-9,
        "{} against {}",
        r.initial_valid_loss,
        first.best_valid_loss
    );
    // A quantized file.
    let q = dir.join("q.s2s");
    let m = LoadedModel::load(&a).unwrap();
    let b = crate::quantize::quantize_nearest(&m, crate::quantize::Scheme::W8f32, None).unwrap();
    std::fs::write(&q, b.to_bytes().unwrap()).unwrap();
    let e = train_file(
        Start::Init(&q),
        &data,
        Some(&valid),
        &dir.join("c.s2s"),
        &opt,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("--init needs an f32 model file, this one is w8f32"),
        "{e}"
    );
    // A source symbol the model has never seen, on line 2.
    let odd = dir.join("odd.tsv");
    std::fs::write(&odd, "1 jan 2000\t2000-01-01\n1 jan 2000§\t2000-01-01\n").unwrap();
    let e = train_file(
        Start::Init(&a),
        &odd,
        Some(&valid),
        &dir.join("d.s2s"),
        &opt,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("odd.tsv:2: source symbol \"§\""), "{text}");
    assert!(!dir.join("d.s2s").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Label smoothing mixes the target's negative log-probability with the vocabulary's
/// mean: linear in `eps`, and not the plain loss at `eps = 1`.
#[test]
fn label_smoothing_mixes_the_target_with_the_vocabulary() {
    let dir = tmp("smoothing");
    let mut cfg = Config::load(&config(&dir, "s", VARIANTS[4].1, false)).unwrap();
    let data = pairs(6, 3);
    build_vocabularies(&mut cfg, data.iter());
    let desc = cfg.desc().unwrap();
    let p = Params::init(&desc, &mut SplitMix64::new(2), &Device::Cpu).unwrap();
    let skeleton = p
        .to_builder(desc, &cfg.source.tokens, &cfg.target.tokens, "")
        .unwrap()
        .to_bytes()
        .unwrap();
    let m = LoadedModel::from_bytes(Path::new("m.s2s"), &skeleton).unwrap();
    let ex = encode_pairs(&m.file(), &data, Path::new("d.tsv")).unwrap();
    let refs: Vec<&Example> = ex.iter().collect();
    let b = make_batch(
        &refs,
        u32::from(desc.tgt_start),
        u32::from(desc.tgt_end),
        &Device::Cpu,
    )
    .unwrap();
    let at = |eps: f32| -> f32 {
        Model::eval(&desc, &p)
            .smoothed(eps)
            .loss(&b)
            .unwrap()
            .to_scalar()
            .unwrap()
    };
    let (plain, uniform, quarter) = (at(0.0), at(1.0), at(0.25));
    assert!((plain - uniform).abs() > 1e-4, "{plain} {uniform}");
    let mixed = 0.75 * plain + 0.25 * uniform;
    assert!((quarter - mixed).abs() < 1e-5, "{quarter} against {mixed}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The ranges-only calibration of quantization-aware training measures what the full
/// one (with the recorder) measures: the same largest values per probe, logits and
/// sequence count, on every architecture.
#[test]
fn ranges_only_calibration_equals_the_full_one() {
    let dir = tmp("ranges");
    let lines: Vec<String> = pairs(40, 4).into_iter().map(|p| p.source).collect();
    for (i, (what, body)) in VARIANTS.iter().enumerate() {
        let mut cfg = Config::load(&config(&dir, &format!("r{i}"), body, false)).unwrap();
        let data = pairs(40, 4);
        build_vocabularies(&mut cfg, data.iter());
        let desc = cfg.desc().unwrap();
        let p = Params::init(&desc, &mut SplitMix64::new(i as u64), &Device::Cpu).unwrap();
        let bytes = p
            .to_builder(desc, &cfg.source.tokens, &cfg.target.tokens, "")
            .unwrap()
            .to_bytes()
            .unwrap();
        let m = LoadedModel::from_bytes(Path::new("m.s2s"), &bytes).unwrap();
        let full = crate::quantize::calibrate(&m, &lines, |_| {}).unwrap();
        let ranges = crate::quantize::calibrate_ranges(&m, &lines).unwrap();
        assert!(!full.max.is_empty(), "{what}");
        assert_eq!(full.max, ranges.max, "{what}");
        assert_eq!(full.logits_max, ranges.logits_max, "{what}");
        assert_eq!(full.sequences, ranges.sequences, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Quantization-aware training is as deterministic as f32 training: the same seed and
/// threads give the same file (each batch's integer model is new, often where the
/// previous one was; the host's layer cache must not take one for the other).
#[test]
fn quantization_aware_training_gives_the_same_file_twice() {
    let dir = tmp("qat-twice");
    let all = dates::generate(150, 8);
    let (data, valid) = (dir.join("train.tsv"), dir.join("valid.tsv"));
    crate::data::write_pairs(&data, &all[..120]).unwrap();
    crate::data::write_pairs(&valid, &all[120..]).unwrap();
    let cfg = config(&dir, "t", VARIANTS[2].1, false);
    let run = |out: &str| {
        let opt = TrainOptions {
            epochs: 3,
            batch: 8,
            lr: 3e-3,
            seed: 4,
            threads: 2,
            quiet: true,
            quantize: Some(crate::quantize::Scheme::W8a16),
            ..TrainOptions::default()
        };
        train_file(
            Start::Config(&cfg),
            &data,
            Some(&valid),
            &dir.join(out),
            &opt,
        )
        .unwrap();
        std::fs::read(dir.join(out)).unwrap()
    };
    assert_eq!(run("a.s2s"), run("b.s2s"));
    std::fs::remove_dir_all(&dir).unwrap();
}
