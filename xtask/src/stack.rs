//! `cargo xtask stack [--board NAME]`: per-function stack frames of the firmware,
//! measured statically from its disassembly (issue 32), and the deepest path of the call
//! graph from `main`.
//!
//! Why the disassembly: LLVM's `.stack_sizes` section needs `-Z emit-stack-sizes`
//! (nightly). Stable rustc 1.95 *accepts* `-C llvm-args=-stack-size-section` for
//! `thumbv7m-none-eabi` (no "unknown argument"), but the object it writes has no
//! `.stack_sizes` section (`llvm-readobj --stack-sizes` lists nothing): rustc builds its
//! own `TargetOptions`, so the LLVM command-line option never reaches them. Checked on
//! a one-function `#![no_std]` library, 2026-12-04.
//!
//! So, per QEMU register board (`s2s_device::board::register_boards`, or the one named):
//! its default release `firmware` is built as the tests build it
//! (`host_tools::device::Firmware::build`), `llvm-objdump -d -C --no-show-raw-insn`
//! disassembles it, and per function ([`parse`]):
//!
//! * the frame, from its prologue: every `push {..}` (4 bytes a register; Armv7-M
//!   pushes r8-r11 with a second `push.w`, Armv6-M through low registers with a second
//!   `push`), `vpush {..}` (8 bytes a d-register, 4 an s-register) and `sub sp, #N` /
//!   `sub.w sp, sp, #N` before its first call (in these ELFs none comes after one; a
//!   function with two prologues on separate paths would be counted twice, an
//!   overestimate); `sub sp, rX` or `add sp, rX` is a large frame when rX was loaded
//!   from a literal pool (Armv6-M's `add sp` of a negative literal), else noted as
//!   dynamic, the bound then "at least";
//! * its direct callees: `bl`, `blx <address>`, and `b`/`b.w` to another function's
//!   first address (a tail call); `blx rN` / `bx rN` to anything but `lr` are indirect
//!   calls, noted.
//!
//! [`deepest`] is the longest path from a function by summed frames, given twice: along
//! direct calls only (a lower bound when an indirect call is reachable), and with every
//! indirect call taken as a call to any function whose address is stored
//! ([`address_taken`]: `.word`s of the literal pools, `movw`/`movt` pairs, `.rodata`'s
//! words with the Thumb bit: the vtables), an upper bound as long as no function
//! pointer is made otherwise. A recursive edge is not followed (the figure then "at
//! least", said so), nor are exception entry frames and handlers counted: the
//! firmware's measured peak (`s2s qemu`'s "stack peak") may include them, and a static
//! bound below that peak would say so. Unknown lines are skipped; parsing never panics.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Command;

use host_tools::device::Firmware;
use s2s_device::Board;

use crate::ctx::Ctx;
use crate::error::Result;

/// One function of the disassembly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Function {
    /// Its first address.
    pub addr: u64,
    /// Its name as llvm-objdump prints it (demangled).
    pub name: String,
    /// Bytes its prologue takes off the stack pointer.
    pub frame: u64,
    /// A stack adjustment by a register (size unknown here).
    pub dynamic: bool,
    /// Addresses it calls directly (or tail-calls).
    pub calls: BTreeSet<u64>,
    /// It calls through a register.
    pub indirect: bool,
    /// A call seen already: later stack adjustments are not the prologue's.
    called: bool,
}

/// The registers of a `push`/`vpush` list: `{r4, r5, r7, lr}` is 4, `{d8-d11}` 4 too.
fn register_count(list: &str) -> u64 {
    let inner = list
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim();
    if inner.is_empty() {
        return 0;
    }
    inner
        .split(',')
        .map(|r| {
            let r = r.trim();
            match r.split_once('-') {
                Some((a, b)) => {
                    let n = |s: &str| {
                        s.trim()
                            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                            .parse::<u64>()
                            .ok()
                    };
                    match (n(a), n(b)) {
                        (Some(a), Some(b)) if b >= a => b - a + 1,
                        _ => 1,
                    }
                }
                None => 1,
            }
        })
        .sum()
}

/// `b` and its conditional forms (`bne`, `bgt`, ...): a tail call when the target is
/// another function's first address.
fn is_branch(m: &str) -> bool {
    const CONDITIONS: [&str; 14] = [
        "eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt",
    ];
    m == "b"
        || m.strip_prefix('b')
            .is_some_and(|c| CONDITIONS.contains(&c) || c == "gt" || c == "le")
}

/// An immediate `#N` (decimal or `0x` hex).
fn immediate(s: &str) -> Option<u64> {
    let s = s.trim().trim_start_matches('#');
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The target address of a branch's operand `0x1234 <name>` (or `1234 <name>`).
fn target(ops: &str) -> Option<u64> {
    let first = ops.split_whitespace().next()?;
    let hex = first.strip_prefix("0x").unwrap_or(first);
    u64::from_str_radix(hex, 16).ok()
}

/// A function header `000012ab <name>:`.
fn header(line: &str) -> Option<(u64, String)> {
    let line = line.trim_end();
    let (addr, rest) = line.split_once(' ')?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let name = rest.strip_prefix('<')?.strip_suffix(">:")?;
    Some((addr, name.to_string()))
}

/// An instruction line `    12ab:  \tmnemonic\toperands  @ comment`: (address,
/// mnemonic, operands, comment).
fn instruction(line: &str) -> Option<(u64, String, String, String)> {
    let (addr, rest) = line.trim_start().split_once(':')?;
    let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
    let rest = rest.trim();
    // A literal pool's word keeps its bytes even with `--no-show-raw-insn`.
    let rest = match rest.find(".word") {
        Some(i) => &rest[i..],
        None => rest,
    };
    let (mnemonic, ops) = match rest.split_once(char::is_whitespace) {
        Some((m, o)) => (m, o.trim()),
        None => (rest, ""),
    };
    let (ops, comment) = ops.split_once('@').unwrap_or((ops, ""));
    Some((
        addr,
        mnemonic.to_ascii_lowercase(),
        ops.trim().to_string(),
        comment.trim().to_string(),
    ))
}

/// The functions of `llvm-objdump -d` output, by first address. Tail branches are kept
/// only when they go to another function's first address.
pub(crate) fn parse(disassembly: &str) -> HashMap<u64, Function> {
    let mut functions: Vec<Function> = Vec::new();
    let mut branches: Vec<(usize, u64)> = Vec::new();
    // `.word` lines (literal pools) by address; `ldr rX, [pc, #..] @ 0xADDR` per
    // register of the current function; `add sp, rX` / `sub sp, rX` of a literal.
    let mut words: HashMap<u64, u32> = HashMap::new();
    let mut literal_of: HashMap<String, u64> = HashMap::new();
    let mut adjustments: Vec<(usize, u64, bool)> = Vec::new();
    for line in disassembly.lines() {
        if let Some((addr, name)) = header(line) {
            functions.push(Function {
                addr,
                name,
                ..Function::default()
            });
            literal_of.clear();
            continue;
        }
        let Some((at, mnemonic, ops, comment)) = instruction(line) else {
            continue;
        };
        if mnemonic == ".word" {
            if let Some(w) = immediate(&ops).and_then(|w| u32::try_from(w).ok()) {
                words.insert(at, w);
            }
            continue;
        }
        let index = functions.len().saturating_sub(1);
        let Some(f) = functions.last_mut() else {
            continue;
        };
        // Condition suffixes and width qualifiers: `bl`, `blx`, `b.w`, `bne.w`, ...
        let m = mnemonic.trim_end_matches(".w").trim_end_matches(".n");
        let ops_l = ops.to_ascii_lowercase();
        let regs: Vec<&str> = ops_l.split(',').map(str::trim).collect();
        match m {
            "bl" => {
                if let Some(t) = target(&ops) {
                    f.calls.insert(t);
                }
                f.called = true;
            }
            "blx" => {
                match target(&ops) {
                    Some(t) if ops.contains('<') || ops.starts_with("0x") => {
                        f.calls.insert(t);
                    }
                    _ => f.indirect = true,
                }
                f.called = true;
            }
            "bx" if ops_l != "lr" => f.indirect = true,
            _ if is_branch(m) => {
                if let Some(t) = target(&ops) {
                    branches.push((index, t));
                }
            }
            "push" if !f.called => {
                f.frame += 4 * register_count(&ops);
            }
            "vpush" if !f.called => {
                let per = if ops_l.contains('s') { 4 } else { 8 };
                f.frame += per * register_count(&ops);
            }
            "ldr" if regs.get(1).is_some_and(|r| r.starts_with("[pc")) => {
                if let (Some(r), Some(t)) = (regs.first(), target(&comment)) {
                    literal_of.insert((*r).to_string(), t);
                }
            }
            "sub" | "subw" | "add" if regs.first() == Some(&"sp") && !f.called => {
                // `sub sp, #N`, `sub.w sp, sp, #N`; `sub sp, rX` / `add sp, rX`: a
                // large frame (Armv6-M's: `add sp, rX` of a negative literal) when rX
                // was loaded from a literal pool, else dynamic.
                let last = regs.last().copied().unwrap_or("");
                let sub = m != "add";
                if last.starts_with('#') {
                    if sub {
                        f.frame += immediate(last).unwrap_or(0);
                    }
                } else if regs.len() >= 2 && last != "sp" {
                    match literal_of.get(last) {
                        Some(&t) => adjustments.push((index, t, sub)),
                        None => f.dynamic = true,
                    }
                }
            }
            _ => {}
        }
    }
    for (i, t, sub) in adjustments {
        let Some(f) = functions.get_mut(i) else {
            continue;
        };
        // The literal as a signed 32-bit value: what it takes off the stack pointer.
        match words.get(&t).map(|&w| w as i32) {
            Some(v) if sub && v > 0 => f.frame += v.unsigned_abs() as u64,
            Some(v) if !sub && v < 0 => f.frame += v.unsigned_abs() as u64,
            _ => f.dynamic = true,
        }
    }
    let mut map: HashMap<u64, Function> = HashMap::new();
    let starts: BTreeSet<u64> = functions.iter().map(|f| f.addr).collect();
    for (i, t) in branches {
        if let Some(f) = functions.get_mut(i) {
            if t != f.addr && starts.contains(&t) {
                f.calls.insert(t);
            }
        }
    }
    for f in functions {
        // Several names at one address: the first one printed stays.
        map.entry(f.addr).or_insert(f);
    }
    map
}

/// The deepest path from a function: its summed frames, the path, and whether it is
/// only a lower bound (recursion, an indirect call or a dynamic frame on the way or
/// reachable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Depth {
    pub bytes: u64,
    pub path: Vec<u64>,
    pub at_least: bool,
    /// Why it is a lower bound: "recursion", "indirect call", "dynamic frame".
    pub why: BTreeSet<&'static str>,
}

/// The longest path by summed frames from `start` (a recursive edge is not followed and
/// makes the result "at least"; calls to addresses that are no function are skipped).
///
/// With `taken` (the functions whose address is stored somewhere: [`address_taken`]),
/// an indirect call is taken to be a call to any of them, an upper bound in place of
/// a lower one.
pub(crate) fn deepest(
    functions: &HashMap<u64, Function>,
    start: u64,
    taken: Option<&BTreeSet<u64>>,
) -> Option<Depth> {
    fn visit(
        fs: &HashMap<u64, Function>,
        at: u64,
        taken: Option<&BTreeSet<u64>>,
        on_path: &mut BTreeSet<u64>,
        memo: &mut HashMap<u64, Depth>,
    ) -> Option<Depth> {
        if let Some(d) = memo.get(&at) {
            return Some(d.clone());
        }
        let f = fs.get(&at)?;
        on_path.insert(at);
        let mut best: Option<Depth> = None;
        let mut why = BTreeSet::new();
        let mut callees = f.calls.clone();
        match taken {
            Some(taken) if f.indirect => callees.extend(taken.iter().copied()),
            _ if f.indirect => {
                why.insert("indirect call");
            }
            _ => {}
        }
        if f.dynamic {
            why.insert("dynamic frame");
        }
        for c in callees {
            if on_path.contains(&c) {
                why.insert("recursion");
                continue;
            }
            if let Some(d) = visit(fs, c, taken, on_path, memo) {
                why.extend(d.why.iter().copied());
                if best.as_ref().is_none_or(|b| d.bytes > b.bytes) {
                    best = Some(d);
                }
            }
        }
        on_path.remove(&at);
        let (bytes, tail) = best.map_or((0, Vec::new()), |b| (b.bytes, b.path));
        let mut path = vec![at];
        path.extend(tail);
        let d = Depth {
            bytes: f.frame + bytes,
            path,
            at_least: !why.is_empty(),
            why,
        };
        // A result cut by recursion depends on the path it was reached by; memoising it
        // keeps the walk linear, at the price of a (said) lower bound.
        memo.insert(at, d.clone());
        Some(d)
    }
    visit(
        functions,
        start,
        taken,
        &mut BTreeSet::new(),
        &mut HashMap::new(),
    )
}

/// The functions whose address (with the Thumb bit) is stored as a word: in a literal
/// pool of the disassembly (`.word`), built by a `movw`/`movt` pair, or in `rodata`
/// (`llvm-objdump -s -j .rodata`'s hex dump: vtables, function pointer tables). The
/// vector table is not read: the exception handlers are not called by the firmware.
pub(crate) fn address_taken(
    functions: &HashMap<u64, Function>,
    disassembly: &str,
    rodata: &str,
) -> BTreeSet<u64> {
    let mut words: Vec<u64> = Vec::new();
    let mut low: HashMap<String, u64> = HashMap::new();
    for line in disassembly.lines() {
        let Some((_, mnemonic, ops, _)) = instruction(line) else {
            continue;
        };
        let m = mnemonic.trim_end_matches(".w");
        let (reg, imm) = ops.split_once(',').unwrap_or((&ops, ""));
        match m {
            ".word" => words.extend(immediate(&ops)),
            "movw" => {
                if let Some(v) = immediate(imm) {
                    low.insert(reg.trim().to_string(), v);
                }
            }
            "movt" => {
                if let (Some(&l), Some(h)) = (low.get(reg.trim()), immediate(imm)) {
                    words.push((h << 16) | l);
                }
            }
            _ => {}
        }
    }
    for line in rodata.lines() {
        let mut fields = line.split_whitespace();
        let Some(addr) = fields.next().and_then(|a| u64::from_str_radix(a, 16).ok()) else {
            continue;
        };
        if addr % 4 != 0 {
            continue;
        }
        for group in fields.take(4) {
            let bytes: Vec<u8> = (0..group.len() / 2)
                .filter_map(|i| group.get(2 * i..2 * i + 2))
                .filter_map(|b| u8::from_str_radix(b, 16).ok())
                .collect();
            if let Ok(b) = <[u8; 4]>::try_from(bytes.as_slice()) {
                words.push(u64::from(u32::from_le_bytes(b)));
            }
        }
    }
    words
        .into_iter()
        .filter(|w| w & 1 == 1 && functions.contains_key(&(w & !1)))
        .map(|w| w & !1)
        .collect()
}

/// `llvm-objdump`: rustup's `llvm-tools` component, else one on `PATH`.
fn objdump() -> Result<PathBuf> {
    let out = |args: &[&str]| {
        Command::new("rustc")
            .args(args)
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
    };
    let sysroot = out(&["--print", "sysroot"]).map(|s| PathBuf::from(s.trim()));
    let host = out(&["-vV"]).and_then(|v| {
        v.lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
    });
    if let (Some(root), Some(host)) = (sysroot, host) {
        let p = root.join("lib/rustlib").join(host).join("bin/llvm-objdump");
        if p.is_file() {
            return Ok(p);
        }
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("llvm-objdump"))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            "llvm-objdump not found: install it with `rustup component add llvm-tools`".into()
        })
}

/// The functions named `name` exactly or whose name ends with `::name` (past their
/// `::h<hash>`), by address: a generic function has one per instantiation.
fn find(functions: &HashMap<u64, Function>, name: &str) -> Vec<u64> {
    let mut all: Vec<u64> = functions
        .values()
        .filter(|f| {
            let n = short(&f.name);
            n == name || n.ends_with(&format!("::{name}"))
        })
        .map(|f| f.addr)
        .collect();
    all.sort_unstable();
    all
}

/// A function's name without its `::h<hash>` tail, with the escapes of Rust's legacy
/// mangling that llvm-objdump leaves (`$LT$`, `$u20$`, `..`) turned back into text.
fn short(name: &str) -> String {
    let name = match name.rsplit_once("::h") {
        Some((a, h)) if h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()) => a,
        _ => name,
    };
    let name = name
        .strip_prefix("_$")
        .map_or(name.to_string(), |r| format!("${r}"));
    [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$C$", ","),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$SP$", "@"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u7e$", "~"),
        ("$u3b$", ";"),
        ("$u2b$", "+"),
        ("$u22$", "\""),
        ("..", "::"),
    ]
    .iter()
    .fold(name, |n, (from, to)| n.replace(from, to))
}

/// The report of one board: the largest frames and the deepest paths, as Markdown.
pub(crate) fn report(
    board: &Board,
    functions: &HashMap<u64, Function>,
    taken: &BTreeSet<u64>,
    entries: &[&str],
) -> String {
    let mut s = format!(
        "#### {} ({})\n\n{} functions; the 12 largest frames:\n\n| function | address | frame bytes |\n|---|---|---:|\n",
        board.name,
        board.target,
        functions.len()
    );
    let mut all: Vec<&Function> = functions.values().collect();
    all.sort_by(|a, b| b.frame.cmp(&a.frame).then(a.addr.cmp(&b.addr)));
    for f in all.iter().take(12) {
        let dynamic = if f.dynamic { " + dynamic" } else { "" };
        s += &format!(
            "| `{}` | {:#x} | {}{dynamic} |\n",
            short(&f.name),
            f.addr,
            f.frame
        );
    }
    for entry in entries {
        for (taken, how) in [
            (None, "direct calls only"),
            (
                Some(taken),
                "an indirect call taken as a call to any address-taken function",
            ),
        ] {
            let deepest = find(functions, entry)
                .into_iter()
                .filter_map(|a| deepest(functions, a, taken))
                .max_by_key(|d| d.bytes);
            let Some(d) = deepest else {
                s += &format!("\n`{entry}`: not found in the disassembly\n");
                break;
            };
            let bound = if d.at_least { "at least " } else { "" };
            s += &format!(
                "\nDeepest path from `{entry}`, {how}: {bound}{} bytes{}:\n\n",
                d.bytes,
                if d.at_least {
                    format!(
                        " ({} reachable, not followed)",
                        d.why.iter().copied().collect::<Vec<_>>().join(", ")
                    )
                } else {
                    String::new()
                }
            );
            for a in &d.path {
                if let Some(f) = functions.get(a) {
                    s += &format!("- `{}` {:#x}: {}\n", short(&f.name), f.addr, f.frame);
                }
            }
        }
    }
    s
}

impl Ctx {
    /// `cargo xtask stack [--board NAME]` (see the module docs).
    pub(crate) fn stack(&self, args: &[String]) -> Result {
        let boards: Vec<&Board> = match args {
            [] => s2s_device::board::register_boards().collect(),
            [flag, name] if flag == "--board" => {
                vec![s2s_device::board::register_boards()
                    .find(|b| b.name == name)
                    .ok_or_else(|| {
                        format!(
                            "--board {name}: not a QEMU register board (these are: {})",
                            s2s_device::board::register_boards()
                                .map(|b| b.name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?]
            }
            _ => return Err("usage: cargo xtask stack [--board NAME]".into()),
        };
        let firmware =
            Firmware::locate(Some(&self.root.join("firmware"))).map_err(|e| e.to_string())?;
        let objdump = objdump()?;
        for board in boards {
            println!(
                "$ (cd firmware && S2S_BOARD={} cargo build --release --target {} --bin firmware)",
                board.name, board.target
            );
            let elf = firmware
                .build(board, "firmware", true)
                .map_err(|e| e.to_string())?;
            let out = Command::new(&objdump)
                .args(["-d", "-C", "--no-show-raw-insn"])
                .arg(&elf)
                .output()
                .map_err(|e| format!("{}: {e}", objdump.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "llvm-objdump {}: {}",
                    elf.display(),
                    String::from_utf8_lossy(&out.stderr).trim_end()
                )
                .into());
            }
            let disassembly = String::from_utf8_lossy(&out.stdout);
            let functions = parse(&disassembly);
            let rodata = Command::new(&objdump)
                .args(["-s", "-j", ".rodata"])
                .arg(&elf)
                .output()
                .map_err(|e| format!("{}: {e}", objdump.display()))?;
            let taken = address_taken(
                &functions,
                &disassembly,
                &String::from_utf8_lossy(&rodata.stdout),
            );
            let mut names: Vec<String> = taken
                .iter()
                .filter_map(|a| functions.get(a))
                .map(|f| short(&f.name))
                .collect();
            names.sort();
            names.dedup();
            println!(
                "{}: {} functions have their address taken: {}",
                board.name,
                taken.len(),
                names.join("; ")
            );
            println!("{}", report(board, &functions, &taken, ENTRIES));
        }
        Ok(())
    }
}

/// Where the deepest paths start: the firmware's `main` (cortex-m-rt's entry) and the
/// decode of one line (`seq2seq::run::Runner::translate_line`, each instantiation; the
/// deepest is shown).
const ENTRIES: &[&str] = &["main", "translate_line"];

#[cfg(test)]
mod tests {
    use super::*;

    const SNIPPET: &str = "
firmware:\tfile format elf32-littlearm

Disassembly of section .text:

00000100 <main>:
     100:      \tpush\t{r4, r5, r7, lr}
     102:      \tsub\tsp, #16
     104:      \tbl\t0x200 <firmware::decode::h0123456789abcdef>
     108:      \tblx\tr3
     10a:      \tsub\tsp, #64
     10c:      \tpop\t{r4, r5, r7, pc}

00000200 <firmware::decode::h0123456789abcdef>:
     200:      \tpush\t{r4, r5, r6, r7, lr}
     202:      \tpush.w\t{r8}
     204:      \tvpush\t{d8, d9, d10, d11}
     208:      \tsub.w\tsp, sp, #1024
     20c:      \tbl\t0x300 <kernel>
     210:      \tbl\t0x400 <small>
     214:      \tb.w\t0x300 <kernel>
     218:      \tbne\t0x20c <firmware::decode::h0123456789abcdef+0xc>

00000300 <kernel>:
     300:      \tpush\t{r7, lr}
     302:      \tsub\tsp, r0
     304:      \tldr\tr0, [sp, #4]
     306:      \tgarbage line that means nothing
     308:      \tpop\t{r7, pc}

00000400 <small>:
     400:      \tbx\tlr

00000480 <big>:
     480:      \tpush\t{r4, r5, r6, r7, lr}
     482:      \tldr\tr6, [pc, #0x4]         @ 0x488 <big+0x8>
     484:      \tadd\tsp, r6
     486:      \tbx\tlr
     488: f4 f8 ff ff  \t.word\t0xfffff8f4

00000500 <rec>:
     500:      \tpush\t{r7, lr}
     502:      \tbl\t0x500 <rec>
     506:      \tpop\t{r7, pc}
";

    #[test]
    fn prologues_give_the_frames() {
        let f = parse(SNIPPET);
        assert_eq!(f.len(), 6);
        // Armv6-M's large frame: push 5 x 4, then `add sp, r6` of the literal -1804.
        assert_eq!(f[&0x480].frame, 20 + 1804);
        assert!(!f[&0x480].dynamic);
        // push 4 x 4 + sub 16; the sub after the call is not the prologue's.
        assert_eq!(f[&0x100].frame, 32);
        assert!(f[&0x100].indirect);
        // push 5 x 4 and push.w 1 x 4 + vpush 4 x 8 + sub.w 1024.
        assert_eq!(f[&0x200].frame, 24 + 32 + 1024);
        assert!(!f[&0x200].indirect);
        // push 2 x 4, the `sub sp, r0` noted as dynamic.
        assert_eq!(f[&0x300].frame, 8);
        assert!(f[&0x300].dynamic);
        assert_eq!(f[&0x400].frame, 0);
        assert!(!f[&0x400].indirect, "bx lr is a return");
    }

    #[test]
    fn calls_and_tail_calls_make_the_graph() {
        let f = parse(SNIPPET);
        assert_eq!(f[&0x100].calls, BTreeSet::from([0x200]));
        // bl to 0x300 and 0x400; the b.w to 0x300 a tail call; bne inside is no call.
        assert_eq!(f[&0x200].calls, BTreeSet::from([0x300, 0x400]));
        assert!(f[&0x300].calls.is_empty());
        assert_eq!(f[&0x500].calls, BTreeSet::from([0x500]));
    }

    #[test]
    fn the_deepest_path_sums_frames() {
        let f = parse(SNIPPET);
        let d = deepest(&f, 0x200, None).unwrap();
        assert_eq!(d.bytes, 1080 + 8);
        assert_eq!(d.path, vec![0x200, 0x300]);
        assert!(d.at_least, "kernel's dynamic frame");
        let d = deepest(&f, 0x100, None).unwrap();
        assert_eq!(d.bytes, 32 + 1080 + 8);
        assert_eq!(d.path, vec![0x100, 0x200, 0x300]);
        let d = deepest(&f, 0x400, None).unwrap();
        assert_eq!((d.bytes, d.at_least), (0, false));
        let d = deepest(&f, 0x500, None).unwrap();
        assert_eq!((d.bytes, d.at_least), (8, true), "recursion");
        assert_eq!(d.why, BTreeSet::from(["recursion"]));
        let d = deepest(&f, 0x100, None).unwrap();
        assert_eq!(d.why, BTreeSet::from(["dynamic frame", "indirect call"]));
        assert_eq!(deepest(&f, 0x999, None), None);
        // main's `blx r3` taken as a call to `rec` (its address in rodata below, with the
        // Thumb bit; `kernel`'s without it, a plain number) adds `rec`'s path only when
        // it is deeper: it is not (8 < 1088).
        let rodata = " 0600 01050000 00030000 00000000 01020000  ................\n";
        let taken = address_taken(&f, SNIPPET, rodata);
        assert_eq!(taken, BTreeSet::from([0x200, 0x500]));
        let d = deepest(&f, 0x100, Some(&taken)).unwrap();
        assert_eq!(d.bytes, 32 + 1080 + 8);
        assert_eq!(d.why, BTreeSet::from(["dynamic frame", "recursion"]));
        // A movw/movt pair builds an address too.
        let built = "  10:\tmovw\tr0, #0x401\n  14:\tmovt\tr0, #0x0\n";
        assert_eq!(address_taken(&f, built, ""), BTreeSet::from([0x400]));
        assert_eq!(find(&f, "decode"), vec![0x200]);
        assert_eq!(find(&f, "main"), vec![0x100]);
        assert!(find(&f, "absent").is_empty());
        assert_eq!(
            short("_$LT$a..B$LT$P$GT$$u20$as$u20$c..D$GT$::at::h0932286a74af027c"),
            "<a::B<P> as c::D>::at"
        );
    }

    #[test]
    fn lists_and_headers() {
        assert_eq!(register_count("{r4, r5, r7, lr}"), 4);
        assert_eq!(register_count("{d8-d15}"), 8);
        assert_eq!(register_count("{}"), 0);
        assert_eq!(
            header("00000100 <a<b>::c>:"),
            Some((0x100, "a<b>::c".into()))
        );
        assert_eq!(header("garbage"), None);
        assert_eq!(instruction(""), None);
        assert_eq!(
            instruction("     488: f4 f8 ff ff  \t.word\t0xfffff8f4"),
            Some((0x488, ".word".into(), "0xfffff8f4".into(), String::new()))
        );
        // Nothing at all parses to nothing, without a panic.
        assert!(parse("").is_empty());
        assert!(parse("\u{0}\t:::\n<>:\n  zz:\n").is_empty());
    }
}
