#!/usr/bin/env python3
"""bench/compare_ddp.py - W5 (W1's MLP data-parallel, global batch 100, SGD, Fashion-MNIST) on a simulated
cluster (tools/netsim.sh, as root): ours (bench/w5_data_parallel under mpirun, float32 or 16-bit gradients on
the wire) against PyTorch DDP with gloo (bench/ddp_w1.py, DDP's own allreduce or its fp16 compression hook),
each configuration in turn, --rounds times, so that every one sees the same machine load. Prints each run's
mean step time, then per configuration the median and the cost model's communication time
2 (P - 1) / P x 7.18 MB x 8 / rate (the bandwidth bound of any allreduce).

  python3 bench/compare_ddp.py [--build build] [--ranks 2] [--rate 1gbit] [--delay 0.2ms] [--steps 50]
                               [--rounds 3] [--only ours,ours-bf16,ours-fp16,ours-overlap,ours-overlap-bf16,
                               ours-db,ours-db-bf16,ddp,ddp-fp16]

ours-overlap: buckets averaged during backward (mn::MultiNodeOptimizerOptions::overlap, DDP's design);
ours-db: double buffering (mn::MultiNodeOptimizerOptions), one step stale.

Needs root, iproute2, Open MPI and /usr/bin/python3 with torch (Debian's python3-torch). Every rank runs
one thread.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETSIM = os.path.join(HERE, "..", "tools", "netsim.sh")
PARAM_BYTES = 1796010 * 4


def rate_bits(text):
    m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)", text)
    if not m:
        sys.exit(f"compare_ddp: cannot read the rate {text!r}")
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] * (8 if m.group(3) == "bps" else 1)
    return float(m.group(1)) * scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="ours,ours-bf16,ddp,ddp-fp16")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--bucket-mb", default="25", help="ours-overlap*: the bucket size (DDP's bucket_cap_mb)")
    a = ap.parse_args()
    shape = ["-n", str(a.ranks), "--rate", a.rate] + (["--delay", a.delay] if a.delay else [])
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    w5 = os.path.join(a.build, "bench", "w5_data_parallel")
    ddp = os.path.join(HERE, "ddp_w1.py")
    # Open MPI polls while it waits; with more threads than cores (2 ranks, their communication
    # threads and the kernel's forwarding on this 2-core VM) mpi_yield_when_idle lets the others run,
    # as gloo's blocking sockets do.
    mpi = ["--mpi-arg", "-x", "--mpi-arg", "OMP_NUM_THREADS", "--mpi-arg", "--mca", "--mpi-arg", "mpi_yield_when_idle",
           "--mpi-arg", "1"]
    configs = {
        "ours": mpi + ["--", w5, "--steps", str(a.steps)],
        "ours-bf16": mpi + ["--", w5, "--steps", str(a.steps), "--allreduce-grad-dtype", "bfloat16"],
        "ours-fp16": mpi + ["--", w5, "--steps", str(a.steps), "--allreduce-grad-dtype", "float16"],
        "ours-overlap": mpi + ["--", w5, "--steps", str(a.steps), "--overlap", "1", "--bucket-mb", a.bucket_mb],
        "ours-overlap-bf16": mpi + ["--", w5, "--steps", str(a.steps), "--overlap", "1", "--bucket-mb", a.bucket_mb,
                                    "--allreduce-grad-dtype", "bfloat16"],
        "ours-db": mpi + ["--", w5, "--steps", str(a.steps), "--double-buffering", "1"],
        "ours-db-bf16": mpi + ["--", w5, "--steps", str(a.steps), "--double-buffering", "1",
                               "--allreduce-grad-dtype", "bfloat16"],
        "ddp": ["--each", "--", a.python, ddp, "--steps", str(a.steps)],
        "ddp-fp16": ["--each", "--", a.python, ddp, "--steps", str(a.steps), "--hook", "fp16"],
    }
    names = a.only.split(",")
    for n in names:
        if n not in configs:
            sys.exit(f"compare_ddp: no configuration {n!r} (there are {', '.join(configs)})")
    times = {n: [] for n in names}
    for r in range(a.rounds):
        for n in names:
            out = subprocess.run(["bash", NETSIM] + shape + configs[n], capture_output=True, text=True, env=env)
            m = re.search(r"^step: ([0-9.e+-]+) ms", out.stdout, re.M)
            if out.returncode == 77:
                sys.exit(f"compare_ddp: {out.stderr.strip()}")
            if out.returncode != 0 or not m:
                sys.exit(f"compare_ddp: {n} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
            times[n].append(float(m.group(1)))
            print(f"round {r + 1} {n:<10} {float(m.group(1)):8.1f} ms/step", flush=True)
    comm_ms = 2 * (a.ranks - 1) / a.ranks * PARAM_BYTES * 8 / rate_bits(a.rate) * 1e3
    print(f"\nW5 on {a.ranks} simulated machines, links {a.rate}{' ' + a.delay if a.delay else ''}, "
          f"{a.steps} steps, 1 thread per rank; the bandwidth bound of one float32 allreduce: {comm_ms:.1f} ms "
          f"({comm_ms / 2:.1f} ms in 16 bits)")
    print(f"{'configuration':<14}{'median ms/step':>16}{'runs':>30}")
    for n in names:
        print(f"{n:<14}{statistics.median(times[n]):16.1f}{', '.join(f'{t:.1f}' for t in times[n]):>30}")


if __name__ == "__main__":
    main()
