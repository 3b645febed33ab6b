//! The checks of a model file's tensor table against its description: the validation
//! tables of each precision ([`Rules`]), every entry on its own, every layer's tensors
//! present and their quantization data in range, and (for the host) finite values.

use s2s_kernels::PrecisionKind;

use super::file::{zero_padding, ModelFile};
use super::layout::align_up;
use super::tensor::{DType, ModelPrecision, Slot, Stored, TensorId};
use crate::desc::LayerSpec;
use crate::Error;

/// What a precision stores for each dense layer, taken from the kernels' types (the
/// one definition): element types per slot, weight planes, quantization data per row.
#[derive(Clone, Copy)]
struct Rules {
    weight: Option<DType>,
    row_q: Option<DType>,
    bias: Option<DType>,
    max_planes: usize,
    row_q_len: fn(usize, usize) -> usize,
    row_q_valid: fn(&[u8]) -> bool,
}

impl Rules {
    fn of(kind: PrecisionKind) -> Rules {
        match kind {
            PrecisionKind::F32 => Self::for_precision::<s2s_kernels::F32>(),
            PrecisionKind::W8F32 => Self::for_precision::<s2s_kernels::W8F32>(),
            PrecisionKind::W8A16 => Self::for_precision::<s2s_kernels::W8A16>(),
        }
    }

    fn for_precision<P: ModelPrecision>() -> Rules {
        Rules {
            weight: <P::Weight as Stored>::DTYPE,
            row_q: <P::RowQ as Stored>::DTYPE,
            bias: <P::Bias as Stored>::DTYPE,
            max_planes: P::MAX_PLANES,
            row_q_len: P::row_q_len,
            row_q_valid: |bytes| {
                let size = core::mem::size_of::<P::RowQ>();
                size == 0
                    || bytes
                        .chunks_exact(size)
                        .all(|c| P::row_q_valid(&bytemuck::pod_read_unaligned(c)))
            },
        }
    }

    /// The element type of `slot` of a layer, `None` when the precision stores none.
    fn dtype(&self, slot: Slot) -> Option<DType> {
        match slot {
            Slot::Weight => self.weight,
            Slot::RowQ => self.row_q,
            Slot::Bias => self.bias,
        }
    }
}

impl ModelFile<'_> {
    /// Checks the tensor table against the description and the data section.
    pub(super) fn check_tensors(
        &self,
        biases: u64,
        data_off: usize,
        data_len: usize,
    ) -> Result<(), Error> {
        let rules = Rules::of(self.precision());
        let d = self.desc();
        // The bias mask: only layers that exist and are not embeddings.
        let mut layers = 0;
        let mut mask_ok = true;
        d.for_each_layer(|s| {
            layers += 1;
            mask_ok &= !(s.is_embedding() && biases >> s.index & 1 == 1);
        });
        if !mask_ok || (layers < 64 && biases >> layers != 0) {
            return Err(Error::BiasMask);
        }

        // Each entry on its own: a tensor of this model, once, of the right type, length
        // and shape, at its place in the data section.
        let data_end = data_off + data_len;
        let mut next = data_off;
        for i in 0..self.tensor_count() {
            let r = self.raw(i).ok_or(Error::SectionLength("tensor table"))?;
            let id = TensorId::from_u32(r.id).ok_or(Error::UnknownTensor(r.id))?;
            let spec = d
                .layer_spec(id.role, id.layer as usize, id.dir as usize)
                .ok_or(Error::UnknownTensor(r.id))?;
            let has_bias = biases >> spec.index & 1 == 1;
            let want = match id.slot {
                Slot::Bias if !has_bias => None,
                slot => rules.dtype(slot),
            }
            .ok_or(Error::UnknownTensor(r.id))?;
            if (0..i).any(|j| self.raw(j).is_some_and(|t| t.id == r.id)) {
                return Err(Error::DuplicateTensor(r.id));
            }
            let dtype = DType::from_code(r.dtype).ok_or(Error::UnknownDType {
                id: r.id,
                code: r.dtype,
            })?;
            if dtype != want {
                return Err(Error::TensorType {
                    id: r.id,
                    found: dtype,
                });
            }
            let (rows, cols) = (r.rows as usize, r.cols as usize);
            let len = rows
                .checked_mul(cols)
                .and_then(|n| n.checked_mul(dtype.size()));
            if len != Some(r.len as usize) {
                return Err(Error::TensorLength(r.id));
            }
            let shape_ok = match id.slot {
                Slot::Weight => {
                    rows == spec.rows
                        && cols.checked_rem(spec.cols) == Some(0)
                        && (1..=rules.max_planes).contains(&(cols / spec.cols))
                }
                // Checked against the weight's planes below.
                Slot::RowQ => rows == spec.rows,
                Slot::Bias => (rows, cols) == (spec.rows, 1),
            };
            if !shape_ok {
                let expected_cols = if id.slot == Slot::Bias { 1 } else { spec.cols };
                return Err(Error::TensorShape {
                    id: r.id,
                    expected: (spec.rows, expected_cols),
                    found: (rows, cols),
                });
            }
            let off = r.offset as usize;
            if Some(off) != align_up(next) {
                return Err(Error::TensorMisplaced(r.id));
            }
            let stop = off
                .checked_add(r.len as usize)
                .filter(|&e| e <= data_end)
                .ok_or(Error::TensorOutsideData(r.id))?;
            zero_padding(
                self.bytes()
                    .get(next..off)
                    .ok_or(Error::TensorMisplaced(r.id))?,
            )?;
            next = stop;
        }
        if next != data_end {
            return Err(Error::TrailingData);
        }

        // Every tensor the description calls for is there; quantization data fits its
        // weight's planes and is in range.
        let mut result = Ok(());
        d.for_each_layer(|s| {
            if result.is_ok() {
                result = self.check_layer(&rules, &s, biases >> s.index & 1 == 1);
            }
        });
        result
    }

    /// The tensors of one layer: present, and its quantization data consistent.
    fn check_layer(&self, rules: &Rules, s: &LayerSpec, has_bias: bool) -> Result<(), Error> {
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let w = self
            .find(id(Slot::Weight))
            .ok_or(Error::MissingTensor(id(Slot::Weight).to_u32()))?;
        if rules.row_q.is_some() {
            let q_id = id(Slot::RowQ);
            let q = self.find(q_id).ok_or(Error::MissingTensor(q_id.to_u32()))?;
            // The weight's shape was checked: `s.cols` divides its columns.
            let planes = w.cols.checked_div(s.cols).unwrap_or(0);
            let per_row = (rules.row_q_len)(1, s.parts) * planes;
            if q.cols != per_row {
                return Err(Error::TensorShape {
                    id: q_id.to_u32(),
                    expected: (s.rows, per_row),
                    found: (q.rows, q.cols),
                });
            }
            if !(rules.row_q_valid)(self.bytes_of(&q)?) {
                return Err(Error::BadRowQ(q_id.to_u32()));
            }
        }
        if has_bias && self.find(id(Slot::Bias)).is_none() {
            return Err(Error::MissingTensor(id(Slot::Bias).to_u32()));
        }
        Ok(())
    }

    /// Checks that every float weight, bias and scale is finite ([`Error::NonFinite`]
    /// names the first tensor that is not). [`ModelFile::parse`] does not scan values;
    /// the host tools and the writer run this after it, the firmware does not (it
    /// would read every weight at boot, and a non-finite weight cannot make the
    /// decoder fault: it only gives wrong outputs).
    pub fn check_finite(&self) -> Result<(), Error> {
        for t in self.tensors().filter(|t| t.dtype == DType::F32) {
            let bytes = self.bytes_of(&t)?;
            let finite = bytes
                .chunks_exact(4)
                .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
            if !finite {
                return Err(Error::NonFinite(t.id.to_u32()));
            }
        }
        Ok(())
    }
}
