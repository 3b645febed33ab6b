//! [`Nb`]: a HAL's serial port (`embedded_hal_nb::serial::{Read, Write}`, the usual
//! UART interface of the `embedded-hal` 1.x HALs) as the blocking byte stream the
//! session reads and writes (`embedded_io::{Read, Write}`).

use embedded_hal_nb::nb;
use embedded_hal_nb::serial;
use embedded_io::ErrorKind;

/// A polled serial port as an `embedded_io` byte stream: writes block per byte, reads
/// block until a byte has arrived, then return what is there without waiting more.
pub struct Nb<S>(pub S);

impl<S: serial::ErrorType> embedded_io::ErrorType for Nb<S> {
    type Error = ErrorKind;
}

/// The `embedded_io` kind of a serial error (an overrun, a framing or parity error:
/// bytes were lost; the session ends and a real board starts the next).
fn kind<E>(_: E) -> ErrorKind {
    ErrorKind::Other
}

impl<S: serial::Write<u8>> embedded_io::Write for Nb<S> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        for &b in buf {
            nb::block!(self.0.write(b)).map_err(kind)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        nb::block!(self.0.flush()).map_err(kind)
    }
}

impl<S: serial::Read<u8>> embedded_io::Read for Nb<S> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        let Some(first) = buf.first_mut() else {
            return Ok(0);
        };
        *first = nb::block!(self.0.read()).map_err(kind)?;
        let mut n = 1;
        while let Some(slot) = buf.get_mut(n) {
            match self.0.read() {
                Ok(b) => *slot = b,
                Err(nb::Error::WouldBlock) => break,
                Err(nb::Error::Other(e)) => return Err(kind(e)),
            }
            n += 1;
        }
        Ok(n)
    }
}
