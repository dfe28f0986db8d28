#!/usr/bin/env python3
"""bench/compare_ddp.py - W5 (W1's MLP data-parallel, global batch 100, SGD, Fashion-MNIST) on a simulated
cluster (tools/netsim.sh, as root): ours (bench/w5_data_parallel under mpirun, float32 or 16-bit gradients on
the wire) against PyTorch DDP with gloo (bench/ddp_w1.py, DDP's own allreduce or its fp16 compression hook),
each configuration in turn, --rounds times, so that every one sees the same machine load. Prints each run's
mean step time, then per configuration the median and the cost model's communication time
2 (P - 1) / P x 7.18 MB x 8 / rate (the bandwidth bound of any allreduce).

  python3 bench/compare_ddp.py [--build build] [--ranks 2] [--rate 1gbit] [--delay 0.2ms] [--steps 50]
                               [--rounds 3] [--only ours,ours-bf16,ours-fp16,ours-overlap,ours-overlap-bf16,
                               ours-db,ours-db-bf16,ours-mpi,ddp,ddp-fp16]
                               [--model mlp|cnn] [--algorithm automatic|mpi|ring]

ours-overlap: buckets averaged during backward (mn::MultiNodeOptimizerOptions::overlap, DDP's design);
ours-db: double buffering (mn::MultiNodeOptimizerOptions), one step stale.
ours-mpi: blocking, with MPI_Allreduce instead of the communicator's default (--algorithm: every ours-*).
--model cnn: W2's small CNN (bench/w2_cnn.cpp) on both sides instead of W1's MLP.

The cost model next to ours (bench/README.md): comm = 2 (P - 1) / P x S x 8 / rate (S: the float32
gradients' bytes; half for bf16), compute = the blocking run's step minus its gradient averaging
(medians); blocking predicts compute + comm, overlap and double buffering max(compute, comm).

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
PARAM_BYTES = {"mlp": 1796010 * 4, "cnn": 20490 * 4}  # W1's MLP, W2's CNN: float32 gradients


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
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--algorithm", default="automatic", help="ours-*: --allreduce-algorithm of w5_data_parallel")
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
    w5 = [w5, "--model", a.model, "--allreduce-algorithm", a.algorithm]
    ddp = [ddp, "--model", a.model]
    configs = {
        "ours": mpi + ["--", *w5, "--steps", str(a.steps)],
        "ours-mpi": mpi + ["--", w5[0], "--model", a.model, "--allreduce-algorithm", "mpi", "--steps", str(a.steps)],
        "ours-bf16": mpi + ["--", *w5, "--steps", str(a.steps), "--allreduce-grad-dtype", "bfloat16"],
        "ours-fp16": mpi + ["--", *w5, "--steps", str(a.steps), "--allreduce-grad-dtype", "float16"],
        "ours-overlap": mpi + ["--", *w5, "--steps", str(a.steps), "--overlap", "1", "--bucket-mb", a.bucket_mb],
        "ours-overlap-bf16": mpi + ["--", *w5, "--steps", str(a.steps), "--overlap", "1", "--bucket-mb", a.bucket_mb,
                                    "--allreduce-grad-dtype", "bfloat16"],
        "ours-db": mpi + ["--", *w5, "--steps", str(a.steps), "--double-buffering", "1"],
        "ours-db-bf16": mpi + ["--", *w5, "--steps", str(a.steps), "--double-buffering", "1",
                               "--allreduce-grad-dtype", "bfloat16"],
        "ddp": ["--each", "--", a.python, *ddp, "--steps", str(a.steps)],
        "ddp-fp16": ["--each", "--", a.python, *ddp, "--steps", str(a.steps), "--hook", "fp16"],
    }
    names = a.only.split(",")
    for n in names:
        if n not in configs:
            sys.exit(f"compare_ddp: no configuration {n!r} (there are {', '.join(configs)})")
    times = {n: [] for n in names}
    averaging = {n: [] for n in names}
    for r in range(a.rounds):
        for n in names:
            for attempt in range(2):  # Open MPI's start-up fails now and then (a session directory that exists)
                out = subprocess.run(["bash", NETSIM] + shape + configs[n], capture_output=True, text=True, env=env)
                m = re.search(r"^step: ([0-9.e+-]+) ms", out.stdout, re.M)
                if (out.returncode == 0 and m) or out.returncode == 77 or attempt == 1:
                    break
                print(f"round {r + 1} {n}: failed ({out.returncode}), once more", flush=True)
            if out.returncode == 77:
                sys.exit(f"compare_ddp: {out.stderr.strip()}")
            if out.returncode != 0 or not m:
                sys.exit(f"compare_ddp: {n} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
            times[n].append(float(m.group(1)))
            avg = re.search(r"^gradient averaging: ([0-9.e+-]+) ms", out.stdout, re.M)
            if avg:
                averaging[n].append(float(avg.group(1)))
            print(f"round {r + 1} {n:<10} {float(m.group(1)):8.1f} ms/step", flush=True)
    comm_ms = 2 * (a.ranks - 1) / a.ranks * PARAM_BYTES[a.model] * 8 / rate_bits(a.rate) * 1e3
    compute = None
    if "ours" in names and averaging["ours"]:
        compute = statistics.median(times["ours"]) - statistics.median(averaging["ours"])
    print(f"\nW5 ({'W2 CNN' if a.model == 'cnn' else 'W1 MLP'}) on {a.ranks} simulated machines, links {a.rate}"
          f"{' ' + a.delay if a.delay else ''}, {a.steps} steps, 1 thread per rank; the bandwidth bound of one float32 "
          f"allreduce: {comm_ms:.1f} ms ({comm_ms / 2:.1f} ms in 16 bits)"
          + (f"; compute (ours, blocking step - averaging): {compute:.1f} ms" if compute is not None else ""))
    print(f"{'configuration':<18}{'median ms/step':>15}{'model':>8}{'median averaging':>18}   runs")
    for n in names:
        model = ""
        if compute is not None and n.startswith("ours"):
            c = comm_ms / 2 if n.endswith("bf16") or n.endswith("fp16") else comm_ms
            model = f"{(max(compute, c) if ('overlap' in n or '-db' in n) else compute + c):.1f}"
        avg = f"{statistics.median(averaging[n]):.1f}" if averaging[n] else ""
        runs = ", ".join(f"{t:.1f}" for t in times[n])
        print(f"{n:<18}{statistics.median(times[n]):15.1f}{model:>8}{avg:>18}   {runs}")


if __name__ == "__main__":
    main()
