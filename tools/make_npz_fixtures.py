#!/usr/bin/python3
"""Make the .npz fixtures of tests/test_npz.cpp with NumPy, and check files dezero wrote.

    /usr/bin/python3 tools/make_npz_fixtures.py                  # (re)writes tests/data/*.npz
    /usr/bin/python3 tools/make_npz_fixtures.py --check FILE...  # FILE (written by dezero) loads in NumPy
    /usr/bin/python3 tools/make_npz_fixtures.py --show FILE...   # any .npz (e.g. save_weights output): keys, dtypes

Uses only NumPy (Debian's python3-numpy) and the standard library. Every array has
exact binary values so the C++ test can compare them exactly. The fixtures:

  npz_savez.npz             np.savez of ARRAYS (stored entries, zip64 local headers)
  npz_savez_compressed.npz  np.savez_compressed of ARRAYS (deflate)
  npz_versions.npz          .npy format 1.0, 2.0 and 3.0 headers of the same array
  npz_zip64.npz             a zip with a zip64 end record and zip64 central-directory fields
  npz_fortran.npz           a fortran_order=True array (dezero must refuse it)
  npz_float16.npz           a float16 array (dezero reads it as float16: tests/test_half.cpp)
  mlp_weights.npz           DeZero's keys for MLP((3, 2)) on 4 inputs (savez_compressed, as save_weights)
  mlp_io.npz                an input x and NumPy's output y of that MLP (sigmoid between layers)

--check verifies a file written by tests/test_npz.cpp ("dezero_written.npz" layout,
see OURS below): np.load(allow_pickle=False), same keys, dtypes, shapes and values.
tests/data/dezero_written.npz is such a file, committed; test_npz.cpp checks that
save_npz still writes exactly its bytes.
"""
import io
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")


def arrays():
    return {
        "l0/W": (np.arange(6, dtype=np.float32).reshape(2, 3) / 4).astype(np.float32),
        "l0/b": np.array([0.5, -1.5, 2.0], dtype=np.float32),
        "f8": np.arange(7, dtype=np.float64) * 0.125 - 0.5,
        "i4": np.array([-3, 0, 2147483647], dtype=np.int32),
        "i8": np.array([[-(2 ** 40), 1], [2, 3]], dtype=np.int64),
        "scalar": np.array(2.5),
        "u1": np.array([0, 1, 255], dtype=np.uint8),
        "b1": np.array([True, False, True]),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "be": np.array([1.5, -2.0], dtype=">f8"),
        "cube": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    }


# What tests/test_npz.cpp writes with dezero::utils::save_npz (keep the two in step).
OURS = {
    "a": np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(0.5),
    "b": np.arange(5, dtype=np.float64) * 0.25 - 1.0,
    "c": np.array([-1, 0, 7], dtype=np.int32),
    "d": np.array([[1, -2], [3, 2 ** 40]], dtype=np.int64),
    "e": np.array(3.25),
    "l0/W": np.zeros((0, 3), dtype=np.float32),
}


def npy_bytes(a, version):
    f = io.BytesIO()
    np.lib.format.write_array(f, a, version=version)
    return f.getvalue()


def write_zip64(path, entries):
    """A stored zip whose central directory and end records use zip64 fields."""
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        name_b = name.encode()
        crc = zlib.crc32(data) & 0xFFFFFFFF
        offset = len(out)
        extra_local = struct.pack("<HHQQ", 1, 16, len(data), len(data))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(name_b), len(extra_local))
        out += name_b + extra_local + data
        extra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0x21, crc, 0xFFFFFFFF,
                               0xFFFFFFFF, len(name_b), len(extra), 0, 0, 0, 0, 0xFFFFFFFF)
        central += name_b + extra
    cd_offset = len(out)
    out += central
    z64_offset = len(out)
    n = len(entries)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, z64_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(path, "wb") as f:
        f.write(out)


def sigmoid(x):
    return np.tanh(x * 0.5) * 0.5 + 0.5  # DeZero's F.sigmoid


def make():
    os.makedirs(DATA, exist_ok=True)
    p = lambda name: os.path.join(DATA, name)
    a = arrays()
    np.savez(p("npz_savez.npz"), **a)
    np.savez_compressed(p("npz_savez_compressed.npz"), **a)

    v = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5
    with zipfile.ZipFile(p("npz_versions.npz"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("v1.npy", npy_bytes(v, (1, 0)))
        z.writestr("v2.npy", npy_bytes(v, (2, 0)))
        z.writestr("v3.npy", npy_bytes(v, (3, 0)))

    write_zip64(p("npz_zip64.npz"), [("x.npy", npy_bytes(np.arange(5, dtype=np.int64), (1, 0))),
                                     ("y.npy", npy_bytes(np.array([[1.0, 2.0]], dtype=np.float32), (1, 0)))])

    np.savez(p("npz_fortran.npz"), f=np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.savez(p("npz_float16.npz"), h=np.ones(3, dtype=np.float16))

    rng = np.random.RandomState(1)
    W0 = rng.randn(4, 3).astype(np.float32)
    b0 = rng.randn(3).astype(np.float32)
    W1 = rng.randn(3, 2).astype(np.float32)
    b1 = rng.randn(2).astype(np.float32)
    np.savez_compressed(p("mlp_weights.npz"), **{"l0/W": W0, "l0/b": b0, "l1/W": W1, "l1/b": b1})
    x = rng.randn(5, 4).astype(np.float32)
    y = sigmoid(x @ W0 + b0) @ W1 + b1
    np.savez(p("mlp_io.npz"), x=x, y=y.astype(np.float32))

    # Self-check: every fixture NumPy can read reads back as written.
    for name in ("npz_savez.npz", "npz_savez_compressed.npz"):
        with np.load(p(name), allow_pickle=False) as f:
            assert sorted(f.files) == sorted(a), name
            for k in a:
                assert f[k].dtype == a[k].dtype and np.array_equal(f[k], a[k]), (name, k)
    with np.load(p("npz_versions.npz"), allow_pickle=False) as f:
        for k in ("v1", "v2", "v3"):
            assert np.array_equal(f[k], v), k
    with np.load(p("npz_zip64.npz"), allow_pickle=False) as f:
        assert np.array_equal(f["x"], np.arange(5)) and np.array_equal(f["y"], [[1.0, 2.0]])
    print("wrote fixtures to", os.path.normpath(DATA), "with NumPy", np.__version__)


def check(paths):
    ok = True
    for path in paths:
        with np.load(path, allow_pickle=False) as f:
            files = list(f.files)
            print(path, "->", files)
            if sorted(files) != sorted(OURS):
                print("  FAIL: keys differ from", sorted(OURS))
                ok = False
                continue
            for k in files:
                got, want = f[k], OURS[k]
                good = got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
                print("  %-5s %-8s %-8s %s" % (k, got.dtype, got.shape, "ok" if good else "FAIL (want %s %s)" %
                                              (want.dtype, want.shape)))
                ok &= good
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
            print("  zip CRCs:", "ok" if bad is None else "FAIL at " + bad)
            ok &= bad is None
    print("OK: NumPy", np.__version__, "loads every file" if ok else "FAILED")
    return ok


def show(paths):
    for path in paths:
        with np.load(path, allow_pickle=False) as f:
            print(path)
            for k in f.files:
                a = f[k]
                print("  %-24s %-8s %-14s sum=%r" % (k, a.dtype, a.shape, a.sum().item() if a.size else 0))
        with zipfile.ZipFile(path) as z:
            print("  zip CRCs:", z.testzip() or "ok")
    return True


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--show":
        sys.exit(0 if show(sys.argv[2:]) else 1)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(0 if check(sys.argv[2:]) else 1)
    make()
