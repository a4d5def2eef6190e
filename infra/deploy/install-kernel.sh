#!/usr/bin/env bash
# Installs the training and sampling kernel (infra/kernels) into a virtual environment, exactly as the kernel
# image does (infra/deploy/kernel.Dockerfile runs this script), so CI can prove the install in a clean directory
# without docker (infra/deploy/check-install.sh). Versions are pinned by infra/kernels/constraints.txt, the set
# the kernel's tests last passed with. The package is installed, not linked: the venv stands alone.
#
# Usage: install-kernel.sh KERNEL_SRC VENV
#   KERNEL_SRC       the infra/kernels directory of a checkout
#   VENV             created; must not exist yet
#   PYTHON           the interpreter to build the venv from (default python3; the kernel needs >= 3.10)
#   TORCH_INDEX_URL  where PyTorch comes from, e.g. https://download.pytorch.org/whl/cpu for a CPU-only image
#                    (default: PyPI, whose Linux wheels carry their CUDA libraries)
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 KERNEL_SRC VENV" >&2
  exit 2
fi
src="$(cd "$1" && pwd)"
venv="$2"
python="${PYTHON:-python3}"
if [ ! -f "$src/pyproject.toml" ] || [ ! -f "$src/constraints.txt" ]; then
  echo "install-kernel.sh: $src has no pyproject.toml and constraints.txt; give the infra/kernels directory" >&2
  exit 1
fi
if [ -e "$venv" ]; then
  echo "install-kernel.sh: $venv exists; give a new path" >&2
  exit 1
fi

"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install --quiet --upgrade pip
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  echo "install-kernel.sh: torch from $TORCH_INDEX_URL"
  "${pip[@]}" install --quiet -c "$src/constraints.txt" --index-url "$TORCH_INDEX_URL" torch
fi
echo "install-kernel.sh: installing $src into $venv"
# A copy of the sources, so setuptools' build files never land in the checkout (or a read-only build context).
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -R "$src/pyproject.toml" "$src/selfplay_kernel" "$build/"
"${pip[@]}" install --quiet -c "$src/constraints.txt" "$build"
"$venv/bin/python" -c 'import selfplay_kernel, torch; print(f"install-kernel.sh: installed (torch {torch.__version__})")'
