//! Sets of hypotheses (the current, next and finished ones), read and written through
//! checked accessors, and the finished set's rules.

use core::cmp::Ordering;

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::part::Part as _;
use s2s_kernels::ShapeError;

use crate::Error;

/// The error of a workspace buffer `what` of `found` elements where `expected` were
/// needed (an inconsistent plan or arena, never a bad input).
pub(super) fn short(what: &'static str, expected: usize, found: usize) -> ShapeError {
    ShapeError {
        what,
        expected,
        found,
    }
}

/// A set of hypotheses: token rows, scores, lengths and finished flags.
pub(crate) struct Hyps<'w, W> {
    /// `steps` tokens per hypothesis.
    pub(super) tokens: &'w mut [u16],
    pub(super) scores: &'w mut [W],
    pub(super) lens: &'w mut [u16],
    pub(super) ended: &'w mut [u16],
    /// Tokens of one row (the model's step cap).
    pub(super) steps: usize,
    /// Hypotheses held.
    pub(super) n: usize,
}

/// One hypothesis of a set, as read by [`Hyps::get`].
#[derive(Clone, Copy)]
pub(super) struct Entry<'r, W> {
    /// The tokens produced, end token included (its length is the hypothesis's).
    pub(super) tokens: &'r [u16],
    pub(super) score: W,
    pub(super) finished: bool,
}

impl<W: Copy> Entry<'_, W> {
    /// The last token, or `start` for the empty hypothesis.
    pub(super) fn last(&self, start: u16) -> u16 {
        self.tokens.last().copied().unwrap_or(start)
    }
}

impl<W: Score> Hyps<'_, W> {
    /// Hypothesis `i`, or an error if the buffers do not hold it.
    pub(super) fn get(&self, i: usize) -> Result<Entry<'_, W>, ShapeError> {
        let row = chunk(self.tokens, i, self.steps, "beam: token row")?;
        let (Some(&len), Some(&score), Some(&ended)) =
            (self.lens.get(i), self.scores.get(i), self.ended.get(i))
        else {
            return Err(short("beam: hypotheses", i + 1, self.lens.len()));
        };
        Ok(Entry {
            tokens: row.get(..len as usize).ok_or(short(
                "beam: hypothesis length",
                len as usize,
                row.len(),
            ))?,
            score,
            finished: ended != 0,
        })
    }

    /// Whether every hypothesis held has finished (true for none).
    pub(super) fn all_finished(&self) -> bool {
        self.ended.iter().take(self.n).all(|&e| e != 0)
    }

    /// The score and length of each hypothesis held, in slot order.
    pub(super) fn scored(&self) -> impl Iterator<Item = (W, usize)> + '_ {
        let held = self.scores.iter().zip(self.lens.iter()).take(self.n);
        held.map(|(&s, &l)| (s, l as usize))
    }
}

/// Row `i` of `n` elements of `buf`, or an error naming `what`.
pub(super) fn chunk<'b, T>(
    buf: &'b [T],
    i: usize,
    n: usize,
    what: &'static str,
) -> Result<&'b [T], ShapeError> {
    let start = i.saturating_mul(n);
    let found = buf.len();
    buf.get(start..)
        .and_then(|r| r.get(..n))
        .ok_or_else(|| short(what, start.saturating_add(n), found))
}

/// Row `i` of `n` elements of `buf`, writable, or an error naming `what`.
pub(super) fn chunk_mut<'b, T>(
    buf: &'b mut [T],
    i: usize,
    n: usize,
    what: &'static str,
) -> Result<&'b mut [T], ShapeError> {
    let start = i.saturating_mul(n);
    let found = buf.len();
    buf.get_mut(start..)
        .and_then(|r| r.get_mut(..n))
        .ok_or_else(|| short(what, start.saturating_add(n), found))
}

/// Writes hypothesis `j` of `to`: the tokens `from`, extended by `token` (unless `None`
/// or the row is full), with `score`; `ended` marks it finished.
pub(super) fn put<W: Score>(
    to: &mut Hyps<'_, W>,
    j: usize,
    from: &[u16],
    token: Option<u16>,
    score: W,
    ended: bool,
) -> Result<(), ShapeError> {
    let row = chunk_mut(to.tokens, j, to.steps, "beam: token row")?;
    let (head, free) = row.cut_mut(from.len(), "beam: token row")?;
    head.copy_from_slice(from);
    let len = match (token, free.first_mut()) {
        (Some(t), Some(slot)) => {
            *slot = t;
            from.len() + 1
        }
        _ => from.len(),
    };
    let (Some(s), Some(l), Some(e)) = (
        to.scores.get_mut(j),
        to.lens.get_mut(j),
        to.ended.get_mut(j),
    ) else {
        return Err(short("beam: hypotheses", j + 1, to.lens.len()));
    };
    (*s, *l, *e) = (score, len as u16, ended as u16);
    Ok(())
}

/// The worst entry of a non-empty finished set, `(index, score, length)`: lowest
/// `score / len^alpha`, ties to the later offered (`order`: when each was offered).
pub(super) fn worst_done<W: Score>(
    done: &Hyps<'_, W>,
    order: &[u32],
    alpha: Alpha,
) -> Result<(usize, W, usize), ShapeError> {
    let mut entries = done.scored().zip(order.iter()).enumerate();
    let Some((_, ((s, l), &o))) = entries.next() else {
        return Err(short("beam: finished set", 1, done.n.min(order.len())));
    };
    let mut worst = (0, s, l, o);
    for (i, ((s, l), &o)) in entries {
        let c = s.cmp_normalised(l, worst.1, worst.2, alpha);
        if c == Ordering::Less || (c == Ordering::Equal && o > worst.3) {
            worst = (i, s, l, o);
        }
    }
    Ok((worst.0, worst.1, worst.2))
}

/// A hypothesis offered to a finished set: `(tokens, token to append, score, length,
/// ended)`.
pub(super) type Offer<'r, W> = (&'r [u16], Option<u16>, W, usize, bool);

/// Offers a hypothesis to a finished set of at most `k`: taken while there is room,
/// else it replaces the worst entry if strictly better. `offers` counts the offers
/// (the order of the set's entries, in `order`).
pub(super) fn offer_done<W: Score>(
    done: &mut Hyps<'_, W>,
    order: &mut [u32],
    (tokens, token, score, len, ended): Offer<'_, W>,
    k: usize,
    alpha: Alpha,
    offers: &mut u32,
) -> Result<(), Error> {
    let slot = if done.n < k {
        done.n += 1;
        Some(done.n - 1)
    } else {
        let (w, w_score, w_len) = worst_done(done, order, alpha)?;
        let beats = score.cmp_normalised(len.max(1), w_score, w_len, alpha);
        (beats == Ordering::Greater).then_some(w)
    };
    if let Some(j) = slot {
        put(done, j, tokens, token, score, ended)?;
        let found = order.len();
        *order
            .get_mut(j)
            .ok_or(short("beam: finished order", j + 1, found))? = *offers;
    }
    *offers = offers.saturating_add(1);
    Ok(())
}
