//! Streaming (`Runner::stream_chars`): a source read a character at a time through a
//! window of encoder states gives, at every precision and every window size, the
//! tokens the whole source gives; the models that cannot stream, and the sources that
//! cannot be streamed, are refused with their reason.

mod common;

use common::{random_builder, random_desc, Rng, SRC};
use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::builder::aligned;
use seq2seq::desc::{Ordering, Split};
use seq2seq::{
    Error, ModelDesc, ModelFile, ModelPrecision, Net, Plan, Prefix, Runner, StreamLimits, Streamed,
};

/// A random monotonic description that streams, of characters.
fn streaming_desc(r: &mut Rng) -> ModelDesc {
    streaming_desc_of(r, Ordering::Monotonic)
}

/// A random description that streams, of characters, attending in `ordering` (local
/// attention for Bahdanau's or Luong's).
fn streaming_desc_of(r: &mut Rng, ordering: Ordering) -> ModelDesc {
    loop {
        let mut d = random_desc(r);
        d.split = Split::Chars;
        if d.attention.ordering == ordering && d.check().is_ok() && d.streams().is_ok() {
            // A local window moves along the source with the steps: many of them.
            if d.attention.local() {
                d.max_steps = 40;
            }
            return d;
        }
    }
}

/// A line of `n` characters of the test vocabulary.
fn line(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| SRC[r.range(3, SRC.len() - 1)]).collect()
}

/// The whole line run at once: its output ids, or its error.
fn whole<P: ModelPrecision>(net: &Net<'_, P>, line: &str) -> Result<Vec<u16>, Error> {
    let positions = line.chars().count() + 8;
    let mut arena = vec![0u32; Plan::new::<P>(&net.desc, positions).bytes() / 4];
    let mut runner = Runner::new(net, &mut arena, positions)?;
    let mut out = vec![0u16; net.desc.max_steps];
    let n = runner.translate_line::<Error>(line, &Prefix::NONE, &mut out, &mut (), |_| Ok(()))?;
    out.truncate(n);
    Ok(out)
}

/// The line streamed a character at a time through a window of `ring` positions, for
/// the model's steps: its output ids and how it went, or its error.
fn streamed<P: ModelPrecision>(
    net: &Net<'_, P>,
    line: &str,
    ring: usize,
) -> Result<(Vec<u16>, Streamed), Error> {
    let plan = Plan::new::<P>(&net.desc, ring);
    let mut arena = vec![0u32; plan.bytes() / 4];
    let mut runner = Runner::new(net, &mut arena, ring)?;
    assert_eq!(runner.plan_bytes(), plan.bytes());
    let mut chars = line.chars();
    let mut out = Vec::new();
    let done = runner.stream_chars::<Error>(
        &Prefix::NONE,
        || Ok(chars.next()),
        StreamLimits {
            max_steps: net.desc.max_steps,
            max_repeats: 0,
        },
        &mut (),
        |y| {
            out.push(y);
            Ok(())
        },
    )?;
    assert_eq!(chars.next(), None, "the source is read to its end");
    Ok((out, done))
}

fn bytes_of(d: &ModelDesc, precision: PrecisionKind, r: &mut Rng) -> Vec<u64> {
    let bytes = random_builder(d, precision, r)
        .to_bytes()
        .unwrap_or_else(|e| panic!("a valid random model is refused: {e}\n{d:?}"));
    aligned(&bytes)
}

/// Lines compared: `(all, through a MoChA chunk, through a local window that the
/// stream moved)`.
fn check<P: ModelPrecision>(words: &[u64], r: &mut Rng) -> (usize, usize, usize) {
    let file = ModelFile::parse(bytemuck::cast_slice(words)).unwrap();
    let net = Net::<P>::bind(&file).unwrap();
    let (mut compared, mut chunked, mut moved) = (0, 0, 0);
    for _ in 0..6 {
        let n = r.range(1, 70);
        let text = line(r, n);
        let expect = whole(&net, &text);
        for ring in [1, 2, 5, 16, 80] {
            let got = streamed(&net, &text, ring);
            let chunk = usize::from(net.desc.attention.chunk);
            if chunk >= ring {
                // The window keeps a MoChA chunk's last rows and needs a new one.
                let over = Error::ChunkOverWindow {
                    chunk,
                    window: ring,
                };
                assert_eq!(got, Err(over), "{:?}", net.desc);
                continue;
            }
            let local = 2 * usize::from(net.desc.attention.window) + 1;
            if net.desc.attention.local() && local > ring {
                // A local step reads its 2D + 1 positions from the window.
                let over = Error::LocalOverWindow {
                    positions: local,
                    window: ring,
                };
                assert_eq!(got, Err(over), "{:?}", net.desc);
                continue;
            }
            match (&expect, &got) {
                (Ok(e), Ok((g, done))) => {
                    assert_eq!(g, e, "{:?}: {text:?} through {ring} positions", net.desc);
                    assert_eq!(done.tokens, e.len());
                    assert_eq!(
                        done.positions,
                        net.desc.extras.prefix_len() + n + net.desc.src_eos.is_some() as usize
                    );
                    compared += 1;
                    chunked += (chunk > 1) as usize;
                    // The last step's window reached past the ring's first fill.
                    let reached = e.len().min(n) + usize::from(net.desc.attention.window);
                    moved += (net.desc.attention.local() && reached >= ring) as usize;
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!(
                    "{:?}: {text:?}: {expect:?} whole, {got:?} streamed",
                    net.desc
                ),
            }
        }
    }
    (compared, chunked, moved)
}

#[test]
fn a_streamed_source_gives_the_whole_sources_tokens_at_every_precision_and_window() {
    let (mut compared, mut chunked, mut moved) = (0, 0, 0);
    let orderings = [Ordering::Monotonic, Ordering::Bahdanau, Ordering::Luong];
    for seed in 0..40 {
        let mut r = Rng::new(seed);
        let d = streaming_desc_of(&mut r, orderings[(seed as usize).saturating_sub(24) % 3]);
        for (all, chunk, local) in [
            check::<F32>(&bytes_of(&d, PrecisionKind::F32, &mut r), &mut r),
            check::<W8F32>(&bytes_of(&d, PrecisionKind::W8F32, &mut r), &mut r),
            check::<W8A16>(&bytes_of(&d, PrecisionKind::W8A16, &mut r), &mut r),
        ] {
            (compared, chunked, moved) = (compared + all, chunked + chunk, moved + local);
        }
    }
    // Most random models decode every line; the others' errors agree. MoChA's chunks
    // are kept across the window's refills, local windows moved along the source.
    assert!(compared > 1000, "only {compared} lines compared");
    assert!(
        chunked > 100,
        "only {chunked} lines through a chunk compared"
    );
    assert!(
        moved > 50,
        "only {moved} lines through a moved local window compared"
    );
}

#[test]
fn the_models_that_cannot_stream_say_why() {
    let mut r = Rng::new(7);
    let base = streaming_desc(&mut r);
    type Change = fn(&mut ModelDesc);
    let cases: [(Change, &str); 5] = [
        (
            |d| d.enc_bidir = true,
            "its encoder is bidirectional (a backward layer starts at the source's end)",
        ),
        (
            |d| (d.attention.ordering, d.attention.window) = (Ordering::Bahdanau, 0),
            "only monotonic and local attention stream (global attention reads every position at every step)",
        ),
        (
            |d| {
                d.attention.ordering = Ordering::Luong;
                (d.attention.chunk, d.attention.window, d.attention.predict) = (0, 2, 3);
            },
            "its local-p attention predicts each window's centre from the source's length, which a stream does not know",
        ),
        (
            |d| d.init = seq2seq::Init::Dense,
            "its decoder's initial state is computed from the whole source (init is not zeros)",
        ),
        (|d| d.src_pad_to = 9, "its source is padded to a fixed length"),
    ];
    for (change, why) in cases {
        let mut d = base;
        change(&mut d);
        assert_eq!(d.streams(), Err(Error::NotStreamable(why)));
        assert_eq!(
            Error::NotStreamable(why).to_string(),
            format!("model cannot stream: {why}")
        );
    }
    // A model of words streams through `stream`, not `stream_chars`.
    let mut d = base;
    d.split = Split::Whitespace;
    let words = bytes_of(&d, PrecisionKind::F32, &mut r);
    let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
    let net = Net::<F32>::bind(&file).unwrap();
    assert_eq!(
        streamed(&net, "ab", 4).map(|_| ()),
        Err(Error::NotStreamable(
            "its source is split into words, not characters"
        ))
    );
}

#[test]
fn bad_streamed_sources_are_refused_as_whole_ones_are() {
    let mut r = Rng::new(11);
    let mut d = streaming_desc(&mut r);
    d.src_unk = None;
    let words = bytes_of(&d, PrecisionKind::F32, &mut r);
    let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
    let net = Net::<F32>::bind(&file).unwrap();
    // An unknown character, with its position, after a long stretch of good ones.
    let text = format!("{}!", line(&mut r, 40));
    let e = streamed(&net, &text, 4).unwrap_err();
    assert_eq!(
        e,
        Error::UnknownSymbol {
            position: 41,
            ch: '!'
        }
    );
    assert_eq!(whole(&net, &text).unwrap_err(), e);
    // An empty source of a model without an end-of-source token: refused before any
    // step, as a whole line is (in a window wider than any random chunk or local
    // window).
    let mut d = streaming_desc(&mut r);
    d.src_eos = None;
    let words = bytes_of(&d, PrecisionKind::F32, &mut r);
    let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
    let bare = Net::<F32>::bind(&file).unwrap();
    assert_eq!(streamed(&bare, "", 8).map(|_| ()), Err(Error::EmptyInput));
    assert_eq!(whole(&bare, "").map(|_| ()), Err(Error::EmptyInput));
    // No window.
    assert_eq!(
        streamed(&net, "ab", 0).map(|_| ()),
        Err(Error::InputTooLong { len: 1, max: 0 })
    );
}

/// Counts the steps that attended a position (a weight above 0).
struct Attending(usize);

impl<P: s2s_kernels::Precision> seq2seq::Observer<P> for Attending {
    fn step(&mut self, step: &seq2seq::Step<'_, P>) {
        let any = step
            .weights
            .is_some_and(|w| w.iter().any(|&v| P::unit_to_f32(v) > 0.0));
        self.0 += usize::from(any);
    }
}

#[test]
fn a_repeat_limit_moves_a_stuck_scan_on_one_position_at_a_time() {
    use seq2seq::format::{DType, Role, Slot, TensorId};
    let mut r = Rng::new(21);
    let mut d = streaming_desc(&mut r);
    // Every position stops (an energy offset far above any score), and the decoder
    // never ends before the step cap: unlimited, the scan stays on the first position.
    (d.max_steps, d.extras.min_steps) = (200, 200);
    let mut b = random_builder(&d, PrecisionKind::F32, &mut r);
    let offset = TensorId::new(Role::AttnV, 0, 0, Slot::Bias);
    b.tensor(offset, DType::F32, 1, 1, &[1.0e4f32]);
    let words = aligned(&b.to_bytes().unwrap());
    let file = ModelFile::parse(bytemuck::cast_slice(&words)).unwrap();
    let net = Net::<F32>::bind(&file).unwrap();
    let text = line(&mut r, 20);
    let positions = d.extras.prefix_len() + 20 + d.src_eos.is_some() as usize;
    for (repeats, attending) in [(0, 200), (1, positions), (3, 3 * positions)] {
        let mut arena = vec![0u32; Plan::new::<F32>(&d, 7).bytes() / 4];
        let mut runner = Runner::new(&net, &mut arena, 7).unwrap();
        let (mut chars, mut seen) = (text.chars(), Attending(0));
        let limits = StreamLimits {
            max_steps: 200,
            max_repeats: repeats,
        };
        let done = runner
            .stream_chars::<Error>(
                &Prefix::NONE,
                || Ok(chars.next()),
                limits,
                &mut seen,
                |_| Ok(()),
            )
            .unwrap();
        assert_eq!((done.tokens, done.ended), (200, false));
        assert_eq!(seen.0, attending, "max_repeats {repeats}");
    }
}
