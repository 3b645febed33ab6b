//! `s2s run --stream`: each input line streamed through a streaming model a character
//! at a time (`seq2seq::Runner::stream_chars`), its output tokens written as they are
//! decided. The workspace is the window of `--positions` encoder states, whatever a
//! line's length; a line is never held whole, so lines have no length limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use seq2seq::vocab::utf8_char;
use seq2seq::{Prefix, Runner};

use crate::dispatch;
use crate::error::{Error, Place, Result};
use crate::io::{STDIN_NAME, STDOUT_NAME};
use crate::model::{forget_layers, LoadedModel, PrefixArgs};

use super::run::RunOptions;

/// Why a streamed line stopped early: the core refused it (the line's error, the next
/// line goes on), its bytes are not UTF-8 (likewise), or reading or writing failed
/// (the run stops).
enum Stop {
    Core(seq2seq::Error),
    Line(String),
    Io(Error),
}

impl From<seq2seq::Error> for Stop {
    fn from(e: seq2seq::Error) -> Self {
        Stop::Core(e)
    }
}

/// The characters of one input line, read from `reader` as they are needed: the line
/// ends at `\n` (a `\r` before it dropped) or at the end of the input; a UTF-8
/// byte-order mark opening the input is dropped.
struct LineChars<'r> {
    reader: &'r mut dyn BufRead,
    name: &'r str,
    /// Bytes of the line read so far.
    bytes: usize,
    /// Whether the line's end has been read.
    ended: bool,
    /// Whether this is the input's first line.
    first: bool,
}

impl LineChars<'_> {
    /// The next byte without taking it, `None` at the end of the input.
    fn peek(&mut self) -> std::result::Result<Option<u8>, Stop> {
        let buf = self
            .reader
            .fill_buf()
            .map_err(|e| Stop::Io(Error::io(Path::new(self.name))(e)))?;
        Ok(buf.first().copied())
    }

    fn take(&mut self) -> std::result::Result<Option<u8>, Stop> {
        let b = self.peek()?;
        if b.is_some() {
            self.reader.consume(1);
            self.bytes += 1;
        }
        Ok(b)
    }

    /// The line's next character, `None` at its end.
    fn next_char(&mut self) -> std::result::Result<Option<char>, Stop> {
        loop {
            if self.ended {
                return Ok(None);
            }
            let Some(b) = self.take()? else {
                self.ended = true;
                return Ok(None);
            };
            if b == b'\n' || (b == b'\r' && self.peek()? == Some(b'\n')) {
                if b == b'\r' {
                    self.take()?;
                }
                self.ended = true;
                return Ok(None);
            }
            let at = self.bytes;
            // Continuation bytes only: a `\n` after a bad lead byte still ends the line.
            let mut failed = None;
            let c = utf8_char(b, || match self.peek() {
                Ok(Some(c)) if c & 0xc0 == 0x80 => self.take().ok().flatten(),
                Ok(_) => None,
                Err(e) => {
                    failed = Some(e);
                    None
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            let Some(c) = c else {
                return Err(Stop::Line(format!(
                    "not UTF-8 (byte {at} of the line is 0x{b:02x})"
                )));
            };
            if std::mem::take(&mut self.first) && at == 1 && c == '\u{feff}' {
                continue;
            }
            return Ok(Some(c));
        }
    }

    /// Reads to the end of the line.
    fn skip(&mut self) -> std::result::Result<(), Stop> {
        while !self.ended {
            match self.take()? {
                None | Some(b'\n') => self.ended = true,
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Streams every line of `input` (standard input for `None`) through `model` and writes
/// each line's output as its tokens are decided (their ids with `options.ids`), one
/// output line per input line; an empty line gives an empty output. A line the model
/// cannot take keeps the tokens decided before its error, ends there, and its error
/// (`file:line: ...`) goes to `errors`; the other lines go on. Returns the number of
/// such lines. `--tsv`, `--attention`, beam search, n-best lists and a prefix column
/// need a whole line, and are refused.
pub fn stream_file(
    model: &Path,
    input: Option<&Path>,
    options: &RunOptions<'_>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<usize> {
    let refused = [
        (options.tsv, "--tsv"),
        (options.attention.is_some(), "--attention"),
        (options.beam.is_some(), "--beam"),
        (options.nbest.is_some(), "--nbest"),
        (
            options.prefix.is_some_and(|p| p.column.is_some()),
            "--prefix-column",
        ),
    ];
    if let Some((_, flag)) = refused.iter().find(|(on, _)| *on) {
        return Err(Error::usage(format!(
            "{flag} needs a whole line: it does not go with --stream"
        )));
    }
    let m = LoadedModel::load(model)?.with_limits(options.limits)?;
    let file = m.file();
    let window = m.positions();
    file.desc()
        .streams_in(window)
        .map_err(Error::model(model))?;
    let no_prefix = PrefixArgs::default();
    let prefix = options.prefix.unwrap_or(&no_prefix).base(&file, model)?;
    let (name, source): (String, Box<dyn Read>) = match input {
        Some(p) if p != Path::new("-") => (
            p.display().to_string(),
            Box::new(std::fs::File::open(p).map_err(Error::io(p))?),
        ),
        _ => (STDIN_NAME.into(), Box::new(std::io::stdin())),
    };
    let mut reader = BufReader::with_capacity(64 * 1024, source);
    m.with_net(|net| {
        dispatch!(net, |net: P| {
            forget_layers();
            let bytes = seq2seq::Plan::new::<P>(&net.desc, window).bytes();
            let mut arena = vec![0u32; bytes.div_ceil(4)];
            let mut runner = Runner::new(&net, &mut arena, window).map_err(Error::model(model))?;
            let to = Output {
                vocab: net.tgt_vocab,
                separator: net.separator,
                ids: options.ids,
            };
            let limits = seq2seq::StreamLimits {
                max_steps: net.desc.max_steps,
                max_repeats: options.max_repeats,
            };
            stream_lines(
                &mut runner,
                &prefix,
                limits,
                &name,
                &mut reader,
                &to,
                out,
                errors,
            )
        })
    })
}

/// How output tokens are written: as text joined by the model's separator, or as ids.
struct Output<'a> {
    vocab: seq2seq::Vocab<'a>,
    separator: &'a str,
    ids: bool,
}

/// [`stream_file`]'s lines through `runner`, each within `limits`.
#[allow(clippy::too_many_arguments)]
fn stream_lines<P: seq2seq::Precision>(
    runner: &mut Runner<'_, '_, '_, P>,
    prefix: &Prefix,
    limits: seq2seq::StreamLimits,
    name: &str,
    reader: &mut dyn BufRead,
    to: &Output<'_>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<usize> {
    let (mut failed, mut number) = (0, 0);
    let stdout = |e| Stop::Io(Error::io(STDOUT_NAME)(e));
    loop {
        let mut chars = LineChars {
            reader: &mut *reader,
            name,
            bytes: 0,
            ended: false,
            first: number == 0,
        };
        match chars.peek() {
            Ok(None) => break,
            Ok(_) => number += 1,
            Err(Stop::Io(e)) => return Err(e),
            Err(_) => unreachable!("peek fails only on reading"),
        }
        // An empty line: an empty output, whatever the model.
        if matches!(chars.peek(), Ok(Some(b'\n'))) {
            let _ = chars.skip();
            out.write_all(b"\n").map_err(Error::io(STDOUT_NAME))?;
            continue;
        }
        let mut written = 0usize;
        let result = runner.stream_chars(
            prefix,
            || chars.next_char(),
            limits,
            &mut (),
            |y| {
                if written > 0 {
                    let sep = if to.ids { " " } else { to.separator };
                    out.write_all(sep.as_bytes()).map_err(stdout)?;
                }
                match to.ids {
                    true => write!(out, "{y}"),
                    false => out.write_all(to.vocab.get(y).unwrap_or("?").as_bytes()),
                }
                .and_then(|()| out.flush())
                .map_err(stdout)?;
                written += 1;
                Ok(())
            },
        );
        out.write_all(b"\n").map_err(Error::io(STDOUT_NAME))?;
        let why = match result {
            Ok(_) => continue,
            Err(Stop::Io(e)) => return Err(e),
            Err(Stop::Core(e)) => Error::Model {
                path: name.into(),
                place: Place::Line(number),
                source: e,
                positions: None,
            },
            Err(Stop::Line(message)) => Error::invalid(name, Place::Line(number), message),
        };
        failed += 1;
        writeln!(errors, "error: {why}").map_err(Error::io("<stderr>"))?;
        if let Err(Stop::Io(e)) = chars.skip() {
            return Err(e);
        }
    }
    Ok(failed)
}
