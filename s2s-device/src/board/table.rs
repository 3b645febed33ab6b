//! The board table's data: [`BOARDS`], every board the firmware is built for.

use super::types::{Board, Capacities, Driver, Flashing, Hardware, MemoryMap, Region};
use crate::qemu::Qemu;

const KIB: u32 = 1024;
const MIB: u32 = 1024 * KIB;

const fn region((origin, length): (u32, u32)) -> Region {
    Region { origin, length }
}

/// A memory map: (origin, length) of the runtime flash, the model region and RAM.
const fn map(flash: (u32, u32), model: (u32, u32), ram: (u32, u32)) -> MemoryMap {
    MemoryMap {
        flash: region(flash),
        model: region(model),
        ram: region(ram),
    }
}

/// Capacities: arena bytes, positions, steps, line bytes, beam width.
const fn caps(
    arena_bytes: usize,
    max_positions: usize,
    max_steps: usize,
    max_line: usize,
    max_beam: usize,
) -> Capacities {
    Capacities {
        arena_bytes,
        max_positions,
        max_steps,
        max_line,
        max_beam,
    }
}

/// The QEMU machine and CPU.
const fn qemu(machine: &'static str, cpu: &'static str) -> Option<Qemu> {
    Some(Qemu { machine, cpu })
}

/// The boards, the default one for each Rust target first. lm3s6965evb and microbit have
/// no FPU and 256 KiB of flash; they compile w8a16 only (the float code would fill it).
/// lm3s6965evb gives the runtime 112 KiB (the w8a16 runtime with GRU and LSTM cells, the
/// instruction-set kernels, beam search up to width 4, format 7's prefix slots,
/// streaming, MoChA and local attention, `STATS flash_runtime`; its `profile` build
/// overflowed 108 KiB by 544 bytes with local-p, format 10) and its model region
/// 144 KiB (netra w8a16 takes 129 KB);
/// the micro:bit keeps 96 KiB (its `profile` build overflowed 92 KiB by 1,708 bytes with
/// local-p) and 160 KiB (the running-text streaming models' one-plane files take
/// 143,876 bytes in model format 10) and no beam search (`max_beam` 0: 73,416
/// bytes),
/// and its arena is exactly netra w8a16's workspace (10,064 bytes at its 25
/// positions), so that the stack keeps every other byte of its 16 KiB. The mps2-an505 model region is at the Secure alias: QEMU's
/// `-device loader` writes through the CPU's view.
pub const BOARDS: &[Board] = &[
    Board {
        name: "mps2-an386",
        summary: "ARM MPS2 + AN386, Cortex-M4F at 25 MHz; 4 MiB code SSRAM1 (runtime, then the model), 4 MiB data SSRAM2/3",
        target: "thumbv7em-none-eabihf",
        clock_hz: 25_000_000,
        memory: map((0x0000_0000, 320 * KIB), (0x0005_0000, 3776 * KIB), (0x2000_0000, 4 * MIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an386", "cortex-m4"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "lm3s6965evb",
        summary: "TI Stellaris LM3S6965 EVB, Cortex-M3 at 50 MHz; 256 KiB flash, 64 KiB SRAM",
        target: "thumbv7m-none-eabi",
        clock_hz: 50_000_000,
        memory: map((0x0000_0000, 112 * KIB), (0x0001_C000, 144 * KIB), (0x2000_0000, 64 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(40 * 1024, 64, 64, 1024, 4),
        qemu: qemu("lm3s6965evb", "cortex-m3"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "mps2-an385",
        summary: "ARM MPS2 + AN385, Cortex-M3 at 25 MHz; the AN386 without its FPU",
        target: "thumbv7m-none-eabi",
        clock_hz: 25_000_000,
        memory: map((0x0000_0000, 320 * KIB), (0x0005_0000, 3776 * KIB), (0x2000_0000, 4 * MIB)),
        precisions: &["w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an385", "cortex-m3"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "microbit",
        summary: "BBC micro:bit v1, nRF51822, Cortex-M0 at 16 MHz; 256 KiB flash, 16 KiB SRAM",
        target: "thumbv6m-none-eabi",
        clock_hz: 16_000_000,
        memory: map((0x0000_0000, 96 * KIB), (0x0001_8000, 160 * KIB), (0x2000_0000, 16 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(10_064, 25, 32, 256, 0),
        qemu: qemu("microbit", "cortex-m0"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "mps2-an505",
        summary: "ARM MPS2 + AN505 (SSE-200), Cortex-M33 with FPU at 20 MHz, Secure state: SSRAM1 at its Secure alias 0x1000_0000, SSRAM2/3 at 0x3800_0000",
        target: "thumbv8m.main-none-eabihf",
        clock_hz: 20_000_000,
        memory: map((0x1000_0000, 320 * KIB), (0x1005_0000, 3776 * KIB), (0x3800_0000, 4 * MIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an505", "cortex-m33"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "nucleo-f411re",
        summary: "ST Nucleo-F411RE, STM32F411RE, Cortex-M4F at 100 MHz (HSI and PLL); 512 KiB flash (runtime in sectors 0-5, the model in sectors 6-7), 128 KiB SRAM",
        target: "thumbv7em-none-eabihf",
        clock_hz: 100_000_000,
        memory: map((0x0800_0000, 256 * KIB), (0x0804_0000, 256 * KIB), (0x2000_0000, 128 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(64 * 1024, 64, 64, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "stm32f4" },
        hardware: Some(Hardware {
            chip: "STM32F411RETx",
            flashing: Flashing::Probe,
            model_sector: 128 * KIB,
            link: "USB to the ST-LINK/V2-1: USART2 (PA2/PA3) through its virtual COM port, 115200 8N1",
        }),
    },
    Board {
        name: "nrf52840-dk",
        summary: "Nordic nRF52840 DK, nRF52840, Cortex-M4F at 64 MHz; 1 MiB flash in 4 KiB pages (runtime 256 KiB, the model 768 KiB), 256 KiB SRAM",
        target: "thumbv7em-none-eabihf",
        clock_hz: 64_000_000,
        memory: map((0x0000_0000, 256 * KIB), (0x0004_0000, 768 * KIB), (0x2000_0000, 256 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(128 * 1024, 128, 128, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "nrf52840" },
        hardware: Some(Hardware {
            chip: "nRF52840_xxAA",
            flashing: Flashing::Probe,
            model_sector: 4 * KIB,
            link: "USB to the J-Link OB (J2): UARTE0 (P0.06 TX, P0.08 RX, P0.05 RTS, P0.07 CTS) through its virtual COM port, 115200 8N1 with hardware flow control",
        }),
    },
    Board {
        name: "rp-pico",
        summary: "Raspberry Pi Pico, RP2040, Cortex-M0+ at 125 MHz; 2 MiB QSPI flash in 4 KiB sectors (the 256-byte second-stage bootloader, the runtime to 512 KiB, the model 1536 KiB), 264 KiB SRAM",
        target: "thumbv6m-none-eabi",
        clock_hz: 125_000_000,
        memory: map((0x1000_0100, 512 * KIB - 256), (0x1008_0000, 1536 * KIB), (0x2000_0000, 264 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(128 * 1024, 128, 128, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "rp2040" },
        hardware: Some(Hardware {
            chip: "RP2040",
            flashing: Flashing::Uf2 {
                family_id: 0xE48B_FF56,
                boot2: 256,
            },
            model_sector: 4 * KIB,
            link: "a USB cable: USB CDC serial (usbd-serial) from the RP2040 itself",
        }),
    },
    Board {
        name: "netduinoplus2",
        summary: "Netduino Plus 2 as QEMU emulates it: STM32F405, Cortex-M4F at its reset clock (16 MHz HSI; QEMU's SysTick counts at 168 MHz); 1 MiB flash (runtime in sectors 0-5, the model in sectors 6-11), 128 KiB SRAM; the Nucleo-F411RE's firmware crate and capacities",
        target: "thumbv7em-none-eabihf",
        clock_hz: 168_000_000,
        memory: map((0x0800_0000, 256 * KIB), (0x0804_0000, 768 * KIB), (0x2000_0000, 128 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(64 * 1024, 64, 64, 1024, 4),
        qemu: qemu("netduinoplus2", "cortex-m4"),
        driver: Driver::Hal { dir: "stm32f4" },
        hardware: None,
    },
];
