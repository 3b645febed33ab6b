//! The model-file path alone, for the link-time no-panic check: parses the model region
//! and binds it at its precision (any this build compiles), then exits with
//! `Exit::Success` (the model is valid) or `Exit::ModelError` (it is not), printing
//! nothing through `core::fmt`. Built with `--features no-panic` it links only if no
//! panic is reachable from `ModelFile::parse` and `Net::bind` (see `fault.rs`).
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use firmware::{fault, measure};
use s2s_device::exit::Exit;
use s2s_kernels::PrecisionKind;
use seq2seq::{Error, ModelFile, Net};

fn check(region: &'static [u8]) -> Result<(), Error> {
    let file = ModelFile::parse(region)?;
    match file.precision() {
        #[cfg(precision = "f32")]
        PrecisionKind::F32 => Net::<s2s_kernels::F32>::bind(&file).map(drop),
        #[cfg(precision = "w8f32")]
        PrecisionKind::W8F32 => Net::<s2s_kernels::W8F32>::bind(&file).map(drop),
        #[cfg(precision = "w8a16")]
        PrecisionKind::W8A16 => Net::<s2s_kernels::W8A16>::bind(&file).map(drop),
        #[allow(unreachable_patterns)] // when every precision is compiled
        other => Err(Error::UnsupportedPrecision(other)),
    }
}

#[entry]
fn main() -> ! {
    match check(measure::model_region()) {
        Ok(()) => fault::exit(Exit::Success),
        Err(_) => fault::exit(Exit::ModelError),
    }
}
