//! Running a model: encoder, bridge, attention and greedy decoding over a caller-owned
//! arena, with an observer that sees every step.

use attention_core::{AttnScratch, Mask};
use rnn_core::{GruScratch, SeqInput};
use s2s_kernels::{float::argmax, Fmt, Linear, Precision};

use crate::desc::{Init, Ordering, Part, MAX_LAYERS};
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

/// A model bound to its workspace: runs sources to outputs, one at a time.
pub struct Runner<'n, 'a, 'w, P: Precision> {
    net: &'n Net<'a, P>,
    plan: Plan,
    src_ids: &'w mut [u16],
    act: [&'w mut [P::Act]; BUFS],
    wide: [&'w mut [P::Wide]; BUFS],
}

/// Splits `n` elements of `T` off the front of `rest` (rounded up to whole words).
fn take<'w, T: bytemuck::Pod>(rest: &mut &'w mut [u32], words: usize, n: usize) -> &'w mut [T] {
    let (head, tail) = core::mem::take(rest).split_at_mut(words);
    *rest = tail;
    &mut bytemuck::cast_slice_mut(head)[..n]
}

impl<'n, 'a, 'w, P: Precision> Runner<'n, 'a, 'w, P> {
    /// Carves the workspace for sources of up to `positions` tokens out of `arena`;
    /// fails if the arena is smaller than [`Plan::bytes`].
    pub fn new(net: &'n Net<'a, P>, arena: &'w mut [u32], positions: usize) -> Result<Self, Error> {
        let d = &net.desc;
        if d.src_pad_to > positions {
            return Err(Error::InputTooLong {
                len: d.src_pad_to,
                max: positions,
            });
        }
        let plan = Plan::new::<P>(d, positions);
        if arena.len() * 4 < plan.bytes() {
            return Err(Error::ArenaTooSmall {
                needed: plan.bytes(),
                available: arena.len() * 4,
            });
        }
        let mut rest = arena;
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
        Ok(Runner {
            net,
            plan,
            src_ids,
            act,
            wide,
        })
    }

    /// The workspace plan.
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
        let (n, valid) = encode_source(&self.net.desc, &self.net.src_vocab, line, self.src_ids)?;
        let count = run_ids(self, n, valid, out, obs)?;
        decode_target(
            &self.net.tgt_vocab,
            self.net.separator,
            &out[..count],
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
        if src.len() > self.src_ids.len() {
            return Err(Error::InputTooLong {
                len: src.len(),
                max: self.src_ids.len(),
            });
        }
        self.src_ids[..src.len()].copy_from_slice(src);
        run_ids(self, src.len(), valid, out, obs)
    }
}

fn is_wide(b: Buf) -> bool {
    matches!(
        b,
        Buf::GruWide | Buf::Proj | Buf::Scores | Buf::Query | Buf::Logits
    )
}

/// Runs the ids already in the runner's source buffer.
fn run_ids<P: Precision>(
    r: &mut Runner<'_, '_, '_, P>,
    t: usize,
    valid: usize,
    out: &mut [u16],
    obs: &mut impl Observer<P>,
) -> Result<usize, Error> {
    let net = r.net;
    let d = &net.desc;
    if t == 0 || valid == 0 || valid > t {
        return Err(Error::EmptyInput);
    }
    if t > r.plan.positions {
        return Err(Error::InputTooLong {
            len: t,
            max: r.plan.positions,
        });
    }
    if out.len() < d.max_steps {
        return Err(Error::OutputTooSmall {
            needed: d.max_steps,
            available: out.len(),
        });
    }
    if let Some(&bad) = r.src_ids[..t]
        .iter()
        .find(|&&id| id as usize >= d.src_vocab)
    {
        return Err(Error::TokenOutOfRange {
            what: "source id",
            id: bad as u32,
            vocab: d.src_vocab,
        });
    }

    let [_, enc_a, enc_b, memory, keys, enc_last, xbuf, gru_act, dec_state, dec_emb, context, weights, tanh, attentional, ..] =
        &mut r.act;
    let [.., gru_wide, proj, scores, query, logits] = &mut r.wide;
    let h_max = d.enc_hidden.max(d.dec_hidden);
    let mut gs = GruScratch::<P>::with_hidden(h_max, gru_wide, gru_act)?;

    // Encoder.
    let input = Embedded {
        table: &net.src_emb,
        ids: &r.src_ids[..t],
    };
    let de = d.enc_output();
    let mut lasts: [&mut [P::Act]; MAX_LAYERS] = Default::default();
    for (l, chunk) in enc_last.chunks_exact_mut(de).enumerate().take(MAX_LAYERS) {
        lasts[l] = chunk;
    }
    let top = rnn_core::run_stack(
        &net.encoder,
        &input,
        t,
        [&mut **enc_a, &mut **enc_b],
        &mut lasts[..d.enc_layers],
        xbuf,
        &mut gs,
    )?;
    let top_buf: &mut [P::Act] = if top == 0 { enc_a } else { enc_b };

    obs.probe(
        Probe::EncoderOutputs,
        Values::Act(&top_buf[..t * de], Fmt::Q15),
    );

    // Memory: the top outputs, or their projection. A projection no wider than the
    // outputs overwrites them in place: row i is read whole before memory row i is
    // written, and memory row i only covers output rows up to i.
    let mem: &[P::Act] = match &net.memory_proj {
        Some(p) => {
            let m = p.rows();
            let in_place = m <= de;
            for i in 0..t {
                p.apply(&[&top_buf[i * de..(i + 1) * de]], &mut proj[..m])?;
                let dst = if in_place {
                    &mut top_buf[i * m..(i + 1) * m]
                } else {
                    &mut memory[i * m..(i + 1) * m]
                };
                for (o, &w) in dst.iter_mut().zip(proj.iter()) {
                    *o = P::narrow(w, d.fmt_memory);
                }
            }
            if in_place {
                &top_buf[..t * m]
            } else {
                &memory[..t * m]
            }
        }
        None => &top_buf[..t * de],
    };
    let fmt_memory = d.memory_fmt();
    if net.memory_proj.is_some() {
        obs.probe(Probe::Memory, Values::Act(mem, fmt_memory));
    }
    let keys: &[P::Act] = match &net.attention {
        Some(att) if !att.keys_are_memory() => {
            att.precompute_keys(mem, t, keys, proj)?;
            let keys = &keys[..t * att.key_dim()];
            obs.probe(Probe::Keys, Values::Act(keys, d.fmt_keys));
            keys
        }
        _ => mem,
    };

    // Initial decoder state.
    let hd = d.dec_hidden;
    match d.init {
        Init::Zeros => dec_state.fill(P::Act::default()),
        Init::Last => {
            let skip = d.enc_layers - d.dec_layers;
            for (l, dst) in dec_state.chunks_exact_mut(hd).enumerate() {
                dst.copy_from_slice(&enc_last[(l + skip) * de..][..de]);
            }
        }
        Init::Dense => {
            let summary = &enc_last[(d.enc_layers - 1) * de..][..de];
            for (b, dst) in net.bridge.iter().zip(dec_state.chunks_exact_mut(hd)) {
                b.apply(&[summary], &mut proj[..hd])?;
                for (o, &w) in dst.iter_mut().zip(proj.iter()) {
                    *o = P::tanh(w);
                }
            }
        }
    }
    obs.probe(Probe::InitialState, Values::Act(dec_state, Fmt::Q15));
    obs.encoded(t);

    // Greedy decoding.
    let mask = if d.mask_padding {
        Mask::None
    } else {
        Mask::Valid(valid)
    };
    let mut att_scratch = AttnScratch {
        scores,
        query,
        tanh,
    };
    let mut y = d.tgt_start;
    let mut n = 0;
    for index in 0..d.max_steps {
        net.dec_emb.embed(y as usize, dec_emb)?;
        let attend = |state: &[P::Act],
                      s: &mut AttnScratch<'_, P>,
                      w: &mut [P::Act],
                      c: &mut [P::Act]|
         -> Result<(), Error> {
            if let Some(att) = &net.attention {
                att.attend(state, keys, mem, t, mask, s, &mut w[..t], c)?;
            }
            Ok(())
        };
        let top_state = (d.dec_layers - 1) * hd;
        if d.ordering == Ordering::Bahdanau {
            attend(&dec_state[top_state..], &mut att_scratch, weights, context)?;
        }
        // The decoder stack: layer 0 reads the embedding (and the context), each
        // further layer the state below it.
        for (l, cell) in net.decoder.iter().enumerate() {
            let (below, here) = dec_state.split_at_mut(l * hd);
            let h = &mut here[..hd];
            if l == 0 {
                if d.ordering == Ordering::Bahdanau {
                    cell.step(&[dec_emb, context], h, &mut gs)?;
                } else {
                    cell.step(&[dec_emb], h, &mut gs)?;
                }
            } else {
                cell.step(&[&below[(l - 1) * hd..]], h, &mut gs)?;
            }
        }
        if d.ordering == Ordering::Luong {
            attend(&dec_state[top_state..], &mut att_scratch, weights, context)?;
        }
        let state = &dec_state[top_state..];
        obs.probe(Probe::DecoderState, Values::Act(state, Fmt::Q15));
        if net.attention.is_some() {
            obs.probe(Probe::Scores, Values::Wide(&att_scratch.scores[..t]));
            obs.probe(Probe::Context, Values::Act(context, fmt_memory));
        }
        if let Some(a) = &net.attentional {
            let c = a.rows();
            a.apply(&[state, context], &mut proj[..c])?;
            for (o, &w) in attentional.iter_mut().zip(proj.iter()) {
                *o = P::tanh(w);
            }
            obs.probe(Probe::Attentional, Values::Act(attentional, Fmt::Q15));
        }
        let mut parts: [&[P::Act]; 4] = [&[]; 4];
        let mut np = 0;
        for p in d.out_parts() {
            parts[np] = match p {
                Part::State => state,
                Part::Context => context,
                Part::Embedding => dec_emb,
                Part::Attentional => attentional,
            };
            np += 1;
        }
        net.out.apply(&parts[..np], logits)?;
        y = argmax(logits).unwrap_or(0) as u16;
        obs.step(&Step {
            index,
            token: y,
            weights: net.attention.as_ref().map(|_| &weights[..t]),
            logits,
        });
        if y == d.tgt_end {
            break;
        }
        out[n] = y;
        n += 1;
    }
    Ok(n)
}
