//! The runner's beam search ([`crate::beam`]): its workspace after the lanes', the
//! single lane stepped from each hypothesis's saved state, and searches side by side
//! over the lanes ([`Runner::beam_batch`]).

use heapless::Vec as HVec;
use s2s_kernels::part::Part as _;
use s2s_kernels::Precision;

use super::encode::{encode_lanes, Layout};
use super::lane::{b, Lane};
use super::observe::{ObsRef, Observer};
use super::runner::Runner;
use super::step::step_lanes;
use crate::beam::{BeamPlan, BeamView, BeamWork, Hypothesis, Search, Stepper, MAX_WIDTH};
use crate::features::Feature;
use crate::net::Net;
use crate::plan::Plan;
use crate::vocab::{decode_target, Prefix};
use crate::Error;

impl<'n, 'a, 'w, P: Precision> Runner<'n, 'a, 'w, P> {
    /// Like [`Runner::new`], with the workspace of beam searches up to `width` wide
    /// after it: fails if the arena is smaller than [`Plan::bytes`] plus
    /// [`BeamPlan::bytes`], or if `width` is over [`crate::beam::MAX_WIDTH`].
    pub fn with_beam(
        net: &'n Net<'a, P>,
        arena: &'w mut [u32],
        positions: usize,
        width: usize,
    ) -> Result<Self, Error> {
        Self::with_beam_lanes(net, arena, positions, width)
    }
}

impl<'n, 'a, 'w, P: Precision, const L: usize, const B: usize> Runner<'n, 'a, 'w, P, L, B> {
    /// Like [`Runner::with_lanes`], with a workspace of beam searches up to `width`
    /// wide for every lane ([`Runner::beam_batch`]): fails if the arena is smaller
    /// than `L` times [`Plan::bytes`] plus [`BeamPlan::bytes`], if `width` is over
    /// [`crate::beam::MAX_WIDTH`], or unless the runner holds a beam workspace per lane
    /// (`B == L`, the default).
    pub fn with_beam_lanes(
        net: &'n Net<'a, P>,
        arena: &'w mut [u32],
        positions: usize,
        width: usize,
    ) -> Result<Self, Error> {
        if !cfg!(feature = "beam") || B != L {
            return Err(Error::NotCompiled(Feature::Beam));
        }
        if width == 0 || width > MAX_WIDTH {
            return Err(Error::BeamTooWide {
                width,
                max: MAX_WIDTH,
            });
        }
        let bp = BeamPlan::new::<P>(&net.desc, width);
        let plan = Plan::new::<P>(&net.desc, positions);
        let lanes_bytes = plan.bytes().saturating_mul(L);
        let needed = plan.bytes().saturating_add(bp.bytes()).saturating_mul(L);
        let available = arena.len().saturating_mul(4);
        if available < needed {
            return Err(Error::ArenaTooSmall { needed, available });
        }
        let (lanes, beam) = arena.cut_mut(lanes_bytes / 4, "arena")?;
        let mut runner = Self::with_lanes(net, lanes, positions)?;
        let mut rest = beam;
        runner.beams = core::array::from_fn(|_| Some(BeamWork::new(bp, &mut rest)));
        Ok(runner)
    }

    /// The widest beam search this runner's workspace holds (0 without one).
    pub fn beam_width(&self) -> usize {
        self.beams
            .first()
            .and_then(Option::as_ref)
            .map_or(0, |b| b.plan.width)
    }

    /// Results of the last beam search of lane `lane` ([`Runner::beam_batch`]): how
    /// many.
    pub fn hypotheses_of(&self, lane: usize) -> usize {
        let beam = self.beams.get(lane).and_then(Option::as_ref);
        beam.map_or(0, |b| b.ranked())
    }

    /// Result `rank` of the last beam search of lane `lane`, best first.
    pub fn hypothesis_of(&self, lane: usize, rank: usize) -> Option<Hypothesis<'_, P::Wide>> {
        self.beams.get(lane)?.as_ref()?.hypothesis(rank)
    }

    /// Beam-searches up to `L` lines side by side with `search`, line `i` after
    /// `prefixes[i]` (the model's defaults past its end), each line's search in its own
    /// lane and workspace: every step expands the first live hypothesis of
    /// each line in one decoder step over the lanes (sharing every matrix product),
    /// then the second, up to the width, so a search of width `K` costs about `K`
    /// greedy steps per step. Each line's results are what [`Runner::beam_line`] gives
    /// it alone, read with [`Runner::hypothesis_of`] and the line's lane (its place
    /// among the lines that could be tokenized), which is what this returns for it.
    /// A line that cannot be tokenized gets its error without stopping the others.
    pub fn beam_batch<O: Observer<P>>(
        &mut self,
        lines: &[&str],
        prefixes: &[Prefix],
        search: Search,
        obs: &mut [O],
    ) -> HVec<Result<usize, Error>, L> {
        let k = lines.len().min(L).min(obs.len());
        let (mut results, order) = self.load_lines(lines, prefixes, k);
        let mut run_obs: HVec<ObsRef<'_, O>, L> = obs
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| order.contains(i))
            .map(|(_, o)| ObsRef(o))
            .collect();
        if let Err(e) = self.run_beams(order.len(), search, &mut run_obs) {
            for &i in &order {
                if let Some(r) = results.get_mut(i) {
                    *r = Err(e);
                }
            }
        }
        results
    }

    /// The encoder over lanes `0..n`, then their searches side by side
    /// ([`Runner::beam_batch`]).
    fn run_beams<O: Observer<P>>(
        &mut self,
        n: usize,
        search: Search,
        obs: &mut [O],
    ) -> Result<(), Error> {
        greedy_only(self.net)?;
        if !cfg!(feature = "beam") {
            return Err(Error::NotCompiled(Feature::Beam));
        }
        let (net, d) = (self.net, &self.net.desc);
        let lanes = self.lanes.part_mut(..n, "lanes")?;
        let obs = obs.part_mut(..n, "observers")?;
        let lay = encode_lanes::<P, O, L>(net, self.positions, lanes, obs)?;
        let mut going = [false; L];
        for (j, lane) in lanes.iter_mut().enumerate() {
            let work = beam_of(&mut self.beams, j)?;
            going[j] = work.begin(d, search)?;
            save_state(net, lane, work.state_mut(0)?)?;
        }
        while going.contains(&true) {
            // Rounds: the next live hypothesis of every line, stepped together.
            loop {
                let mut pending = [None; L];
                for (j, lane) in lanes.iter_mut().enumerate() {
                    lane.done = true;
                    let work = beam_of(&mut self.beams, j)?;
                    if !going[j] {
                        continue;
                    }
                    if let Some((i, y)) = work.next_live()? {
                        restore_state(net, lane, work.state(i)?)?;
                        // (The step's index places a local attention's window.)
                        (lane.y, lane.n, lane.done) = (y, work.step_counts().0, false);
                        pending[j] = Some(i);
                    }
                }
                if pending.iter().all(Option::is_none) {
                    break;
                }
                step_lanes::<P, O, L>(net, lanes, &lay, obs)?;
                for (j, lane) in lanes.iter_mut().enumerate() {
                    let Some(i) = pending[j] else { continue };
                    let work = beam_of(&mut self.beams, j)?;
                    work.expand(d, i, &lane.wide[b::LOGITS][..])?;
                    save_state(net, lane, work.expanded_state(i)?)?;
                }
            }
            for (j, o) in obs.iter_mut().enumerate() {
                if going[j] {
                    let work = beam_of(&mut self.beams, j)?;
                    let (index, expanded) = work.step_counts();
                    o.searched(index, expanded);
                    going[j] = work.end_step(d)?;
                    o.beam(&work.view());
                }
            }
        }
        Ok(())
    }

    /// Tokenizes `line` after `prefix` and beam-searches it with `search` (see [`crate::beam`]),
    /// writing the best hypothesis's ids into `out` and its text through `write`, like
    /// [`Runner::translate_line`]. All results stay readable through
    /// [`Runner::hypothesis`] until the next run.
    pub fn beam_line<E: From<Error>>(
        &mut self,
        line: &str,
        prefix: &Prefix,
        search: Search,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
        write: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.load_line(line, prefix)?;
        let count = self.run_beam(search, out, obs)?;
        // (Checked: `run_beam` out of line, the bound is not known here.)
        let ids = out.part(..count, "output ids").map_err(Error::Shape)?;
        decode_target(&self.net.tgt_vocab, self.net.separator, ids, write)?;
        Ok(count)
    }

    /// Beam-searches source ids (as [`Runner::run`] takes them) with `search`, writing
    /// the best hypothesis's ids into `out`; returns their number.
    pub fn beam(
        &mut self,
        src: &[u16],
        valid: usize,
        search: Search,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
    ) -> Result<usize, Error> {
        self.load_ids(src, valid)?;
        self.run_beam(search, out, obs)
    }

    /// Results of the last beam search: how many.
    pub fn hypotheses(&self) -> usize {
        self.hypotheses_of(0)
    }

    /// Result `rank` of the last beam search, best first (see [`crate::beam`] for each
    /// variant's order).
    pub fn hypothesis(&self, rank: usize) -> Option<Hypothesis<'_, P::Wide>> {
        self.hypothesis_of(0, rank)
    }

    /// The encoder, then the search, over lane 0.
    fn run_beam<O: Observer<P>>(
        &mut self,
        search: Search,
        out: &mut [u16],
        obs: &mut O,
    ) -> Result<usize, Error> {
        greedy_only(self.net)?;
        // Without the feature no runner has a beam workspace: the search is left out.
        if !cfg!(feature = "beam") {
            return Err(Error::NotCompiled(Feature::Beam));
        }
        let d = &self.net.desc;
        let Some(work) = self.beams.first_mut().and_then(Option::as_mut) else {
            return Err(Error::BeamTooWide {
                width: search.width,
                max: 0,
            });
        };
        if out.len() < d.max_steps {
            return Err(Error::OutputTooSmall {
                needed: d.max_steps,
                available: out.len(),
            });
        }
        let lanes = &mut self.lanes[..];
        let lay =
            encode_lanes::<P, O, 1>(self.net, self.positions, lanes, core::slice::from_mut(obs))?;
        let mut stepper = LaneStepper {
            net: self.net,
            lane: &mut lanes[0],
            lay: &lay,
            obs,
        };
        work.search(d, search, &mut stepper)?;
        let n = match work.hypothesis(0) {
            Some(h) => {
                let n = h.tokens.len();
                out.part_mut(..n, "output ids")?
                    .fill_from(h.tokens, "output ids")?;
                n
            }
            None => 0,
        };
        Ok(n)
    }
}

/// The single lane of a beam search, stepped from saved states.
struct LaneStepper<'s, 'n, 'a, 'w, P: Precision, O> {
    net: &'n Net<'a, P>,
    lane: &'s mut Lane<'w, P>,
    lay: &'s Layout,
    obs: &'s mut O,
}

/// Refuses a beam search of a model that decodes greedily only: a hypothesis's state
/// is its decoder state, and the position a monotonic attention has reached is not part
/// of it.
fn greedy_only<P: Precision>(net: &Net<'_, P>) -> Result<(), Error> {
    match net.desc.attention.ordering.greedy_only() {
        true if cfg!(feature = "monotonic") => Err(Error::GreedyOnly),
        _ => Ok(()),
    }
}

/// Lane `j`'s beam workspace (every lane has one in a runner made by
/// [`Runner::with_beam_lanes`]).
fn beam_of<'b, 'w, P: Precision>(
    beams: &'b mut [Option<BeamWork<'w, P>>],
    j: usize,
) -> Result<&'b mut BeamWork<'w, P>, Error> {
    match beams.get_mut(j) {
        Some(Some(work)) => Ok(work),
        _ => Err(Error::BeamTooWide { width: 1, max: 0 }),
    }
}

/// The two parts of a saved state of `len` elements: the decoder states, and the
/// attentional vector an input-fed model feeds to its next step (else none).
fn state_lens<P: Precision>(
    net: &Net<'_, P>,
    lane: &Lane<'_, P>,
    len: usize,
) -> Result<(usize, usize), Error> {
    let n = lane.act[b::DEC_STATE].len();
    let fed = match net.desc.extras.input_feed {
        true => lane.act[b::ATTENTIONAL].len(),
        false => 0,
    };
    if len != n.saturating_add(fed) {
        return Err(Error::Inconsistent("beam: decoder state size"));
    }
    Ok((n, fed))
}

/// Copies `lane`'s decoder state into `to`.
fn save_state<P: Precision>(
    net: &Net<'_, P>,
    lane: &Lane<'_, P>,
    to: &mut [P::Act],
) -> Result<(), Error> {
    let (n, fed) = state_lens(net, lane, to.len())?;
    let (state, attentional) = to.cut_mut(n, "beam: saved state")?;
    let fed_from = lane.act[b::ATTENTIONAL].part(..fed, "attentional vector")?;
    state.fill_from(&lane.act[b::DEC_STATE][..], "beam: saved state")?;
    attentional.fill_from(fed_from, "beam: saved state")?;
    Ok(())
}

/// Makes `from` `lane`'s decoder state.
fn restore_state<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    from: &[P::Act],
) -> Result<(), Error> {
    let (n, fed) = state_lens(net, lane, from.len())?;
    let (state, attentional) = from.cut(n, "beam: saved state")?;
    lane.act[b::DEC_STATE].fill_from(state, "beam: saved state")?;
    let fed_to = lane.act[b::ATTENTIONAL].part_mut(..fed, "attentional vector")?;
    fed_to.fill_from(attentional, "beam: saved state")?;
    Ok(())
}

impl<P: Precision, O: Observer<P>> Stepper<P> for LaneStepper<'_, '_, '_, '_, P, O> {
    fn save(&mut self, to: &mut [P::Act]) -> Result<(), Error> {
        save_state(self.net, self.lane, to)
    }

    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error> {
        restore_state(self.net, self.lane, from)
    }

    fn step(&mut self, token: u16, index: usize) -> Result<&[P::Wide], Error> {
        (self.lane.y, self.lane.n, self.lane.done) = (token, index, false);
        step_lanes::<P, O, 1>(
            self.net,
            core::slice::from_mut(self.lane),
            self.lay,
            core::slice::from_mut(self.obs),
        )?;
        Ok(&self.lane.wide[b::LOGITS][..])
    }

    fn searched(&mut self, index: usize, expanded: usize) {
        self.obs.searched(index, expanded);
    }

    fn beamed(&mut self, beam: &BeamView<'_, P::Wide>) {
        self.obs.beam(beam);
    }
}
