//! A reader for NumPy `.npy` arrays (format versions 1.0, 2.0 and 3.0).
//!
//! The file is a magic string, a version, a header length, then a Python dict literal
//! such as `{'descr': '<f4', 'fortran_order': False, 'shape': (32, 192), }` and the raw
//! elements. The dict is parsed with a tiny literal parser (strings, booleans, integers,
//! tuples, lists), never evaluated.
//!
//! Supported element types: `f2`, `f4`, `f8` in either byte order, converted to `f32`.
//! Other simple dtypes (`|u1`, `<i8`, `|b1`, complex, objects, strings...) are recognised
//! and reported as "not float" so callers can skip them; structured dtypes and
//! long doubles are errors. Fortran-ordered arrays are transposed into row-major order.

use std::fmt;

use super::convert::{decode, ByteOrder, FloatKind};

const MAGIC: &[u8] = b"\x93NUMPY";
/// Python literals nest only a level or two in real headers; this bounds recursion.
const MAX_NESTING: usize = 8;

/// What is wrong with an `.npy` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyError {
    /// One line describing the problem.
    pub message: String,
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NpyError {}

fn fail<T>(message: impl Into<String>) -> Result<T, NpyError> {
    Err(NpyError {
        message: message.into(),
    })
}

/// The parsed header of an `.npy` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The dtype string, e.g. `<f4`.
    pub descr: String,
    /// True when the elements are stored column-major.
    pub fortran_order: bool,
    /// The array's dimensions (empty for a scalar).
    pub shape: Vec<usize>,
    /// Offset of the first element byte in the file.
    pub data_offset: usize,
}

/// A float array read from an `.npy` file, converted to row-major `f32`.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// The array's dimensions (empty for a scalar).
    pub shape: Vec<usize>,
    /// The elements in row-major (C) order.
    pub data: Vec<f32>,
}

/// Returns true if `bytes` starts with the `.npy` magic string.
pub fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Parses the magic, version and header dict.
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, NpyError> {
    if !is_npy(bytes) {
        return fail("not an .npy array (bad magic)");
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[major, minor]) => (major, minor),
        _ => return fail("truncated before the version"),
    };
    let (start, len): (usize, Option<usize>) = match major {
        1 => (
            10,
            bytes
                .get(8..10)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]]))),
        ),
        2 | 3 => (
            12,
            bytes
                .get(8..12)
                .and_then(|b| usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()),
        ),
        _ => return fail(format!("unsupported .npy format version {major}.{minor}")),
    };
    let Some(text) = len.and_then(|len| bytes.get(start..start.checked_add(len)?)) else {
        return fail("truncated inside the header");
    };
    let dict = Parser::new(text).parse_header_dict()?;
    let header = header_from_dict(dict)?;
    Ok(NpyHeader {
        data_offset: start + text.len(),
        ..header
    })
}

/// Reads an `.npy` array. Returns `Ok(None)` when the dtype is not floating point
/// (integers, booleans, strings, objects, complex), which callers skip.
pub fn read_npy(bytes: &[u8]) -> Result<Option<NpyArray>, NpyError> {
    let header = parse_header(bytes)?;
    let Some((kind, order)) = float_type(&header.descr)? else {
        return Ok(None);
    };
    let count = element_count(&header.shape)?;
    let expected = count.checked_mul(kind.size()).ok_or_else(|| NpyError {
        message: format!("shape {:?} is too large", header.shape),
    })?;
    let data = &bytes[header.data_offset.min(bytes.len())..];
    if data.len() != expected {
        return fail(format!(
            "data is {} bytes but shape {:?} of {} needs {expected}",
            data.len(),
            header.shape,
            header.descr
        ));
    }
    let mut values = decode(data, kind, order);
    if header.fortran_order {
        values = fortran_to_row_major(&values, &header.shape);
    }
    Ok(Some(NpyArray {
        shape: header.shape,
        data: values,
    }))
}

/// Number of elements of `shape`, with overflow checking.
fn element_count(shape: &[usize]) -> Result<usize, NpyError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &dim| acc.checked_mul(dim))
        .ok_or_else(|| NpyError {
            message: format!("shape {shape:?} is too large"),
        })
}

/// Maps a dtype string to a float encoding, `None` for non-float dtypes.
fn float_type(descr: &str) -> Result<Option<(FloatKind, ByteOrder)>, NpyError> {
    let mut chars = descr.chars();
    let (order, rest) = match chars.next() {
        Some('<' | '=' | '|') => (ByteOrder::Little, chars.as_str()),
        Some('>') => (ByteOrder::Big, chars.as_str()),
        _ => (ByteOrder::Little, descr),
    };
    let Some(size) = rest.strip_prefix('f') else {
        return Ok(None);
    };
    let kind = match size {
        "2" => FloatKind::F16,
        "4" => FloatKind::F32,
        "8" => FloatKind::F64,
        _ => return fail(format!("unsupported float dtype {descr}")),
    };
    Ok(Some((kind, order)))
}

/// Reorders column-major `values` of `shape` into row-major order.
fn fortran_to_row_major(values: &[f32], shape: &[usize]) -> Vec<f32> {
    // Column-major strides: the first axis varies fastest.
    let strides: Vec<usize> = shape
        .iter()
        .scan(1usize, |stride, &dim| {
            let current = *stride;
            *stride *= dim;
            Some(current)
        })
        .collect();
    let mut index = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(values.len());
    for _ in 0..values.len() {
        let source: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push(values[source]);
        // Advance the row-major counter: the last axis varies fastest.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

/// A Python literal as it appears in an `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    Str(String),
    Bool(bool),
    Int(u64),
    None,
    Sequence(Vec<Literal>),
}

/// Extracts `descr`, `fortran_order` and `shape` from the parsed dict.
fn header_from_dict(dict: Vec<(String, Literal)>) -> Result<NpyHeader, NpyError> {
    let find = |key: &str| dict.iter().find(|(k, _)| k == key).map(|(_, value)| value);
    let descr = match find("descr") {
        Some(Literal::Str(descr)) => descr.clone(),
        Some(Literal::Sequence(_)) => return fail("structured dtypes are unsupported"),
        _ => return fail("header has no 'descr' string"),
    };
    let fortran_order = match find("fortran_order") {
        Some(Literal::Bool(flag)) => *flag,
        _ => return fail("header has no 'fortran_order' boolean"),
    };
    let shape = match find("shape") {
        Some(Literal::Sequence(dims)) => dims
            .iter()
            .map(|dim| match dim {
                Literal::Int(n) => usize::try_from(*n).ok(),
                _ => None,
            })
            .collect::<Option<Vec<usize>>>(),
        _ => None,
    };
    let Some(shape) = shape else {
        return fail("header has no 'shape' tuple of integers");
    };
    Ok(NpyHeader {
        descr,
        fortran_order,
        shape,
        data_offset: 0,
    })
}

/// Recursive-descent parser for the header's dict literal.
struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a [u8]) -> Self {
        Parser { text, pos: 0 }
    }

    fn error<T>(&self, what: &str) -> Result<T, NpyError> {
        fail(format!("header dict: {what} at byte {}", self.pos))
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), NpyError> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.error(&format!("expected '{}'", char::from(byte)))
        }
    }

    /// `{ key: value, ... }` followed only by whitespace (numpy pads with spaces and `\n`).
    fn parse_header_dict(&mut self) -> Result<Vec<(String, Literal)>, NpyError> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        loop {
            self.skip_space();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                break;
            }
            let Literal::Str(key) = self.parse_value(0)? else {
                return self.error("dict key is not a string");
            };
            self.expect(b':')?;
            let value = self.parse_value(0)?;
            entries.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return self.error("expected ',' or '}'"),
            }
        }
        self.skip_space();
        if self.pos != self.text.len() {
            return self.error("unexpected text after the dict");
        }
        Ok(entries)
    }

    fn parse_value(&mut self, depth: usize) -> Result<Literal, NpyError> {
        if depth > MAX_NESTING {
            return self.error("literal nested too deeply");
        }
        self.skip_space();
        match self.peek() {
            Some(quote @ (b'\'' | b'"')) => self.parse_string(quote),
            Some(b'(') => self.parse_sequence(b')', depth),
            Some(b'[') => self.parse_sequence(b']', depth),
            Some(b) if b.is_ascii_digit() => self.parse_int(),
            Some(b) if b.is_ascii_alphabetic() => self.parse_word(),
            _ => self.error("expected a value"),
        }
    }

    fn parse_string(&mut self, quote: u8) -> Result<Literal, NpyError> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return self.error("unterminated string"),
                Some(b) if b == quote => break,
                Some(b'\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b) => out.push(b),
                        None => return self.error("unterminated string"),
                    }
                }
                Some(b) => out.push(b),
            }
            self.pos += 1;
        }
        self.pos += 1;
        Ok(Literal::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn parse_sequence(&mut self, close: u8, depth: usize) -> Result<Literal, NpyError> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(Literal::Sequence(items));
            }
            items.push(self.parse_value(depth + 1)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b) if b == close => {}
                _ => return self.error("expected ',' or the end of a sequence"),
            }
        }
    }

    fn parse_int(&mut self) -> Result<Literal, NpyError> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
        let Ok(value) = digits.parse::<u64>() else {
            return self.error("integer out of range");
        };
        // Python 2 wrote long integers as `3L`.
        if self.peek() == Some(b'L') {
            self.pos += 1;
        }
        Ok(Literal::Int(value))
    }

    fn parse_word(&mut self) -> Result<Literal, NpyError> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
            self.pos += 1;
        }
        match &self.text[start..self.pos] {
            b"True" => Ok(Literal::Bool(true)),
            b"False" => Ok(Literal::Bool(false)),
            b"None" => Ok(Literal::None),
            _ => {
                self.pos = start;
                self.error("unknown word")
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a version-1.0 `.npy` file the way numpy does (header padded to 64 bytes).
    pub(crate) fn build_npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape_text = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let fortran = if fortran { "True" } else { "False" };
        let header =
            format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}");
        build_npy_from_header(&header, data)
    }

    /// Builds a version-1.0 `.npy` file around a raw header dict text.
    pub(crate) fn build_npy_from_header(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn read(bytes: &[u8]) -> NpyArray {
        read_npy(bytes).expect("valid").expect("float")
    }

    #[test]
    fn reads_f4_f8_f2_values() {
        let values: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
        let f4: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let array = read(&build_npy("<f4", false, &[2, 3], &f4));
        assert_eq!(array.shape, [2, 3]);
        assert_eq!(array.data, values);

        let f8: Vec<u8> = values
            .iter()
            .flat_map(|v| f64::from(*v).to_le_bytes())
            .collect();
        assert_eq!(read(&build_npy("<f8", false, &[6], &f8)).data, values);

        // 1.0, -2.0, 0.5 as IEEE half precision.
        let f2 = [0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38];
        let array = read(&build_npy("<f2", false, &[3], &f2));
        assert_eq!(array.data, [1.0, -2.0, 0.5]);

        let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(read(&build_npy(">f4", false, &[6], &be)).data, values);
    }

    #[test]
    fn reads_scalar_and_empty() {
        let array = read(&build_npy("<f4", false, &[], &2.5f32.to_le_bytes()));
        assert!(array.shape.is_empty());
        assert_eq!(array.data, [2.5]);
        let array = read(&build_npy("<f4", false, &[0, 3], &[]));
        assert_eq!(array.shape, [0, 3]);
        assert!(array.data.is_empty());
    }

    #[test]
    fn transposes_fortran_order() {
        // np.asfortranarray(np.arange(6).reshape(2, 3)) stores 0 3 1 4 2 5.
        let column_major: Vec<u8> = [0f32, 3., 1., 4., 2., 5.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let array = read(&build_npy("<f4", true, &[2, 3], &column_major));
        assert_eq!(array.shape, [2, 3]);
        assert_eq!(array.data, [0., 1., 2., 3., 4., 5.]);

        // 3-D: element (i, j, k) of shape (2, 3, 2) lives at i + 2j + 6k.
        let shape = [2usize, 3, 2];
        let mut stored = [0f32; 12];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..2 {
                    stored[i + 2 * j + 6 * k] = (i * 6 + j * 2 + k) as f32;
                }
            }
        }
        let bytes: Vec<u8> = stored.iter().flat_map(|v| v.to_le_bytes()).collect();
        let expected: Vec<f32> = (0..12).map(|v| v as f32).collect();
        assert_eq!(read(&build_npy("<f4", true, &shape, &bytes)).data, expected);
    }

    #[test]
    fn skips_non_float_dtypes() {
        assert_eq!(read_npy(&build_npy("|u1", false, &[2], &[1, 2])), Ok(None));
        let int64 = 7i64.to_le_bytes();
        assert_eq!(read_npy(&build_npy("<i8", false, &[], &int64)), Ok(None));
        assert_eq!(read_npy(&build_npy("|O", false, &[1], b"pickle")), Ok(None));
    }

    #[test]
    fn parses_numpy_style_and_python2_headers() {
        let text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (32L, 192L), }   \n";
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[2, 0]);
        bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
        bytes.extend_from_slice(text);
        let header = parse_header(&bytes).expect("header");
        assert_eq!(header.descr, "<f4");
        assert!(!header.fortran_order);
        assert_eq!(header.shape, [32, 192]);
        assert_eq!(header.data_offset, bytes.len());
    }

    #[test]
    fn rejects_bad_inputs_clearly() {
        let err = |bytes: &[u8]| read_npy(bytes).expect_err("must fail").message;
        assert!(err(b"PK\x03\x04").contains("magic"));
        assert!(err(&build_npy("<f16", false, &[1], &[0; 16])).contains("unsupported float"));
        assert!(err(&build_npy("<f4", false, &[2], &[0; 4])).contains("needs 8"));
        let mut wrong_version = build_npy("<f4", false, &[1], &[0; 4]);
        wrong_version[6] = 9;
        assert!(err(&wrong_version).contains("version 9.0"));
        let structured = build_npy_from_header(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            &[0; 4],
        );
        assert!(err(&structured).contains("structured"));
    }

    #[test]
    fn every_truncation_fails_without_panic() {
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let bytes = build_npy("<f4", false, &[2, 3], &data);
        for len in 0..bytes.len() {
            assert!(read_npy(&bytes[..len]).is_err(), "truncated to {len}");
        }
    }

    #[test]
    fn every_byte_corruption_is_handled_without_panic() {
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let bytes = build_npy("<f4", true, &[2, 3], &data);
        for pos in 0..bytes.len() {
            for value in [0u8, b'9', b'(', b'\'', 0xff] {
                let mut corrupt = bytes.clone();
                corrupt[pos] = value;
                let _ = read_npy(&corrupt);
            }
        }
    }
}
