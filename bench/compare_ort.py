#!/usr/bin/python3
"""bench/compare_ort.py - PyTorch's model zoo in dezero, ONNX Runtime and PyTorch eager, side by side
(issue 47's speed targets).

    /usr/bin/python3 bench/compare_ort.py --build build [--models resnet18,mobilenet_v2,squeezenet1_0,
        shufflenet_v2_x1_0] [--batch 1,8] [--threads 1,2] [--pairs 5] [--calls 20] [--train 1] [--plan 0]

Each model (torchvision 0.14, weights=None, torch.manual_seed(0), eval mode) is exported once by
PyTorch 1.13 at opset 13 with a symbolic batch axis and PyTorch's default EVAL export (BatchNorm folded
into the convolutions, constant folding on): the same file for dezero (build/bench/onnx_speed) and
ONNX Runtime (bench/ort_speed.js, npm's onnxruntime-node unpacked by tools/ort_check.sh into
build/ort/node_modules: `npm pack`, no install script). PyTorch eager runs the module itself under
torch.no_grad(). Every measurement is a fresh process: load, --warmup calls, then the median of
--calls calls. The runtimes alternate within a round, in an order that rotates round by round, so
that all see the same machine load; the ratios are the medians of the per-round ratios.

"dezero plan" is the same file through dezero::compile (onnx_speed --plan 1: recorded once, then
replayed as a oneDNN program; the compile is not timed, as ORT's session creation is not); --plan 0
leaves it out.

--train 1 adds a training step at each batch (train mode, softmax cross entropy on random labels,
backward, SGD 0.01) for dezero (the imported file, exported with TrainingMode.PRESERVE so that its
BatchNorms stay) and PyTorch eager; ONNX Runtime has no training here.
Prints one line per measurement and a table at the end; name the CPU with the figures (the last
line of onnx_speed's output is printed once).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE = re.compile(r"median ([0-9.]+) ms")


def build_model(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None)


def torch_worker(name, batch, threads, calls, warmup, train):
    """One PyTorch eager measurement, in a process of its own (python3 compare_ort.py --torch-worker ...)."""
    import torch
    torch.set_num_threads(threads)
    model = build_model(name)
    x = torch.randn(batch, 3, 224, 224)
    ms = []
    if train:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        t = torch.randint(0, 1000, (batch,))
        for i in range(warmup + calls):
            t0 = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), t).backward()
            opt.step()
            if i >= warmup:
                ms.append((time.perf_counter() - t0) * 1e3)
    else:
        model.eval()
        with torch.no_grad():
            for i in range(warmup + calls):
                t0 = time.perf_counter()
                model(x)
                if i >= warmup:
                    ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    print(f"torch_speed: {name} batch {batch} threads {threads}: median {ms[len(ms) // 2]:.3f} ms, best {ms[0]:.3f} ms")


def export(name, path, training):
    """For training: PRESERVE in eval mode, so that BatchNormalization stays (dezero's follows Config::train,
    batch statistics in a training step) without the training outputs opset 13 cannot carry."""
    import torch
    warnings.filterwarnings("ignore")
    model = build_model(name).eval()
    mode = torch.onnx.TrainingMode.PRESERVE if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path, opset_version=13, training=mode,
                      do_constant_folding=not training, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def measure(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = r.stdout + r.stderr
    m = LINE.search(out)
    if r.returncode != 0 or not m:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out[-2000:]}")
    return float(m.group(1)), out


def main():
    if sys.argv[1:2] == ["--torch-worker"]:
        a = sys.argv[2:]
        torch_worker(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), a[5] == "1")
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_0,shufflenet_v2_x1_0")
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--train", type=int, default=0)
    ap.add_argument("--plan", type=int, default=1)
    ap.add_argument("--out", default="/tmp/compare_ort")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    modules = os.path.join(args.build, "ort", "node_modules")
    if not os.path.exists(os.path.join(modules, "onnxruntime-node", "package.json")):
        raise SystemExit(f"no onnxruntime-node in {modules}: run `ctest -R onnx_ort` in the build once "
                         "(tools/ort_check.sh fetches it with npm pack)")
    ours = os.path.join(args.build, "bench", "onnx_speed")
    cpu_line = ""
    rows = []
    for name in args.models.split(","):
        infer_file = os.path.join(args.out, name + ".onnx")
        export(name, infer_file, False)
        train_file = os.path.join(args.out, name + "_train.onnx")
        if args.train:
            export(name, train_file, True)
        for batch in [int(b) for b in args.batch.split(",")]:
            for threads in [int(t) for t in args.threads.split(",")]:
                env = dict(os.environ, OMP_NUM_THREADS=str(threads))
                common = ["--batch", str(batch), "--threads", str(threads), "--calls", str(args.calls),
                          "--warmup", str(args.warmup)]
                kinds = {
                    "dezero": lambda: measure([ours, infer_file] + common, env),
                    "ort": lambda: measure(["node", os.path.join(HERE, "ort_speed.js"), modules, infer_file, str(batch),
                                            str(threads), str(args.calls), str(args.warmup)], env),
                    "torch": lambda: measure([sys.executable, os.path.abspath(__file__), "--torch-worker", name,
                                              str(batch), str(threads), str(args.calls), str(args.warmup), "0"], env),
                }
                if args.plan:
                    kinds["dezero plan"] = lambda: measure([ours, infer_file, "--plan", "1"] + common, env)
                if args.train:
                    kinds["dezero train"] = lambda: measure([ours, train_file, "--train", "1"] + common, env)
                    kinds["torch train"] = lambda: measure([sys.executable, os.path.abspath(__file__), "--torch-worker",
                                                            name, str(batch), str(threads), str(args.calls),
                                                            str(args.warmup), "1"], env)
                order = list(kinds)
                times = {k: [] for k in order}
                for r in range(args.pairs):
                    for k in order[r % len(order):] + order[:r % len(order)]:
                        ms, out = kinds[k]()
                        times[k].append(ms)
                        if k == "dezero" and not cpu_line:
                            cpu_line = [l for l in out.splitlines() if l.startswith("CPU:")][-1]
                        print(f"{name} batch {batch} threads {threads} round {r + 1}: {k} {ms:.2f} ms", flush=True)

                def ratio(a, b):
                    return statistics.median(x / y for x, y in zip(times[a], times[b]))
                row = {"model": name, "batch": batch, "threads": threads,
                       **{k: statistics.median(v) for k, v in times.items()},
                       "ours/ort": ratio("dezero", "ort"), "ours/torch": ratio("dezero", "torch")}
                if args.plan:
                    row["plan/ort"] = ratio("dezero plan", "ort")
                    row["plan/torch"] = ratio("dezero plan", "torch")
                if args.train:
                    row["train ours/torch"] = ratio("dezero train", "torch train")
                rows.append(row)
    print()
    head = "| model | batch | threads | dezero ms | ORT ms | PyTorch ms | dezero / ORT | dezero / PyTorch |"
    if args.plan:
        head += " plan ms | plan / ORT | plan / PyTorch |"
    if args.train:
        head += " train: dezero ms | PyTorch ms | dezero / PyTorch |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        s = (f"| {r['model']} | {r['batch']} | {r['threads']} | {r['dezero']:.1f} | {r['ort']:.1f} | {r['torch']:.1f} | "
             f"{r['ours/ort']:.2f} | {r['ours/torch']:.2f} |")
        if args.plan:
            s += f" {r['dezero plan']:.1f} | {r['plan/ort']:.2f} | {r['plan/torch']:.2f} |"
        if args.train:
            s += f" {r['dezero train']:.0f} | {r['torch train']:.0f} | {r['train ours/torch']:.2f} |"
        print(s)
    print(cpu_line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
