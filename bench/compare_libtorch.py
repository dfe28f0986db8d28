#!/usr/bin/env python3
"""bench/compare_libtorch.py - our W1-W4 programs against their LibTorch C++ twins.

Runs ours and LibTorch's alternately (ours, theirs, ours, theirs, ...) so that both see
the same machine load, --pairs times per workload, with OMP_NUM_THREADS=--threads for
both, both at the instruction-set level --isa (default: the best this CPU has; bench/cpu_isa.py:
ours through DEZERO_CPU_ISA, LibTorch through OPENBLAS_CORETYPE = SkylakeX, Haswell or Nehalem,
ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA; Debian's LibTorch computes its GEMMs through
libblas.so.3 = libopenblas0-openmp). Prints the CPU, each run, the ratio LibTorch / ours of
every pair (> 1: ours is faster) and the median ratio.

  python3 bench/compare_libtorch.py [--build build] [--pairs 3] [--threads 2] [--only w1,w2,w3,w3plan,...]
                                    [--isa sse4|avx2|avx512|avx512_bf16|amx]
                                    [--data DIR]   (Fashion-MNIST for W1 and W2)
  python3 bench/compare_libtorch.py --only w1,w1adam   (w1adam: W1 with --optimizer adam
                                    --weight-decay 1e-4 on both sides)
  python3 bench/compare_libtorch.py --only w1,w1bf16   (w1bf16: W1 with --precision bf16 on both
                                    sides: dezero::autocast against LibTorch's CPU autocast)
  python3 bench/compare_libtorch.py --only w1adam --dataset synthetic [--flush-denormal]
                                    (W1 on random images and labels instead of Fashion-MNIST,
                                    labelled "synthetic" in every line; --flush-denormal turns on
                                    FTZ/DAZ in the LibTorch twin)
  python3 bench/compare_libtorch.py --only w4 --pairs 3   (ResNet50, not in the default set:
                                    about a minute per pair at 2 threads)
  python3 bench/compare_libtorch.py --only w2bf16,w4bf16   (W2 and W4 with --precision bf16 on
                                    both sides, as w1bf16)
  python3 bench/compare_libtorch.py --only w1 --threads 0 --busy 1 --quiet-too
                                    (a busy machine: every timed run shares the CPUs with --busy N
                                    single-threaded CPU-bound processes, started before it and killed after;
                                    --quiet-too runs each pair quiet as well and prints busy / quiet for each
                                    side; --threads 0 leaves OMP_NUM_THREADS unset: both at their defaults)

The twins are build/bench/libtorch/torch_*; they are built when CMake finds LibTorch
(Debian's libtorch-dev).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_isa  # noqa: E402

# workload: (our program, LibTorch's program, regex of the figure, unit, arguments of both)
WORKLOADS = {
    "w1": ("w1_mlp_epoch", "libtorch/torch_w1_mlp_epoch", r"epoch 1: ([0-9.e+-]+) s", "s/epoch"),
    "w1adam": ("w1_mlp_epoch", "libtorch/torch_w1_mlp_epoch", r"epoch 1: ([0-9.e+-]+) s", "s/epoch",
               ["--optimizer", "adam", "--weight-decay", "1e-4"]),
    "w1bf16": ("w1_mlp_epoch", "libtorch/torch_w1_mlp_epoch", r"epoch 1: ([0-9.e+-]+) s", "s/epoch",
               ["--precision", "bf16"]),
    "w2": ("w2_cnn", "libtorch/torch_w2_cnn", r"epoch 1: ([0-9.e+-]+) s", "s/epoch"),
    "w2bf16": ("w2_cnn", "libtorch/torch_w2_cnn", r"epoch 1: ([0-9.e+-]+) s", "s/epoch", ["--precision", "bf16"]),
    "w3": ("w3_overhead", "libtorch/torch_w3_overhead", r"median ([0-9.e+-]+) us/step", "us/step"),
    # W3 replayed by dezero::compile_step (LibTorch's program ignores --plan)
    "w3plan": ("w3_overhead", "libtorch/torch_w3_overhead", r"median ([0-9.e+-]+) us/step", "us/step", ["--plan", "1"]),
    "w4": ("w4_resnet50", "libtorch/torch_w4_resnet50", r"median ([0-9.e+-]+) s/step", "s/step"),
    "w4bf16": ("w4_resnet50", "libtorch/torch_w4_resnet50", r"median ([0-9.e+-]+) s/step", "s/step",
               ["--precision", "bf16"]),
}


def run(path, args, env, busy=0):
    """Runs one program, beside `busy` competitors: single-threaded CPU-bound processes (a Python busy
    loop each), started before it and killed after it, the same for ours and theirs."""
    competitors = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        out = subprocess.run([path] + args, capture_output=True, text=True, env=env)
    finally:
        for c in competitors:
            c.kill()
            c.wait()
    if out.returncode != 0:
        sys.exit(f"{path} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of both; 0: unset (their defaults)")
    ap.add_argument("--busy", type=int, default=0, help="single-threaded CPU-bound competitors during every run")
    ap.add_argument("--quiet-too", action="store_true", help="with --busy: each pair also quiet; prints busy / quiet")
    ap.add_argument("--only", default="w1,w2,w3")
    ap.add_argument("--data", default="")
    ap.add_argument("--dataset", choices=["fashion-mnist", "synthetic"], default="fashion-mnist",
                    help="W1's images: Fashion-MNIST (what a user trains on) or synthetic (random labels)")
    ap.add_argument("--flush-denormal", action="store_true", help="LibTorch twin of W1: setFlushDenormal(true)")
    ap.add_argument("--isa", default=cpu_isa.best_level(), help="instruction-set level of both sides")
    a = ap.parse_args()
    level = cpu_isa.check_level(a.isa)
    base = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    if a.threads == 0:
        del base["OMP_NUM_THREADS"]
    envs = {"ours": cpu_isa.ours_env(level, base), "theirs": cpu_isa.rival_env(level, base)}
    print(f"CPU: {cpu_isa.describe(level)}; LibTorch with OPENBLAS_CORETYPE={envs['theirs']['OPENBLAS_CORETYPE']}")
    for w in a.only.split(","):
        ours_prog, torch_prog, pattern, unit, *args = WORKLOADS[w]
        ours_path, torch_path = f"{a.build}/bench/{ours_prog}", f"{a.build}/bench/{torch_prog}"
        for p in (ours_path, torch_path):
            if not os.access(p, os.X_OK):
                sys.exit(f"{p} is missing; build it (cmake --build {a.build} --target {os.path.basename(p)})")
        w1 = w in ("w1", "w1adam", "w1bf16")
        extra = (args[0] if args else []) + (["--data", a.data] if (w1 or w in ("w2", "w2bf16")) and a.data else [])
        if w1:
            extra += ["--dataset", a.dataset]
        torch_extra = ["--flush-denormal", "1"] if (w1 and a.flush_denormal) else []
        modes = [0, a.busy] if a.busy and a.quiet_too else [a.busy]
        ratios = {b: [] for b in modes}
        times = {(b, side): [] for b in modes for side in ("ours", "theirs")}
        threads = a.threads if a.threads else "default"
        print(f"== {w.upper()}: {ours_prog} vs {torch_prog}{''.join(' ' + x for x in extra + torch_extra)}, {threads} threads, "
              f"{a.pairs} alternating pairs" + (f", beside {a.busy} busy process(es)" if a.busy else ""))
        for i in range(a.pairs):
            for busy in modes:
                figures = []
                for side, path in (("ours", ours_path), ("theirs", torch_path)):
                    text = run(path, extra + (torch_extra if side == "theirs" else []), envs[side], busy)
                    m = re.search(pattern, text)
                    if not m:
                        sys.exit(f"{path}: no '{pattern}' in its output:\n{text}")
                    figures.append(float(m.group(1)))
                    times[(busy, side)].append(figures[-1])
                    detail = [line for line in text.splitlines() if "GFLOP/s" in line or "BLAS" in line
                              or "s/step" in line or "accuracy" in line or "flush" in line or "CPU" in line]
                    label = f" (busy {busy})" if a.busy else ""
                    print(f"  pair {i + 1}{label} {os.path.basename(path)}: {m.group(1)} {unit}" +
                          "".join(f"\n      {d}" for d in detail))
                ratios[busy].append(figures[1] / figures[0])
                print(f"  pair {i + 1}: LibTorch / ours = {ratios[busy][-1]:.3f}")
        for busy in modes:
            label = f" beside {busy} busy process(es)" if busy else (" quiet" if a.busy else "")
            print(f"{w.upper()}{label}: median LibTorch / ours = {statistics.median(ratios[busy]):.3f} "
                  f"(pairs: {', '.join(f'{r:.3f}' for r in ratios[busy])}; > 1 means ours is faster)")
        if len(modes) == 2:
            for side in ("ours", "theirs"):
                slow = [b / q for q, b in zip(times[(0, side)], times[(a.busy, side)])]
                print(f"{w.upper()} {side}: busy / quiet = {statistics.median(slow):.2f} "
                      f"(pairs: {', '.join(f'{r:.2f}' for r in slow)})")


if __name__ == "__main__":
    main()
