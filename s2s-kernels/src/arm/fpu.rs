//! The f32 dot product on parts with a single-precision FPU (Cortex-M4F, M7, M33 with
//! the hard-float ABI).
//!
//! The f32 path's contract is one sequential sum, `acc = acc + w[k] * x[k]` in index
//! order with the product rounded before the addition (`float.rs`). `VMLA.F32` is
//! exactly that (it is the chained multiply-accumulate, not the fused `VFMA`), so eight
//! `VMLA`s into one register after two `VLDM`s of eight values give the portable
//! loop's bits at 12 instructions per eight columns instead of about 28.

use core::arch::asm;

/// Eight columns: weights `r0`, input `r1`, sum `s24`.
macro_rules! eight_cols {
    () => {
        concat!(
            "vldmia r0!, {{s8-s15}}\n",
            "vldmia r1!, {{s16-s23}}\n",
            "vmla.f32 s24, s8, s16\n",
            "vmla.f32 s24, s9, s17\n",
            "vmla.f32 s24, s10, s18\n",
            "vmla.f32 s24, s11, s19\n",
            "vmla.f32 s24, s12, s20\n",
            "vmla.f32 s24, s13, s21\n",
            "vmla.f32 s24, s14, s22\n",
            "vmla.f32 s24, s15, s23\n",
        )
    };
}

/// `acc + w . x` summed sequentially (extra elements of the longer slice ignored), as
/// `float::dot_acc`.
#[inline(always)]
pub(crate) fn dot_f32(acc: f32, w: &[f32], x: &[f32]) -> f32 {
    let n = w.len().min(x.len());
    let u = n / 8;
    let mut a = acc;
    if u > 0 {
        let bits: u32;
        // SAFETY: reads `8 * u <= n` values from each of `w` and `x`, writes no memory
        // but its own stack (`s8`-`s24`, saved there and restored), touches only the
        // declared core registers.
        unsafe {
            asm!(
                // Single-precision-only FPUs cannot take `s` registers as operands or
                // clobbers: the sum travels in `r3`, and the registers used are saved.
                "vpush {{s8-s24}}",
                "vmov s24, r3",
                // u = 2k + odd: one unit first if odd (C), Z = (k == 0) kept through it.
                odd_then_pairs!("r2", eight_cols!()),
                "vmov r3, s24",
                "vpop {{s8-s24}}",
                inout("r0") w.as_ptr() => _,
                inout("r1") x.as_ptr() => _,
                inout("r2") u => _,
                inout("r3") a.to_bits() => bits,
                options(readonly),
            );
        }
        a = f32::from_bits(bits);
    }
    for (p, q) in w[8 * u..n].iter().zip(&x[8 * u..n]) {
        a += p * q;
    }
    a
}
