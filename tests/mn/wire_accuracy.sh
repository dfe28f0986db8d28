#!/usr/bin/env bash
# tests/mn/wire_accuracy.sh - half-size gradients on the wire train as well as float32 (issue 32,
# item 2): examples/mnist_mn under mpirun -np 2 (W1's MLP 784-1000-1000-10, Adam, batch 100 per
# rank), one epoch of Fashion-MNIST with --allreduce-grad-dtype same, bfloat16 and float16; the
# test accuracy of each 16-bit run must be within 0.01 of the float32 run's. Exit 77 (skipped)
# when Fashion-MNIST is not installed.
#
# The bound is twice the largest difference measured, on three CPUs and kernel levels: the
# float32 run alone reaches 0.8520 (AMD Zen 3, AVX2), 0.8523 and 0.8556 (AMD Zen 5 at avx512 and
# at DEZERO_CPU_ISA=avx2), 0.8546 (Intel, AVX-512): summation orders move it by 0.0036; the 16-bit
# runs were 0.0003-0.0051 from their float32 run. A wire that loses precision for real (a wrong
# rounding or scale) costs far more, or diverges.
#
#   wire_accuracy.sh MPIEXEC MNIST_MN FASHION_DIR WORK_DIR
set -euo pipefail
mpiexec=$1 exe=$2 data=$3 work=$4
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "wire_accuracy: skipped: no Fashion-MNIST in $data (Debian's dataset-fashion-mnist)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
cd "$work"
declare -A acc
for wire in same bfloat16 float16; do
  timeout 240 "$mpiexec" -n 2 "$exe" --data "$data" --dataset fashion-mnist --epochs 1 --quiet \
    --allreduce-grad-dtype "$wire" > "$wire.log" 2>&1 || { cat "$wire.log"; echo "wire_accuracy: the $wire run failed"; exit 1; }
  grep -q "Gradients on the wire: $wire" "$wire.log" || { cat "$wire.log"; echo "wire_accuracy: $wire was not used"; exit 1; }
  acc[$wire]=$(awk '$1 == "1" { print $5 }' "$wire.log")
  [ -n "${acc[$wire]}" ] || { cat "$wire.log"; echo "wire_accuracy: no epoch row in the $wire run"; exit 1; }
done
echo "wire_accuracy: test accuracy after 1 epoch: float32 ${acc[same]}, bfloat16 ${acc[bfloat16]}, float16 ${acc[float16]}"
for wire in bfloat16 float16; do
  awk -v a="${acc[$wire]}" -v b="${acc[same]}" -v w="$wire" 'BEGIN { d = a - b; if (d < 0) d = -d
    printf "wire_accuracy: %s differs from float32 by %.4f (at most 0.01)\n", w, d; exit !(d <= 0.01) }' || exit 1
done
echo "wire_accuracy: ok"
