//! Issue 31, item 3: prefix slots (a source token chosen per call) and the minimum
//! output length, in the model file, the source encoding, greedy decoding and every
//! beam variant.

mod common;

use common::{random_builder, random_desc, Rng, SRC, TGT};
use s2s_kernels::{PrecisionKind, F32};
use seq2seq::builder::{aligned, ModelBuilder};
use seq2seq::desc::{BeamVariant, ModelDesc, Role};
use seq2seq::format::{Slot, TensorId};
use seq2seq::vocab::encode_source;
use seq2seq::{BeamPlan, Error, ModelFile, Net, Plan, Prefix, Runner, Search};

/// The source vocabulary of these tests: [`SRC`] with its last two tokens spelled as
/// control tags (a model's vocabulary is strings for ids: the ids, and so the weights,
/// are the same).
const TAGS: [&str; 2] = ["<EG>", "<US>"];
const EG: u16 = 5;
const US: u16 = 6;

fn vocab() -> Vec<String> {
    let mut v: Vec<String> = SRC.iter().map(|s| s.to_string()).collect();
    v[EG as usize] = TAGS[0].into();
    v[US as usize] = TAGS[1].into();
    v
}

/// `d`'s model with random weights from `seed`, its source vocabulary [`vocab`].
fn builder(d: &ModelDesc, seed: u64) -> ModelBuilder {
    let mut b = random_builder(d, PrecisionKind::F32, &mut Rng::new(seed));
    b.src_vocab = vocab();
    b
}

fn bytes(b: &ModelBuilder) -> Vec<u64> {
    let bytes = b.to_bytes().expect("a valid model");
    let n = bytes.len();
    let mut words = aligned(&bytes);
    words.truncate(n.div_ceil(8));
    words
}

/// Greedy output ids and the 3-wide beam search's of `line` after `prefix`.
fn decode(words: &[u64], line: &str, prefix: &Prefix) -> Result<(Vec<u16>, Vec<u16>), Error> {
    let file = ModelFile::parse(bytemuck::cast_slice(words))?;
    let net = Net::<F32>::bind(&file)?;
    let positions = 16;
    let need = Plan::new::<F32>(file.desc(), positions).bytes()
        + BeamPlan::new::<F32>(file.desc(), 3).bytes();
    let mut arena = vec![0u32; need / 4];
    let mut runner = Runner::with_beam(&net, &mut arena, positions, 3)?;
    let mut out = vec![0u16; file.desc().max_steps];
    let n = runner.translate_line::<Error>(line, prefix, &mut out, &mut (), |_| Ok(()))?;
    let greedy = out[..n].to_vec();
    let search = Search::of(file.desc(), 3);
    let n = runner.beam_line::<Error>(line, prefix, search, &mut out, &mut (), |_| Ok(()))?;
    Ok((greedy, out[..n].to_vec()))
}

/// Random descriptions with room for two prefix tokens before a source of 3.
fn descs() -> impl Iterator<Item = (u64, ModelDesc)> {
    let mut r = Rng::new(31);
    (0..40u64).filter_map(move |seed| {
        let mut d = random_desc(&mut r);
        (d.extras.src_prefix, d.extras.slots) = ([None; 4], [None; 4]);
        (d.src_pad_to == 0 || d.src_pad_to >= 8).then_some((seed, d))
    })
}

#[test]
fn a_token_chosen_per_call_decodes_as_the_same_token_fixed_in_the_model() {
    let lines = ["ab", "ba", "aab", "b"];
    let mut changed = 0;
    let mut models = 0;
    for (seed, d) in descs() {
        models += 1;
        // The reference: today's fixed prefix, the tag baked into the model file.
        let fixed = |tag: u16| {
            let mut d = d;
            d.extras.src_prefix[0] = Some(tag);
            bytes(&builder(&d, seed))
        };
        let (eg, us) = (fixed(EG), fixed(US));
        // The same weights with a slot offering both tags.
        let mut b = builder(&d, seed);
        b.slot("country", &[EG, US], None).unwrap();
        let slotted = bytes(&b);
        let file = ModelFile::parse(bytemuck::cast_slice(&slotted)).unwrap();
        let (slots, v) = (file.slots(), file.src_vocab());
        assert_eq!(slots.name(0), Some("country"));
        assert_eq!(slots.tokens(0).collect::<Vec<_>>(), [EG, US]);
        for line in lines {
            let mut outs = Vec::new();
            for (tag, reference) in [("<EG>", &eg), ("<US>", &us)] {
                let p = Prefix::NONE
                    .with_fields(&slots, &v, &format!("country={tag}"))
                    .unwrap();
                let got = decode(&slotted, line, &p);
                let want = decode(reference, line, &Prefix::NONE);
                assert_eq!(got, want, "seed {seed}, {line:?} after {tag}");
                outs.push(got);
            }
            changed += (outs[0] != outs[1]) as usize;
        }
    }
    assert!(models >= 10, "{models} models");
    // The choice reaches the output (random weights: not on every line).
    assert!(
        changed > 0,
        "no line decodes differently after <EG> and <US>"
    );
}

#[test]
fn the_source_holds_the_fixed_prefix_then_the_slots_tokens() {
    let mut d = common::small_desc();
    d.extras.src_prefix[0] = Some(3);
    let mut b = builder(&d, 1);
    b.slot("country", &[EG, US], Some(US)).unwrap();
    b.slot("role", &[4, EG], None).unwrap();
    let words = bytes(&b);
    let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
    let (desc, v, slots) = (file.desc(), file.src_vocab(), file.slots());
    let mut out = [0u16; 16];
    let mut ids = |p: &Prefix, line: &str| {
        encode_source(desc, &v, &slots, p, line, &mut out).map(|(n, _)| out[..n].to_vec())
    };
    let role = Prefix::NONE.with_fields(&slots, &v, "role=b").unwrap();
    // a (fixed), the country's default <US>, the role b, then "ab" and </s>.
    assert_eq!(ids(&role, "ab"), Ok(vec![3, US, 4, 3, 4, 2]));
    let both = role
        .with_fields(&slots, &v, "country=<EG> role=<EG>")
        .unwrap();
    assert_eq!(ids(&both, "ab"), Ok(vec![3, EG, EG, 3, 4, 2]));
    // No default for the role: a call must choose it.
    assert_eq!(
        ids(&Prefix::NONE, "ab"),
        Err(Error::NoPrefixToken { slot: 1 })
    );
    // Typed in the line, a tag would be four characters: refused, with its position.
    assert_eq!(
        ids(&role, "a<EG>b"),
        Err(Error::SlotTokenInSource { position: 2 })
    );
    assert_eq!(
        Error::SlotTokenInSource { position: 2 }.to_string(),
        "a prefix slot's token is typed in the source at position 2: choose it as the prefix instead"
    );
    // Choices the model refuses, each an error (never a panic).
    let choose = |text: &str| Prefix::NONE.with_fields(&slots, &v, text);
    assert_eq!(choose("lang=<EG>"), Err(Error::NoSuchSlot));
    assert_eq!(choose("country=a"), Err(Error::NotInSlot { slot: 0 }));
    assert_eq!(choose("country=<XX>"), Err(Error::NotInSlot { slot: 0 }));
    assert_eq!(choose("country"), Err(Error::PrefixField));
    assert_eq!(choose(""), Ok(Prefix::NONE));
    // A prefix made for another model: its tokens are checked again.
    let mut alien = Prefix::NONE;
    alien.ids = [Some(3), Some(4), None, None];
    assert_eq!(ids(&alien, "ab"), Err(Error::NotInSlot { slot: 0 }));
    alien.ids = [None, Some(4), Some(4), None];
    assert_eq!(ids(&alien, "ab"), Err(Error::NotInSlot { slot: 2 }));
}

#[test]
fn a_model_file_with_bad_slots_is_refused() {
    let d = common::small_desc();
    // A default that is not one of the slot's tokens.
    let mut b = builder(&d, 2);
    b.slot("country", &[EG, US], Some(3)).unwrap();
    assert!(matches!(b.to_bytes(), Err(Error::Inconsistent(_))));
    // A token outside the source vocabulary.
    let mut b = builder(&d, 2);
    b.slot("country", &[EG, 99], None).unwrap();
    assert!(matches!(
        b.to_bytes(),
        Err(Error::TokenOutOfRange {
            what: "slot token",
            id: 99,
            ..
        })
    ));
    // A name a prefix field could not spell, two slots of one name.
    for names in [&["a b"][..], &["a=b"], &[""], &["x", "x"]] {
        let mut b = builder(&d, 2);
        for n in names {
            b.slot(n, &[EG], None).unwrap();
        }
        assert!(
            matches!(b.to_bytes(), Err(Error::Inconsistent(_))),
            "{names:?}"
        );
    }
    // A fifth slot.
    let mut b = builder(&d, 2);
    for n in ["a", "b", "c", "d"] {
        b.slot(n, &[EG], None).unwrap();
    }
    assert!(b.slot("e", &[EG], None).is_err());
    // Slots leaving no room for the source within a fixed length.
    let mut d2 = d;
    d2.src_pad_to = 2;
    let mut b = builder(&d2, 2);
    b.slot("a", &[EG], None).unwrap();
    b.slot("b", &[EG], None).unwrap();
    assert!(matches!(b.to_bytes(), Err(Error::Inconsistent(_))));
    // A minimum length above the most steps.
    let mut d3 = d;
    d3.extras.min_steps = d3.max_steps + 1;
    assert!(matches!(
        builder(&d3, 2).to_bytes(),
        Err(Error::Inconsistent(_))
    ));
}

/// A model whose output ignores its input: end-of-output first (logit 9), then `x`
/// (logit 5), the others 0.
fn eager_to_end(min_steps: usize) -> Vec<u64> {
    let mut d = common::small_desc();
    d.extras.min_steps = min_steps;
    let mut b = builder(&d, 3);
    let spec = d
        .layer_specs()
        .into_iter()
        .find(|s| s.role == Role::Out)
        .unwrap();
    let w = vec![0f32; spec.rows * spec.cols];
    let mut bias = vec![0f32; TGT.len()];
    bias[d.tgt_end as usize] = 9.0;
    bias[4] = 5.0; // "x"
    b.linear_f32((Role::Out, 0, 0), spec.rows, spec.cols, &w, Some(&bias));
    assert!(b
        .tensors
        .iter()
        .any(|t| t.id == TensorId::new(Role::Out, 0, 0, Slot::Bias)));
    bytes(&b)
}

#[test]
fn min_steps_bans_the_end_token_in_greedy_decoding_and_every_beam_variant() {
    for (min, want) in [(0, vec![]), (1, vec![4]), (3, vec![4, 4, 4])] {
        let words = eager_to_end(min);
        let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
        assert_eq!(file.desc().extras.min_steps, min);
        let (greedy, _) = decode(&words, "ab", &Prefix::NONE).unwrap();
        assert_eq!(greedy, want, "greedy, min_steps {min}");
        let net = Net::<F32>::bind(&file).unwrap();
        for variant in [
            BeamVariant::InSlot,
            BeamVariant::FinishedSet,
            BeamVariant::Netra,
        ] {
            for k in 1..=3 {
                let need = Plan::new::<F32>(file.desc(), 16).bytes()
                    + BeamPlan::new::<F32>(file.desc(), k).bytes();
                let mut arena = vec![0u32; need / 4];
                let mut runner = Runner::with_beam(&net, &mut arena, 16, k).unwrap();
                let mut search = Search::of(file.desc(), k);
                search.rule.variant = variant;
                let mut out = vec![0u16; file.desc().max_steps];
                let n = runner
                    .beam_line::<Error>("ab", &Prefix::NONE, search, &mut out, &mut (), |_| Ok(()))
                    .unwrap();
                assert_eq!(out[..n], want[..], "{variant:?} {k} wide, min_steps {min}");
                // No result of the search ends before min_steps.
                for r in 0..runner.hypotheses() {
                    let h = runner.hypothesis(r).unwrap();
                    assert!(
                        !h.ended || h.tokens.len() >= min,
                        "{variant:?} {k} wide: {:?}",
                        h.tokens
                    );
                }
            }
        }
    }
}
