#!/usr/bin/env bash
# tools/gpu-check.sh - the GPU check's launcher, in the source tree and in a bundle: tools/gpu_check.py
# (standard-library Python 3, which the GPU machine has) does the work; its docstring, or --help, has
# the usage. This keeps every command line the same: bash tools/gpu-check.sh --build, --stage, --dry-run;
# bash gpu-bundle/gpu-check.sh [--quick | --rest] [--deadline SECONDS], --smoke, --libs-only.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON=$(command -v python3) || { echo "gpu-check: python3 is not on the PATH" >&2; exit 1; }
exec "$PYTHON" "$HERE/gpu_check.py" "$@"
