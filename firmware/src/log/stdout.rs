//! The log's sink under QEMU: semihosting `SYS_WRITE` to the host's standard output, the
//! descriptor kept raw (a failed open or write drops the bytes; nothing panics).

use semihosting::sys::arm_compat::syscall::{syscall_readonly, OperationNumber, ParamRegR};

/// Opens of `:tt` in this mode give the host's standard output (semihosting `SYS_OPEN`).
const OPEN_WRITE_TRUNCATE: usize = 4;

/// The host's standard output.
pub(super) struct Sink {
    /// Opened on the first frame (`None` until then, or if it failed).
    fd: Option<isize>,
}

impl Sink {
    pub(super) const fn new() -> Self {
        Sink { fd: None }
    }

    /// Opens standard output if it is not open yet.
    pub(super) fn open(&mut self) {
        if self.fd.is_none() {
            self.fd = open_stdout();
        }
    }

    /// Writes `bytes`, as far as the host takes them.
    pub(super) fn write(&self, bytes: &[u8]) {
        if let Some(fd) = self.fd {
            write_all(fd, bytes);
        }
    }
}

/// Writes `bytes` to the descriptor `fd` with semihosting `SYS_WRITE`, as far as the
/// host takes them.
fn write_all(fd: isize, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let block = [
            ParamRegR::isize(fd),
            ParamRegR::buf(bytes),
            ParamRegR::usize(bytes.len()),
        ];
        // SAFETY: SYS_WRITE reads the three-word block and `bytes`, both alive for the
        // call; it returns the count of bytes not written.
        let left =
            unsafe { syscall_readonly(OperationNumber::SYS_WRITE, ParamRegR::block(&block)) }
                .usize();
        let written = bytes.len().saturating_sub(left);
        if written == 0 {
            return; // the host takes nothing: drop the rest
        }
        bytes = bytes.get(written..).unwrap_or(&[]);
    }
}

/// Opens the host's standard output (semihosting `SYS_OPEN` of `:tt`).
fn open_stdout() -> Option<isize> {
    const PATH: &core::ffi::CStr = c":tt";
    let block = [
        ParamRegR::c_str(PATH),
        ParamRegR::usize(OPEN_WRITE_TRUNCATE),
        ParamRegR::usize(PATH.count_bytes()),
    ];
    // SAFETY: SYS_OPEN reads the block and the NUL-terminated path, both alive for the
    // call; it returns a descriptor or -1.
    let fd = unsafe { syscall_readonly(OperationNumber::SYS_OPEN, ParamRegR::block(&block)) }
        .usize() as isize;
    (fd != -1).then_some(fd)
}
