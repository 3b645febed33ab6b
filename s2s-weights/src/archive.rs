//! Zip archives of weights, read with the `zip` crate (deflate only, pure Rust): a NumPy
//! `.npz` (a zip of `.npy` arrays) or a Keras 3 `.keras` (a zip holding
//! `model.weights.h5`). Every entry read is checked against its CRC-32 by the crate.

use std::io::{Cursor, Read};

use std::collections::BTreeSet;

use crate::error::{Error, Place, Problem, Result};
use crate::tensor::{Listing, Weights, KERAS_WEIGHTS_ENTRY, MAX_TENSOR_BYTES};
use crate::{hdf5, npy};

/// Reads an `.npz` (if it holds `.npy` entries) or else a `.keras` (if it holds
/// `model.weights.h5`, which must be HDF5: nested zips are not followed). Of an `.npz`,
/// only the arrays named in `wanted` are inflated past their header (all when `None`).
pub(crate) fn read_zip(
    bytes: &[u8],
    origin: &str,
    wanted: Option<&BTreeSet<String>>,
) -> Result<Weights> {
    let archive_error = |e: zip::result::ZipError| {
        Error::zip(origin, Place::Inside("zip archive".into()), e.to_string())
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
        let mut w = Weights::default();
        for (index, name) in arrays {
            let array_name = name.trim_end_matches(".npy");
            let keep = wanted.is_none_or(|names| names.contains(array_name));
            if let Some(read) = read_npy_entry(&mut archive, index, name, origin, keep)? {
                npy::add_npy(&mut w, array_name, read);
            }
        }
        return Ok(w);
    }
    let Some(index) = names.iter().position(|n| n == KERAS_WEIGHTS_ENTRY) else {
        return Err(Error::zip(
            origin,
            Place::File,
            format!(
                "zip archive holds neither .npy entries (.npz) nor {KERAS_WEIGHTS_ENTRY} (.keras)"
            ),
        ));
    };
    let fail = entry_error(origin, KERAS_WEIGHTS_ENTRY);
    let mut entry = archive
        .by_index(index)
        .map_err(|e| fail(e.to_string().into()))?;
    let size = entry.size();
    if size > MAX_TENSOR_BYTES {
        return Err(fail(
            format!(
                "{size} bytes, more than the {MAX_TENSOR_BYTES} bytes read from a weights file"
            )
            .into(),
        ));
    }
    let data = read_exactly(&mut entry, size as usize).map_err(fail)?;
    let inner = format!("{origin}: {KERAS_WEIGHTS_ENTRY}");
    if !hdf5::is_hdf5(&data) {
        return Err(Error::zip(
            inner,
            Place::File,
            "not an HDF5 file (no signature)",
        ));
    }
    hdf5::read_hdf5_in(&data, &inner)
}

/// The error of entry `name` of `origin`.
fn entry_error<'a>(origin: &'a str, name: &'a str) -> impl Fn(Problem) -> Error + 'a {
    move |message| {
        Error::zip(
            origin,
            Place::Inside(format!("zip entry {name}")),
            message.0,
        )
    }
}

/// Reads `n` bytes from `r` (the zip crate checks an entry's CRC-32 at its end).
fn read_exactly(r: &mut dyn Read, n: usize) -> Result<Vec<u8>, Problem> {
    let mut data = Vec::with_capacity(n);
    r.take(n as u64)
        .read_to_end(&mut data)
        .map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(Problem(format!(
            "extracted {} bytes but the directory declares {n}",
            data.len()
        )));
    }
    Ok(data)
}

/// The `.npy` header at the start of `entry` (named `name`), read alone: at most its
/// bounded length is inflated.
fn entry_header(
    entry: &mut zip::read::ZipFile<'_, Cursor<&[u8]>>,
    name: &str,
    origin: &str,
) -> Result<npy::Header> {
    let fail = entry_error(origin, name);
    let array_error = |m| Error::npy(origin, name.trim_end_matches(".npy"), m);
    let size = entry.size();
    // The preamble of version 1 (10 bytes), then the 2 more bytes of the header length
    // of versions 2 and 3: never a byte past the header, however short it is (found by
    // the npz fuzz target: a version-1 header of length 0 or 1).
    let mut head = read_exactly(entry, 10.min(size) as usize).map_err(&fail)?;
    if matches!(head.get(6), Some(2 | 3)) {
        let more = (npy::PREAMBLE_BYTES as u64 - 10).min(size - 10) as usize;
        head.extend(read_exactly(entry, more).map_err(&fail)?);
    }
    let start = npy::data_start(&head).map_err(array_error)?;
    if start as u64 > size {
        return Err(array_error(
            format!("bad header: {start} bytes long but the entry has {size}").into(),
        ));
    }
    head.extend(read_exactly(entry, start - head.len()).map_err(&fail)?);
    npy::read_header(&head).map_err(array_error)
}

/// The arrays of an `.npz` as its `.npy` headers describe them (element type as numpy
/// writes it), without inflating any data (`s2s tensors`); `None` when the
/// archive holds no `.npy` entry.
pub(crate) fn list_npz(bytes: &[u8], origin: &str) -> Result<Option<Vec<Listing>>> {
    let archive_error = |e: zip::result::ZipError| {
        Error::zip(origin, Place::Inside("zip archive".into()), e.to_string())
    };
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(archive_error)?;
    let mut listed = Vec::new();
    for index in 0..archive.len() {
        let name = archive
            .by_index_raw(index)
            .and_then(|e| Ok(e.name()?.into_owned()))
            .map_err(archive_error)?;
        if !name.ends_with(".npy") {
            continue;
        }
        let fail = entry_error(origin, &name);
        let mut entry = archive
            .by_index(index)
            .map_err(|e| fail(e.to_string().into()))?;
        let header = entry_header(&mut entry, &name, origin)?;
        listed.push(Listing {
            name: name.trim_end_matches(".npy").to_string(),
            shape: header.shape().to_vec(),
            dtype: header.descr().to_string(),
            note: String::new(),
            consumers: Vec::new(),
            optimizer: false,
        });
    }
    Ok((!listed.is_empty()).then_some(listed))
}

/// The `.npy` entry `index` (named `name`): its header first, checked against the
/// entry's declared size; then, when `keep` and it holds floats, its data, inflated
/// to exactly the bytes its shape needs (at most [`MAX_TENSOR_BYTES`]). `None` for an
/// array not asked for.
fn read_npy_entry(
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    index: usize,
    name: &str,
    origin: &str,
    keep: bool,
) -> Result<Option<npy::Npy>> {
    let fail = entry_error(origin, name);
    let array_error = |m| Error::npy(origin, name.trim_end_matches(".npy"), m);
    let mut entry = archive
        .by_index(index)
        .map_err(|e| fail(e.to_string().into()))?;
    let size = entry.size();
    let header = entry_header(&mut entry, name, origin)?;
    if header.is_float() {
        if size - header.data_start as u64 != header.payload as u64 {
            return Err(array_error(
                header.length_error(size - header.data_start as u64),
            ));
        }
        if !keep {
            return Ok(None);
        }
        if header.payload as u64 > MAX_TENSOR_BYTES {
            return Err(array_error(
                format!(
                    "{} bytes of data, more than the {MAX_TENSOR_BYTES} bytes read for a tensor",
                    header.payload
                )
                .into(),
            ));
        }
    }
    let payload = header.payload;
    let data = read_exactly(&mut entry, payload).map_err(&fail)?;
    if header.is_float() {
        // The rest of the entry (nothing, by the size check) makes the crate check the
        // CRC-32.
        std::io::copy(&mut entry, &mut std::io::sink()).map_err(|e| fail(e.to_string().into()))?;
    }
    npy::read_data(header, &data).map(Some).map_err(array_error)
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
        let t = read_zip(&sample(), "s.npz", None).unwrap().tensors;
        assert_eq!((t[0].data[0], t[1].data[0]), (1.0, 2.0));
    }

    #[test]
    fn reads_only_the_arrays_asked_for_and_names_other_types() {
        let ints = super::super::npy::tests::build_npy("<i4", false, &[1], &[0; 4]);
        let mut entries = vec![TestEntry {
            name: "i.npy",
            data: &ints,
            deflate: false,
        }];
        let s = sample();
        let mut archive = zip::ZipArchive::new(Cursor::new(&s[..])).unwrap();
        let mut a = Vec::new();
        archive
            .by_name("a.npy")
            .unwrap()
            .read_to_end(&mut a)
            .unwrap();
        entries.push(TestEntry {
            name: "a.npy",
            data: &a,
            deflate: true,
        });
        let bytes = build_zip(&entries);
        let wanted: BTreeSet<String> = ["a".to_string()].into();
        let w = read_zip(&bytes, "s.npz", Some(&wanted)).unwrap();
        assert_eq!(w.tensors.len(), 1);
        assert_eq!(w.skipped, [("i".to_string(), "<i4".to_string())]);
        let w = read_zip(&bytes, "s.npz", Some(&BTreeSet::new())).unwrap();
        assert!(w.tensors.is_empty());
    }

    #[test]
    fn an_entry_longer_than_its_array_is_refused_before_it_is_inflated() {
        let mut npy = super::super::npy::tests::build_npy("<f4", false, &[1], &[0; 4]);
        npy.extend([0; 100]);
        let bytes = build_zip(&[TestEntry {
            name: "a.npy",
            data: &npy,
            deflate: true,
        }]);
        let e = read_zip(&bytes, "s.npz", None).unwrap_err().to_string();
        assert!(
            e.ends_with("data is 104 bytes but shape [1] of <f4 needs 4"),
            "{e}"
        );
    }

    /// The npz target's crash (`fuzz/regressions/npz/`): a version-1 header shorter
    /// than the 12 bytes the reader used to take for the preamble.
    #[test]
    fn a_header_shorter_than_the_longest_preamble() {
        for hlen in [0u16, 1, 2] {
            let mut npy = b"\x93NUMPY\x01\x00".to_vec();
            npy.extend_from_slice(&hlen.to_le_bytes());
            npy.extend(std::iter::repeat_n(b' ', hlen as usize));
            npy.extend([0; 8]);
            for len in [10, 11, npy.len()] {
                let bytes = build_zip(&[TestEntry {
                    name: "a.npy",
                    data: &npy[..len],
                    deflate: true,
                }]);
                assert!(read_zip(&bytes, "s.npz", None).is_err());
                assert!(list_npz(&bytes, "s.npz").is_err());
            }
        }
        for path in regressions("npz") {
            let bytes = std::fs::read(&path).unwrap();
            let _ = read_zip(&bytes, "r.npz", None);
            let _ = super::super::npy::read_npy(&bytes);
        }
    }

    /// The inputs under `fuzz/regressions/<target>/`: minimised or raw crashes the
    /// fuzz targets found, each run again by a test of its reader.
    pub(crate) fn regressions(target: &str) -> Vec<std::path::PathBuf> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/regressions")
            .join(target);
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        assert!(!v.is_empty(), "no regression inputs in {}", dir.display());
        v
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
        let e = read_zip(&bytes, "s.npz", None).unwrap_err().to_string();
        assert!(e.starts_with("s.npz: zip entry b.npy: "), "{e}");
    }

    #[test]
    fn every_truncation_is_rejected_and_every_bit_flip_handled() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(
                read_zip(&bytes[..len], "t.npz", None).is_err(),
                "truncated to {len}"
            );
        }
        for pos in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[pos] ^= 0x41;
            let _ = read_zip(&corrupt, "t.npz", None);
        }
    }
}
