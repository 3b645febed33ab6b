//! An HDF5 file (Keras 2 `.h5`) from untrusted bytes, read by our HDF5 reader whatever
//! its first bytes. Anything may fail; nothing may panic or loop.

#![no_main]

use host_tools::formats::{read_bytes_as, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_bytes_as(Reader::Hdf5, data, "fuzz.h5");
});
