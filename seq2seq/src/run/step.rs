//! One decoder step over lanes in lockstep: the decoder stacks, attention (before or
//! after them), the attentional vector and the logits.

use attention_core::{AttnScratch, Mask};
use heapless::Vec as HVec;
use rnn_core::CellScratch;
use s2s_kernels::part::Part as _;
use s2s_kernels::{Fmt, Marks, Phase, Precision};

use super::encode::Layout;
use super::lane::{b, batch_linear, cell_states, Lane};
use super::observe::{with_marks, Observer, Probe, Values};
use crate::desc::{Activation, Ordering, Part};
use crate::net::Net;
use crate::Error;

/// One decoder step of every unfinished lane from its last token `y` and its decoder
/// state: the lane's logits are left in its logits buffer (and its attention weights,
/// context and attentional vector in theirs); the observers see the step's probes.
///
/// Out of line (one call per step): its locals are on the stack only while it runs, not
/// under the encoder's frames (see [`super::encode::encode_lanes`]).
#[inline(never)]
pub(super) fn step_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    lanes: &mut [Lane<'_, P>],
    lay: &Layout,
    obs: &mut [O],
) -> Result<(), Error> {
    let d = &net.desc;
    let (mem_buf, keys_buf, top_state) = (lay.mem_buf, lay.keys_buf, lay.top_state);
    let h_max = d.enc_hidden.max(d.dec_hidden);
    let hd = d.dec_hidden;
    let (_, dec_cells) = cell_states(d);
    let fmt_memory = d.memory_fmt();
    let feed = d.extras.input_feed;
    {
        // (The lanes run in lockstep: every observer sees each lane's attention.)
        for lane in lanes.iter_mut().filter(|l| !l.done) {
            let y = lane.y as usize;
            net.dec_emb.embed(y, lane.act[b::DEC_EMB])?;
            if d.attention.ordering.context_first() {
                with_marks!(P, O, obs, |m| attend_lane(
                    net, lane, mem_buf, keys_buf, top_state, m
                )?);
            }
        }
        // The decoder stack: layer 0 reads the embedding (and the context), each
        // further layer the state below it.
        for (l, cell) in net.decoder.iter().enumerate() {
            let mut parts: HVec<[&[P::Act]; 2], L> = HVec::new();
            let mut hs: HVec<&mut [P::Act], L> = HVec::new();
            let mut cs: HVec<&mut [P::Act], L> = HVec::new();
            let mut ss: HVec<CellScratch<'_, P>, L> = HVec::new();
            for lane in lanes.iter_mut().filter(|l| !l.done) {
                let Lane { act, wide, .. } = lane;
                let [_, _, _, _, _, _, _, cell_act, dec_state, dec_emb, context, _, _, attentional, ..] =
                    act;
                // (LSTM) the layers' cell states, then their states.
                let (cells, states) = dec_state.cut_mut(dec_cells, "decoder states")?;
                let (below, here) = states.cut_mut(l * hd, "decoder states")?;
                let _ = cs.push(cells.get_mut(l * hd..(l + 1) * hd).unwrap_or(&mut []));
                let x: [&[P::Act]; 2] = if l > 0 {
                    [below.part((l - 1) * hd.., "decoder states")?, &[]]
                } else if d.attention.ordering.context_first() {
                    [dec_emb, context]
                } else if feed {
                    [dec_emb, attentional]
                } else {
                    [dec_emb, &[]]
                };
                let _ = parts.push(x);
                let _ = hs.push(here.part_mut(..hd, "decoder state")?);
                let _ = ss.push(CellScratch::with_hidden(
                    h_max,
                    &mut wide[b::CELL_WIDE][..],
                    cell_act,
                )?);
            }
            let nparts = if l == 0 && (d.attention.ordering.context_first() || feed) {
                2
            } else {
                1
            };
            let mut xs: HVec<&[&[P::Act]], L> = HVec::new();
            for x in parts.iter() {
                let _ = xs.push(&x[..nparts]);
            }
            let mut sr: HVec<&mut CellScratch<'_, P>, L> = ss.iter_mut().collect();
            with_marks!(P, O, obs, |m| cell
                .step_batch::<L>(&xs, &mut hs, &mut cs, &mut sr, m)?);
        }
        for (lane, o) in lanes
            .iter_mut()
            .zip(obs.iter_mut())
            .filter(|(l, _)| !l.done)
        {
            if d.attention.ordering == Ordering::Luong {
                with_marks!(P, O, core::slice::from_mut(o), |m| attend_lane(
                    net, lane, mem_buf, keys_buf, top_state, m
                )?);
            }
            let state = &lane.act[b::DEC_STATE];
            let top = state.part(top_state.., "decoder states")?;
            o.probe(Probe::DecoderState, Values::Act(top, Fmt::Q15));
            if d.cells.dec.is_lstm() {
                let cells = state.part(..dec_cells, "decoder cell states")?;
                o.probe(Probe::DecoderCells, Values::Act(cells, d.cells.fmt_dec));
            }
            if net.attention.is_some() {
                // A monotonic step scores the positions from the last one attended up
                // to the one it attends: that one's energy; a local step its window's.
                let scored = match d.attention.ordering {
                    Ordering::Monotonic if cfg!(feature = "monotonic") => {
                        let end = lane.at.saturating_add(1).min(lane.t);
                        lane.at.min(end)..end
                    }
                    _ if cfg!(feature = "local") && d.attention.local() => {
                        0..local_reach(net, lane).len()
                    }
                    _ => 0..lane.t,
                };
                let scores = lane.wide[b::SCORES].part(scored, "attention scores")?;
                o.probe(Probe::Scores, Values::Wide(scores));
                o.probe(
                    Probe::Context,
                    Values::Act(&lane.act[b::CONTEXT][..], fmt_memory),
                );
            }
        }
        if let Some(a) = &net.attentional {
            let c = a.rows();
            let parts = part_bufs(d.att_parts(), top_state)?;
            batch_linear::<P, L>(lanes, a, &parts, b::PROJ, c)?;
            for (lane, o) in lanes
                .iter_mut()
                .zip(obs.iter_mut())
                .filter(|(l, _)| !l.done)
            {
                let Lane { act, wide, .. } = lane;
                let (f, zero) = (d.attentional_fmt(), P::Wide::default());
                for (v, &w) in act[b::ATTENTIONAL].iter_mut().zip(wide[b::PROJ].iter()) {
                    *v = match d.extras.att_act {
                        Activation::Tanh => P::tanh(w),
                        Activation::Relu if w < zero => P::Act::default(),
                        Activation::Relu | Activation::Identity => P::narrow(w, f),
                    };
                }
                o.probe(Probe::Attentional, Values::Act(&act[b::ATTENTIONAL][..], f));
            }
        }
        let parts = part_bufs(d.out_parts(), top_state)?;
        with_marks!(P, O, obs, |m| m.mark(Phase::Output));
        batch_linear::<P, L>(lanes, &net.out, &parts, b::LOGITS, d.tgt_vocab)?;
        with_marks!(P, O, obs, |m| m.mark(Phase::Rest));
    }
    Ok(())
}

/// Where each of `parts` is: `(buffer, start)`, read to the buffer's end.
fn part_bufs(
    parts: impl Iterator<Item = Part>,
    top_state: usize,
) -> Result<HVec<(usize, usize), 4>, Error> {
    let mut bufs = HVec::new();
    for p in parts {
        let buf = match p {
            Part::State => (b::DEC_STATE, top_state),
            Part::Context => (b::CONTEXT, 0),
            Part::Embedding => (b::DEC_EMB, 0),
            Part::Attentional => (b::ATTENTIONAL, 0),
        };
        // (Not `collect`, which panics when the parts overflow the vector.)
        bufs.push(buf)
            .map_err(|_| Error::Inconsistent("more layer parts than a layer reads"))?;
    }
    Ok(bufs)
}

/// What attention reads and writes of one lane over its `t` positions: the memory and
/// keys (in the buffers `mem_buf` and `keys_buf`), the query (the top decoder state,
/// from `top_state`), the context, the weights and the score's scratch.
pub(super) struct LaneAttention<'l, P: Precision> {
    pub(super) mem: &'l [P::Act],
    pub(super) key: &'l [P::Act],
    pub(super) query: &'l [P::Act],
    pub(super) context: &'l mut [P::Act],
    pub(super) weights: &'l mut [P::Act],
    pub(super) scratch: AttnScratch<'l, P>,
}

/// The lane's [`LaneAttention`] for memory rows of `m` and keys of `k` values.
#[inline(always)]
pub(super) fn lane_attention<'l, P: Precision>(
    lane: &'l mut Lane<'_, P>,
    (mem_buf, keys_buf, top_state): (usize, usize, usize),
    (m, k): (usize, usize),
) -> Result<LaneAttention<'l, P>, Error> {
    let t = lane.t;
    let Lane { act, wide, .. } = lane;
    let [_, enc_a, enc_b, memory, keys, _, _, _, dec_state, _, context, weights, tanh, ..] = act;
    let pick = |i: usize| -> &'l [P::Act] {
        match i {
            b::ENC_A => enc_a,
            b::ENC_B => enc_b,
            b::MEMORY => memory,
            _ => keys,
        }
    };
    let [.., scores, query, _] = wide;
    Ok(LaneAttention {
        mem: pick(mem_buf).part(..t * m, "memory")?,
        key: pick(keys_buf).part(..t * k, "attention keys")?,
        query: dec_state.part(top_state.., "decoder states")?,
        context,
        weights: weights.part_mut(..t, "attention weights")?,
        scratch: AttnScratch {
            scores,
            query,
            tanh,
        },
    })
}

/// Scores, weights and context of one lane with its top decoder state as the query
/// ([`attend_monotonic`]'s for monotonic attention); their phases go to `marks`.
fn attend_lane<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    mem_buf: usize,
    keys_buf: usize,
    top_state: usize,
    marks: &mut impl Marks,
) -> Result<(), Error> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    let d = &net.desc;
    if cfg!(feature = "monotonic") && d.attention.ordering == Ordering::Monotonic {
        return attend_monotonic(net, lane, mem_buf, keys_buf, top_state, marks);
    }
    if cfg!(feature = "local") && d.attention.local() {
        return attend_local(net, lane, mem_buf, keys_buf, top_state, marks);
    }
    let mask = if d.attention.mask_padding {
        Mask::None
    } else {
        Mask::Valid(lane.valid)
    };
    let bufs = (mem_buf, keys_buf, top_state);
    let a = lane_attention(lane, bufs, (att.memory_dim(), att.key_dim()))?;
    let mut s = a.scratch;
    // `weights.len()` is `t`. Passing the slice's own length keeps the LM3S6965's
    // (opt-level "s") decoder step within 1 % of its count before these checks: the
    // register allocation of the inlined additive-score loop is sensitive to what stays
    // live across it (with `t` there, one value more, and a spill in the hottest loop).
    att.attend_marked(
        a.query,
        a.key,
        a.mem,
        a.weights.len(),
        mask,
        &mut s,
        a.weights,
        a.context,
        marks,
    )?;
    Ok(())
}

/// Hard monotonic attention of one lane with its top decoder state as the query: from
/// the position it attended last ([`Lane::at`]), the first that stops becomes the
/// context and the lane's position, its weight 1 and every other 0 (no position: a zero
/// context, and none is left); its phases go to `marks`. Out of line, so that the other
/// orderings' code is what it was.
#[inline(never)]
fn attend_monotonic<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    mem_buf: usize,
    keys_buf: usize,
    top_state: usize,
    marks: &mut impl Marks,
) -> Result<(), Error> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    // A streamed source's step was attended before it (`stream::attend_stream`).
    if keys_buf == b::ATTENDED {
        return Ok(());
    }
    let (at, n) = match net.desc.attention.mask_padding {
        true => (lane.at, lane.t),
        false => (lane.at, lane.valid),
    };
    let bufs = (mem_buf, keys_buf, top_state);
    let a = lane_attention(lane, bufs, (att.memory_dim(), att.key_dim()))?;
    let (weights, mut s) = (a.weights, a.scratch);
    let w = usize::from(net.desc.attention.chunk);
    let from = clear_weight::<P>(weights, at, w);
    let scan = (from, n, w);
    let stop = att.monotonic_marked(
        a.query, a.key, a.mem, scan, &mut s, weights, a.context, marks,
    )?;
    lane.at = stop.unwrap_or(n);
    Ok(())
}

/// The positions a local attention attends in `lane` (padding counts when the model
/// attends it), and how many that is: local-m's window centred on the step's index
/// (the outputs written, [`Lane::n`]), local-p's on the centre its step predicted
/// ([`Lane::at`]).
#[inline(always)]
pub(super) fn local_reach<P: Precision>(
    net: &Net<'_, P>,
    lane: &Lane<'_, P>,
) -> core::ops::Range<usize> {
    let n = local_positions(net, lane);
    let centre = match net.desc.attention.predicted() {
        true => lane.at,
        false => lane.n,
    };
    net.desc.attention.reach(centre, n)
}

/// The positions a local attention may attend in `lane`: all `t` when the model attends
/// padding, else the valid ones.
#[inline(always)]
fn local_positions<P: Precision>(net: &Net<'_, P>, lane: &Lane<'_, P>) -> usize {
    match net.desc.attention.mask_padding {
        true => lane.t,
        false => lane.valid,
    }
}

/// Local attention of one lane with its top decoder state as the query: the softmax
/// of the scores of the positions of its window ([`local_reach`]) and their context,
/// every other weight 0; its phases go to `marks`. Local-p first predicts the window's
/// centre ([`predict_centre`]) and weighs the softmax by its Gaussian before the
/// context. Out of line, so that the other orderings' code, and their stack, is what
/// it was.
#[inline(never)]
fn attend_local<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    mem_buf: usize,
    keys_buf: usize,
    top_state: usize,
    marks: &mut impl Marks,
) -> Result<(), Error> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    let (n, step) = (local_positions(net, lane), lane.n);
    let (m, k) = (att.memory_dim(), att.key_dim());
    let a = lane_attention(lane, (mem_buf, keys_buf, top_state), (m, k))?;
    let mut s = a.scratch;
    // Local-p: the predicted position, whose nearest one centres the window.
    let p = match net.predictor() {
        Some(predictor) => Some(predict_centre(predictor, a.query, n, &mut s)?),
        None => None,
    };
    let centre = p.map_or(step, P::nearest);
    let r = net.desc.attention.reach(centre, n);
    a.weights.fill(P::Act::default());
    let d = usize::from(net.desc.attention.window);
    let start = r.start;
    // (`r` ends at most at the lane's `t` positions, whose `t * k` keys and `t * m`
    // memory values are the slices: the products are within their lengths.)
    att.attend_weighed(
        a.query,
        a.key.part(r.start * k..r.end * k, "attention keys")?,
        a.mem.part(r.start * m..r.end * m, "memory")?,
        r.len(),
        Mask::None,
        (
            &mut s,
            a.weights.part_mut(r, "attention weights")?,
            a.context,
        ),
        // Local-p: the window's softmax weighed by the Gaussian about `p`.
        |weights| {
            if let Some(p) = p {
                for (i, w) in weights.iter_mut().enumerate() {
                    *w = P::gaussian(*w, start + i, p, d);
                }
            }
        },
        marks,
    )?;
    // (Where the step's probes find local-p's window, `local_reach`.)
    if p.is_some() {
        lane.at = centre;
    }
    Ok(())
}

/// Local-p's predicted position `p = n sigmoid(v_p . tanh(W_p q))` (biases inside the
/// layers) of the query `q` over `n` positions, in `s`'s query and tanh rows.
#[inline(always)]
fn predict_centre<P: Precision>(
    (w, v): &(s2s_kernels::Linear<'_, P>, s2s_kernels::Linear<'_, P>),
    query: &[P::Act],
    n: usize,
    s: &mut AttnScratch<'_, P>,
) -> Result<P::Wide, Error> {
    let size = w.rows();
    let wq = s.query.part_mut(..size, "projected query")?;
    w.apply(&[query], wq)?;
    let tv = s.tanh.part_mut(..size, "additive score row")?;
    for (t, &x) in tv.iter_mut().zip(wq.iter()) {
        *t = P::tanh(x);
    }
    let mut e = [P::Wide::default()];
    v.apply(&[tv], &mut e)?;
    Ok(P::position(P::sigmoid(e[0]), n))
}

/// Where a monotonic step's scan starts, `at` ([`Lane::at`]), with the weights the
/// previous step wrote cleared: those of its chunk of `w` positions ending at `at` (not
/// the whole row: all of it at the first step).
#[inline(always)]
pub(super) fn clear_weight<P: Precision>(weights: &mut [P::Act], at: usize, w: usize) -> usize {
    match at {
        Lane::<P>::UNSTARTED => {
            weights.fill(P::Act::default());
            0
        }
        at => {
            let end = at.saturating_add(1).min(weights.len());
            if let Some(chunk) = weights.get_mut((at + 1).saturating_sub(w).min(end)..end) {
                chunk.fill(P::Act::default());
            }
            at
        }
    }
}
