//! The line protocol between the firmware and its host, over the board's UART.
//!
//! ```text
//! device: READY <board>
//! device: MODEL <precision> params=<n> bytes=<n> crc=0x<crc> arena=<workspace>/<capacity>
//!               positions=<n>
//!         (or `ERR model: <reason>` and exit status 3; `<reason>` is `E<code>` from a
//!         firmware without error texts, see [`code`])
//! host:   <source>                 one per line; `\r` ignored; at most `max_line` bytes
//! device: OUT <id> <id> ...        output ids, end token excluded
//! device: TXT <text>               the output text; `\`, newline, CR escaped
//! device: CNT enc=<n> tok=<n>,...  instructions of the encoder pass and of each step
//!         [enc_phases=<n>,... tok_phases=<n>,... marks=<n>,<n> mark_insns=<n>]  (a
//!         `profile` build: the same by phase, `s2s_kernels::Phase::ALL`, the phase
//!         marks counted, and the instructions of one)
//! device: ATT <step> <w0> ...      with attention on: the step's weights, as stored
//!         (or `ERR <reason>` for this line alone, `ERR E<code>` without error texts;
//!         the session goes on)
//! host:   \x01attention on|off     a command (byte 0x01 first, so no source is one)
//! device: OK attention on|off
//! host:   \x01beam <K>             the following sources beam-searched K wide
//! device: OK beam <K>
//! host:   \x01stream <N> [<R>]      the next source streamed (a streaming model:
//!                                  `seq2seq::ModelDesc::streams`), at most N steps,
//!                                  at most R on one position (`seq2seq::StreamLimits`)
//! device: OK stream <N> [<R>]
//! host:   <source>                 sent in pieces of any size, no length limit
//! device: OUT <id> ...             the ids decided so far, as they are decided
//! device: STREAMED positions=<n> tokens=<n> insns=<n> ended=0|1
//!         (or `ERR <reason>` after the OUT lines already written)
//! host:   \x01prefix <name>=<token> ...   the following sources after these prefix
//!                                  slot tokens (`\x01prefix` alone: the defaults)
//! device: OK prefix <name>=<token> ...
//! host:   .                        (or an empty line, or end of input): end of session
//! device: DONE lines=<n> errors=<n> handler_ticks=<n> handler_insns=<n>
//! device: STATS ram_static=<n> stack_peak=<n> stack_size=<n> flash_runtime=<n>
//!               model_region=0x<start>+<n> model_bytes=<n>
//! host:   \x01ack                   STATS read: the session ends (QEMU exits)
//! device: PANIC <message> at <file>:<line>  /  HARDFAULT pc=0x.. lr=0x.. xpsr=0x..
//! ```
//!
//! Every line has one writer here (used by the firmware, which needs no `core::fmt`
//! formatting for numbers) and one parser (used by the host), tested against each
//! other. Growing it:
//!
//! * Fields are `key=value` words after the line's keyword, and parsers skip keys they
//!   do not know: per-phase counters are more keys on the `CNT` line.
//! * Per-line errors are `ERR <reason>` answers to one request; the session goes on. A
//!   reason is words, or `E<code>` ([`code`]: one number space for the inference core's
//!   errors and the firmware's, told back on the host by [`code::explain`]).
//! * A request's options (e.g. a beam width) are commands ([`Command`]) that set them
//!   for the lines that follow, answered by `OK ...` or refused by `ERR ...`; more
//!   answers per line (n-best) are more reply lines before the next request's.
//! * The host sends nothing before it has read `READY` (the board's UART is set up only
//!   then), and acknowledges the last line (`STATS`) with [`ACK`]; a second `READY` in a
//!   session means that the board was reset.
//! * Nothing here needs semihosting: a real board runs the same lines over its serial
//!   port; only the exit statuses ([`crate::exit`]) are QEMU's.

pub mod code;
mod fields;
mod reply;
mod reply_parse;
mod request;

pub use fields::{unescape, Escape};
pub use reply::{
    write_att, write_cnt, write_done, write_err, write_err_code, write_hardfault, write_model,
    write_model_error, write_model_error_code, write_ok, write_out, write_panic, write_ready,
    write_stats, write_streamed, write_txt, Att, AttWeight, Cnt, Done, Fault, ModelInfo,
    PhaseCounts, Reply, Stats, Streamed, PHASES,
};
pub use reply_parse::{parse_reply, ParseError};
pub use request::{check_source, parse_request, write_request, Command, Request, ACK, END};
