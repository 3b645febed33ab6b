//! Vocabularies: token strings stored in the model file, and the conversion of a source
//! line into token ids and of output ids back into text.

use crate::desc::{ModelDesc, Split};
use crate::Error;

/// A vocabulary: token `i` is the `i`-th string. Borrowed from the model file.
#[derive(Clone, Copy, Debug)]
pub struct Vocab<'a> {
    /// `(offset, length)` pairs, little-endian u32.
    index: &'a [u8],
    /// UTF-8 bytes of all strings of the section.
    strings: &'a [u8],
}

fn u32_at(b: &[u8], i: usize) -> Option<usize> {
    let w = b.get(4 * i..4 * i + 4)?;
    Some(u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize)
}

impl<'a> Vocab<'a> {
    /// Parses the vocabulary section: `count`, `count` pairs `(offset, length)` into the
    /// bytes that follow; the strings are the source tokens, the target tokens, then
    /// the output separator. Every string must be valid UTF-8.
    pub(crate) fn parse_section(
        b: &'a [u8],
        src: usize,
        tgt: usize,
    ) -> Result<(Vocab<'a>, Vocab<'a>, &'a str), Error> {
        let count = u32_at(b, 0).ok_or(Error::BadVocab("missing count"))?;
        if count != src + tgt + 1 {
            return Err(Error::BadVocab(
                "string count differs from vocabulary sizes",
            ));
        }
        let index_end = 4 + 8 * count;
        if index_end > b.len() {
            return Err(Error::BadVocab("index beyond the section"));
        }
        let all = Vocab {
            index: &b[4..index_end],
            strings: &b[index_end..],
        };
        for i in 0..count {
            all.checked(i)?;
        }
        let split = |from: usize, n: usize| Vocab {
            index: &all.index[8 * from..8 * (from + n)],
            strings: all.strings,
        };
        let sep = all.checked(src + tgt)?;
        Ok((split(0, src), split(src, tgt), sep))
    }

    fn checked(&self, i: usize) -> Result<&'a str, Error> {
        let (Some(off), Some(n)) = (u32_at(self.index, 2 * i), u32_at(self.index, 2 * i + 1))
        else {
            return Err(Error::BadVocab("index"));
        };
        let bytes = off
            .checked_add(n)
            .and_then(|end| self.strings.get(off..end))
            .ok_or(Error::BadVocab("string beyond the section"))?;
        core::str::from_utf8(bytes).map_err(|_| Error::BadVocab("string is not UTF-8"))
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.index.len() / 8
    }
    /// True when there is no token.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The string of token `id`.
    pub fn get(&self, id: u16) -> Option<&'a str> {
        if (id as usize) < self.len() {
            self.checked(id as usize).ok()
        } else {
            None
        }
    }
    /// The id of the token spelled `s` (the first one, if several are).
    pub fn find(&self, s: &str) -> Option<u16> {
        (0..self.len())
            .find(|&i| self.checked(i).ok() == Some(s))
            .map(|i| i as u16)
    }
}

/// Converts a source line into token ids as the model expects them: optional ASCII
/// lowercasing, split into characters or white-space separated words, unknown tokens
/// mapped to the unknown id (or an error naming the character and its position when
/// the model has none), the end-of-source token appended, and padding to the model's
/// fixed length. Returns the number of ids written and the valid (unpadded) length.
pub fn encode_source(
    desc: &ModelDesc,
    vocab: &Vocab<'_>,
    line: &str,
    out: &mut [u16],
) -> Result<(usize, usize), Error> {
    let max = if desc.src_pad_to > 0 {
        desc.src_pad_to.min(out.len())
    } else {
        out.len()
    };
    let mut n = 0;
    let mut push = |id: u16, n: &mut usize, len: usize| -> Result<(), Error> {
        if *n >= max {
            return Err(Error::InputTooLong { len, max });
        }
        out[*n] = id;
        *n += 1;
        Ok(())
    };
    let words = count_tokens(desc.split, line) + desc.src_eos.is_some() as usize;
    let lookup = |tok: &str, position: usize, ch: char| -> Result<u16, Error> {
        vocab
            .find(tok)
            .or(desc.src_unk)
            .ok_or(Error::UnknownSymbol {
                position: position + 1,
                ch,
            })
    };
    match desc.split {
        Split::Chars => {
            for (position, c) in line.chars().enumerate() {
                let c = if desc.lowercase {
                    c.to_ascii_lowercase()
                } else {
                    c
                };
                let mut buf = [0u8; 4];
                let id = lookup(c.encode_utf8(&mut buf), position, c)?;
                push(id, &mut n, words)?;
            }
        }
        Split::Whitespace => {
            let mut buf = [0u8; 64];
            for (position, w) in line.split_whitespace().enumerate() {
                let first = w.chars().next().unwrap_or(' ');
                let w = if desc.lowercase && w.len() <= buf.len() {
                    let b = &mut buf[..w.len()];
                    b.copy_from_slice(w.as_bytes());
                    b.make_ascii_lowercase();
                    core::str::from_utf8(b).unwrap_or(w)
                } else {
                    w
                };
                push(lookup(w, position, first)?, &mut n, words)?;
            }
        }
    }
    if let Some(eos) = desc.src_eos {
        push(eos, &mut n, words)?;
    }
    if n == 0 {
        return Err(Error::EmptyInput);
    }
    let valid = n;
    if desc.src_pad_to > 0 {
        if out.len() < desc.src_pad_to {
            return Err(Error::InputTooLong {
                len: desc.src_pad_to,
                max: out.len(),
            });
        }
        out[n..desc.src_pad_to].fill(desc.src_pad);
        n = desc.src_pad_to;
    }
    Ok((n, valid))
}

fn count_tokens(split: Split, line: &str) -> usize {
    match split {
        Split::Chars => line.chars().count(),
        Split::Whitespace => line.split_whitespace().count(),
    }
}

/// Writes the strings of output ids joined by `separator` through `write`.
pub fn decode_target<E>(
    vocab: &Vocab<'_>,
    separator: &str,
    ids: &[u16],
    mut write: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    for (i, &id) in ids.iter().enumerate() {
        if i > 0 {
            write(separator)?;
        }
        write(vocab.get(id).unwrap_or("?"))?;
    }
    Ok(())
}
