//! Running a model: encoder, bridge, attention and greedy decoding over a caller-owned
//! arena, with an observer that sees every step.

use attention_core::{AttnScratch, Mask};
use heapless::Vec as HVec;
use rnn_core::{fill_masked, CellScratch, SeqInput};
use s2s_kernels::{float::argmax, Fmt, Job, Linear, Precision};

use crate::beam::{BeamPlan, BeamWork, Hypothesis, Search, Stepper, MAX_WIDTH};
use crate::desc::{Activation, CellKind, Init, Ordering, Part};
use crate::net::Net;
use crate::plan::{Buf, Plan, BUFS};
use crate::vocab::{decode_target, encode_source};
use crate::Error;

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
        let buf = &mut buf[..self.table.cols()];
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

/// Splits `n` elements of `T` off the front of `rest` (rounded up to whole words).
fn take<'w, T: bytemuck::Pod>(rest: &mut &'w mut [u32], words: usize, n: usize) -> &'w mut [T] {
    let (head, tail) = core::mem::take(rest).split_at_mut(words);
    *rest = tail;
    &mut bytemuck::cast_slice_mut(head)[..n]
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

    /// Like [`Runner::new`], with the workspace of beam searches up to `width` wide
    /// after it: fails if the arena is smaller than [`Plan::bytes`] plus
    /// [`BeamPlan::bytes`], or if `width` is over [`crate::beam::MAX_WIDTH`].
    pub fn with_beam(
        net: &'n Net<'a, P>,
        arena: &'w mut [u32],
        positions: usize,
        width: usize,
    ) -> Result<Self, Error> {
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
        let (lanes, beam) = arena.split_at_mut(plan.bytes() / 4);
        let mut runner = Self::with_lanes(net, lanes, positions)?;
        let mut rest = beam;
        runner.beam = Some(BeamWork::new(bp, &mut rest));
        Ok(runner)
    }

    /// The widest beam search this runner's workspace holds (0 without one).
    pub fn beam_width(&self) -> usize {
        self.beam.as_ref().map_or(0, |b| b.plan.width)
    }

    /// Tokenizes `line` and beam-searches it with `search` (see [`crate::beam`]),
    /// writing the best hypothesis's ids into `out` and its text through `write`, like
    /// [`Runner::translate_line`]. All results stay readable through
    /// [`Runner::hypothesis`] until the next run.
    pub fn beam_line<E: From<Error>>(
        &mut self,
        line: &str,
        search: Search,
        out: &mut [u16],
        obs: &mut impl Observer<P>,
        write: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.load_line(line)?;
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
                out[..h.tokens.len()].copy_from_slice(h.tokens);
                h.tokens.len()
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
        let (state, attentional) = to.split_at_mut(n);
        state.copy_from_slice(&self.lane.act[b::DEC_STATE][..]);
        attentional.copy_from_slice(&self.lane.act[b::ATTENTIONAL][..fed]);
        Ok(())
    }

    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error> {
        let (n, fed) = self.state_lens(from.len())?;
        let (state, attentional) = from.split_at(n);
        self.lane.act[b::DEC_STATE].copy_from_slice(state);
        self.lane.act[b::ATTENTIONAL][..fed].copy_from_slice(attentional);
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
        let mut rest = arena;
        let lanes = core::array::from_fn(|_| {
            let src_ids = take(&mut rest, plan.words(0), plan.len[0]);
            let mut act: [&'w mut [P::Act]; BUFS] = Default::default();
            let mut wide: [&'w mut [P::Wide]; BUFS] = Default::default();
            for i in 1..BUFS {
                if is_wide(Buf::ALL[i]) {
                    wide[i] = take(&mut rest, plan.words(i), plan.len[i]);
                } else {
                    act[i] = take(&mut rest, plan.words(i), plan.len[i]);
                }
            }
            Lane {
                src_ids,
                act,
                wide,
                t: 0,
                valid: 0,
                y: 0,
                n: 0,
                done: true,
            }
        });
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
        let mut outs = [out];
        let count = self.run_lanes(1, &mut outs, core::slice::from_mut(obs))?;
        decode_target(
            &self.net.tgt_vocab,
            self.net.separator,
            &outs[0][..count],
            write,
        )?;
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
            let lane = &mut self.lanes[order.len()];
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
                    results[i] = Err(e);
                }
                return results;
            }
        }
        for (lane, &i) in self.lanes.iter().zip(&order) {
            results[i] = Ok(lane.n);
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
        run_lanes::<P, O, L>(self.net, &self.plan, &mut self.lanes[..k], outs, obs)?;
        Ok(self.lanes[0].n)
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
            o.step(&Step {
                index,
                token: y,
                weights: net
                    .attention
                    .as_ref()
                    .map(|_| &lane.act[b::WEIGHTS][..lane.t]),
                logits,
            });
            lane.y = y;
            if y == d.tgt_end {
                lane.done = true;
            } else {
                out[lane.n] = y;
                lane.n += 1;
            }
        }
    }
    Ok(())
}

/// Where the encoder pass left what the decoder steps read.
struct Layout {
    /// Buffers of the memory (values) and of the attention keys.
    mem_buf: usize,
    keys_buf: usize,
    /// Where the top decoder layer's state starts in the decoder's state buffer.
    top_state: usize,
}

/// Checks the sources in `lanes`, runs the encoder over them, computes the memory, the
/// attention keys and the decoder's initial states, and readies every lane for its
/// first decoder step (the start token, nothing written, not done).
fn encode_lanes<P: Precision, O: Observer<P>, const L: usize>(
    net: &Net<'_, P>,
    plan: &Plan,
    lanes: &mut [Lane<'_, P>],
    obs: &mut [O],
) -> Result<Layout, Error> {
    let d = &net.desc;
    for lane in lanes.iter_mut() {
        let (t, valid) = (lane.t, lane.valid);
        if t == 0 || valid == 0 || valid > t {
            return Err(Error::EmptyInput);
        }
        if t > plan.positions {
            return Err(Error::InputTooLong {
                len: t,
                max: plan.positions,
            });
        }
        if let Some(&bad) = lane.src_ids[..t]
            .iter()
            .find(|&&id| id as usize >= d.src_vocab)
        {
            return Err(Error::TokenOutOfRange {
                what: "source id",
                id: bad as u32,
                vocab: d.src_vocab,
            });
        }
        (lane.y, lane.n, lane.done) = (d.tgt_start, 0, false);
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
                ids: &src_ids[..*t],
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
            let (cells, lasts) = enc_last.split_at_mut(enc_cells);
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
        rnn_core::run_stack_batch::<P, L>(&net.encoder, &mut seq)?
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
            Values::Act(&lane.act[top_buf][..lane.t * de], Fmt::Q15),
        );
        if d.init == Init::Mean {
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
                    let _ = parts.push([&act[top_buf][i * de..(i + 1) * de]]);
                    let _ = jobs_out.push(&mut wide[b::PROJ][..m]);
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
                    let dst = &mut act[dst_buf][i * m..(i + 1) * m];
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
                Values::Act(&lane.act[mem_buf][..t * m], fmt_memory),
            );
        }
        if let Some(att) = &net.attention {
            if !att.keys_are_memory() {
                let (keys, mem) = two_bufs(&mut lane.act, b::KEYS, mem_buf);
                att.precompute_keys(&mem[..t * m], t, keys, &mut lane.wide[b::PROJ][..])?;
                o.probe(
                    Probe::Keys,
                    Values::Act(&lane.act[b::KEYS][..t * att.key_dim()], d.fmt_keys),
                );
            }
        }
        // Initial decoder states, and cell states of an LSTM decoder.
        init_states(net, lane, false)?;
        init_states(net, lane, true)?;
        let (c, h) = lane.act[b::DEC_STATE].split_at(dec_cells);
        o.probe(Probe::InitialState, Values::Act(h, Fmt::Q15));
        if d.cells.dec == CellKind::Lstm {
            o.probe(Probe::DecoderCells, Values::Act(c, d.cells.fmt_dec));
        }
        if d.cells.enc == CellKind::Lstm {
            let cells = &lane.act[b::ENC_LAST][..enc_cells];
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

/// One decoder step of every unfinished lane from its last token `y` and its decoder
/// state: the lane's logits are left in its logits buffer (and its attention weights,
/// context and attentional vector in theirs); the observers see the step's probes.
fn step_lanes<P: Precision, O: Observer<P>, const L: usize>(
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
        for lane in lanes.iter_mut().filter(|l| !l.done) {
            let y = lane.y as usize;
            net.dec_emb.embed(y, lane.act[b::DEC_EMB])?;
            if d.ordering == Ordering::Bahdanau {
                attend_lane(net, lane, mem_buf, keys_buf, top_state)?;
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
                let (cells, states) = dec_state.split_at_mut(dec_cells);
                let (below, here) = states.split_at_mut(l * hd);
                let _ = cs.push(cells.get_mut(l * hd..(l + 1) * hd).unwrap_or(&mut []));
                let x: [&[P::Act]; 2] = if l > 0 {
                    [&below[(l - 1) * hd..], &[]]
                } else if d.ordering == Ordering::Bahdanau {
                    [dec_emb, context]
                } else if feed {
                    [dec_emb, attentional]
                } else {
                    [dec_emb, &[]]
                };
                let _ = parts.push(x);
                let _ = hs.push(&mut here[..hd]);
                let _ = ss.push(CellScratch::with_hidden(
                    h_max,
                    &mut wide[b::CELL_WIDE][..],
                    cell_act,
                )?);
            }
            let nparts = if l == 0 && (d.ordering == Ordering::Bahdanau || feed) {
                2
            } else {
                1
            };
            let mut xs: HVec<&[&[P::Act]], L> = HVec::new();
            for x in parts.iter() {
                let _ = xs.push(&x[..nparts]);
            }
            let mut sr: HVec<&mut CellScratch<'_, P>, L> = ss.iter_mut().collect();
            cell.step_batch::<L>(&xs, &mut hs, &mut cs, &mut sr)?;
        }
        for (lane, o) in lanes
            .iter_mut()
            .zip(obs.iter_mut())
            .filter(|(l, _)| !l.done)
        {
            if d.ordering == Ordering::Luong {
                attend_lane(net, lane, mem_buf, keys_buf, top_state)?;
            }
            let state = &lane.act[b::DEC_STATE];
            o.probe(
                Probe::DecoderState,
                Values::Act(&state[top_state..], Fmt::Q15),
            );
            if d.cells.dec == CellKind::Lstm {
                o.probe(
                    Probe::DecoderCells,
                    Values::Act(&state[..dec_cells], d.cells.fmt_dec),
                );
            }
            if net.attention.is_some() {
                o.probe(Probe::Scores, Values::Wide(&lane.wide[b::SCORES][..lane.t]));
                o.probe(
                    Probe::Context,
                    Values::Act(&lane.act[b::CONTEXT][..], fmt_memory),
                );
            }
        }
        if let Some(a) = &net.attentional {
            let c = a.rows();
            let parts = part_bufs(d.att_parts(), top_state);
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
        let parts = part_bufs(d.out_parts(), top_state);
        batch_linear::<P, L>(lanes, &net.out, &parts, b::LOGITS, d.tgt_vocab)?;
    }
    Ok(())
}

/// Where each of `parts` is: `(buffer, start)`, read to the buffer's end.
fn part_bufs(parts: impl Iterator<Item = Part>, top_state: usize) -> HVec<(usize, usize), 4> {
    parts
        .map(|p| match p {
            Part::State => (b::DEC_STATE, top_state),
            Part::Context => (b::CONTEXT, 0),
            Part::Embedding => (b::DEC_EMB, 0),
            Part::Attentional => (b::ATTENTIONAL, 0),
        })
        .collect()
}

/// Values of (LSTM) cell states before the states in the encoder's final-state buffer
/// and in the decoder's state buffer (0 for a GRU stack). The states come last, so that
/// the top decoder layer's state ends its buffer.
fn cell_states(d: &crate::ModelDesc) -> (usize, usize) {
    let lstm = |c| (c == CellKind::Lstm) as usize;
    (
        lstm(d.cells.enc) * d.enc_layers * d.enc_output(),
        lstm(d.cells.dec) * d.dec_layers * d.dec_hidden,
    )
}

/// The decoder's initial states (`cells` false) or, for an LSTM decoder, its initial
/// cell states (`cells` true): zeros, the encoder's final (cell) states, or `tanh` of
/// dense bridges of the top encoder layer's final (cell) states, where a GRU encoder's
/// final states stand in for the cell states it does not have. Cell states are
/// converted to the decoder's cell format. Both stacks keep their cell states before
/// their states, in the same buffer (see [`cell_states`]).
fn init_states<P: Precision>(
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
    } else if d.cells.dec == CellKind::Lstm {
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
    let (state, last) = two_bufs(&mut lane.act, b::DEC_STATE, b::ENC_LAST);
    let (state, last) = (&mut state[to..to + d.dec_layers * hd], &last[from..]);
    match init {
        Init::Zeros => state.fill(P::Act::default()),
        Init::Last => {
            let skip = d.enc_layers - d.dec_layers;
            for (l, to) in state.chunks_exact_mut(hd).enumerate() {
                let from = &last[(l + skip) * de..][..de];
                if f_src == f_dst {
                    to.copy_from_slice(from);
                } else {
                    for (o, &v) in to.iter_mut().zip(from) {
                        *o = P::narrow(P::widen(v, f_src), f_dst);
                    }
                }
            }
        }
        Init::Dense | Init::Mean => {
            // The bridges' requantizers take their input's format (`part_fmts`). The
            // mean follows the final states in the buffer (`mean_outputs`).
            let summary = match init {
                Init::Mean => &last[d.enc_layers * de..][..de],
                _ => &last[(d.enc_layers - 1) * de..][..de],
            };
            let proj = &mut lane.wide[b::PROJ];
            let convert = f_dst != Fmt::Q15;
            let shared = !cells && d.extras.bridge_shared;
            for (l, to) in state.chunks_exact_mut(hd).enumerate() {
                let br = bridges
                    .get(if shared { 0 } else { l })
                    .ok_or(Error::Inconsistent(
                        "bridges: fewer than the decoder layers",
                    ))?;
                br.apply(&[summary], &mut proj[..hd])?;
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

/// Two different buffers of a lane, the first mutable.
fn two_bufs<'s, T>(bufs: &'s mut [&mut [T]; BUFS], a: usize, b: usize) -> (&'s mut [T], &'s [T]) {
    if a < b {
        let (x, y) = bufs.split_at_mut(b);
        (&mut *x[a], &*y[0])
    } else {
        let (x, y) = bufs.split_at_mut(a);
        (&mut *y[0], &*x[b])
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
        for (xi, &(buf, start)) in x.iter_mut().zip(parts) {
            *xi = &act[buf][start..];
        }
        let _ = inputs.push(x);
        let _ = outs.push(&mut wide[dst][..rows]);
    }
    let mut jobs: HVec<Job<'_, P>, L> = HVec::new();
    for (x, out) in inputs.iter().zip(outs.iter_mut()) {
        let _ = jobs.push(Job {
            x: &x[..parts.len()],
            out,
        });
    }
    layer.apply_batch(&mut jobs)?;
    Ok(())
}

/// Scores, weights and context of one lane with its top decoder state as the query.
fn attend_lane<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    mem_buf: usize,
    keys_buf: usize,
    top_state: usize,
) -> Result<(), Error> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    let d = &net.desc;
    let t = lane.t;
    let mask = if d.mask_padding {
        Mask::None
    } else {
        Mask::Valid(lane.valid)
    };
    let (m, k) = (att.memory_dim(), att.key_dim());
    let Lane { act, wide, .. } = lane;
    let [_, enc_a, enc_b, memory, keys, _, _, _, dec_state, _, context, weights, tanh, ..] = act;
    let pick = |i: usize| -> &[P::Act] {
        match i {
            b::ENC_A => enc_a,
            b::ENC_B => enc_b,
            b::MEMORY => memory,
            _ => keys,
        }
    };
    let (mem, key) = (&pick(mem_buf)[..t * m], &pick(keys_buf)[..t * k]);
    let [.., scores, query, _] = wide;
    let mut s = AttnScratch {
        scores,
        query,
        tanh,
    };
    att.attend(
        &dec_state[top_state..],
        key,
        mem,
        t,
        mask,
        &mut s,
        &mut weights[..t],
        context,
    )?;
    Ok(())
}
