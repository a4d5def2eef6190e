#!/usr/bin/env bash
# Runs every test on a fresh clone: installs the npm packages (when the lockfile changed), builds the Go tools
# (Temporal CLI, MinIO) into .tools/ once, type-checks, lints, then runs jest. The integration tests start
# their own Temporal dev server and MinIO unless TEMPORAL_ADDRESS / S3_ENDPOINT name running ones.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

ensure_node_modules
bash infra/local/tools.sh

echo "== typecheck"; npx tsc --noEmit -p .
echo "== lint"; npx eslint .
echo "== format"; npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }

mkdir -p "$STATE_DIR"
results="$STATE_DIR/jest-results.json"
rm -f "$results"
status=0
npx jest --ci --json --outputFile="$results" "$@" || status=$?
# One plain closing line, whatever the runner printed above it.
node -e '
  const r = require(process.argv[1]);
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' "$results" || true
exit "$status"
