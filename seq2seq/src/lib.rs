//! GRU and LSTM encoder-decoder models with attention, for microcontrollers: the model
//! file, the static workspace, greedy decoding and beam search (the in-slot,
//! finished-set and netra variants: [`beam`]), generic over the number format.
//!
//! * [`ModelFile::parse`] checks a `.s2s` file (magic, version, CRC, description,
//!   vocabularies, every tensor) and gives views into it without copying;
//! * [`Net::bind`] turns it into typed layers for one [`Precision`];
//! * [`Plan`] says how many bytes of workspace a model needs for a given source length,
//!   before anything runs;
//! * [`Runner`] carves that workspace out of a caller-owned arena and runs sources to
//!   outputs by greedy decoding or, with [`Runner::with_beam`], a beam search,
//!   reporting each step to an [`Observer`].
//!
//! The model variant is data ([`ModelDesc`]): GRU or LSTM cells in the encoder and the
//! decoder (with the sigmoid or either Keras hard sigmoid on their gates), an encoder
//! that runs over padding or masks it as Keras 2 or Keras 3 does; no attention (the
//! decoder starts from the encoder's last state), Bahdanau ordering (score with
//! `s_{t-1}`, decoder input `[embedding; c_t]`) or Luong ordering (the cell first,
//! score with `s_t`, optional attentional layer over any concatenation of state,
//! context and embedding), any score of `attention_core`, initial states (and LSTM
//! cell states) zeros / last encoder state / `tanh(W x + b)`, and an output layer over
//! any concatenation of state, context, embedding and attentional vector. One build
//! runs any model within its capacities.
//!
//! ```no_run
//! use seq2seq::{ModelFile, Net, Prefix, Runner};
//! use s2s_kernels::W8A16;
//!
//! # fn main() -> Result<(), seq2seq::Error> {
//! # let bytes: &[u8] = &[];
//! let file = ModelFile::parse(bytes)?; // 8-byte aligned, e.g. a flash region
//! let net = Net::<W8A16>::bind(&file)?;
//! let mut arena = [0u32; 4096]; // at least Plan::new::<W8A16>(file.desc(), 32).bytes()
//! let mut runner = Runner::new(&net, &mut arena, 32)?;
//! let mut out = [0u16; 64];
//! // The model's own prefix (see `Prefix::parse` to choose a prefix slot's token).
//! runner.translate_line::<seq2seq::Error>("hello", &Prefix::NONE, &mut out, &mut (), |s| {
//!     // write s to the UART
//!     Ok(())
//! })?;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod beam;
#[cfg(feature = "alloc")]
pub mod builder;
pub mod desc;
pub mod embed;
mod error;
mod features;
pub mod format;
pub mod net;
pub mod plan;
pub mod run;
pub mod vocab;

pub use beam::{BeamPlan, BeamRule, BeamVariant, Hypothesis, Search};
pub use desc::{AttentionDesc, CellKind, Cells, Init, ModelDesc, Ordering, Part, ScoreKind, Split};
pub use error::Error;
pub use features::{Feature, Features};
pub use format::{ModelFile, TensorId};
pub use net::{ModelPrecision, Net};
pub use plan::Plan;
pub use run::{Observer, Probe, Runner, Step, StreamLimits, Streamed, Values};
/// The kernels crate, for [`with_net!`]'s expansion.
#[doc(hidden)]
pub use s2s_kernels as __kernels;
pub use s2s_kernels::{Precision, PrecisionKind};
pub use vocab::{Prefix, Slots, Vocab};
