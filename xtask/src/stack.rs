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
//! * the frame, from its prologue: the first `push {..}` (4 bytes a register), the first
//!   `vpush {..}` (8 bytes a d-register, 4 an s-register) and every `sub sp, #N` /
//!   `sub.w sp, sp, #N` before its first call; `sub sp, rX` or `add sp, rX` (a size only
//!   known at run time, or a large frame on Armv6-M loaded from a literal) is noted as
//!   dynamic, the bound then "at least";
//! * its direct callees: `bl`, `blx <address>`, and `b`/`b.w` to another function's
//!   first address (a tail call); `blx rN` / `bx rN` to anything but `lr` are indirect
//!   calls, noted.
//!
//! [`deepest`] is the longest path from a function by summed frames (a recursive edge is
//! not followed; recursion, indirect calls and dynamic frames make the figure a lower
//! bound, said so). Exception entry frames and handlers are not included: the firmware's
//! measured peak (`s2s qemu`'s "stack peak") may include them, and a static bound below
//! that peak says so. Unknown lines are skipped; parsing never panics.

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
    pushed: bool,
    vpushed: bool,
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

/// An instruction line `    12ab:  \tmnemonic\toperands`: (mnemonic, operands).
fn instruction(line: &str) -> Option<(String, String)> {
    let (addr, rest) = line.trim_start().split_once(':')?;
    u64::from_str_radix(addr.trim(), 16).ok()?;
    let rest = rest.trim();
    let (mnemonic, ops) = match rest.split_once(char::is_whitespace) {
        Some((m, o)) => (m, o.trim()),
        None => (rest, ""),
    };
    // A comment (`@ imm = #12`) is not an operand.
    let ops = ops.split_once('@').map_or(ops, |(o, _)| o).trim();
    Some((mnemonic.to_ascii_lowercase(), ops.to_string()))
}

/// The functions of `llvm-objdump -d` output, by first address. Tail branches are kept
/// only when they go to another function's first address.
pub(crate) fn parse(disassembly: &str) -> HashMap<u64, Function> {
    let mut functions: Vec<Function> = Vec::new();
    let mut branches: Vec<(usize, u64)> = Vec::new();
    for line in disassembly.lines() {
        if let Some((addr, name)) = header(line) {
            functions.push(Function {
                addr,
                name,
                ..Function::default()
            });
            continue;
        }
        let (Some(f), Some((mnemonic, ops))) = (functions.last_mut(), instruction(line)) else {
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
                    branches.push((functions.len() - 1, t));
                }
            }
            "push" if !f.pushed && !f.called => {
                f.frame += 4 * register_count(&ops);
                f.pushed = true;
            }
            "vpush" if !f.vpushed && !f.called => {
                let per = if ops_l.contains('s') { 4 } else { 8 };
                f.frame += per * register_count(&ops);
                f.vpushed = true;
            }
            "sub" | "subw" if regs.first() == Some(&"sp") && !f.called => {
                // `sub sp, #N`, `sub.w sp, sp, #N`, `sub sp, rX`.
                let last = regs.last().copied().unwrap_or("");
                if last.starts_with('#') {
                    f.frame += immediate(last).unwrap_or(0);
                } else if regs.len() >= 2 {
                    f.dynamic = true;
                }
            }
            "add" if regs.first() == Some(&"sp") && !f.called => {
                // `add sp, rX`: Armv6-M's large frame (a negative literal), or dynamic.
                let last = regs.last().copied().unwrap_or("");
                if !last.starts_with('#') && regs.len() >= 2 && last != "sp" {
                    f.dynamic = true;
                }
            }
            _ => {}
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
}

/// The longest path by summed frames from `start` (a recursive edge is not followed and
/// makes the result "at least"; calls to addresses that are no function are skipped).
pub(crate) fn deepest(functions: &HashMap<u64, Function>, start: u64) -> Option<Depth> {
    fn visit(
        fs: &HashMap<u64, Function>,
        at: u64,
        on_path: &mut BTreeSet<u64>,
        memo: &mut HashMap<u64, Depth>,
    ) -> Option<Depth> {
        if let Some(d) = memo.get(&at) {
            return Some(d.clone());
        }
        let f = fs.get(&at)?;
        on_path.insert(at);
        let mut best: Option<Depth> = None;
        let mut at_least = f.indirect || f.dynamic;
        for &c in &f.calls {
            if on_path.contains(&c) {
                at_least = true;
                continue;
            }
            if let Some(d) = visit(fs, c, on_path, memo) {
                at_least |= d.at_least;
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
            at_least,
        };
        // A result cut by recursion depends on the path it was reached by; memoising it
        // keeps the walk linear, at the price of a (said) lower bound.
        memo.insert(at, d.clone());
        Some(d)
    }
    visit(functions, start, &mut BTreeSet::new(), &mut HashMap::new())
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

/// The function named `name` exactly, else the first whose name ends with `::name`
/// (demangled names end with their hash: `...::name::h0123`).
fn find(functions: &HashMap<u64, Function>, name: &str) -> Option<u64> {
    let mut all: Vec<&Function> = functions.values().collect();
    all.sort_by_key(|f| f.addr);
    all.iter()
        .find(|f| f.name == name)
        .or_else(|| {
            all.iter().find(|f| {
                let n = f
                    .name
                    .rsplit_once("::h")
                    .map_or(f.name.as_str(), |(a, _)| a);
                n.ends_with(&format!("::{name}"))
            })
        })
        .map(|f| f.addr)
}

/// A function's name without its `::h<hash>` tail.
fn short(name: &str) -> &str {
    match name.rsplit_once("::h") {
        Some((a, h)) if h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()) => a,
        _ => name,
    }
}

/// The report of one board: the largest frames and the deepest paths, as Markdown.
pub(crate) fn report(
    board: &Board,
    functions: &HashMap<u64, Function>,
    entries: &[&str],
) -> String {
    let mut s = format!(
        "#### {} ({})\n\n{} functions; the 12 largest frames:\n\n| function | frame bytes |\n|---|---:|\n",
        board.name,
        board.target,
        functions.len()
    );
    let mut all: Vec<&Function> = functions.values().collect();
    all.sort_by(|a, b| b.frame.cmp(&a.frame).then(a.addr.cmp(&b.addr)));
    for f in all.iter().take(12) {
        let dynamic = if f.dynamic { " + dynamic" } else { "" };
        s += &format!("| `{}` | {}{dynamic} |\n", short(&f.name), f.frame);
    }
    for entry in entries {
        let Some(start) = find(functions, entry) else {
            s += &format!("\n`{entry}`: not found in the disassembly\n");
            continue;
        };
        let Some(d) = deepest(functions, start) else {
            continue;
        };
        let bound = if d.at_least { "at least " } else { "" };
        s += &format!(
            "\nDeepest path from `{entry}`: {bound}{} bytes{}:\n\n",
            d.bytes,
            if d.at_least {
                " (recursion, an indirect call or a dynamic frame on the way)"
            } else {
                ""
            }
        );
        for a in &d.path {
            if let Some(f) = functions.get(a) {
                s += &format!("- `{}` {}\n", short(&f.name), f.frame);
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
            let functions = parse(&String::from_utf8_lossy(&out.stdout));
            println!("{}", report(board, &functions, ENTRIES));
        }
        Ok(())
    }
}

/// Where the deepest paths start: the firmware's `main` (cortex-m-rt's entry) and the
/// decode of one request.
const ENTRIES: &[&str] = &["main", "decode"];

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
     200:      \tpush.w\t{r4, r5, r6, r7, r8, lr}
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

00000500 <rec>:
     500:      \tpush\t{r7, lr}
     502:      \tbl\t0x500 <rec>
     506:      \tpop\t{r7, pc}
";

    #[test]
    fn prologues_give_the_frames() {
        let f = parse(SNIPPET);
        assert_eq!(f.len(), 5);
        // push 4 x 4 + sub 16; the sub after the call is not the prologue's.
        assert_eq!(f[&0x100].frame, 32);
        assert!(f[&0x100].indirect);
        // push.w 6 x 4 + vpush 4 x 8 + sub.w 1024.
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
        let d = deepest(&f, 0x200).unwrap();
        assert_eq!(d.bytes, 1080 + 8);
        assert_eq!(d.path, vec![0x200, 0x300]);
        assert!(d.at_least, "kernel's dynamic frame");
        let d = deepest(&f, 0x100).unwrap();
        assert_eq!(d.bytes, 32 + 1080 + 8);
        assert_eq!(d.path, vec![0x100, 0x200, 0x300]);
        let d = deepest(&f, 0x400).unwrap();
        assert_eq!((d.bytes, d.at_least), (0, false));
        let d = deepest(&f, 0x500).unwrap();
        assert_eq!((d.bytes, d.at_least), (8, true), "recursion");
        assert_eq!(deepest(&f, 0x999), None);
        assert_eq!(find(&f, "decode"), Some(0x200));
        assert_eq!(find(&f, "main"), Some(0x100));
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
        // Nothing at all parses to nothing, without a panic.
        assert!(parse("").is_empty());
        assert!(parse("\u{0}\t:::\n<>:\n  zz:\n").is_empty());
    }
}
