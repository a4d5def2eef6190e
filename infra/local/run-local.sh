#!/usr/bin/env bash
# The embedded default: a local SPICE run, everything started here.
#   npm run local [-- --set iterations=5 ...]   (extra arguments go to `selfplay start`)
# Starts the Temporal dev server (SQLite in .selfplay/, Web UI on :8233), storage in .selfplay/storage, the
# scripted LLM server and the recording trainer (until the training kernel lands: the model is SIMULATED),
# and a worker serving all three pools; then runs SPICE for 3 iterations and prints each commit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

ensure_node_modules
bash infra/local/tools.sh
bash infra/local/temporal.sh start
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-${TEMPORAL_IP:-127.0.0.1}:${TEMPORAL_PORT:-7233}}"
mkdir -p "$LOG_DIR"

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_json NAME LOG VAR COMMAND...: starts a server that prints one JSON line {"url":...} when ready,
# records its pid for the cleanup and sets VAR to its URL.
start_json() {
  local name="$1" log="$2" var="$3"
  shift 3
  local fifo="$STATE_DIR/$name.ready"
  rm -f "$fifo" && mkfifo "$fifo"
  "$@" >"$fifo" 2>>"$log" &
  pids+=($!)
  local line
  exec {ready}<"$fifo"
  if ! read -r -t 60 line <&"$ready"; then
    echo "$name did not start; see $log" >&2
    exit 1
  fi
  exec {ready}<&-
  rm -f "$fifo"
  printf -v "$var" '%s' "$(node -e 'console.log(JSON.parse(process.argv[1]).url)' "$line")"
}

echo "======================================================================================"
echo " MODEL IS SIMULATED: answers come from the scripted LLM server (test/support/scripted-llm)"
echo " and training steps are recorded, not applied, until the training kernel lands."
echo "======================================================================================"
start_json scripted-llm "$LOG_DIR/scripted-llm.log" LLM_URL "${NODE_TS[@]}" test/support/scripted-llm/main.ts --port 0 --latency-ms 5
start_json trainer "$LOG_DIR/trainer.log" TRAINER_URL "${NODE_TS[@]}" test/support/recording-trainer/main.ts --port 0 --state-file "$STATE_DIR/trainer-state.json"

export SELFPLAY_STORAGE="${SELFPLAY_STORAGE:-$STATE_DIR/storage}"
export SELFPLAY_INFERENCE_URL="$LLM_URL" SELFPLAY_INFERENCE_MODEL=scripted-policy SELFPLAY_TRAINER_URL="$TRAINER_URL"
"${NODE_TS[@]}" workers/main.ts >>"$LOG_DIR/worker.log" 2>&1 &
pids+=($!)

"${NODE_TS[@]}" cli/main.ts start --recipe spice --set iterations=3 --set batchSize=32 --set shardSize=8 \
  --set "training.policy=local-$(date +%Y%m%d%H%M%S)" --wait "$@"
echo "artifacts: $SELFPLAY_STORAGE/runs/   Web UI: http://${TEMPORAL_IP:-127.0.0.1}:${TEMPORAL_UI_PORT:-8233}"
echo "the Temporal dev server keeps running; stop it with: bash infra/local/temporal.sh stop"
