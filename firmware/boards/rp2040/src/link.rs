//! USB CDC serial (`usbd-serial`) as the firmware library's link: every read and write
//! polls the USB device until the class has data or room. Bytes written before the
//! host opens the port wait in the class's buffer, then the write blocks: `READY`
//! reaches a host that connects after boot.

use embedded_io::ErrorKind;
use rp2040_hal::usb::UsbBus;
use usb_device::device::UsbDevice;
use usb_device::UsbError;
use usbd_serial::SerialPort;

/// The USB device and its CDC serial port.
pub struct Link<'a> {
    /// The device (enumeration, control requests).
    pub device: UsbDevice<'a, UsbBus>,
    /// The serial port class.
    pub serial: SerialPort<'a, UsbBus>,
}

impl Link<'_> {
    /// Polls the device until `f` stops answering `WouldBlock`.
    fn until<T>(
        &mut self,
        mut f: impl FnMut(&mut SerialPort<'_, UsbBus>) -> Result<T, UsbError>,
    ) -> Result<T, ErrorKind> {
        loop {
            self.device.poll(&mut [&mut self.serial]);
            match f(&mut self.serial) {
                Err(UsbError::WouldBlock) => continue,
                Ok(v) => return Ok(v),
                Err(_) => return Err(ErrorKind::Other),
            }
        }
    }
}

impl embedded_io::ErrorType for Link<'_> {
    type Error = ErrorKind;
}

impl embedded_io::Write for Link<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.until(|s| s.write(buf))
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        self.until(|s| s.flush())
    }
}

impl embedded_io::Read for Link<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.until(|s| s.read(buf))? {
                0 => continue,
                n => return Ok(n),
            }
        }
    }
}
