//! `.npy` arrays (alone or inside an `.npz`): the header (magic, version, the Python
//! literal with `descr`, `fortran_order` and `shape`) and the payload are read by the
//! `npyz` crate; only float arrays (`f2`, `f4`, `f8`, either byte order) are returned,
//! as row-major `f32`. Integer, boolean, string and object arrays are skipped. Headers
//! written by Python 2 (`(32L, 192L)`) are refused: npyz parses Python 3 literals only.

use std::io::Cursor;

use half::f16;
use npyz::{DType, NpyFile, NpyHeader, Order, TypeChar};

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

/// Reads a float array; `Ok(None)` for an array of another element type; the error is
/// one line.
pub(crate) fn read_npy(bytes: &[u8]) -> Result<Option<NpyArray>, String> {
    let mut cursor = Cursor::new(bytes);
    let header = NpyHeader::from_reader(&mut cursor).map_err(|e| {
        // npyz's syntax errors span several lines: keep them on one.
        let words: Vec<String> = e.to_string().split_whitespace().map(String::from).collect();
        format!("bad header: {}", words.join(" "))
    })?;
    let ts = match header.dtype() {
        DType::Plain(ts) => ts,
        _ => return Err("structured (record) arrays are unsupported".into()),
    };
    if ts.type_char() != TypeChar::Float {
        return Ok(None);
    }
    let size = ts.size_field();
    if !matches!(size, 2 | 4 | 8) {
        return Err(format!("unsupported float dtype {ts}"));
    }
    let shape = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("shape {:?} is too large", header.shape()))?;
    let expected = shape
        .iter()
        .try_fold(size as usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} is too large"))?;
    let data = &bytes[(cursor.position() as usize).min(bytes.len())..];
    if data.len() != expected {
        return Err(format!(
            "data is {} bytes but shape {shape:?} of {ts} needs {expected}",
            data.len()
        ));
    }
    let order = header.order();
    let file = NpyFile::with_header(header, data);
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
    Ok(Some(NpyArray {
        shape,
        data: values,
    }))
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
        assert_eq!(ok.unwrap().unwrap().shape, [2, 1]);
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
