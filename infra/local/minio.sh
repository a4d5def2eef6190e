#!/usr/bin/env bash
# minio.sh start|stop|status: a local S3-compatible server (MinIO) with the run bucket, data in .selfplay/minio.
# Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set, else local dev defaults. Does nothing when
# S3_ENDPOINT names another server.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IP="${MINIO_IP:-127.0.0.1}"
PORT="${MINIO_PORT:-9000}"
CONSOLE_PORT="${MINIO_CONSOLE_PORT:-9001}"
BUCKET="${SELFPLAY_BUCKET:-selfplay}"
ACCESS_KEY="${AWS_ACCESS_KEY_ID:-selfplay}"
SECRET_KEY="${AWS_SECRET_ACCESS_KEY:-selfplay-dev-secret}"
DATA_DIR="$STATE_DIR/minio"
PIDFILE="$STATE_DIR/minio.pid"
LOGFILE="$LOG_DIR/minio.log"
ENDPOINT="http://$IP:$PORT"

if [ -n "${S3_ENDPOINT:-}" ]; then
  echo "minio: S3_ENDPOINT=$S3_ENDPOINT is set; using that server (nothing to ${1:-do})"
  exit 0
fi

healthy() {
  if command -v curl >/dev/null; then
    curl -fs -o /dev/null --max-time 2 "$ENDPOINT/minio/health/live" 2>/dev/null
  else
    port_open "$IP" "$PORT"
  fi
}

case "${1:-}" in
  start)
    if running "$PIDFILE"; then
      echo "minio: already running (pid $(cat "$PIDFILE")) at $ENDPOINT"
      exit 0
    fi
    require_tool minio
    if port_open "$IP" "$PORT"; then
      echo "minio: port $IP:$PORT is taken by another process; set MINIO_PORT or S3_ENDPOINT" >&2
      exit 1
    fi
    mkdir -p "$LOG_DIR" "$DATA_DIR"
    MINIO_ROOT_USER="$ACCESS_KEY" MINIO_ROOT_PASSWORD="$SECRET_KEY" MINIO_UPDATE=off \
      nohup "$TOOLS_BIN/minio" server "$DATA_DIR" \
      --address "$IP:$PORT" --console-address "$IP:$CONSOLE_PORT" >>"$LOGFILE" 2>&1 &
    echo $! >"$PIDFILE"
    wait_for minio "$PIDFILE" "$LOGFILE" 60 healthy
    S3_ENDPOINT="$ENDPOINT" AWS_ACCESS_KEY_ID="$ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$SECRET_KEY" \
      "$TSX" "$REPO_ROOT/infra/local/create-bucket.ts" "$BUCKET"
    echo "minio: running (pid $(cat "$PIDFILE")): S3_ENDPOINT=$ENDPOINT, bucket s3://$BUCKET, console http://$IP:$CONSOLE_PORT, log $LOGFILE"
    ;;
  stop)
    stop_pid minio "$PIDFILE"
    ;;
  status)
    if running "$PIDFILE"; then
      echo "minio: running (pid $(cat "$PIDFILE")) at $ENDPOINT"
    else
      echo "minio: not running"
      exit 3
    fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
