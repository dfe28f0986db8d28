#!/usr/bin/env python3
"""tests/fuzz/make_onnx_seeds.py - writes the seeds of corpus/onnx: five small models (relu, mlp,
constant, gemm, conv) and five that exercise many ops (ops_*.onnx). fuzz_onnx loads them and
fuzz_onnx_run runs them too, so each is a small valid model whose graph reaches a family of the
importer: shape arithmetic, element-wise math and reductions, convolutions and pools, LSTM and
a loss, an integer MaxPool. Needs the onnx Python package (1.12).

  python3 tests/fuzz/make_onnx_seeds.py tests/fuzz/corpus/onnx
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx import checker as onnx_checker
from onnx import save as onnx_save

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def outs(**types):
    return [helper.make_tensor_value_info(name, t, None) for name, t in types.items()]


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dezero-fuzz-seeds")
    m.ir_version = 8
    return m


def shape_ops():
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"]),
        n("Gather", ["s", "i0"], ["b"], axis=0),
        n("Unsqueeze", ["b", "ax0"], ["b1"]),
        n("Concat", ["b1", "m1"], ["shp"], axis=0),
        n("Reshape", ["x", "shp"], ["r"]),
        n("Transpose", ["r"], ["t"], perm=[1, 0]),
        n("Slice", ["t", "st", "en", "ax01", "stp"], ["sl"]),
        n("Pad", ["sl", "pads"], ["p"], mode="reflect"),
        n("Range", ["r0", "r1", "r2"], ["rg"]),
        n("Cast", ["rg"], ["rgf"], to=F),
        n("Expand", ["rgf", "eshape"], ["e"]),
        n("ConstantOfShape", ["s"], ["c"]),
        n("Add", ["x", "c"], ["xc"]),
        n("Flatten", ["xc"], ["fl"], axis=1),
        n("Squeeze", ["b1", "ax0"], ["sq"]),
        n("Size", ["x"], ["sz"]),
        n("Equal", ["sq", "sz"], ["eq"]),
        n("Where", ["eq", "p", "p"], ["w"]),
        n("GatherElements", ["e", "gidx"], ["ge"], axis=1),
    ]
    inits = [const("i0", 0), const("ax0", [0]), const("m1", [-1]), const("st", [0, 1]), const("en", [100, 100]),
             const("stp", [1, 2]), const("ax01", [0, 1]), const("pads", [1, 1, 1, 1]), const("r0", 0), const("r1", 4), const("r2", 1),
             const("eshape", [3, 1]), const("gidx", [[0, 1], [2, 3], [3, 0]])]
    return model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3, 4])],
                 outs(w=F, fl=F, ge=F), inits)


def math_ops():
    n = helper.make_node
    nodes = [
        n("Abs", ["x"], ["a"]), n("Add", ["a", "one"], ["a1"]), n("Log", ["a1"], ["l"]), n("Sqrt", ["a1"], ["q"]),
        n("Exp", ["x"], ["e"]), n("Pow", ["x", "two"], ["p"]), n("Div", ["p", "a1"], ["d"]),
        n("Clip", ["d", "lo", "hi"], ["c"]), n("Softmax", ["c"], ["sm"], axis=-1),
        n("LogSoftmax", ["x"], ["ls"], axis=0), n("Max", ["sm", "ls", "q"], ["mx"]), n("Min", ["l", "e"], ["mn"]),
        n("Mean", ["mx", "mn"], ["me"]), n("Sum", ["me", "x"], ["su"]), n("Sub", ["su", "x"], ["sb"]),
        n("Neg", ["sb"], ["ng"]), n("Tanh", ["ng"], ["th"]), n("Sigmoid", ["th"], ["sg"]),
        n("LeakyRelu", ["sg"], ["lr"], alpha=0.1), n("Relu", ["x"], ["rl"]), n("Reciprocal", ["a1"], ["rc"]),
        n("Mul", ["lr", "rc"], ["mu"]), n("ReduceSum", ["mu", "ax1"], ["rs"], keepdims=1),
        n("ReduceMean", ["mu"], ["rm"], axes=[0]), n("ReduceMax", ["rl"], ["rx"], keepdims=0),
        n("ReduceMin", ["x"], ["ri"]), n("ArgMax", ["x"], ["am"], axis=1), n("ArgMin", ["x"], ["an"], axis=0),
        n("Greater", ["x", "rm"], ["gt"]), n("Less", ["x", "rs"], ["lt"]), n("And", ["gt", "lt"], ["an2"]),
        n("Not", ["an2"], ["nt"]), n("Where", ["nt", "sin", "cos"], ["wh"]), n("Sin", ["x"], ["sin"]),
        n("Cos", ["x"], ["cos"]),
    ]
    nodes = nodes[:-3] + nodes[-2:] + [nodes[-3]]  # Sin and Cos before Where
    inits = [const("one", 1.0, np.float32), const("two", 2.0, np.float32), const("lo", -2.0, np.float32),
             const("hi", 2.0, np.float32), const("ax1", [1])]
    return model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3])],
                 outs(wh=F, rx=F, ri=F, am=I64, an=I64), inits)


def conv_ops():
    n = helper.make_node
    rng = np.random.default_rng(0)
    w = lambda name, *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), name)
    nodes = [
        n("Conv", ["x", "W", "B"], ["c"], pads=[1, 0, 1, 2], strides=[1, 1]),
        n("MaxPool", ["c"], ["mp"], kernel_shape=[2, 2], ceil_mode=1),
        n("AveragePool", ["mp"], ["ap"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=0),
        n("ConvTranspose", ["ap", "WT"], ["ct"], strides=[2, 2], output_padding=[1, 0]),
        n("BatchNormalization", ["ct", "sc", "bi", "mean", "var"], ["bn"]),
        n("GlobalAveragePool", ["bn"], ["gp"]), n("GlobalMaxPool", ["bn"], ["gm"]),
        n("Flatten", ["gp"], ["f"]), n("Gemm", ["f", "G"], ["y"], transB=1, alpha=0.5),
        n("MatMul", ["f", "M"], ["y2"]),
    ]
    inits = [w("W", 2, 2, 3, 3), w("B", 2), w("WT", 2, 3, 2, 2), const("sc", [1, 2, 3], np.float32),
             const("bi", [0, 1, 0], np.float32), const("mean", [0, 0, 1], np.float32),
             const("var", [1, 2, 1], np.float32), w("G", 4, 3), w("M", 3, 2)]
    return model(nodes, [helper.make_tensor_value_info("x", F, ["N", 2, 5, 5])],
                 outs(y=F, y2=F, gm=F), inits)


def lstm_loss():
    n = helper.make_node
    rng = np.random.default_rng(1)
    w = lambda name, *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), name)
    nodes = [
        n("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=3, direction="bidirectional"),
        n("Squeeze", ["Yh", "ax0"], ["h"]), n("Dropout", ["h"], ["d"]),
        n("SoftmaxCrossEntropyLoss", ["d", "labels"], ["loss"], reduction="mean"),
        n("LogSoftmax", ["d"], ["lp"], axis=1),
        n("NegativeLogLikelihoodLoss", ["lp", "labels"], ["nll"], reduction="sum"),
    ]
    inits = [w("W", 2, 12, 2), w("R", 2, 12, 3), w("B", 2, 24), const("ax0", [0])]
    nodes[1] = n("Reshape", ["Yh", "shp"], ["h"])
    inits.append(const("shp", [-1, 3]))
    return model(nodes, [helper.make_tensor_value_info("x", F, [2, 1, 2]), helper.make_tensor_value_info("labels", I64, [2])],
                 outs(loss=F, nll=F, Y=F), inits, opset=13)


def int_pool():
    n = helper.make_node
    nodes = [n("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], pads=[1, 1, 2, 0], strides=[2, 1]),
             n("Cast", ["y"], ["yf"], to=F)]
    return model(nodes, [helper.make_tensor_value_info("x", I32, [1, 1, 4, 3])],
                 outs(yf=F, i=I64), [],
                 opset=12)


def small_seeds(out):
    """The small seeds: relu, mlp (a '/' in a name), constant, gemm, conv."""
    def save(name, nodes, inputs, outputs, inits=(), opset=13):
        g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
        m = helper.make_model(g, producer_name="dezero-seeds", opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx_checker.check_model(m)
        onnx_save(m, f"{out}/{name}.onnx")

    rng = np.random.default_rng(0)
    # relu: x (batch, 3) -> Relu
    save("relu", [helper.make_node("Relu", ["x"], ["y"], name="act")],
         [helper.make_tensor_value_info("x", F, ["batch", 3])], [helper.make_tensor_value_info("y", F, ["batch", 3])])
    # mlp: MatMul + Add + Relu + MatMul + Add, one initializer with '/', one in float_data, the rest raw
    w1 = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "l0/W")
    b1 = helper.make_tensor("l0/b", F, [4], [0.1, -0.2, 0.3, 0.0])
    w2 = numpy_helper.from_array(rng.standard_normal((4, 2)).astype(np.float32), "fc2.weight")
    b2 = numpy_helper.from_array(np.zeros(2, np.float32), "fc2.bias")
    save("mlp", [helper.make_node("MatMul", ["x", "l0/W"], ["h0"], name="fc1"), helper.make_node("Add", ["h0", "l0/b"], ["h1"]),
                 helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "fc2.weight"], ["h3"]),
                 helper.make_node("Add", ["h3", "fc2.bias"], ["y"])],
         [helper.make_tensor_value_info("x", F, ["batch", 3])], [helper.make_tensor_value_info("y", F, ["batch", 2])],
         [w1, b1, w2, b2])
    # constant: Constant (value tensor, value_float), Mul, Add, an int64 initializer and Reshape
    save("constant", [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([2.0, 3.0], np.float32))),
                      helper.make_node("Constant", [], ["d"], value_float=0.5),
                      helper.make_node("Mul", ["x", "c"], ["xc"]), helper.make_node("Add", ["xc", "d"], ["xd"]),
                      helper.make_node("Reshape", ["xd", "shape"], ["y"])],
         [helper.make_tensor_value_info("x", F, [1, 2])], [helper.make_tensor_value_info("y", F, [2, 1])],
         [numpy_helper.from_array(np.array([2, 1], np.int64), "shape")], opset=12)
    # gemm: Gemm with attributes, Sigmoid, two outputs, double input cast
    save("gemm", [helper.make_node("Gemm", ["x", "W", "b"], ["g"], alpha=0.5, beta=2.0, transB=1),
                  helper.make_node("Sigmoid", ["g"], ["y"]), helper.make_node("Tanh", ["g"], ["z"])],
         [helper.make_tensor_value_info("x", F, [2, 3])],
         [helper.make_tensor_value_info("y", F, [2, 4]), helper.make_tensor_value_info("z", F, [2, 4])],
         [numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W"),
          numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")], opset=17)
    # conv: Conv + MaxPool + Flatten, bool and int8 initializers unused
    save("conv", [helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
                  helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                  helper.make_node("Flatten", ["p"], ["y"], axis=1)],
         [helper.make_tensor_value_info("x", F, ["batch", 1, 4, 4])], [helper.make_tensor_value_info("y", F, ["batch", 8])],
         [numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype(np.float32), "k"),
          numpy_helper.from_array(np.array([True, False]), "flag"),
          numpy_helper.from_array(np.array([-3, 4], np.int8), "small")], opset=13)


def main():
    out = sys.argv[1]
    small_seeds(out)
    for name, make in [("ops_shape", shape_ops), ("ops_math", math_ops), ("ops_conv", conv_ops),
                       ("ops_lstm_loss", lstm_loss), ("ops_int_pool", int_pool)]:
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(make().SerializeToString())


if __name__ == "__main__":
    main()
