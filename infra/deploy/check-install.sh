#!/usr/bin/env bash
# Proves the images' install steps without docker: runs install-worker.sh and install-kernel.sh (what
# worker.Dockerfile and kernel.Dockerfile run) into a clean temporary directory, from a copy of the checkout,
# then smoke-tests what they installed:
#   worker: the worker's whole module graph loads (it refuses an unknown pool by name), the prebuilt workflow
#           bundle is there, the CLI prints its usage;
#   kernel: a tiny model is built, `serve` answers /v1/models with weight_version 0, SIGTERM stops it.
# Needs the npm registry (or npm's cache) and PyPI (or pip's cache). The kernel takes PyTorch from where
# infra/kernels/torch-index.sh says (TORCH_INDEX_URL; unset, the CPU-only index when it answers on a machine
# without a GPU, else PyPI's build, which pip's cache holds once setup.sh has run). The image takes the same
# steps. CI: `bash infra/deploy/check-install.sh [worker|kernel]...` (both by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../local/lib.sh"
parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(worker kernel)
work="$(mktemp -d)"
kernel_pid=""
cleanup() {
  [ -n "$kernel_pid" ] && kill "$kernel_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A clean copy of the tracked and unignored files (symlinked dependencies left out), as a build context holds them.
mkdir "$work/src"
(
  cd "$REPO_ROOT"
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
    if [ -f "$file" ] && [ ! -L "$file" ]; then cp --parents "$file" "$work/src"; fi
  done
)

check_worker() {
  echo "== install-worker.sh into $work/worker"
  bash "$work/src/infra/deploy/install-worker.sh" "$work/src" "$work/worker"
  cd "$work/worker"
  [ -s workflow-bundle.js ] || { echo "check-install: no workflow bundle" >&2; exit 1; }
  if out="$(node --import tsx workers/main.ts no-such-pool 2>&1)"; then
    echo "check-install: the worker accepted an unknown pool" >&2
    exit 1
  fi
  grep -q "unknown pool(s) no-such-pool" <<< "$out" || { echo "check-install: worker failed: $out" >&2; exit 1; }
  node --import tsx cli/main.ts --help 2>&1 | grep -q "selfplay" || { echo "check-install: the CLI did not start" >&2; exit 1; }
  [ ! -e node_modules/jest ] || { echo "check-install: dev dependencies were installed" >&2; exit 1; }
  echo "check-install: worker OK ($(du -sh "$work/worker" | cut -f1))"
  cd "$REPO_ROOT"
}

check_kernel() {
  echo "== install-kernel.sh into $work/kernel"
  # shellcheck source=../kernels/torch-index.sh
  source "$REPO_ROOT/infra/kernels/torch-index.sh"
  TORCH_INDEX_URL="$(torch_index "${PYTHON:-python3}")" \
    bash "$work/src/infra/deploy/install-kernel.sh" "$work/src/infra/kernels" "$work/kernel"
  local py="$work/kernel/bin/python"
  # The installed package, not a checkout's: run from a directory without selfplay_kernel in it.
  cd "$work"
  "$py" -c 'import selfplay_kernel, sys; assert "/kernel/" in selfplay_kernel.__file__, selfplay_kernel.__file__'
  "$py" -m selfplay_kernel tiny-model "$work/tiny" > /dev/null
  mkfifo "$work/announce"
  env -u SELFPLAY_KERNEL_TOKEN "$py" -m selfplay_kernel serve --model "$work/tiny" --policy smoke --device cpu --port 0 --insecure-no-token \
    > "$work/announce" 2> "$work/kernel.log" &
  kernel_pid=$!
  local line url
  read -r -t 300 line < "$work/announce" || { echo "check-install: kernel did not start" >&2; cat "$work/kernel.log" >&2; exit 1; }
  url="$("$py" -c 'import json, sys; print(json.loads(sys.argv[1])["url"])' "$line")"
  "$py" - "$url" <<'PY'
import json, sys, urllib.request
models = json.load(urllib.request.urlopen(sys.argv[1] + "/v1/models", timeout=30))
entry = models["data"][0]
assert entry["id"] == "smoke" and entry["weight_version"] == 0, models
PY
  kill -TERM "$kernel_pid"
  wait "$kernel_pid" || { echo "check-install: kernel exited badly on SIGTERM" >&2; exit 1; }
  kernel_pid=""
  echo "check-install: kernel OK ($(du -sh "$work/kernel" | cut -f1))"
  cd "$REPO_ROOT"
}

for part in "${parts[@]}"; do
  case "$part" in
    worker) check_worker ;;
    kernel) check_kernel ;;
    *) echo "usage: $0 [worker|kernel]..." >&2; exit 2 ;;
  esac
done
echo "check-install.sh: install steps passed (${parts[*]})"
