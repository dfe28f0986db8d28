#!/usr/bin/env python3
"""Writes tests/data/spiral.txt: DeZero's get_spiral (train and test) reimplemented in
NumPy, plus the permutation a DataLoader draws right after Spiral(train=True) (the first
epoch order of steps 48-50). test_datasets.cpp / test_dataloader.cpp compare against it.

Run from the repository root: python3 tools/make_spiral_fixture.py  (needs numpy)
"""
import numpy as np


def get_spiral(train=True):
    # dezero/datasets.py get_spiral, verbatim apart from np.int -> np.int64
    seed = 1984 if train else 2020
    np.random.seed(seed=seed)
    num_data, num_class, input_dim = 100, 3, 2
    data_size = num_class * num_data
    x = np.zeros((data_size, input_dim), dtype=np.float32)
    t = np.zeros(data_size, dtype=np.int64)
    for j in range(num_class):
        for i in range(num_data):
            rate = i / num_data
            radius = 1.0 * rate
            theta = j * 4.0 + 4.0 * rate + np.random.randn() * 0.2
            ix = num_data * j + i
            x[ix] = np.array([radius * np.sin(theta), radius * np.cos(theta)]).flatten()
            t[ix] = j
    indices = np.random.permutation(num_data * num_class)
    return x[indices], t[indices]


def line(name, values, fmt):
    return name + " " + str(len(values)) + "\n" + " ".join(fmt % v for v in values) + "\n"


out = []
x, t = get_spiral(train=True)
out.append(line("train_x", x.reshape(-1).tolist(), "%.9g"))
out.append(line("train_t", t.tolist(), "%d"))
loader_index = np.random.permutation(300)  # DataLoader(train_set, bs, shuffle=True) reset()
out.append(line("loader_index", loader_index.tolist(), "%d"))
x, t = get_spiral(train=False)
out.append(line("test_x", x.reshape(-1).tolist(), "%.9g"))
out.append(line("test_t", t.tolist(), "%d"))
with open("tests/data/spiral.txt", "w") as f:
    f.write("".join(out))
