//! The QEMU boards' register drivers: [`board`], the driver `src/boards/<name>.rs` of
//! [`BOARD`] (chosen by `build.rs` from `S2S_BOARD`), which every such board writes with
//! the same items: `Uart` (implements `embedded_io::{Read, Write}`), `Counter` (a
//! deterministic tick counter at the board's clock, a [`crate::Counter`]) and
//! `INVALID_ADDR`.
//! Raw register access stays in these modules; drivers that several boards share
//! (`cmsdk`) are modules here.

/// The [`crate::Counter`] and `Default` of a board's `Counter`, from its `new` and `now`
/// and its `start: u32` field (the same code for every board).
macro_rules! counter_common {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> $crate::Counter for $t {
            fn new() -> Self {
                <$t>::new()
            }

            fn start(&mut self) {
                self.start = Self::now();
            }

            fn read(&self) -> u32 {
                Self::now().wrapping_sub(self.start)
            }
        }

        impl<$($g)*> Default for $t {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}

pub mod cmsdk;

use core::convert::Infallible;

include!(concat!(env!("OUT_DIR"), "/driver.rs"));

/// A polled byte UART, as a board driver writes it: [`Polled`] makes it an
/// `embedded_io::{Read, Write}`.
pub trait Serial {
    /// Sets the UART up (more than one handle is fine: the panic and HardFault handlers
    /// make their own).
    fn open() -> Self;
    /// Sends one byte, waiting for room.
    fn put(&mut self, byte: u8);
    /// A received byte, if one is there (without waiting).
    fn get(&mut self) -> Option<u8>;
    /// Waits until everything sent has gone out.
    fn flush(&mut self);
}

/// A [`Serial`] as an `embedded_io` byte stream: writes block per byte, reads block
/// until at least one byte has arrived, then return what is there.
pub struct Polled<S>(S);

impl<S: Serial> Polled<S> {
    /// Opens the UART.
    pub fn new() -> Self {
        Polled(S::open())
    }
}

impl<S: Serial> Default for Polled<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> embedded_io::ErrorType for Polled<S> {
    type Error = Infallible;
}

impl<S: Serial> embedded_io::Write for Polled<S> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        for &b in buf {
            self.0.put(b);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        self.0.flush();
        Ok(())
    }
}

impl<S: Serial> embedded_io::Read for Polled<S> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        let Some(first) = buf.first_mut() else {
            return Ok(0);
        };
        *first = loop {
            if let Some(b) = self.0.get() {
                break b;
            }
        };
        let mut n = 1;
        while n < buf.len() {
            match self.0.get() {
                Some(b) => buf[n] = b,
                None => break,
            }
            n += 1;
        }
        Ok(n)
    }
}

/// A 32-bit memory-mapped register, accessed with volatile reads and writes.
#[derive(Clone, Copy)]
struct Reg(usize);

// Not every board uses every method.
#[allow(dead_code)]
impl Reg {
    /// # Safety
    /// `addr` must be the address of a 32-bit device register of the selected board that
    /// is mapped for the whole run, and that may be read and written with 32-bit volatile
    /// accesses at any time without breaking memory safety (device registers, not memory
    /// that Rust code owns).
    const unsafe fn new(addr: usize) -> Self {
        Reg(addr)
    }

    #[inline(always)]
    fn read(self) -> u32 {
        // SAFETY: `Reg::new`'s contract: a mapped, aligned device register.
        unsafe { core::ptr::read_volatile(self.0 as *const u32) }
    }

    #[inline(always)]
    fn write(self, value: u32) {
        // SAFETY: `Reg::new`'s contract: a mapped, aligned device register.
        unsafe { core::ptr::write_volatile(self.0 as *mut u32, value) }
    }
}
