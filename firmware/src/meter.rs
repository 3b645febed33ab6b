//! Timing a line: the [`Meter`] observer reads the board counter at the end of the
//! encoder pass and of each decoder step and, with the `profile` feature, at every phase
//! mark ([`Profile`]), for the `CNT` line of [`crate::model`].

#[cfg(feature = "profile")]
use core::fmt;

#[cfg(feature = "profile")]
use s2s_device::protocol::{self, PHASES};
#[cfg(feature = "profile")]
use s2s_kernels::text::Sink;
#[cfg(feature = "profile")]
use s2s_kernels::Phase;
use s2s_kernels::Precision;
use seq2seq::run::{Observer, Step};

#[cfg(feature = "profile")]
use crate::measure;
use crate::Counter;

/// Times the encoder pass and each decoder step with the board counter (and, with the
/// `profile` feature, their phases).
pub(crate) struct Meter<'c, C> {
    pub(crate) counter: &'c mut C,
    pub(crate) enc: u32,
    pub(crate) ticks: &'c mut [u32],
    pub(crate) steps: usize,
    #[cfg(feature = "profile")]
    pub(crate) profile: &'c mut Profile,
}

impl<P: Precision, C: Counter> Observer<P> for Meter<'_, C> {
    fn encoded(&mut self, _positions: usize) {
        self.enc = self.counter.read();
        #[cfg(feature = "profile")]
        self.profile.end(self.enc, true);
        self.counter.start();
    }

    fn step(&mut self, step: &Step<'_, P>) {
        self.tick(step.index);
    }

    fn searched(&mut self, index: usize, _expanded: usize) {
        self.tick(index);
    }

    #[cfg(feature = "profile")]
    const PHASES: bool = true;

    // Out of line: the marks in the cells and the attention then add a call to their
    // frames, not this bookkeeping's registers (the micro:bit's stack is small).
    #[cfg(feature = "profile")]
    #[inline(never)]
    fn phase(&mut self, phase: Phase) {
        self.profile.switch(self.counter.read(), phase);
    }
}

impl<C: Counter> Meter<'_, C> {
    /// Step `index` has ended.
    fn tick(&mut self, index: usize) {
        let ticks = self.counter.read();
        #[cfg(feature = "profile")]
        self.profile.end(ticks, false);
        if let Some(slot) = self.ticks.get_mut(index) {
            *slot = ticks;
        }
        self.steps = index + 1;
        self.counter.start();
    }
}

/// Counter ticks of one line by phase (`profile` feature): the encoder pass's, and all
/// decoder steps' together, with the phase marks counted. Readings are ticks since the
/// counter's start (that of the encoder pass or of the step), as for `CNT`, so that the
/// phases of a pass or step add up to its count exactly. (Kept small: it is on the
/// stack, in the line handler.)
#[cfg(feature = "profile")]
#[derive(Default)]
pub(crate) struct Profile {
    /// The phase running since `since`.
    current: u8,
    /// Whether the encoder pass has ended.
    decoding: bool,
    marks: [u16; 2],
    since: u32,
    enc: [u32; PHASES],
    tok: [u32; PHASES],
}

#[cfg(feature = "profile")]
impl Profile {
    /// A line starts: the encoder pass, in [`Phase::Rest`].
    pub(crate) fn new() -> Self {
        Profile {
            current: Phase::Rest as u8,
            ..Profile::default()
        }
    }

    /// Adds the ticks from `since` to `now` to the current phase.
    fn close(&mut self, now: u32) {
        let part = if self.decoding {
            &mut self.tok
        } else {
            &mut self.enc
        };
        if let Some(t) = part.get_mut(usize::from(self.current)) {
            *t = t.wrapping_add(now.wrapping_sub(self.since));
        }
        self.since = now;
    }

    /// The run is in `phase` from the reading `now` on.
    fn switch(&mut self, now: u32, phase: Phase) {
        self.close(now);
        self.current = phase as u8;
        let marks = &mut self.marks[usize::from(self.decoding)];
        *marks = marks.wrapping_add(1);
    }

    /// The encoder pass (`encoder`) or a decoder step ended at the reading `now`; the
    /// counter restarts and the next step starts in [`Phase::Rest`].
    fn end(&mut self, now: u32, encoder: bool) {
        self.close(now);
        self.decoding |= encoder;
        (self.current, self.since) = (Phase::Rest as u8, 0);
    }

    /// The counts in instructions, with the instructions of one mark.
    fn counts(&self, mark_insns: u64) -> protocol::PhaseCounts {
        let insns = |t: [u32; PHASES]| t.map(|t| measure::ticks_to_insns(t.into()));
        protocol::PhaseCounts {
            enc: insns(self.enc),
            tok: insns(self.tok),
            marks: self.marks.map(u64::from),
            mark_insns,
        }
    }
}

#[cfg(feature = "profile")]
impl<C: Counter> Meter<'_, C> {
    /// Instructions of one phase mark as the model's marks run it (the counter read and
    /// the bookkeeping): 16 marks in a row, counted, then the profile reset.
    #[inline(never)]
    pub(crate) fn mark_insns<P: Precision>(&mut self) -> u64 {
        const N: u32 = 16;
        self.counter.start();
        for _ in 0..N {
            Observer::<P>::phase(self, core::hint::black_box(Phase::Rest));
        }
        let ticks = self.counter.read();
        *self.profile = Profile::new();
        measure::ticks_to_insns(u64::from(ticks)) / u64::from(N)
    }
}

/// The `CNT` line with the phases (`profile`). Out of line: the counts are made only
/// while it runs, not in the decoding's frame (the micro:bit's stack is small).
#[cfg(feature = "profile")]
#[inline(never)]
pub(crate) fn write_cnt_phases(
    out: &mut dyn Sink,
    enc: u32,
    ticks: &[u32],
    profile: &Profile,
    mark_insns: u64,
) -> fmt::Result {
    let insns = |ticks: &u32| measure::ticks_to_insns(u64::from(*ticks));
    let phases = profile.counts(mark_insns);
    protocol::write_cnt(out, insns(&enc), ticks.iter().map(insns), Some(&phases))
}
