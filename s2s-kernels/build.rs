//! Picks the instruction-set kernels from the target name: `cfg(s2s_isa = "...")`.
//!
//! `cfg(target_feature = "dsp")` is never set on stable Rust, so the DSP extension is
//! inferred from the target triple, as the Arm architecture defines it:
//!
//! | target | `s2s_isa` | integer kernels | `s2s_fpu` (f32 kernels) |
//! |---|---|---|---|
//! | `thumbv7em-*`, `thumbv8m.main-*` (M4, M7, M33, M35P, M55) | `dsp` | `SXTB16` + `SMLAD` | with `eabihf` |
//! | `thumbv7m-*` (M3) | `v7m` | `LDRSB` + `MLA` over widened activations | - |
//! | `thumbv6m-*`, `thumbv8m.base-*` (M0, M0+, M1, M23) | `v6m` | Thumb-1 `LDM` + `MULS` | - |
//! | anything else (the host) | none | portable Rust | - |
//!
//! `s2s_arm` is set with any of them. Every kernel gives exactly the portable kernel's
//! results (`docs/NUMERICS.md`).

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(s2s_isa, values(\"dsp\", \"v7m\", \"v6m\"))");
    println!("cargo::rustc-check-cfg=cfg(s2s_arm)");
    println!("cargo::rustc-check-cfg=cfg(s2s_fpu)");
    let target = env::var("TARGET").unwrap_or_default();
    let isa = if target.starts_with("thumbv7em") || target.starts_with("thumbv8m.main") {
        Some("dsp")
    } else if target.starts_with("thumbv7m") {
        Some("v7m")
    } else if target.starts_with("thumbv6m") || target.starts_with("thumbv8m.base") {
        Some("v6m")
    } else {
        None
    };
    if let Some(isa) = isa {
        println!("cargo:rustc-cfg=s2s_isa=\"{isa}\"");
        println!("cargo:rustc-cfg=s2s_arm");
        // The hard-float ABI guarantees an FPU (single precision at least).
        if isa == "dsp" && target.ends_with("eabihf") {
            println!("cargo:rustc-cfg=s2s_fpu");
        }
    }
}
