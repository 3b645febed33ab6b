//! Greedy decoding over lanes in lockstep: the encoder pass, then one decoder step at
//! a time, each lane taking its most probable token, until every lane has ended or
//! the step cap.

use s2s_kernels::float::{argmax, argmax_but};
use s2s_kernels::part::Part as _;
use s2s_kernels::Precision;

use super::encode::encode_lanes;
use super::lane::{b, Lane};
use super::observe::{Observer, Step};
use super::step::step_lanes;
use crate::desc::ModelDesc;
use crate::net::Net;
use crate::Error;

/// The encoder, bridge and greedy decoder over lanes in lockstep.
pub(super) fn run_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    positions: usize,
    lanes: &mut [Lane<'_, P>],
    outs: &mut [&mut [u16]],
    obs: &mut [O],
) -> Result<(), Error> {
    let d = &net.desc;
    if let Some(out) = outs.iter().find(|o| o.len() < d.max_steps) {
        return Err(Error::OutputTooSmall {
            needed: d.max_steps,
            available: out.len(),
        });
    }
    let lay = encode_lanes::<P, O, L>(net, positions, lanes, obs)?;
    // Greedy decoding, all unfinished lanes one step at a time.
    for index in 0..d.max_steps {
        if lanes.iter().all(|l| l.done) {
            break;
        }
        step_lanes::<P, O, L>(net, lanes, &lay, obs)?;
        for ((lane, o), out) in lanes
            .iter_mut()
            .zip(obs.iter_mut())
            .zip(outs.iter_mut())
            .filter(|((l, _), _)| !l.done)
        {
            let logits = &lane.wide[b::LOGITS][..];
            let y = choose(d, index, logits);
            let weights = match net.attention {
                Some(_) => Some(lane.act[b::WEIGHTS].part(..lane.t, "attention weights")?),
                None => None,
            };
            o.step(&Step {
                index,
                token: y,
                weights,
                logits,
            });
            lane.y = y;
            if y == d.tgt_end {
                lane.done = true;
            } else {
                *out.item_mut(lane.n, "output ids")? = y;
                lane.n += 1;
            }
        }
    }
    Ok(())
}

/// The greedy choice at step `index` from its logits: the most probable token, where
/// before `min_steps` the end token is not a choice.
#[inline(always)]
pub(super) fn choose<W: PartialOrd + Copy>(d: &ModelDesc, index: usize, logits: &[W]) -> u16 {
    match index < d.extras.min_steps {
        true => argmax_but(logits, usize::from(d.tgt_end)),
        false => argmax(logits),
    }
    .unwrap_or(0) as u16
}

/// The encoder, bridge and decoder over lanes in lockstep, lane `i` fed `targets[i]`
/// then the end token whatever its logits say (teacher forcing): the observers see
/// every step (its logits, attention and probes) with the token fed after it. Nothing
/// is written and `max_steps` does not cap the steps. (Apart from [`run_lanes`], so
/// that a build that never forces, such as the firmware's, compiles none of it.)
pub(super) fn force_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    positions: usize,
    lanes: &mut [Lane<'_, P>],
    targets: &[&[u16]],
    obs: &mut [O],
) -> Result<(), Error> {
    let d = &net.desc;
    if targets.len() < lanes.len() {
        return Err(Error::Inconsistent("fewer forced targets than lanes"));
    }
    let steps = targets.iter().map(|t| t.len() + 1).max().unwrap_or(0);
    let lay = encode_lanes::<P, O, L>(net, positions, lanes, obs)?;
    for index in 0..steps {
        if lanes.iter().all(|l| l.done) {
            break;
        }
        step_lanes::<P, O, L>(net, lanes, &lay, obs)?;
        for ((lane, o), target) in lanes
            .iter_mut()
            .zip(obs.iter_mut())
            .zip(targets)
            .filter(|((l, _), _)| !l.done)
        {
            let y = target.get(index).copied().unwrap_or(d.tgt_end);
            let weights = match net.attention {
                Some(_) => Some(lane.act[b::WEIGHTS].part(..lane.t, "attention weights")?),
                None => None,
            };
            o.step(&Step {
                index,
                token: y,
                weights,
                logits: &lane.wide[b::LOGITS][..],
            });
            lane.y = y;
            lane.done = y == d.tgt_end;
            lane.n += usize::from(!lane.done);
        }
    }
    Ok(())
}
