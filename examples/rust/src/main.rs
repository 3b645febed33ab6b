//! The shortest honest program that runs an s2s model in your own firmware: the model
//! file linked in (8-byte aligned, as `ModelFile::parse` reads it in place), checked and
//! bound with the `seq2seq` API, one source decoded greedily in a static workspace, and
//! `source<TAB>output` printed over semihosting (as `s2s run --tsv` prints it).
//!
//! build.rs gives the model's path, its workspace plan (`ARENA_BYTES` for `POSITIONS`
//! source positions, from `seq2seq::Plan`) and the board's memory map.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use s2s_kernels::W8A16;
use semihosting::{print, println, process};
use seq2seq::{Error, ModelFile, Net, Runner};

include!(concat!(env!("OUT_DIR"), "/plan.rs"));

/// The source decoded.
const INPUT: &str = "namaste";

/// 8-byte alignment for the model file.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

/// The model file, in flash.
static MODEL: &Aligned<[u8]> = &Aligned(*include_bytes!(env!("S2S_MODEL_PATH")));

#[entry]
fn main() -> ! {
    // The workspace: a static buffer (`.bss`), no heap. `#[entry]` makes this `static mut`
    // a `&'static mut` that only this call holds.
    static mut ARENA: [u32; ARENA_BYTES / 4] = [0; ARENA_BYTES / 4];

    match decode(ARENA) {
        Ok(()) => process::exit(0),
        Err(e) => {
            println!("error: {e}");
            process::exit(1)
        }
    }
}

/// Decodes [`INPUT`] and prints `INPUT<TAB>output`.
fn decode(arena: &mut [u32]) -> Result<(), Error> {
    let file = ModelFile::parse(&MODEL.0)?;
    // Bound in place: a `Net` is a few KiB, and the micro:bit has 6 KiB of stack.
    let mut net = Err(Error::EmptyInput);
    Net::<W8A16>::bind_into(&file, &mut net);
    let net = net.as_ref().map_err(|e| *e)?;
    let mut runner = Runner::new(net, arena, POSITIONS)?;
    let mut ids = [0u16; MAX_STEPS];
    print!("{INPUT}\t");
    runner.translate_line::<Error>(INPUT, &seq2seq::Prefix::NONE, &mut ids, &mut (), |text| {
        print!("{text}");
        Ok(())
    })?;
    println!();
    Ok(())
}
