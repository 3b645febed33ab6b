//! Hard monotonic attention and MoChA ([`Attention::monotonic_marked`]): the online scan
//! over the additive score's energies, and the chunk's softmax where it stops.

// The crate root's names, its imports included (what is used depends on the features).
use super::*;

impl<P: Precision> Attention<'_, P> {
    /// Hard monotonic attention (Raffel et al., 2017, "Online and linear-time attention
    /// by enforcing monotonic alignments"), decoded online: the energy of `query`
    /// against position `j` is the additive score, `v`'s bias being the offset `r`;
    /// from position `from` on, the first of the first `n` positions whose energy is
    /// at least 0 is attended, its memory row becoming the `context` and its weight the
    /// softmax of its one energy (the precision's own 1), and is returned.
    /// The positions before it are passed for good (the next step starts from the one
    /// attended). When none stops the context is zero and `None` is returned. The
    /// energies scanned go to `s.scores[from..]` (at most `n` long); the cost is the
    /// query's projection per [`MONOTONIC_CHUNK`] positions scanned and one score per
    /// position, whatever `n` is.
    ///
    /// With a `chunk` of `w > 1` this is MoChA (Chiu and Raffel, 2018, "Monotonic
    /// chunkwise attention"): the scan also scores the `w - 1` positions before `from`
    /// (which do not stop it), and the context is the softmax of the energies of the
    /// `w` positions ending at the one attended (fewer at the start) over their memory
    /// rows, the softmax written to `weights` there. The other weights are not written.
    /// Phases go to `marks` like [`Attention::attend_marked`]'s.
    #[allow(clippy::too_many_arguments)]
    #[cfg_attr(not(feature = "additive"), allow(unused_variables))]
    pub fn monotonic_marked(
        &self,
        query: &[P::Act],
        keys: &[P::Act],
        memory: &[P::Act],
        (from, n, chunk): (usize, usize, usize),
        s: &mut AttnScratch<'_, P>,
        weights: &mut [P::Act],
        context: &mut [P::Act],
        marks: &mut impl Marks,
    ) -> Result<Option<usize>, Error> {
        match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { .. } => {
                let (k, m) = (self.key_dim(), self.memory_dim);
                shape("context", m, context.len())?;
                if keys.len() < n.saturating_mul(k)
                    || memory.len() < n.saturating_mul(m)
                    || s.scores.len() < n
                {
                    return Err(Error::Shape(ShapeError {
                        what: "keys",
                        expected: n.saturating_mul(k),
                        found: keys.len(),
                    }));
                }
                marks.mark(Phase::Scores);
                // Chunks of positions through `scores`, the one call of the score
                // kernel: a second call site moved the AN386's encoder by 1.8 % (the
                // kernels' helpers are inlined differently); a chunk costs one query
                // projection.
                let mut stop = None;
                let w = chunk.max(1);
                let mut at = from.saturating_sub(w - 1);
                while at < n {
                    let len = (n - at).min(MONOTONIC_CHUNK);
                    let keys = keys.part(at * k..(at + len) * k, "keys")?;
                    let mut scan = AttnScratch {
                        scores: s.scores.part_mut(at..at + len, "attention scores")?,
                        query: &mut *s.query,
                        tanh: &mut *s.tanh,
                    };
                    self.scores(query, keys, len, &mut scan)?;
                    let zero = P::Wide::default();
                    // (MoChA's positions before `from`, scored for the chunk, do not stop.)
                    let before = from.saturating_sub(at).min(len);
                    let mut energies = scan.scores.iter().enumerate().skip(before);
                    if let Some((i, _)) = energies.find(|(_, &e)| e >= zero) {
                        stop = Some(at + i);
                        break;
                    }
                    at += len;
                }
                marks.mark(Phase::Context);
                match stop {
                    Some(j) => {
                        let lo = (j + 1).saturating_sub(w);
                        let weights = weights.part_mut(lo..j + 1, "attention weights")?;
                        marks.mark(Phase::Softmax);
                        P::softmax(s.scores.part(lo..j + 1, "attention scores")?, weights);
                        let rows = memory.part(lo * m..(j + 1) * m, "memory")?;
                        marks.mark(Phase::Context);
                        // One position's row is the context as it is (a weighted sum
                        // by the precision's own 1 would not be).
                        match w {
                            1 => context.fill_from(rows, "context")?,
                            _ => P::weighted_sum(weights, rows, context),
                        }
                    }
                    None => context.fill(P::Act::default()),
                }
                marks.mark(Phase::Rest);
                Ok(stop)
            }
            #[allow(unreachable_patterns)] // with `additive` only
            _ => Err(Error::NotAdditive),
        }
    }
}
