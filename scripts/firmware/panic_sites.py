#!/usr/bin/env python3
"""Lists the places in a firmware ELF that can reach a panic.

Usage: scripts/firmware/panic_sites.py ELF

Every call of a core panic entry point (`core::panicking::*`, slice and str index
failures, `unwrap`/`expect` failures, the panic handler) is found with `llvm-objdump -d`
and its source place with `llvm-addr2line -i` (the innermost frame that is in this
repository or a registry crate, so that an inlined bounds check is named by the line
of ours that indexed). Prints the count of call sites, then `count place` lines.

This is the measurement behind `cargo xtask test`'s no-panic link check
(docs/RELIABILITY.md): build the binary without `--features no-panic` and run this on
it to see what keeps the check from linking. Needs llvm-objdump and llvm-addr2line
(Debian's `llvm`, or rustup's `llvm-tools` plus Debian's `llvm` for addr2line); only
the Python standard library.
"""
import collections
import re
import subprocess
import sys

PANICS = re.compile(
    r"^\s*([0-9a-f]+):\s+bl?(\.w)?\s+.*<(core::panicking|core::slice::index::slice_index_fail"
    r"|core::option::(unwrap|expect)_failed|core::result::unwrap_failed"
    r"|core::slice::copy_from_slice_impl::len_mismatch_fail|core::str::slice_error_fail"
    r"|__rustc::rust_begin_unwind|rust_begin_unwind)"
)
OURS = re.compile(r"at (/\S+?/(?:[a-z0-9-]+/src/|index\.crates\.io-[0-9a-f]+/)\S+)")


def main(elf):
    dis = subprocess.run(
        ["llvm-objdump", "-d", "--no-show-raw-insn", "-C", elf],
        capture_output=True, text=True, check=True,
    ).stdout
    addrs = [m.group(1) for m in map(PANICS.match, dis.splitlines()) if m]
    places = collections.Counter()
    if addrs:
        out = subprocess.run(
            ["llvm-addr2line", "-a", "-p", "-f", "-i", "-C", "-e", elf]
            + ["0x" + a for a in addrs],
            capture_output=True, text=True, check=True,
        ).stdout
        for block in re.split(r"\n(?=0x)", out.strip()):
            frames = block.splitlines()
            place = next(
                (m.group(1) for m in map(OURS.search, frames) if m and "/rustc/" not in m.group(1)),
                "core: " + frames[-1].split(" at ")[-1],
            )
            places[place] += 1
    print(f"{len(addrs)} call sites reaching a panic, at {len(places)} places")
    for place, n in sorted(places.items()):
        print(n, place)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1])
