#!/usr/bin/python3
"""make_fixtures.py - models exported by PyTorch for tests/onnx/test_onnx_pytorch.cpp (issue 30:
"import of a PyTorch-exported model matches PyTorch's outputs to 1e-5 and its parameter gradients
to 1e-4 relative").

Run at development time (Debian's python3-torch 1.13, python3-onnx 1.12):
    /usr/bin/python3 tests/data/onnx/make_fixtures.py
It rewrites, next to itself, for each model <name> in (mlp, lenet, bn_cnn, zoo_ops13, zoo_ops17, plan_net):
  <name>.onnx  torch.onnx.export, opset 13 (zoo_ops17: 17), the batch axis of input and output dynamic ("batch"),
               do_constant_folding as PyTorch's default (on); input "input", output "output"
  <name>.npz   float32 arrays (deflated, fixed timestamps: a rerun writes the same bytes):
                 x3, x5           input batches of 3 and 5 samples
                 y3, y5           PyTorch's outputs for them (eval mode)
                 w3               a fixed random weight, the shape of y3
                 gx3              d sum(y3 * w3) / d x3
                 g/<init>         d sum(y3 * w3) / d <parameter>, keyed by the ONNX initializer
                                  name PyTorch wrote for it ("fc1.weight", "bn1.bias", ...)
               and for bn_cnn, one forward of x5 in training mode (batch statistics):
                 y5_train         its output
                 train/<init>     the running mean and variance it leaves (momentum 0.1, the
                                  unbiased batch variance: what fine-tuning in train mode does)
  bn_cnn_x.npy x5[0] of bn_cnn, (3, 16, 16): a .npy input for examples/onnx_run's CTest
  <name>.txt   the ONNX initializer names in the file's order, one a line, each marked "param" (a
               trained parameter, with a gradient g/<init>) or "stat" (BatchNorm's running mean
               and variance); the script checks that each initializer holds the module's value.

The models:
  mlp     784-100-10: Linear, ReLU, Linear (PyTorch writes Gemm)
  lenet   (N, 1, 28, 28): conv 5x5 (6), ReLU, max pool 2, conv 5x5 (16), ReLU, max pool 2,
          x.view(x.size(0), -1) (Shape, Gather, Unsqueeze, Concat, Reshape), Linear 256-120-84-10
  zoo_ops13, zoo_ops17  (N, 4, 12): the activations and normalisation of PyTorch's model zoo, each
          on 3-d values (Linear on the last axis: MatMul + Add): Linear 12-16, GELU (Erf form),
          LayerNorm(16), Linear 16-16, GELU(approximate="tanh"), Hardswish, Linear 16-16,
          Hardsigmoid, LayerNorm((4, 16)) over the last two axes, Linear 16-5. At opset 13 PyTorch
          writes LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div and Hardswish as HardSigmoid + Mul; at
          17 as LayerNormalization and HardSwish. The LayerNorms get non-trivial gamma and beta. Exported
          without constant folding, which would write each Linear's weight transposed (MatMul on 3-d
          values), an initializer that is not the module's parameter.
  bn_cnn  (N, 3, 16, 16): conv 3x3 pad 1 (8), BatchNorm2d, ReLU, AvgPool2d(3, stride 2, pad 1)
          (count_include_pad: PyTorch writes Pad then AveragePool), conv 3x3 (16), BatchNorm2d, ReLU,
          mean over H and W (ReduceMean), Linear 16-10. The BatchNorms run in eval mode with
          running statistics from a few training forwards, and non-trivial gamma and beta.
  plan_net (N, 3, 15, 15): conv 3x3 (16), BatchNorm2d, ReLU, max pool 3 stride 2 pad 1 ceil_mode
          (PyTorch writes MaxPool with pads; the importer a Pad of -inf and a pool), a fire module
          (squeeze 1x1 + ReLU, expand 1x1 and 3x3 + ReLU, Concat), conv 3x3 without bias, BatchNorm2d,
          + the module's input, ReLU, a depthwise conv 3x3, ReLU6 (Clip), Hardswish, the global average
          (GlobalAveragePool), Flatten, Linear 32-7. Running statistics and BN parameters as bn_cnn's.

bn_cnn and plan_net are exported with training=TrainingMode.PRESERVE (the model is in eval mode, so BN is the
inference form): PyTorch's default (EVAL) folds each BatchNorm into the convolution before it,
which leaves no BatchNormalization node and initializers that are not the model's parameters.
(PRESERVE with constant folding makes PyTorch warn that a model in training mode may fold its
parameters; this one is in eval mode, and export() checks every initializer against the
module: the warning is silenced.)
"""
import copy
import io
import os
import warnings
import zipfile

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13


# --- the models -----------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 100)
        self.fc2 = nn.Linear(100, 10)

    def forward(self, x):  # x: (N, 784)
        return self.fc2(torch.relu(self.fc1(x)))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):  # x: (N, 1, 28, 28)
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)  # (N, 6, 12, 12)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)  # (N, 16, 4, 4)
        x = x.view(x.size(0), -1)                            # (N, 256)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class BnCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):  # x: (N, 3, 16, 16)
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))  # (N, 8, 8, 8)
        x = torch.relu(self.bn2(self.conv2(x)))             # (N, 16, 6, 6)
        x = x.mean(dim=(2, 3))                              # (N, 16)
        return self.fc(x)


class ZooOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.ln1 = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 16)
        self.ln2 = nn.LayerNorm((4, 16))
        self.fc4 = nn.Linear(16, 5)

    def forward(self, x):  # x: (N, 4, 12)
        x = self.ln1(nn.functional.gelu(self.fc1(x)))
        x = nn.functional.hardswish(nn.functional.gelu(self.fc2(x), approximate="tanh"))
        x = self.ln2(nn.functional.hardsigmoid(self.fc3(x)))
        return self.fc4(x)


class PlanNet(nn.Module):
    """What dezero::compile's oneDNN program takes from an imported file (tests/onnx/test_onnx_plan.cpp)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.squeeze = nn.Conv2d(16, 8, 1)
        self.expand1 = nn.Conv2d(8, 16, 1)
        self.expand3 = nn.Conv2d(8, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.fc = nn.Linear(32, 7)

    def forward(self, x):  # x: (N, 3, 15, 15)
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 2, padding=1, ceil_mode=True)  # (N, 16, 8, 8)
        s = torch.relu(self.squeeze(x))
        x = torch.cat([torch.relu(self.expand1(s)), torch.relu(self.expand3(s))], 1)  # (N, 32, 8, 8)
        x = torch.relu(self.bn2(self.conv2(x)) + x)
        x = nn.functional.hardswish(nn.functional.relu6(self.dw(x)))
        return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


def with_bn_statistics(net, bns, x_shape):
    """Non-trivial BatchNorm parameters, and running statistics of five training forwards of shifted,
    scaled inputs (8 samples of x_shape each)."""
    with torch.no_grad():
        for bn in bns:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    net.train()
    with torch.no_grad():
        for _ in range(5):
            net(torch.randn(8, *x_shape) * 2.0 + 0.5)
    return net


def plan_net():
    torch.manual_seed(1)
    net = PlanNet()
    export("plan_net", with_bn_statistics(net, (net.bn1, net.bn2), (3, 15, 15)), (3, 15, 15),
           torch.onnx.TrainingMode.PRESERVE)


def zoo_ops(opset):
    torch.manual_seed(2)
    model = ZooOps()
    with torch.no_grad():
        for ln in (model.ln1, model.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    export(f"zoo_ops{opset}", model, (4, 12), torch.onnx.TrainingMode.EVAL, opset, fold=False)


# --- files ----------------------------------------------------------------------------------------
def save_npz(path, arrays):
    """np.savez_compressed's layout ("<key>.npy" members, deflated) with fixed timestamps."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, buf.getvalue())


def export(name, model, x_shape, training, opset=OPSET, fold=True):
    model.eval()
    x3 = torch.randn(3, *x_shape)
    x5 = torch.randn(5, *x_shape)
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, (x3,), path, opset_version=opset, training=training, do_constant_folding=fold,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})

    # The initializers PyTorch wrote, mapped back to the module's parameters and buffers by value
    # (names are the state_dict keys when nothing was folded; checked, not assumed).
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    state = model.state_dict()
    params = dict(model.named_parameters())
    inits = []
    for init in m.graph.initializer:
        value = onnx.numpy_helper.to_array(init)
        if init.name not in state:
            raise SystemExit(f"{name}: initializer {init.name!r} is not a state_dict key")
        if not np.array_equal(value, state[init.name].numpy()):
            raise SystemExit(f"{name}: initializer {init.name!r} differs from the module's")
        inits.append(init.name)
    missing = [k for k in params if k not in inits]
    if missing:
        raise SystemExit(f"{name}: parameters with no initializer: {missing}")

    # Outputs, and the gradients of sum(y3 * w3) for every parameter and the input.
    with torch.no_grad():
        y5 = model(x5)
    xg = x3.clone().requires_grad_(True)
    model.zero_grad()
    y3 = model(xg)
    w3 = torch.randn(y3.shape)
    (y3 * w3).sum().backward()

    arrays = {"x3": x3.numpy(), "x5": x5.numpy(), "y3": y3.detach().numpy(), "y5": y5.numpy(),
              "w3": w3.numpy(), "gx3": xg.grad.numpy()}
    for key, p in params.items():
        arrays["g/" + key] = p.grad.numpy()
    if any(isinstance(mod, nn.BatchNorm2d) for mod in model.modules()):
        # One forward of x5 in training mode (a copy): the batch statistics, and the running
        # statistics it leaves (momentum 0.1, the unbiased batch variance).
        trained = copy.deepcopy(model).train()
        with torch.no_grad():
            arrays["y5_train"] = trained(x5).numpy()
        for key, buf in trained.named_buffers():
            if key.endswith(("running_mean", "running_var")):
                arrays["train/" + key] = buf.numpy()
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    save_npz(os.path.join(HERE, name + ".npz"), arrays)
    if name == "bn_cnn":  # one sample without the batch axis, for examples/onnx_run --input FILE.npy
        with open(os.path.join(HERE, "bn_cnn_x.npy"), "wb") as f:
            np.lib.format.write_array(f, arrays["x5"][0], allow_pickle=False)
    with open(os.path.join(HERE, name + ".txt"), "w") as f:
        for n in inits:
            f.write(f"{n} {'param' if n in params else 'stat'}\n")
    ops = {}
    for node in m.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f"{name}: {os.path.getsize(path)} + {os.path.getsize(os.path.join(HERE, name + '.npz'))} bytes,"
          f" {len(inits)} initializers, ops {ops}")


def export_fresh(name, module, x, t, lr, aliased_of):
    """<name>.onnx: `module` as constructed, exported as it is (eval mode, PRESERVE, dynamic batch); the
    aliasing the fixture is about must be there (aliased_of(model) lists it; none stops the script). Then
    three SGD steps (lr, train mode, cross entropy) on x, t in PyTorch: <name>.npz holds x, t, losses."""
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(module, (x,), path, opset_version=OPSET, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    aliased = aliased_of(m)
    if not aliased:
        raise SystemExit(f"{name}: PyTorch wrote no such Identity; the fixture tests nothing")
    model = copy.deepcopy(module).train()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    save_npz(os.path.join(HERE, name + ".npz"),
             {"x": x.numpy(), "t": t.numpy().astype(np.int64), "losses": np.array(losses, dtype=np.float64)})
    print(f"{name}: {len(aliased)} value(s) through Identity; losses {losses}")


def fresh_bn():
    """fresh_bn: BnCNN as constructed (gamma 1, beta 0, running mean 0, running var 1). PyTorch merges
    initializers of equal values, so the file's running statistics are Identity nodes of BatchNorm weights
    and biases. Three SGD steps at lr 0.1 on one batch of 4."""
    torch.manual_seed(1)
    cnn = BnCNN().eval()
    x = torch.randn(4, 3, 16, 16)
    t = torch.tensor([1, 0, 7, 3])

    def aliased(m):
        made_by = {o: n.op_type for n in m.graph.node for o in n.output}
        return [i for n in m.graph.node if n.op_type == "BatchNormalization" for i in n.input[3:5]
                if made_by.get(i) == "Identity"]
    export_fresh("fresh_bn", cnn, x, t, 0.1, aliased)


class TiedBN(nn.Module):
    """Two BatchNorms of one size: a fresh export merges their weights (and biases) into one initializer."""
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):  # x: (N, 3, 8, 8)
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def fresh_tied():
    """fresh_tied: TiedBN as constructed. PyTorch merges bn2.weight into bn1.weight (an Identity node reads
    it), so the file ties two weights that PyTorch trains apart. Three SGD steps at lr 0.5 on a batch of 4."""
    torch.manual_seed(3)
    model = TiedBN().eval()
    x = torch.randn(4, 3, 8, 8)
    t = torch.tensor([2, 9, 4, 0])

    def tied(m):
        inits = {i.name for i in m.graph.initializer}
        made_by = {o: n for n in m.graph.node for o in n.output}
        scales = [n.input[1] for n in m.graph.node if n.op_type == "BatchNormalization"]
        return [s for s in scales if s in made_by and made_by[s].op_type == "Identity" and made_by[s].input[0] in inits]
    export_fresh("fresh_tied", model, x, t, 0.5, tied)


def main():
    torch.manual_seed(0)
    warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
    torch.set_num_threads(1)
    export("mlp", MLP(), (784,), torch.onnx.TrainingMode.EVAL)
    export("lenet", LeNet(), (1, 28, 28), torch.onnx.TrainingMode.EVAL)

    cnn = BnCNN()
    export("bn_cnn", with_bn_statistics(cnn, (cnn.bn1, cnn.bn2), (3, 16, 16)), (3, 16, 16),
           torch.onnx.TrainingMode.PRESERVE)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["fresh_bn"]:  # only one fixture (the others stay byte for byte)
        torch.set_num_threads(1)
        warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
        fresh_bn()
    elif sys.argv[1:] == ["fresh_tied"]:
        torch.set_num_threads(1)
        warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
        fresh_tied()
    elif sys.argv[1:] == ["plan_net"]:
        torch.set_num_threads(1)
        warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
        plan_net()
    elif sys.argv[1:] == ["zoo_ops"]:
        torch.set_num_threads(1)
        zoo_ops(13)
        zoo_ops(17)
        plan_net()
    else:
        main()
        fresh_bn()
        fresh_tied()
        zoo_ops(13)
        zoo_ops(17)
        plan_net()
