//! A model embedded at build time: its description, vocabularies and layers as typed
//! constants that `s2s embed MODEL.s2s` writes into a Rust module (the weights as
//! statics in flash, aligned), checked on the host with the same code that checks a
//! model file. The device binds them with [`Net::embedded_into`]: no model-file parser,
//! no CRC, no tensor table, and only the parts the model uses compiled (the cargo
//! features `s2s inspect MODEL` lists).

use s2s_kernels::{Linear, Precision};

// What the generated module names, so that it needs no other crate than this one.
pub use rnn_core::{Masked, Recurrent, ResetMode};
pub use s2s_kernels::logprob::Alpha;
pub use s2s_kernels::{Fmt, Layout, Requant, F32, W8A16, W8F32};

use crate::desc::{ModelDesc, Role};
use crate::net::{bind_source, ModelPrecision, Source};
use crate::{Error, Feature, Net, Vocab};

/// 8-byte alignment for an embedded tensor or section, as a model file aligns them.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct Aligned<T: ?Sized>(pub T);

/// One dense layer of an embedded model: where it sits in the model and its tensors.
#[derive(Debug)]
pub struct Layer<'a, P: Precision> {
    /// Its role.
    pub role: Role,
    /// Its index in a stack (0 otherwise).
    pub layer: u8,
    /// Its direction (0 forward, 1 backward).
    pub dir: u8,
    /// Output size.
    pub rows: usize,
    /// Input size.
    pub cols: usize,
    /// Parts of its input.
    pub parts: usize,
    /// Weights (every plane).
    pub w: &'a [P::Weight],
    /// Quantization data per row (empty for f32).
    pub q: &'a [P::RowQ],
    /// Bias, if it has one.
    pub bias: Option<&'a [P::Bias]>,
}

/// A model embedded at build time (see the module's documentation).
#[derive(Debug)]
pub struct Embedded<'a, P: Precision> {
    /// The description (checked on the host).
    pub desc: ModelDesc,
    /// How the int8 weights are stored.
    pub layout: Layout,
    /// Every dense layer the description calls for.
    pub layers: &'a [Layer<'a, P>],
    /// Source vocabulary.
    pub src_vocab: Vocab<'a>,
    /// Target vocabulary.
    pub tgt_vocab: Vocab<'a>,
    /// String written between output tokens.
    pub separator: &'a str,
    /// The model file's vocabulary section (read for the prefix slots' names and tokens;
    /// empty for a model without prefix slots).
    pub vocab_section: &'a [u8],
}

/// `len` bytes of `bytes` from `start`, in a constant (a build error when out of range).
pub const fn sub(bytes: &[u8], start: usize, len: usize) -> &[u8] {
    bytes.split_at(start).1.split_at(len).0
}

impl<'a, P: ModelPrecision> Source<'a, P> for Embedded<'a, P> {
    fn desc(&self) -> &ModelDesc {
        &self.desc
    }

    fn linear(&self, role: Role, layer: usize, dir: usize) -> Result<Linear<'a, P>, Error> {
        let l = self
            .layers
            .iter()
            .find(|l| l.role == role && usize::from(l.layer) == layer && usize::from(l.dir) == dir)
            .ok_or(Error::MissingTensor(
                crate::TensorId::new(role, layer, dir, crate::format::Slot::Weight).to_u32(),
            ))?;
        Ok(Linear::new(l.rows, l.cols, l.parts, l.w, l.q, l.bias)?.with_layout(self.layout)?)
    }

    fn vocabs(&self) -> (Vocab<'a>, Vocab<'a>, &'a str, &'a [u8]) {
        (
            self.src_vocab,
            self.tgt_vocab,
            self.separator,
            self.vocab_section,
        )
    }
}

impl<'a, P: ModelPrecision> Net<'a, P> {
    /// Binds an embedded model into `slot` (whatever it held is replaced), as
    /// [`Net::bind_into`] binds a model file: refused only if this build leaves out a part
    /// the model needs ([`Error::NotCompiled`]) or a layer does not match its shape.
    pub fn embedded_into(model: &Embedded<'a, P>, slot: &mut Result<Self, Error>) {
        let mut parts = model.desc.features();
        if model.layout == Layout::V6m {
            parts = parts.with(Feature::V6mLayout);
        }
        if let Some(f) = parts.first_missing() {
            *slot = Err(Error::NotCompiled(f));
            return;
        }
        bind_source(model, slot);
    }
}
