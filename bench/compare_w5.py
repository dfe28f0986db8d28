#!/usr/bin/env python3
"""bench/compare_w5.py - W5: W1 as 2 processes x 1 thread (dezero::mn) against 1 process x 2
threads, the same total batch (100), alternately, --pairs times.

Each pair runs build/bench/w5_data_parallel under mpirun twice:
  OMP_NUM_THREADS=2 mpirun -np 1 ...   (one process, two threads: the gradients need no averaging)
  OMP_NUM_THREADS=1 mpirun -np 2 ...   (two processes, one thread each, gradients averaged by MPI)
and prints both epochs, their ratio, the averaging per step, and the bare MPI_Allreduce of the same
7.2 MB measured in the two-process run. The goal (bench/README.md): the two-process epoch at most
1.1 x (the two-thread epoch + steps x the bare allreduce), i.e. the library adds under 10% to what
MPI itself costs.

  python3 bench/compare_w5.py [--build build] [--pairs 3] [--communicator flat|naive] [--mpirun mpirun]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return out.stdout


def figure(pattern, text):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"compare_w5: no '{pattern}' in:\n{text}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--communicator", default="flat")
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    prog = os.path.join(a.build, "bench", "w5_data_parallel")
    # Open MPI on a 2-core machine, as root, in a container (README, "Data-parallel training").
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    mpirun = [a.mpirun, "--bind-to", "none"]
    rows = []
    for i in range(a.pairs):
        one = run(mpirun + ["-np", "1", prog, "--communicator", a.communicator], dict(base, OMP_NUM_THREADS="2"))
        two = run(mpirun + ["-np", "2", prog, "--communicator", a.communicator], dict(base, OMP_NUM_THREADS="1"))
        t1 = figure(r"epoch: ([0-9.e+-]+) s", one)
        t2 = figure(r"epoch: ([0-9.e+-]+) s", two)
        avg = figure(r"gradient averaging: ([0-9.e+-]+) ms/step", two)
        bare = figure(r"bare MPI_Allreduce of [0-9.]+ MB: ([0-9.e+-]+) ms", two)
        steps = figure(r", ([0-9]+) steps", two)
        budget = 1.1 * (t1 + steps * bare / 1e3)
        rows.append((t1, t2, avg, bare, budget))
        print(f"pair {i + 1}: 1 process x 2 threads {t1:.2f} s | 2 processes x 1 thread {t2:.2f} s "
              f"(ratio {t2 / t1:.3f}) | averaging {avg:.2f} ms/step, bare allreduce {bare:.2f} ms | "
              f"budget 1.1 x ({t1:.2f} + {steps:.0f} x {bare:.2f} ms) = {budget:.2f} s: "
              f"{'within' if t2 <= budget else 'OVER'}", flush=True)
    med = lambda k: statistics.median(r[k] for r in rows)
    print(f"median: 1x2 {med(0):.2f} s, 2x1 {med(1):.2f} s, ratio {statistics.median(r[1] / r[0] for r in rows):.3f}, "
          f"averaging {med(2):.2f} ms/step, bare allreduce {med(3):.2f} ms, "
          f"2x1 / budget {statistics.median(r[1] / r[4] for r in rows):.3f} (goal <= 1)")


if __name__ == "__main__":
    main()
