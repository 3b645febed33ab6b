//! Vocabularies: token strings stored in the model file, and the conversion of a source
//! line into token ids and of output ids back into text.

use s2s_kernels::part::Part;

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
    /// Parses the vocabulary section (see [`crate::format`]):
    ///
    /// ```text
    /// count                       u32: source tokens + target tokens + 1
    /// (offset, length) x count    u32 pairs into the strings below
    /// source order                u16 x source tokens: the ids sorted by their bytes
    /// target order                u16 x target tokens: likewise
    /// strings                     UTF-8: source tokens, target tokens, separator
    /// ```
    ///
    /// The strings follow one another with nothing left over. Every token must be
    /// non-empty and distinct from the others of its vocabulary (the separator may be
    /// empty): the stored orders make that one comparison per token, since strings in
    /// strictly increasing order are distinct and `n` distinct ids below `n` are all of
    /// them, so a device checks a vocabulary of 30,000 words as fast as one of 30.
    pub(crate) fn parse_section(
        b: &'a [u8],
        src: usize,
        tgt: usize,
    ) -> Result<(Vocab<'a>, Vocab<'a>, &'a str), Error> {
        let count = u32_at(b, 0).ok_or(Error::VocabIndex)?;
        let expected = src + tgt + 1;
        if count != expected {
            return Err(Error::VocabCount {
                found: count as u32,
                expected,
            });
        }
        // `count` is at most 2 * 65535 + 1: no overflow.
        let index_end = 4 + 8 * count;
        let order_end = index_end + 2 * (src + tgt);
        if order_end > b.len() {
            return Err(Error::VocabIndex);
        }
        let all = Vocab {
            index: b.get(4..index_end).ok_or(Error::VocabIndex)?,
            strings: b.get(order_end..).ok_or(Error::VocabIndex)?,
        };
        let mut next = 0;
        for i in 0..count {
            let (off, n) = all.span(i).ok_or(Error::VocabIndex)?;
            if off != next {
                return Err(Error::VocabIndex);
            }
            next = off
                .checked_add(n)
                .filter(|&e| e <= all.strings.len())
                .ok_or(Error::VocabIndex)?;
            all.checked(i)?;
        }
        if next != all.strings.len() {
            return Err(Error::VocabIndex);
        }
        let split = |from: usize, n: usize| -> Result<Vocab<'a>, Error> {
            Ok(Vocab {
                index: all
                    .index
                    .get(8 * from..8 * (from + n))
                    .ok_or(Error::VocabIndex)?,
                strings: all.strings,
            })
        };
        let (src_v, tgt_v) = (split(0, src)?, split(src, tgt)?);
        let (src_order, tgt_order) = b
            .get(index_end..order_end)
            .and_then(|o| o.split_at_checked(2 * src))
            .ok_or(Error::VocabIndex)?;
        src_v.check_tokens("source", src_order)?;
        tgt_v.check_tokens("target", tgt_order)?;
        let sep = all.checked(src + tgt)?;
        Ok((src_v, tgt_v, sep))
    }

    /// `(offset, length)` of string `i`.
    fn span(&self, i: usize) -> Option<(usize, usize)> {
        Some((u32_at(self.index, 2 * i)?, u32_at(self.index, 2 * i + 1)?))
    }

    /// The bytes of string `i` (its span already checked).
    fn bytes(&self, i: usize) -> &'a [u8] {
        self.span(i)
            .and_then(|(off, n)| self.strings.get(off..off.checked_add(n)?))
            .unwrap_or(&[])
    }

    /// Every token non-empty and distinct, walking `order` (the ids sorted by their
    /// bytes, `u16` little-endian): each string must be above the one before.
    fn check_tokens(&self, vocab: &'static str, order: &[u8]) -> Result<(), Error> {
        let mut prev: Option<(u16, &[u8])> = None;
        for pair in order.chunks_exact(2) {
            let id = u16::from_le_bytes([pair[0], pair[1]]);
            if id as usize >= self.len() {
                return Err(Error::VocabOrder { vocab });
            }
            let s = self.bytes(id as usize);
            if s.is_empty() {
                return Err(Error::EmptyToken { vocab, id });
            }
            if let Some((p, ps)) = prev {
                if p == id || s < ps {
                    return Err(Error::VocabOrder { vocab });
                }
                if s == ps {
                    return Err(Error::DuplicateToken {
                        vocab,
                        first: p.min(id),
                        second: p.max(id),
                    });
                }
            }
            prev = Some((id, s));
        }
        Ok(())
    }

    fn checked(&self, i: usize) -> Result<&'a str, Error> {
        let (Some(off), Some(n)) = (u32_at(self.index, 2 * i), u32_at(self.index, 2 * i + 1))
        else {
            return Err(Error::VocabIndex);
        };
        let bytes = off
            .checked_add(n)
            .and_then(|end| self.strings.get(off..end))
            .ok_or(Error::VocabIndex)?;
        core::str::from_utf8(bytes).map_err(|_| Error::VocabNotUtf8)
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

/// Converts a source line into token ids as the model expects them: the model's fixed
/// prefix tokens first (a language or domain tag), then optional ASCII lowercasing, split into characters or white-space separated words, unknown tokens
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
        // `max` is at most the buffer's length: past it is too long.
        match out.get_mut(*n) {
            Some(slot) if *n < max => {
                *slot = id;
                *n += 1;
                Ok(())
            }
            _ => Err(Error::InputTooLong { len, max }),
        }
    };
    let prefix = desc.extras.prefix().count();
    let words = prefix + count_tokens(desc.split, line) + desc.src_eos.is_some() as usize;
    for id in desc.extras.prefix() {
        push(id, &mut n, words)?;
    }
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
    // A prefix alone is not a source.
    if n == prefix {
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
        // `n` is at most `max`, which is `src_pad_to` here.
        out.part_mut(n..desc.src_pad_to, "padded source")?
            .fill(desc.src_pad);
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
