//! The [`Runner`]: a model bound to the workspace carved out of a caller's arena, its
//! sources loaded (tokenized lines or ids) and run to outputs, one line or a batch of
//! lines in lockstep.

use heapless::Vec as HVec;
use s2s_kernels::part::Part as _;
use s2s_kernels::Precision;

use super::greedy::{force_lanes, run_lanes};
use super::lane::Lane;
use super::observe::{ObsRef, Observer};
use crate::beam::BeamWork;
use crate::net::Net;
use crate::plan::Plan;
use crate::vocab::{decode_target, encode_source, Prefix};
use crate::Error;

/// A model bound to its workspace: runs sources to outputs. With `L` lanes it runs up
/// to `L` sources in lockstep, sharing every matrix product between them
/// ([`Linear::apply_batch`](s2s_kernels::Linear::apply_batch)); each lane's output is exactly what it would be alone.
/// The firmware uses one lane.
///
/// `B` is the number of beam-search workspaces the runner can hold, one per lane: `L`
/// by default; 0 for a runner that never beam-searches (its beam searches fail, as
/// those of a runner made without a beam workspace do), which is then smaller by the
/// workspace's description (236 bytes on a 32-bit target: a Cortex-M board without a
/// beam search keeps them off the stack it decodes on).
pub struct Runner<'n, 'a, 'w, P: Precision, const L: usize = 1, const B: usize = L> {
    pub(super) net: &'n Net<'a, P>,
    /// The source positions the workspace holds. The plan itself is not kept
    /// ([`Runner::plan`] makes it again): 156 bytes more of the holder, which on a
    /// Cortex-M board keeps the runner on the stack it decodes on.
    pub(super) positions: usize,
    pub(super) lanes: [Lane<'w, P>; L],
    /// The beam-search workspace of each lane ([`Runner::with_beam`],
    /// [`Runner::with_beam_lanes`]), `B` of them.
    pub(super) beams: [Option<BeamWork<'w, P>>; B],
}

impl<'n, 'a, 'w, P: Precision> Runner<'n, 'a, 'w, P> {
    /// Carves the workspace for sources of up to `positions` tokens out of `arena`;
    /// fails if the arena is smaller than [`Plan::bytes`].
    pub fn new(net: &'n Net<'a, P>, arena: &'w mut [u32], positions: usize) -> Result<Self, Error> {
        Self::with_lanes(net, arena, positions)
    }
}

impl<'n, 'a, 'w, P: Precision, const L: usize, const B: usize> Runner<'n, 'a, 'w, P, L, B> {
    /// Carves the workspace of `L` lanes for sources of up to `positions` tokens out of
    /// `arena`; fails if the arena is smaller than `L` times [`Plan::bytes`].
    pub fn with_lanes(
        net: &'n Net<'a, P>,
        arena: &'w mut [u32],
        positions: usize,
    ) -> Result<Self, Error> {
        let d = &net.desc;
        if d.src_pad_to > positions {
            return Err(Error::InputTooLong {
                len: d.src_pad_to,
                max: positions,
            });
        }
        let plan = Plan::new::<P>(d, positions);
        let needed = plan.bytes().saturating_mul(L);
        let available = arena.len().saturating_mul(4);
        if available < needed {
            return Err(Error::ArenaTooSmall { needed, available });
        }
        // The check above makes every carve succeed; one that did not would be a plan
        // whose sizes disagree with its own byte count, an error rather than a panic.
        let mut rest = arena;
        let mut carved = true;
        let lanes = core::array::from_fn(|_| {
            Lane::carve(&plan, &mut rest).unwrap_or_else(|| {
                carved = false;
                Lane::empty()
            })
        });
        if !carved {
            return Err(Error::ArenaTooSmall { needed, available });
        }
        Ok(Runner {
            net,
            positions,
            lanes,
            beams: core::array::from_fn(|_| None),
        })
    }

    /// The workspace plan of one lane: [`Plan::new`] of the model and the positions
    /// the runner was made for.
    pub fn plan(&self) -> Plan {
        Plan::new::<P>(&self.net.desc, self.positions)
    }

    /// Bytes of one lane's workspace ([`Plan::bytes`] of [`Runner::plan`]). Out of line:
    /// the plan it makes is on the stack only during the call, not in the caller's
    /// frame.
    #[inline(never)]
    pub fn plan_bytes(&self) -> usize {
        self.plan().bytes()
    }

    /// Tokenizes `line` after the prefix tokens `prefix` chooses ([`Prefix::NONE`]: the
    /// model's defaults; see [`encode_source`]), runs the model and writes the output
    /// tokens' text (joined by the model's separator) through `write`. Returns the
    /// number of output tokens.
    pub fn translate_line<E: From<Error>>(
        &mut self,
        line: &str,
        prefix: &Prefix,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
        write: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.load_line(line, prefix)?;
        let count = self.run_lanes(1, &mut [&mut *out], core::slice::from_mut(obs))?;
        let ids = out.part(..count, "output ids").map_err(Error::from)?;
        decode_target(&self.net.tgt_vocab, self.net.separator, ids, write)?;
        Ok(count)
    }

    /// Runs source ids (already tokenized, end token and padding included; `valid` is
    /// the unpadded length) and writes the output ids into `out`, which must hold the
    /// model's maximum number of steps. Returns the number of output ids.
    pub fn run(
        &mut self,
        src: &[u16],
        valid: usize,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
    ) -> Result<usize, Error> {
        self.load_ids(src, valid)?;
        self.run_lanes(1, &mut [out], core::slice::from_mut(obs))
    }

    /// Teacher forcing: runs up to `L` sources of ids (`sources[i]` is `(ids, valid)` as
    /// [`Runner::run`] takes them) with lane `i` fed `targets[i]` (target ids, without the
    /// start and end tokens) then the end token, whatever the model would choose;
    /// `obs[i]` sees each of lane `i`'s `targets[i].len() + 1` steps (the logits that
    /// score the token fed next). For the loss of a quantized model on known outputs
    /// (`s2s train --quantize`).
    pub fn force<O: Observer<P>>(
        &mut self,
        sources: &[(&[u16], usize)],
        targets: &[&[u16]],
        obs: &mut [O],
    ) -> Result<(), Error> {
        let k = sources.len();
        if k > L || targets.len() != k || obs.len() != k {
            return Err(Error::Inconsistent(
                "forced sources, targets and observers differ in number or exceed the lanes",
            ));
        }
        for (lane, &(src, valid)) in self.lanes.iter_mut().zip(sources) {
            lane.load(src, valid)?;
        }
        let lanes = self.lanes.part_mut(..k, "lanes")?;
        force_lanes::<P, O, L>(self.net, self.positions, lanes, targets, obs)
    }

    /// Puts source ids (end token and padding included, `valid` unpadded) into lane 0.
    pub(super) fn load_ids(&mut self, src: &[u16], valid: usize) -> Result<(), Error> {
        self.lanes[0].load(src, valid)
    }

    /// Tokenizes `line` after `prefix` into lane 0.
    pub(super) fn load_line(&mut self, line: &str, prefix: &Prefix) -> Result<(), Error> {
        tokenize(self.net, &mut self.lanes[0], line, prefix)
    }

    /// Tokenizes up to `k` of `lines`, line `i` after `prefixes[i]` (the model's
    /// defaults past its end), into the lanes in order: a line that cannot be tokenized
    /// gets its error and leaves its lane to the next line. Returns each line's lane (or
    /// error) and the lines in lane order.
    pub(super) fn load_lines(
        &mut self,
        lines: &[&str],
        prefixes: &[Prefix],
        k: usize,
    ) -> (HVec<Result<usize, Error>, L>, HVec<usize, L>) {
        let mut results: HVec<Result<usize, Error>, L> = HVec::new();
        let mut order: HVec<usize, L> = HVec::new();
        for (i, line) in lines.iter().take(k).enumerate() {
            let Some(lane) = self.lanes.get_mut(order.len()) else {
                break;
            };
            let prefix = prefixes.get(i).unwrap_or(&Prefix::NONE);
            match tokenize(self.net, lane, line, prefix) {
                Ok(()) => {
                    let _ = results.push(Ok(order.len()));
                    let _ = order.push(i);
                }
                Err(e) => {
                    let _ = results.push(Err(e));
                }
            }
        }
        (results, order)
    }

    /// Translates up to `L` lines at once: line `i` after the prefix `prefixes[i]` (the
    /// model's defaults past the end of `prefixes`: `&[]` for every line), `outs[i]`
    /// receives its output ids and `obs[i]` sees its steps. A line that cannot be
    /// tokenized gets its error without stopping the others. Returns each line's number
    /// of output ids.
    pub fn translate_batch<O: Observer<P>>(
        &mut self,
        lines: &[&str],
        prefixes: &[Prefix],
        outs: &mut [&mut [u16]],
        obs: &mut [O],
    ) -> HVec<Result<usize, Error>, L> {
        let k = lines.len().min(L).min(outs.len()).min(obs.len());
        // Tokenize; lanes whose line fails are left out of the run.
        let (mut results, order) = self.load_lines(lines, prefixes, k);
        // Gather the outputs and observers of the lines that run, in lane order.
        let mut run_outs: HVec<&mut [u16], L> = HVec::new();
        let mut run_obs: HVec<&mut O, L> = HVec::new();
        let mut next = 0;
        for (i, (o, b)) in outs.iter_mut().zip(obs.iter_mut()).enumerate().take(k) {
            if order.get(next) == Some(&i) {
                let _ = run_outs.push(&mut **o);
                let _ = run_obs.push(b);
                next += 1;
            }
        }
        let mut wrapped: HVec<ObsRef<'_, O>, L> = run_obs.into_iter().map(ObsRef).collect();
        match self.run_lanes(order.len(), &mut run_outs, &mut wrapped) {
            Ok(_) => {}
            Err(e) => {
                for &i in &order {
                    if let Some(r) = results.get_mut(i) {
                        *r = Err(e);
                    }
                }
                return results;
            }
        }
        for (lane, &i) in self.lanes.iter().zip(&order) {
            if let Some(r) = results.get_mut(i) {
                *r = Ok(lane.n);
            }
        }
        results
    }

    /// Runs the sources already in lanes `0..k` (their `t` and `valid` set) to the end,
    /// writing lane `i`'s output ids into `outs[i]`; returns lane 0's count.
    fn run_lanes<O: Observer<P>>(
        &mut self,
        k: usize,
        outs: &mut [&mut [u16]],
        obs: &mut [O],
    ) -> Result<usize, Error> {
        let lanes = self.lanes.part_mut(..k, "lanes")?;
        run_lanes::<P, O, L>(self.net, self.positions, lanes, outs, obs)?;
        Ok(self.lanes.first().map_or(0, |l| l.n))
    }
}

/// Tokenizes `line` after `prefix` into `lane`.
fn tokenize<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    line: &str,
    prefix: &Prefix,
) -> Result<(), Error> {
    let slots = net.slots();
    let (n, valid) = encode_source(
        &net.desc,
        &net.src_vocab,
        &slots,
        prefix,
        line,
        lane.src_ids,
    )?;
    (lane.t, lane.valid) = (n, valid);
    Ok(())
}
