//! What only QEMU needs to know about a board: the machine and CPU it emulates it with,
//! and how instructions are counted there.
//!
//! Under `-icount shift=N` QEMU runs one guest instruction per 2^N ns of virtual time,
//! so a counter clocked at `f` Hz counts exactly `f * 2^N / 10^9` ticks per instruction:
//! the firmware's counts convert to instruction counts without error.

/// A QEMU machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qemu {
    /// `-machine`.
    pub machine: &'static str,
    /// `-cpu` (the machine's only CPU).
    pub cpu: &'static str,
}

/// `-icount shift=ICOUNT_SHIFT`: one instruction is 2^7 = 128 ns of virtual time.
pub const ICOUNT_SHIFT: u32 = 7;

/// The `qemu-system-arm` arguments that every run shares, before the machine's: no
/// display, no monitor, exact instruction counting, semihosting (the firmware's log and
/// exit status).
pub const COMMON_ARGS: [&str; 8] = [
    "-nographic",
    "-monitor",
    "none",
    "-icount",
    "shift=7",
    "-semihosting-config",
    "enable=on,target=native",
    "-kernel",
];

/// A positive rational `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    /// Numerator.
    pub num: u64,
    /// Denominator.
    pub den: u64,
}

impl Ratio {
    /// Converts a tick count to instructions (rounded to nearest).
    pub const fn ticks_to_insns(self, ticks: u64) -> u64 {
        (ticks * self.den + self.num / 2) / self.num
    }
}

const fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Ticks of a counter clocked at `clock_hz` per guest instruction under
/// `-icount shift=`[`ICOUNT_SHIFT`], in lowest terms.
pub const fn ticks_per_insn(clock_hz: u32) -> Ratio {
    let num = (clock_hz as u64) << ICOUNT_SHIFT;
    let den = 1_000_000_000;
    let g = gcd(num, den);
    Ratio {
        num: num / g,
        den: den / g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::find;

    #[test]
    fn ticks_per_instruction_as_measured_with_the_probe_firmware() {
        let r = |n| ticks_per_insn(find(n).unwrap().clock_hz);
        assert_eq!(r("mps2-an386"), Ratio { num: 16, den: 5 }); // 3.2
        assert_eq!(r("lm3s6965evb"), Ratio { num: 32, den: 5 }); // 6.4
        assert_eq!(r("microbit"), Ratio { num: 256, den: 125 }); // 2.048
        assert_eq!(r("mps2-an505"), Ratio { num: 64, den: 25 }); // 2.56
        assert_eq!(r("mps2-an386").ticks_to_insns(32), 10);
        assert_eq!(COMMON_ARGS[4], "shift=7");
        assert_eq!(ICOUNT_SHIFT, 7);
    }
}
