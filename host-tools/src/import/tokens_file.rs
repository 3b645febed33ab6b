//! A vocabulary read from its own file (`tokens_file` in `[source]` or `[target]`), as
//! packages publish them: a JSON list of tokens (the index is the id), a JSON object
//! mapping each token to its id (0 to n-1, each once), a JSON object whose `source` or
//! `target` member is either, or a text file of one token a line.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Place, Result};
use crate::io::{read_text_bounded, MAX_CONFIG_BYTES};

/// The tokens of `path` for the `section` (`source` or `target`) of a configuration.
pub fn read_tokens(path: &Path, section: &str) -> Result<Vec<String>> {
    let text = read_text_bounded(path, MAX_CONFIG_BYTES)?;
    let file = path.display();
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if !json {
        return lines(&text).map_err(|(line, m)| Error::invalid(&file, Place::Line(line), m));
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Error::invalid(&file, Place::Line(e.line()), e.to_string()))?;
    let value = match &value {
        Value::Object(o) if o.contains_key(section) => &o[section],
        v => v,
    };
    from_json(value, section).map_err(|m| Error::invalid(&file, Place::File, m))
}

/// One token a line (a final line break ends the last line; `\r\n` counts as one).
fn lines(text: &str) -> std::result::Result<Vec<String>, (usize, String)> {
    let mut tokens = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            return Err((i + 1, "an empty line (one token a line)".into()));
        }
        tokens.push(line.to_string());
    }
    if tokens.is_empty() {
        return Err((1, "no tokens".into()));
    }
    Ok(tokens)
}

/// A list of strings, or an object of token -> id with the ids 0 to n-1 each once.
fn from_json(value: &Value, section: &str) -> std::result::Result<Vec<String>, String> {
    match value {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, t)| match t {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("item {i} is {other}, not a string")),
            })
            .collect(),
        Value::Object(map) if !map.is_empty() => {
            let mut tokens: Vec<Option<String>> = vec![None; map.len()];
            for (token, id) in map {
                let i = id
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < tokens.len())
                    .ok_or_else(|| {
                        format!(
                            "token {token:?} has id {id}: the ids must be 0 to {}",
                            tokens.len() - 1
                        )
                    })?;
                if let Some(other) = tokens[i].replace(token.clone()) {
                    return Err(format!("tokens {other:?} and {token:?} have the same id {i}"));
                }
            }
            // n distinct ids below n: every slot is filled.
            Ok(tokens.into_iter().flatten().collect())
        }
        _ => Err(format!(
            "not a list of tokens, an object of token ids, or an object with a `{section}` member holding either"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_an_id_map_and_lines_give_the_same_tokens() {
        let want = ["<pad>", "a", " "];
        assert_eq!(
            from_json(&json!(["<pad>", "a", " "]), "source").unwrap(),
            want
        );
        let ids = json!({"a": 1, " ": 2, "<pad>": 0});
        assert_eq!(from_json(&ids, "source").unwrap(), want);
        assert_eq!(lines("<pad>\r\na\n \n").unwrap(), want);
    }

    #[test]
    fn bad_vocabularies_name_what_is_wrong() {
        let e = from_json(&json!({"a": 0, "b": 0}), "target").unwrap_err();
        assert_eq!(e, "tokens \"a\" and \"b\" have the same id 0");
        let e = from_json(&json!({"a": 0, "b": 2}), "target").unwrap_err();
        assert_eq!(e, "token \"b\" has id 2: the ids must be 0 to 1");
        let e = from_json(&json!(["a", 3]), "target").unwrap_err();
        assert_eq!(e, "item 1 is 3, not a string");
        assert!(from_json(&json!({"x": ["a"]}), "target").is_err());
        assert_eq!(
            lines("a\n\nb\n").unwrap_err(),
            (2, "an empty line (one token a line)".into())
        );
    }
}
