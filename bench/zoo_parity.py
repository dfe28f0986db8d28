#!/usr/bin/python3
"""bench/zoo_parity.py - every classification model of torchvision (Debian's python3-torchvision 0.14)
and two torch.nn.TransformerEncoders with random weights, exported by PyTorch 1.13 and imported by dezero, against PyTorch's outputs and
gradients (issue 47's first target). A check to run by hand, not a CTest: the large models take
minutes each.

    /usr/bin/python3 bench/zoo_parity.py --build build [--models resnet18,mobilenet_v3_small]
                                         [--opset 13] [--max-params 150e6] [--out DIR]

For each model: torch.manual_seed(0), weights=None, every parameter moved by N(0, 0.01) noise and
random BatchNorm statistics (so that no two initializers are equal: PyTorch merges equal ones), eval mode; exported at --opset (17 when the
export needs it) with training=PRESERVE and no constant folding, so that every initializer is a
state_dict entry (EVAL would fold BatchNorm into the convolutions); a batch of 2 at 224 x 224
(299 for Inception V3); then DATA.npz with x, y, w, gx and g/<parameter> (the gradients of
sum(y * w)), the same from PyTorch in float64 (ref/...), and build/bench/zoo_parity MODEL.onnx
DATA.npz prints the comparison: each array's error against the float64 reference next to PyTorch's
float32 error against it. The last line counts the models that match (no array further from the
float64 reference than 10x PyTorch's float32 or issue 30's bounds: the output 1e-5, a gradient 1e-4,
relative to the array's largest element; or, when float32 differs more, the model run in float64
agrees with PyTorch's float64 to 1e-9: the difference is float32 rounding, e.g. a ReLU input near 0
that falls on the other side), that differ,
and that fail to import or export, with the reasons of the failures.
"""
import argparse
import io
import os
import subprocess
import sys
import time
import warnings
import zipfile

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))


def save_npz(path, arrays):
    """float32 arrays, except the float64 references ("ref/...")."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for key, a in arrays.items():
            buf = io.BytesIO()
            dt = np.float64 if key.startswith("ref/") else np.float32
            np.lib.format.write_array(buf, np.ascontiguousarray(a, dtype=dt), allow_pickle=False)
            z.writestr(key + ".npy", buf.getvalue())


def to_float64(path, out):
    """The same model in float64: float initializers, Constant values, Cast targets and declared types."""
    F, D = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    m = onnx.load(path)

    def widen(t):
        if t.data_type == F:
            t.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(t).astype(np.float64), t.name))
    for t in m.graph.initializer:
        widen(t)
    for n in m.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                widen(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == F:
                a.i = D
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if v.type.tensor_type.elem_type == F:
            v.type.tensor_type.elem_type = D
    onnx.save(m, out)


def classifiers():
    m = torchvision.models
    names = []
    for n in sorted(dir(m)):
        f = getattr(m, n)
        if n.startswith("_") or not n.islower() or not callable(f) or n in ("get_weight", "get_model",
                                                                            "get_model_weights", "list_models"):
            continue
        names.append(n)
    return names


# Text: torch.nn.TransformerEncoder (2 layers, d_model 32, 4 heads, feed-forward 64, batch first),
# with ReLU or GELU, post-norm or pre-norm (norm_first); its input (2, 7, 32).
TRANSFORMERS = ["transformer_encoder_relu", "transformer_encoder_gelu_norm_first"]


def make(name):
    torch.manual_seed(0)
    if name.startswith("transformer_encoder"):
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True,
                                                 activation="gelu" if "gelu" in name else "relu",
                                                 norm_first=name.endswith("norm_first"))
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    else:
        f = getattr(torchvision.models, name)
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kwargs["aux_logits"] = False
            kwargs["init_weights"] = True
        model = f(**kwargs)
    if not isinstance(model, torch.nn.Module):
        return None
    # Distinct values everywhere: PyTorch's exporter merges initializers of equal values (the
    # fresh BatchNorms' ones and zeros, zero biases), and a merged initializer's gradient is the
    # sum over its uses, which no single PyTorch parameter has. Random running statistics too.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-2)
        for k, b in model.named_buffers():
            if k.endswith("running_mean"):
                b.copy_(torch.randn_like(b) * 0.1)
            elif k.endswith("running_var"):
                b.copy_(torch.rand_like(b) * 0.5 + 0.75)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--max-params", type=float, default=150e6)
    ap.add_argument("--out", default="/tmp/zoo_parity")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--float64-check", type=int, default=1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    exe = os.path.join(args.build, "bench", "zoo_parity")
    names = args.models.split(",") if args.models else classifiers() + TRANSFORMERS
    ok, differ, failed = [], [], []
    for name in names:
        try:
            model = make(name)
        except TypeError:
            continue  # not a model builder
        if model is None:
            continue
        nparam = sum(p.numel() for p in model.parameters())
        if nparam > args.max_params:
            print(f"{name}: skipped, {nparam / 1e6:.0f}M parameters (--max-params)", flush=True)
            continue
        model.eval()
        size = 299 if name == "inception_v3" else 224
        x = torch.randn(2, 7, 32) if name in TRANSFORMERS else torch.randn(2, 3, size, size)
        path = os.path.join(args.out, name + ".onnx")
        opset = args.opset
        for attempt in (opset, 17):
            try:
                torch.onnx.export(model, (x,), path, opset_version=attempt, do_constant_folding=False,
                                  training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                                  output_names=["output"])
                opset = attempt
                break
            except Exception as e:  # the next opset, or a failure to report
                err = f"{type(e).__name__}: {str(e)[:160]}"
        else:
            print(f"{name}: PyTorch's export failed: {err}", flush=True)
            failed.append((name, "export"))
            continue
        params = dict(model.named_parameters())
        xg = x.clone().requires_grad_(True)
        model.zero_grad()
        t0 = time.time()
        y = model(xg)
        w = torch.randn(y.shape)
        (y * w).sum().backward()
        torch_s = time.time() - t0
        arrays = {"x": x.numpy(), "y": y.detach().numpy(), "w": w.numpy(), "gx": xg.grad.numpy()}
        inits = {i.name for i in onnx.load(path, load_external_data=False).graph.initializer}
        for k, p in params.items():
            if k in inits and p.grad is not None:
                arrays["g/" + k] = p.grad.numpy()
        # PyTorch in float64 on the same values: the reference both float32 results are measured
        # against ("within float32 rounding" = no further from it than PyTorch's own float32)
        model64 = model.double()
        x64 = x.double().requires_grad_(True)
        model64.zero_grad()
        y64 = model64(x64)
        (y64 * w.double()).sum().backward()
        arrays.update({"ref/y": y64.detach().numpy(), "ref/gx": x64.grad.numpy()})
        for k, p in model64.named_parameters():
            if "g/" + k in arrays:
                arrays["ref/g/" + k] = p.grad.numpy()
        data = os.path.join(args.out, name + ".npz")
        save_npz(data, arrays)
        r = subprocess.run([exe, path, data, "--threads", str(args.threads)], capture_output=True, text=True)
        if r.returncode != 0 and args.float64_check and "FAILED" not in r.stdout:
            # a float32 difference: the same model in float64 tells a wrong formula from rounding
            path64 = os.path.join(args.out, name + "_float64.onnx")
            to_float64(path, path64)
            r64 = subprocess.run([exe, path64, data, "--threads", str(args.threads), "--float64", "1"],
                                 capture_output=True, text=True)
            os.remove(path64)
            print(f"  {name} in float64: {r64.stdout.strip().split(': ', 1)[-1]}", flush=True)
            if r64.returncode == 0:
                r = subprocess.CompletedProcess(r.args, 0, r.stdout.strip() + " (float64 agrees)", r.stderr)
        line = (r.stdout.strip() or r.stderr.strip()).splitlines()[-1] if (r.stdout or r.stderr) else "no output"
        print(f"{name} (opset {opset}, {nparam / 1e6:.1f}M, PyTorch forward+backward {torch_s:.2f} s): "
              f"{line.split(': ', 1)[-1]}", flush=True)
        if r.returncode == 0:
            ok.append(name)
        elif "FAILED" in line:
            failed.append((name, line.split("FAILED: ", 1)[-1][:200]))
        else:
            differ.append(name)
        for f in (path, data):
            os.remove(f)
    print(f"zoo_parity: {len(ok)} match, {len(differ)} differ {differ}, {len(failed)} fail")
    for name, why in failed:
        print(f"  {name}: {why}")
    return 0 if not differ and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
