//! ARM CMSDK APB UART and APB timer (Cortex-M System Design Kit), as on the MPS2 FPGA
//! images. Both mps2 boards use these with their own base addresses and clock.

use super::{Reg, Serial};

/// CMSDK APB UART at `BASE`, clocked at `CLK_HZ`, 8N1 at 115200 baud; as a byte stream,
/// `Polled<Uart<..>>`.
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

    fn rx_ready() -> bool {
        Self::reg(Self::STATE).read() & Self::STATE_RX_FULL != 0
    }
}

impl<const BASE: usize, const CLK_HZ: u32> Serial for Uart<BASE, CLK_HZ> {
    /// Enables the transmitter and receiver.
    fn open() -> Self {
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
        self.flush();
        Self::reg(Self::DATA).write(byte as u32);
    }

    fn get(&mut self) -> Option<u8> {
        Self::rx_ready().then(|| Self::reg(Self::DATA).read() as u8)
    }

    fn flush(&mut self) {
        while Self::reg(Self::STATE).read() & Self::STATE_TX_FULL != 0 {}
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
        Counter { start: Self::now() }
    }

    fn now() -> u32 {
        // Down-counter: negate so that time goes up.
        !Self::reg(Self::VALUE).read()
    }
}

counter_common!([const BASE: usize] Counter<BASE>);
