#!/usr/bin/python3
"""make_fuzz_seeds.py - the committed seed corpora and regression inputs of tests/fuzz.

Run at development time (Debian's python3-numpy):  /usr/bin/python3 tools/make_fuzz_seeds.py
It rewrites tests/fuzz/corpus/{npz,npy,idx}/ and the hand-made inputs in
tests/fuzz/regressions/; the output is deterministic and committed with this script.
Seeds are small (libFuzzer mutates them): a few arrays of every dtype and layout the
readers accept, IDX files of both kinds, plain and gzipped, and tiny PNG, JPEG and BMP
pictures (made with Debian's python3-pil).
"""
import glob
import gzip
import io
import os
import shutil
import struct
import zipfile
import zlib

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FUZZ = os.path.join(ROOT, "tests", "fuzz")
DATA = os.path.join(ROOT, "tests", "data")


def fresh(d):
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, "*")):
        os.remove(f)
    return d


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        np.lib.format.write_array(buf, a, version=version)
    return buf.getvalue()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def gz(data):
    # mtime=0: the same bytes on every run.
    return gzip.compress(data, mtime=0)


def main():
    # --- npy: every dtype the reader knows, 0-d, empty, Fortran order, header versions
    d = fresh(os.path.join(FUZZ, "corpus", "npy"))
    arrays = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64_scalar": np.array(2.5),
        "i64_vec": np.array([1, -2, 3], dtype=np.int64),
        "i32_2x2": np.array([[1, 2], [3, 4]], dtype=np.int32),
        "u8_vec": np.array([0, 7, 255], dtype=np.uint8),
        "f16_vec": np.array([0.5, -1.0], dtype=np.float16),
        "bool_vec": np.array([True, False]),
        "f32_empty": np.zeros((0, 3), dtype=np.float32),
        "f64_fortran": np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
        "f32_big_endian": np.arange(4, dtype=">f4"),
    }
    for name, a in arrays.items():
        write(os.path.join(d, name + ".npy"), npy_bytes(a))
    write(os.path.join(d, "f32_v2.npy"), npy_bytes(np.ones((2, 2), np.float32), version=(2, 0)))
    write(os.path.join(d, "f32_v3.npy"), npy_bytes(np.ones((2,), np.float32), version=(3, 0)))

    # --- npz: the test fixtures (savez, savez_compressed, zip64, float16, Fortran, ours)
    d = fresh(os.path.join(FUZZ, "corpus", "npz"))
    for f in sorted(glob.glob(os.path.join(DATA, "*.npz"))):
        shutil.copy(f, d)
    # A tiny archive of two arrays, stored and deflated, so mutations reach the
    # central directory quickly.
    for method, name in ((zipfile.ZIP_STORED, "tiny_stored.npz"), (zipfile.ZIP_DEFLATED, "tiny_deflated.npz")):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", method) as z:
            for key, a in (("W", np.ones((2, 2), np.float32)), ("b", np.zeros(2, np.float32))):
                info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = method
                z.writestr(info, npy_bytes(a))
        write(os.path.join(d, name), buf.getvalue())
    # --- idx: MNIST's two kinds (labels 0x801, images 0x803), plain and gzipped
    d = fresh(os.path.join(FUZZ, "corpus", "idx"))
    for f in sorted(glob.glob(os.path.join(DATA, "mnist", "*.gz"))):
        base = os.path.basename(f)[:-3]
        with gzip.open(f, "rb") as g:
            write(os.path.join(d, base), g.read())
    labels = struct.pack(">II", 0x801, 3) + bytes([1, 2, 3])
    images = struct.pack(">IIII", 0x803, 2, 2, 2) + bytes(range(8))
    write(os.path.join(d, "tiny-labels"), labels)
    write(os.path.join(d, "tiny-images"), images)
    write(os.path.join(d, "tiny-images.gz"), gz(images))

    # --- regression inputs: the sizes that once overflowed (issue 12)
    d = os.path.join(FUZZ, "regressions", "idx")
    os.makedirs(d, exist_ok=True)
    # images header 2^20 x 2^20 x 2^24: the byte count wraps to 0 in 64 bits.
    write(os.path.join(d, "header-size-wraps-to-zero"), bytes.fromhex("00000803" "00100000" "00100000" "01000000"))
    d = os.path.join(FUZZ, "regressions", "npy")
    os.makedirs(d, exist_ok=True)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    write(os.path.join(d, "shape-product-overflows"),
          b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
    images_corpus()


def images_corpus():
    """corpus/image: 4x3 (and one 1x1) pictures in each format and pixel layout load_image reads."""
    from PIL import Image
    d = fresh(os.path.join(FUZZ, "corpus", "image"))
    rgb = Image.frombytes("RGB", (4, 3), bytes((k * 37 + 11) % 256 for k in range(4 * 3 * 3)))
    pics = {
        "rgb.png": (rgb, {}), "gray.png": (rgb.convert("L"), {}), "rgba.png": (rgb.convert("RGBA"), {}),
        "palette.png": (rgb.convert("P"), {}), "interlaced.png": (rgb, {"interlace": 1}),
        "gray16.png": (rgb.convert("L").convert("I"), {}), "one.png": (Image.new("RGB", (1, 1), (9, 8, 7)), {}),
        "baseline.jpg": (rgb, {"quality": 90}), "progressive.jpg": (rgb, {"progressive": True}),
        "gray.jpg": (rgb.convert("L"), {}), "rgb.bmp": (rgb, {}), "gray.bmp": (rgb.convert("L"), {}),
    }
    for name, (im, opts) in pics.items():
        buf = io.BytesIO()
        ext = name.rsplit(".", 1)[1]
        im.save(buf, format="JPEG" if ext == "jpg" else ext.upper(), **opts)
        write(os.path.join(d, name), buf.getvalue())
    # A regression input: a 60000 x 60000 RGB PNG holding a few bytes of data must fail
    # cleanly, without allocating 10 GB.
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    d = os.path.join(FUZZ, "regressions", "image")
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "huge-png-tiny-data"),
          b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)) +
          chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))
    # A top-down BMP (negative height) of 10240 x 65536: stb's info gave the height as -65536,
    # which passed the pixel limit, and its loader then allocated 2 GB for |h| rows.
    write(os.path.join(d, "bmp-top-down-claims-2-gb"), bytes.fromhex(
        "424d42040000000000003604000028000000002800000000ffff0100080000000000"
        "0ca100fefffffffe007fd1c854c331504c544529985476"))
    # An empty IDAT chunk first (legal): stb copied it into a null buffer (UBSan: memcpy(NULL, p, 0)).
    # A 4 x 3 grey picture, rows filter 0; load_image drops the empty chunk and decodes the rest.
    write(os.path.join(d, "png-empty-first-idat"),
          b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 3, 8, 0, 0, 0, 0)) +
          chunk(b"IDAT", b"") + chunk(b"IDAT", zlib.compress(b"\x00\x01\x02\x03\x04" * 3)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    main()
