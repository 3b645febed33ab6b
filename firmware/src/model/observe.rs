//! What watches a line's decode: the counter ([`Meter`]) and, on the attention rows'
//! second run, the `ATT` lines ([`AttPrinter`]), as one observer type ([`LineObserver`]).

use s2s_device::protocol::{self, AttWeight};
use s2s_kernels::text::Sink;
use s2s_kernels::Precision;
use seq2seq::run::{Observer, Step};

use crate::meter::Meter;
use crate::Counter;

/// Activation values as the `ATT` lines carry them: exact (f32 as its bit pattern,
/// Q0.15 as the integer).
pub trait RawAct: Copy {
    /// The value as an attention weight of the protocol.
    fn raw(self) -> AttWeight;
}

impl RawAct for f32 {
    fn raw(self) -> AttWeight {
        AttWeight::F32Bits(self.to_bits())
    }
}

impl RawAct for i16 {
    fn raw(self) -> AttWeight {
        AttWeight::Q15(self)
    }
}

/// Prints one `ATT` line per decoder step.
pub(super) struct AttPrinter<'o> {
    pub(super) out: &'o mut dyn Sink,
    pub(super) failed: bool,
}

impl AttPrinter<'_> {
    pub(super) fn step<P: Precision>(&mut self, step: &Step<'_, P>)
    where
        P::Act: RawAct,
    {
        let Some(weights) = step.weights else {
            return;
        };
        let mut line = || {
            let step = step.index as u64;
            protocol::write_att(self.out, step, weights.iter().map(|w| w.raw()))
        };
        if !self.failed && line().is_err() {
            self.failed = true;
        }
    }
}

/// The observer of a line's decode: the [`Meter`], and on the attention rows' second run
/// the [`AttPrinter`]. One type for both runs, so that the runner is compiled once for
/// them (a second observer type was a second copy of the encoder pass, about 1.8 KB on
/// the micro:bit).
pub(super) struct LineObserver<'c, 'o, C> {
    pub(super) meter: Meter<'c, C>,
    pub(super) att: Option<AttPrinter<'o>>,
}

impl<P: Precision, C: Counter> Observer<P> for LineObserver<'_, '_, C>
where
    P::Act: RawAct,
{
    fn encoded(&mut self, positions: usize) {
        Observer::<P>::encoded(&mut self.meter, positions);
    }

    fn step(&mut self, step: &Step<'_, P>) {
        self.meter.step(step);
        if let Some(att) = &mut self.att {
            att.step(step);
        }
    }

    fn searched(&mut self, index: usize, expanded: usize) {
        Observer::<P>::searched(&mut self.meter, index, expanded);
    }

    #[cfg(feature = "profile")]
    const PHASES: bool = true;

    #[cfg(feature = "profile")]
    fn phase(&mut self, phase: s2s_kernels::Phase) {
        Observer::<P>::phase(&mut self.meter, phase);
    }
}
