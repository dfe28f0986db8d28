#!/usr/bin/env bash
# tools/gpu-check.sh - the GPU check. It runs from a bundle: one compact folder that holds only
# what the check needs (libdezero, the test suite, examples/mnist, mnist_cnn and gan, the W1-W4
# benchmarks, bench/compare_pytorch.py, the test data, Fashion-MNIST and a copy of this script), so it can
# be carried to a GPU machine that has no compiler, no packages and no network, and run there
# from wherever it lands.
#
# In the source tree:
#   bash tools/gpu-check.sh --build               # portable build into build-gpu/, staged into gpu-bundle/
#   bash tools/gpu-check.sh --stage BUILD OUT     # stage a bundle from any build folder into OUT
#   bash tools/gpu-check.sh --dry-run [BUILD]     # stage from BUILD (default build) into a temporary folder
#                                                 # and check, with a clean environment, that it runs there
# In a bundle:
#   bash gpu-bundle/gpu-check.sh                  # on the GPU machine: the checks
#   bash gpu-bundle/gpu-check.sh --smoke          # on a machine without a GPU: every program starts and
#                                                 # the test suite passes on the CPU (what --dry-run runs)
#
# The binaries find libdezero.so through their RUNPATH ($ORIGIN/../dezero), the tests find their
# data through DEZERO_TEST_DATA_DIR. The CUDA runtime is linked statically; cuBLAS, cuRAND, NVRTC
# and cuDNN are loaded on first use, so the check looks for them (the CUDA toolkit first, then
# PyTorch's pip wheels) and puts the folders where it found them on LD_LIBRARY_PATH for dezero's
# own programs only, never for python3 or PyTorch.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
MAX_BUNDLE_MB=52   # MiB; what travels to the GPU machine is at most 64 MiB in all (the tree is ~4 MiB)
BINARIES=(tests/dezero_tests examples/mnist examples/mnist_cnn examples/gan bench/w1_mlp_epoch bench/w2_cnn bench/w3_overhead
          bench/w4_resnet50)
OPTIONAL_BINARIES=()   # carried and run when the build has them
FASHION_DIR=/usr/share/datasets/fashion-mnist
FASHION_FILES=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

die() { echo "gpu-check: $*" >&2; exit 1; }
usage() { sed -n '2,16p' "$SELF" | sed 's/^# \{0,1\}//'; }

# --- staging (source tree) ----------------------------------------------------------------------

# stage BUILD_DIR OUT_DIR [--allow-no-data]: copies what the check needs into OUT_DIR, laid out
# like the build folder (dezero/, tests/, examples/, bench/) so the binaries' relative RUNPATHs
# resolve, and checks that no binary carries an absolute RUNPATH.
stage() {
  local build=$1 out=$2 allow_no_data=${3:-}
  local root f
  root="$(cd "$HERE/.." && pwd)"
  [ -d "$build" ] || die "stage: no build folder $build"
  build="$(cd "$build" && pwd)"
  [ -e "$build/dezero/libdezero.so" ] || die "stage: $build/dezero/libdezero.so is missing (is $build a dezero build?)"
  for f in "${BINARIES[@]}"; do
    [ -x "$build/$f" ] || die "stage: $build/$f is missing (build the tests, examples and benchmarks first)"
  done
  local have_data=yes
  for f in "${FASHION_FILES[@]}"; do [ -f "$FASHION_DIR/$f" ] || have_data=""; done
  if [ -z "$have_data" ]; then
    [ "$allow_no_data" = "--allow-no-data" ] ||
      die "stage: Fashion-MNIST is not in $FASHION_DIR (install Debian's dataset-fashion-mnist)"
    echo "gpu-check: note: Fashion-MNIST is not in $FASHION_DIR: this bundle has no data/fashion-mnist"
  fi

  if [ -e "$out" ] && [ ! -f "$out/MANIFEST" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    die "stage: $out exists and is not a bundle; not replacing it"
  fi
  rm -rf "$out"
  mkdir -p "$out/dezero" "$out/tests" "$out/examples" "$out/bench"
  # The library under its soname only (what the binaries NEED): a real file, no symlinks to lose
  # on the way.
  local lib
  lib=$(readelf -d "$build/dezero/libdezero.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ -n "$lib" ] || die "stage: $build/dezero/libdezero.so has no SONAME"
  cp -L "$build/dezero/$lib" "$out/dezero/$lib"
  for f in "${BINARIES[@]}"; do cp "$build/$f" "$out/$f"; done
  local carried=("${BINARIES[@]}")
  for f in "${OPTIONAL_BINARIES[@]}"; do
    if [ -x "$build/$f" ]; then cp "$build/$f" "$out/$f"; carried+=("$f"); fi
  done
  cp -r "$root/tests/data" "$out/tests/data"
  cp "$root/bench/compare_pytorch.py" "$out/bench/"
  if [ -n "$have_data" ]; then
    mkdir -p "$out/data/fashion-mnist"
    for f in "${FASHION_FILES[@]}"; do cp "$FASHION_DIR/$f" "$out/data/fashion-mnist/"; done
  fi
  cp "$SELF" "$out/gpu-check.sh"
  # The carried copies lose their symbol tables (about 1.5 MB; backtraces keep the dynamic
  # symbols): the bundle then has room under its limit for the CNN example and benchmarks.
  if command -v strip >/dev/null 2>&1; then
    strip --strip-unneeded "$out/dezero/$lib" "${carried[@]/#/$out/}"
  fi

  # Every RUNPATH must be relative to the binary ($ORIGIN/...), and must resolve inside the bundle.
  local elf rp entry bad=""
  for elf in "$out/dezero/$lib" "${carried[@]/#/$out/}"; do
    rp=$(readelf -d "$elf" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    local entries=()
    IFS=: read -ra entries <<<"$rp"
    for entry in "${entries[@]}"; do
      case "$entry" in
        '$ORIGIN'*) [ -d "$(dirname "$elf")/${entry#\$ORIGIN}" ] || bad+="  ${elf#"$out"/}: RUNPATH $entry does not resolve in the bundle"$'\n' ;;
        *) bad+="  ${elf#"$out"/}: absolute RUNPATH $entry"$'\n' ;;
      esac
    done
  done
  [ -z "$bad" ] || die "stage: binaries that would not find libdezero.so in the bundle (configure with CMAKE_BUILD_RPATH_USE_ORIGIN=ON):"$'\n'"$bad"

  # The sonames libdezero dlopen()s (none in a build without the CUDA backend).
  local sonames
  sonames=$(strings -a "$out/dezero/$lib" | grep -E '^lib(cublas|curand|nvrtc|cudnn)\.so\.[0-9]+$' | sort -u | tr '\n' ' ' || true)
  {
    echo "dezero-cpp GPU-check bundle"
    local commit
    if commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
      git -C "$root" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
    else
      commit=unknown
    fi
    echo "commit: $commit"
    echo "staged: $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(basename "$build")"
    echo "cuda-libs: ${sonames% }"
  } >"$out/MANIFEST"

  local bytes mb
  bytes=$(du -sb "$out" | cut -f1)
  mb=$(( (bytes + 1048575) / 1048576 ))
  echo "gpu-check: staged $(du -sh "$out" | cut -f1) in $out (${bytes} bytes; limit ${MAX_BUNDLE_MB} MiB)"
  [ "$mb" -le "$MAX_BUNDLE_MB" ] || die "stage: the bundle is ${mb} MiB, over the ${MAX_BUNDLE_MB} MiB limit"
}

# --- running (bundle) ---------------------------------------------------------------------------

status=0
step() { echo; echo "== $*"; }
fail() { echo "FAILED: $*"; status=1; }

# The shared libraries a binary loads, as ldd lists them (the dynamic loader's own list without ldd).
list_libs() {
  if command -v ldd >/dev/null 2>&1; then ldd "$1"; else /lib64/ld-linux-x86-64.so.2 --list "$1"; fi
}

# Every carried binary's shared libraries must resolve before anything runs.
check_ldd() {
  local f name missing="" out
  for f in "$HERE"/dezero/libdezero.so* "${BINARIES[@]/#/$HERE/}" "${OPTIONAL_BINARIES[@]/#/$HERE/}"; do
    [ -e "$f" ] || continue   # an optional binary this bundle does not carry
    name=${f#"$HERE"/}
    out=$(list_libs "$f" 2>&1) || { missing+="  $name: $out"$'\n'; continue; }
    out=$(grep "not found" <<<"$out" || true)
    [ -n "$out" ] && missing+="  $name:"$'\n'"$(sed 's/^\s*/    /' <<<"$out")"$'\n'
  done
  if [ -n "$missing" ]; then
    echo "gpu-check: shared libraries not found on this machine (nothing was run):"
    printf '%s' "$missing"
    exit 2
  fi
  echo "every carried binary's shared libraries resolve (ldd)"
}

# Folders that may hold the CUDA libraries: the toolkit's, then those of the pip wheels
# (nvidia/<package>/lib; `nvidia` is a namespace package, so it has no __file__).
candidate_dirs() {
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib /usr/local/cuda-*/targets/x86_64-linux/lib; do
    [ -d "$d" ] && echo "$d"
  done
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - <<'EOF' 2>/dev/null || true
import importlib.util, os
s = importlib.util.find_spec("nvidia")
for base in (list(s.submodule_search_locations) if s else []):
    for d in sorted(os.listdir(base)):
        p = os.path.join(base, d, "lib")
        if os.path.isdir(p): print(p)
EOF
}

# Finds the libraries libdezero loads at run time; sets DZ_LIB_DIRS (the folders, in order)
# and returns 1 when a required one is missing. cuDNN is optional: without it the convolutions
# use im2col + cuBLAS. (cuDNN 9's libcudnn.so.9 loads its sub-libraries, libcudnn_cnn.so.9 and
# the others, from its own folder, which is then on the path too.)
DZ_LIB_DIRS=""
find_cuda_libs() {
  local sonames names=() name d f found where missing=0
  sonames=$(sed -n 's/^cuda-libs: *//p' "$HERE/MANIFEST")
  if [ -z "$sonames" ]; then
    echo "libdezero was built without the CUDA backend: no GPU libraries to look for"
    return 0
  fi
  for name in $sonames; do
    case "$name" in
      libcublas.so.*) names+=("$name" "${name/libcublas/libcublasLt}") ;;
      libnvrtc.so.*) names+=("$name" "libnvrtc-builtins.so.${name#libnvrtc.so.}.*") ;;
      *) names+=("$name") ;;
    esac
  done
  local dirs=() seen=" "
  while IFS= read -r d; do
    d=$(readlink -f "$d")
    case "$seen" in *" $d "*) continue ;; esac
    seen+="$d "
    dirs+=("$d")
  done < <(candidate_dirs)
  echo "searched: ${dirs[*]:-(no CUDA toolkit folder, no pip wheels of nvidia)}"
  for name in "${names[@]}"; do
    found="" where=""
    for d in "${dirs[@]}"; do
      # shellcheck disable=SC2086  # the builtins' name is a pattern
      f=$(ls -d "$d"/$name 2>/dev/null | head -1 || true)
      [ -n "$f" ] && { found=$f; where=$d; break; }
    done
    if [ -z "$found" ]; then
      found=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) |
               sed -n "s/^\s*\(${name//\*/[0-9]*}\) .*=> \(.*\)/\2/p" | head -1)
      [ -n "$found" ] && found="$found (system library path)"
    fi
    if [ -n "$found" ]; then
      printf '  %-28s %s\n' "$name:" "$found"
      if [ -n "$where" ]; then
        case ":$DZ_LIB_DIRS:" in *":$where:"*) ;; *) DZ_LIB_DIRS="${DZ_LIB_DIRS:+$DZ_LIB_DIRS:}$where" ;; esac
      fi
    elif [[ $name == libcudnn.so.* ]]; then
      printf '  %-28s %s\n' "$name:" "not found (optional: convolutions then use im2col + cuBLAS)"
    else
      printf '  %-28s %s\n' "$name:" "NOT FOUND"
      missing=1
    fi
  done
  return $missing
}

# Runs one of dezero's programs with its library search path; nothing else sees it.
dz() {
  if [ -n "$DZ_LD" ]; then env LD_LIBRARY_PATH="$DZ_LD" DEZERO_TEST_DATA_DIR="$DATA" "$@"
  else env -u LD_LIBRARY_PATH DEZERO_TEST_DATA_DIR="$DATA" "$@"; fi
}

# A carried program's cheap mode: it must start and exit 0.
starts() {
  local what="$*"
  if dz "$HERE/$1" "${@:2}" >"$RUNS/start.log" 2>&1; then echo "$what: ok"
  else fail "$what (exit $?)"; sed 's/^/  /' "$RUNS/start.log"; fi
}

# The test suite, with its summary and the slowest test cases; $1 = timeout in seconds.
run_suite() {
  local log="$RUNS/tests.log" t0=$SECONDS rc=0
  dz timeout "$1" "$HERE/tests/dezero_tests" --no-intro --duration=true >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then   # the failures, without the "skipped" messages and progress bars
    grep -v -E '^[0-9.]+ s: |^Downloading: |^\[#|MESSAGE: skipped' "$log" |
      grep -E -B4 -A6 'ERROR|error:|exception|timed out' | head -n 150 || true
  fi
  grep '^\[doctest\]' "$log" || true
  echo "slowest test cases:"
  grep -E '^[0-9.]+ s: ' "$log" | sort -rn | head -5 | sed 's/^/  /' || true
  echo "test suite: exit $rc in $((SECONDS - t0)) s (full output: $log)"
  [ "$rc" -eq 124 ] && echo "test suite: timed out after $1 s"
  return $rc
}

run_bundle() {
  local mode=${1:-gpu}
  [ -f "$HERE/MANIFEST" ] || die "$HERE is not a bundle"
  DATA="$HERE/tests/data"
  RUNS="$HERE/runs"
  mkdir -p "$RUNS" 2>/dev/null && [ -w "$RUNS" ] || RUNS=$(mktemp -d)
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$([ "$mode" = gpu ] && echo 8 || echo 2)}"
  sed -n '1,4p' "$HERE/MANIFEST"
  echo "bundle: $HERE ($(du -sh "$HERE" | cut -f1))"

  step "shared libraries"
  check_ldd

  step "GPU libraries loaded at run time"
  if [ "$mode" = gpu ]; then
    nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"
    local driver
    driver=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -1)
    echo "driver: ${driver:-libcuda.so.1 is not in the system library path}"
    find_cuda_libs || fail "a GPU library dezero needs was not found"
    DZ_LD="${DZ_LIB_DIRS}${LD_LIBRARY_PATH:+${DZ_LIB_DIRS:+:}$LD_LIBRARY_PATH}"
  else
    find_cuda_libs || true
    echo "(the smoke test runs on the CPU: none of these folders is used)"
    DZ_LD="${LD_LIBRARY_PATH:-}"
  fi
  echo "LD_LIBRARY_PATH for dezero's programs: ${DZ_LD:-(none)}"
  echo "test data: $DATA"

  if [ "$mode" = smoke ]; then
    step "every program starts"
    starts examples/mnist --help
    starts examples/mnist_cnn --help
    starts bench/w3_overhead --steps 10
    starts bench/w1_mlp_epoch --epochs 0
    starts examples/gan --help
    starts bench/w4_resnet50 --batch 1 --warmup 0 --steps 1
    starts tests/dezero_tests --no-intro --count
    if [ -x "$HERE/examples/mnist_cnn" ]; then starts examples/mnist_cnn --help
    else echo "(no examples/mnist_cnn in this bundle)"; fi

    step "the MNIST step's data folder holds the data set"
    local fm="$HERE/data/fashion-mnist"
    if [ -d "$fm" ]; then
      if (cd "$RUNS" && dz "$HERE/examples/mnist" --device cpu --epochs 0 --dataset fashion-mnist --data "$fm") \
           >"$RUNS/mnist-data.log" 2>&1 && grep -q "dataset: Fashion-MNIST" "$RUNS/mnist-data.log"; then
        echo "examples/mnist --data $fm loads Fashion-MNIST from the bundle: ok"
      else fail "examples/mnist did not load Fashion-MNIST from $fm"; sed 's/^/  /' "$RUNS/mnist-data.log"; fi
    else
      echo "(no data/fashion-mnist in this bundle)"
    fi

    step "the tests read their data from DEZERO_TEST_DATA_DIR"
    local nowhere="$RUNS/no-such-data" out
    out=$(env -u LD_LIBRARY_PATH DEZERO_TEST_DATA_DIR="$nowhere" "$HERE/tests/dezero_tests" --no-intro \
          --source-file='*test_tensor.cpp' 2>&1 || true)
    if grep -q "fixtures: cannot open $nowhere/" <<<"$out"; then echo "with DEZERO_TEST_DATA_DIR=$nowhere the fixtures are looked for there: ok"
    else fail "the tests did not look for their fixtures in DEZERO_TEST_DATA_DIR"; fi

    step "test suite (CPU; the CUDA subcases skip)"
    if run_suite 300; then
      local skips
      skips=$(grep -c "skipped: no CUDA device" "$RUNS/tests.log" || true)
      if [ "$skips" -gt 0 ]; then echo "CUDA cases: $skips say \"skipped: no CUDA device\""
      else fail "no test printed \"skipped: no CUDA device\""; fi
    else
      fail "test suite"
    fi
  else
    step "test suite (CPU and CUDA subcases)"
    run_suite 300 || fail "test suite"
    if grep -q "skipped: no CUDA device" "$RUNS/tests.log"; then
      fail "the CUDA cases were skipped: dezero sees no GPU here"
    fi

    step "MNIST example, 1 epoch on the GPU (Fashion-MNIST, carried)"
    local fm="$HERE/data/fashion-mnist"
    if [ -f "$fm/train-images-idx3-ubyte.gz" ]; then
      (cd "$RUNS" && dz timeout 300 "$HERE/examples/mnist" --device cuda --epochs 1 --dataset fashion-mnist \
         --data "$fm" --plot gpu_mnist.png) || fail "examples/mnist"
    else
      fail "the bundle has no Fashion-MNIST ($fm)"
    fi

    step "convolutions and pooling on the GPU: cuDNN (version, timings), then the im2col path (DEZERO_CUDNN=0)"
    local conv_log="$RUNS/conv.log"
    if dz timeout 120 "$HERE/tests/dezero_tests" --no-intro --source-file='*test_cuda_conv.cpp,*test_cuda_pool.cpp' \
         >"$conv_log" 2>&1; then
      echo "tests/test_cuda_conv.cpp, tests/test_cuda_pool.cpp: ok"
    else
      fail "tests/test_cuda_conv.cpp, tests/test_cuda_pool.cpp"; grep -v 'MESSAGE: skipped: no CUDA' "$conv_log" | tail -n 60
    fi
    grep -E 'MESSAGE: (cuDNN [0-9]+ from|cudnn timing:|skipped)' "$conv_log" | grep -v 'skipped: no CUDA device' |
      sed 's/^.*MESSAGE: /  /' | uniq || true
    grep -q 'skipped: cuDNN is not used' "$conv_log" && echo "NOTE: cuDNN was not used: the GPU convolutions ran on im2col"
    grep '^\[doctest\] test cases' "$conv_log" || true
    if dz env DEZERO_CUDNN=0 timeout 120 "$HERE/tests/dezero_tests" --no-intro --source-file='*conv*,*pool*' \
         --source-file-exclude='*test_cuda_conv.cpp' >"$RUNS/conv-im2col.log" 2>&1; then
      echo "convolution tests with DEZERO_CUDNN=0: ok ($(grep '^\[doctest\] test cases' "$RUNS/conv-im2col.log" || true))"
    else
      fail "convolution tests with DEZERO_CUDNN=0"; tail -n 40 "$RUNS/conv-im2col.log"
    fi

    step "CNN MNIST example, 1 epoch on the GPU (Fashion-MNIST, carried)"
    if [ -f "$fm/train-images-idx3-ubyte.gz" ]; then
      (cd "$RUNS" && dz timeout 300 "$HERE/examples/mnist_cnn" --device cuda --epochs 1 --dataset fashion-mnist \
         --data "$fm" --plot gpu_mnist_cnn.png) || fail "examples/mnist_cnn"
      step "W2 (the small CNN) on the GPU"
      dz timeout 120 "$HERE/bench/w2_cnn" --device cuda --epochs 2 --data "$fm" || fail "bench/w2_cnn"
    else
      fail "the bundle has no Fashion-MNIST ($fm)"
    fi

    step "DCGAN example, 1 epoch on the GPU (Fashion-MNIST, carried; grids of samples in runs/gan)"
    if [ -f "$fm/train-images-idx3-ubyte.gz" ]; then
      (cd "$RUNS" && dz timeout 300 "$HERE/examples/gan" --device cuda --epochs 1 --dataset fashion-mnist \
         --data "$fm" --out gan) || fail "examples/gan"
    else
      fail "the bundle has no Fashion-MNIST ($fm)"
    fi

    step "W4: ResNet50 forward + backward, (8, 3, 224, 224) float32, on the GPU"
    dz timeout 180 "$HERE/bench/w4_resnet50" --device cuda --steps 10 || fail "bench/w4_resnet50"
    step "W4 on the GPU without cuDNN (DEZERO_CUDNN=0: im2col + cuBLAS)"
    dz env DEZERO_CUDNN=0 timeout 180 "$HERE/bench/w4_resnet50" --device cuda --steps 5 || fail "bench/w4_resnet50 (DEZERO_CUDNN=0)"

    step "W1 / W3 on the GPU"
    dz timeout 120 "$HERE/bench/w1_mlp_epoch" --device cuda --epochs 2 || fail "bench/w1_mlp_epoch"
    dz timeout 120 "$HERE/bench/w3_overhead" --device cuda --steps 5000 || fail "bench/w3_overhead"

    if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
      step "PyTorch side by side (W1 on the GPU)"
      DEZERO_LD_LIBRARY_PATH="$DZ_LD" timeout 300 python3 "$HERE/bench/compare_pytorch.py" --build "$HERE" \
        --device cuda --only w1 || fail "bench/compare_pytorch.py"
    else
      step "PyTorch is not installed (or sees no GPU) here: no side-by-side figure"
    fi
  fi

  echo
  if [ $status -eq 0 ]; then echo "gpu-check ($mode): PASSED"; else echo "gpu-check ($mode): FAILED"; fi
  return $status
}

# --- the dry run (source tree) ------------------------------------------------------------------

DRY_TMP=""
dry_run() {
  local build=$1 tmp log rc=0
  DRY_TMP=$(mktemp -d)
  trap 'rm -rf "$DRY_TMP"' EXIT
  tmp=$DRY_TMP
  stage "$build" "$tmp/gpu-bundle" --allow-no-data
  log="$tmp/dry-run.log"
  echo "gpu-check: running the bundle in $tmp/gpu-bundle with a clean environment"
  env -i PATH=/usr/bin:/bin HOME="$tmp" bash "$tmp/gpu-bundle/gpu-check.sh" --smoke 2>&1 | tee "$log" || rc=$?
  [ "$rc" -eq 0 ] || die "dry run: the bundle's smoke test failed (exit $rc)"
  grep -qx "test data: $tmp/gpu-bundle/tests/data" "$log" || die "dry run: the tests did not read the bundle's data"
  echo "gpu-check: dry run PASSED (bundle $(du -sh "$tmp/gpu-bundle" | cut -f1))"
}

# --- main -----------------------------------------------------------------------------------------

if [ -f "$HERE/MANIFEST" ]; then   # a bundle
  case "${1:-}" in
    "") run_bundle gpu ;;
    --smoke) run_bundle smoke ;;
    -h|--help) usage ;;
    *) die "unknown option $1 (in a bundle: no option, or --smoke)" ;;
  esac
  exit $?
fi

ROOT="$(cd "$HERE/.." && pwd)"
case "${1:-}" in
  --build)
    cd "$ROOT"
    # shellcheck source=deps.sh
    source tools/deps.sh
    dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" dataset-fashion-mnist
    # Without oneDNN: libdnnl.so.2 (40 MB) would not fit the bundle, and the GPU machine may lack it.
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDEZERO_CUDA=ON -DDEZERO_NATIVE=OFF -DDEZERO_BENCH_LIBTORCH=OFF \
      -DDEZERO_ONEDNN=OFF >/dev/null
    cmake --build build-gpu -j"${JOBS:-$(nproc)}"
    stage build-gpu gpu-bundle
    echo "gpu-check: carry gpu-bundle/ to the GPU machine and run there: bash gpu-bundle/gpu-check.sh"
    ;;
  --stage)
    [ $# -eq 3 ] || die "usage: tools/gpu-check.sh --stage BUILD_DIR OUT_DIR"
    stage "$2" "$3"
    ;;
  --dry-run)
    [ $# -le 2 ] || die "usage: tools/gpu-check.sh --dry-run [BUILD_DIR]"
    dry_run "${2:-$ROOT/build}"
    ;;
  -h|--help) usage ;;
  "")
    [ -f "$ROOT/gpu-bundle/MANIFEST" ] || die "no bundle in $ROOT/gpu-bundle; make one with: bash tools/gpu-check.sh --build"
    exec bash "$ROOT/gpu-bundle/gpu-check.sh"
    ;;
  *) die "unknown option $1 (see: bash tools/gpu-check.sh --help)" ;;
esac
