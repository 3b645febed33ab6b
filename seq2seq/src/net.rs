//! Binding a parsed model file to typed layer views for one precision.

use attention_core::Attention;
#[cfg(any(feature = "additive", feature = "multiplicative"))]
use attention_core::Score;
use heapless::Vec as HVec;
#[cfg(feature = "gru")]
use rnn_core::GruCell;
#[cfg(feature = "lstm")]
use rnn_core::LstmCell;
use rnn_core::{Cell, Recurrent, ResetMode, RnnLayer};
use s2s_kernels::{Fmt, Linear, Precision};

#[cfg(any(feature = "additive", feature = "multiplicative"))]
use crate::desc::ScoreKind;
use crate::desc::{CellKind, Init, ModelDesc, Ordering, MAX_LAYERS};
use crate::format::{ModelFile, Role, Slot, TensorId};
use crate::vocab::{Slots, Vocab};
use crate::Error;

pub use crate::format::ModelPrecision;

/// A model's layers as typed views into its file, for precision `P`.
pub struct Net<'a, P: Precision> {
    /// The description.
    pub desc: ModelDesc,
    /// Source embedding table.
    pub src_emb: Linear<'a, P>,
    /// Encoder layers, bottom first.
    pub encoder: HVec<RnnLayer<'a, P>, MAX_LAYERS>,
    /// Projection of encoder outputs into the memory.
    pub memory_proj: Option<Linear<'a, P>>,
    /// The attention, if the decoder attends.
    pub attention: Option<Attention<'a, P>>,
    /// Local-p attention's position predictor `(W_p, v_p)` (with the cargo feature
    /// `local` only: `Net` is on a Cortex-M's stack, and the two layers take 80 bytes of
    /// the micro:bit's).
    #[cfg(feature = "local")]
    pub predictor: Option<(Linear<'a, P>, Linear<'a, P>)>,
    /// Dense bridge per decoder layer ([`Init::Dense`], [`Init::Mean`]), or one for all
    /// ([`crate::desc::Extras::bridge_shared`]).
    pub bridge: HVec<Linear<'a, P>, MAX_LAYERS>,
    /// Dense bridge of the cell state per decoder layer (an LSTM decoder whose
    /// `init_cell` is [`Init::Dense`]).
    pub bridge_c: HVec<Linear<'a, P>, MAX_LAYERS>,
    /// Target embedding table.
    pub dec_emb: Linear<'a, P>,
    /// Decoder cells, bottom first.
    pub decoder: HVec<Cell<'a, P>, MAX_LAYERS>,
    /// Luong's attentional layer.
    pub attentional: Option<Linear<'a, P>>,
    /// Output layer.
    pub out: Linear<'a, P>,
    /// Source vocabulary.
    pub src_vocab: Vocab<'a>,
    /// Target vocabulary.
    pub tgt_vocab: Vocab<'a>,
    /// String written between output tokens.
    pub separator: &'a str,
    /// The vocabulary section, for [`Net::slots`].
    vocab: &'a [u8],
}

impl<'a, P: Precision> Net<'a, P> {
    /// Local-p attention's position predictor `(W_p, v_p)`, if the model has one (and the
    /// build has the `local` feature).
    #[inline(always)]
    pub fn predictor(&self) -> Option<&(Linear<'a, P>, Linear<'a, P>)> {
        #[cfg(feature = "local")]
        return self.predictor.as_ref();
        #[cfg(not(feature = "local"))]
        None
    }

    /// The prefix slots' names and tokens ([`ModelFile::slots`]).
    pub fn slots(&self) -> Slots<'a> {
        Slots::in_section(self.vocab, &self.desc)
    }
}

impl<P: Precision> core::fmt::Debug for Net<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Net<{}>({:?})", P::KIND.name(), self.desc)
    }
}

/// Where a [`Net`]'s layers come from: a checked model file, or the tables of a model
/// embedded at build time ([`crate::embed`]). One binding for both.
pub(crate) trait Source<'a, P: Precision> {
    /// The description.
    fn desc(&self) -> &ModelDesc;
    /// The layer `role`/`layer`/`dir` as the description specifies it.
    fn linear(&self, role: Role, layer: usize, dir: usize) -> Result<Linear<'a, P>, Error>;
    /// The source and target vocabularies, the separator and the vocabulary section.
    fn vocabs(&self) -> (Vocab<'a>, Vocab<'a>, &'a str, &'a [u8]);
}

/// Reads dense layers from a file for one precision.
struct Reader<'f, 'a> {
    file: &'f ModelFile<'a>,
}

impl<'a, P: ModelPrecision> Source<'a, P> for Reader<'_, 'a> {
    fn desc(&self) -> &ModelDesc {
        self.file.desc()
    }

    /// The parser has checked every tensor's presence, type, shape and quantization
    /// data; what is left is reading them as `P`'s types (and their alignment in memory).
    fn linear(&self, role: Role, layer: usize, dir: usize) -> Result<Linear<'a, P>, Error> {
        let id = |slot| TensorId::new(role, layer, dir, slot);
        let missing = |slot| Error::MissingTensor(id(slot).to_u32());
        let spec = self
            .file
            .desc()
            .layer_spec(role, layer, dir)
            .ok_or(missing(Slot::Weight))?;
        let (_, w) = self
            .file
            .data::<P::Weight>(id(Slot::Weight))?
            .ok_or(missing(Slot::Weight))?;
        let q: &'a [P::RowQ] = if P::row_q_len(1, spec.parts) == 0 {
            &[]
        } else {
            self.file
                .data::<P::RowQ>(id(Slot::RowQ))?
                .ok_or(missing(Slot::RowQ))?
                .1
        };
        let bias = self.file.data::<P::Bias>(id(Slot::Bias))?.map(|(_, b)| b);
        let layout = self.file.layout();
        Ok(Linear::new(spec.rows, spec.cols, spec.parts, w, q, bias)?.with_layout(layout)?)
    }

    fn vocabs(&self) -> (Vocab<'a>, Vocab<'a>, &'a str, &'a [u8]) {
        let f = self.file;
        (
            f.src_vocab(),
            f.tgt_vocab(),
            f.separator(),
            f.vocab_section(),
        )
    }
}

impl<'a, P: ModelPrecision> Net<'a, P> {
    /// Binds every layer the description calls for to typed views of its tensors (which
    /// [`ModelFile::parse`] has checked), for precision `P`.
    pub fn bind(file: &ModelFile<'a>) -> Result<Self, Error> {
        let mut bound = Err(Error::EmptyInput);
        Self::bind_into(file, &mut bound);
        bound
    }

    /// [`Net::bind`] into `slot` (whatever it held is replaced), building the `Net` in
    /// place: a small device that keeps the `Net` on its stack holds it once while
    /// binding instead of twice (being built, then returned), and the binding's
    /// temporaries live in helpers that return before the caller goes on.
    pub fn bind_into(file: &ModelFile<'a>, slot: &mut Result<Self, Error>) {
        if file.precision() != P::KIND {
            *slot = Err(Error::PrecisionMismatch {
                model: file.precision(),
                runtime: P::KIND,
            });
            return;
        }
        if let Some(f) = file.features().first_missing() {
            *slot = Err(Error::NotCompiled(f));
            return;
        }
        bind_source(&Reader { file }, slot);
    }
}

/// [`Net::bind_into`] from any [`Source`], its parts already checked.
pub(crate) fn bind_source<'a, P: ModelPrecision, S: Source<'a, P>>(
    source: &S,
    slot: &mut Result<Net<'a, P>, Error>,
) {
    empty(source, slot);
    if let Ok(net) = slot {
        if let Err(e) = fill(source, net) {
            *slot = Err(e);
        }
    }
}

/// A `Net` with its single layers and no stack yet, into `slot`.
#[inline(never)]
fn empty<'a, P: ModelPrecision, S: Source<'a, P>>(r: &S, slot: &mut Result<Net<'a, P>, Error>) {
    let layers = (|| {
        Ok((
            r.linear(Role::EncEmb, 0, 0)?,
            r.linear(Role::DecEmb, 0, 0)?,
            r.linear(Role::Out, 0, 0)?,
        ))
    })();
    let (src_vocab, tgt_vocab, separator, vocab) = r.vocabs();
    *slot = layers.map(|(src_emb, dec_emb, out)| Net {
        desc: *r.desc(),
        src_emb,
        encoder: HVec::new(),
        memory_proj: None,
        attention: None,
        #[cfg(feature = "local")]
        predictor: None,
        bridge: HVec::new(),
        bridge_c: HVec::new(),
        dec_emb,
        decoder: HVec::new(),
        attentional: None,
        out,
        src_vocab,
        tgt_vocab,
        separator,
        vocab,
    });
}

/// The stacks, the attention and the bridges of an [`empty`] `Net`.
fn fill<'a, P: ModelPrecision, S: Source<'a, P>>(r: &S, net: &mut Net<'a, P>) -> Result<(), Error> {
    bind_encoder(r, net)?;
    bind_attention(r, net)?;
    bind_decoder(r, net)
}

/// The encoder layers and the memory projection.
#[inline(never)]
fn bind_encoder<'a, P: ModelPrecision, S: Source<'a, P>>(
    r: &S,
    net: &mut Net<'a, P>,
) -> Result<(), Error> {
    let d = net.desc;
    for l in 0..d.enc_layers {
        let dir_cell = |dir| -> Result<Cell<'a, P>, Error> {
            let w_ih = r.linear(Role::EncWih, l, dir)?;
            let w_hh = r.linear(Role::EncWhh, l, dir)?;
            let (kind, reset, rec) = (d.cells.enc, d.enc_reset, d.cells.enc_recurrent);
            cell(kind, w_ih, w_hh, reset, rec, d.cells.fmt_enc)
        };
        let bwd = if d.enc_bidir {
            Some(dir_cell(1)?)
        } else {
            None
        };
        let layer = RnnLayer::new(dir_cell(0)?, bwd)?;
        net.encoder.push(layer).map_err(too_many)?;
    }
    if d.memory_proj.is_some() {
        net.memory_proj = Some(r.linear(Role::MemoryProj, 0, 0)?);
    }
    Ok(())
}

/// The attention, if the decoder attends, and the attentional layer.
#[inline(never)]
#[cfg_attr(
    not(any(feature = "additive", feature = "multiplicative")),
    allow(unreachable_code, unused_variables)
)]
fn bind_attention<'a, P: ModelPrecision, S: Source<'a, P>>(
    r: &S,
    net: &mut Net<'a, P>,
) -> Result<(), Error> {
    let d = net.desc;
    if d.has_attention() {
        let (q, m) = (d.dec_hidden, d.memory_dim());
        let score = match d.attention.score {
            #[cfg(feature = "additive")]
            ScoreKind::Additive => Score::Additive {
                query: if d.attention.query_proj {
                    Some(r.linear(Role::AttnQuery, 0, 0)?)
                } else {
                    None
                },
                key: if d.attention.key_proj {
                    Some(r.linear(Role::AttnKey, 0, 0)?)
                } else {
                    None
                },
                v: r.linear(Role::AttnV, 0, 0)?,
            },
            #[cfg(feature = "multiplicative")]
            ScoreKind::Dot | ScoreKind::ScaledDot => Score::Dot {
                scale: P::scale(d.attention.scale, d.attention.scale_q),
            },
            #[cfg(feature = "multiplicative")]
            ScoreKind::General => Score::General {
                w: r.linear(Role::AttnGeneral, 0, 0)?,
                scale: P::scale(d.attention.scale, d.attention.scale_q),
            },
            // Refused before binding (`ModelDesc::features`).
            #[allow(unreachable_patterns)] // with both scores
            _ => return Err(Error::NotCompiled(d.attention.score.feature())),
        };
        let key_fmt = if d.keys_stored() {
            d.attention.fmt_keys
        } else {
            d.memory_fmt()
        };
        net.attention = Some(Attention::new(score, q, m, Fmt::Q15, key_fmt)?);
        #[cfg(feature = "local")]
        if d.attention.predicted() {
            net.predictor = Some((
                r.linear(Role::AttnPosW, 0, 0)?,
                r.linear(Role::AttnPosV, 0, 0)?,
            ));
        }
    }
    if d.attentional.is_some() {
        net.attentional = Some(r.linear(Role::Attentional, 0, 0)?);
    }
    Ok(())
}

/// The bridges and the decoder cells.
#[inline(never)]
fn bind_decoder<'a, P: ModelPrecision, S: Source<'a, P>>(
    r: &S,
    net: &mut Net<'a, P>,
) -> Result<(), Error> {
    let d = net.desc;
    for l in 0..d.bridges() {
        net.bridge
            .push(r.linear(Role::Bridge, l, 0)?)
            .map_err(too_many)?;
    }
    for l in 0..d.dec_layers {
        if d.cells.init_cell == Init::Dense {
            net.bridge_c
                .push(r.linear(Role::BridgeC, l, 0)?)
                .map_err(too_many)?;
        }
        let w_ih = r.linear(Role::DecWih, l, 0)?;
        let w_hh = r.linear(Role::DecWhh, l, 0)?;
        let c = cell(
            d.cells.dec,
            w_ih,
            w_hh,
            d.dec_reset,
            d.cells.dec_recurrent,
            d.cells.fmt_dec,
        )?;
        net.decoder.push(c).map_err(too_many)?;
    }
    Ok(())
}

/// A stack that does not hold another layer (the description allows no more).
fn too_many<T>(_: T) -> Error {
    Error::Inconsistent("layers: at most 4 per stack")
}

/// A cell of the description's kind from its two layers.
#[cfg_attr(
    not(all(feature = "gru", feature = "lstm")),
    allow(unused_variables, unreachable_code)
)]
fn cell<'a, P: Precision>(
    kind: CellKind,
    w_ih: Linear<'a, P>,
    w_hh: Linear<'a, P>,
    reset: ResetMode,
    rec: Recurrent,
    cell_fmt: Fmt,
) -> Result<Cell<'a, P>, Error> {
    Ok(match kind {
        #[cfg(feature = "gru")]
        CellKind::Gru => Cell::Gru(GruCell::new(w_ih, w_hh, reset)?.with_recurrent(rec)),
        #[cfg(feature = "lstm")]
        CellKind::Lstm => Cell::Lstm(LstmCell::new(w_ih, w_hh, rec, cell_fmt)?),
        // Refused before binding (`ModelDesc::features`).
        #[allow(unreachable_patterns)] // with both cells
        _ => return Err(Error::NotCompiled(kind.feature())),
    })
}

impl<P: Precision> Net<'_, P> {
    /// Multiply-accumulates of the encoder per source position (both directions, all
    /// layers, the memory projection and precomputed keys).
    pub fn macs_per_source_position(&self) -> usize {
        let rnn: usize = self
            .encoder
            .iter()
            .map(|l| l.fwd.macs() * l.directions())
            .sum();
        let proj = self.memory_proj.map_or(0, |p| p.macs());
        let keys = self.attention.as_ref().map_or(0, |a| a.key_macs());
        rnn + proj + keys
    }

    /// Positions the encoder's recurrent layers step over for a source of `t`
    /// positions whose first `valid` are real: `valid` when the padding is masked,
    /// else `t`.
    pub fn encoder_steps(&self, t: usize, valid: usize) -> usize {
        if self.desc.cells.enc_mask.is_some() {
            valid
        } else {
            t
        }
    }

    /// Multiply-accumulates of the encoder on such a source: the recurrent layers'
    /// over [`Net::encoder_steps`], the memory projection's and the keys' over all `t`.
    pub fn encoder_macs(&self, t: usize, valid: usize) -> usize {
        let rest = self.memory_proj.map_or(0, |p| p.macs())
            + self.attention.as_ref().map_or(0, |a| a.key_macs());
        let rnn = self.macs_per_source_position() - rest;
        rnn * self.encoder_steps(t, valid) + rest * t
    }

    /// Multiply-accumulates of one decoder step over `t` source positions (a monotonic
    /// attention's: of a step that scores one position, whatever `t` is; a local
    /// attention's: of a step that scores its whole window, `2D + 1` positions, and
    /// local-p's position predictor).
    pub fn macs_per_step(&self, t: usize) -> usize {
        let rnn: usize = self.decoder.iter().map(|c| c.macs()).sum();
        // (MoChA's chunk scored again for its softmax.)
        let scored = match self.desc.attention.ordering {
            Ordering::Monotonic if cfg!(feature = "monotonic") => {
                match usize::from(self.desc.attention.chunk) {
                    0 | 1 => t.min(1),
                    w => t.min(1) + t.min(w),
                }
            }
            _ if self.desc.attention.local() => {
                t.min(2 * usize::from(self.desc.attention.window) + 1)
            }
            _ => t,
        };
        let att = self.attention.as_ref().map_or(0, |a| a.step_macs(scored));
        let attl = self.attentional.map_or(0, |a| a.macs());
        let predict = self.predictor().map_or(0, |(w, v)| w.macs() + v.macs());
        rnn + att + attl + predict + self.out.macs()
    }
}

/// Runs `$body` with `$net` the result of [`Net::bind`] on the model file `$file` (a
/// `&ModelFile`) at the file's own precision, the core's type for it named `$p`:
/// `with_net!(file, |net: P| Plan::new::<P>(&net?.desc, 32))`. One dispatch over
/// [`PrecisionKind`](crate::PrecisionKind) for the tools that read any file (the host
/// has its own precisions and dispatch).
#[macro_export]
macro_rules! with_net {
    ($file:expr, |$net:ident: $p:ident| $body:expr) => {
        match $file.precision() {
            $crate::PrecisionKind::F32 => {
                type $p = $crate::__kernels::F32;
                let $net = $crate::Net::<$p>::bind($file);
                $body
            }
            $crate::PrecisionKind::W8F32 => {
                type $p = $crate::__kernels::W8F32;
                let $net = $crate::Net::<$p>::bind($file);
                $body
            }
            $crate::PrecisionKind::W8A16 => {
                type $p = $crate::__kernels::W8A16;
                let $net = $crate::Net::<$p>::bind($file);
                $body
            }
        }
    };
}
