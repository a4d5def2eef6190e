# Shared by the local-stack scripts: paths, pid files and readiness checks. Source it; do not run it.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="$REPO_ROOT/.selfplay"
LOG_DIR="$STATE_DIR/logs"
TOOLS_BIN="${SELFPLAY_TOOLS_DIR:-$REPO_ROOT/.tools}/bin"
TSX="$REPO_ROOT/node_modules/.bin/tsx"
# Runs a TypeScript entrypoint as ONE node process (the tsx launcher forks a child that outlives a kill).
NODE_TS=(node --import tsx)

# require_tool NAME: the path of a Go-built tool, or exit saying how to build it.
require_tool() {
  if [ ! -x "$TOOLS_BIN/$1" ]; then
    echo "$1 not found at $TOOLS_BIN/$1: run 'bash infra/local/tools.sh' first" >&2
    exit 1
  fi
}

# running PIDFILE: true when the pid file names a live process.
running() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# wait_for NAME PIDFILE LOGFILE SECONDS CHECK...: polls CHECK until it succeeds; fails early if the process died.
wait_for() {
  local name="$1" pidfile="$2" logfile="$3" seconds="$4"
  shift 4
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    if ! running "$pidfile"; then
      echo "$name exited during startup; last lines of $logfile:" >&2
      tail -n 30 "$logfile" >&2
      rm -f "$pidfile"
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$name not ready after ${seconds}s; see $logfile" >&2
      exit 1
    fi
    sleep 0.3
  done
}

# stop_pid NAME PIDFILE: SIGTERM, then SIGKILL after 15 s.
stop_pid() {
  local name="$1" pidfile="$2"
  if ! running "$pidfile"; then
    echo "$name is not running"
    rm -f "$pidfile"
    return
  fi
  local pid
  pid="$(cat "$pidfile")"
  kill "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.3
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$name (pid $pid) ignored SIGTERM; killing it"
    kill -9 "$pid"
  fi
  rm -f "$pidfile"
  echo "$name stopped"
}

# ensure_node_modules: installs the locked versions when node_modules is missing or older than the lockfile.
# `npm install` rather than `npm ci`: npm 11 writes lockfiles without other platforms' optional packages
# (@swc/core-darwin-*, ...) and then `npm ci` refuses them as out of sync; `npm install` keeps the locked
# versions and installs the same tree.
ensure_node_modules() {
  if [ ! -f "$REPO_ROOT/node_modules/.package-lock.json" ] || [ "$REPO_ROOT/package-lock.json" -nt "$REPO_ROOT/node_modules/.package-lock.json" ]; then
    (cd "$REPO_ROOT" && npm install --no-audit --no-fund)
  fi
}
