#!/usr/bin/env bash
# Cargo runner (see .cargo/config.toml): boots a firmware ELF in QEMU on the given board.
#   qemu-run.sh <board> <elf> [extra qemu args...]
#
# The UART is bridged to this script's stdin/stdout (QEMU `-chardev pipe` over two FIFOs).
# Semihosting output (the defmt frames) comes out of QEMU's stdout - QEMU 7.2 writes
# semihosting SYS_WRITE to ":tt" there whatever `-semihosting-config chardev=` says - and is
# decoded with `defmt-print -e <elf>` to stderr (saved to <elf>.defmt if defmt-print is
# missing). MODEL=<file> loads a model file into the board's model region.
# Exits with QEMU's status: 0 after a normal session, 101 after a panic, 102 after a
# HardFault, 124 on timeout (TIMEOUT seconds, default 60).
set -euo pipefail
board=$1
elf=$2
shift 2

# Model regions: firmware/boards/<board>/memory.x (and host-tools/src/device/qemu.rs).
case $board in
  mps2-an386)  machine=mps2-an386;  cpu=cortex-m4;  model_addr=0x00040000; model_size=3932160 ;;
  mps2-an505)  machine=mps2-an505;  cpu=cortex-m33; model_addr=0x10040000; model_size=3932160 ;;
  lm3s6965evb) machine=lm3s6965evb; cpu=cortex-m3;  model_addr=0x00010000; model_size=196608 ;;
  microbit)    machine=microbit;    cpu=cortex-m0;  model_addr=0x00010000; model_size=196608 ;;
  *) echo "qemu-run.sh: unknown board '$board'" >&2; exit 2 ;;
esac

if ! command -v qemu-system-arm >/dev/null 2>&1; then
  echo "qemu-run.sh: qemu-system-arm not found; install it with:" >&2
  echo "  apt-get install -y --no-install-recommends qemu-system-arm" >&2
  exit 127
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/uart.in" "$dir/uart.out"

args=(-machine "$machine" -cpu "$cpu" -nographic -monitor none
  -chardev "pipe,id=uart,path=$dir/uart" -serial chardev:uart
  -icount shift=7 -semihosting-config enable=on,target=native
  -kernel "$elf")
if [[ -n ${MODEL:-} ]]; then
  size=$(stat -c %s "$MODEL")
  if (( size > model_size )); then
    echo "qemu-run.sh: $MODEL is $size bytes, more than the $board model region ($model_size)" >&2
    exit 2
  fi
  args+=(-device "loader,file=$MODEL,addr=$model_addr,force-raw=on")
fi
args+=("$@")

cat "$dir/uart.out" &          # UART -> stdout
out_pid=$!
exec 3<&0                      # (a background job would get /dev/null)
cat <&3 >"$dir/uart.in" &       # stdin -> UART
in_pid=$!

status=0
if command -v defmt-print >/dev/null 2>&1; then
  timeout "${TIMEOUT:-60}" qemu-system-arm "${args[@]}" </dev/null | defmt-print -e "$elf" >&2 || status=${PIPESTATUS[0]}
else
  timeout "${TIMEOUT:-60}" qemu-system-arm "${args[@]}" </dev/null >"$elf.defmt" || status=$?
  echo "qemu-run.sh: defmt-print not found (cargo install defmt-print --locked); defmt frames saved to $elf.defmt" >&2
fi
kill "$in_pid" 2>/dev/null || true
# Unblock the UART reader if QEMU never opened the FIFO (it failed to start), then let it
# drain what is left.
exec 4<>"$dir/uart.out"
exec 4>&-
wait "$out_pid" || true
exit "$status"
