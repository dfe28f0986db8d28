/// \file
/// Everything (each header is also usable alone).
///
/// ```cpp
///   #include <dezero/dezero.hpp>
///   namespace F = dezero::F;
///   using dezero::Variable;
/// ```
#pragma once

#include "dezero/core.hpp"
#include "dezero/cuda.hpp"
#include "dezero/dataloaders.hpp"
#include "dezero/datasets.hpp"
#include "dezero/device.hpp"
#include "dezero/download.hpp"
#include "dezero/dtype.hpp"
#include "dezero/error.hpp"
#include "dezero/functions.hpp"
#include "dezero/image.hpp"
#include "dezero/layers.hpp"
#include "dezero/models.hpp"
#include "dezero/npz.hpp"
#include "dezero/onednn.hpp"
#include "dezero/cpu.hpp"
#include "dezero/optimizers.hpp"
#include "dezero/plan.hpp"
#include "dezero/shape.hpp"
#include "dezero/tensor.hpp"
#include "dezero/training.hpp"
#include "dezero/transforms.hpp"
#include "dezero/utils.hpp"
#include "dezero/version.hpp"

/// \namespace dezero
/// dezero: DeZero, the framework of "Deep Learning from Scratch 3", in C++17.
///
/// The namespace itself holds the core of DeZero's core.py (Variable, Function, Parameter,
/// Config: define-by-run autograd, `dezero/core.hpp`), the array it computes on (Tensor, an
/// N-d array in host or CUDA device memory, with its Shape, DType and Device), the errors
/// (`dezero/error.hpp`), Model, DataLoader and SeqDataLoader. DeZero's modules are namespaces:
///
/// - dezero::F: the differentiable functions (DeZero's dezero.functions, imported as F).
/// - dezero::L: the layers, objects that own Parameters (DeZero's layers.py).
/// - dezero::models: Sequential, MLP and the model zoo VGG16 and ResNet50/101/152 (models.py).
/// - dezero::optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam and their hooks (optimizers.py).
/// - dezero::datasets: Dataset and the book's datasets: Spiral, SinCurve, MNIST, CIFAR10... (datasets.py).
/// - dezero::transforms: what a Dataset applies to each sample (transforms.py).
/// - dezero::utils: gradient checks, array comparison, graphs, downloads, images (utils.py).
/// - dezero::cuda: devices, streams, the memory pool and runtime-compiled kernels (Chainer's
///   chainer.backends.cuda and CuPy's kernels).
/// - dezero::random: NumPy's np.random: the global stream and Generator streams of their own.
///
/// Each header is usable alone; `dezero/dezero.hpp` includes them all.
