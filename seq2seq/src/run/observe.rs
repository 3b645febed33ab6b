//! What a run reports and to whom: the [`Observer`] and what it is handed ([`Step`],
//! [`Probe`], [`Values`]), the phase marks that reach it (`with_marks!`), and an
//! observer borrowed from a caller's slice.

use core::marker::PhantomData;

use s2s_kernels::{Fmt, Marks, Phase, Precision};

use crate::beam::BeamView;

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
    /// Final cell states of an LSTM encoder, all layers (once per source).
    EncoderCells,
    /// Cell states of an LSTM decoder, all layers: the initial ones, then after every
    /// step.
    DecoderCells,
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
    /// A beam search has run step `index`, expanding `expanded` hypotheses (each
    /// expansion is a decoder step of its own, with its probes, but no [`Observer::step`]).
    fn searched(&mut self, _index: usize, _expanded: usize) {}
    /// A beam search has closed a step (after [`Observer::searched`]): `beam` holds the
    /// hypotheses that go on and the finished ones so far (for pictures of the search).
    fn beam(&mut self, _beam: &BeamView<'_, P::Wide>) {}
    /// Whether the observer wants [`Observer::phase`] calls. Left `false`, the run marks
    /// no phases and compiles to the same code whatever the observer (the cells and the
    /// attention are shared by every such observer rather than copied for each).
    const PHASES: bool = false;
    /// From here on, the run is in `phase` (profiling, when [`Observer::PHASES`]):
    /// called at the boundaries of the cells' matrix products, the attention's scores
    /// (and the encoder's keys), softmax and context, and the output layer, each
    /// followed by [`Phase::Rest`]; every encoder pass and decoder step starts in
    /// [`Phase::Rest`].
    fn phase(&mut self, _phase: Phase) {}
}

/// Evaluates `$body` with `$m` the [`Marks`] of the observers `$obs` (of type `[$O]`)
/// when they want phases ([`Observer::PHASES`]), else `()`, which marks nothing: runs
/// whose observers want none share one copy of the marked code.
macro_rules! with_marks {
    ($P:ty, $O:ty, $obs:expr, |$m:ident| $body:expr) => {
        if <$O as $crate::run::observe::Observer<$P>>::PHASES {
            let $m = &mut $crate::run::observe::Phases::<$P, $O>::new($obs);
            $body
        } else {
            let $m = &mut ();
            $body
        }
    };
}
pub(super) use with_marks;

/// The observers of a run's lanes as the [`Marks`] of the core crates: a mark goes to
/// every observer's [`Observer::phase`].
pub(crate) struct Phases<'o, P, O>(&'o mut [O], PhantomData<fn() -> P>);

impl<'o, P: Precision, O: Observer<P>> Phases<'o, P, O> {
    pub(crate) fn new(obs: &'o mut [O]) -> Self {
        Phases(obs, PhantomData)
    }
}

impl<P: Precision, O: Observer<P>> Marks for Phases<'_, P, O> {
    #[inline(always)]
    fn mark(&mut self, phase: Phase) {
        for o in self.0.iter_mut() {
            o.phase(phase);
        }
    }
}

/// The observer that observes nothing.
impl<P: Precision> Observer<P> for () {}

/// An observer borrowed from a caller's slice.
pub(super) struct ObsRef<'o, O>(pub(super) &'o mut O);

impl<P: Precision, O: Observer<P>> Observer<P> for ObsRef<'_, O> {
    fn encoded(&mut self, positions: usize) {
        self.0.encoded(positions)
    }
    fn step(&mut self, step: &Step<'_, P>) {
        self.0.step(step)
    }
    fn probe(&mut self, probe: Probe, values: Values<'_, P>) {
        self.0.probe(probe, values)
    }
    fn searched(&mut self, index: usize, expanded: usize) {
        self.0.searched(index, expanded)
    }
    fn beam(&mut self, beam: &BeamView<'_, P::Wide>) {
        self.0.beam(beam)
    }
    const PHASES: bool = O::PHASES;
    fn phase(&mut self, phase: Phase) {
        self.0.phase(phase)
    }
}
