#!/usr/bin/env bash
# tools/gpu-check.sh - the GPU check. It runs from a bundle: one compact folder that holds only
# what the check needs (libdezero and the libgomp it NEEDs, the test suite, examples/mnist, mnist_cnn
# and gan, the W1-W4 benchmarks, bench/compare_pytorch.py, the test data, Fashion-MNIST and a copy of
# this script), so it can be carried to a GPU machine that has no compiler, no packages and no network,
# and run there from wherever it lands.
#
# In the source tree:
#   bash tools/gpu-check.sh --build               # portable build into build-gpu/, staged into gpu-bundle/
#   bash tools/gpu-check.sh --stage BUILD OUT [--allow-no-data]
#                                                 # stage a bundle from any build folder into OUT
#   bash tools/gpu-check.sh --dry-run [BUILD]     # stage from BUILD (default build) into a temporary folder
#                                                 # and check, with a clean environment, that it runs there
# In a bundle:
#   bash gpu-bundle/gpu-check.sh [--quick | --rest] [--deadline SECONDS]
#       on the GPU machine: the checks. By default all of them: the convolution, pooling and batch
#       norm tests with cuDNN, one epoch of examples/mnist, W1, the test suite on CUDA (these four are
#       --quick, about 4 minutes), then those tests with DEZERO_CUDNN=0, one epoch of mnist_cnn, W2, W4 (also with
#       DEZERO_CUDNN=0), W3, one epoch of gan, PyTorch's W1 and W4 when it sees the GPU (these are
#       --rest: a second call after --quick). Under a device runner that returns $OUT and the end
#       of the output: DEZERO_GPU_CHECK_RUNS=$OUT bash gpu-bundle/gpu-check.sh --quick --deadline 280
#   bash gpu-bundle/gpu-check.sh --smoke          # on a machine without a GPU: every program starts and
#                                                 # the test suite passes on the CPU (what --dry-run runs)
#   bash gpu-bundle/gpu-check.sh --libs-only      # the library steps alone, as on the GPU machine
#   --deadline SECONDS, counted from the start: a step that would start after it is skipped (SKIP ...
#   deadline), and every step's timeout is cut to the time left, so the summary comes before it.
#
# The check ends with its summary, printed last: one line per step (PASS / FAIL / SKIP, seconds, the
# key figure), then the verdict. Exit status: 0 every step that ran passed; 1 a step failed; 2 a
# library is missing, nothing else ran; 3 nothing failed, but the deadline skipped steps.
#
# Environment, in a bundle:
#   DEZERO_GPU_CHECK_RUNS=DIR   every log (gpu-check.log, the steps' logs, summary.txt, the examples'
#                               outputs) goes there; default: runs/ in the bundle. On the device
#                               runner: DEZERO_GPU_CHECK_RUNS=$OUT
#   DEZERO_CUDA_LIB_PATH=D1:D2  folders searched first for cuBLAS, cuRAND, NVRTC and cuDNN
#   DEZERO_CUDNN=0              the GPU check without cuDNN: its absence is then no failure
#   DEZERO_GPU_CHECK_ONLY_LIB_PATH=1   search DEZERO_CUDA_LIB_PATH alone (the tests' fake folders)
#
# The binaries find libdezero.so through their RUNPATH ($ORIGIN/../dezero), libdezero finds the
# bundle's libgomp.so.1 through LD_LIBRARY_PATH (it has no RUNPATH), the tests find their data through DEZERO_TEST_DATA_DIR. The CUDA runtime is linked statically; cuBLAS,
# cuRAND, NVRTC and cuDNN are loaded on first use, so the check looks for them (DEZERO_CUDA_LIB_PATH,
# the CUDA toolkit, then the pip wheels of NVIDIA and PyTorch, found through every python it sees and
# in the usual site-packages folders) and puts the folders where it found them on LD_LIBRARY_PATH
# for dezero's own programs only, never for python or PyTorch.
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
usage() { sed -n '2,/^# The binaries find/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; }

# An ELF file's RUNPATH (or RPATH), colon-separated.
runpath_of() { readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p'; }

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
  cp "$root/bench/compare_pytorch.py" "$root/bench/cpu_isa.py" "$out/bench/"
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

  # libgomp (OpenMP), which libdezero NEEDs, travels next to it (about 300 KB): a pip-only image
  # may have no libgomp1 (PyTorch's wheels carry their own copy for that reason). libdezero has no
  # RUNPATH of its own (a RUNPATH is not inherited from the binaries), so the check puts dezero/
  # first on its programs' library path.
  local gomp=""
  if readelf -d "$out/dezero/$lib" | grep -q '(NEEDED).*\[libgomp\.so\.1\]'; then
    gomp=$(ldd "$build/dezero/$lib" 2>/dev/null | sed -n 's/^\s*libgomp\.so\.1 => \(\/[^ ]*\).*/\1/p' | head -1)
    [ -n "$gomp" ] || die "stage: libdezero NEEDs libgomp.so.1, which does not resolve on this machine"
    cp -L "$gomp" "$out/dezero/libgomp.so.1"
  fi

  # Every RUNPATH must be relative to the binary ($ORIGIN/...), and must resolve inside the bundle.
  local elf rp entry bad=""
  for elf in "$out/dezero/$lib" "${carried[@]/#/$out/}"; do
    rp=$(runpath_of "$elf")
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
    if [ -n "$gomp" ]; then echo "libgomp: carried as dezero/libgomp.so.1, from $gomp"; else echo "libgomp: not NEEDed"; fi
  } >"$out/MANIFEST"

  local bytes mb
  bytes=$(du -sb "$out" | cut -f1)
  mb=$(( (bytes + 1048575) / 1048576 ))
  echo "gpu-check: staged $(du -sh "$out" | cut -f1) in $out (${bytes} bytes; limit ${MAX_BUNDLE_MB} MiB)"
  [ "$mb" -le "$MAX_BUNDLE_MB" ] || die "stage: the bundle is ${mb} MiB, over the ${MAX_BUNDLE_MB} MiB limit"
}

# --- time: the global deadline (bundle) ---------------------------------------------------------

# Milliseconds since the epoch: bash 5's EPOCHREALTIME (its decimal point may be a comma), else date.
now_ms() {
  if [ -n "${EPOCHREALTIME:-}" ]; then local t=${EPOCHREALTIME//[!0-9]/}; echo $(( t / 1000 ))
  else date +%s%3N; fi
}
START_MS=$(now_ms)
DEADLINE=""   # --deadline SECONDS
STOP_MS=""    # when every step must have stopped: the deadline less a reserve for the summary

set_deadline() {
  local reserve=$(( $1 * 100 ))   # 10 %, at most 10 s: room for a killed program to go and the summary
  [ "$reserve" -le 10000 ] || reserve=10000
  DEADLINE=$1
  STOP_MS=$(( START_MS + DEADLINE * 1000 - reserve ))
}
left_ms() { if [ -z "$STOP_MS" ]; then echo 999999999; else echo $(( STOP_MS - $(now_ms) )); fi; }
secs() { printf '%d.%d' $(( $1 / 1000 )) $(( $1 % 1000 / 100 )); }   # milliseconds, as seconds with one decimal

# timed LIMIT COMMAND...: COMMAND under a timeout of LIMIT seconds, cut to the time left before the
# deadline. When the cut timeout stops it, or the deadline has passed and it does not start, the
# step is marked as cut: it did not fail, it ran out of time. (timeout runs in the background so
# that a signal to this script is handled at once, not when the program ends.)
TIMED_PID=""
timed() {
  local limit_ms=$(( $1 * 1000 )) left rc=0 cut=""
  shift
  left=$(left_ms)
  if [ "$left" -le 0 ]; then
    STEP_CUT=1; echo "(not started: the deadline has passed)"; return 124
  fi
  if [ "$left" -ge "$limit_ms" ]; then
    timeout -k 5 "$(( limit_ms / 1000 ))" "$@" &
  else
    cut=yes
    timeout -k 2 "$(printf '%d.%03d' $(( left / 1000 )) $(( left % 1000 )))" "$@" &
  fi
  TIMED_PID=$!
  wait "$TIMED_PID" || rc=$?
  TIMED_PID=""
  if [ -n "$cut" ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then STEP_CUT=1; fi
  return "$rc"
}

# --- steps and the summary (bundle) -------------------------------------------------------------

SUMMARY=()        # one line per step
NFAIL=0 NCUT=0
STOPPED=""        # why the check stopped early (exit 2)
CURRENT_STEP=""
RUNS="" MODE_NAME=""
# What the running step found: its failures, whether the deadline cut it, a reason of its own to
# skip, and its key figure.
STEP_FAILS=0 STEP_WHY="" STEP_CUT=0 STEP_SKIP="" FIGURE=""

fail() {
  [ "$STEP_CUT" = 1 ] && return 0   # what the deadline stopped did not fail
  echo "FAILED: $*"
  STEP_FAILS=$(( STEP_FAILS + 1 ))
  STEP_WHY+="${STEP_WHY:+; }$*"
}
skip() { STEP_SKIP=$*; echo "SKIP: $*"; }

# record STATE TITLE MILLISECONDS NOTE: one line of the summary (MILLISECONDS "" when it did not run).
record() {
  local t="-"
  [ -z "$3" ] || t="$(secs "$3") s"
  SUMMARY+=("$(printf '%-4s %8s  %-28s %s' "$1" "$t" "$2" "$4")")
  case "$1" in
    FAIL) NFAIL=$(( NFAIL + 1 )) ;;
    SKIP) case "$4" in deadline*) NCUT=$(( NCUT + 1 )) ;; esac ;;
  esac
  [ -z "$RUNS" ] || summary_text >"$RUNS/summary.txt" 2>/dev/null || true
}

# run_step TITLE FUNCTION ARGS...: the step's header, then FUNCTION unless the deadline has
# passed, then its line of the summary.
run_step() {
  local title=$1 fn=$2 t0 ms left
  shift 2
  STEP_FAILS=0 STEP_WHY="" STEP_CUT=0 STEP_SKIP="" FIGURE=""
  left=$(left_ms)
  echo
  if [ "$left" -le 0 ]; then
    echo "== $title: SKIP, the deadline (${DEADLINE} s) has passed"
    record SKIP "$title" "" "deadline: not started (--deadline $DEADLINE)"
    return 0
  fi
  if [ -n "$STOP_MS" ]; then echo "== $title ($(secs "$left") s left)"; else echo "== $title"; fi
  CURRENT_STEP=$title
  t0=$(now_ms)
  "$fn" "$@" || true
  ms=$(( $(now_ms) - t0 ))
  CURRENT_STEP=""
  if [ "$STEP_FAILS" -gt 0 ]; then record FAIL "$title" "$ms" "$STEP_WHY${FIGURE:+ | $FIGURE}"
  elif [ "$STEP_CUT" = 1 ]; then record SKIP "$title" "$ms" "deadline: stopped unfinished after $(secs "$ms") s${FIGURE:+ | $FIGURE}"
  elif [ -n "$STEP_SKIP" ]; then record SKIP "$title" "$ms" "$STEP_SKIP${FIGURE:+ | $FIGURE}"
  else record PASS "$title" "$ms" "$FIGURE"; fi
}

VERDICT=""
verdict() {
  local n=${#SUMMARY[@]}
  if [ -n "$STOPPED" ]; then VERDICT="STOPPED: $STOPPED; nothing else ran"; return 2
  elif [ "$NFAIL" -gt 0 ]; then VERDICT="FAILED ($NFAIL of $n steps)"; return 1
  elif [ "$NCUT" -gt 0 ]; then VERDICT="INCOMPLETE: nothing failed, but the deadline skipped $NCUT of $n steps"; return 3
  else VERDICT="PASSED"; return 0; fi
}

summary_text() {
  local line
  verdict || true
  echo "== summary: $(secs $(( $(now_ms) - START_MS ))) s${DEADLINE:+ of a $DEADLINE s deadline}; logs in $RUNS"
  for line in "${SUMMARY[@]}"; do echo "$line"; done
  echo "gpu-check ($MODE_NAME): $VERDICT"
}

# The summary and the verdict, printed last (and kept in $RUNS/summary.txt); exits with the status.
finish() {
  local rc=0
  verdict || rc=$?
  [ -z "$RUNS" ] || summary_text >"$RUNS/summary.txt" 2>/dev/null || true
  echo
  summary_text
  exit "$rc"
}

# Killed (by the runner's own limit, say): the summary still comes out, the running step as FAIL.
on_signal() {
  trap - TERM INT
  exec >&3 2>&1   # the console again: the signal may come while a step's output goes to its log
  echo
  echo "gpu-check: SIG$1 received"
  [ -z "$TIMED_PID" ] || kill -TERM "$TIMED_PID" 2>/dev/null || true   # our timeout, which passes it on
  [ -z "$CURRENT_STEP" ] || record FAIL "$CURRENT_STEP" "" "killed by SIG$1 before it ended"
  CURRENT_STEP=""
  finish
}

# --- finding the libraries (bundle) -------------------------------------------------------------

# The shared libraries a binary loads, as ldd lists them (the dynamic loader's own list without ldd).
list_libs() {
  if command -v ldd >/dev/null 2>&1; then ldd "$1"; else /lib64/ld-linux-x86-64.so.2 --list "$1"; fi
}

# What ldd cannot resolve in the carried binaries, as "  binary:\n    lib => not found" lines.
ldd_missing() {
  local f name missing="" out
  for f in "$HERE"/dezero/libdezero.so* "${BINARIES[@]/#/$HERE/}" "${OPTIONAL_BINARIES[@]/#/$HERE/}"; do
    [ -e "$f" ] || continue   # an optional binary this bundle does not carry
    name=${f#"$HERE"/}
    if ! out=$(list_libs "$f" 2>&1); then missing+="  $name: $out"$'\n'; continue; fi
    out=$(grep "not found" <<<"$out" || true)
    if [ -n "$out" ]; then missing+="  $name:"$'\n'"$(sed 's/^\s*/    /' <<<"$out")"$'\n'; fi
  done
  printf '%s' "$missing"
}

# The python interpreters that may see PyTorch or NVIDIA's wheels: python3, python, the active
# virtual environment's and conda environment's, conda's usual one.
pythons() {
  local p seen=" "
  for p in "$(command -v python3 || true)" "$(command -v python || true)" "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}" \
           "${CONDA_PREFIX:+$CONDA_PREFIX/bin/python}" /opt/conda/bin/python; do
    if [ -n "$p" ] && [ -x "$p" ] && [[ $seen != *" $p "* ]]; then seen+="$p "; echo "$p"; fi
  done
}

# What one python knows: nvidia/<package>/lib (`nvidia` is a namespace package, so it has no
# __file__), torch/lib, and the same under its site-packages folders (without importing either).
WHEEL_DIRS_PY='
import glob, importlib.util, os, site
pats = []
try:
    s = importlib.util.find_spec("nvidia")
    for b in (list(s.submodule_search_locations) if s else []):
        pats += [os.path.join(b, "*", "lib"), os.path.join(b, "*", "lib64")]
except Exception:
    pass
try:
    t = importlib.util.find_spec("torch")
    if t and t.origin:
        pats.append(os.path.join(os.path.dirname(t.origin), "lib"))
except Exception:
    pass
sites = []
try:
    sites += site.getsitepackages()
except Exception:
    pass
try:
    sites.append(site.getusersitepackages())
except Exception:
    pass
for b in sites:
    pats += [os.path.join(b, "nvidia", "*", "lib"), os.path.join(b, "nvidia", "*", "lib64"), os.path.join(b, "torch", "lib")]
for p in pats:
    for d in sorted(glob.glob(p)):
        if os.path.isdir(d):
            print(d)
'

# The usual site-packages and dist-packages folders, for a python this script does not see.
site_dirs() {
  local pre sp
  for pre in /usr /usr/local /opt/conda "${HOME:-/nonexistent}/.local" ${VIRTUAL_ENV:+"$VIRTUAL_ENV"} ${CONDA_PREFIX:+"$CONDA_PREFIX"}; do
    for sp in "$pre"/lib/python3*/site-packages "$pre"/lib/python3*/dist-packages "$pre"/lib/python3/dist-packages; do
      if [ -d "$sp" ]; then echo "$sp"; fi
    done
  done
}

# Folders that may hold the CUDA libraries, in order: DEZERO_CUDA_LIB_PATH's, the toolkit's, then
# the pip wheels' (nvidia/*/lib, torch/lib) that some python or a site-packages folder shows.
candidate_dirs() {
  local d p sp parts=()
  IFS=: read -ra parts <<<"${DEZERO_CUDA_LIB_PATH:-}"
  for d in "${parts[@]}"; do
    if [ -n "$d" ] && [ -d "$d" ]; then echo "$d"; fi
  done
  if [ "${DEZERO_GPU_CHECK_ONLY_LIB_PATH:-}" = 1 ]; then return 0; fi
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib /usr/local/cuda-*/targets/x86_64-linux/lib; do
    if [ -d "$d" ]; then echo "$d"; fi
  done
  while IFS= read -r p; do
    timeout 30 "$p" -c "$WHEEL_DIRS_PY" 2>/dev/null || true
  done < <(pythons)
  while IFS= read -r sp; do
    for d in "$sp"/nvidia/*/lib "$sp"/nvidia/*/lib64 "$sp"/torch/lib; do
      if [ -d "$d" ]; then echo "$d"; fi
    done
  done < <(site_dirs)
}

# The candidate folders, each once (by real path), into SEARCHED_DIRS.
SEARCHED_DIRS=()
search_dirs() {
  local d seen=" "
  SEARCHED_DIRS=()
  while IFS= read -r d; do
    d=$(readlink -f "$d")
    case "$seen" in *" $d "*) continue ;; esac
    seen+="$d "
    SEARCHED_DIRS+=("$d")
  done < <(candidate_dirs)
}

lib_label() {
  case "$1" in
    libcublasLt.*) echo cuBLASLt ;; libcublas.*) echo cuBLAS ;; libcurand.*) echo cuRAND ;;
    libnvrtc-builtins*) echo "NVRTC's builtins" ;; libnvrtc.*) echo NVRTC ;; libcudnn.*) echo cuDNN ;;
    *) echo "$1" ;;
  esac
}

# Finds the libraries libdezero loads at run time: sets DZ_LIB_DIRS (the folders, in order),
# LIBS_MISSING (the required ones not found: cuBLAS, cuBLASLt, cuRAND, NVRTC, NVRTC's builtins)
# and CUDNN_MISSING (cuDNN's soname, when not found). (cuDNN 9's libcudnn.so.9 loads its
# sub-libraries, libcudnn_cnn.so.9 and the others, from its own folder, which is then on the path too.)
DZ_LIB_DIRS="" LIBS_MISSING="" CUDNN_MISSING="" NO_CUDA_BACKEND=""
find_cuda_libs() {
  local sonames names=() name d f found where
  DZ_LIB_DIRS="" LIBS_MISSING="" CUDNN_MISSING="" NO_CUDA_BACKEND=""
  sonames=$(sed -n 's/^cuda-libs: *//p' "$HERE/MANIFEST")
  if [ -z "$sonames" ]; then
    NO_CUDA_BACKEND=yes
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
  search_dirs
  echo "searched: ${SEARCHED_DIRS[*]:-(no folder: no DEZERO_CUDA_LIB_PATH, CUDA toolkit or pip wheels of NVIDIA or PyTorch)}"
  for name in "${names[@]}"; do
    found="" where=""
    for d in "${SEARCHED_DIRS[@]}"; do
      # shellcheck disable=SC2086  # the builtins' name is a pattern
      f=$(ls -d "$d"/$name 2>/dev/null | head -1 || true)
      if [ -n "$f" ]; then found=$f; where=$d; break; fi
    done
    if [ -z "$found" ] && [ "${DEZERO_GPU_CHECK_ONLY_LIB_PATH:-}" != 1 ]; then
      found=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) |
               sed -n "s/^\s*\(${name//\*/[0-9]*}\) .*=> \(.*\)/\2/p" | head -1)
      [ -z "$found" ] || found="$found (system library path)"
    fi
    if [ -n "$found" ]; then
      printf '  %-28s %s\n' "$name:" "$found"
      if [ -n "$where" ]; then
        case ":$DZ_LIB_DIRS:" in *":$where:"*) ;; *) DZ_LIB_DIRS="${DZ_LIB_DIRS:+$DZ_LIB_DIRS:}$where" ;; esac
      fi
    elif [[ $name == libcudnn.so.* ]]; then
      printf '  %-28s %s\n' "$name:" "NOT FOUND"
      CUDNN_MISSING=$name
    else
      printf '  %-28s %s\n' "$name:" "NOT FOUND"
      LIBS_MISSING+="${LIBS_MISSING:+, }$(lib_label "$name") ($name)"
    fi
  done
}

# The libgomp dezero's programs load: the bundle's own (dezero/libgomp.so.1, its folder first on
# their library path); else, where the system has none, PyTorch's hashed copy
# (torch/lib/libgomp-<hash>.so.1) or any libgomp in the candidate folders, linked as libgomp.so.1
# into a temporary folder that goes first instead. glibc matches the NEEDED name by the name it
# loaded the file under, so the link works (review L1).
GOMP_DIR="" GOMP_TMP=""
find_other_gomp() {
  local d f
  for d in "${SEARCHED_DIRS[@]}"; do
    f=$(ls "$d"/libgomp.so.1 "$d"/libgomp-*.so.1 2>/dev/null | head -1 || true)
    if [ -n "$f" ]; then
      GOMP_TMP=$(mktemp -d)
      ln -s "$f" "$GOMP_TMP/libgomp.so.1"
      GOMP_DIR=$GOMP_TMP
      echo "libgomp.so.1 is not on this machine, nor in the bundle: using $f (linked as $GOMP_TMP/libgomp.so.1)"
      return 0
    fi
  done
  return 1
}

# Joins its non-empty arguments with ':'.
path_join() {
  local p out=""
  for p in "$@"; do [ -z "$p" ] || out+="${out:+:}$p"; done
  echo "$out"
}

# --- the steps (bundle) ---------------------------------------------------------------------------
# Each step prints what it does, leaves its logs in $RUNS, sets FIGURE and calls fail or skip.

# Runs one of dezero's programs (under timed) with its library search path; nothing else sees it.
DZ_LD=""
run_dz() {
  local limit=$1
  shift
  if [ -n "$DZ_LD" ]; then timed "$limit" env LD_LIBRARY_PATH="$DZ_LD" DEZERO_TEST_DATA_DIR="$DATA" "$@"
  else timed "$limit" env -u LD_LIBRARY_PATH DEZERO_TEST_DATA_DIR="$DATA" "$@"; fi
}

# program_failed RC LIMIT WHAT LOG: the failure of a program that exited RC, with its log's end.
program_failed() {
  local rc=$1 limit=$2 what=$3 log=$4
  [ "$STEP_CUT" = 1 ] && return 0
  echo "$what: exit $rc; the end of $log:"
  grep -v -E '^[0-9.]+ s: |^Downloading: |^\[#|MESSAGE: skipped: no CUDA' "$log" | tail -n 40 | sed 's/^/  /' || true
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "$what timed out after $limit s"
  else fail "$what: exit $rc"; fi
}

# doctest's count of test cases in a log: "812 | 800 passed | 0 failed | 12 skipped".
doctest_cases() {
  local c
  c=$(sed -n 's/^\[doctest\] test cases: *//p' "$1" | tail -1 | tr -s ' ')
  echo "${c:+cases $c}"
}

# The reason a conv/pool test log gives for cuDNN not being used, if it says so: the library's
# "cuDNN unavailable: <reason>" (a failed cudnnCreate) first, else the tests' "skipped" message.
cudnn_not_used() {
  local log=$1 why
  why=$(grep -o -m1 'cuDNN unavailable: .*' "$log" || true)
  [ -n "$why" ] || why=$(grep -o -m1 -E 'skipped: cuDNN (is not used|does not load).*' "$log" | sed 's/^skipped: //' || true)
  [ -n "$why" ] || return 1
  echo "${why:0:300}"
}

step_shared_libs() {
  local missing gomp lib
  if [ -f "$HERE/dezero/libgomp.so.1" ]; then GOMP_DIR="$HERE/dezero"; fi
  missing=$(LD_LIBRARY_PATH="$(path_join "$GOMP_DIR" "${LD_LIBRARY_PATH:-}")" ldd_missing)
  if [ -z "$GOMP_DIR" ] && grep -q 'libgomp\.so\.1 => not found' <<<"$missing"; then
    search_dirs
    if find_other_gomp; then
      missing=$(LD_LIBRARY_PATH="$(path_join "$GOMP_DIR" "${LD_LIBRARY_PATH:-}")" ldd_missing)
    fi
  fi
  if [ -n "$missing" ]; then
    echo "gpu-check: shared libraries not found on this machine (nothing was run):"
    printf '%s' "$missing"
    STOPPED="shared libraries not found"
    fail "not found (ldd): $(grep -o '[^ ]* => not found' <<<"$missing" | sed 's/ =>.*//' | sort -u | tr '\n' ' ')(above)"
    return 0
  fi
  echo "every carried binary's shared libraries resolve (ldd)"
  lib=$(ls "$HERE"/dezero/libdezero.so* | head -1)
  gomp=$(LD_LIBRARY_PATH="$(path_join "$GOMP_DIR" "${LD_LIBRARY_PATH:-}")" list_libs "$lib" 2>/dev/null |
         sed -n 's/^\s*libgomp\.so\.1 => \([^ ]*\).*/\1/p' | head -1)
  FIGURE="ldd ok"
  if [ -n "$gomp" ]; then
    echo "libgomp.so.1: $gomp"
    if [[ $gomp == "$HERE"/* ]]; then FIGURE+="; libgomp from the bundle"
    elif [ -n "$GOMP_TMP" ] && [[ $gomp == "$GOMP_TMP"/* ]]; then FIGURE+="; libgomp: $(readlink "$GOMP_TMP/libgomp.so.1")"
    else FIGURE+="; libgomp: $gomp"; fi
  fi
}

step_gpu_libs() {
  local gpus=""
  if [ "$MODE" != smoke ]; then
    gpus=$(nvidia-smi -L 2>/dev/null || true)
    echo "${gpus:-(nvidia-smi not found, or it lists no GPU)}"
    gpus=$(head -n 1 <<<"$gpus" | sed 's/ (UUID.*//')
    local driver
    driver=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -1)
    echo "driver: ${driver:-libcuda.so.1 is not in the system library path}"
  fi
  find_cuda_libs
  if [ "$MODE" = smoke ]; then
    echo "(the smoke test runs on the CPU: none of these folders is used)"
    DZ_LD=$(path_join "$GOMP_DIR" "${LD_LIBRARY_PATH:-}")
    if [ -n "$NO_CUDA_BACKEND" ]; then FIGURE="no CUDA backend in this build"
    elif [ -n "$LIBS_MISSING$CUDNN_MISSING" ]; then
      FIGURE="not found: $LIBS_MISSING${CUDNN_MISSING:+${LIBS_MISSING:+, }cuDNN ($CUDNN_MISSING)} (not needed on the CPU)"
    else FIGURE="all found (not used on the CPU)"; fi
    return 0
  fi
  DZ_LD=$(path_join "$GOMP_DIR" "$DZ_LIB_DIRS" "${LD_LIBRARY_PATH:-}")
  FIGURE="cuBLAS, cuRAND, NVRTC"
  [ -n "$CUDNN_MISSING" ] || FIGURE+=", cuDNN"
  FIGURE+=" in ${DZ_LIB_DIRS:-the system library path}"
  [ -z "$NO_CUDA_BACKEND" ] || FIGURE="no CUDA backend in this build"
  [ -z "$gpus" ] || FIGURE="$gpus; $FIGURE"
  if [ -n "$LIBS_MISSING" ]; then
    echo "gpu-check: not found: $LIBS_MISSING"
    echo "  looked in: ${SEARCHED_DIRS[*]:-(no folder)}${DEZERO_GPU_CHECK_ONLY_LIB_PATH:+ (DEZERO_CUDA_LIB_PATH only)}"
    [ "${DEZERO_GPU_CHECK_ONLY_LIB_PATH:-}" = 1 ] || echo "  and the system library path (ldconfig -p)"
    echo "  DEZERO_CUDA_LIB_PATH=DIR1:DIR2 names the folders that hold them (searched first)"
    STOPPED="not found: $LIBS_MISSING"
    FIGURE=""
    fail "not found: $LIBS_MISSING; looked in ${SEARCHED_DIRS[*]:-(no folder)}"
    return 0
  fi
  if [ -n "$CUDNN_MISSING" ]; then
    if [ "${DEZERO_CUDNN:-}" = 0 ]; then
      echo "cuDNN is not found, and DEZERO_CUDNN=0 asks for the check without it"
      FIGURE+="; no cuDNN (DEZERO_CUDNN=0)"
    else
      fail "cuDNN ($CUDNN_MISSING) not found; looked in ${SEARCHED_DIRS[*]:-(no folder)} (DEZERO_CUDNN=0 checks without it)"
    fi
  fi
}

# --- the steps of the smoke test (CPU)

# A carried program's cheap mode: it must start and exit 0.
starts() {
  local what="$*" rc=0
  run_dz 120 "$HERE/$1" "${@:2}" >"$RUNS/start.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then echo "$what: ok"; STARTED=$(( STARTED + 1 ))
  else program_failed "$rc" 120 "$what" "$RUNS/start.log"; fi
}

STARTED=0
step_starts() {
  STARTED=0
  starts examples/mnist --help
  starts examples/mnist_cnn --help
  starts examples/gan --help
  starts bench/w1_mlp_epoch --epochs 0 --dataset synthetic
  starts bench/w3_overhead --steps 10
  starts bench/w4_resnet50 --batch 1 --warmup 0 --steps 1
  starts tests/dezero_tests --no-intro --count
  FIGURE="$STARTED programs started"
}

step_data_folder() {
  local rc=0 log="$RUNS/mnist-data.log"
  if [ ! -d "$FM" ]; then skip "no data/fashion-mnist in this bundle"; return 0; fi
  run_dz 120 "$HERE/examples/mnist" --device cpu --epochs 0 --dataset fashion-mnist --data "$FM" >"$log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ] && grep -q "dataset: Fashion-MNIST" "$log"; then
    echo "examples/mnist --data $FM loads Fashion-MNIST from the bundle: ok"
    FIGURE="Fashion-MNIST loads from the bundle"
  elif [ "$rc" -ne 0 ]; then program_failed "$rc" 120 "examples/mnist --epochs 0" "$log"
  else fail "examples/mnist did not load Fashion-MNIST from $FM"; sed 's/^/  /' "$log"; fi
}

step_fixture_dir() {
  local nowhere="$RUNS/no-such-data" log="$RUNS/fixtures.log"
  run_dz 120 env DEZERO_TEST_DATA_DIR="$nowhere" "$HERE/tests/dezero_tests" --no-intro \
    --source-file='*test_tensor.cpp' >"$log" 2>&1 || true
  if grep -q "fixtures: cannot open $nowhere/" "$log"; then
    echo "with DEZERO_TEST_DATA_DIR=$nowhere the fixtures are looked for there: ok"
    FIGURE="the fixtures are looked for there"
  else fail "the tests did not look for their fixtures in DEZERO_TEST_DATA_DIR"; fi
}

# The test suite, with its summary and the slowest test cases; returns its exit status.
run_suite() {
  local log="$RUNS/tests.log" rc=0
  run_dz 300 "$HERE/tests/dezero_tests" --no-intro --duration=true >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then   # the failures, without the "skipped" messages and progress bars
    grep -v -E '^[0-9.]+ s: |^Downloading: |^\[#|MESSAGE: skipped' "$log" |
      grep -E -B4 -A6 'ERROR|error:|exception|timed out' | head -n 150 || true
  fi
  grep '^\[doctest\]' "$log" || true
  echo "slowest test cases:"
  grep -E '^[0-9.]+ s: ' "$log" | sort -rn | head -5 | sed 's/^/  /' || true
  echo "test suite: exit $rc (full output: $log)"
  FIGURE=$(doctest_cases "$log")
  return "$rc"
}

step_suite_cpu() {
  local rc=0 skips
  run_suite 300 || rc=$?
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 300 "tests/dezero_tests" "$RUNS/tests.log"; return 0; fi
  skips=$(grep -c "skipped: no CUDA device" "$RUNS/tests.log" || true)
  if [ "$skips" -gt 0 ]; then
    echo "CUDA cases: $skips printed \"skipped: no CUDA device\""
    FIGURE+="; $skips CUDA cases skipped"
  else fail "no test printed \"skipped: no CUDA device\""; fi
}

# --- the steps of the GPU check

step_conv_cudnn() {
  local log="$RUNS/conv.log" rc=0 why version
  run_dz 120 "$HERE/tests/dezero_tests" --no-intro \
    --source-file='*test_cuda_conv.cpp,*test_cuda_pool.cpp,*test_cuda_batch_norm.cpp' >"$log" 2>&1 || rc=$?
  grep -E 'MESSAGE: (cuDNN [0-9]+ from|cudnn timing:|skipped|cuDNN unavailable)|cuDNN unavailable' "$log" |
    grep -v 'skipped: no CUDA device' | sed 's/^.*MESSAGE: /  /' | uniq || true
  grep '^\[doctest\] test cases' "$log" || true
  version=$(grep -o -m1 -E 'cuDNN [0-9]+ from' "$log" | sed 's/ from//' || true)
  FIGURE="${version:-cuDNN version not printed}; $(doctest_cases "$log")"
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 120 "tests/test_cuda_{conv,pool,batch_norm}.cpp" "$log"; fi
  if grep -q 'skipped: no CUDA device' "$log"; then fail "the CUDA cases were skipped: dezero sees no GPU here"; fi
  if [ "${DEZERO_CUDNN:-}" != 0 ] && why=$(cudnn_not_used "$log"); then
    fail "cuDNN was not used: $why"
  fi
}

step_conv_im2col() {
  local log="$RUNS/conv-im2col.log" rc=0
  run_dz 120 env DEZERO_CUDNN=0 "$HERE/tests/dezero_tests" --no-intro --source-file='*conv*,*pool*,*batch_norm*' \
    --source-file-exclude='*test_cuda_conv.cpp' >"$log" 2>&1 || rc=$?
  grep '^\[doctest\] test cases' "$log" || true
  FIGURE=$(doctest_cases "$log")
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 120 "the conv/pool/BN tests with DEZERO_CUDNN=0" "$log"; fi
  if grep -q 'skipped: no CUDA device' "$log"; then fail "the CUDA cases were skipped: dezero sees no GPU here"; fi
}

step_suite_gpu() {
  local rc=0 why
  run_suite 300 || rc=$?
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 300 "tests/dezero_tests" "$RUNS/tests.log"; fi
  if grep -q "skipped: no CUDA device" "$RUNS/tests.log"; then
    fail "the CUDA cases were skipped: dezero sees no GPU here"
  fi
  if [ "${DEZERO_CUDNN:-}" != 0 ] && why=$(cudnn_not_used "$RUNS/tests.log"); then FIGURE+="; $why"; fi
}

# One epoch of examples/mnist or examples/mnist_cnn on Fashion-MNIST: the test accuracy and the
# epoch's time. $1 = the example.
step_mnist() {
  local ex=$1 log="$RUNS/$1.log" rc=0 line
  if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then fail "the bundle has no Fashion-MNIST ($FM)"; return 0; fi
  run_dz 300 "$HERE/examples/$ex" --device cuda --epochs 1 --dataset fashion-mnist --data "$FM" \
    --plot "gpu_$ex.png" >"$log" 2>&1 || rc=$?
  # epoch 1: train loss 0.5, accuracy 0.8 | test loss 0.4, accuracy 0.85 | 12.3 s
  line=$(grep -E '^epoch [0-9]+: ' "$log" | tail -1 || true)
  if [ -n "$line" ]; then
    echo "$line"
    FIGURE=$(sed -n 's/.*| test loss [^,]*, accuracy \([0-9.]*\) | \([0-9.]*\) s.*/test accuracy \1, epoch \2 s/p' <<<"$line")
    [ -n "$FIGURE" ] || FIGURE=$line
  else
    FIGURE="no epoch line"
  fi
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 300 "examples/$ex" "$log"; fi
}

# A benchmark's log, or its end.
show_bench() { if [ "$(wc -l <"$1")" -le 12 ]; then cat "$1"; else tail -n 12 "$1"; fi; }

# W1 and W2: the last epoch's seconds, and per step (the header says "batch B, N ... images").
epoch_figure() {
  local log=$1 b n line e s
  b=$(sed -n 's/.*batch \([0-9][0-9]*\), \([0-9][0-9]*\) .*/\1/p' "$log" | head -1)
  n=$(sed -n 's/.*batch \([0-9][0-9]*\), \([0-9][0-9]*\) .*/\2/p' "$log" | head -1)
  line=$(grep -E '^epoch [0-9]+: [0-9.e+-]+ s' "$log" | tail -1 || true)
  if [ -z "$line" ]; then echo "no epoch line"; return 0; fi
  e=${line%%:*}
  s=$(sed 's/^epoch [0-9]*: \([0-9.e+-]*\) s.*/\1/' <<<"$line")
  if [ -n "$b" ] && [ -n "$n" ] && [ "$b" -gt 0 ]; then
    awk -v e="$e" -v s="$s" -v k=$(( n / b )) 'BEGIN { printf "%s: %.3f s = %.3f ms/step (%d steps)", e, s, s * 1000 / k, k }'
  else
    echo "$e: $s s"
  fi
}

step_w1() {
  local log="$RUNS/w1.log" rc=0
  # W1 trains on Fashion-MNIST when the bundle has it, else on synthetic images (labelled so)
  local data=(--dataset synthetic)
  if [ -d "$FM" ]; then data=(--data "$FM"); fi
  run_dz 120 "$HERE/bench/w1_mlp_epoch" --device cuda --epochs 2 "${data[@]}" >"$log" 2>&1 || rc=$?
  show_bench "$log"
  FIGURE=$(epoch_figure "$log")
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 120 bench/w1_mlp_epoch "$log"; fi
}

step_w2() {
  local log="$RUNS/w2.log" rc=0
  if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then fail "the bundle has no Fashion-MNIST ($FM)"; return 0; fi
  run_dz 120 "$HERE/bench/w2_cnn" --device cuda --epochs 2 --data "$FM" >"$log" 2>&1 || rc=$?
  show_bench "$log"
  FIGURE=$(epoch_figure "$log")
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 120 bench/w2_cnn "$log"; fi
}

step_w3() {
  local log="$RUNS/w3.log" rc=0 us
  run_dz 120 "$HERE/bench/w3_overhead" --device cuda --steps 5000 >"$log" 2>&1 || rc=$?
  show_bench "$log"
  us=$(sed -n 's/.*median \([0-9.e+-]*\) us\/step.*/\1/p' "$log" | head -1)
  if [ -n "$us" ]; then FIGURE=$(awk -v u="$us" 'BEGIN { printf "median %.1f us/step = %.4f ms/step", u, u / 1000 }')
  else FIGURE="no median line"; fi
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 120 bench/w3_overhead "$log"; fi
}

# W4, ResNet50 at batch 8; $1 = "cudnn" or "im2col" (DEZERO_CUDNN=0).
step_w4() {
  local log="$RUNS/w4-$1.log" rc=0 times cudnn=() steps=10
  if [ "$1" = im2col ]; then cudnn=(env DEZERO_CUDNN=0); steps=5; fi
  run_dz 180 "${cudnn[@]}" "$HERE/bench/w4_resnet50" --device cuda --steps "$steps" >"$log" 2>&1 || rc=$?
  show_bench "$log"
  times=$(sed -n 's/^step: median \([0-9.e+-]*\) s\/step, best \([0-9.e+-]*\) s.*/\1 \2/p' "$log" | head -1)
  if [ -n "$times" ]; then
    FIGURE=$(awk -v m="${times% *}" -v b="${times#* }" 'BEGIN { printf "median %.1f ms/step, best %.1f", m * 1000, b * 1000 }')
  else FIGURE="no step line"; fi
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 180 "bench/w4_resnet50 ($1)" "$log"; fi
}

step_gan() {
  local log="$RUNS/gan.log" rc=0 line
  if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then fail "the bundle has no Fashion-MNIST ($FM)"; return 0; fi
  run_dz 300 "$HERE/examples/gan" --device cuda --epochs 1 --dataset fashion-mnist --data "$FM" --out gan \
    >"$log" 2>&1 || rc=$?
  tail -n 3 "$log"
  # epoch 1: loss_g 0.7, loss_d 1.3, 468 iterations, 20.1 s; wrote gan/gan_epoch1.png
  line=$(grep -E '^epoch [0-9]+: loss_g' "$log" | tail -1 || true)
  FIGURE=$(sed -n 's/^epoch [0-9]*: loss_g \([^,]*\), loss_d \([^,]*\), \([0-9]*\) iterations, \([0-9.]*\) s.*/epoch \4 s (\3 iterations), loss_g \1, loss_d \2/p' <<<"$line")
  [ -n "$FIGURE" ] || FIGURE="no epoch line"
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 300 examples/gan "$log"; fi
}

# PyTorch eager on the same GPU, through bench/compare_pytorch.py; $1 = w1 or w4. PyTorch keeps its
# own environment; our program there gets DEZERO_LD_LIBRARY_PATH.
TORCH_PY="" TORCH_STATE=""   # the python that has torch; "gpu", or why PyTorch is left out
find_torch() {
  local p rc=0
  TORCH_PY=""
  while IFS= read -r p; do
    if timeout 30 "$p" -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("torch") else 1)' 2>/dev/null; then
      TORCH_PY=$p; break
    fi
  done < <(pythons)
  if [ -z "$TORCH_PY" ]; then TORCH_STATE="PyTorch is not installed (no python here imports torch)"; return 0; fi
  timed 120 "$TORCH_PY" -c 'import sys, torch
print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "sees a GPU:", torch.cuda.is_available())
sys.exit(0 if torch.cuda.is_available() else 3)' >"$RUNS/pytorch.log" 2>&1 || rc=$?
  cat "$RUNS/pytorch.log"
  if [ "$rc" -eq 0 ]; then TORCH_STATE=gpu
  elif [ "$STEP_CUT" = 1 ]; then TORCH_STATE=""   # try again in the next step
  elif [ "$rc" -eq 3 ]; then TORCH_STATE="PyTorch ($TORCH_PY) sees no GPU"
  else TORCH_STATE="PyTorch ($TORCH_PY) does not import: $(tail -n 1 "$RUNS/pytorch.log")"; fi
}

step_pytorch() {
  local w=$1 log="$RUNS/pytorch-$1.log" rc=0 row
  [ -n "$TORCH_STATE" ] || find_torch
  [ "$STEP_CUT" = 0 ] || return 0
  if [ "$TORCH_STATE" != gpu ]; then skip "$TORCH_STATE"; return 0; fi
  if ! grep -q "\"$w\"" "$HERE/bench/compare_pytorch.py"; then
    skip "bench/compare_pytorch.py has no $w (its --only: $(sed -n 's/.*"--only", choices=\[\([^]]*\)\].*/\1/p' "$HERE/bench/compare_pytorch.py" | tr -d '"'))"
    return 0
  fi
  local data=(--dataset synthetic)
  if [ -d "$FM" ]; then data=(--data "$FM"); fi
  timed 300 env DEZERO_LD_LIBRARY_PATH="$DZ_LD" "$TORCH_PY" "$HERE/bench/compare_pytorch.py" --build "$HERE" \
    --device cuda --only "$w" "${data[@]}" >"$log" 2>&1 || rc=$?
  show_bench "$log"
  # workload  dezero-cpp  PyTorch  PyTorch/ours
  row=$(grep -i -E "^$w " "$log" | tail -1 || true)
  if [ -n "$row" ]; then
    FIGURE=$(awk '{ n = NF; name = $1; for (i = 2; i <= n - 3; i++) name = name " " $i
                    printf "%s: dezero-cpp %s, PyTorch %s (PyTorch/ours %s)", name, $(n - 2), $(n - 1), $n }' <<<"$row")
  else FIGURE="no $w row"; fi
  if [ "$rc" -ne 0 ]; then program_failed "$rc" 300 "bench/compare_pytorch.py --only $w" "$log"; fi
}

# --- running (bundle) ---------------------------------------------------------------------------

# run_bundle MODE SCOPE: MODE gpu, smoke or libs (the library steps in GPU mode); SCOPE full,
# quick or rest (GPU mode).
MODE="" DATA="" FM=""
run_bundle() {
  MODE=$1
  local scope=$2
  [ -f "$HERE/MANIFEST" ] || die "$HERE is not a bundle"
  case "$MODE/$scope" in
    gpu/full) MODE_NAME=gpu ;; gpu/*) MODE_NAME="gpu, $scope" ;; libs/*) MODE_NAME="gpu, libraries only" ;; *) MODE_NAME=$MODE ;;
  esac
  DATA="$HERE/tests/data"
  FM="$HERE/data/fashion-mnist"
  RUNS="${DEZERO_GPU_CHECK_RUNS:-$HERE/runs}"
  if ! mkdir -p "$RUNS" 2>/dev/null || [ ! -w "$RUNS" ]; then
    local wanted=$RUNS
    RUNS=$(mktemp -d)
    echo "gpu-check: $wanted is not writable: the logs go to $RUNS"
  fi
  RUNS=$(cd "$RUNS" && pwd)
  # Everything printed also goes to $RUNS/gpu-check.log; the examples write their files there.
  exec > >(tee "$RUNS/gpu-check.log") 2>&1 3>&1
  cd "$RUNS"
  trap 'on_signal TERM' TERM
  trap 'on_signal INT' INT
  trap '[ -z "$GOMP_TMP" ] || rm -rf "$GOMP_TMP"' EXIT
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$([ "$MODE" = smoke ] && echo 2 || echo 8)}"
  sed -n '1,5p' "$HERE/MANIFEST"
  echo "bundle: $HERE ($(du -sh "$HERE" | cut -f1)); logs: $RUNS${DEADLINE:+; deadline $DEADLINE s}"
  echo "check: $MODE_NAME${DEZERO_CUDNN:+; DEZERO_CUDNN=$DEZERO_CUDNN}"

  run_step "shared libraries" step_shared_libs
  [ -z "$STOPPED" ] || finish
  run_step "GPU libraries" step_gpu_libs
  [ -z "$STOPPED" ] || finish
  echo "LD_LIBRARY_PATH for dezero's programs: ${DZ_LD:-(none)}"
  echo "test data: $DATA"

  case "$MODE" in
    smoke)
      run_step "every program starts" step_starts
      run_step "MNIST data folder" step_data_folder
      run_step "DEZERO_TEST_DATA_DIR" step_fixture_dir
      run_step "test suite (CPU)" step_suite_cpu
      ;;
    gpu)
      local cudnn_title="conv/pool/BN tests, cuDNN"
      [ "${DEZERO_CUDNN:-}" != 0 ] || cudnn_title="conv/pool/BN, DEZERO_CUDNN=0"
      if [ "$scope" != rest ]; then   # --quick: the short steps first, then the suite
        run_step "$cudnn_title" step_conv_cudnn
        run_step "MNIST, 1 epoch" step_mnist mnist
        run_step "W1 MLP epoch" step_w1
        run_step "test suite on CUDA" step_suite_gpu
      fi
      if [ "$scope" != quick ]; then
        run_step "conv/pool/BN tests, no cuDNN" step_conv_im2col
        run_step "MNIST CNN, 1 epoch" step_mnist mnist_cnn
        run_step "W2 small CNN" step_w2
        run_step "W4 ResNet50" step_w4 cudnn
        run_step "W4 ResNet50, no cuDNN" step_w4 im2col
        run_step "W3 overhead" step_w3
        run_step "DCGAN, 1 epoch" step_gan
        run_step "PyTorch W1" step_pytorch w1
        run_step "PyTorch W4" step_pytorch w4
      fi
      ;;
  esac
  finish
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
  [ -f "$tmp/gpu-bundle/runs/summary.txt" ] || die "dry run: no runs/summary.txt in the bundle"
  [ "$(tail -n 1 "$log")" = "gpu-check (smoke): PASSED" ] || die "dry run: the bundle's output does not end with its verdict"
  grep -q '^== summary: ' "$log" || die "dry run: no summary"
  if grep -q 'carried' "$tmp/gpu-bundle/MANIFEST"; then
    grep -qx "libgomp.so.1: $tmp/gpu-bundle/dezero/libgomp.so.1" "$log" ||
      die "dry run: libdezero does not load the bundle's libgomp.so.1"
  fi
  echo "gpu-check: dry run PASSED (bundle $(du -sh "$tmp/gpu-bundle" | cut -f1))"
}

# --- main -----------------------------------------------------------------------------------------

# Sourced (tests/gpu_check_test.sh): the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

if [ -f "$HERE/MANIFEST" ]; then   # a bundle
  mode=gpu scope=full
  while [ $# -gt 0 ]; do
    case "$1" in
      --smoke) mode=smoke ;;
      --libs-only) mode=libs ;;
      --quick) scope=quick ;;
      --rest) scope=rest ;;
      --deadline|--deadline=*)
        if [ "$1" = --deadline ]; then d=${2:-}; shift; else d=${1#--deadline=}; fi
        [[ $d =~ ^[0-9]+$ ]] && [ "$d" -gt 0 ] || die "--deadline takes a number of seconds (got '$d')"
        set_deadline "$d" ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown option $1 (in a bundle: [--quick | --rest] [--deadline SECONDS], --smoke, --libs-only; see --help)" ;;
    esac
    shift
  done
  run_bundle "$mode" "$scope"
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
    echo "gpu-check: carry gpu-bundle/ to the GPU machine and run there:"
    echo "  DEZERO_GPU_CHECK_RUNS=\$OUT bash gpu-bundle/gpu-check.sh --quick --deadline 280"
    ;;
  --stage)
    [ $# -eq 3 ] || { [ $# -eq 4 ] && [ "$4" = --allow-no-data ]; } ||
      die "usage: tools/gpu-check.sh --stage BUILD_DIR OUT_DIR [--allow-no-data]"
    stage "$2" "$3" "${4:-}"
    ;;
  --dry-run)
    [ $# -le 2 ] || die "usage: tools/gpu-check.sh --dry-run [BUILD_DIR]"
    dry_run "${2:-$ROOT/build}"
    ;;
  -h|--help) usage ;;
  ""|--quick|--rest|--deadline|--deadline=*|--smoke|--libs-only)
    [ -f "$ROOT/gpu-bundle/MANIFEST" ] || die "no bundle in $ROOT/gpu-bundle; make one with: bash tools/gpu-check.sh --build"
    exec bash "$ROOT/gpu-bundle/gpu-check.sh" "$@"
    ;;
  *) die "unknown option $1 (see: bash tools/gpu-check.sh --help)" ;;
esac
