//! Near ties: the project's one rule for when two decoders may pick different tokens.
//!
//! Two implementations of the same model (a framework and the model file, the training
//! code and the written file, the package and the import) compute the same logits up
//! to float rounding, so they may pick different tokens only where the two best are
//! practically equal: a top-two gap below [`NEAR_TIE`]. The golden tests, the training
//! agreement check and `s2s verify` all apply this rule.

/// The largest top-two gap (of logits or probabilities) at which two decoders may pick
/// differently.
pub const NEAR_TIE: f32 = 1e-4;

/// Whether a top-two gap is a near tie (below [`NEAR_TIE`]; NaN is not).
pub fn is_near_tie(gap: f32) -> bool {
    gap < NEAR_TIE
}

/// The index of the largest value (the first of equals, as the runtime's argmax) and
/// its lead over the second largest (infinite for a single value).
pub fn top_two(row: &[f32]) -> (u32, f32) {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    let second = row
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, &v)| v)
        .fold(f32::NEG_INFINITY, f32::max);
    (best as u32, row.get(best).map_or(f32::NAN, |b| b - second))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_of_the_first_maximum() {
        assert_eq!(top_two(&[0.5, 2.0, 1.5, 2.0]), (1, 0.0));
        assert_eq!(top_two(&[3.0, 1.0, 2.5]), (0, 0.5));
        assert_eq!(top_two(&[1.0]), (0, f32::INFINITY));
        assert!(is_near_tie(0.0) && is_near_tie(9e-5));
        assert!(!is_near_tie(1e-4) && !is_near_tie(f32::NAN));
    }
}
