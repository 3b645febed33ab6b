//! The minimal firmware a model needs: its features, the smallest board that compiles
//! its precision, and the command that builds that firmware.

use s2s_device::Board;
use seq2seq::{ModelFile, PrecisionKind};

/// The firmware features of the smallest build that serves `file`: its precision and the
/// model parts it needs ([`ModelFile::features`]), e.g. `["w8a16", "gru", "additive"]`.
pub fn minimal_features(file: &ModelFile<'_>) -> Vec<&'static str> {
    let mut v = vec![file.precision().name()];
    v.extend(file.features().iter().map(|f| f.name()));
    v
}

/// The QEMU board with a register driver (which has the minimal builds) with the least
/// runtime flash that compiles `precision` by default (the
/// first in the table of those with as little), if any.
pub fn smallest_board(precision: PrecisionKind) -> Option<&'static Board> {
    s2s_device::board::register_boards()
        .filter(|b| b.precisions.contains(&precision.name()))
        .min_by_key(|b| b.memory.flash.length)
}

/// The shell command, from the repository root, that builds the minimal firmware with
/// `features` (see [`minimal_features`]) for `board`.
pub fn minimal_command(board: &Board, features: &[&str]) -> String {
    format!(
        "cd firmware && S2S_BOARD={} cargo build --release --target {} --no-default-features --features {}",
        board.name,
        board.target,
        features.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimal_build_is_on_the_smallest_board_of_the_precision() {
        let w8a16 = smallest_board(PrecisionKind::W8A16).unwrap();
        assert_eq!(w8a16.name, "microbit");
        assert_eq!(
            minimal_command(w8a16, &["w8a16", "gru", "additive"]),
            "cd firmware && S2S_BOARD=microbit cargo build --release --target thumbv6m-none-eabi \
             --no-default-features --features w8a16,gru,additive"
        );
        assert_eq!(
            smallest_board(PrecisionKind::F32).unwrap().name,
            "mps2-an386"
        );
    }
}
