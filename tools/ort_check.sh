#!/usr/bin/env bash
# tools/ort_check.sh - ONNX Runtime as the second judge of exported models (CTest onnx_ort).
#
#   bash tools/ort_check.sh <onnx_ort_cases program> <work folder> [more case folders...]
#
# 1. npm's onnxruntime-node and onnxruntime-common (the JavaScript API it loads), version
#    $ORT_VERSION, fetched with `npm pack` into <work>/packs and unpacked into <work>/node_modules,
#    once: the packages as published, and their install scripts never run (onnxruntime-node's
#    downloads from a host this machine may not reach; its Linux x64 library is in the package).
# 2. onnx_ort_cases writes the exported models and dezero's outputs at batch 1 and 3.
# 3. tests/onnx/ort_judge.js runs each in ONNX Runtime and compares, with the cases in the other
#    folders given (the export tests leave one per model they write: DEZERO_ORT_CASES).
# Without node and npm, or when the packages cannot be fetched: "skipped: ..." and success, except
# under CI=true, where CI must run the judge: then it fails.
set -euo pipefail
ORT_VERSION=1.31.1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CASES_PROGRAM=$1
WORK=$2
shift 2
skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "ort_check: $1 (CI=true: the judge must run)" >&2
    exit 1
  fi
  echo "skipped: $1"
  exit 0
}
command -v node >/dev/null || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || skip "npm is not installed (apt-get install npm)"
MODS="$WORK/node_modules"
if [ ! -f "$MODS/onnxruntime-node/package.json" ] || [ ! -f "$MODS/onnxruntime-common/package.json" ] ||
   ! grep -q "\"version\": \"$ORT_VERSION\"" "$MODS/onnxruntime-node/package.json"; then
  mkdir -p "$WORK/packs"
  if ! (cd "$WORK/packs" && npm pack --silent "onnxruntime-node@$ORT_VERSION" "onnxruntime-common@$ORT_VERSION" \
        >/dev/null 2>"$WORK/packs/npm.log"); then
    skip "npm pack onnxruntime-node@$ORT_VERSION failed: $(tail -n 3 "$WORK/packs/npm.log" | tr '\n' ' ')"
  fi
  for p in onnxruntime-node onnxruntime-common; do
    rm -rf "${MODS:?}/$p"
    mkdir -p "$MODS/$p"
    tar -xzf "$WORK/packs/$p-$ORT_VERSION.tgz" -C "$MODS/$p" --strip-components=1
  done
fi
rm -rf "$WORK/cases"
"$CASES_PROGRAM" "$WORK/cases"
OMP_NUM_THREADS=1 node "$ROOT/tests/onnx/ort_judge.js" "$MODS" "$WORK/cases" "$@"
