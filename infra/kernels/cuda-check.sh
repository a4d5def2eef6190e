#!/usr/bin/env bash
# The kernel on a GPU machine: its benchmark (the `small` config in bf16 on CUDA), then its test suite with
# every test kernel on CUDA. Each writes its log to OUT_DIR (default: the current folder); the exit code is the
# suite's, or the benchmark's where the suite passed.
#
#   bash infra/kernels/cuda-check.sh [OUT_DIR] [PYTEST ARGS...]
#
# PYTHON picks the interpreter (default: the kernel's virtual environment made by setup.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-$here/.venv/bin/python}
out=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
shift || true
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
cd "$here"
"$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "cuda-check: no CUDA device")' || exit 2
"$python" -c 'import torch; print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)'

"$python" -m selfplay_kernel.bench --device cuda 2>&1 | tee "$out/kernel-bench-cuda.log"
bench=${PIPESTATUS[0]}
SELFPLAY_KERNEL_TEST_DEVICE=cuda "$python" -m pytest -q -p no:cacheprovider --durations=10 tests "$@" 2>&1 |
  tee "$out/kernel-tests-cuda.log"
tests=${PIPESTATUS[0]}
exit $((tests != 0 ? tests : bench))
