//! The shortest honest program that runs an s2s model in your own firmware: the model
//! embedded at build time (`s2s embed MODEL.s2s --board BOARD -o model.rs`: its
//! description, vocabularies and tensors as constants, checked on the host), bound with
//! the `seq2seq` API without a model-file parser, one source decoded greedily in a
//! static workspace of exactly the model's size, and `source<TAB>output` printed over
//! semihosting (as `s2s run --tsv` prints it).
//!
//! build.rs gives the module's path (`S2S_EMBED`) and the board's memory map.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use semihosting::{print, println, process};
use seq2seq::{Error, Net, Runner};

/// The model `s2s embed` wrote: `MODEL`, its precision `P`, `ARENA_BYTES` for
/// `POSITIONS` source positions. Its statics name their link section (the memory map
/// gathers them), which the `unsafe_code` lint flags.
#[allow(missing_docs, dead_code, clippy::all, unsafe_code)]
mod model {
    include!(env!("S2S_EMBED_RS"));
}

/// The source decoded.
const INPUT: &str = "namaste";

/// The model's most output tokens.
const MAX_STEPS: usize = model::MODEL.desc.max_steps;

#[entry]
fn main() -> ! {
    // The workspace: a static buffer (`.bss`), no heap. `#[entry]` makes this `static mut`
    // a `&'static mut` that only this call holds.
    static mut ARENA: [u32; model::ARENA_BYTES / 4] = [0; model::ARENA_BYTES / 4];

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
    // Bound in place: a `Net` is a few KiB, and the micro:bit has 6 KiB of stack.
    let mut net = Err(Error::EmptyInput);
    Net::<model::P>::embedded_into(&model::MODEL, &mut net);
    let net = net.as_ref().map_err(|e| *e)?;
    let mut runner = Runner::new(net, arena, model::POSITIONS)?;
    let mut ids = [0u16; MAX_STEPS];
    print!("{INPUT}\t");
    runner.translate_line::<Error>(INPUT, &seq2seq::Prefix::NONE, &mut ids, &mut (), |text| {
        print!("{text}");
        Ok(())
    })?;
    println!();
    Ok(())
}
