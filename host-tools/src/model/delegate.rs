//! The operations a host precision takes unchanged from the core precision it stands
//! for: the host's precisions ([`HostF32`](super::hostf32::HostF32), the calibration
//! recorder, [`HostW8A16`](super::hostw8a16::HostW8A16)) change how dense layers are
//! computed, never what anything computes, so every element-wise operation is the
//! core's. One list, so that a method added to `Precision` is delegated by all of them.

/// Inside an `impl Precision for ...` whose types are `$core`'s: the element-wise
/// operations of `$core` (everything but the layers, the embedding and the LSTM cell
/// update, which the host precisions define themselves).
macro_rules! delegate_elementwise {
    ($core:ty) => {
        fn row_q_len(rows: usize, parts: usize) -> usize {
            <$core>::row_q_len(rows, parts)
        }
        fn row_q_valid(q: &Self::RowQ) -> bool {
            <$core>::row_q_valid(q)
        }
        fn scale(real: f32, q: s2s_kernels::Requant) -> Self::Scale {
            <$core>::scale(real, q)
        }
        fn sigmoid(x: Self::Wide) -> Self::Act {
            <$core>::sigmoid(x)
        }
        fn tanh(x: Self::Wide) -> Self::Act {
            <$core>::tanh(x)
        }
        fn add(a: Self::Wide, b: Self::Wide) -> Self::Wide {
            <$core>::add(a, b)
        }
        fn gate(u: Self::Act, x: Self::Wide) -> Self::Wide {
            <$core>::gate(u, x)
        }
        fn gate_act(u: Self::Act, x: Self::Act) -> Self::Act {
            <$core>::gate_act(u, x)
        }
        fn blend(z: Self::Act, h: Self::Act, n: Self::Act) -> Self::Act {
            <$core>::blend(z, h, n)
        }
        fn hard_sigmoid_keras2(x: Self::Wide) -> Self::Act {
            <$core>::hard_sigmoid_keras2(x)
        }
        fn hard_sigmoid_keras3(x: Self::Wide) -> Self::Act {
            <$core>::hard_sigmoid_keras3(x)
        }
        fn widen(a: Self::Act, f: s2s_kernels::Fmt) -> Self::Wide {
            <$core>::widen(a, f)
        }
        fn narrow(w: Self::Wide, f: s2s_kernels::Fmt) -> Self::Act {
            <$core>::narrow(w, f)
        }
        fn dot(
            a: &[Self::Act],
            fa: s2s_kernels::Fmt,
            b: &[Self::Act],
            fb: s2s_kernels::Fmt,
            s: Self::Scale,
        ) -> Self::Wide {
            <$core>::dot(a, fa, b, fb, s)
        }
        fn softmax(x: &[Self::Wide], out: &mut [Self::Act]) {
            <$core>::softmax(x, out)
        }
        fn weighted_sum(w: &[Self::Act], rows: &[Self::Act], out: &mut [Self::Act]) {
            <$core>::weighted_sum(w, rows, out)
        }
        fn position(s: Self::Act, n: usize) -> Self::Wide {
            <$core>::position(s, n)
        }
        fn nearest(p: Self::Wide) -> usize {
            <$core>::nearest(p)
        }
        fn gaussian(w: Self::Act, i: usize, p: Self::Wide, d: usize) -> Self::Act {
            <$core>::gaussian(w, i, p, d)
        }
        fn unit_to_f32(a: Self::Act) -> f32 {
            <$core>::unit_to_f32(a)
        }
        fn act_to_f32(a: Self::Act, f: s2s_kernels::Fmt) -> f32 {
            <$core>::act_to_f32(a, f)
        }
        fn wide_to_f32(w: Self::Wide) -> f32 {
            <$core>::wide_to_f32(w)
        }
    };
}

pub(crate) use delegate_elementwise;
