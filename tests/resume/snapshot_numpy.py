#!/usr/bin/env python3
"""tests/resume/snapshot_numpy.py - NumPy reads a training snapshot as training.hpp documents it (issue 33).

Runs resume_run for 6 iterations (a snapshot every 3), then opens DIR/snapshot_iter_6.npz with
np.load: the zip's CRCs check (zipfile.testzip), the documented keys are there with their dtypes
and shapes, the optimizer's class reads back as text, and np.random.RandomState.set_state takes
each saved stream.

  snapshot_numpy.py --exe build/tests/resume_run
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dezero_snapshot_numpy_")
    try:
        subprocess.run([args.exe, "--out", work, "--iterations", "6", "--snapshot-every", "3"], check=True,
                       capture_output=True, timeout=120)
        path = work + "/snapshot_iter_6.npz"
        assert zipfile.ZipFile(path).testzip() is None, "a CRC does not match"
        f = np.load(path)
        keys = set(f.files)
        assert int(f["snapshot/format_version"]) == 1
        assert f["model/l0/W"].shape == (32, 64) and f["model/l0/W"].dtype == np.float32
        assert bytes(f["optimizer/class"].astype("u1")).decode() == "Adam"
        assert int(f["optimizer/t"]) == 6
        assert f["optimizer/p0/m"].shape == f["model/l0/W"].shape
        assert f["loader/train/index"].shape == (200,) and sorted(f["loader/train/index"]) == list(range(200))
        assert int(f["loader/train/iteration"]) == 6 and int(f["loader/train/epoch"]) == 0
        assert int(f["value/iteration"]) == 6
        streams = sorted({k.split("/")[1] for k in keys if k.startswith("random/")})
        assert streams == ["dropout", "global", "loader.train"], streams
        for s in streams:
            p = "random/" + s
            key = f[p + "/key"]
            assert key.shape == (624,) and key.dtype == np.int64 and key.min() >= 0 and key.max() < 2 ** 32
            r = np.random.RandomState()
            r.set_state(("MT19937", key.astype(np.uint32), int(f[p + "/pos"]), int(f[p + "/has_gauss"]),
                         float(f[p + "/cached_gaussian"])))
            r.random_sample()
        print(f"snapshot_numpy: {len(keys)} arrays, the documented keys, CRCs and {len(streams)} streams NumPy takes: ok")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
