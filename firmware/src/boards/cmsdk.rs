//! ARM CMSDK APB UART and APB timer (Cortex-M System Design Kit), as on the MPS2 FPGA
//! images. Both mps2 boards use these with their own base addresses and clock.

use core::convert::Infallible;

use super::Reg;

/// CMSDK APB UART at `BASE`, clocked at `CLK_HZ`, 8N1 at 115200 baud.
pub struct Uart<const BASE: usize, const CLK_HZ: u32>(());

impl<const BASE: usize, const CLK_HZ: u32> Uart<BASE, CLK_HZ> {
    const DATA: usize = 0x000;
    const STATE: usize = 0x004;
    const CTRL: usize = 0x008;
    const BAUDDIV: usize = 0x010;
    const STATE_TX_FULL: u32 = 1 << 0;
    const STATE_RX_FULL: u32 = 1 << 1;
    const CTRL_TX_EN: u32 = 1 << 0;
    const CTRL_RX_EN: u32 = 1 << 1;

    fn reg(offset: usize) -> Reg {
        // SAFETY: BASE is the UART's base address on this board (given by the board
        // module) and `offset` one of the register offsets above (CMSDK TRM).
        unsafe { Reg::new(BASE + offset) }
    }

    /// Enables the transmitter and receiver. Creating more than one handle is fine: the
    /// panic and HardFault handlers make their own to print a last line.
    pub fn new() -> Self {
        Self::reg(Self::BAUDDIV).write(CLK_HZ / 115_200);
        Self::reg(Self::CTRL).write(Self::CTRL_TX_EN | Self::CTRL_RX_EN);
        if !Self::rx_ready() {
            // Nothing received, so nothing is lost: QEMU looks for host input again only
            // after a DATA read (enabling RX is not enough), and would otherwise deliver
            // the first input up to a second late.
            let _ = Self::reg(Self::DATA).read();
        }
        Uart(())
    }

    fn put(&mut self, byte: u8) {
        while Self::reg(Self::STATE).read() & Self::STATE_TX_FULL != 0 {}
        Self::reg(Self::DATA).write(byte as u32);
    }

    fn rx_ready() -> bool {
        Self::reg(Self::STATE).read() & Self::STATE_RX_FULL != 0
    }
}

impl<const BASE: usize, const CLK_HZ: u32> Default for Uart<BASE, CLK_HZ> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BASE: usize, const CLK_HZ: u32> embedded_io::ErrorType for Uart<BASE, CLK_HZ> {
    type Error = Infallible;
}

impl<const BASE: usize, const CLK_HZ: u32> embedded_io::Write for Uart<BASE, CLK_HZ> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        for &b in buf {
            self.put(b);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        while Self::reg(Self::STATE).read() & Self::STATE_TX_FULL != 0 {}
        Ok(())
    }
}

impl<const BASE: usize, const CLK_HZ: u32> embedded_io::Read for Uart<BASE, CLK_HZ> {
    /// Blocks until at least one byte has arrived, then returns what is there.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        if buf.is_empty() {
            return Ok(0);
        }
        while !Self::rx_ready() {}
        let mut n = 0;
        while n < buf.len() && Self::rx_ready() {
            buf[n] = Self::reg(Self::DATA).read() as u8;
            n += 1;
        }
        Ok(n)
    }
}

/// CMSDK APB timer at `BASE` as a free-running 32-bit down-counter.
pub struct Counter<const BASE: usize> {
    start: u32,
}

impl<const BASE: usize> Counter<BASE> {
    const CTRL: usize = 0x000;
    const VALUE: usize = 0x004;
    const RELOAD: usize = 0x008;
    const CTRL_EN: u32 = 1 << 0;

    fn reg(offset: usize) -> Reg {
        // SAFETY: BASE is the timer's base address on this board (given by the board
        // module) and `offset` one of the register offsets above (CMSDK TRM).
        unsafe { Reg::new(BASE + offset) }
    }

    /// Starts the timer if it is not running yet (it is shared by all `Counter`s and
    /// never stopped) and starts counting from now.
    pub fn new() -> Self {
        if Self::reg(Self::CTRL).read() & Self::CTRL_EN == 0 {
            Self::reg(Self::RELOAD).write(u32::MAX);
            Self::reg(Self::VALUE).write(u32::MAX);
            Self::reg(Self::CTRL).write(Self::CTRL_EN);
        }
        let mut c = Counter { start: 0 };
        c.start();
        c
    }

    fn now() -> u32 {
        // Down-counter: negate so that time goes up.
        !Self::reg(Self::VALUE).read()
    }

    /// Restarts counting from now.
    pub fn start(&mut self) {
        self.start = Self::now();
    }

    /// Ticks since the last `start` (wraps after 2^32 ticks).
    pub fn read(&self) -> u32 {
        Self::now().wrapping_sub(self.start)
    }
}

impl<const BASE: usize> Default for Counter<BASE> {
    fn default() -> Self {
        Self::new()
    }
}
