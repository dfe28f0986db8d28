#!/usr/bin/env bash
# tools/fuzz.sh - builds the fuzz targets of tests/fuzz (clang's libFuzzer, with ASan and
# UBSan, host backend only) in build-fuzz/ and runs them.
#
#   bash tools/fuzz.sh              CTest: each target over its seeds, then a fixed number
#                                   of new inputs (100000; 15000 for IDX, 10000 for
#                                   onnx_run, snapshot 50000, dot 50000, cifar 10000), then its
#                                   saved crash inputs (what tools/test.sh runs in CI)
#   bash tools/fuzz.sh --time 3600  each target for an hour (one after the other), new
#                                   inputs kept in build-fuzz/tests/fuzz/corpus/<target>
#   bash tools/fuzz.sh --time 3600 npz    one target only
#   bash tools/fuzz.sh --runs 1000000 npy  a number of new inputs instead of a time
#
# A crash is saved under build-fuzz/tests/fuzz/artifacts/<target>/; copy it into
# tests/fuzz/regressions/<target>/ with the fix, and CTest replays it from then on.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
LIMIT=""
case "${1:-}" in
  --time) LIMIT="-max_total_time=$2"; shift 2 ;;
  --runs) LIMIT="-runs=$2"; shift 2 ;;
esac
TARGETS=("$@")
DEFAULT_TARGETS=0
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(npz npy idx image state snapshot dot cifar) && DEFAULT_TARGETS=1
CLANGXX="${CLANGXX:-$(command -v clang++ || true)}"
if [ -z "$CLANGXX" ]; then
  echo "fuzz: clang++ not found (Debian: apt-get install clang libclang-rt-dev libomp-dev)" >&2
  exit 1
fi
JOBS="$(nproc)"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANGXX" -DDEZERO_FUZZ=ON \
  -DDEZERO_CUDA=OFF -DDEZERO_BUILD_TESTS=OFF -DDEZERO_BUILD_EXAMPLES=OFF -DDEZERO_BUILD_BENCH=OFF >/dev/null
# fuzz_onnx and fuzz_onnx_run exist when CMake found ONNX (libonnx-dev): a default run includes them then.
HAS_ONNX=0
grep -q fuzz_onnx build-fuzz/tests/fuzz/CTestTestfile.cmake 2>/dev/null && HAS_ONNX=1
if [ "$DEFAULT_TARGETS" = 1 ] && [ "$HAS_ONNX" = 1 ]; then TARGETS+=(onnx onnx_run); fi
if [[ " ${TARGETS[*]} " =~ " onnx"(_run)?" " ]] && [ "$HAS_ONNX" = 0 ]; then
  echo "fuzz: fuzz_onnx is not built: CMake found no ONNX (Debian: apt-get install libonnx-dev libprotobuf-dev)" >&2
  exit 1
fi
cmake --build build-fuzz -j"$JOBS" --target $(printf 'fuzz_%s ' "${TARGETS[@]}")
if [ -z "$LIMIT" ]; then
  ctest --test-dir build-fuzz --output-on-failure -j"$JOBS" -R "^fuzz_($(IFS='|'; echo "${TARGETS[*]}"))(_regressions)?\$"
  exit 0
fi
for t in "${TARGETS[@]}"; do
  echo "== fuzz_$t ($LIMIT)"
  dir=build-fuzz/tests/fuzz
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=1 \
    "$dir/fuzz_$t" -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 -timeout=10 \
    -artifact_prefix="$dir/artifacts/$t/" -print_final_stats=1 "$LIMIT" \
    "$dir/corpus/$t" "tests/fuzz/corpus/${t%_run}"
done
