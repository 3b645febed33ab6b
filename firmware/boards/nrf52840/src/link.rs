//! The UARTE as the firmware library's link: the HAL implements `embedded-io` 0.7, the
//! library reads and writes `embedded-io` 0.6 (the version of the other HALs and of the
//! QEMU drivers); [`Link`] forwards each call.

use embedded_io::ErrorKind;
use embedded_io_07::{Read as _, Write as _};
use nrf52840_hal::pac::UARTE0;
use nrf52840_hal::uarte::{UarteRx, UarteTx};

/// The two halves of UARTE0.
pub struct Link {
    /// Transmits through its DMA buffer.
    pub tx: UarteTx<UARTE0>,
    /// Receives a byte at a time.
    pub rx: UarteRx<UARTE0>,
}

impl embedded_io::ErrorType for Link {
    type Error = ErrorKind;
}

impl embedded_io::Write for Link {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        self.tx.write(buf).map_err(|_| ErrorKind::Other)
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        self.tx.flush().map_err(|_| ErrorKind::Other)
    }
}

impl embedded_io::Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        self.rx.read(buf).map_err(|_| ErrorKind::Other)
    }
}
