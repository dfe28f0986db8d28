#!/usr/bin/env python3
"""Writes the tiny IDX fixtures the data tests read (tests/data/mnist, tests/data/idx_bad).

tests/data/mnist holds MNIST-named files (12 train, 5 test images of 28x28) with
deterministic pixels; test_datasets.cpp checks its values against the formula below.
tests/data/idx_bad holds files that must be rejected: a bad magic number and a label
file whose header count is larger than its data. (Truncated and corrupt gzip streams are
made by the tests themselves from the good files.)

Run from the repository root: python3 tools/make_idx_fixtures.py
"""
import gzip
import os
import struct


def write_gz(path, payload):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(payload)


def pixel(n, r, c, train):
    # the formula test_datasets.cpp recomputes
    return (n * 7 + r * 3 + c * 5 + (0 if train else 100)) % 256


def images(count, train, magic=0x00000803, rows=28, cols=28):
    head = struct.pack(">IIII", magic, count, rows, cols)
    body = bytes(pixel(n, r, c, train) for n in range(count) for r in range(rows) for c in range(cols))
    return head + body


def labels(count, train, header_count=None):
    head = struct.pack(">II", 0x00000801, count if header_count is None else header_count)
    return head + bytes((n * 3 + (0 if train else 1)) % 10 for n in range(count))


os.makedirs("tests/data/mnist", exist_ok=True)
os.makedirs("tests/data/idx_bad", exist_ok=True)
write_gz("tests/data/mnist/train-images-idx3-ubyte.gz", images(12, True))
write_gz("tests/data/mnist/train-labels-idx1-ubyte.gz", labels(12, True))
write_gz("tests/data/mnist/t10k-images-idx3-ubyte.gz", images(5, False))
write_gz("tests/data/mnist/t10k-labels-idx1-ubyte.gz", labels(5, False))
write_gz("tests/data/idx_bad/bad-magic-images-idx3-ubyte.gz", images(2, True, magic=0x03080000))
write_gz("tests/data/idx_bad/short-labels-idx1-ubyte.gz", labels(9, True, header_count=10))
