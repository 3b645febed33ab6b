#!/usr/bin/env python3
"""Runtime flash of a firmware ELF by crate (or by source file with --files).

    scripts/firmware/flash_by_crate.py firmware/target/thumbv6m-none-eabi/release/firmware

The runtime flash is what `STATS flash_runtime` reports: the vector table, `.text`,
`.rodata` and `.data`'s load image. Each byte of `.text` goes to the crate of the
innermost source frame at its address that is not in `core` (llvm-symbolizer
--inlining over the debug info: code inlined from a crate counts for that crate, a
`core` iterator inlined into it too); `.rodata` goes by symbol to its crate, and what
has no symbol (string literals, switch tables) to "rodata: unnamed". Needs the
rustup component llvm-tools (llvm-objdump, llvm-nm, llvm-size) and llvm-symbolizer (in
llvm-tools' directory, or on PATH: e.g. Debian's llvm package).
"""

import collections
import os
import re
import shutil
import subprocess
import sys


def tool(name):
    sysroot = subprocess.check_output(["rustc", "--print", "sysroot"], text=True).strip()
    host = re.search(
        r"host: (\S+)", subprocess.check_output(["rustc", "-vV"], text=True)
    ).group(1)
    path = os.path.join(sysroot, "lib", "rustlib", host, "bin", name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if not found:
        sys.exit(f"{name} not found: rustup component add llvm-tools (and llvm-symbolizer)")
    return found


PROJECT = r"/(s2s-kernels|rnn-core|attention-core|seq2seq|s2s-device|firmware)/(src/[^:]*)"


def crate_of_path(path, files):
    m = re.search(r"/registry/src/[^/]+/([^/]+?)-\d[^/]*/", path)
    if m:
        return m.group(1)
    m = re.search(r"/library/([^/]+)/", path)
    if m:
        return m.group(1)
    m = re.search(PROJECT, path)
    if m:
        return m.group(1) + ("/" + m.group(2) if files else "")
    return "?"


def crate_of_symbol(name):
    if name.startswith("_") and not name.startswith("_$LT$"):
        return "vectors, defmt"  # cortex-m-rt's __INTERRUPTS, __EXCEPTIONS, ...
    m = re.match(r"^(?:_?\$LT\$|<)?(?:&(?:mut )?)?([A-Za-z_][A-Za-z0-9_]*)", name)
    return (m.group(1) if m else name).replace("_", "-")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    files = "--files" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    elf = args[0]
    sections = {}
    for line in subprocess.check_output([tool("llvm-size"), "-A", elf], text=True).splitlines():
        p = line.split()
        if len(p) == 3 and p[1].isdigit():
            sections[p[0]] = int(p[1])
    total = sum(sections.get(s, 0) for s in (".vector_table", ".text", ".rodata", ".data"))

    agg = collections.Counter()
    dis = subprocess.check_output(
        [tool("llvm-objdump"), "-d", "--no-show-raw-insn", "-j", ".text", elf],
        text=True,
        errors="replace",
    )
    addrs = sorted({int(a, 16) for a in re.findall(r"^\s*([0-9a-f]+):\s", dis, re.M)})
    sym = subprocess.run(
        [tool("llvm-symbolizer"), "--inlining", "--obj=" + elf],
        input="\n".join(hex(a) for a in addrs) + "\n",
        capture_output=True,
        text=True,
    ).stdout
    blocks = sym.strip("\n").split("\n\n")
    text_end = addrs[-1] + 2 if addrs else 0
    for a, b, blk in zip(addrs, addrs[1:] + [text_end], blocks):
        lines = blk.split("\n")
        frames = [crate_of_path(lines[i + 1], files) for i in range(0, len(lines) - 1, 2)]
        pick = next((f for f in frames if f != "core"), frames[-1] if frames else "?")
        agg[pick] += b - a
    named = 0
    for line in subprocess.check_output(
        [tool("llvm-nm"), "-S", "--demangle", elf], text=True
    ).splitlines():
        p = line.split(None, 3)
        if len(p) == 4 and p[2] in "rR" and not p[3].startswith(".L"):
            size = int(p[1], 16)
            agg["rodata: " + crate_of_symbol(p[3])] += size
            named += size
    agg["rodata: unnamed"] += sections.get(".rodata", 0) - named
    agg["vector table, .data"] += sections.get(".vector_table", 0) + sections.get(".data", 0)
    # Alignment padding between functions, if any.
    agg["?"] += total - sum(agg.values())
    for name, size in agg.most_common():
        if size:
            print(f"{size:8,d}  {name}")
    print(f"{total:8,d}  runtime flash")


main()
