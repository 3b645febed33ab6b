//! The runner's beam search ([`crate::beam`]): its workspace after the lanes', and the
//! single lane stepped from each hypothesis's saved state.

use s2s_kernels::part::Part as _;
use s2s_kernels::Precision;

use super::encode::{encode_lanes, Layout};
use super::lane::{b, Lane};
use super::observe::Observer;
use super::runner::Runner;
use super::step::step_lanes;
use crate::beam::{BeamPlan, BeamWork, Hypothesis, Search, Stepper, MAX_WIDTH};
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
        if !cfg!(feature = "beam") {
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
        let needed = plan.bytes().saturating_add(bp.bytes());
        let available = arena.len().saturating_mul(4);
        if available < needed {
            return Err(Error::ArenaTooSmall { needed, available });
        }
        let (lanes, beam) = arena.cut_mut(plan.bytes() / 4, "arena")?;
        let mut runner = Self::with_lanes(net, lanes, positions)?;
        let mut rest = beam;
        runner.beam = Some(BeamWork::new(bp, &mut rest));
        Ok(runner)
    }

    /// The widest beam search this runner's workspace holds (0 without one).
    pub fn beam_width(&self) -> usize {
        self.beam.as_ref().map_or(0, |b| b.plan.width)
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
        decode_target(
            &self.net.tgt_vocab,
            self.net.separator,
            &out[..count],
            write,
        )?;
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
        self.beam.as_ref().map_or(0, |b| b.ranked())
    }

    /// Result `rank` of the last beam search, best first (see [`crate::beam`] for each
    /// variant's order).
    pub fn hypothesis(&self, rank: usize) -> Option<Hypothesis<'_, P::Wide>> {
        self.beam.as_ref()?.hypothesis(rank)
    }

    /// The encoder, then the search, over lane 0.
    fn run_beam<O: Observer<P>>(
        &mut self,
        search: Search,
        out: &mut [u16],
        obs: &mut O,
    ) -> Result<usize, Error> {
        // Without the feature no runner has a beam workspace: the search is left out.
        if !cfg!(feature = "beam") {
            return Err(Error::NotCompiled(Feature::Beam));
        }
        let d = &self.net.desc;
        let Some(work) = self.beam.as_mut() else {
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
        let lay = encode_lanes::<P, O, 1>(self.net, &self.plan, lanes, core::slice::from_mut(obs))?;
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

impl<P: Precision, O> LaneStepper<'_, '_, '_, '_, P, O> {
    /// The two parts of a saved state of `len` elements: the decoder states, and the
    /// attentional vector an input-fed model feeds to its next step (else none).
    fn state_lens(&self, len: usize) -> Result<(usize, usize), Error> {
        let n = self.lane.act[b::DEC_STATE].len();
        let fed = match self.net.desc.extras.input_feed {
            true => self.lane.act[b::ATTENTIONAL].len(),
            false => 0,
        };
        if len != n.saturating_add(fed) {
            return Err(Error::Inconsistent("beam: decoder state size"));
        }
        Ok((n, fed))
    }
}

impl<P: Precision, O: Observer<P>> Stepper<P> for LaneStepper<'_, '_, '_, '_, P, O> {
    fn save(&mut self, to: &mut [P::Act]) -> Result<(), Error> {
        let (n, fed) = self.state_lens(to.len())?;
        let (state, attentional) = to.cut_mut(n, "beam: saved state")?;
        let fed_from = self.lane.act[b::ATTENTIONAL].part(..fed, "attentional vector")?;
        state.fill_from(&self.lane.act[b::DEC_STATE][..], "beam: saved state")?;
        attentional.fill_from(fed_from, "beam: saved state")?;
        Ok(())
    }

    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error> {
        let (n, fed) = self.state_lens(from.len())?;
        let (state, attentional) = from.cut(n, "beam: saved state")?;
        self.lane.act[b::DEC_STATE].fill_from(state, "beam: saved state")?;
        let fed_to = self.lane.act[b::ATTENTIONAL].part_mut(..fed, "attentional vector")?;
        fed_to.fill_from(attentional, "beam: saved state")?;
        Ok(())
    }

    fn step(&mut self, token: u16) -> Result<&[P::Wide], Error> {
        (self.lane.y, self.lane.done) = (token, false);
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
}
