#!/usr/bin/env bash
# tools/test.sh - the README's test command (and .ci/run's): installs what is
# missing, builds dezero with the CUDA backend (when the toolkit is present),
# runs the test suite (CUDA cases report "skipped: no CUDA device" without a GPU; dezero::mn's
# tests under mpirun with 1 and 2 processes; dezero::onnx's against ONNX's own node tests,
# OpenCV's dnn and ONNX Runtime: npm's onnxruntime-node, fetched with npm pack),
# builds a consumer project against the installed package (find_package(dezero)),
# then builds and runs the suite again with AddressSanitizer + UBSan, the threads test
# with ThreadSanitizer, then runs the fuzz targets of tests/fuzz (clang's libFuzzer) for a fixed number of inputs each.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source tools/deps.sh
# dataset-fashion-mnist: the data set of the GPU bundle, which the bundle dry run stages and checks.
dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" "${DEZERO_PACKAGING_PACKAGES[@]}" "${DEZERO_DOCS_PACKAGES[@]}" \
  "${DEZERO_MPI_PACKAGES[@]}" "${DEZERO_ONNX_PACKAGES[@]}" "${DEZERO_FUZZ_PACKAGES[@]}" dataset-fashion-mnist
dezero_install_node
JOBS="$(nproc)"

echo "== build (Release, CUDA=AUTO)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDEZERO_CUDA=AUTO >/dev/null
cmake --build build -j"$JOBS"

echo "== tests"
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== install + consumer project (find_package(dezero))"
rm -rf build/prefix build/consumer
cmake --install build --prefix build/prefix >/dev/null
# the API reference, built by the docs_reference test above, is installed with the package
if [ -f build/docs/html/index.html ] && [ ! -f build/prefix/share/doc/dezero/html/index.html ]; then
  echo "the API reference was built but not installed (build/prefix/share/doc/dezero/html)" >&2
  exit 1
fi
cmake -S tests/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$ROOT/build/prefix" >/dev/null
cmake --build build/consumer -j"$JOBS"
./build/consumer/consumer
./build/consumer/consumer_cxx20
if [ -x build/consumer/consumer_mn ]; then ./build/consumer/consumer_mn; fi
if [ -x build/consumer/consumer_onnx ]; then ./build/consumer/consumer_onnx; fi

# Without oneDNN too (DEZERO_ONEDNN=OFF): the CPU convolutions on im2col + SGEMM alone, and the
# build that works where libdnnl-dev is missing.
echo "== tests under AddressSanitizer + UBSan (host backend, without oneDNN)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEZERO_SANITIZE=ON -DDEZERO_CUDA=OFF -DDEZERO_ONEDNN=OFF \
  -DDEZERO_MPI=OFF -DDEZERO_ONNX=OFF -DDEZERO_BUILD_EXAMPLES=OFF -DDEZERO_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$JOBS"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS"

# One initialised model serving several inference threads (tests/test_threads.cpp), with the
# library built under ThreadSanitizer: a data race is reported even when the outputs agree.
echo "== inference threads under ThreadSanitizer (the library and tests/test_threads.cpp only)"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEZERO_TSAN=ON -DDEZERO_CUDA=OFF -DDEZERO_ONEDNN=OFF \
  -DDEZERO_MPI=OFF -DDEZERO_ONNX=OFF -DDEZERO_BUILD_EXAMPLES=OFF -DDEZERO_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$JOBS" --target dezero_thread_tests
ctest --test-dir build-tsan --output-on-failure -R test_threads_tsan

echo "== fuzz targets (clang libFuzzer + ASan + UBSan): seeds, new inputs, saved crash inputs"
bash tools/fuzz.sh
echo "== all done"
