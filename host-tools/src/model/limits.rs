//! How far the host runs a model past its own settings ([`Limits`]): sources longer
//! than the host plans for by default ([`HOST_MAX_POSITIONS`], `--positions`) and more
//! decoder steps than the model's `max_steps` (`--max-steps`), for long inputs such as
//! running text. Checked against the model before anything runs, the workspace in bytes
//! included.

use std::num::NonZeroUsize;
use std::path::Path;

use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::{ModelDesc, Plan};

use crate::error::{Error, Result};
use crate::model::decode::HOST_LANES;

/// Longest source (in positions, end token included) the host runner plans for
/// without `--positions`.
pub const HOST_MAX_POSITIONS: usize = 512;

/// Most source positions `--positions` plans for.
pub const MAX_POSITIONS: usize = 1 << 20;

/// Most workspace bytes one decoding thread may take (its [`HOST_LANES`] lanes).
pub const MAX_THREAD_WORKSPACE: usize = 1 << 30;

/// The `--positions` that would take a line `desc`'s model refused: for a source longer
/// than the positions planned for (the model not padded to a fixed length, the source
/// not beyond [`MAX_POSITIONS`]), its length; otherwise none.
pub fn positions_for(desc: &ModelDesc, e: &seq2seq::Error) -> Option<NonZeroUsize> {
    match *e {
        seq2seq::Error::InputTooLong { len, .. }
            if desc.src_pad_to == 0 && len <= MAX_POSITIONS =>
        {
            NonZeroUsize::new(len)
        }
        _ => None,
    }
}

/// What follows the error of a line refused for its length: ` (`--positions N` plans
/// for it)` with [`positions_for`]'s `N`, or nothing.
pub fn positions_hint(n: Option<NonZeroUsize>) -> String {
    n.map_or(String::new(), |n| {
        format!(" (`--positions {n}` plans for it)")
    })
}

/// What the host runs a model with instead of its defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Source positions to plan for (end token included) instead of
    /// [`HOST_MAX_POSITIONS`].
    pub positions: Option<usize>,
    /// Most decoder steps instead of the model's `max_steps`.
    pub max_steps: Option<usize>,
}

impl Limits {
    /// The description `desc` runs with: its `max_steps` replaced, checked as a model
    /// file's is (at most 65,535 steps, no fewer than its minimum output length).
    pub fn apply(&self, path: &Path, desc: &ModelDesc) -> Result<ModelDesc> {
        let mut d = *desc;
        if let Some(n) = self.max_steps {
            d.max_steps = n;
            d.check()
                .map_err(|e| Error::usage(format!("{}: --max-steps {n}: {e}", path.display())))?;
        }
        Ok(d)
    }

    /// The source positions to plan `desc` for, after checking `--positions` against
    /// it: a model padded to a fixed length keeps that length, and the workspace of one
    /// decoding thread stays under [`MAX_THREAD_WORKSPACE`] bytes (the error says how
    /// many it would take).
    pub fn positions(&self, path: &Path, desc: &ModelDesc, kind: PrecisionKind) -> Result<usize> {
        let refuse = |m: String| Error::usage(format!("{}: {m}", path.display()));
        let Some(n) = self.positions else {
            return Ok(match desc.src_pad_to {
                0 => HOST_MAX_POSITIONS,
                n => n,
            });
        };
        if desc.src_pad_to > 0 {
            return Err(refuse(format!(
                "--positions {n}: the model pads every source to {} positions",
                desc.src_pad_to
            )));
        }
        if n == 0 || n > MAX_POSITIONS {
            return Err(refuse(format!(
                "--positions {n}: outside 1..={MAX_POSITIONS}"
            )));
        }
        let plan = match kind {
            PrecisionKind::F32 => Plan::new::<F32>(desc, n),
            PrecisionKind::W8F32 => Plan::new::<W8F32>(desc, n),
            PrecisionKind::W8A16 => Plan::new::<W8A16>(desc, n),
        };
        let bytes = plan.bytes().saturating_mul(HOST_LANES);
        if bytes > MAX_THREAD_WORKSPACE {
            return Err(refuse(format!(
                "--positions {n}: {bytes} bytes of workspace per decoding thread, above the host's {MAX_THREAD_WORKSPACE}"
            )));
        }
        Ok(n)
    }
}
