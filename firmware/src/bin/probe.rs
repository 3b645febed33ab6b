//! Diagnostics firmware for the board layer, same protocol as the real firmware. Commands:
//!
//! - `loop N`: times a busy loop of exactly `2 * N` instructions (`subs`/`bne`) with the
//!   board's counter: `LOOP n=N ticks=T insns=I` (I = T converted with TICKS_PER_INSN).
//! - `sum N`: FNV-1a (32-bit) of the first N bytes of the model region:
//!   `SUM n=N fnv1a=0x...`, to check a model loaded with QEMU's `-device loader`.
//! - `region`: `REGION start=0x... size=...`.
#![no_std]
#![no_main]

use core::fmt::Write as _;

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use firmware::app::{self, HandlerError, LineHandler};
use firmware::boards::board;
use firmware::{measure, Counter as _};
use s2s_kernels::text::{Describe, Sink};

/// Runs `subs r0, #1; bne` `n` times: 2n instructions (n > 0).
#[inline(never)]
fn busy_loop(n: u32) {
    if n == 0 {
        return;
    }
    // SAFETY: only counts r0 down to zero; touches no memory and no other register
    // besides the flags.
    unsafe {
        core::arch::asm!("2:", "subs r0, #1", "bne 2b", inout("r0") n => _, options(nomem, nostack));
    }
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Why a probe command failed: its own texts (the session's refusals keep theirs).
#[derive(Clone, Copy, Debug, defmt::Format)]
struct ProbeError(&'static str);

impl Describe for ProbeError {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        out.put(self.0)
    }
}

impl From<HandlerError> for ProbeError {
    fn from(e: HandlerError) -> Self {
        ProbeError(e.as_str())
    }
}

fn parse_u32(arg: &[u8]) -> Result<u32, ProbeError> {
    let s = core::str::from_utf8(arg).map_err(|_| ProbeError("bad number"))?;
    s.trim().parse().map_err(|_| ProbeError("bad number"))
}

struct Probe;

impl LineHandler for Probe {
    type Error = ProbeError;

    fn handle(&mut self, line: &[u8], out: &mut dyn Sink) -> Result<(), ProbeError> {
        let (cmd, arg) = match line.iter().position(|&b| b == b' ') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &b""[..]),
        };
        let result = match cmd {
            b"loop" => {
                let n = parse_u32(arg)?;
                let mut counter = board::Counter::new();
                counter.start();
                busy_loop(n);
                let ticks = counter.read();
                let insns = measure::ticks_to_insns(u64::from(ticks));
                defmt::info!("LOOP n={=u32} ticks={=u32} insns={=u64}", n, ticks, insns);
                writeln!(out, "LOOP n={n} ticks={ticks} insns={insns}")
            }
            b"sum" => {
                let n = parse_u32(arg)? as usize;
                let region = measure::model_region();
                let bytes = region
                    .get(..n)
                    .ok_or(ProbeError("beyond the model region"))?;
                let sum = fnv1a(bytes);
                defmt::info!("SUM n={=usize} fnv1a={=u32:#010x}", n, sum);
                writeln!(out, "SUM n={n} fnv1a=0x{sum:08x}")
            }
            b"region" => {
                let region = measure::model_region();
                writeln!(
                    out,
                    "REGION start=0x{:08x} size={}",
                    region.as_ptr() as usize,
                    region.len()
                )
            }
            _ => return Err(ProbeError("unknown command (loop N | sum N | region)")),
        };
        result.map_err(|_| ProbeError("output failed"))
    }
}

#[entry]
fn main() -> ! {
    app::run(&mut Probe)
}
