//! Vocabularies: token strings stored in the model file, the prefix slots stored with
//! them ([`Slots`]) and the tokens a call chooses from them ([`Prefix`]), and the
//! conversion of a source line into token ids and of output ids back into text.

use s2s_kernels::part::Part;

use crate::desc::{ModelDesc, Split, MAX_SLOTS};
use crate::features::Feature;
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
    /// A vocabulary from its index (`(offset, length)` pairs, little-endian `u32`, one
    /// per token) and the strings they point into, as [`Vocab::raw_parts`] gives them:
    /// for a model embedded at build time ([`crate::embed`]), whose vocabulary section
    /// the host checked (`s2s embed`). Nothing is checked here; a string that is not
    /// where its pair says, or not UTF-8, reads as no token ([`Vocab::get`]).
    pub const fn from_raw(index: &'a [u8], strings: &'a [u8]) -> Self {
        Vocab { index, strings }
    }

    /// The index and the strings ([`Vocab::from_raw`]).
    pub fn raw_parts(&self) -> (&'a [u8], &'a [u8]) {
        (self.index, self.strings)
    }

    /// Parses the vocabulary section (see [`crate::format`]) of a model described by
    /// `desc`:
    ///
    /// ```text
    /// count                       u32: source tokens + target tokens + 1 + prefix slots
    /// (offset, length) x count    u32 pairs into the strings below
    /// source order                u16 x source tokens: the ids sorted by their bytes
    /// target order                u16 x target tokens: likewise
    /// slot tokens                 u16 x the slots' sizes: each slot's source ids in turn
    /// strings                     UTF-8: source tokens, target tokens, separator, the
    ///                             slots' names
    /// ```
    ///
    /// The strings follow one another with nothing left over. Every token must be
    /// non-empty and distinct from the others of its vocabulary (the separator may be
    /// empty): the stored orders make that one comparison per token, since strings in
    /// strictly increasing order are distinct and `n` distinct ids below `n` are all of
    /// them, so a device checks a vocabulary of 30,000 words as fast as one of 30. A
    /// slot's tokens are source ids, its default one of them, and its name is not empty
    /// and has no space, `=` or control character (a prefix is written `name=token`).
    /// A build without the `prefix-slots` feature does not check the slots (it binds no
    /// model that has them: [`Error::NotCompiled`]).
    pub(crate) fn parse_section(
        b: &'a [u8],
        desc: &ModelDesc,
    ) -> Result<(Vocab<'a>, Vocab<'a>, &'a str), Error> {
        let (src, tgt) = (desc.src_vocab, desc.tgt_vocab);
        let mut sizes = [0u16; MAX_SLOTS];
        for (o, s) in sizes.iter_mut().zip(desc.extras.slots()) {
            *o = s.size.get();
        }
        let slots = desc.extras.slots().count();
        let count = u32_at(b, 0).ok_or(Error::VocabIndex)?;
        let expected = src + tgt + 1 + slots;
        if count != expected {
            return Err(Error::VocabCount {
                found: count as u32,
                expected,
            });
        }
        // `count` is at most 2 * 65535 + 5 and the slots hold at most 4 * 65535 ids: no
        // overflow.
        let index_end = 4 + 8 * count;
        let order_end = index_end + 2 * (src + tgt);
        let slots_end = order_end + 2 * sizes.iter().map(|&n| usize::from(n)).sum::<usize>();
        if slots_end > b.len() {
            return Err(Error::VocabIndex);
        }
        let all = Vocab {
            index: b.get(4..index_end).ok_or(Error::VocabIndex)?,
            strings: b.get(slots_end..).ok_or(Error::VocabIndex)?,
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
        // A build without the part leaves the slots' checks out with the rest of their
        // code: it parses such a model's file (its layout is checked above) and refuses
        // to bind it (`Error::NotCompiled`).
        if cfg!(feature = "prefix-slots") {
            Slots::in_section(b, desc).check(desc)?;
        }
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
    /// The id of the token spelled `s` (the first one, if several are). Out of line:
    /// one copy for the source's symbols, the prefix slots' names and their tokens.
    #[inline(never)]
    pub fn find(&self, s: &str) -> Option<u16> {
        (0..self.len())
            .find(|&i| self.checked(i).ok() == Some(s))
            .map(|i| i as u16)
    }
}

/// A model's prefix slots: each one's name and the source tokens it offers (their ids),
/// borrowed from the model file; the sizes and defaults are the description's
/// ([`crate::desc::PrefixSlot`]).
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a> {
    /// The slots' names.
    names: Vocab<'a>,
    /// Every slot's token ids, `u16` little-endian, slot after slot.
    ids: &'a [u8],
    /// Each slot's number of tokens (0 past the last).
    sizes: [u16; MAX_SLOTS],
}

impl<'a> Slots<'a> {
    /// No slot.
    pub const NONE: Slots<'static> = Slots {
        names: Vocab {
            index: &[],
            strings: &[],
        },
        ids: &[],
        sizes: [0; MAX_SLOTS],
    };

    /// The slots of the vocabulary section `b` of a model described by `desc`, as
    /// [`Vocab::parse_section`] lays it out and checks it (only views here: a section it
    /// did not accept gives slots with fewer names or tokens, never a panic). Nothing
    /// holds them: a parsed file and a bound model keep the section, 8 bytes, and make
    /// these 32 when asked, off a small device's stack the rest of the time.
    pub(crate) fn in_section(b: &'a [u8], desc: &ModelDesc) -> Slots<'a> {
        if !cfg!(feature = "prefix-slots") {
            return Slots::NONE;
        }
        let mut sizes = [0u16; MAX_SLOTS];
        for (o, s) in sizes.iter_mut().zip(desc.extras.slots()) {
            *o = s.size.get();
        }
        let (named, n) = (
            desc.src_vocab + desc.tgt_vocab + 1,
            desc.extras.slots().count(),
        );
        let index_end = 4 + 8 * (named + n);
        let order_end = index_end + 2 * (desc.src_vocab + desc.tgt_vocab);
        let slots_end = order_end + 2 * sizes.iter().map(|&s| usize::from(s)).sum::<usize>();
        Slots {
            names: Vocab {
                index: b.get(4 + 8 * named..index_end).unwrap_or(&[]),
                strings: b.get(slots_end..).unwrap_or(&[]),
            },
            ids: b.get(order_end..slots_end).unwrap_or(&[]),
            sizes,
        }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.names.len()
    }
    /// True when the model has no slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The name of slot `i`.
    pub fn name(&self, i: usize) -> Option<&'a str> {
        u16::try_from(i).ok().and_then(|i| self.names.get(i))
    }
    /// The slot named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.find(name).map(usize::from)
    }
    /// The source token ids slot `i` offers, in stored order (none past the last slot).
    pub fn tokens(&self, i: usize) -> impl Iterator<Item = u16> + 'a {
        let from: usize = self.sizes.iter().take(i).map(|&n| usize::from(n)).sum();
        let n = self.sizes.get(i).map_or(0, |&n| usize::from(n));
        let ids = from
            .checked_add(n)
            .and_then(|end| self.ids.get(2 * from..2 * end))
            .unwrap_or(&[]);
        ids.chunks_exact(2)
            .filter_map(|p| <[u8; 2]>::try_from(p).ok().map(u16::from_le_bytes))
    }
    /// Whether slot `i` offers source token `id`.
    #[inline(never)]
    pub fn offers(&self, i: usize, id: u16) -> bool {
        self.tokens(i).any(|t| t == id)
    }

    /// The rules of [`Vocab::parse_section`] for the slots of `desc`.
    #[cold]
    fn check(&self, desc: &ModelDesc) -> Result<(), Error> {
        let bad = |rule| Err(Error::Inconsistent(rule));
        for (i, slot) in desc.extras.slots().enumerate() {
            let name = self.name(i).unwrap_or("");
            if name.is_empty() || name.chars().any(|c| c == ' ' || c == '=' || c.is_control()) {
                return bad("slots: a name empty or with a space, `=` or control character");
            }
            if self.names.find(name) != u16::try_from(i).ok() {
                return bad("slots: two slots of one name");
            }
            if let Some(id) = self.tokens(i).find(|&t| t as usize >= desc.src_vocab) {
                return Err(Error::TokenOutOfRange {
                    what: "slot token",
                    id: id.into(),
                    vocab: desc.src_vocab,
                });
            }
            if slot.default.is_some_and(|d| !self.offers(i, d)) {
                return bad("slots: a default that is not one of the slot's tokens");
            }
        }
        Ok(())
    }
}

/// The tokens one call chooses for a model's prefix slots: source token ids by slot,
/// `None` for a slot's default. [`Prefix::NONE`] chooses nothing (every slot takes its
/// default). Built by [`Prefix::choose`] or [`Prefix::with_fields`] from names; checked
/// against the model's slots again when a source is encoded ([`encode_source`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Prefix {
    /// The token chosen for each slot, `None`: its default.
    pub ids: [Option<u16>; MAX_SLOTS],
}

impl Prefix {
    /// Nothing chosen: every slot takes its default.
    pub const NONE: Prefix = Prefix {
        ids: [None; MAX_SLOTS],
    };

    /// Chooses the source token spelled `token` for the slot called `name`: an error
    /// when the model has no such slot ([`Error::NoSuchSlot`]) or the token is not one of
    /// the slot's ([`Error::NotInSlot`]).
    pub fn choose(
        &mut self,
        slots: &Slots<'_>,
        vocab: &Vocab<'_>,
        name: &str,
        token: &str,
    ) -> Result<(), Error> {
        let slot = slots.find(name).ok_or(Error::NoSuchSlot)?;
        let id = vocab
            .find(token)
            .filter(|&id| slots.offers(slot, id))
            .ok_or(Error::NotInSlot { slot })?;
        *self.ids.get_mut(slot).ok_or(Error::NoSuchSlot)? = Some(id);
        Ok(())
    }

    /// This prefix with the choices of `text`, `name=token` fields separated by spaces
    /// (the `prefix` command of the device protocol, `s2s run --prefix`), each through
    /// [`Prefix::choose`] (a later field for a slot replaces an earlier choice); a field
    /// without `=` is [`Error::PrefixField`]. The empty text changes nothing.
    #[inline(never)]
    #[cold]
    pub fn with_fields(
        mut self,
        slots: &Slots<'_>,
        vocab: &Vocab<'_>,
        text: &str,
    ) -> Result<Prefix, Error> {
        if !cfg!(feature = "prefix-slots") {
            return Err(Error::NotCompiled(Feature::PrefixSlots));
        }
        for field in text.split(' ').filter(|f| !f.is_empty()) {
            let (name, token) = field.split_once('=').ok_or(Error::PrefixField)?;
            self.choose(slots, vocab, name, token)?;
        }
        Ok(self)
    }

    /// The token of each of `desc`'s slots in turn: the chosen one, checked against
    /// `slots`, or the slot's default. Out of line, like [`typed_slot_token`]: their
    /// temporaries stay off a small device's stack while the model runs.
    #[inline(never)]
    #[cold]
    fn resolve(
        &self,
        desc: &ModelDesc,
        slots: &Slots<'_>,
    ) -> Result<[Option<u16>; MAX_SLOTS], Error> {
        let n = desc.extras.slots().count();
        if let Some(slot) = self.ids.iter().skip(n).position(Option::is_some) {
            return Err(Error::NotInSlot { slot: n + slot });
        }
        let mut out = [None; MAX_SLOTS];
        for (slot, (o, (s, chosen))) in out
            .iter_mut()
            .zip(desc.extras.slots().zip(self.ids))
            .enumerate()
        {
            let id = chosen.or(s.default).ok_or(Error::NoPrefixToken { slot })?;
            if !slots.offers(slot, id) {
                return Err(Error::NotInSlot { slot });
            }
            *o = Some(id);
        }
        Ok(out)
    }
}

/// The first place (counting from 1, in characters or words) where `line` holds a token
/// of a prefix slot typed as text, which the source's own tokens would not mean: with
/// [`Split::Chars`] a token of two or more characters anywhere in the line, with
/// [`Split::Whitespace`] a word that is one.
#[inline(never)]
#[cold]
fn typed_slot_token(
    desc: &ModelDesc,
    vocab: &Vocab<'_>,
    slots: &Slots<'_>,
    line: &str,
) -> Option<usize> {
    if !cfg!(feature = "prefix-slots") {
        return None;
    }
    let mut first: Option<usize> = None;
    for i in 0..slots.len() {
        for s in slots.tokens(i).filter_map(|id| vocab.get(id)) {
            let at = match desc.split {
                // Byte windows, not `str::find`: its two-way searcher would cost a
                // device kilobytes of flash.
                Split::Chars if s.chars().nth(1).is_some() => line
                    .as_bytes()
                    .windows(s.len())
                    .position(|w| w == s.as_bytes())
                    .map(|byte| line.get(..byte).map_or(0, |h| h.chars().count())),
                Split::Chars => None,
                Split::Whitespace => line.split_whitespace().position(|w| w == s),
            };
            if let Some(at) = at {
                first = Some(first.map_or(at, |f| f.min(at)));
            }
        }
    }
    first.map(|at| at + 1)
}

/// The ids a source starts with: the model's fixed prefix tokens, then one token per
/// prefix slot (`prefix`'s choice or the slot's default, see [`Prefix`]).
#[inline(always)]
pub fn prefix_ids<'d>(
    desc: &'d ModelDesc,
    slots: &Slots<'_>,
    prefix: &Prefix,
) -> Result<impl Iterator<Item = u16> + 'd, Error> {
    // A build without the part: no slot code (a model with slots is refused).
    let chosen = match cfg!(feature = "prefix-slots") {
        true => prefix.resolve(desc, slots)?,
        false if desc.extras.slots().next().is_some() => {
            return Err(Error::NotCompiled(Feature::PrefixSlots));
        }
        false => [None; MAX_SLOTS],
    };
    Ok(desc.extras.prefix().chain(chosen.into_iter().flatten()))
}

/// The id of character `c` at `position` (from 0) of a source split into characters:
/// ASCII-lowercased if the model says so, the unknown id if it is not in the
/// vocabulary, or an error naming it and its position when the model has none.
#[inline(always)]
pub fn char_id(
    desc: &ModelDesc,
    vocab: &Vocab<'_>,
    c: char,
    position: usize,
) -> Result<u16, Error> {
    let c = if desc.lowercase {
        c.to_ascii_lowercase()
    } else {
        c
    };
    let mut buf = [0u8; 4];
    token_id(desc, vocab, c.encode_utf8(&mut buf), position, c)
}

/// The character whose UTF-8 encoding starts with byte `first`, its further bytes
/// pulled from `more` (`None`: there are none); `None` if they are not one. For a
/// source read a byte at a time (`Runner::stream_chars` on the host and on a board).
#[inline]
pub fn utf8_char(first: u8, mut more: impl FnMut() -> Option<u8>) -> Option<char> {
    let len = match first {
        0x00..=0x7f => return Some(char::from(first)),
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    let mut utf8 = [first, 0, 0, 0];
    for slot in utf8.iter_mut().take(len).skip(1) {
        *slot = more()?;
    }
    core::str::from_utf8(utf8.get(..len)?).ok()?.chars().next()
}

/// The id of source token `tok` at `position` (from 0), whose first character is `ch`.
#[inline(always)]
fn token_id(
    desc: &ModelDesc,
    vocab: &Vocab<'_>,
    tok: &str,
    position: usize,
    ch: char,
) -> Result<u16, Error> {
    vocab
        .find(tok)
        .or(desc.src_unk)
        .ok_or(Error::UnknownSymbol {
            position: position + 1,
            ch,
        })
}

/// Converts a source line into token ids as the model expects them: the model's fixed
/// prefix tokens first (a language or domain tag), then one token per prefix slot
/// (`prefix`'s choice or the slot's default, see [`Prefix`]), then the line: optional
/// ASCII lowercasing, split into characters or white-space separated words, unknown
/// tokens mapped to the unknown id (or an error naming the character and its position
/// when the model has none), the end-of-source token appended, and padding to the
/// model's fixed length. A slot's token typed in the line is refused
/// ([`Error::SlotTokenInSource`]): it is chosen through `prefix`. Returns the number of
/// ids written and the valid (unpadded) length.
///
/// Out of line: one copy serves every precision a build compiles.
#[inline(never)]
pub fn encode_source(
    desc: &ModelDesc,
    vocab: &Vocab<'_>,
    slots: &Slots<'_>,
    prefix: &Prefix,
    line: &str,
    out: &mut [u16],
) -> Result<(usize, usize), Error> {
    let max = if desc.src_pad_to > 0 {
        desc.src_pad_to.min(out.len())
    } else {
        out.len()
    };
    let first = prefix_ids(desc, slots, prefix)?;
    if let Some(position) = typed_slot_token(desc, vocab, slots, line) {
        return Err(Error::SlotTokenInSource { position });
    }
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
    let prefix = desc.extras.prefix_len();
    let words = prefix + count_tokens(desc.split, line) + desc.src_eos.is_some() as usize;
    for id in first {
        push(id, &mut n, words)?;
    }
    match desc.split {
        Split::Chars => {
            for (position, c) in line.chars().enumerate() {
                push(char_id(desc, vocab, c, position)?, &mut n, words)?;
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
                push(token_id(desc, vocab, w, position, first)?, &mut n, words)?;
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
