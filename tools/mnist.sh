#!/usr/bin/env bash
# tools/mnist.sh - the README's main command: installs what is missing (gnuplot too, for
# the figure), builds dezero (with CUDA when the toolkit is present) and trains the MNIST
# example (on the GPU when one is present), which writes mnist_curves.csv and
# mnist_curves.png in the repository root. Extra arguments go to the example, e.g.
#   bash tools/mnist.sh --epochs 1 --device cpu
# --model mlp (the default: examples/mnist, step 51's MLP) or --model cnn (examples/mnist_cnn,
# a small convolutional network) picks the program.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source tools/deps.sh
# dataset-fashion-mnist: the fallback data set when MNIST can be neither found nor downloaded;
# gnuplot (DEZERO_PLOT_PACKAGES) draws the learning curves, mnist_curves.png.
dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" "${DEZERO_PLOT_PACKAGES[@]}" dataset-fashion-mnist
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDEZERO_CUDA=AUTO >/dev/null
program=mnist
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model)
      [[ $# -ge 2 ]] || { echo "mnist.sh: --model needs a value (mlp or cnn)" >&2; exit 2; }
      case "$2" in
        mlp) program=mnist ;;
        cnn) program=mnist_cnn ;;
        *) echo "mnist.sh: --model must be mlp or cnn, got $2" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
cmake --build build -j"$(nproc)" --target "$program"
exec "./build/examples/$program" "${args[@]}"
