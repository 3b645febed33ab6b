//! The firmware's exit statuses (semihosting `SYS_EXIT_EXTENDED`; `qemu-system-arm`
//! exits with them).

/// How a firmware run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// The session ended normally (after `STATS`).
    Success,
    /// The model cannot be served (after `ERR model: <reason>`).
    ModelError,
    /// A panic (after `PANIC <message> at <file>:<line>`).
    Panic,
    /// A HardFault (after `HARDFAULT pc=... lr=... xpsr=...`).
    HardFault,
    /// The link to the host (the UART) failed: nothing more could be written.
    LinkFailed,
    /// The board's set-up failed before `READY` (a clock that did not start, a
    /// peripheral or link configuration refused by the HAL).
    SetupFailed,
}

impl Exit {
    /// Every exit status.
    pub const ALL: [Exit; 6] = [
        Exit::Success,
        Exit::ModelError,
        Exit::Panic,
        Exit::HardFault,
        Exit::LinkFailed,
        Exit::SetupFailed,
    ];

    /// The status code the firmware exits with.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::ModelError => 3,
            Exit::Panic => 101,
            Exit::HardFault => 102,
            Exit::LinkFailed => 4,
            Exit::SetupFailed => 5,
        }
    }

    /// The exit status of a code, if it is one of the firmware's.
    pub fn from_code(code: i32) -> Option<Exit> {
        Exit::ALL.into_iter().find(|e| e.code() == code)
    }
}

impl core::fmt::Display for Exit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self {
            Exit::Success => "a normal end",
            Exit::ModelError => "a model the firmware cannot serve",
            Exit::Panic => "a firmware panic",
            Exit::HardFault => "a HardFault",
            Exit::LinkFailed => "a failed link to the host",
            Exit::SetupFailed => "a failed board set-up",
        };
        write!(f, "exit status {} ({what})", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for e in Exit::ALL {
            assert_eq!(Exit::from_code(e.code()), Some(e));
        }
        assert_eq!(Exit::from_code(1), None);
        assert_eq!(
            Exit::ModelError.to_string(),
            "exit status 3 (a model the firmware cannot serve)"
        );
    }
}
