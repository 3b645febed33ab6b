//! Zip archives of weights, read with the `zip` crate (deflate only, pure Rust): a NumPy
//! `.npz` (a zip of `.npy` arrays) or a Keras 3 `.keras` (a zip holding
//! `model.weights.h5`). Every entry read is checked against its CRC-32 by the crate.

use std::io::{Cursor, Read};

use super::{hdf5, Tensor, KERAS_WEIGHTS_ENTRY};
use crate::error::{Error, Place, Result};

/// Reads an `.npz` (if it holds `.npy` entries) or else a `.keras` (if it holds
/// `model.weights.h5`, which must be HDF5: nested zips are not followed).
pub(crate) fn read_zip(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>> {
    let archive_error = |e: zip::result::ZipError| {
        Error::invalid(origin, Place::Inside("zip archive".into()), e.to_string())
    };
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(archive_error)?;
    // By index, not by name: the crate's name lookup would hide a repeated name.
    let names = (0..archive.len())
        .map(|i| Ok(archive.by_index_raw(i)?.name()?.into_owned()))
        .collect::<Result<Vec<String>, _>>()
        .map_err(archive_error)?;
    let arrays: Vec<(usize, &String)> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.ends_with(".npy"))
        .collect();
    if !arrays.is_empty() {
        let mut tensors = Vec::new();
        for (index, name) in arrays {
            let data = read_entry(&mut archive, index, name, origin)?;
            let array_name = name.trim_end_matches(".npy");
            tensors.extend(super::read_npy_named(&data, origin, array_name)?);
        }
        return Ok(tensors);
    }
    let Some(index) = names.iter().position(|n| n == KERAS_WEIGHTS_ENTRY) else {
        return Err(Error::invalid(
            origin,
            Place::File,
            format!(
                "zip archive holds neither .npy entries (.npz) nor {KERAS_WEIGHTS_ENTRY} (.keras)"
            ),
        ));
    };
    let data = read_entry(&mut archive, index, KERAS_WEIGHTS_ENTRY, origin)?;
    let inner = format!("{origin}: {KERAS_WEIGHTS_ENTRY}");
    if !hdf5::is_hdf5(&data) {
        return Err(Error::invalid(
            inner,
            Place::File,
            "not an HDF5 file (no signature)",
        ));
    }
    super::read_hdf5_in(&data, &inner)
}

/// The bytes of entry `index` (named `name`), at most its declared size, CRC checked.
fn read_entry(
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    index: usize,
    name: &str,
    origin: &str,
) -> Result<Vec<u8>> {
    let fail = |message: String| {
        Error::invalid(origin, Place::Inside(format!("zip entry {name}")), message)
    };
    let mut entry = archive.by_index(index).map_err(|e| fail(e.to_string()))?;
    let size = entry.size();
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0).min(1 << 30));
    // The crate stops at the declared size and checks the CRC-32 at the end.
    entry
        .read_to_end(&mut data)
        .map_err(|e| fail(e.to_string()))?;
    if data.len() as u64 != size {
        return Err(fail(format!(
            "extracted {} bytes but the directory declares {size}",
            data.len()
        )));
    }
    Ok(data)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;

    use super::*;

    /// One entry to put into a test archive.
    pub(crate) struct TestEntry<'a> {
        pub name: &'a str,
        pub data: &'a [u8],
        pub deflate: bool,
    }

    /// Builds a zip archive in memory with the `zip` crate.
    pub(crate) fn build_zip(entries: &[TestEntry<'_>]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for e in entries {
            let method = if e.deflate {
                zip::CompressionMethod::Deflated
            } else {
                zip::CompressionMethod::Stored
            };
            let options = zip::write::SimpleFileOptions::default().compression_method(method);
            w.start_file(e.name, options).expect("start entry");
            w.write_all(e.data).expect("write entry");
        }
        w.finish().expect("finish zip").into_inner()
    }

    fn sample() -> Vec<u8> {
        build_zip(&[
            TestEntry {
                name: "a.npy",
                data: &super::super::npy::tests::build_npy("<f4", false, &[1], &1f32.to_le_bytes()),
                deflate: true,
            },
            TestEntry {
                name: "b.npy",
                data: &super::super::npy::tests::build_npy("<f4", false, &[1], &2f32.to_le_bytes()),
                deflate: false,
            },
        ])
    }

    #[test]
    fn reads_stored_and_deflated_entries() {
        let t = read_zip(&sample(), "s.npz").unwrap();
        assert_eq!((t[0].data[0], t[1].data[0]), (1.0, 2.0));
    }

    #[test]
    fn detects_crc_mismatch() {
        let mut bytes = sample();
        // The stored entry's payload is its last 4 data bytes before the directory.
        let at = bytes
            .windows(4)
            .rposition(|w| w == 2f32.to_le_bytes())
            .unwrap();
        bytes[at] ^= 1;
        let e = read_zip(&bytes, "s.npz").unwrap_err().to_string();
        assert!(e.starts_with("s.npz: zip entry b.npy: "), "{e}");
    }

    #[test]
    fn every_truncation_is_rejected_and_every_bit_flip_handled() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(
                read_zip(&bytes[..len], "t.npz").is_err(),
                "truncated to {len}"
            );
        }
        for pos in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[pos] ^= 0x41;
            let _ = read_zip(&corrupt, "t.npz");
        }
    }
}
