//! `.npy` arrays (alone or inside an `.npz`): the header (magic, version, the Python
//! literal with `descr`, `fortran_order` and `shape`) and the payload are read by the
//! `npyz` crate; only float arrays (`f2`, `f4`, `f8`, either byte order) are returned,
//! as row-major `f32`; arrays of other element types are named with their type (import
//! then says so when it needs one), not read. Headers
//! written by Python 2 (`(32L, 192L)`) are refused: npyz parses Python 3 literals only.

use std::io::Cursor;
use std::sync::Arc;

use half::f16;
use npyz::{DType, NpyFile, NpyHeader, Order, TypeChar};

use crate::error::Problem;
use crate::tensor::{Tensor, Weights};

/// The 6-byte magic that starts every `.npy` file.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A float array read from an `.npy` payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NpyArray {
    /// The array's dimensions (empty for a scalar).
    pub shape: Vec<usize>,
    /// The elements in row-major (C) order.
    pub data: Vec<f32>,
}

/// Whether `bytes` starts like an `.npy` file.
pub(crate) fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The longest `.npy` header read (numpy itself refuses headers over 10,000 bytes by
/// default): checked before `npyz` allocates a buffer of the header's stated length,
/// which it does in full before reading (a 12-byte file stating 4 GiB would make it
/// allocate 4 GiB).
pub(crate) const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Bytes before the header text: the magic, the version and the header length.
pub(crate) const PREAMBLE_BYTES: usize = 12;

/// What an `.npy` holds: a float array, or an array of another element type (named
/// as numpy writes it, e.g. `<i4`) that is not read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Npy {
    /// A float array.
    Float(NpyArray),
    /// Not floats: the element type.
    Other(String),
}

/// The elements of an `.npy` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Elements {
    /// Floats of this size in bytes (2, 4 or 8).
    Float(usize),
    /// Not floats: the element type as numpy writes it.
    Other(String),
}

/// The header of an `.npy` file.
pub(crate) struct Header {
    /// Where the data starts (the header's length).
    pub(crate) data_start: usize,
    /// The float element size, or the element type that is not a float.
    pub(crate) kind: Elements,
    /// Bytes of data a float array of this shape needs (0 for other types).
    pub(crate) payload: usize,
    shape: Vec<usize>,
    descr: String,
    header: NpyHeader,
}

impl Header {
    /// The array's dimensions.
    pub(crate) fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type as numpy writes it (`<f4`, `<i4`...).
    pub(crate) fn descr(&self) -> &str {
        &self.descr
    }

    /// The error for `len` bytes of float data that are not the `payload` bytes.
    pub(crate) fn length_error(&self, len: u64) -> Problem {
        Problem(format!(
            "data is {len} bytes but shape {:?} of {} needs {}",
            self.shape, self.descr, self.payload
        ))
    }

    /// Whether the array holds floats (whose data is read).
    pub(crate) fn is_float(&self) -> bool {
        matches!(self.kind, Elements::Float(_))
    }
}

/// Where the data of an `.npy` starts, from its first bytes (at least
/// [`PREAMBLE_BYTES`] of them, or the whole file): the magic, the version (1, 2 or 3)
/// and a header length of at most [`MAX_HEADER_BYTES`] are checked.
pub(crate) fn data_start(prefix: &[u8]) -> Result<usize, Problem> {
    if !prefix.starts_with(MAGIC) {
        return Err("bad header: no .npy magic".into());
    }
    let (major, len) = match *prefix {
        [_, _, _, _, _, _, 1, _, a, b, ..] => (1, 10 + u16::from_le_bytes([a, b]) as usize),
        [_, _, _, _, _, _, m @ (2 | 3), _, a, b, c, d, ..] => {
            (m, 12 + u32::from_le_bytes([a, b, c, d]) as usize)
        }
        [_, _, _, _, _, _, m, _, ..] if !(1..=3).contains(&m) => {
            return Err(format!("bad header: unsupported .npy format version {m}").into())
        }
        _ => return Err("bad header: truncated".into()),
    };
    if len > MAX_HEADER_BYTES {
        return Err(Problem(format!(
            "bad header: version {major} header of {len} bytes, more than {MAX_HEADER_BYTES}"
        )));
    }
    Ok(len)
}

/// Deepest bracket nesting an accepted header may have: a plain array's dictionary
/// holds a shape tuple (depth 2); structured dtypes, which are refused anyway, need a
/// few more levels.
const MAX_NESTING: usize = 4;

/// Refuses a header whose brackets nest deeper than [`MAX_NESTING`] before npyz sees
/// it: npyz 0.9.1 parses the dictionary with a backtracking grammar (`py_literal`,
/// `pest`) whose time grows exponentially with the nesting, so a 508-byte header of
/// nested tuples took over 30 s (found by the `npz` fuzz target;
/// `fuzz/regressions/npz/nested-shape-timeout.npz`).
///
/// The brackets are counted on the header's tokens: the inside of a quoted string
/// (`'...'` or `"..."`, with backslash escapes) is skipped, as Python reads it, so that
/// a `)` in a string does not close a tuple (`'k': (')', (')', ...` of 26 levels ran past
/// 30 s behind a count of every byte; issue 30).
fn check_nesting(header: &[u8]) -> Result<(), Problem> {
    let mut depth = 0usize;
    // The quote of the string the scan is in, and whether the last byte escaped.
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for &b in header {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                quote = None;
            }
            continue;
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Problem(format!(
                        "bad header: brackets nested more than {MAX_NESTING} deep"
                    )));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses the header at the start of `bytes` (which hold at least [`data_start`]
/// bytes).
pub(crate) fn read_header(bytes: &[u8]) -> Result<Header, Problem> {
    let start = data_start(bytes)?;
    if bytes.len() < start {
        return Err(Problem(format!(
            "bad header: {start} bytes long but the file has {}",
            bytes.len()
        )));
    }
    // The dictionary alone: the length field before it may hold a quote's byte.
    let dict = if bytes[6] == 1 { 10 } else { 12 };
    check_nesting(&bytes[dict.min(start)..start])?;
    let mut cursor = Cursor::new(&bytes[..start]);
    let header = NpyHeader::from_reader(&mut cursor).map_err(|e| {
        // npyz's syntax errors span several lines: keep them on one.
        let words: Vec<String> = e.to_string().split_whitespace().map(String::from).collect();
        format!("bad header: {}", words.join(" "))
    })?;
    let ts = match header.dtype() {
        DType::Plain(ts) => ts,
        _ => return Err("structured (record) arrays are unsupported".into()),
    };
    let shape = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("shape {:?} is too large", header.shape()))?;
    let (kind, payload) = if ts.type_char() != TypeChar::Float {
        (Elements::Other(ts.to_string()), 0)
    } else {
        let size = ts.size_field() as usize;
        if !matches!(size, 2 | 4 | 8) {
            return Err(Problem(format!("unsupported float dtype {ts}")));
        }
        let payload = shape
            .iter()
            .try_fold(size, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| format!("shape {shape:?} is too large"))?;
        (Elements::Float(size), payload)
    };
    Ok(Header {
        data_start: cursor.position() as usize,
        kind,
        payload,
        shape,
        descr: ts.to_string(),
        header,
    })
}

/// The array of `header` from its `data` (exactly `header.payload` bytes for floats).
pub(crate) fn read_data(header: Header, data: &[u8]) -> Result<Npy, Problem> {
    let size = match header.kind {
        Elements::Float(size) => size,
        Elements::Other(dtype) => return Ok(Npy::Other(dtype)),
    };
    if data.len() != header.payload {
        return Err(header.length_error(data.len() as u64));
    }
    let shape = header.shape;
    let order = header.header.order();
    let file = NpyFile::with_header(header.header, data);
    let read = |e: std::io::Error| format!("cannot read its data: {e}");
    let mut values: Vec<f32> = match size {
        2 => file
            .into_vec::<f16>()
            .map_err(read)?
            .into_iter()
            .map(f16::to_f32)
            .collect(),
        4 => file.into_vec::<f32>().map_err(read)?,
        _ => file
            .into_vec::<f64>()
            .map_err(read)?
            .into_iter()
            .map(|v| v as f32)
            .collect(),
    };
    if order == Order::Fortran {
        values = fortran_to_row_major(&values, &shape);
    }
    Ok(Npy::Float(NpyArray {
        shape,
        data: values,
    }))
}

/// Reads a whole `.npy` file; the error is one line.
pub(crate) fn read_npy(bytes: &[u8]) -> Result<Npy, Problem> {
    let header = read_header(bytes)?;
    let data = &bytes[header.data_start.min(bytes.len())..];
    read_data(header, data)
}

/// Adds an array read as `name` to `w`.
pub(crate) fn add_npy(w: &mut Weights, name: &str, read: Npy) {
    match read {
        Npy::Float(array) => w.tensors.push(Tensor {
            name: name.to_string(),
            shape: array.shape,
            data: Arc::new(array.data),
        }),
        Npy::Other(dtype) => w.skipped.push((name.to_string(), dtype)),
    }
}

/// Reorders column-major (Fortran) elements into row-major order.
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
        match read_npy(bytes).expect("valid") {
            Npy::Float(a) => a,
            Npy::Other(t) => panic!("not float: {t}"),
        }
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
        let other = |t: &str| Ok(Npy::Other(t.into()));
        assert_eq!(
            read_npy(&build_npy("|u1", false, &[2], &[1, 2])),
            other("|u1")
        );
        let int64 = 7i64.to_le_bytes();
        assert_eq!(
            read_npy(&build_npy("<i8", false, &[], &int64)),
            other("<i8")
        );
        assert_eq!(
            read_npy(&build_npy("<i4", false, &[1], &[0; 4])),
            other("<i4")
        );
        assert_eq!(
            read_npy(&build_npy("|O", false, &[1], b"pickle")),
            other("|O")
        );
    }

    #[test]
    fn reads_version_2_headers_and_refuses_python_2_ones_in_one_line() {
        let v2 = |text: &[u8]| {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&[2, 0]);
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend_from_slice(text);
            bytes.extend_from_slice(&[0; 8]);
            read_npy(&bytes)
        };
        let ok = v2(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }   \n");
        assert!(matches!(ok, Ok(Npy::Float(a)) if a.shape == [2, 1]));
        let py2 = v2(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }   \n");
        let e = py2.unwrap_err();
        assert!(e.starts_with("bad header: ") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn rejects_bad_inputs_clearly() {
        let err = |bytes: &[u8]| read_npy(bytes).expect_err("must fail");
        assert!(
            err(b"PK\x03\x04").contains("magic"),
            "{}",
            err(b"PK\x03\x04")
        );
        let e = err(&build_npy("<f16", false, &[1], &[0; 16]));
        assert!(e.contains("unsupported float"), "{e}");
        assert!(err(&build_npy("<f4", false, &[2], &[0; 4])).contains("needs 8"));
        let mut wrong_version = build_npy("<f4", false, &[1], &[0; 4]);
        wrong_version[6] = 9;
        assert!(
            err(&wrong_version).contains("version"),
            "{}",
            err(&wrong_version)
        );
        let structured = build_npy_from_header(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            &[0; 4],
        );
        assert!(err(&structured).contains("structured"));
    }

    #[test]
    fn deeply_nested_headers_are_refused_before_npyz() {
        let mut dict = String::from("{'descr': '<f4', 'fortran_order': False, 'shape': ");
        dict.push_str(&"(2,".repeat(40));
        dict.push_str(&")".repeat(40));
        dict.push_str(", }");
        let bytes = build_npy_from_header(&dict, &[0; 4]);
        let e = read_header(&bytes).err();
        assert_eq!(
            e.as_deref(),
            Some("bad header: brackets nested more than 4 deep")
        );
        // A plain header is still read.
        let ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }";
        assert!(read_header(&build_npy_from_header(ok, &[0; 4])).is_ok());
    }

    #[test]
    fn brackets_in_strings_neither_open_nor_close() {
        // Issue 30: a `)` inside a string closed nothing, a count of bytes saw depth 1.
        let mut dict =
            String::from("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'k': ");
        dict.push_str(&"(')', ".repeat(26));
        dict.push_str(&")".repeat(26));
        dict.push_str(", }");
        let e = read_header(&build_npy_from_header(&dict, &[0; 4])).err();
        assert_eq!(
            e.as_deref(),
            Some("bad header: brackets nested more than 4 deep")
        );
        // Escaped quotes stay inside their string; brackets in strings cost nothing.
        assert!(check_nesting(br#"{'a': '\'((((((', "(((((((\"", 'b': (1, 2)}"#).is_ok());
        assert!(check_nesting(br#"{'a': '\'', 'b': (((((1,),),),),)}"#).is_err());
        // The length field before the dictionary is not text: a quote's byte there
        // (0x27, a header of 0x127 bytes) opens no string.
        let mut dict = String::from("{'descr': '<f4', 'shape': ((((((1,),),),),),), ");
        while dict.len() < 0x126 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0, 0x27, 0x01]);
        bytes.extend_from_slice(dict.as_bytes());
        let e = read_header(&bytes).err();
        assert_eq!(
            e.as_deref(),
            Some("bad header: brackets nested more than 4 deep")
        );
    }

    #[test]
    fn a_huge_stated_header_is_refused_before_any_allocation() {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[2, 0]);
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = read_npy(&bytes).unwrap_err();
        assert!(e.contains("more than 65536"), "{e}");
        let e = read_npy(&bytes[..9]).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
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
