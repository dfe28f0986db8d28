#!/usr/bin/python3
"""make_model_fixtures.py - key fixtures for the model zoo (tests/test_models.cpp), with NumPy.

Run at development time:  /usr/bin/python3 tools/make_model_fixtures.py [--npz-dir DIR]
It rewrites the key lists tests/data/models/{vgg16,resnet50,resnet101,resnet152}.txt; the
output is deterministic and committed with this script. --npz-dir DIR also writes the four
weight files DIR/<model>.npz (np.savez_compressed: VGG16's 0.8 MB, the ResNets' 0.2, 0.4 and
0.6 MB). They are not committed: the GPU-check bundle carries tests/data and has no room
under its 40 MiB, so tests/test_models.cpp writes the same values from the .txt with
save_npz; a file tests/data/models/<model>.npz, when present, is used instead
(--npz-dir tests/data/models puts NumPy's there).

The key set and the shapes come from DeZero's architecture as written down in
reference/dezero-inventory.md sections 7.2 and 8 (DeZero models.py, layers.py), not from
dezero-cpp's code:
  - Conv2d(out, k): W (out, in, k, k), b (out,) unless nobias;  Linear(out): W (in, out), b (out,);
  - BatchNorm(): avg_mean, avg_var, gamma, beta, each (C,);
  - keys are attribute paths joined with '/' (Layer._flatten_params): "conv1_1/W", "res2/a/bn1/avg_mean".

Each .npz is what DeZero's save_weights writes (np.savez_compressed, one float32 array per
key) with the real shapes, filled with values that compress to almost nothing: the k-th key
(k = 0, 1, ... in the .txt's order) holds  base_k + 0.0625 * ((i // 1024) % 5)  at flat index i,
with base_k = (k + 1) / 256 (all exact in float32): runs of 1024 equal values. The .txt lists "count <total values>", then
"<key> <base_k> <d0> <d1> ..." per key, for the tests to check against.
"""
import argparse
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "models")


# --- the architectures, as (key, shape) in DeZero's attribute order ---------------------------
def conv(name, in_ch, out_ch, k, nobias=False):
    keys = [(name + "/W", (out_ch, in_ch, k, k))]
    if not nobias:
        keys.append((name + "/b", (out_ch,)))
    return keys


def linear(name, in_size, out_size):
    return [(name + "/W", (in_size, out_size)), (name + "/b", (out_size,))]


def batch_norm(name, c):
    return [(name + "/" + p, (c,)) for p in ("avg_mean", "avg_var", "gamma", "beta")]


def vgg16():
    # 13 Conv2d 3x3 s1 p1: 64, 64, 128, 128, 256 x3, 512 x3, 512 x3; fc6/fc7 4096, fc8 1000.
    # After five 2x2 poolings a 224 x 224 image is 7 x 7, so fc6 takes 512 * 7 * 7 inputs.
    blocks = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]
    keys, c = [], 3
    for b, outs in enumerate(blocks, 1):
        for i, out in enumerate(outs, 1):
            keys += conv("conv%d_%d" % (b, i), c, out, 3)
            c = out
    keys += linear("fc6", 512 * 7 * 7, 4096)
    keys += linear("fc7", 4096, 4096)
    keys += linear("fc8", 4096, 1000)
    return keys


def bottleneck_a(p, in_ch, mid, out):
    # conv1 1x1 -> bn1, conv2 3x3 -> bn2, conv3 1x1 -> bn3 (main path); conv4 1x1 -> bn4 (shortcut)
    return (conv(p + "/conv1", in_ch, mid, 1, True) + batch_norm(p + "/bn1", mid) +
            conv(p + "/conv2", mid, mid, 3, True) + batch_norm(p + "/bn2", mid) +
            conv(p + "/conv3", mid, out, 1, True) + batch_norm(p + "/bn3", out) +
            conv(p + "/conv4", in_ch, out, 1, True) + batch_norm(p + "/bn4", out))


def bottleneck_b(p, in_ch, mid):
    return (conv(p + "/conv1", in_ch, mid, 1, True) + batch_norm(p + "/bn1", mid) +
            conv(p + "/conv2", mid, mid, 3, True) + batch_norm(p + "/bn2", mid) +
            conv(p + "/conv3", mid, in_ch, 1, True) + batch_norm(p + "/bn3", in_ch))


def building_block(p, n, in_ch, mid, out):
    keys = bottleneck_a(p + "/a", in_ch, mid, out)
    for i in range(1, n):
        keys += bottleneck_b(p + "/b%d" % i, out, mid)
    return keys


def resnet(n_layers):
    block = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}[n_layers]
    keys = conv("conv1", 3, 64, 7) + batch_norm("bn1", 64)  # Conv2d(64, 7, 2, 3) with bias
    stages = [(64, 64, 256), (256, 128, 512), (512, 256, 1024), (1024, 512, 2048)]
    for s, ((in_ch, mid, out), n) in enumerate(zip(stages, block), 2):
        keys += building_block("res%d" % s, n, in_ch, mid, out)
    keys += linear("fc6", 2048, 1000)
    return keys


# --- writing -----------------------------------------------------------------------------------
RUN = 1024


def fill(shape, k):
    n = int(np.prod(shape))
    pattern = np.arange(5, dtype=np.float32) * np.float32(0.0625) + np.float32((k + 1) / 256.0)
    return np.resize(np.repeat(pattern, RUN), n).reshape(shape)


def write(name, keys, npz_dir):
    assert len(set(k for k, _ in keys)) == len(keys), name
    if npz_dir:
        arrays = {key: fill(shape, k) for k, (key, shape) in enumerate(keys)}
        np.savez_compressed(os.path.join(npz_dir, name + ".npz"), **arrays)
        size = os.path.getsize(os.path.join(npz_dir, name + ".npz"))
    total = sum(int(np.prod(s)) for _, s in keys)
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("# generated by tools/make_model_fixtures.py (NumPy %s); do not edit\n" % np.__version__)
        f.write("count %d\n" % total)
        for k, (key, shape) in enumerate(keys):
            f.write("%s %r %s\n" % (key, (k + 1) / 256.0, " ".join(str(d) for d in shape)))
    print("%s: %d parameters, %d values%s" % (name, len(keys), total,
                                              ", .npz %.0f kB" % (size / 1e3) if npz_dir else ""))
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npz-dir", help="also write all four .npz files here")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.npz_dir:
        os.makedirs(args.npz_dir, exist_ok=True)
    assert write("vgg16", vgg16(), args.npz_dir) == 138357544  # DeZero's count (inventory section 8)
    for n in (50, 101, 152):
        write("resnet%d" % n, resnet(n), args.npz_dir)


if __name__ == "__main__":
    main()
