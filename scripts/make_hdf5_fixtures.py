#!/usr/bin/env python3
"""Generate the small HDF5 fixtures that host-tools' HDF5 reader is tested against.

Provenance of the committed files in tests/fixtures/hdf5/:
    generated with h5py 3.16.0 (HDF5 library 2.0.0) and numpy 2.4.6 by
        python3 scripts/make_hdf5_fixtures.py
    run from the repository root.

Every value is a simple closed form (``arange(n) * step + start``) so the Rust test
(host-tools/src/formats/hdf5.rs, ``fixture_*`` tests) can regenerate it and compare
exactly; keep the two in step when changing anything here.

Files:
    earliest.h5  libver='earliest': superblock v0, v1 object headers, symbol-table
                 groups (v1 B-tree + local heap + SNOD), data layout message v3.
    latest.h5    libver='latest': superblock v3, v2 object headers (OHDR/OCHK, with
                 checksums), compact link-message groups, data layout message v4.
    small_k.h5   libver='earliest' with symbol-table K = 1/1 (set through the bundled
                 HDF5 library with ctypes: h5py does not wrap H5Pset_sym_k), so a
                 12-entry group needs a multi-level v1 B-tree and several symbol nodes;
                 also 4-byte offsets/lengths and a 512-byte user block.
    dense.h5     libver='latest' group with 12 links, stored densely in a fractal
                 heap, which the reader rejects with a clear error.
"""

import ctypes
import glob
import os
import sys

import h5py
import numpy as np

OUT = os.path.join("tests", "fixtures", "hdf5")


def series(n, step, start=0.0, dtype=np.float32):
    """arange(n) * step + start, computed in float64 then cast (exact for these steps)."""
    return (np.arange(n, dtype=np.float64) * step + start).astype(dtype)


def compact_dcpl():
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    return dcpl


def implicit_index_dcpl(chunks):
    """Chunked, unfiltered, allocated at creation: libver='latest' uses the implicit index."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    return dcpl


def set_sym_k(fcpl, internal_k, leaf_k):
    """Call H5Pset_sym_k in the libhdf5 that h5py loaded (dlopen returns the same copy)."""
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
    lib = ctypes.CDLL(libs[0] if libs else "libhdf5.so")
    lib.H5Pset_sym_k.argtypes = [ctypes.c_int64, ctypes.c_uint, ctypes.c_uint]
    if lib.H5Pset_sym_k(fcpl.id, internal_k, leaf_k) < 0:
        sys.exit("H5Pset_sym_k failed")


def group(parent, name):
    """create_group without timestamps, so regenerating gives identical bytes."""
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl)
    return parent[name]


def write_common(f):
    """The content shared by earliest.h5 and latest.h5 (at most 8 links per group)."""
    f.attrs["format"] = "fixture"  # attributes must be ignored by the reader
    f.create_dataset("scalar_f32", data=np.float32(1.5))
    f.create_dataset("vec_f32", data=series(5, 0.5))
    model = group(f, "model")
    dense = group(group(group(model, "layers"), "dense"), "vars")
    dense.create_dataset("0", data=series(12, 0.5, -1.0).reshape(3, 4))
    dense.create_dataset("1", data=series(4, 0.25, dtype=np.float64))
    dense.attrs["note"] = np.arange(3)
    model.create_dataset("half", data=series(6, 0.5, -1.0, dtype=np.float16).reshape(2, 3))
    model.create_dataset("counter", data=np.int64(7))  # int64: skipped by the reader
    group(model, "empty")
    f.create_dataset("compact", data=series(4, 0.5, 10.0).reshape(2, 2), dcpl=compact_dcpl())
    # Edge chunks: 5x7 in 2x3 chunks leaves partial chunks on both axes.
    f.create_dataset("chunked", data=series(35, 0.5, -8.0).reshape(5, 7), chunks=(2, 3))
    f.create_dataset("strings", data=np.array([b"ab", b"cd"]))  # not float: skipped


def make(path, libver, extra, fcpl=None):
    if fcpl is None:
        fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)  # no timestamps in the root group's header
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(*{
        "earliest": (h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST),
        "latest": (h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST),
    }[libver])
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fapl=fapl, fcpl=fcpl)
    with h5py.File(fid) as f:
        extra(f)
    print(f"{path}: {os.path.getsize(path)} bytes")


def latest_extra(f):
    write_common(f)
    # Implicit chunk index (only libver='latest' has it); 4x4 in 2x2 chunks.
    f.create_dataset("implicit", data=series(16, 0.25), shape=(4, 4),
                     dcpl=implicit_index_dcpl((2, 2)))
    # Single-chunk index: one chunk covering the whole dataset.
    f.create_dataset("single_chunk", data=series(6, 2.0, 1.0).reshape(2, 3), chunks=(2, 3))


def small_k_extra(f):
    many = group(f, "many")
    for i in range(12):
        many.create_dataset(f"v{i:02d}", data=np.float32(i * 0.5))


def dense_extra(f):
    dense = group(f, "dense")
    for i in range(12):
        dense.create_dataset(f"v{i:02d}", data=np.float32(i))


def main():
    if not os.path.isdir(OUT):
        sys.exit(f"run from the repository root ({OUT} not found)")
    print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}, numpy {np.__version__}")
    make(os.path.join(OUT, "earliest.h5"), "earliest", write_common)
    make(os.path.join(OUT, "latest.h5"), "latest", latest_extra)
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    set_sym_k(fcpl, 1, 1)
    fcpl.set_sizes(4, 4)
    fcpl.set_userblock(512)
    make(os.path.join(OUT, "small_k.h5"), "earliest", small_k_extra, fcpl=fcpl)
    make(os.path.join(OUT, "dense.h5"), "latest", dense_extra)


if __name__ == "__main__":
    main()
