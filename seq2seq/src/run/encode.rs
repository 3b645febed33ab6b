//! The encoder pass over lanes in lockstep: the sources checked, the encoder stacks,
//! the memory and attention keys, and the decoder's initial states (bridges, means).

use heapless::Vec as HVec;
use rnn_core::{fill_masked, CellScratch, SeqInput};
use s2s_kernels::part::Part as _;
use s2s_kernels::{Fmt, Job, Linear, Phase, Precision};

use super::lane::{b, cell_states, two_bufs, Lane, LaneBufs};
use super::observe::{with_marks, Observer, Probe, Values};
use crate::desc::{CellKind, Init};
use crate::features::Feature;
use crate::net::Net;
use crate::Error;

/// Source embeddings computed on demand, one row per position.
struct Embedded<'a, 'b, P: Precision> {
    table: &'b Linear<'a, P>,
    ids: &'b [u16],
}

impl<P: Precision> SeqInput<P> for Embedded<'_, '_, P> {
    fn dim(&self) -> usize {
        self.table.cols()
    }
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn at<'s>(&'s self, p: usize, buf: &'s mut [P::Act]) -> Result<&'s [P::Act], rnn_core::Error> {
        let id = self.ids.get(p).copied().unwrap_or(u16::MAX);
        let buf = buf.part_mut(..self.table.cols(), "embedding row")?;
        self.table.embed(id as usize, buf)?;
        Ok(buf)
    }
}

/// Where the encoder pass left what the decoder steps read.
pub(super) struct Layout {
    /// Buffers of the memory (values) and of the attention keys.
    pub(super) mem_buf: usize,
    pub(super) keys_buf: usize,
    /// Where the top decoder layer's state starts in the decoder's state buffer.
    pub(super) top_state: usize,
}

/// Checks the sources in `lanes`, runs the encoder over them, computes the memory, the
/// attention keys and the decoder's initial states, and readies every lane for its
/// first decoder step (the start token, nothing written, not done).
///
/// Out of line, as [`super::step::step_lanes`]: the caller's frame (a whole greedy
/// decode, or a search) then holds neither its locals nor the decoder step's, each of
/// which is on the stack only while it runs (on the micro:bit the deepest decode is 56
/// bytes shallower and the runtime 2 KB smaller; one call per line).
#[inline(never)]
pub(super) fn encode_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    positions: usize,
    lanes: &mut [Lane<'_, P>],
    obs: &mut [O],
) -> Result<Layout, Error> {
    let d = &net.desc;
    for lane in lanes.iter_mut() {
        let (t, valid) = (lane.t, lane.valid);
        if t == 0 || valid == 0 || valid > t {
            return Err(Error::EmptyInput);
        }
        if t > positions {
            return Err(Error::InputTooLong {
                len: t,
                max: positions,
            });
        }
        if let Some(&bad) = lane
            .src_ids
            .part(..t, "source ids")?
            .iter()
            .find(|&&id| id as usize >= d.src_vocab)
        {
            return Err(Error::TokenOutOfRange {
                what: "source id",
                id: bad as u32,
                vocab: d.src_vocab,
            });
        }
        (lane.y, lane.n, lane.done, lane.at) = (d.tgt_start, 0, false, Lane::<P>::UNSTARTED);
    }
    let h_max = d.enc_hidden.max(d.dec_hidden);
    let de = d.enc_output();
    let hd = d.dec_hidden;
    let (enc_cells, dec_cells) = cell_states(d);

    // Encoder: all lanes through the stack together.
    let top = {
        let mut inputs: HVec<Embedded<'_, '_, P>, L> = HVec::new();
        let mut rest: HVec<(LaneBufs<'_, '_, P>, usize), L> = HVec::new();
        for lane in lanes.iter_mut() {
            let Lane {
                src_ids,
                act,
                wide,
                t,
                valid,
                ..
            } = lane;
            let _ = inputs.push(Embedded {
                table: &net.src_emb,
                ids: src_ids.part(..*t, "source ids")?,
            });
            // A masked encoder steps over the real positions only; the padded ones keep
            // the state and get their outputs below.
            let len = if d.cells.enc_mask.is_some() {
                *valid
            } else {
                *t
            };
            let _ = rest.push(((act, wide), len));
        }
        let mut seq: HVec<rnn_core::SeqLane<'_, P>, L> = HVec::new();
        for (input, ((act, wide), len)) in inputs.iter().zip(rest.iter_mut()) {
            let [_, enc_a, enc_b, _, _, enc_last, xbuf, cell_act, ..] = &mut **act;
            let scratch = CellScratch::with_hidden(h_max, &mut wide[b::CELL_WIDE][..], cell_act)?;
            // (LSTM) the final cell states, then the final states.
            let (cells, lasts) = enc_last.cut_mut(enc_cells, "encoder final states")?;
            let _ = seq.push(rnn_core::SeqLane {
                input,
                len: *len,
                bufs: [enc_a, enc_b],
                lasts,
                cells,
                xbuf,
                scratch,
            });
        }
        with_marks!(P, O, obs, |m| rnn_core::run_stack_batch::<P, L>(
            &net.encoder,
            &mut seq,
            m
        )?)
    };
    let top_buf = if top == 0 { b::ENC_A } else { b::ENC_B };
    if let (Some(rule), Some(layer)) = (d.cells.enc_mask, net.encoder.last()) {
        for lane in lanes.iter_mut() {
            fill_masked(layer, lane.act[top_buf], lane.valid, lane.t, rule)?;
        }
    }
    for (lane, o) in lanes.iter_mut().zip(obs.iter_mut()) {
        o.probe(
            Probe::EncoderOutputs,
            Values::Act(
                lane.act[top_buf].part(..lane.t * de, "encoder outputs")?,
                Fmt::Q15,
            ),
        );
        if cfg!(feature = "bridge") && d.init == Init::Mean {
            mean_outputs(lane, top_buf, de, enc_cells + d.enc_layers * de)?;
        }
    }

    // Memory: the top outputs, or their projection. A projection no wider than the
    // outputs overwrites them in place: row i is read whole before memory row i is
    // written, and memory row i only covers output rows up to i.
    let fmt_memory = d.memory_fmt();
    let (mem_buf, m) = match &net.memory_proj {
        Some(p) => {
            let m = p.rows();
            let in_place = m <= de;
            let longest = lanes.iter().map(|l| l.t).max().unwrap_or(0);
            for i in 0..longest {
                let mut parts: HVec<[&[P::Act]; 1], L> = HVec::new();
                let mut jobs_out: HVec<&mut [P::Wide], L> = HVec::new();
                for lane in lanes.iter_mut().filter(|l| l.t > i) {
                    let Lane { act, wide, .. } = lane;
                    let _ =
                        parts.push([act[top_buf].part(i * de..(i + 1) * de, "encoder outputs")?]);
                    let _ = jobs_out.push(wide[b::PROJ].part_mut(..m, "memory projection")?);
                }
                {
                    let mut jobs: HVec<Job<'_, P>, L> = HVec::new();
                    for (x, out) in parts.iter().zip(jobs_out.iter_mut()) {
                        let _ = jobs.push(Job { x, out });
                    }
                    p.apply_batch(&mut jobs)?;
                }
                drop(parts);
                drop(jobs_out);
                for lane in lanes.iter_mut().filter(|l| l.t > i) {
                    let dst_buf = if in_place { top_buf } else { b::MEMORY };
                    let Lane { act, wide, .. } = lane;
                    let dst = act[dst_buf].part_mut(i * m..(i + 1) * m, "memory")?;
                    for (o, &w) in dst.iter_mut().zip(wide[b::PROJ].iter()) {
                        *o = P::narrow(w, d.fmt_memory);
                    }
                }
            }
            (if in_place { top_buf } else { b::MEMORY }, m)
        }
        None => (top_buf, de),
    };
    for (lane, o) in lanes.iter_mut().zip(obs.iter_mut()) {
        let t = lane.t;
        if net.memory_proj.is_some() {
            o.probe(
                Probe::Memory,
                Values::Act(lane.act[mem_buf].part(..t * m, "memory")?, fmt_memory),
            );
        }
        if let Some(att) = &net.attention {
            if !att.keys_are_memory() {
                let (keys, mem) = two_bufs(&mut lane.act, b::KEYS, mem_buf)?;
                let mem = mem.part(..t * m, "memory")?;
                o.phase(Phase::Scores);
                att.precompute_keys(mem, t, keys, &mut lane.wide[b::PROJ][..])?;
                o.phase(Phase::Rest);
                let keys = lane.act[b::KEYS].part(..t * att.key_dim(), "attention keys")?;
                o.probe(Probe::Keys, Values::Act(keys, d.attention.fmt_keys));
            }
        }
        // Initial decoder states, and cell states of an LSTM decoder.
        init_states(net, lane, false)?;
        init_states(net, lane, true)?;
        let (c, h) = lane.act[b::DEC_STATE].cut(dec_cells, "decoder states")?;
        o.probe(Probe::InitialState, Values::Act(h, Fmt::Q15));
        if d.cells.dec.is_lstm() {
            o.probe(Probe::DecoderCells, Values::Act(c, d.cells.fmt_dec));
        }
        if d.cells.enc.is_lstm() {
            let cells = lane.act[b::ENC_LAST].part(..enc_cells, "encoder cell states")?;
            o.probe(Probe::EncoderCells, Values::Act(cells, d.cells.fmt_enc));
        }
        o.encoded(t);
    }
    let keys_buf = match &net.attention {
        Some(att) if !att.keys_are_memory() => b::KEYS,
        _ => mem_buf,
    };
    // The top layer's state ends the decoder's state buffer.
    let top_state = dec_cells + (d.dec_layers - 1) * hd;
    // Input feeding reads the previous step's attentional vector: zeros at the first.
    for lane in lanes.iter_mut() {
        lane.act[b::ATTENTIONAL].fill(P::Act::default());
    }
    Ok(Layout {
        mem_buf,
        keys_buf,
        top_state,
    })
}

/// The decoder's initial states (`cells` false) or, for an LSTM decoder, its initial
/// cell states (`cells` true): zeros, the encoder's final (cell) states, or `tanh` of
/// dense bridges of the top encoder layer's final (cell) states, where a GRU encoder's
/// final states stand in for the cell states it does not have. Cell states are
/// converted to the decoder's cell format. Both stacks keep their cell states before
/// their states, in the same buffer (see [`cell_states`]).
pub(super) fn init_states<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    cells: bool,
) -> Result<(), Error> {
    let d = &net.desc;
    let (de, hd) = (d.enc_output(), d.dec_hidden);
    let (enc_cells, dec_cells) = cell_states(d);
    // Where the values come from and go to (offsets into ENC_LAST and DEC_STATE: cell
    // states first, then states).
    let (init, to, from, f_src, f_dst, bridges) = if !cells {
        (
            d.init,
            dec_cells,
            enc_cells,
            Fmt::Q15,
            Fmt::Q15,
            &net.bridge,
        )
    } else if d.cells.dec.is_lstm() {
        // A GRU encoder's final states stand in for its cell states (`enc_cells` 0).
        let f_src = match d.cells.enc {
            CellKind::Lstm => d.cells.fmt_enc,
            CellKind::Gru => Fmt::Q15,
        };
        (
            d.cells.init_cell,
            0,
            0,
            f_src,
            d.cells.fmt_dec,
            &net.bridge_c,
        )
    } else {
        return Ok(());
    };
    // A decoder of no width has no states to set (and no chunks to cut them into).
    if hd == 0 {
        return Ok(());
    }
    let (state, last) = two_bufs(&mut lane.act, b::DEC_STATE, b::ENC_LAST)?;
    let state = state.part_mut(to..to + d.dec_layers * hd, "decoder states")?;
    let last = last.part(from.., "encoder final states")?;
    match init {
        Init::Zeros => state.fill(P::Act::default()),
        Init::Last => {
            let skip = d.enc_layers - d.dec_layers;
            for (l, to) in state.chunks_exact_mut(hd).enumerate() {
                let at = (l + skip) * de;
                let from = last.part(at..at + de, "encoder final states")?;
                if f_src == f_dst {
                    to.fill_from(from, "decoder state from the encoder's")?;
                } else {
                    for (o, &v) in to.iter_mut().zip(from) {
                        *o = P::narrow(P::widen(v, f_src), f_dst);
                    }
                }
            }
        }
        Init::Dense | Init::Mean => {
            // Without the feature, bound models have no bridge (`ModelDesc::features`).
            if !cfg!(feature = "bridge") {
                return Err(Error::NotCompiled(Feature::Bridge));
            }
            // The bridges' requantizers take their input's format (`part_fmts`). The
            // mean follows the final states in the buffer (`mean_outputs`).
            let at = match init {
                Init::Mean => d.enc_layers * de,
                _ => (d.enc_layers - 1) * de,
            };
            let summary = last.part(at..at + de, "bridge input")?;
            let proj = &mut lane.wide[b::PROJ];
            let convert = f_dst != Fmt::Q15;
            let shared = !cells && d.extras.bridge_shared;
            for (l, to) in state.chunks_exact_mut(hd).enumerate() {
                let br = bridges
                    .get(if shared { 0 } else { l })
                    .ok_or(Error::Inconsistent(
                        "bridges: fewer than the decoder layers",
                    ))?;
                br.apply(&[summary], proj.part_mut(..hd, "bridge output")?)?;
                for (o, &w) in to.iter_mut().zip(proj.iter()) {
                    let u = P::tanh(w);
                    *o = if convert {
                        P::narrow(P::widen(u, Fmt::Q15), f_dst)
                    } else {
                        u
                    };
                }
            }
        }
    }
    Ok(())
}

/// The mean of the top encoder layer's outputs over the lane's valid positions, after
/// its final states in the final-state buffer (the mean bridge's input): the outputs
/// weighted by a softmax of zeros, so that every precision averages as its attention
/// does (an f32 `1/n` per position, a `Q0.15` weight on the integer path).
// Not inlined: its locals stay off the encoder's frame, the deepest path on a
// Cortex-M0 (the micro:bit's 6 KiB stack).
#[inline(never)]
fn mean_outputs<P: Precision>(
    lane: &mut Lane<'_, P>,
    top_buf: usize,
    de: usize,
    at: usize,
) -> Result<(), Error> {
    let n = lane.valid;
    let Lane { act, wide, .. } = lane;
    let [_, enc_a, enc_b, _, _, enc_last, _, _, _, _, _, weights, ..] = act;
    let outputs: &[P::Act] = if top_buf == b::ENC_A { enc_a } else { enc_b };
    let mean = enc_last
        .get_mut(at..)
        .and_then(|m| m.get_mut(..de))
        .ok_or(Error::Inconsistent("mean bridge: no room for the mean"))?;
    let zeros = wide[b::SCORES]
        .get_mut(..n)
        .ok_or(Error::Inconsistent("mean bridge: no room for its weights"))?;
    zeros.fill(P::Wide::default());
    let w = weights
        .get_mut(..n)
        .ok_or(Error::Inconsistent("mean bridge: no room for its weights"))?;
    P::softmax(zeros, w);
    let rows = outputs.get(..n * de).ok_or(Error::Inconsistent(
        "mean bridge: fewer outputs than positions",
    ))?;
    P::weighted_sum(w, rows, mean);
    Ok(())
}
