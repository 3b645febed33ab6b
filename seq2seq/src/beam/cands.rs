//! The candidates of a step, kept ranked as they arrive, and the insertion they share
//! with netra's per-hypothesis top `K` and the results.

use core::cmp::Ordering;

use s2s_kernels::logprob::Score;

/// Candidates of a step, kept ranked: higher score, lower token, earlier parent.
pub(crate) struct Cands<'w, W> {
    pub(super) scores: &'w mut [W],
    /// `token | parent << 16`.
    pub(super) ids: &'w mut [u32],
    /// Candidates held.
    pub(super) n: usize,
}

impl<W: Score> Cands<'_, W> {
    /// Candidate `r` (in rank order): its token, parent and score.
    pub(super) fn get(&self, r: usize) -> Option<(u16, usize, W)> {
        let (&id, &score) = self.ids.get(r).zip(self.scores.get(r))?;
        Some((id as u16, (id >> 16) as usize, score))
    }

    /// Inserts a candidate if it ranks among the first `cap` (at most the buffer).
    #[inline]
    pub(super) fn offer(&mut self, score: W, token: u16, parent: usize, cap: usize) {
        let cap = cap.min(self.scores.len()).min(self.ids.len());
        let id = u32::from(token) | (parent as u32) << 16;
        // Most candidates rank after the last one of a full list: one comparison.
        if self.n >= cap && !self.ranks_before(score, id, cap.wrapping_sub(1)) {
            return;
        }
        self.insert(score, id, cap);
    }

    /// Whether a candidate ranks strictly before candidate `i` (false past the
    /// buffer).
    #[inline]
    fn ranks_before(&self, score: W, id: u32, i: usize) -> bool {
        match (self.scores.get(i), self.ids.get(i)) {
            (Some(&s), Some(&i)) => better(score, id, s, i),
            _ => false,
        }
    }

    /// [`Cands::offer`] past its quick test (`cap` at most the buffer). Out of line, so
    /// that the test alone is inlined into the loops over the vocabulary.
    #[inline(never)]
    fn insert(&mut self, score: W, id: u32, cap: usize) {
        let n = self.n.min(cap);
        // Position: after every candidate that ranks before or equal to it (candidates
        // arrive by parent, then token, so an equal score ranks after those present).
        let mut at = n;
        while let Some(prev) = at.checked_sub(1) {
            match self.ranks_before(score, id, prev) {
                true => at = prev,
                false => break,
            }
        }
        if at >= cap {
            return;
        }
        let moved = n - at + 1;
        shift_in(self.scores.iter_mut().take(cap).skip(at).take(moved), score);
        shift_in(self.ids.iter_mut().take(cap).skip(at).take(moved), id);
        self.n = (n + 1).min(cap);
    }
}

/// Whether candidate `a` ranks strictly before `b` (ids `token | parent << 16`).
pub(super) fn better<W: Score>(sa: W, ida: u32, sb: W, idb: u32) -> bool {
    match sa.partial_cmp(&sb) {
        Some(Ordering::Greater) => true,
        Some(Ordering::Equal) => (ida as u16, ida >> 16) < (idb as u16, idb >> 16),
        _ => false,
    }
}

/// The place of a new entry among the first `n` of `ranked`: after every entry it does
/// not rank strictly before (`before(e)`: whether it ranks strictly before `e`).
#[inline]
pub(super) fn place<T: Copy>(ranked: &[T], n: usize, before: impl Fn(T) -> bool) -> usize {
    let mut at = n.min(ranked.len());
    while let Some(prev) = at.checked_sub(1) {
        match ranked.get(prev) {
            Some(&e) if before(e) => at = prev,
            _ => break,
        }
    }
    at
}

/// Writes `v` into the first of `slots` and moves each entry one slot on: the last
/// entry falls off (pass the slots from the new entry's place through the first free
/// one, or the last one of a full list).
pub(super) fn shift_in<'a, T: 'a>(slots: impl Iterator<Item = &'a mut T>, v: T) {
    let mut carry = v;
    for slot in slots {
        carry = core::mem::replace(slot, carry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: every candidate offered, sorted by the ranking (stable, so equal
    /// ones keep their arrival order), cut to `cap`.
    fn reference(offers: &[(f32, u32)], cap: usize) -> Vec<(f32, u32)> {
        let mut all = offers.to_vec();
        all.sort_by(
            |a, b| match (better(a.0, a.1, b.0, b.1), better(b.0, b.1, a.0, a.1)) {
                (true, _) => Ordering::Less,
                (_, true) => Ordering::Greater,
                _ => Ordering::Equal,
            },
        );
        all.truncate(cap);
        all
    }

    #[test]
    fn offers_keep_the_best_cap_in_rank_order() {
        // Scores with many ties, tokens and parents in arrival order.
        let mut seed = 7u32;
        for cap in 0..=6 {
            let mut offers = Vec::new();
            for parent in 0..3u32 {
                for token in 0..40u32 {
                    seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    offers.push(((seed >> 28) as f32, token | parent << 16));
                }
            }
            let (mut scores, mut ids) = ([0f32; 6], [0u32; 6]);
            let mut c = Cands {
                scores: &mut scores,
                ids: &mut ids,
                n: 0,
            };
            for &(s, id) in &offers {
                c.offer(s, id as u16, (id >> 16) as usize, cap);
            }
            let held: Vec<_> = (0..c.n).map(|r| c.get(r).unwrap()).collect();
            let want: Vec<_> = reference(&offers, cap)
                .into_iter()
                .map(|(s, id)| (id as u16, (id >> 16) as usize, s))
                .collect();
            assert_eq!(held, want, "cap {cap}");
        }
    }

    #[test]
    fn place_and_shift_in_insert_like_a_sorted_list() {
        let mut row = [10, 20, 30, 0];
        let at = place(&row, 3, |e| 25 < e);
        assert_eq!(at, 2);
        shift_in(row.iter_mut().skip(at).take(3 - at + 1), 25);
        assert_eq!(row, [10, 20, 25, 30]);
        // A full row: the last one falls off.
        let at = place(&row, 4, |e| 15 < e);
        shift_in(row.iter_mut().skip(at).take(4 - at), 15);
        assert_eq!(row, [10, 15, 20, 25]);
    }
}
