#!/usr/bin/env bash
# Runs every test on a fresh clone: runs on Node.js 22 (fetched into .tools/node when the node on PATH is
# older); side by side, installs the npm packages with `npm ci` (when the lockfile changed), the tools (Temporal
# CLI, MinIO, Helm, checkov) into .tools/ once, the kernel's Python environment and Chromium (apt) when missing;
# then type-checks, lints (ESLint, Prettier, the layering of import chains) and checks the deployment while
# pytest (the kernel) runs beside them, then runs jest, with the images' install steps checked beside it all.
# The integration tests start their own Temporal dev server and MinIO unless TEMPORAL_ADDRESS / S3_ENDPOINT name
# running ones.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

ensure_node
mkdir -p "$STATE_DIR"
# The installs run side by side (the Go builds of the tools take the CPU; npm, pip and apt mostly wait on the
# network and the disk), each into its own log, printed when it ends; any that fails stops the run.
install_chromium() {
  # Headless Chromium, from Debian, for the browser tests: the report (test/unit/cli/report.test.ts) and the
  # Temporal Web UI (test/integration/web-ui.test.ts, driven by playwright-core, which downloads no browser).
  command -v chromium >/dev/null && return
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } > /dev/null
}
declare -A installs=(
  [npm]="ensure_node_modules"
  [tools]="bash infra/local/tools.sh temporal minio helm checkov"
  [kernel-venv]="bash infra/kernels/setup.sh"
  [chromium]="install_chromium"
)
declare -A install_pids=()
for name in "${!installs[@]}"; do
  ${installs[$name]} > "$STATE_DIR/install-$name.log" 2>&1 &
  install_pids[$name]=$!
done
for name in "${!installs[@]}"; do
  install_status=0
  wait "${install_pids[$name]}" || install_status=$?
  echo "== install: $name (exit $install_status)"
  cat "$STATE_DIR/install-$name.log"
  [ "$install_status" -eq 0 ] || { echo "install $name failed (exit $install_status)"; exit "$install_status"; }
done

# The image install steps (two clean installs, the kernel's PyTorch among them: minutes of unpacking, mostly
# waiting on the disk) run beside the checks and tests; their log is printed and their status counted at the end.
install_log="$STATE_DIR/check-install.log"
echo "== image install steps (without docker), beside the tests: $install_log"
bash infra/deploy/check-install.sh worker kernel > "$install_log" 2>&1 &
install_pid=$!
pytest_xml="$STATE_DIR/pytest-results.xml"
pytest_log="$STATE_DIR/pytest.log"
jest_json="$STATE_DIR/jest-results.json"
rm -f "$pytest_xml" "$jest_json"
# The kernel's tests (PyTorch on the CPU) run beside the checks, which are single-threaded Node.
infra/kernels/.venv/bin/python -m pytest infra/kernels/tests -q --junit-xml="$pytest_xml" > "$pytest_log" 2>&1 &
pytest_pid=$!
trap 'kill "$install_pid" "$pytest_pid" 2> /dev/null || true' EXIT

echo "== typecheck"; npx tsc --noEmit -p .
echo "== lint"; npx eslint .
echo "== format"; npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }
echo "== layers"; npx tsx infra/lint/layers.ts
echo "== deployment (helm lint and template, compose)"; bash infra/deploy/check.sh

status=0
echo "== kernel (pytest)"
wait "$pytest_pid" || status=$?
cat "$pytest_log"
echo "== jest"
npx jest --ci --json --outputFile="$jest_json" "$@" || status=$?
echo "== image install steps (without docker)"
install_status=0
wait "$install_pid" || install_status=$?
cat "$install_log"
[ "$install_status" -eq 0 ] || { echo "check-install.sh failed (exit $install_status)"; status=$install_status; }

# One plain closing line over both runners, whatever they printed above it.
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  if (fs.existsSync(process.argv[1])) {
    const r = require(process.argv[1]);
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests;
  }
  if (fs.existsSync(process.argv[2])) {
    const xml = fs.readFileSync(process.argv[2], "utf8");
    const suite = /<testsuite\b[^>]*>/.exec(xml)?.[0] ?? "";
    const n = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
    passed += n("tests") - n("failures") - n("errors") - n("skipped");
    failed += n("failures") + n("errors");
    skipped += n("skipped");
  }
  console.log(`tests: ${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
' "$jest_json" "$pytest_xml" || true
exit "$status"
