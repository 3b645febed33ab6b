//! Teacher forcing (`Runner::force`): fed the tokens greedy decoding chose, a lane sees
//! the greedy run's logits step for step; fed other tokens, the steps follow them, and
//! two lanes forced at once see what each sees alone.

mod common;

use common::{random_lines, random_model, Rng};
use s2s_kernels::{Precision, PrecisionKind, F32, W8A16};
use seq2seq::builder::aligned;
use seq2seq::run::{Observer, Step};
use seq2seq::vocab::encode_source;
use seq2seq::{Error, ModelFile, ModelPrecision, Net, Plan, Prefix, Runner};

/// Every step's token and logits.
#[derive(Default, Debug, PartialEq)]
struct Steps<W>(Vec<(u16, Vec<W>)>);

impl<P: Precision> Observer<P> for Steps<P::Wide> {
    fn step(&mut self, s: &Step<'_, P>) {
        self.0.push((s.token, s.logits.to_vec()));
    }
}

const POSITIONS: usize = 16;

/// The source ids of `line` and their valid length.
fn ids<P: ModelPrecision>(net: &Net<'_, P>, line: &str) -> Result<(Vec<u16>, usize), Error> {
    let mut ids = vec![0u16; POSITIONS];
    let (n, valid) = encode_source(
        &net.desc,
        &net.src_vocab,
        &net.slots(),
        &Prefix::NONE,
        line,
        &mut ids,
    )?;
    ids.truncate(n);
    Ok((ids, valid))
}

/// Checks one model on `lines`; returns how many lines were compared.
fn check<P: ModelPrecision>(file: &ModelFile<'_>, lines: &[String], r: &mut Rng) -> usize
where
    P::Wide: core::fmt::Debug + PartialEq + Clone,
{
    let Ok(net) = Net::<P>::bind(file) else {
        return 0;
    };
    let plan = Plan::new::<P>(&net.desc, POSITIONS).bytes() / 4 + 1;
    let mut arena = vec![0u32; 2 * plan];
    let Ok(mut runner) = Runner::<P, 2>::with_lanes(&net, &mut arena, POSITIONS) else {
        return 0;
    };
    let mut compared = 0;
    for pair in lines.chunks(2) {
        let Ok(a) = ids(&net, &pair[0]) else { continue };
        let Ok(b) = ids(&net, &pair[1]) else { continue };
        // Greedy, lane by lane.
        let mut greedy = Vec::new();
        for (src, valid) in [&a, &b] {
            let mut obs = [Steps::default()];
            let mut out = vec![0u16; net.desc.max_steps];
            runner
                .force(&[(src, *valid)], &[&[]], &mut obs)
                .expect("one forced step");
            assert_eq!(obs[0].0.len(), 1, "an empty target is one step (the end)");
            let mut g = [Steps::default()];
            runner
                .run(src, *valid, &mut out, &mut g[0])
                .expect("a greedy run");
            let [g] = g;
            greedy.push(g);
        }
        // The greedy tokens without the end token, forced on both lanes at once.
        let tokens: Vec<Vec<u16>> = greedy
            .iter()
            .map(|g| {
                g.0.iter()
                    .map(|s| s.0)
                    .take_while(|&t| t != net.desc.tgt_end)
                    .collect()
            })
            .collect();
        let mut obs = [Steps::default(), Steps::default()];
        runner
            .force(
                &[(&a.0, a.1), (&b.0, b.1)],
                &[&tokens[0], &tokens[1]],
                &mut obs,
            )
            .expect("a forced run");
        for (g, (f, t)) in greedy.iter().zip(obs.iter().zip(&tokens)) {
            assert_eq!(f.0.len(), t.len() + 1);
            // Where greedy ended or ran out of steps, forcing goes on to the end token.
            for (gs, fs) in g.0.iter().zip(&f.0) {
                assert_eq!(gs.1, fs.1, "forced logits differ from greedy's");
            }
        }
        // Another target: the steps follow it (its length, its tokens).
        let v = net.desc.tgt_vocab as u16;
        let other: Vec<u16> = (0..r.range(1, 6))
            .map(|_| r.range(0, v as usize - 1) as u16)
            .filter(|&t| t != net.desc.tgt_end)
            .collect();
        let mut obs = [Steps::default()];
        runner
            .force(&[(&a.0, a.1)], &[&other], &mut obs)
            .expect("a forced run");
        let fed: Vec<u16> = obs[0].0.iter().map(|s| s.0).collect();
        let mut want = other.clone();
        want.push(net.desc.tgt_end);
        assert_eq!(fed, want);
        assert_eq!(
            obs[0].0[0].1, greedy[0].0[0].1,
            "the first step does not depend on the target"
        );
        compared += 2;
    }
    // A mismatch of sources and targets is an error, not a panic.
    assert!(runner
        .force::<Steps<P::Wide>>(&[], &[&[]], &mut [])
        .is_err());
    compared
}

#[test]
fn forcing_the_greedy_tokens_gives_the_greedy_logits() {
    let mut r = Rng::new(33);
    let mut compared = 0;
    for i in 0..40 {
        let precision = [PrecisionKind::F32, PrecisionKind::W8A16][i % 2];
        let bytes = random_model(precision, &mut r);
        let words = aligned(&bytes);
        let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])
            .expect("a valid file");
        let lines = random_lines(&mut r, 4);
        compared += match precision {
            PrecisionKind::W8A16 => check::<W8A16>(&file, &lines, &mut r),
            _ => check::<F32>(&file, &lines, &mut r),
        };
    }
    assert!(compared >= 80, "only {compared} lines compared");
}
