//! How a stored tensor is named and typed: the [`TensorId`] of its table entry (its
//! layer's [`Role`], layer, direction and [`Slot`]) and its name, its element type
//! ([`DType`]), the Rust types tensors are read as ([`Stored`]) and the precisions whose
//! tensors a file can hold ([`ModelPrecision`]).

use bytemuck::Pod;
use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::{say, Precision, Requant};

use crate::desc::Role;

/// Element types of stored tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum DType {
    /// f32.
    F32 = 0,
    /// i8.
    I8 = 1,
    /// i32.
    I32 = 2,
    /// A [`Requant`] (two i32).
    Requant = 3,
}

impl DType {
    /// The type with this code.
    pub fn from_code(c: u32) -> Option<Self> {
        match c {
            0 => Some(Self::F32),
            1 => Some(Self::I8),
            2 => Some(Self::I32),
            3 => Some(Self::Requant),
            _ => None,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::F32 | Self::I32 => 4,
            Self::Requant => 8,
        }
    }
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::I8 => "i8",
            Self::I32 => "i32",
            Self::Requant => "requant",
        }
    }
}

/// Element types that tensors are read as.
pub trait Stored: Pod {
    /// The stored type, `None` for `()` (no data).
    const DTYPE: Option<DType>;
}
impl Stored for f32 {
    const DTYPE: Option<DType> = Some(DType::F32);
}
impl Stored for i8 {
    const DTYPE: Option<DType> = Some(DType::I8);
}
impl Stored for i32 {
    const DTYPE: Option<DType> = Some(DType::I32);
}
impl Stored for Requant {
    const DTYPE: Option<DType> = Some(DType::Requant);
}
impl Stored for () {
    const DTYPE: Option<DType> = None;
}

/// Precisions whose tensors can be read from a model file.
pub trait ModelPrecision: Precision<Weight: Stored, RowQ: Stored, Bias: Stored> {}
impl<P> ModelPrecision for P where P: Precision<Weight: Stored, RowQ: Stored, Bias: Stored> {}

/// The three tensors of a dense layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Slot {
    /// The weight matrix.
    Weight = 0,
    /// Per-row quantization data.
    RowQ = 1,
    /// The bias.
    Bias = 2,
}

/// Identifies a tensor: role, layer, direction (0 forward, 1 backward) and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorId {
    /// The layer it belongs to.
    pub role: Role,
    /// Layer index in a stack (0 otherwise).
    pub layer: u8,
    /// Direction: 0 forward, 1 backward.
    pub dir: u8,
    /// Which of the layer's tensors.
    pub slot: Slot,
}

impl TensorId {
    /// The tensor `slot` of layer `role`/`layer`/`dir`.
    pub fn new(role: Role, layer: usize, dir: usize, slot: Slot) -> Self {
        TensorId {
            role,
            layer: layer as u8,
            dir: dir as u8,
            slot,
        }
    }
    /// The stored form.
    pub fn to_u32(self) -> u32 {
        self.role as u32
            | (self.layer as u32) << 8
            | (self.dir as u32) << 16
            | (self.slot as u32) << 24
    }
    /// From the stored form.
    pub fn from_u32(v: u32) -> Option<Self> {
        let role = *Role::ALL.iter().find(|r| **r as u32 == v & 0xff)?;
        let slot = match v >> 24 {
            0 => Slot::Weight,
            1 => Slot::RowQ,
            2 => Slot::Bias,
            _ => return None,
        };
        let (layer, dir) = ((v >> 8) as u8, (v >> 16) as u8);
        if dir > 1 || layer as usize >= crate::desc::MAX_LAYERS {
            return None;
        }
        Some(TensorId {
            role,
            layer,
            dir,
            slot,
        })
    }
}

impl TensorId {
    /// The layer's name without the slot: `encoder.w_ih.l0.fwd`, `output`, ...
    /// (the keys of a model configuration's `[weights]` table).
    pub fn layer_name(&self) -> LayerName {
        LayerName(*self)
    }
}

/// Displays a tensor's layer name (see [`TensorId::layer_name`]).
pub struct LayerName(TensorId);

impl Describe for LayerName {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        let id = self.0;
        out.put(id.role.name())?;
        if matches!(
            id.role,
            Role::EncWih
                | Role::EncWhh
                | Role::DecWih
                | Role::DecWhh
                | Role::Bridge
                | Role::BridgeC
        ) {
            say!(out; ".l", id.layer)?;
        }
        if matches!(id.role, Role::EncWih | Role::EncWhh) {
            out.put(if id.dir == 0 { ".fwd" } else { ".bwd" })?;
        }
        Ok(())
    }
}

impl core::fmt::Display for LayerName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}

impl Describe for TensorId {
    /// `encoder.w_ih.l0.fwd.weight`, `output.bias`, ...
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        self.layer_name().describe(out)?;
        out.put(match self.slot {
            Slot::Weight => ".weight",
            Slot::RowQ => ".q",
            Slot::Bias => ".bias",
        })
    }
}

impl core::fmt::Display for TensorId {
    /// `encoder.w_ih.l0.fwd.weight`, `output.bias`, ...
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}
