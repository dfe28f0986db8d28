#!/usr/bin/env python3
"""bench/ddp_w1.py - W5's workload in PyTorch DistributedDataParallel (gloo), one rank per process: W1's
MLP 784-1000-1000-10 (ReLU), SGD 0.01, a global batch of 100 split over the ranks, Fashion-MNIST's
training images (/255; --data DIR, default Debian's /usr/share/datasets/fashion-mnist) or, with
--dataset synthetic, uniform [0, 1) images and random labels, as bench/w5_data_parallel does. Meant to run on every machine of
tools/netsim.sh --each (it reads NETSIM_RANK, NETSIM_SIZE, NETSIM_MASTER, NETSIM_IFNAME), or with
--rank/--size/--master by hand. Rank 0 prints "step: X ms" (the slowest rank's mean over the timed
steps, after a barrier) and the hook used.

  /usr/bin/python3 bench/ddp_w1.py [--steps 100] [--hook none|fp16|bf16] [--threads 1] [--port 29511]
                                   [--model mlp|cnn]

--model cnn: W2's small CNN (bench/w2_cnn.cpp: conv3x3 1->16, ReLU, max pool 2, conv3x3 16->32, ReLU, max
pool 2, Linear 1568->10), SGD 0.1, as w5_data_parallel --model cnn.

--hook: DDP's communication hooks fp16_compress_hook / bf16_compress_hook (gradients cast to 16 bits,
divided by the world size first, for the allreduce), none: DDP's own float32 allreduce. DDP overlaps
its bucketed allreduce (25 MB buckets, the first 1 MB) with the backward pass.
"""
import argparse
import gzip
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--hook", choices=["none", "fp16", "bf16"], default="none")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--dataset", choices=["fashion-mnist", "synthetic"], default="fashion-mnist")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--rank", type=int, default=int(os.environ.get("NETSIM_RANK", "0")))
    ap.add_argument("--size", type=int, default=int(os.environ.get("NETSIM_SIZE", "1")))
    ap.add_argument("--master", default=os.environ.get("NETSIM_MASTER", "127.0.0.1"))
    a = ap.parse_args()
    if os.environ.get("NETSIM_IFNAME"):
        os.environ["GLOO_SOCKET_IFNAME"] = os.environ["NETSIM_IFNAME"]
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.size)
    B, P = 100, a.size
    local = B // P
    g = torch.Generator().manual_seed(0)
    N = max(a.steps, 1) * B
    if a.dataset == "synthetic":
        X = torch.rand(N, 784, generator=g)
        T = torch.randint(0, 10, (N,), generator=g)
    else:
        def idx(name, header):
            with gzip.open(os.path.join(a.data, name), "rb") as f:
                return bytearray(f.read()[header:])
        X = torch.frombuffer(idx("train-images-idx3-ubyte.gz", 16), dtype=torch.uint8).reshape(-1, 784)
        T = torch.frombuffer(idx("train-labels-idx1-ubyte.gz", 8), dtype=torch.uint8).to(torch.int64)
        if N > X.shape[0]:
            raise SystemExit(f"ddp_w1: --steps {a.steps} needs {N} images, Fashion-MNIST has {X.shape[0]}")
        X = X[:N].to(torch.float32) / 255.0
        T = T[:N]
        perm = torch.randperm(N, generator=g)  # shuffled, as ours
        X, T = X[perm], T[perm]
    torch.manual_seed(0)
    nn = torch.nn
    if a.model == "cnn":
        X = X.reshape(-1, 1, 28, 28)
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(1568, 10))
    else:
        model = nn.Sequential(nn.Linear(784, 1000), nn.ReLU(), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10))
    ddp = DDP(model)
    if a.hook != "none":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook if a.hook == "fp16"
                               else default_hooks.bf16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1 if a.model == "cnn" else 0.01)
    lossf = torch.nn.CrossEntropyLoss()
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(a.steps):
        lo = i * B + a.rank * local
        loss = lossf(ddp(X[lo:lo + local]), T[lo:lo + local])
        opt.zero_grad()
        loss.backward()
        opt.step()
    secs = torch.tensor([time.perf_counter() - t0])
    dist.all_reduce(secs, op=dist.ReduceOp.MAX)
    if a.rank == 0:
        print(f"DDP {'W2 CNN' if a.model == 'cnn' else 'W1'}: {P} ranks x {a.threads} thread(s), gloo, hook {a.hook}, "
              f"{a.dataset}, batch {local} per rank, "
              f"{a.steps} steps")
        print(f"step: {secs.item() / a.steps * 1e3:.3f} ms, last loss {loss.item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
