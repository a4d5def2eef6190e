#!/usr/bin/env bash
# temporal.sh start|stop|status: the local Temporal dev server with the project's search attributes.
# State lives in .selfplay/temporal.db, so workflows survive restarts. Web UI on TEMPORAL_UI_PORT (8233),
# gRPC on TEMPORAL_PORT (7233). Does nothing when TEMPORAL_ADDRESS names another server.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IP="${TEMPORAL_IP:-127.0.0.1}"
PORT="${TEMPORAL_PORT:-7233}"
UI_PORT="${TEMPORAL_UI_PORT:-8233}"
PIDFILE="$STATE_DIR/temporal.pid"
LOGFILE="$LOG_DIR/temporal.log"

if [ -n "${TEMPORAL_ADDRESS:-}" ]; then
  echo "temporal: TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS is set; using that server (nothing to ${1:-do})"
  exit 0
fi

case "${1:-}" in
  start)
    if running "$PIDFILE"; then
      echo "temporal: already running (pid $(cat "$PIDFILE")) on $IP:$PORT, UI http://$IP:$UI_PORT"
      exit 0
    fi
    require_tool temporal
    if port_open "$IP" "$PORT"; then
      echo "temporal: port $IP:$PORT is taken by another process; set TEMPORAL_PORT or TEMPORAL_ADDRESS" >&2
      exit 1
    fi
    mkdir -p "$LOG_DIR"
    mapfile -t SEARCH_ATTRIBUTES < <("$TSX" "$REPO_ROOT/infra/local/search-attribute-flags.ts")
    nohup "$TOOLS_BIN/temporal" server start-dev \
      --ip "$IP" --port "$PORT" --ui-port "$UI_PORT" \
      --db-filename "$STATE_DIR/temporal.db" \
      "${SEARCH_ATTRIBUTES[@]}" >>"$LOGFILE" 2>&1 &
    echo $! >"$PIDFILE"
    wait_for temporal "$PIDFILE" "$LOGFILE" 60 port_open "$IP" "$PORT"
    echo "temporal: running (pid $(cat "$PIDFILE")): TEMPORAL_ADDRESS=$IP:$PORT, Web UI http://$IP:$UI_PORT, log $LOGFILE"
    ;;
  stop)
    stop_pid temporal "$PIDFILE"
    ;;
  status)
    if running "$PIDFILE"; then
      echo "temporal: running (pid $(cat "$PIDFILE")) on $IP:$PORT, Web UI http://$IP:$UI_PORT"
    else
      echo "temporal: not running"
      exit 3
    fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
