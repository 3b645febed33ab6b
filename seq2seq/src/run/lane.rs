//! One sequence's share of the workspace ([`Lane`]): carved out of the arena by the
//! plan, its buffers reached by name (`b`) through checked accessors, and a dense
//! layer applied to every unfinished lane at once.

use heapless::Vec as HVec;
use s2s_kernels::part::Part as _;
use s2s_kernels::{Job, Linear, Precision, ShapeError};

use crate::desc::{CellKind, ModelDesc};
use crate::plan::{Buf, Plan, BUFS};
use crate::Error;

/// The activation buffers' slots: every buffer before the first wide one (slot 0, the
/// source ids', stays empty: they are `u16`, [`Lane::src_ids`]).
pub(super) const ACTS: usize = FIRST_WIDE;
/// The wide buffers' slots: the buffers from [`FIRST_WIDE`] on, the last of the plan's.
pub(super) const WIDES: usize = BUFS - FIRST_WIDE;
/// The first wide buffer: every buffer after it is wide, none before it.
const FIRST_WIDE: usize = Buf::CellWide as usize;

// The plan's wide buffers are its last ones: the lane's two arrays cover every buffer.
const _: () = {
    let mut i = 1;
    while i < BUFS {
        assert!(is_wide(Buf::ALL[i]) == (i >= FIRST_WIDE));
        i += 1;
    }
};

/// One sequence's share of the workspace and its decoding state: its buffers, activation
/// ones by their index in the plan (`b::ENC_A`, ...), wide ones from the first wide
/// buffer on (`b::CELL_WIDE` is 0): a slot per buffer of its type only, so that the
/// lane, held by the runner for as long as it serves, takes 152 bytes less of a
/// Cortex-M's stack than with both arrays as long as the plan.
pub(super) struct Lane<'w, P: Precision> {
    pub(super) src_ids: &'w mut [u16],
    pub(super) act: [&'w mut [P::Act]; ACTS],
    pub(super) wide: [&'w mut [P::Wide]; WIDES],
    /// Source positions, valid (unpadded) positions.
    pub(super) t: usize,
    pub(super) valid: usize,
    /// The last token chosen, outputs written, and whether decoding has ended.
    pub(super) y: u16,
    pub(super) n: usize,
    pub(super) done: bool,
    /// Monotonic attention: the position attended at the last step, where the next
    /// one starts ([`Lane::UNSTARTED`] before the first step, the valid length once no
    /// position stopped). Local-p attention: the centre of the step's window, predicted
    /// at the step (`step::attend_local`).
    pub(super) at: usize,
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
    /// [`Lane::at`] before a source's first decoder step.
    pub(super) const UNSTARTED: usize = usize::MAX;

    /// Puts source ids (end token and padding included, `valid` unpadded) into the lane.
    #[inline(always)]
    pub(super) fn load(&mut self, src: &[u16], valid: usize) -> Result<(), Error> {
        if src.len() > self.src_ids.len() {
            return Err(Error::InputTooLong {
                len: src.len(),
                max: self.src_ids.len(),
            });
        }
        self.src_ids[..src.len()].copy_from_slice(src);
        (self.t, self.valid) = (src.len(), valid);
        Ok(())
    }

    /// A lane's buffers, the sizes of `plan`, split off the front of `rest`, or `None`
    /// if `rest` is shorter than the plan.
    pub(super) fn carve(plan: &Plan, rest: &mut &'w mut [u32]) -> Option<Self> {
        let src_ids = take(rest, plan.words(0), plan.len[0])?;
        let mut act: [&'w mut [P::Act]; ACTS] = Default::default();
        let mut wide: [&'w mut [P::Wide]; WIDES] = Default::default();
        // In arena order: the activation buffers, then the wide ones.
        let lens = plan.len.iter().enumerate();
        for (slot, (i, &len)) in act.iter_mut().zip(lens.clone()).skip(1) {
            *slot = take(rest, plan.words(i), len)?;
        }
        for (slot, (i, &len)) in wide.iter_mut().zip(lens.skip(FIRST_WIDE)) {
            *slot = take(rest, plan.words(i), len)?;
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
            at: Self::UNSTARTED,
        })
    }

    /// A lane without buffers (a placeholder: runs nothing).
    pub(super) fn empty() -> Self {
        Lane {
            src_ids: &mut [],
            act: Default::default(),
            wide: Default::default(),
            t: 0,
            valid: 0,
            y: 0,
            n: 0,
            done: true,
            at: Self::UNSTARTED,
        }
    }
}

const fn is_wide(b: Buf) -> bool {
    matches!(
        b,
        Buf::CellWide | Buf::Proj | Buf::Scores | Buf::Query | Buf::Logits
    )
}

/// A lane's activation and wide buffers, borrowed.
pub(super) type LaneBufs<'l, 'w, P> = (
    &'l mut [&'w mut [<P as Precision>::Act]; ACTS],
    &'l mut [&'w mut [<P as Precision>::Wide]; WIDES],
);

/// Buffer indices, by name: of [`Lane::act`] for the activation buffers, of
/// [`Lane::wide`] for the wide ones (from `CELL_WIDE`, 0).
pub(super) mod b {
    use super::FIRST_WIDE;
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
    pub const CELL_WIDE: usize = Buf::CellWide as usize - FIRST_WIDE;
    pub const PROJ: usize = Buf::Proj as usize - FIRST_WIDE;
    pub const SCORES: usize = Buf::Scores as usize - FIRST_WIDE;
    pub const LOGITS: usize = Buf::Logits as usize - FIRST_WIDE;
    /// No buffer: the keys of a step whose attention was computed before it (a
    /// streamed source's, `run/stream.rs`), which the step then leaves alone. (A mark
    /// in the layout rather than a field of the lane: a field moved the encoder's
    /// count on the LM3S6965 by 0.03 %.)
    pub const ATTENDED: usize = usize::MAX;
}

/// Values of (LSTM) cell states before the states in the encoder's final-state buffer
/// and in the decoder's state buffer (0 for a GRU stack). The states come last, so that
/// the top decoder layer's state ends its buffer.
pub(super) fn cell_states(d: &ModelDesc) -> (usize, usize) {
    let lstm = |c: CellKind| c.is_lstm() as usize;
    (
        lstm(d.cells.enc) * d.enc_layers * d.enc_output(),
        lstm(d.cells.dec) * d.dec_layers * d.dec_hidden,
    )
}

/// Buffer `i` of a lane's buffers, or a [`ShapeError`] naming `what` if there is none.
fn buf<'s, T, const N: usize>(
    bufs: &'s [&mut [T]; N],
    i: usize,
    what: &'static str,
) -> Result<&'s [T], ShapeError> {
    bufs.get(i).map(|x| &**x).ok_or(no_buf(i, what, N))
}

/// Buffer `i` of a lane's buffers, mutable, or a [`ShapeError`] as for [`buf`].
fn buf_mut<'s, T, const N: usize>(
    bufs: &'s mut [&mut [T]; N],
    i: usize,
    what: &'static str,
) -> Result<&'s mut [T], ShapeError> {
    bufs.get_mut(i).map(|x| &mut **x).ok_or(no_buf(i, what, N))
}

/// The error of a lane buffer `i` that does not exist (of `n`).
fn no_buf(i: usize, what: &'static str, n: usize) -> ShapeError {
    ShapeError {
        what,
        expected: i.saturating_add(1),
        found: n,
    }
}

/// Two different buffers of a lane, the first mutable (an error if `a` and `b` are the
/// same buffer or not buffers).
pub(super) fn two_bufs<'s, T, const N: usize>(
    bufs: &'s mut [&mut [T]; N],
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
pub(super) fn batch_linear<P: Precision, const L: usize>(
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
