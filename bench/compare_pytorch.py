#!/usr/bin/env python3
"""bench/compare_pytorch.py - W1, W3 and W4 in PyTorch next to dezero-cpp's benchmarks.

Runs the same workloads as bench/w1_mlp_epoch, bench/w3_overhead and bench/w4_resnet50 in
PyTorch (eager mode, when it is installed, e.g. Debian's python3-torch) and our programs,
then prints the figures side by side with the ratio PyTorch / dezero-cpp. W4 (ResNet50,
batch 8) is not in the default set on the CPU: about a minute per program at 2 threads.

  python3 bench/compare_pytorch.py [--build build] [--device cpu|cuda] [--threads 2] [--only w1|w3|w4]
                                   [--dataset fashion-mnist|synthetic] [--data DIR]
                                   [--isa sse2|avx2|avx512|avx512_bf16|amx]

--isa runs both sides at that instruction-set level (bench/cpu_isa.py: ours through DEZERO_CPU_ISA, PyTorch
through OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA, set before torch is imported); without it
both use what the CPU has (OpenBLAS then detects the CPU itself).

W1 trains on Fashion-MNIST's 60,000 training images (--data DIR holds its .gz files, default Debian's
/usr/share/datasets/fashion-mnist) on both sides; --dataset synthetic uses random images and labels.

--build is a build folder or a GPU-check bundle (it runs BUILD/bench/<program>).
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time


def fashion_mnist(torch, data_dir):
    """Fashion-MNIST's training images as (60000, 784) float32 / 255 and their labels as int64."""
    def idx(name, header):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return bytearray(f.read()[header:])
    x = torch.frombuffer(idx("train-images-idx3-ubyte.gz", 16), dtype=torch.uint8)
    t = torch.frombuffer(idx("train-labels-idx1-ubyte.gz", 8), dtype=torch.uint8)
    return x.reshape(-1, 784).to(torch.float32) / 255.0, t.to(torch.int64)


def torch_w1(torch, device, dataset, data_dir, epochs=1):
    N, D, B = 60000, 784, 100
    g = torch.Generator().manual_seed(0)
    if dataset == "synthetic":
        X = torch.rand(N, D, generator=g).to(device)
        T = torch.randint(0, 10, (N,), generator=g).to(device)
    else:
        X, T = fashion_mnist(torch, data_dir)
        X, T = X[:N].to(device), T[:N].to(device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 1000),
                                torch.nn.ReLU(), torch.nn.Linear(1000, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = torch.nn.CrossEntropyLoss()
    secs = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(N, generator=g).to(device)
        for i in range(N // B):
            idx = perm[i * B:(i + 1) * B]
            loss = lossf(model(X[idx]), T[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()
        secs.append(time.perf_counter() - t0)
    return min(secs)


def torch_w3(torch, device, steps=20000):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(100, 2, generator=g).to(device)
    t = (torch.sin(x[:, :1] * 6.28) + torch.rand(100, 1, generator=g).to(device))
    model = torch.nn.Sequential(torch.nn.Linear(2, 10), torch.nn.Sigmoid(), torch.nn.Linear(10, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)

    def step():
        loss = ((model(x) - t) ** 2).sum() / len(x)  # DeZero's mean_squared_error
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(1000):
        step()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps // 5):
            loss = step()
        loss.item()
        times.append((time.perf_counter() - t0) / (steps // 5) * 1e6)
    return sorted(times)[2]


def torch_w4(torch, device, batch=8, steps=5, warmup=1):
    # DeZero's ResNet50, as bench/libtorch/torch_w4_resnet50.cpp builds it: conv1 7x7 s2 with bias,
    # BN (eps 2e-5), max pool 3 s2, 3/4/6/3 bottlenecks (the stride on the first 1x1), global average
    # pool, Linear(1000); forward + softmax cross entropy + backward, train mode, no optimizer step.
    nn = torch.nn

    def bn(c):
        return nn.BatchNorm2d(c, eps=2e-5, momentum=0.1)

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, out, stride, shortcut):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, mid, 1, stride, 0, bias=False), bn(mid)
            self.conv2, self.bn2 = nn.Conv2d(mid, mid, 3, 1, 1, bias=False), bn(mid)
            self.conv3, self.bn3 = nn.Conv2d(mid, out, 1, 1, 0, bias=False), bn(out)
            self.short = nn.Sequential(nn.Conv2d(cin, out, 1, stride, 0, bias=False), bn(out)) if shortcut else None

        def forward(self, x):
            h = torch.relu(self.bn1(self.conv1(x)))
            h = torch.relu(self.bn2(self.conv2(h)))
            h = self.bn3(self.conv3(h))
            return torch.relu(h + (self.short(x) if self.short is not None else x))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=True), bn(64)
            blocks = []
            for n, cin, mid, out, stride in ((3, 64, 64, 256, 1), (4, 256, 128, 512, 2), (6, 512, 256, 1024, 2),
                                             (3, 1024, 512, 2048, 2)):
                for i in range(n):
                    blocks.append(Bottleneck(cin, mid, out, stride, True) if i == 0 else Bottleneck(out, mid, out, 1, False))
            self.blocks = nn.Sequential(*blocks)
            self.fc6 = nn.Linear(2048, 1000)

        def forward(self, x):
            x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 2)
            x = self.blocks(x)
            x = torch.nn.functional.avg_pool2d(x, (x.shape[2], x.shape[3]))
            return self.fc6(x.reshape(x.shape[0], -1))

    torch.manual_seed(0)
    model = ResNet50().to(device).train()
    x = torch.rand(batch, 3, 224, 224, device=device)
    t = torch.randint(0, 1000, (batch,), device=device)
    times = []
    for i in range(warmup + steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), t)
        loss.backward()
        loss.item()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def ours(build, prog, device, extra=()):
    # DEZERO_LD_LIBRARY_PATH, when set, is the library search path of our program only
    # (tools/gpu-check.sh points it at the CUDA libraries it found); PyTorch, in this
    # process, keeps its own.
    env = dict(os.environ)
    if os.environ.get("DEZERO_LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["DEZERO_LD_LIBRARY_PATH"]
    out = subprocess.run([f"{build}/bench/{prog}", "--device", device, *extra], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{prog} failed: {out.stderr}")
    print(out.stdout.strip())
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", choices=["w1", "w3", "w4"])
    ap.add_argument("--dataset", choices=["fashion-mnist", "synthetic"], default="fashion-mnist")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="Fashion-MNIST's folder (W1)")
    ap.add_argument("--isa", default="", help="instruction-set level of both sides (bench/cpu_isa.py)")
    a = ap.parse_args()
    if a.isa:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import cpu_isa  # noqa: E402
        level = cpu_isa.check_level(a.isa)
        os.environ.update(cpu_isa.rival_env(level))  # before torch loads OpenBLAS
        os.environ["DEZERO_CPU_ISA"] = level         # our programs inherit it
        print(f"CPU: {cpu_isa.describe(level)}; PyTorch with OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}")
    try:
        import torch
    except ImportError:
        torch = None
        print("PyTorch is not installed: showing dezero-cpp's figures only")
    if torch is not None:
        torch.set_num_threads(a.threads)
        print(f"PyTorch {torch.__version__}, {a.threads} threads, device {a.device}")
        # Debian's PyTorch calls whatever BLAS libblas.so.3 points to: netlib's reference
        # BLAS (~10x slower on W1) unless OpenBLAS is installed (libopenblas0).
        blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
        print(f"libblas.so.3 -> {blas}")
    dev = "cuda" if a.device == "cuda" else "cpu"
    rows = []
    if a.only in (None, "w1"):
        w1_args = ["--dataset", a.dataset] + (["--data", a.data] if a.dataset != "synthetic" else [])
        s = ours(a.build, "w1_mlp_epoch", a.device, w1_args)
        ours_s = float(re.search(r"epoch 1: ([0-9.e+-]+) s", s).group(1))
        theirs = torch_w1(torch, dev, a.dataset, a.data) if torch else None
        rows.append(("W1 epoch (s)" if a.dataset != "synthetic" else "W1 synthetic epoch (s)", ours_s, theirs))
    if a.only in (None, "w3"):
        s = ours(a.build, "w3_overhead", a.device)
        ours_us = float(re.search(r"median ([0-9.e+-]+) us", s).group(1))
        theirs = torch_w3(torch, dev) if torch else None
        rows.append(("W3 step (us)", ours_us, theirs))
    if a.only == "w4" or (a.only is None and a.device == "cuda"):
        s = ours(a.build, "w4_resnet50", a.device)
        ours_s = float(re.search(r"median ([0-9.e+-]+) s/step", s).group(1))
        theirs = torch_w4(torch, dev) if torch else None
        rows.append(("W4 step (s)", ours_s, theirs))
    print(f"{'workload':<14}{'dezero-cpp':>12}{'PyTorch':>12}{'PyTorch/ours':>14}")
    for name, o, t in rows:
        ts = f"{t:12.3f}" if t is not None else f"{'-':>12}"
        r = f"{t / o:14.2f}" if t is not None else f"{'-':>14}"
        print(f"{name:<14}{o:12.3f}{ts}{r}")


if __name__ == "__main__":
    main()
