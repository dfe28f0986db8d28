#!/usr/bin/env bash
# tools/gpu-check.sh - the GPU check: on a machine with an NVIDIA GPU,
# runs the whole test suite on the device, one epoch of the MNIST example and the
# W1/W3 benchmarks on the GPU (and W1 in PyTorch when it is installed there).
#
# Two steps, because the GPU machine may have no compiler, no packages and no network:
#   bash tools/gpu-check.sh --build      # here: portable build into build-gpu/ + Fashion-MNIST copy
#   bash tools/gpu-check.sh              # there (with build-gpu/ carried along): the checks
# The CUDA runtime is linked statically; cuBLAS, cuRAND, NVRTC and cuDNN are loaded
# on first use from the usual CUDA library folders (listed below), or LD_LIBRARY_PATH.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
B=build-gpu

if [ "${1:-}" = "--build" ]; then
  set -e
  source tools/deps.sh
  dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" dataset-fashion-mnist
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DDEZERO_CUDA=ON -DDEZERO_NATIVE=OFF >/dev/null
  cmake --build "$B" -j"$(nproc)"
  mkdir -p "$B/data/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*.gz "$B/data/fashion-mnist/"
  echo "built $B; carry it to the GPU machine and run: bash tools/gpu-check.sh"
  exit 0
fi

[ -x "$B/tests/dezero_tests" ] || { echo "gpu-check: $B is not built; run: bash tools/gpu-check.sh --build"; exit 2; }
for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 \
         $(python3 -c 'import nvidia, os; p=os.path.dirname(nvidia.__file__); print(" ".join(os.path.join(p,x,"lib") for x in os.listdir(p)))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
export LD_LIBRARY_PATH="$ROOT/$B/dezero:${LD_LIBRARY_PATH:-}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
status=0
step() { echo; echo "== $*"; }

step "device"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"
missing=$(ldd "$B/dezero/libdezero.so" | grep "not found")
[ -n "$missing" ] && { echo "missing libraries:"; echo "$missing"; status=1; }
# libdezero loads these on first use (dezero/cuda/libs.cpp): say where they are.
for lib in libcublas libcublasLt libcurand libnvrtc libcudnn; do
  found=""
  for d in ${LD_LIBRARY_PATH//:/ }; do
    f=$(ls "$d/$lib".so.[0-9]* 2>/dev/null | head -1)
    [ -n "$f" ] && { found=$f; break; }
  done
  [ -z "$found" ] && found=$(ldconfig -p 2>/dev/null | grep -o "/.*/$lib\.so\.[0-9]*" | head -1)
  echo "$lib: ${found:-NOT FOUND}"
  [ -z "$found" ] && status=1
done

step "test suite (CPU and CUDA subcases)"
timeout 180 "$B/tests/dezero_tests" --no-intro || status=1

step "MNIST example, 1 epoch on the GPU (Fashion-MNIST, carried)"
( cd "$B" && timeout 120 ./examples/mnist --device cuda --epochs 1 --dataset fashion-mnist --data "$ROOT/$B/data" \
    --plot gpu_mnist.png ) || status=1

step "W1 / W3 on the GPU"
timeout 60 "$B/bench/w1_mlp_epoch" --device cuda --epochs 2 || status=1
timeout 60 "$B/bench/w3_overhead" --device cuda --steps 5000 || status=1

if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  step "PyTorch side by side (W1 on the GPU)"
  timeout 90 python3 bench/compare_pytorch.py --build "$B" --device cuda --only w1 || status=1
else
  step "PyTorch is not installed (or sees no GPU) here: no side-by-side ratio"
fi
echo
[ $status -eq 0 ] && echo "gpu-check: PASSED" || echo "gpu-check: FAILED (status $status)"
exit $status
