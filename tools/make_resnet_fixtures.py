#!/usr/bin/python3
"""make_resnet_fixtures.py - reference values for tests/test_resnet_xcheck.cpp: DeZero's ResNet
building blocks (models.py: BottleneckA, BottleneckB, BuildingBlock and ResNet's stem and head,
step 58) computed with torch.nn.functional in float64.

BottleneckA also with downsample_fb = true (Facebook's variant: the stride on the 3x3 conv2).

Run at development time (Debian's python3-torch 1.13):  /usr/bin/python3 tools/make_resnet_fixtures.py
It rewrites tests/data/resnet/: one <case>.npz per case with the weights under DeZero's keys
("conv1/W", "bn1/avg_var", "a/conv2/W", "b1/bn3/gamma", ...: what Layer::save_weights writes and
Layer::load_weights reads), stored as float32 (the dtype the layers are built with), and
resnet.txt (the format of tools/make_fixtures.py) with, per case, the input x, a random r, and
the references computed in float64 from the float32-rounded weights and inputs:
  <case>_test_y                 test mode (running statistics)
  <case>_train_y                train mode (batch statistics, biased variance)
  <case>_train_gx, _train_g:<key>  gradients of sum(y * r) in train mode (every W, b, gamma, beta)
  <case>_train_s:<key>          avg_mean / avg_var after that one train forward
The output is deterministic and committed with this script.

DeZero's formulas, checked here against torch's:
  batch_nrom: eps 2e-5; train: mean <- 0.9 mean + 0.1 batch_mean,
              var <- 0.9 var + 0.1 * m / (m - 1) * batch_var, m = N * H * W
              (torch's momentum 0.1 with its unbiased running variance: the same update; asserted below)
  pooling(x, 3, stride 2, pad 0): max_pool2d, floor of (H - 3) / 2 + 1
  global average pooling: average_pooling with kernel (H, W), then (N, C)
  the stem's input (2, 3, 23, 27): conv1 -> (12, 14) ((23 + 6 - 7) // 2 + 1, ...), pooling -> (5, 6),
  both floors of an odd quotient
  Linear: x @ W + b with W (in, out)
"""
import io
import os
import zipfile

import numpy as np
import torch
import torch.nn.functional as tf

import make_fixtures as mf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "resnet")
EPS = 2e-5
DECAY = 0.9


def save_npz(path, arrays):
    """np.savez's layout (stored, "<key>.npy" members) with a fixed timestamp, so a rerun
    rewrites the same bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())


def f32(a):
    return np.asarray(a, dtype=np.float32)


# --- random weights under DeZero's keys ---------------------------------------------------------
def conv_w(P, r, key, cin, cout, k, bias=False):
    P[key + "/W"] = f32(r.randn(cout, cin, k, k) * np.sqrt(2.0 / (cin * k * k)))
    if bias:
        P[key + "/b"] = f32(r.randn(cout) * 0.1)


def bn_w(P, r, key, c):
    P[key + "/gamma"] = f32(r.uniform(0.5, 1.5, c))
    P[key + "/beta"] = f32(r.randn(c) * 0.1)
    P[key + "/avg_mean"] = f32(r.randn(c) * 0.2)
    P[key + "/avg_var"] = f32(r.uniform(0.5, 2.0, c))  # positive, away from 1 so test mode uses it


def bottleneck_w(P, r, p, cin, mid, cout):
    """conv1 1x1 / bn1, conv2 3x3 / bn2, conv3 1x1 / bn3: the residual branch of both blocks."""
    conv_w(P, r, p + "conv1", cin, mid, 1)
    bn_w(P, r, p + "bn1", mid)
    conv_w(P, r, p + "conv2", mid, mid, 3)
    bn_w(P, r, p + "bn2", mid)
    conv_w(P, r, p + "conv3", mid, cout, 1)
    bn_w(P, r, p + "bn3", cout)


def bottleneck_a_w(P, r, p, cin, mid, cout):
    bottleneck_w(P, r, p, cin, mid, cout)
    conv_w(P, r, p + "conv4", cin, cout, 1)  # the projection shortcut
    bn_w(P, r, p + "bn4", cout)


def bottleneck_b_w(P, r, p, cin, mid):
    bottleneck_w(P, r, p, cin, mid, cin)


# --- DeZero's forward formulas with torch.nn.functional ------------------------------------------
class Net:
    """T: the float64 torch tensors of the weights (W, b, gamma, beta with requires_grad; the
    running statistics are updated in place in train mode, as DeZero's batch_nrom does)."""

    def __init__(self, P, train):
        self.T = {k: torch.tensor(v.astype(np.float64), requires_grad=not k.endswith(("avg_mean", "avg_var")))
                  for k, v in P.items()}
        self.train = train

    def conv(self, key, x, stride=1, pad=0):
        return tf.conv2d(x, self.T[key + "/W"], self.T.get(key + "/b"), stride=stride, padding=pad)

    def bn(self, key, x):
        T = self.T
        mean, var = T[key + "/avg_mean"], T[key + "/avg_var"]
        old_mean, old_var = mean.detach().clone(), var.detach().clone()
        y = tf.batch_norm(x, mean, var, T[key + "/gamma"], T[key + "/beta"], training=self.train,
                          momentum=1 - DECAY, eps=EPS)
        if self.train:  # torch's update is DeZero's: check it with DeZero's formula
            xd = x.detach()
            m = xd.numel() // xd.shape[1]
            bm, bv = xd.mean(dim=(0, 2, 3)), xd.var(dim=(0, 2, 3), unbiased=False)
            assert torch.allclose(mean, DECAY * old_mean + (1 - DECAY) * bm, rtol=1e-12, atol=1e-12)
            assert torch.allclose(var, DECAY * old_var + (1 - DECAY) * m / max(m - 1, 1) * bv, rtol=1e-12, atol=1e-12)
        else:
            assert torch.equal(mean, old_mean) and torch.equal(var, old_var)
        return y

    def bottleneck_a(self, p, x, stride, fb=False):  # the stride on conv1, or on conv2 with downsample_fb
        h1 = tf.relu(self.bn(p + "bn1", self.conv(p + "conv1", x, 1 if fb else stride)))
        h1 = tf.relu(self.bn(p + "bn2", self.conv(p + "conv2", h1, stride if fb else 1, 1)))
        h1 = self.bn(p + "bn3", self.conv(p + "conv3", h1))
        h2 = self.bn(p + "bn4", self.conv(p + "conv4", x, stride))
        return tf.relu(h1 + h2)

    def bottleneck_b(self, p, x):
        h = tf.relu(self.bn(p + "bn1", self.conv(p + "conv1", x)))
        h = tf.relu(self.bn(p + "bn2", self.conv(p + "conv2", h, 1, 1)))
        h = self.bn(p + "bn3", self.conv(p + "conv3", h))
        return tf.relu(h + x)

    def stem_head(self, x):
        # conv1 7x7 s2 p3 (bias) -> bn1 -> relu -> pooling(3, 2) -> global average pooling -> fc6
        h = tf.relu(self.bn("bn1", self.conv("conv1", x, 2, 3)))
        h = tf.max_pool2d(h, 3, 2, 0)
        h = tf.avg_pool2d(h, (h.shape[2], h.shape[3]), 1).reshape(h.shape[0], h.shape[1])
        return torch.matmul(h, self.T["fc6/W"]) + self.T["fc6/b"]


# --- the cases -------------------------------------------------------------------------------------
def cases():
    # name, input shape, weights(P, r), forward(net, x)
    def bn_a(stride, fb=False):
        return (lambda P, r: bottleneck_a_w(P, r, "", 8, 4, 16), lambda n, x: n.bottleneck_a("", x, stride, fb))

    def block(P, r):
        bottleneck_a_w(P, r, "a/", 8, 4, 16)
        bottleneck_b_w(P, r, "b1/", 16, 4)
        bottleneck_b_w(P, r, "b2/", 16, 4)

    def block_fwd(n, x):
        return n.bottleneck_b("b2/", n.bottleneck_b("b1/", n.bottleneck_a("a/", x, 2)))

    def stem(P, r):
        conv_w(P, r, "conv1", 3, 6, 7, bias=True)
        bn_w(P, r, "bn1", 6)
        P["fc6/W"] = f32(r.randn(6, 5) * np.sqrt(1.0 / 6))
        P["fc6/b"] = f32(r.randn(5) * 0.1)

    return [("bottleneck_a_s2", (2, 8, 9, 11)) + bn_a(2),
            ("bottleneck_a_s1", (2, 8, 9, 11)) + bn_a(1),
            ("bottleneck_a_fb", (2, 8, 9, 11)) + bn_a(2, True),  # downsample_fb: conv2 3x3 p1 strides
            ("bottleneck_b", (2, 16, 7, 9), lambda P, r: bottleneck_b_w(P, r, "", 16, 4),
             lambda n, x: n.bottleneck_b("", x)),
            ("building_block", (2, 8, 9, 11), block, block_fwd),
            ("stem_head", (2, 3, 23, 27), stem, lambda n, x: n.stem_head(x))]


def main():
    os.makedirs(OUT, exist_ok=True)
    w = mf.Writer(os.path.join("resnet", "resnet.txt"))
    w.lines[0] = "# generated by tools/make_resnet_fixtures.py (NumPy %s, torch %s); do not edit" % (
        np.__version__, torch.__version__)
    for i, (name, xs, make_w, fwd) in enumerate(cases()):
        r = mf.rng(1300 + i)
        P = {}
        make_w(P, r)
        save_npz(os.path.join(OUT, name + ".npz"), P)
        x = f32(r.randn(*xs)).astype(np.float64)
        w.array(name + "_x", x)
        # test mode: the running statistics, unchanged
        with torch.no_grad():
            y = fwd(Net(P, False), torch.tensor(x))
        w.array(name + "_test_y", y.numpy())
        # train mode: batch statistics; one forward updates the running statistics
        net = Net(P, True)
        xt = torch.tensor(x, requires_grad=True)
        y = fwd(net, xt)
        rr = f32(r.randn(*y.shape)).astype(np.float64)
        w.array(name + "_r", rr)
        w.array(name + "_train_y", y.detach().numpy())
        (y * torch.tensor(rr)).sum().backward()
        w.array(name + "_train_gx", xt.grad.numpy())
        for key in sorted(P):
            t = net.T[key]
            if t.requires_grad:
                w.array(name + "_train_g:" + key, t.grad.numpy())
            else:
                w.array(name + "_train_s:" + key, t.detach().numpy())
        print("%-16s x %s -> y %s, %d weights" % (name, xs, tuple(y.shape), len(P)))
    w.save()


if __name__ == "__main__":
    main()
