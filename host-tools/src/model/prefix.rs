//! The prefix of each decoded line: the tokens chosen for a model's prefix slots by
//! `--prefix NAME=TOKEN` and, line by line, by the column `--prefix-column N` names.

use seq2seq::{ModelFile, Prefix};

use crate::error::{Error, Result};

/// What chooses the prefix slots' tokens of a decode: `--prefix` for every line, then
/// (with `--prefix-column N`) each line's column `N` (counting from 1; column 1 is the
/// source), `NAME=TOKEN` fields separated by spaces like `--prefix`, whose choices
/// replace `--prefix`'s for their slots. A line without that column, or with it empty,
/// keeps `--prefix`'s choices; a slot chosen by neither takes its default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrefixArgs {
    /// `NAME=TOKEN` fields.
    pub fields: Vec<String>,
    /// The column of each line's own fields.
    pub column: Option<usize>,
}

impl PrefixArgs {
    /// Whether nothing is chosen (every slot takes its default).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.column.is_none()
    }

    /// `--prefix`'s choices for the model `file` (at `path`): a usage error naming the
    /// field, with the model's slots or the slot's tokens, when one does not fit.
    pub fn base(&self, file: &ModelFile<'_>, path: &std::path::Path) -> Result<Prefix> {
        if self.column == Some(1) {
            return Err(Error::usage(
                "--prefix-column 1: column 1 is the source; a prefix column is 2 or more",
            ));
        }
        let (slots, vocab) = (file.slots(), file.src_vocab());
        let names: Vec<&str> = (0..slots.len()).filter_map(|i| slots.name(i)).collect();
        if (!self.is_empty()) && names.is_empty() {
            return Err(Error::usage(format!(
                "{}: the model has no prefix slot (--prefix and --prefix-column are for models whose configuration has source.prefix_slots)",
                path.display()
            )));
        }
        let mut prefix = Prefix::NONE;
        for field in &self.fields {
            let Some((name, token)) = field.split_once('=') else {
                return Err(Error::usage(format!(
                    "--prefix {field:?}: expected NAME=TOKEN (the model's slots: {})",
                    names.join(", ")
                )));
            };
            prefix.choose(&slots, &vocab, name, token).map_err(|e| {
                let why = match (e, slots.find(name)) {
                    (seq2seq::Error::NotInSlot { .. }, Some(i)) => {
                        let tokens: Vec<&str> =
                            slots.tokens(i).filter_map(|id| vocab.get(id)).collect();
                        format!(
                            "{token:?} is not one of the slot's tokens ({})",
                            shorten(&tokens)
                        )
                    }
                    _ => format!(
                        "the model has no prefix slot {name:?} (its slots: {})",
                        names.join(", ")
                    ),
                };
                Error::usage(format!("--prefix {field}: {why}"))
            })?;
        }
        Ok(prefix)
    }

    /// The prefix of input line `line` (the whole line, every column): `base` with the
    /// line's prefix column's choices.
    pub fn of_line(
        &self,
        file: &ModelFile<'_>,
        base: Prefix,
        line: &str,
    ) -> std::result::Result<Prefix, seq2seq::Error> {
        let fields = self
            .column
            .and_then(|n| line.split('\t').nth(n.saturating_sub(1)))
            .unwrap_or("");
        base.with_fields(&file.slots(), &file.src_vocab(), fields)
    }
}

/// A list of tokens for a message: the first 12, then how many more.
fn shorten(tokens: &[&str]) -> String {
    let shown: Vec<&str> = tokens.iter().take(12).copied().collect();
    match tokens.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}
