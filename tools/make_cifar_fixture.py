#!/usr/bin/env python3
"""Writes the small CIFAR-10 fixtures that tests/test_cifar10.cpp reads.

tests/data/cifar10/cifar-10-binary.tar.gz has the real distribution's layout (members
cifar-10-batches-bin/data_batch_1.bin .. data_batch_5.bin, test_batch.bin, batches.meta.txt)
with 3 records in each data batch and 4 in test_batch.bin. A record is 1 label byte + 3072
pixel bytes (R plane, G plane, B plane, each 32x32 row-major); its bytes follow pixel() and
label() below, which the test recomputes.

tests/data/cifar10_bad/<case>/cifar-10-binary.tar.gz are archives that must be rejected:
  record_size     data_batch_2.bin holds 2 records and 100 more bytes
  label10         record 1 of data_batch_3.bin has label 10
  missing_member  data_batch_4.bin is absent
  empty_member    test_batch.bin holds 0 bytes
  not_tar         a gzip stream of text, not a tar archive
(Truncated and corrupt archives are made by the test itself from the good one.)

Run from the repository root: python3 tools/make_cifar_fixture.py
"""
import gzip
import io
import os
import tarfile

DIR = "cifar-10-batches-bin/"
LABELS = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def pixel(batch, n, c, r, col):
    # the formula test_cifar10.cpp recomputes; batch is 1..5 for data_batch_*, 6 for test_batch
    return (batch * 40 + n * 13 + c * 80 + r * 3 + col * 5) % 256


def label(batch, n):
    return (batch * 3 + n) % 10


def records(batch, count, bad_label_at=None):
    out = bytearray()
    for n in range(count):
        out.append(10 if n == bad_label_at else label(batch, n))
        out += bytes(pixel(batch, n, c, r, col) for c in range(3) for r in range(32) for col in range(32))
    return bytes(out)


def members(**change):
    m = {DIR + "batches.meta.txt": ("\n".join(LABELS) + "\n\n").encode()}
    for b in range(1, 6):
        m[DIR + "data_batch_%d.bin" % b] = records(b, 3)
    m[DIR + "test_batch.bin"] = records(6, 4)
    for name, data in change.items():
        if data is None:
            del m[DIR + name]
        else:
            m[DIR + name] = data
    return m


def tar_gz(path, files):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        d = tarfile.TarInfo(DIR.rstrip("/"))
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, 0
        tar.addfile(d)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    write_gz(path, buf.getvalue())


def write_gz(path, payload):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(payload)


tar_gz("tests/data/cifar10/cifar-10-binary.tar.gz", members())
bad = "tests/data/cifar10_bad/%s/cifar-10-binary.tar.gz"
tar_gz(bad % "record_size", members(**{"data_batch_2.bin": records(2, 2) + bytes(100)}))
tar_gz(bad % "label10", members(**{"data_batch_3.bin": records(3, 3, bad_label_at=1)}))
tar_gz(bad % "missing_member", members(**{"data_batch_4.bin": None}))
tar_gz(bad % "empty_member", members(**{"test_batch.bin": b""}))
os.makedirs(os.path.dirname(bad % "not_tar"), exist_ok=True)
write_gz(bad % "not_tar", b"this is not a tar archive\n" * 40)
