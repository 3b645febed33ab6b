//! `kernel-bench` (`firmware/src/bin/kernel-bench.rs`) on a board: the weights it reads
//! from the model region and its `BENCH` lines.

use std::path::Path;
use std::time::Duration;

use s2s_device::Board;

use super::{qemu, Firmware};
use crate::error::{Error, Result};

/// Pseudo-random weights for `kernel-bench`: int8 in `[-127, 127]` at the start of the
/// model region, and on the FPU boards f32 in `[-0.1, 0.1)` from 256 KiB on; cut to the
/// region (the smaller regions of lm3s6965evb and microbit do not hold the 768x256 int8
/// matrix, and `kernel-bench` runs fewer rows there). The counts do not depend on them.
pub fn weights(board: &Board) -> Vec<u8> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let int8 = (768 * 256).min(board.memory.model.length as usize);
    let mut bytes: Vec<u8> = (0..int8)
        .map(|_| ((next() % 255) as i32 - 127) as i8 as u8)
        .collect();
    if has_fpu(board) {
        bytes.resize(256 * 1024, 0);
        for _ in 0..768 * 256 {
            let v = (next() >> 40) as f32 / (1u64 << 24) as f32 * 0.2 - 0.1;
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    bytes.truncate(board.memory.model.length as usize);
    bytes
}

/// Boards with an FPU: those that compile f32 models.
pub fn has_fpu(board: &Board) -> bool {
    board.precisions.contains(&"f32")
}

/// One `BENCH <kernel> <kernels> <shape> insns=<n> per=<units> <unit>` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchLine {
    /// The kernel (`linear_w8a16`, `tanh_q15`, ...).
    pub kernel: String,
    /// `native` (the board's instruction-set kernels) or `portable`.
    pub kernels: String,
    /// The shape run (`768x256`, `256`, ...).
    pub shape: String,
    /// Instructions, net of the counter reads.
    pub insns: u64,
    /// Units of work (MACs or elements).
    pub per: u64,
    /// `MACs` or `elements`.
    pub unit: String,
}

impl BenchLine {
    /// Parses a `BENCH` line; `None` for any other line.
    pub fn parse(line: &str) -> Option<BenchLine> {
        let mut w = line.split(' ');
        if w.next()? != "BENCH" {
            return None;
        }
        let (kernel, kernels, shape) = (w.next()?, w.next()?, w.next()?);
        let insns = w.next()?.strip_prefix("insns=")?.parse().ok()?;
        let per = w.next()?.strip_prefix("per=")?.parse().ok()?;
        let unit = w.next()?;
        w.next().is_none().then(|| BenchLine {
            kernel: kernel.into(),
            kernels: kernels.into(),
            shape: shape.into(),
            insns,
            per,
            unit: unit.into(),
        })
    }

    /// Instructions per unit.
    pub fn per_unit(&self) -> f64 {
        self.insns as f64 / self.per.max(1) as f64
    }
}

/// Builds `kernel-bench` for `board`, runs it under QEMU with [`weights`] (written to
/// `dir`) and returns its `BENCH` lines; an error unless it ends with `DONE` and exit
/// status 0 (a native kernel that differs from the portable one panics).
pub fn run_kernel_bench(
    firmware: &Firmware,
    board: &'static Board,
    dir: &Path,
    timeout: Duration,
) -> Result<Vec<BenchLine>> {
    let elf = firmware.build(board, "kernel-bench", true)?;
    let path = dir.join(format!("kernel-bench-weights-{}.bin", board.name));
    std::fs::write(&path, weights(board)).map_err(Error::io(&path))?;
    let run = qemu::run(board, &elf, Some(&path), &[], timeout)?;
    let lines = &run.uart_lines;
    if run.exit_code != Some(0) || lines.last().map(String::as_str) != Some("DONE") {
        return Err(Error::device(
            board.name,
            format!(
                "kernel-bench did not finish ({}): {:?}",
                run.status(),
                run.tail()
            ),
        ));
    }
    Ok(lines.iter().filter_map(|l| BenchLine::parse(l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_lines_parse_and_others_do_not() {
        let l = BenchLine::parse("BENCH linear_w8a16 native 768x256 insns=302000 per=196608 MACs")
            .unwrap();
        assert_eq!(
            (l.kernel.as_str(), l.kernels.as_str(), l.shape.as_str()),
            ("linear_w8a16", "native", "768x256")
        );
        assert_eq!(
            (l.insns, l.per, l.unit.as_str()),
            (302_000, 196_608, "MACs")
        );
        assert!((l.per_unit() - 1.536).abs() < 1e-3);
        for bad in [
            "DONE",
            "BENCH tanh_q15 native 256 insns=x per=256 elements",
            "BENCH tanh_q15 native 256 insns=1 per=256",
            "BENCH tanh_q15 native 256 insns=1 per=256 elements more",
        ] {
            assert_eq!(BenchLine::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_weights_fit_each_region() {
        for b in s2s_device::board::register_boards() {
            let w = weights(b);
            assert!(w.len() <= b.memory.model.length as usize, "{}", b.name);
            assert!(w.len() >= 192 * 64, "{}", b.name);
        }
    }
}
