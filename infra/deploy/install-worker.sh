#!/usr/bin/env bash
# Installs the worker application (the `workers/main.ts` process and the `selfplay` CLI) from a checkout into a
# directory, exactly as the worker image does (infra/deploy/worker.Dockerfile runs this script), so CI can prove
# the install in a clean directory without docker (infra/deploy/check-install.sh):
#   - the TypeScript sources the processes run (tsx compiles them at load; no build step to drift from),
#   - the data files the recipe presets name by default (the small corpora under test/fixtures),
#   - the production npm packages at the versions package-lock.json pins (`npm install --omit=dev`: npm 11 writes
#     lockfiles without other platforms' optional packages, which `npm ci` then refuses; see infra/local/lib.sh),
#   - the workflow bundle, built once here (workflow-bundle.js; the worker loads it from
#     SELFPLAY_WORKFLOW_BUNDLE instead of running webpack at every start),
#   - a Python environment (python/, for SELFPLAY_PYTHON) with the kernel package's two modules the orchestrator
#     runs, parquet_rows (Parquet inputs) and wandb_log (tracking.wandb), and their packages
#     (infra/deploy/worker-python.txt); not the kernel's PyTorch. Needs python3 with venv (PYTHON to choose).
# Usage: install-worker.sh SRC DEST   (SRC: the repository root; DEST: created if missing, must be empty)
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 SRC DEST" >&2
  exit 2
fi
src="$(cd "$1" && pwd)"
mkdir -p "$2"
dest="$(cd "$2" && pwd)"
if [ -n "$(ls -A "$dest")" ]; then
  echo "install-worker.sh: $dest is not empty; give an empty or new directory" >&2
  exit 1
fi

# What the worker and CLI import at run time, and the files the presets name (config/schema.ts, config/presets/).
sources=(package.json package-lock.json tsconfig.json activities cli config contracts workers workflows infra/temporal
  infra/deploy/bundle-workflows.ts test/fixtures/corpus test/fixtures/ssp)
# The kernel package's modules the orchestrator runs (SELFPLAY_PYTHON), each importing nothing else of it.
python_modules=(__init__.py parquet_rows.py wandb_log.py)
for path in "${sources[@]}"; do
  mkdir -p "$dest/$(dirname "$path")"
  cp -R "$src/$path" "$dest/$path"
done

cd "$dest"
echo "install-worker.sh: npm install --omit=dev in $dest"
npm install --omit=dev --no-audit --no-fund --loglevel=error
echo "install-worker.sh: bundling the workflows"
node --import tsx infra/deploy/bundle-workflows.ts "$dest/workflow-bundle.js"
echo "install-worker.sh: the Python environment for Parquet inputs and W&B tracking ($dest/python)"
"${PYTHON:-python3}" -m venv "$dest/python"
"$dest/python/bin/pip" install --quiet --disable-pip-version-check -r "$src/infra/deploy/worker-python.txt"
site="$("$dest/python/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$site/selfplay_kernel"
for module in "${python_modules[@]}"; do cp "$src/infra/kernels/selfplay_kernel/$module" "$site/selfplay_kernel/"; done
echo "install-worker.sh: installed in $dest (run: SELFPLAY_PYTHON=$dest/python/bin/python node --import tsx workers/main.ts POOLS)"
