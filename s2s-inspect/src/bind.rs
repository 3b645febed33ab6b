//! A model file bound at its precision, for the sizes the report computes.

/// Runs `$body` with `$net` the result of binding `$file` at its precision `$p` (the
/// core's precisions: the workspace and MAC counts do not depend on how the host
/// computes its layers).
macro_rules! with_net {
    ($file:expr, |$net:ident: $p:ident| $body:expr) => {
        match $file.precision() {
            s2s_kernels::PrecisionKind::F32 => {
                type $p = s2s_kernels::F32;
                let $net = seq2seq::Net::<$p>::bind($file);
                $body
            }
            s2s_kernels::PrecisionKind::W8F32 => {
                type $p = s2s_kernels::W8F32;
                let $net = seq2seq::Net::<$p>::bind($file);
                $body
            }
            s2s_kernels::PrecisionKind::W8A16 => {
                type $p = s2s_kernels::W8A16;
                let $net = seq2seq::Net::<$p>::bind($file);
                $body
            }
        }
    };
}
pub(crate) use with_net;
