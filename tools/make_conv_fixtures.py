#!/usr/bin/python3
"""make_conv_fixtures.py - reference values for tests/test_conv.cpp, computed with PyTorch (float64).

Run at development time (Debian's python3-torch 1.13):  /usr/bin/python3 tools/make_conv_fixtures.py
It rewrites tests/data/conv.txt in the format of tools/make_fixtures.py (read with
tests/support/fixtures.hpp); the output is deterministic and committed with this script.

Each case stores its inputs, a random upstream gradient gy, the forward result y and the
gradients of sum(y * gy) with respect to every input. DeZero's semantics where PyTorch's
differ: max pooling pads with zeros (F.pad(x, value=0) then max_pool2d), average pooling
counts the padding (count_include_pad=True), deconv2d's outsize is conv_transpose2d's
output_padding, and im2col's (N, C, KH, KW, OH, OW) is unfold's (N, C*KH*KW, OH*OW) reshaped.
"""
import os

import numpy as np
import torch
import torch.nn.functional as tf

import make_fixtures as mf

HERE = os.path.dirname(os.path.abspath(__file__))


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def t(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def outsize(i, k, s, p):
    return (i + 2 * p - k) // s + 1


def store_grads(w, name, y, gy, inputs):
    w.array(name + "_y", y.detach().numpy())
    w.array(name + "_gy", gy)
    (y * torch.tensor(gy)).sum().backward()
    for key, v in inputs:
        if v is not None:
            w.array(name + "_g" + key, v.grad.numpy())


def conv_cases(w, r):
    #        name   x shape         OC  k       s       p       bias
    cases = [("c1", (2, 3, 7, 6), 4, 3, 1, 1, True),
             ("c2", (1, 5, 15, 15), 8, 3, (3, 1), (2, 1), False),   # DeZero test_forward2
             ("c3", (1, 5, 20, 15), 3, (5, 3), 1, 3, True),         # DeZero test_forward4
             ("c4", (2, 4, 5, 5), 3, 1, 2, 0, True),                # 1x1
             ("c5", (2, 2, 6, 9), 3, (2, 4), (2, 3), (1, 2), False)]  # rectangular everything
    for name, xs, oc, k, s, p, bias in cases:
        k, s, p = pair(k), pair(s), pair(p)
        x = t(r.randn(*xs))
        W = t(r.randn(oc, xs[1], *k))
        b = t(r.randn(oc)) if bias else None
        y = tf.conv2d(x, W, b, stride=s, padding=p)
        gy = r.randn(*y.shape)
        w.array(name + "_x", x.detach().numpy())
        w.array(name + "_W", W.detach().numpy())
        if bias:
            w.array(name + "_b", b.detach().numpy())
        w.array(name + "_args", np.array(list(s) + list(p), dtype=np.int64))
        store_grads(w, name, y, gy, [("x", x), ("W", W), ("b", b)])


def deconv_cases(w, r):
    #        name  x shape        OC  k        s       p       outsize  bias
    cases = [("d1", (1, 1, 5, 10), 3, 10, 5, 5, None, True),       # DeZero test_deconv2d, N = 1
             ("d2", (2, 3, 4, 5), 2, 3, 2, 1, (8, 10), True),      # outsize above the default (7, 9)
             ("d3", (1, 2, 3, 3), 4, (2, 3), 1, 0, None, False),
             ("d4", (2, 2, 3, 4), 3, (3, 2), (2, 3), (1, 0), None, False)]
    for name, xs, oc, k, s, p, out, bias in cases:
        k, s, p = pair(k), pair(s), pair(p)
        x = t(r.rand(*xs))
        W = t(r.rand(xs[1], oc, *k))
        b = t(r.rand(oc)) if bias else None
        default = [s[i] * (xs[2 + i] - 1) + k[i] - 2 * p[i] for i in range(2)]
        out = default if out is None else list(out)
        op = [out[i] - default[i] for i in range(2)]
        y = tf.conv_transpose2d(x, W, b, stride=s, padding=p, output_padding=op)
        gy = r.randn(*y.shape)
        w.array(name + "_x", x.detach().numpy())
        w.array(name + "_W", W.detach().numpy())
        if bias:
            w.array(name + "_b", b.detach().numpy())
        w.array(name + "_args", np.array(list(s) + list(p) + out, dtype=np.int64))
        store_grads(w, name, y, gy, [("x", x), ("W", W), ("b", b)])


def pool_cases(w, r):
    #        name  x shape       k       s       p
    cases = [("p1", (2, 3, 6, 6), 2, 2, 0),
             ("p2", (1, 2, 7, 7), 3, 2, 1),          # overlapping, odd size, padding
             ("p3", (2, 2, 5, 8), (2, 3), 1, 0),     # overlapping, rectangular
             ("p4", (1, 2, 15, 15), 2, 2, 0),        # DeZero test_forward2 (odd: 7x7), 2 channels
             ("p5", (2, 2, 5, 6), (3, 2), (1, 2), (1, 0))]
    for name, xs, k, s, p in cases:
        k, s, p = pair(k), pair(s), pair(p)
        xv = r.randn(*xs)
        w.array(name + "_x", xv)
        w.array(name + "_args", np.array(list(k) + list(s) + list(p), dtype=np.int64))
        x = t(xv)  # max: DeZero pads with zeros
        y = tf.max_pool2d(tf.pad(x, (p[1], p[1], p[0], p[0]), value=0.0), k, s)
        store_grads(w, name + "max", y, r.randn(*y.shape), [("x", x)])
        x = t(xv)  # average: the padding counts
        y = tf.avg_pool2d(x, k, s, p, count_include_pad=True)
        store_grads(w, name + "avg", y, r.randn(*y.shape), [("x", x)])


def im2col_cases(w, r):
    cases = [("i1", (2, 3, 5, 6), 3, 2, 1), ("i2", (1, 2, 4, 4), (2, 3), 1, 0), ("i3", (1, 1, 3, 3), 3, 3, 0)]
    for name, xs, k, s, p in cases:
        k, s, p = pair(k), pair(s), pair(p)
        n, c, h, wd = xs
        oh, ow = outsize(h, k[0], s[0], p[0]), outsize(wd, k[1], s[1], p[1])
        x = torch.tensor(r.randn(*xs))
        col = tf.unfold(x, k, padding=p, stride=s).reshape(n, c, k[0], k[1], oh, ow)
        gcol = r.randn(n, c, k[0], k[1], oh, ow)
        img = tf.fold(torch.tensor(gcol).reshape(n, c * k[0] * k[1], oh * ow), (h, wd), k, padding=p, stride=s)
        w.array(name + "_x", x.numpy())
        w.array(name + "_args", np.array(list(k) + list(s) + list(p), dtype=np.int64))
        w.array(name + "_col", col.numpy())
        w.array(name + "_gcol", gcol)
        w.array(name + "_img", img.numpy())


def cnn_case(w, r):
    # conv 3x3 (1 -> 3, pad 1) + relu + max pool 2, conv 3x3 (3 -> 5, pad 1) + relu +
    # average pool 2, flatten, linear (20 -> 4) (DeZero's W layout (in, out)), softmax cross entropy.
    x = torch.tensor(r.randn(4, 1, 8, 8))
    lab = r.randint(0, 4, (4,))
    params = {"W1": r.randn(3, 1, 3, 3) * 0.5, "b1": r.randn(3) * 0.1, "W2": r.randn(5, 3, 3, 3) * 0.3,
              "b2": r.randn(5) * 0.1, "W3": r.randn(20, 4) * 0.3, "b3": r.randn(4) * 0.1}
    P = {k: t(v) for k, v in params.items()}
    h = tf.max_pool2d(tf.relu(tf.conv2d(x, P["W1"], P["b1"], padding=1)), 2, 2)
    h = tf.avg_pool2d(tf.relu(tf.conv2d(h, P["W2"], P["b2"], padding=1)), 2, 2)
    logits = h.reshape(4, -1) @ P["W3"] + P["b3"]
    loss = tf.cross_entropy(logits, torch.tensor(lab))
    loss.backward()
    w.array("cnn_x", x.numpy())
    w.array("cnn_t", lab.astype(np.int64))
    for k, v in params.items():
        w.array("cnn_" + k, v)
        w.array("cnn_g" + k, P[k].grad.numpy())
    w.array("cnn_logits", logits.detach().numpy())
    w.array("cnn_loss", loss.detach().numpy())


def main():
    torch.set_default_dtype(torch.float64)
    w = mf.Writer("conv.txt")
    w.lines[0] = "# generated by tools/make_conv_fixtures.py (PyTorch %s, float64); do not edit" % torch.__version__
    r = np.random.RandomState(11)
    conv_cases(w, r)
    deconv_cases(w, r)
    pool_cases(w, r)
    im2col_cases(w, r)
    cnn_case(w, r)
    w.save()


if __name__ == "__main__":
    main()
