//! Loading model files on the host and running them through the same no_std core the
//! firmware runs.

pub mod beam;
mod decode;
mod delegate;
pub mod dequant;
#[allow(unsafe_code)] // runtime-detected SIMD; see its SAFETY comments
pub mod hostf32;
#[allow(unsafe_code)] // runtime-detected SIMD; see its SAFETY comments
pub mod hostw8a16;
mod limits;
mod load;
mod prefix;
pub mod run;
mod simd;
mod spread;
pub mod stream;
pub mod tie;

pub use decode::{forget_layers, Decoded, HostRunner, Keep, Ranked, HOST_LANES};
pub use limits::{
    positions_for, positions_hint, Limits, HOST_MAX_POSITIONS, MAX_POSITIONS, MAX_THREAD_WORKSPACE,
};
pub use load::{AnyNet, LoadedModel, MAX_MODEL_BYTES};
pub use prefix::PrefixArgs;
pub use spread::{decode_each, decode_lines, decode_stream, STREAM_BATCH};
pub use tie::{is_near_tie, top_two, NEAR_TIE};
