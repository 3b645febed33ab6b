//! The gates' activation of both cells: the logistic sigmoid or a hard sigmoid of Keras.

use s2s_kernels::Precision;

/// The activation of a cell's gates (GRU `r`, `z`; LSTM `i`, `f`, `o`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Recurrent {
    /// The logistic sigmoid `1 / (1 + e^-x)` (PyTorch, Keras 3 default, tf.keras 2).
    Sigmoid = 0,
    /// `clip(0.2 x + 0.5, 0, 1)`: `hard_sigmoid` of Keras 2 and tf.keras (the default
    /// recurrent activation of Keras before 2.3).
    HardSigmoidKeras2 = 1,
    /// `clip(x / 6 + 0.5, 0, 1)`: `hard_sigmoid` of Keras 3.
    HardSigmoidKeras3 = 2,
}

impl Recurrent {
    /// The activation with this file id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Sigmoid),
            1 => Some(Self::HardSigmoidKeras2),
            2 => Some(Self::HardSigmoidKeras3),
            _ => None,
        }
    }

    /// The activation of a wide value, as a unit value.
    #[inline]
    pub fn apply<P: Precision>(self, x: P::Wide) -> P::Act {
        match self {
            Recurrent::Sigmoid => P::sigmoid(x),
            Recurrent::HardSigmoidKeras2 => P::hard_sigmoid_keras2(x),
            Recurrent::HardSigmoidKeras3 => P::hard_sigmoid_keras3(x),
        }
    }
}
