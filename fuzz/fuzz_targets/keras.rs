//! A Keras 3 `.keras` (a zip holding `model.weights.h5`) from untrusted bytes: the zip
//! reader, then the HDF5 reader on the entry. Seeded with `.keras` archives, so the
//! mutations reach the HDF5 inside them. Anything may fail; nothing may panic.

#![no_main]

use host_tools::formats::{read_bytes_as, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_bytes_as(Reader::Zip, data, "fuzz.keras");
});
