//! Running a model: encoder, bridge, attention and greedy decoding over a caller-owned
//! arena, with an observer that sees every step.

use attention_core::{AttnScratch, Mask};
use heapless::Vec as HVec;
use rnn_core::{fill_masked, CellScratch, SeqInput};
use s2s_kernels::part::Part as _;
use s2s_kernels::{float::argmax, Fmt, Job, Linear, Precision, ShapeError};

use crate::beam::{BeamPlan, BeamWork, Hypothesis, Search, Stepper, MAX_WIDTH};
use crate::desc::{Activation, CellKind, Init, Ordering, Part};
use crate::net::Net;
use crate::plan::{Buf, Plan, BUFS};
use crate::vocab::{decode_target, encode_source};
use crate::{Error, Feature};

mod encode;
mod search;
mod step;

use encode::{encode_lanes, Layout};
use step::step_lanes;

/// What a decoder step produced, handed to an [`Observer`].
pub struct Step<'a, P: Precision> {
    /// Step index, from 0.
    pub index: usize,
    /// The token chosen (the end token on the last step of a finished output).
    pub token: u16,
    /// Attention weights over the source positions (`None` without attention).
    pub weights: Option<&'a [P::Act]>,
    /// The logits of every target token.
    pub logits: &'a [P::Wide],
}

/// Intermediate tensors an observer can look at (calibration, quantization checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Probe {
    /// Top encoder layer outputs, all positions (once per source).
    EncoderOutputs,
    /// The memory (values), all positions (once per source).
    Memory,
    /// Precomputed attention keys, all positions (once per source).
    Keys,
    /// Initial decoder states, all layers (once per source).
    InitialState,
    /// Top decoder state of a step.
    DecoderState,
    /// Attention scores of a step.
    Scores,
    /// Context of a step.
    Context,
    /// Luong attentional vector of a step.
    Attentional,
    /// Final cell states of an LSTM encoder, all layers (once per source).
    EncoderCells,
    /// Cell states of an LSTM decoder, all layers: the initial ones, then after every
    /// step.
    DecoderCells,
}

/// The values of a [`Probe`].
pub enum Values<'a, P: Precision> {
    /// Activations and their format.
    Act(&'a [P::Act], Fmt),
    /// Wide values.
    Wide(&'a [P::Wide]),
}

/// Receives the progress of a run: for heatmaps, streaming attention rows out of the
/// device, measuring, calibrating. Every method does nothing by default.
pub trait Observer<P: Precision> {
    /// The encoder has run over `positions` source positions.
    fn encoded(&mut self, _positions: usize) {}
    /// A decoder step has run.
    fn step(&mut self, _step: &Step<'_, P>) {}
    /// An intermediate tensor (see [`Probe`]).
    fn probe(&mut self, _probe: Probe, _values: Values<'_, P>) {}
    /// A beam search has run step `index`, expanding `expanded` hypotheses (each
    /// expansion is a decoder step of its own, with its probes, but no [`Observer::step`]).
    fn searched(&mut self, _index: usize, _expanded: usize) {}
}

/// The observer that observes nothing.
impl<P: Precision> Observer<P> for () {}

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

/// One sequence's share of the workspace and its decoding state.
struct Lane<'w, P: Precision> {
    src_ids: &'w mut [u16],
    act: [&'w mut [P::Act]; BUFS],
    wide: [&'w mut [P::Wide]; BUFS],
    /// Source positions, valid (unpadded) positions.
    t: usize,
    valid: usize,
    /// The last token chosen, outputs written, and whether decoding has ended.
    y: u16,
    n: usize,
    done: bool,
}

/// A model bound to its workspace: runs sources to outputs. With `L` lanes it runs up
/// to `L` sources in lockstep, sharing every matrix product between them
/// ([`Linear::apply_batch`]); each lane's output is exactly what it would be alone.
/// The firmware uses one lane.
pub struct Runner<'n, 'a, 'w, P: Precision, const L: usize = 1> {
    net: &'n Net<'a, P>,
    plan: Plan,
    lanes: [Lane<'w, P>; L],
    /// The beam-search workspace ([`Runner::with_beam`]).
    beam: Option<BeamWork<'w, P>>,
}

/// Splits `n` elements of `T` off the front of `rest` (rounded up to whole words), or
/// `None` if `rest` is shorter than `words`.
fn take<'w, T: bytemuck::Pod>(
    rest: &mut &'w mut [u32],
    words: usize,
    n: usize,
) -> Option<&'w mut [T]> {
    let (head, tail) = core::mem::take(rest).split_at_mut_checked(words)?;
    *rest = tail;
    bytemuck::try_cast_slice_mut(head).ok()?.get_mut(..n)
}

impl<'w, P: Precision> Lane<'w, P> {
    /// A lane's buffers, the sizes of `plan`, split off the front of `rest`, or `None`
    /// if `rest` is shorter than the plan.
    fn carve(plan: &Plan, rest: &mut &'w mut [u32]) -> Option<Self> {
        let src_ids = take(rest, plan.words(0), plan.len[0])?;
        let mut act: [&'w mut [P::Act]; BUFS] = Default::default();
        let mut wide: [&'w mut [P::Wide]; BUFS] = Default::default();
        for i in 1..BUFS {
            if is_wide(Buf::ALL[i]) {
                wide[i] = take(rest, plan.words(i), plan.len[i])?;
            } else {
                act[i] = take(rest, plan.words(i), plan.len[i])?;
            }
        }
        Some(Lane {
            src_ids,
            act,
            wide,
            t: 0,
            valid: 0,
            y: 0,
            n: 0,
            done: true,
        })
    }

    /// A lane without buffers (a placeholder: runs nothing).
    fn empty() -> Self {
        Lane {
            src_ids: &mut [],
            act: Default::default(),
            wide: Default::default(),
            t: 0,
            valid: 0,
            y: 0,
            n: 0,
            done: true,
        }
    }
}

fn is_wide(b: Buf) -> bool {
    matches!(
        b,
        Buf::CellWide | Buf::Proj | Buf::Scores | Buf::Query | Buf::Logits
    )
}

impl<'n, 'a, 'w, P: Precision> Runner<'n, 'a, 'w, P> {
    /// Carves the workspace for sources of up to `positions` tokens out of `arena`;
    /// fails if the arena is smaller than [`Plan::bytes`].
    pub fn new(net: &'n Net<'a, P>, arena: &'w mut [u32], positions: usize) -> Result<Self, Error> {
        Self::with_lanes(net, arena, positions)
    }
}

impl<'n, 'a, 'w, P: Precision, const L: usize> Runner<'n, 'a, 'w, P, L> {
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
            plan,
            lanes,
            beam: None,
        })
    }

    /// The workspace plan of one lane.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Tokenizes `line`, runs the model and writes the output tokens' text (joined by
    /// the model's separator) through `write`. Returns the number of output tokens.
    pub fn translate_line<E: From<Error>>(
        &mut self,
        line: &str,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
        write: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.load_line(line)?;
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

    /// Puts source ids (end token and padding included, `valid` unpadded) into lane 0.
    fn load_ids(&mut self, src: &[u16], valid: usize) -> Result<(), Error> {
        let lane = &mut self.lanes[0];
        if src.len() > lane.src_ids.len() {
            return Err(Error::InputTooLong {
                len: src.len(),
                max: lane.src_ids.len(),
            });
        }
        lane.src_ids[..src.len()].copy_from_slice(src);
        (lane.t, lane.valid) = (src.len(), valid);
        Ok(())
    }

    /// Tokenizes `line` into lane 0.
    fn load_line(&mut self, line: &str) -> Result<(), Error> {
        let lane = &mut self.lanes[0];
        let (n, valid) = encode_source(&self.net.desc, &self.net.src_vocab, line, lane.src_ids)?;
        (lane.t, lane.valid) = (n, valid);
        Ok(())
    }

    /// Translates up to `L` lines at once: `outs[i]` receives line `i`'s output ids and
    /// `obs[i]` sees its steps. A line that cannot be tokenized gets its error without
    /// stopping the others. Returns each line's number of output ids.
    pub fn translate_batch<O: Observer<P>>(
        &mut self,
        lines: &[&str],
        outs: &mut [&mut [u16]],
        obs: &mut [O],
    ) -> HVec<Result<usize, Error>, L> {
        let k = lines.len().min(L).min(outs.len()).min(obs.len());
        let mut results: HVec<Result<usize, Error>, L> = HVec::new();
        // Tokenize; lanes whose line fails are left out of the run.
        let mut order: HVec<usize, L> = HVec::new();
        for (i, line) in lines.iter().take(k).enumerate() {
            let Some(lane) = self.lanes.get_mut(order.len()) else {
                break;
            };
            match encode_source(&self.net.desc, &self.net.src_vocab, line, lane.src_ids) {
                Ok((n, valid)) => {
                    (lane.t, lane.valid) = (n, valid);
                    let _ = order.push(i);
                    let _ = results.push(Ok(0));
                }
                Err(e) => {
                    let _ = results.push(Err(e));
                }
            }
        }
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
        run_lanes::<P, O, L>(self.net, &self.plan, lanes, outs, obs)?;
        Ok(self.lanes.first().map_or(0, |l| l.n))
    }
}

/// An observer borrowed from a caller's slice.
struct ObsRef<'o, O>(&'o mut O);

impl<P: Precision, O: Observer<P>> Observer<P> for ObsRef<'_, O> {
    fn encoded(&mut self, positions: usize) {
        self.0.encoded(positions)
    }
    fn step(&mut self, step: &Step<'_, P>) {
        self.0.step(step)
    }
    fn probe(&mut self, probe: Probe, values: Values<'_, P>) {
        self.0.probe(probe, values)
    }
    fn searched(&mut self, index: usize, expanded: usize) {
        self.0.searched(index, expanded)
    }
}

/// A lane's activation and wide buffers, borrowed.
type LaneBufs<'l, 'w, P> = (
    &'l mut [&'w mut [<P as Precision>::Act]; BUFS],
    &'l mut [&'w mut [<P as Precision>::Wide]; BUFS],
);

/// Buffer indices, by name.
mod b {
    use crate::plan::Buf;
    pub const ENC_A: usize = Buf::EncA as usize;
    pub const ENC_B: usize = Buf::EncB as usize;
    pub const MEMORY: usize = Buf::Memory as usize;
    pub const KEYS: usize = Buf::Keys as usize;
    pub const ENC_LAST: usize = Buf::EncLast as usize;
    pub const DEC_STATE: usize = Buf::DecState as usize;
    pub const DEC_EMB: usize = Buf::DecEmb as usize;
    pub const CONTEXT: usize = Buf::Context as usize;
    pub const WEIGHTS: usize = Buf::Weights as usize;
    pub const ATTENTIONAL: usize = Buf::Attentional as usize;
    pub const CELL_WIDE: usize = Buf::CellWide as usize;
    pub const PROJ: usize = Buf::Proj as usize;
    pub const SCORES: usize = Buf::Scores as usize;
    pub const LOGITS: usize = Buf::Logits as usize;
}

/// The encoder, bridge and greedy decoder over lanes in lockstep.
fn run_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    plan: &Plan,
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
    let lay = encode_lanes::<P, O, L>(net, plan, lanes, obs)?;
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
            let y = argmax(logits).unwrap_or(0) as u16;
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

/// Values of (LSTM) cell states before the states in the encoder's final-state buffer
/// and in the decoder's state buffer (0 for a GRU stack). The states come last, so that
/// the top decoder layer's state ends its buffer.
fn cell_states(d: &crate::ModelDesc) -> (usize, usize) {
    let lstm = |c: CellKind| c.is_lstm() as usize;
    (
        lstm(d.cells.enc) * d.enc_layers * d.enc_output(),
        lstm(d.cells.dec) * d.dec_layers * d.dec_hidden,
    )
}

/// Buffer `i` of a lane's buffers, or a [`ShapeError`] naming `what` if there is none.
fn buf<'s, T>(
    bufs: &'s [&mut [T]; BUFS],
    i: usize,
    what: &'static str,
) -> Result<&'s [T], ShapeError> {
    bufs.get(i).map(|x| &**x).ok_or(no_buf(i, what))
}

/// Buffer `i` of a lane's buffers, mutable, or a [`ShapeError`] as for [`buf`].
fn buf_mut<'s, T>(
    bufs: &'s mut [&mut [T]; BUFS],
    i: usize,
    what: &'static str,
) -> Result<&'s mut [T], ShapeError> {
    bufs.get_mut(i).map(|x| &mut **x).ok_or(no_buf(i, what))
}

/// The error of a lane buffer `i` that does not exist.
fn no_buf(i: usize, what: &'static str) -> ShapeError {
    ShapeError {
        what,
        expected: i.saturating_add(1),
        found: BUFS,
    }
}

/// Two different buffers of a lane, the first mutable (an error if `a` and `b` are the
/// same buffer or not buffers).
fn two_bufs<'s, T>(
    bufs: &'s mut [&mut [T]; BUFS],
    a: usize,
    b: usize,
) -> Result<(&'s mut [T], &'s [T]), Error> {
    match bufs.get_disjoint_mut([a, b]) {
        Ok([x, y]) => Ok((&mut **x, &**y)),
        Err(_) => Err(Error::Inconsistent("two buffers: the same one, or none")),
    }
}

/// Applies `layer` to every unfinished lane's input, the concatenation of its buffers
/// `parts` (each `(buffer, start)`, to the buffer's end), into the lane's wide buffer
/// `dst` (`rows` long), sharing the work between lanes.
fn batch_linear<P: Precision, const L: usize>(
    lanes: &mut [Lane<'_, P>],
    layer: &Linear<'_, P>,
    parts: &[(usize, usize)],
    dst: usize,
    rows: usize,
) -> Result<(), Error> {
    let mut inputs: HVec<[&[P::Act]; 4], L> = HVec::new();
    let mut outs: HVec<&mut [P::Wide], L> = HVec::new();
    for lane in lanes.iter_mut().filter(|l| !l.done) {
        let Lane { act, wide, .. } = lane;
        let mut x: [&[P::Act]; 4] = [&[]; 4];
        for (xi, &(i, start)) in x.iter_mut().zip(parts) {
            *xi = buf(act, i, "linear input")?.part(start.., "linear input")?;
        }
        let _ = inputs.push(x);
        let _ = outs.push(buf_mut(wide, dst, "linear output")?.part_mut(..rows, "linear output")?);
    }
    let mut jobs: HVec<Job<'_, P>, L> = HVec::new();
    for (x, out) in inputs.iter().zip(outs.iter_mut()) {
        let _ = jobs.push(Job {
            x: x.part(..parts.len(), "linear inputs")?,
            out,
        });
    }
    layer.apply_batch(&mut jobs)?;
    Ok(())
}
