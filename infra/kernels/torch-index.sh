# Sourced by setup.sh and infra/deploy/check-install.sh: where PyTorch comes from.
#
# PyPI's Linux torch wheels bundle CUDA: about 5 GB with NVIDIA's libraries and triton. On a Linux machine
# without an NVIDIA GPU, PyTorch's own CPU index has the pinned version as `X+cpu` (about 200 MB), which pip
# prefers to PyPI's `X` when both are offered and which the pin `torch==X` accepts.
#
# torch_index PYTHON: prints the index to offer pip besides PyPI, or nothing for PyPI alone. TORCH_INDEX_URL
# names one (a CUDA index, a mirror), TORCH_INDEX_URL=pypi means none; unset, the CPU index on a Linux machine
# without an NVIDIA GPU. An index that does not answer is left out, saying so on stderr.
torch_index() {
  local python="$1" index="${TORCH_INDEX_URL:-}"
  if [[ "$index" == pypi ]]; then return; fi
  if [[ -z "$index" ]]; then
    if [[ "$(uname -s)" != Linux ]] || command -v nvidia-smi > /dev/null || [[ -e /dev/nvidiactl ]]; then return; fi
    index=https://download.pytorch.org/whl/cpu
  fi
  if "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10)' "$index" 2> /dev/null; then
    echo "$index"
  else
    echo "torch_index: $index does not answer; PyTorch comes from PyPI (on Linux with CUDA, about 5 GB)" >&2
  fi
}
