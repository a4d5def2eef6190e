#!/usr/bin/env bash
# The embedded default: a local SPICE run, everything started here.
#   npm run local [-- --set iterations=5 ...]      (extra arguments go to `selfplay start`)
#   npm run local -- --new [--set ...]             a new run even when an unfinished one is waiting
#   npm run local -- --resume RUN                  resume that run
# Starts the Temporal dev server (SQLite in .selfplay/, Web UI on :8233), storage in .selfplay/storage, the
# training kernel (infra/kernels) serving the policy for sampling and training, and a worker serving all
# three pools; then runs SPICE, prints each commit (held-out accuracy, valid tasks, rewards) and writes the report.
# A local run that did not finish (its stack was killed) is still open in Temporal: a plain `npm run local`
# resumes the newest one, on a kernel that takes its weights back from its last committed checkpoint.
#   SELFPLAY_MODEL=NAME_OR_PATH     the model (default: the toy world's small model, warm-started here)
#   SELFPLAY_LOCAL_ENGINE=scripted  sample from the scripted LLM server and record training steps instead
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

PICK_ARGS=()
START_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --new) PICK_ARGS+=(--new) ;;
    --resume)
      PICK_ARGS+=(--resume "${2:?--resume needs a run id}")
      shift
      ;;
    *) START_ARGS+=("$1") ;;
  esac
  shift
done

ensure_node
ensure_node_modules
bash infra/local/tools.sh temporal
bash infra/local/temporal.sh start
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-${TEMPORAL_IP:-127.0.0.1}:${TEMPORAL_PORT:-7233}}"
export SELFPLAY_STORAGE="${SELFPLAY_STORAGE:-$STATE_DIR/storage}"
# The Python the worker runs W&B's SDK with, for a run with tracking.wandb (docs/tracking.md).
export SELFPLAY_PYTHON="${SELFPLAY_PYTHON:-$REPO_ROOT/infra/kernels/.venv/bin/python}"
# Run configs may read inputs from the toy world and the shipped samples only (docs/security.md).
export SELFPLAY_INPUT_ROOTS="${SELFPLAY_INPUT_ROOTS:-$STATE_DIR/toy-world,$REPO_ROOT/test/fixtures}"
mkdir -p "$LOG_DIR"

# The unfinished local run, a new one (--new) or the one named (--resume RUN): infra/local/pick-run.ts.
PICKED="$("${NODE_TS[@]}" infra/local/pick-run.ts "local-$(date +%Y%m%d-%H%M%S)" "${PICK_ARGS[@]}")"
mapfile -t PICKED <<<"$PICKED"
RUN_ID="${PICKED[0]}" LINEAGE="${PICKED[1]}" RESUME="${PICKED[2]}" RETRY="${PICKED[3]}"
echo "== ${PICKED[4]}"
if [ "$RESUME" = true ] && [ ${#START_ARGS[@]} -gt 0 ]; then
  echo "   (${START_ARGS[*]}: for a new run; run $RUN_ID keeps its config)"
fi

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
  if ! read -r -t 300 line <&"$ready"; then
    echo "$name did not start; see $log" >&2
    exit 1
  fi
  exec {ready}<&-
  rm -f "$fifo"
  printf -v "$var" '%s' "$(node -e 'console.log(JSON.parse(process.argv[1]).url)' "$line")"
}

POLICY=local
RUN_ARGS=(--set iterations=3 --set "training.policy=$POLICY")
# The toy world's run config sets its own policy and iterations (infra/toy-world/run-config.ts).
if [ "${SELFPLAY_LOCAL_ENGINE:-kernel}" = scripted ]; then
  echo "== MODEL IS SIMULATED: answers come from the scripted LLM server (test/support/scripted-llm) and"
  echo "   training steps are recorded, not applied (SELFPLAY_LOCAL_ENGINE=scripted)."
  start_json scripted-llm "$LOG_DIR/scripted-llm.log" LLM_URL "${NODE_TS[@]}" test/support/scripted-llm/main.ts --port 0 --latency-ms 5
  start_json trainer "$LOG_DIR/trainer.log" TRAINER_URL "${NODE_TS[@]}" test/support/recording-trainer/main.ts --port 0
  export SELFPLAY_INFERENCE_URL="$LLM_URL" SELFPLAY_INFERENCE_MODEL=scripted-policy SELFPLAY_TRAINER_URL="$TRAINER_URL"
  RUN_ARGS+=(--set batchSize=32 --set shardSize=8)
else
  bash infra/kernels/setup.sh
  KERNEL_PY="$REPO_ROOT/infra/kernels/.venv/bin/python"
  MODEL="${SELFPLAY_MODEL:-}"
  if [ -z "$MODEL" ]; then
    echo "== MODEL: the TOY WORLD (infra/toy-world): tallies of sums and differences the Challenger turns into"
    echo "   questions and the Reasoner learns to compute, with a small model built here and warm-started by"
    echo "   supervised training to its validation targets (about 3 minutes on 2 cores the first time, up to 7;"
    echo "   logged as it goes; then cached in $STATE_DIR/toy-world)."
    echo "   Set SELFPLAY_MODEL to a model name (e.g. Qwen/Qwen3-0.6B, on a machine"
    echo "   that can download it) or a local path for a real run."
    WORLD="$("${NODE_TS[@]}" infra/toy-world/prepare.ts --dir "$STATE_DIR/toy-world" --run-config "$STATE_DIR/toy-world-run.json")"
    MODEL="$(node -e 'console.log(JSON.parse(process.argv[1]).model)' "$WORLD")"
    POLICY="$(node -e 'console.log(require(process.argv[1]).training.policy)' "$STATE_DIR/toy-world-run.json")"
    RUN_ARGS=(--config "$STATE_DIR/toy-world-run.json")
  else
    echo "== MODEL: $MODEL"
    RUN_ARGS+=(--set batchSize=4 --set shardSize=2 --set groupSize=4 --set sampling.maxTokens=64
      --set spice.maxAttempts=4 --set spice.typeSelectionAttempts=1 --set weightSync.engine=kernel
      --set corpus.maxSegmentChars=1500 --set inference.requestTimeoutSeconds=300)
  fi
  # The kernel and its clients share a token, as in a deployment (docs/security.md); one per local run. The
  # worker sends it to SELFPLAY_TRAINER_URL and SELFPLAY_INFERENCE_URL's server (this kernel) and nowhere else.
  export SELFPLAY_KERNEL_TOKEN="${SELFPLAY_KERNEL_TOKEN:-$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')}"
  # Started for the run (--run): another unfinished run that wakes up on this worker cannot take its weights.
  # This checkout's kernel code, even when the environment's editable install is another checkout's. Nothing
  # probes it here, so it restarts itself in place (same pid and port) when a step hangs past its deadline; the
  # worker then restores the run's last committed checkpoint into it (docs/operations-resilience.md).
  start_json kernel "$LOG_DIR/kernel.log" KERNEL_URL env PYTHONPATH="$REPO_ROOT/infra/kernels" \
    "$KERNEL_PY" -m selfplay_kernel serve --model "$MODEL" --policy "$POLICY" --run "$LINEAGE" --port 0 \
    --restart-when-wedged
  echo "   kernel at $KERNEL_URL (log $LOG_DIR/kernel.log)"
  export SELFPLAY_INFERENCE_URL="$KERNEL_URL/v1" SELFPLAY_INFERENCE_MODEL="$POLICY" SELFPLAY_TRAINER_URL="$KERNEL_URL"
  export SELFPLAY_INFERENCE_API_KEY="$SELFPLAY_KERNEL_TOKEN"
fi

"${NODE_TS[@]}" workers/main.ts >>"$LOG_DIR/worker.log" 2>&1 &
pids+=($!)

if [ "$RESUME" = false ]; then
  "${NODE_TS[@]}" cli/main.ts start --recipe spice --id "$RUN_ID" "${RUN_ARGS[@]}" --wait "${START_ARGS[@]}"
else
  if [ "$RETRY" = true ]; then "${NODE_TS[@]}" cli/main.ts retry "$RUN_ID"; fi
  "${NODE_TS[@]}" cli/main.ts follow "$RUN_ID"
fi
mkdir -p "$STATE_DIR/reports"
"${NODE_TS[@]}" cli/main.ts report "$RUN_ID" --out "$STATE_DIR/reports/$RUN_ID.html"
echo "artifacts: $SELFPLAY_STORAGE/runs/$RUN_ID/   Web UI: http://${TEMPORAL_IP:-127.0.0.1}:${TEMPORAL_UI_PORT:-8233}"
echo "the Temporal dev server keeps running; stop it with: bash infra/local/temporal.sh stop"
