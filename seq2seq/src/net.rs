//! Binding a parsed model file to typed layer views for one precision.

use attention_core::{Attention, Score};
use heapless::Vec as HVec;
use rnn_core::{GruCell, GruLayer};
use s2s_kernels::{Fmt, Linear, Precision};

use crate::desc::{Init, ModelDesc, Ordering, ScoreKind, MAX_LAYERS};
use crate::format::{ModelFile, Role, Slot, Stored, TensorId};
use crate::vocab::Vocab;
use crate::Error;

/// Precisions whose tensors can be read from a model file.
pub trait ModelPrecision: Precision<Weight: Stored, RowQ: Stored, Bias: Stored> {}
impl<P> ModelPrecision for P where P: Precision<Weight: Stored, RowQ: Stored, Bias: Stored> {}

/// A model's layers as typed views into its file, for precision `P`.
pub struct Net<'a, P: Precision> {
    /// The description.
    pub desc: ModelDesc,
    /// Source embedding table.
    pub src_emb: Linear<'a, P>,
    /// Encoder layers, bottom first.
    pub encoder: HVec<GruLayer<'a, P>, MAX_LAYERS>,
    /// Projection of encoder outputs into the memory.
    pub memory_proj: Option<Linear<'a, P>>,
    /// The attention, if the decoder attends.
    pub attention: Option<Attention<'a, P>>,
    /// Dense bridge per decoder layer ([`Init::Dense`]).
    pub bridge: HVec<Linear<'a, P>, MAX_LAYERS>,
    /// Target embedding table.
    pub dec_emb: Linear<'a, P>,
    /// Decoder cells, bottom first.
    pub decoder: HVec<GruCell<'a, P>, MAX_LAYERS>,
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
}

impl<P: Precision> core::fmt::Debug for Net<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Net<{}>({:?})", P::KIND.name(), self.desc)
    }
}

/// Reads dense layers from a file for one precision.
struct Reader<'f, 'a> {
    file: &'f ModelFile<'a>,
}

impl<'a> Reader<'_, 'a> {
    /// The layer `role`/`layer`/`dir` as the description specifies it. The parser has
    /// checked every tensor's presence, type, shape and quantization data; what is
    /// left is reading them as `P`'s types (and their alignment in memory).
    fn linear<P: ModelPrecision>(
        &self,
        role: Role,
        layer: usize,
        dir: usize,
    ) -> Result<Linear<'a, P>, Error> {
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
        Ok(Linear::new(spec.rows, spec.cols, spec.parts, w, q, bias)?)
    }
}

impl<'a, P: ModelPrecision> Net<'a, P> {
    /// Binds every layer the description calls for to typed views of its tensors (which
    /// [`ModelFile::parse`] has checked), for precision `P`.
    pub fn bind(file: &ModelFile<'a>) -> Result<Self, Error> {
        if file.precision() != P::KIND {
            return Err(Error::PrecisionMismatch {
                model: file.precision(),
                runtime: P::KIND,
            });
        }
        let d = *file.desc();
        let r = Reader { file };
        let src_emb = r.linear(Role::EncEmb, 0, 0)?;
        let dec_emb = r.linear(Role::DecEmb, 0, 0)?;

        let mut encoder = HVec::new();
        for l in 0..d.enc_layers {
            let cell = |dir| -> Result<GruCell<'a, P>, Error> {
                let w_ih = r.linear(Role::EncWih, l, dir)?;
                let w_hh = r.linear(Role::EncWhh, l, dir)?;
                Ok(GruCell::new(w_ih, w_hh, d.enc_reset)?)
            };
            let bwd = if d.enc_bidir { Some(cell(1)?) } else { None };
            let layer = GruLayer::new(cell(0)?, bwd)?;
            encoder
                .push(layer)
                .map_err(|_| Error::Inconsistent("layers: at most 4 per stack"))?;
        }

        let memory_proj = match d.memory_proj {
            Some(_) => Some(r.linear(Role::MemoryProj, 0, 0)?),
            None => None,
        };

        let attention = if d.ordering == Ordering::None {
            None
        } else {
            let (q, m) = (d.dec_hidden, d.memory_dim());
            let score = match d.score {
                ScoreKind::Additive => Score::Additive {
                    query: if d.attn_query_proj {
                        Some(r.linear(Role::AttnQuery, 0, 0)?)
                    } else {
                        None
                    },
                    key: if d.attn_key_proj {
                        Some(r.linear(Role::AttnKey, 0, 0)?)
                    } else {
                        None
                    },
                    v: r.linear(Role::AttnV, 0, 0)?,
                },
                ScoreKind::Dot | ScoreKind::ScaledDot => Score::Dot {
                    scale: P::scale(d.score_scale, d.score_scale_q),
                },
                ScoreKind::General => Score::General {
                    w: r.linear(Role::AttnGeneral, 0, 0)?,
                    scale: P::scale(d.score_scale, d.score_scale_q),
                },
            };
            let key_fmt = if d.keys_stored() {
                d.fmt_keys
            } else {
                d.memory_fmt()
            };
            Some(Attention::new(score, q, m, Fmt::Q15, key_fmt)?)
        };

        let mut bridge = HVec::new();
        if d.init == Init::Dense {
            for l in 0..d.dec_layers {
                let b = r.linear(Role::Bridge, l, 0)?;
                bridge
                    .push(b)
                    .map_err(|_| Error::Inconsistent("layers: at most 4 per stack"))?;
            }
        }

        let mut decoder = HVec::new();
        for l in 0..d.dec_layers {
            let w_ih = r.linear(Role::DecWih, l, 0)?;
            let w_hh = r.linear(Role::DecWhh, l, 0)?;
            decoder
                .push(GruCell::new(w_ih, w_hh, d.dec_reset)?)
                .map_err(|_| Error::Inconsistent("layers: at most 4 per stack"))?;
        }

        let attentional = match d.attentional {
            Some(_) => Some(r.linear(Role::Attentional, 0, 0)?),
            None => None,
        };
        let out = r.linear(Role::Out, 0, 0)?;

        Ok(Net {
            desc: d,
            src_emb,
            encoder,
            memory_proj,
            attention,
            bridge,
            dec_emb,
            decoder,
            attentional,
            out,
            src_vocab: file.src_vocab(),
            tgt_vocab: file.tgt_vocab(),
            separator: file.separator(),
        })
    }
}

impl<P: Precision> Net<'_, P> {
    /// Multiply-accumulates of the encoder per source position (both directions, all
    /// layers, the memory projection and precomputed keys).
    pub fn macs_per_source_position(&self) -> usize {
        let gru: usize = self
            .encoder
            .iter()
            .map(|l| l.fwd.macs() * l.directions())
            .sum();
        let proj = self.memory_proj.map_or(0, |p| p.macs());
        let keys = self.attention.as_ref().map_or(0, |a| a.key_macs());
        gru + proj + keys
    }

    /// Multiply-accumulates of one decoder step over `t` source positions.
    pub fn macs_per_step(&self, t: usize) -> usize {
        let gru: usize = self.decoder.iter().map(|c| c.macs()).sum();
        let att = self.attention.as_ref().map_or(0, |a| a.step_macs(t));
        let attl = self.attentional.map_or(0, |a| a.macs());
        gru + att + attl + self.out.macs()
    }
}
