#!/usr/bin/env bash
# tests/gpu_check_test.sh - the rules of tools/gpu-check.sh (tools/gpu_check.py) that a machine without
# a GPU can check (CTest: tests/CMakeLists.txt). Each case stages a bundle from BUILD into a temporary
# folder (under a second), runs it there with a clean environment and checks its exit status, its
# summary and where its logs went:
#
#   bash tests/gpu_check_test.sh deadline  BUILD  # --smoke --deadline 1: the later steps SKIP with
#                                                 # "deadline", the summary comes last, exit 3, in seconds;
#                                                 # a program started before the deadline is stopped at it
#   bash tests/gpu_check_test.sh no-cudnn  BUILD  # --libs-only (GPU mode) against a fake DEZERO_CUDA_LIB_PATH
#                                                 # without cuDNN: FAIL naming cuDNN, exit 1; with a fake
#                                                 # cuDNN, or DEZERO_CUDNN=0: PASS, exit 0
#   bash tests/gpu_check_test.sh no-cublas BUILD  # --quick without cuBLAS: exit 2 naming cuBLAS and the
#                                                 # folder searched, nothing else run
#   bash tests/gpu_check_test.sh cudnn-log BUILD  # the conv/pool step on made-up test logs (the driver
#                                                 # imported, its CTest test's program replaced by one that
#                                                 # prints the log): a log that says cuDNN was not used is
#                                                 # a FAIL showing the library's reason
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHECK="$ROOT/tools/gpu-check.sh"
# check_py SCRIPT ARGS...: python code with the driver imported as `g` (tools/gpu_check.py).
check_py() { local code=$1; shift; PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$ROOT/tools" python3 -c "import sys, gpu_check as g
$code" "$@"; }
case_name=${1:?usage: tests/gpu_check_test.sh deadline|no-cudnn|no-cublas|cudnn-log BUILD}
BUILD=${2:?usage: tests/gpu_check_test.sh $case_name BUILD}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
problems=0

ok() { echo "ok: $*"; }
bad() { echo "WRONG: $*"; problems=$(( problems + 1 )); }
# expect WHAT COMMAND...: COMMAND must succeed (a grep on the output, say).
expect() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }

stage_bundle() {
  bash "$CHECK" --stage "$BUILD" "$TMP/bundle" --allow-no-data >"$TMP/stage.log" 2>&1 ||
    { cat "$TMP/stage.log"; echo "WRONG: could not stage a bundle from $BUILD"; exit 1; }
}

# run_bundle NAME ENV... -- ARGS...: the bundle's check with a clean environment plus ENV; its
# output in $TMP/NAME.out (also printed), its exit status in RC, its wall time in WALL (seconds).
RC=0 WALL=0 OUTF=""   # WALL in milliseconds
run_bundle() {
  local name=$1 envs=() t0
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  OUTF="$TMP/$name.out"
  t0=$(date +%s%N)
  env -i PATH=/usr/bin:/bin HOME="$TMP" DEZERO_GPU_CHECK_RUNS="$TMP/runs-$name" "${envs[@]}" \
    bash "$TMP/bundle/gpu-check.sh" "$@" >"$OUTF" 2>&1
  RC=$?
  WALL=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "---- gpu-check.sh $* (${envs[*]}): exit $RC in ${WALL} ms"
  sed 's/^/| /' "$OUTF"
}

summary_of() { sed -n '/^== summary: /,$p' "$1"; }   # the summary block, to the end

# A folder of fake CUDA libraries named after the bundle's sonames (empty files: the search goes by
# name), less those given.
fake_libs() {
  local dir=$1 name sonames
  shift
  mkdir -p "$dir"
  sonames=$(sed -n 's/^cuda-libs: *//p' "$TMP/bundle/MANIFEST")
  for name in $sonames; do
    case "$name" in
      libcublas.so.*) touch "$dir/$name" "$dir/${name/libcublas/libcublasLt}" ;;
      libnvrtc.so.*) touch "$dir/$name" "$dir/libnvrtc-builtins.so.${name#libnvrtc.so.}.0" ;;
      *) touch "$dir/$name" ;;
    esac
  done
  for name in "$@"; do rm -f "$dir/$name"; done
}

case "$case_name" in
  deadline)
    stage_bundle
    run_bundle deadline -- --smoke --deadline 1
    expect "exit status 3 (nothing failed, the deadline skipped steps)" [ "$RC" -eq 3 ]
    # The programs are stopped 0.9 s in (a 10 % reserve), killed 2 s later if they hold on.
    expect "the run ended within 5 s (${WALL} ms)" [ "$WALL" -le 5000 ]
    expect "the summary is printed" grep -q '^== summary: .* of a 1 s deadline' "$OUTF"
    at=$(sed -n 's/^== summary: \([0-9]*\)\.[0-9] s of a 1 s deadline.*/\1/p' "$OUTF")
    expect "the summary came within 3 s (${at:-?} s)" [ "${at:-99}" -lt 3 ]
    expect "the test suite is a SKIP for the deadline" grep -q -E '^SKIP .*test suite \(CPU\) +deadline' "$OUTF"
    n=$(summary_of "$OUTF" | grep -c -E '^SKIP .* deadline' || true)
    expect "$n steps SKIP with \"deadline\"" [ "$n" -ge 2 ]
    expect "no step FAILs" eval "! grep -q '^FAIL' '$OUTF'"
    expect "one summary line per step (6)" [ "$(summary_of "$OUTF" | grep -c -E '^(PASS|FAIL|SKIP) ')" -eq 6 ]
    expect "the verdict is the last line" [ "$(tail -n 1 "$OUTF" | cut -c1-31)" = "gpu-check (smoke): INCOMPLETE: " ]
    expect "the summary is in DEZERO_GPU_CHECK_RUNS/summary.txt" grep -q '^gpu-check (smoke): INCOMPLETE' "$TMP/runs-deadline/summary.txt"
    expect "the whole output is in DEZERO_GPU_CHECK_RUNS/gpu-check.log" grep -q '^== summary: ' "$TMP/runs-deadline/gpu-check.log"
    # A program that would run past the deadline is stopped at it (its own limit cut to the time
    # left), and that marks its step as cut, not failed.
    check_py '
import time
check = g.Check(sys.argv[1])
check.set_deadline(1)
t0 = time.monotonic()
rc = check.timed(60, ["sleep", "30"])
print(f"rc={rc} cut={int(check.cut)} ms={int((time.monotonic() - t0) * 1000)}")' "$TMP" >"$TMP/timed.out" 2>&1
    echo "---- timed 60 sleep 30 under --deadline 1: $(cat "$TMP/timed.out")"
    expect "timed 60 sleep 30 is stopped at the deadline, as cut" grep -q -E '^rc=124 cut=1 ms=[0-9]{1,4}$' "$TMP/timed.out"
    expect "... within 3 s" [ "$(sed -n 's/.*ms=//p' "$TMP/timed.out")" -lt 3000 ]
    ;;

  no-cudnn)
    stage_bundle
    grep -q '^cuda-libs: .*libcudnn' "$TMP/bundle/MANIFEST" || { echo "WRONG: this build's libdezero loads no cuDNN"; exit 1; }
    cudnn=$(grep -o 'libcudnn\.so\.[0-9]*' "$TMP/bundle/MANIFEST")
    fake_libs "$TMP/no-cudnn" "$cudnn"
    only=(DEZERO_CUDA_LIB_PATH="$TMP/no-cudnn" DEZERO_GPU_CHECK_ONLY_LIB_PATH=1)
    run_bundle no-cudnn "${only[@]}" -- --libs-only
    expect "without cuDNN: exit status 1" [ "$RC" -eq 1 ]
    expect "without cuDNN: the GPU libraries step FAILs naming cuDNN ($cudnn) and the folder searched" \
      grep -q -E "^FAIL .*GPU libraries +cuDNN \($cudnn\) not found; looked in $TMP/no-cudnn" "$OUTF"
    expect "without cuDNN: the verdict FAILED is the last line" [ "$(tail -n 1 "$OUTF")" = "gpu-check (gpu, libraries only): FAILED (1 of 2 steps)" ]
    expect "the summary is in DEZERO_GPU_CHECK_RUNS/summary.txt" grep -q '^FAIL .*GPU libraries' "$TMP/runs-no-cudnn/summary.txt"

    run_bundle no-cudnn-asked "${only[@]}" DEZERO_CUDNN=0 -- --libs-only
    expect "without cuDNN, DEZERO_CUDNN=0 asked for: exit status 0" [ "$RC" -eq 0 ]
    expect "without cuDNN, DEZERO_CUDNN=0 asked for: the step PASSes" grep -q -E "^PASS .*GPU libraries +cuBLAS, cuRAND, NVRTC in $TMP/no-cudnn; no cuDNN \(DEZERO_CUDNN=0\)" "$OUTF"

    touch "$TMP/no-cudnn/$cudnn"
    run_bundle with-cudnn "${only[@]}" -- --libs-only
    expect "with a (fake) cuDNN: exit status 0" [ "$RC" -eq 0 ]
    expect "with a (fake) cuDNN: the step PASSes, its libraries in the fake folder" \
      grep -q -E "^PASS .*GPU libraries +cuBLAS, cuRAND, NVRTC, cuDNN in $TMP/no-cudnn" "$OUTF"
    ;;

  no-cublas)
    stage_bundle
    cublas=$(grep -o 'libcublas\.so\.[0-9]*' "$TMP/bundle/MANIFEST") ||
      { echo "WRONG: this build's libdezero loads no cuBLAS"; exit 1; }
    fake_libs "$TMP/no-cublas" "$cublas"
    run_bundle no-cublas DEZERO_CUDA_LIB_PATH="$TMP/no-cublas" DEZERO_GPU_CHECK_ONLY_LIB_PATH=1 -- --quick --deadline 30
    expect "without cuBLAS: exit status 2" [ "$RC" -eq 2 ]
    expect "the message names cuBLAS ($cublas) and the folder it looked in" \
      grep -q -x "gpu-check: not found: cuBLAS ($cublas)" "$OUTF"
    expect "... and the folder it looked in" grep -q -x "  looked in: $TMP/no-cublas (DEZERO_CUDA_LIB_PATH only)" "$OUTF"
    expect "the summary's line FAILs naming cuBLAS" grep -q -E "^FAIL .*GPU libraries +not found: cuBLAS \($cublas\)" "$OUTF"
    expect "nothing after the library steps ran" [ "$(summary_of "$OUTF" | grep -c -E '^(PASS|FAIL|SKIP) ')" -eq 2 ]
    expect "the verdict says it stopped, last" [ "$(tail -n 1 "$OUTF")" = "gpu-check (gpu, quick): STOPPED: not found: cuBLAS ($cublas); nothing else ran" ]
    ;;

  cudnn-log)
    # The real conv/pool step, its CTest test's program replaced by one that prints a made-up log.
    FAKE_LOG="$TMP/fake.log" FAKE_RC=0
    # conv_case NAME EXPECTED-REGEX [DEZERO_CUDNN]: the step on $FAKE_LOG; its summary line must match.
    conv_case() {
      local name=$1 want=$2 line
      DEZERO_CUDNN=${3:-} check_py '
check = g.Check(sys.argv[1], "gpu")
check.runs = sys.argv[1]
check.tests = {"gpu_conv_cudnn": {"command": ["sh", "-c", "cat \"$0\"; exit \"$1\"", sys.argv[2], sys.argv[3]],
                                  "timeout": 120, "labels": ["gpu", "gpu_quick"]}}
check.run_step("conv/pool tests, cuDNN", check.step_conv_cudnn, "gpu_conv_cudnn")
print(check.summary[0], file=sys.stderr)' "$TMP" "$FAKE_LOG" "$FAKE_RC" >"$TMP/step.out" 2>"$TMP/line"
      line=$(cat "$TMP/line")
      echo "---- $name: $line"
      if [[ $line =~ $want ]]; then ok "$name"; else bad "$name: the line does not match $want"; fi
    }
    cases="[doctest] test cases:   41 |   41 passed | 0 failed | 0 skipped"
    printf '%s\n' "t.cpp:202: MESSAGE: cuDNN 91900 from /x/libcudnn.so.9" "$cases" >"$FAKE_LOG"
    conv_case "cuDNN used: PASS with its version" '^PASS .*cuDNN 91900; cases 41 \| 41 passed'

    # tests/support/cudnn.hpp's two lines
    printf '%s\n' "t.cpp:202: MESSAGE: cuDNN 91900 from /x/libcudnn.so.9" \
      "cudnn.hpp:31: MESSAGE: skipped: cuDNN is not used here: cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED" \
      "cudnn.hpp:32: MESSAGE: cuDNN unavailable: cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED" "$cases" >"$FAKE_LOG"
    conv_case "cuDNN not used, the library says why: FAIL with its reason" \
      '^FAIL .*cuDNN was not used: cuDNN unavailable: cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED'
    conv_case "the same log with DEZERO_CUDNN=0 asked for: PASS" '^PASS ' 0

    printf '%s\n' "t.cpp:301: MESSAGE: skipped: cuDNN is not used here (version 0, DEZERO_CUDNN=)" "$cases" >"$FAKE_LOG"
    conv_case "cuDNN not used, no reason given: FAIL with the tests' message" \
      '^FAIL .*cuDNN was not used: cuDNN is not used here \(version 0, DEZERO_CUDNN=\)'

    printf '%s\n' "t.cpp:196: MESSAGE: skipped: cuDNN does not load here: libcudnn.so.9: cannot open shared object file" \
      "t.cpp:93: MESSAGE: skipped: cuDNN does not load here" "$cases" >"$FAKE_LOG"
    conv_case "cuDNN does not load: FAIL with the loader's message" \
      '^FAIL .*cuDNN was not used: cuDNN does not load here: libcudnn.so.9: cannot open'

    printf '%s\n' "t.cpp:305: MESSAGE: cuDNN unavailable: cudnnCreate failed: CUDNN_STATUS_ARCH_MISMATCH" \
      "t.cpp:320: ERROR: REQUIRE( be.conv2d_forward(...) ) is NOT correct!" \
      "[doctest] test cases:   41 |   30 passed | 11 failed | 0 skipped" >"$FAKE_LOG"
    FAKE_RC=1
    conv_case "the tests failed, the library says why: FAIL with the exit status and the reason" \
      '^FAIL .*exit 1; cuDNN was not used: cuDNN unavailable: cudnnCreate failed: CUDNN_STATUS_ARCH_MISMATCH \| .*11 failed'
    ;;

  *) echo "unknown case $case_name"; exit 2 ;;
esac

if [ "$problems" -eq 0 ]; then echo "gpu_check_test $case_name: PASSED"; exit 0; fi
echo "gpu_check_test $case_name: FAILED ($problems)"
exit 1
