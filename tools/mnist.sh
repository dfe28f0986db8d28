#!/usr/bin/env bash
# tools/mnist.sh - the README's main command: installs what is missing, builds
# dezero (with CUDA when the toolkit is present) and trains the MNIST example
# (on the GPU when one is present). Extra arguments go to the example, e.g.
#   bash tools/mnist.sh --epochs 1 --device cpu
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source tools/deps.sh
# dataset-fashion-mnist: the fallback data set when MNIST can be neither found nor downloaded.
dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" dataset-fashion-mnist
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDEZERO_CUDA=AUTO >/dev/null
cmake --build build -j"$(nproc)" --target mnist
exec ./build/examples/mnist "$@"
