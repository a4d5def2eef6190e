# Shared by the local-stack scripts: paths, pid files and readiness checks. Source it; do not run it.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# SELFPLAY_STATE_DIR: the stack's state elsewhere (Temporal's database, storage, logs, pid files), as a test does.
STATE_DIR="${SELFPLAY_STATE_DIR:-$REPO_ROOT/.selfplay}"
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

# running PIDFILE: true when the pid file names a live process; a zombie (killed, not yet reaped) is not one.
running() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null && [[ "$(ps -o stat= -p "$(cat "$1")")" != Z* ]]
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

# Node.js 22 LTS is the supported runtime (package.json "engines"). ensure_node puts it first on PATH for this
# script and everything it starts: the node already on PATH when it is new enough, else the pinned release from
# the npm registry's node-<os>-<arch> package (the official binary, checked against the registry's integrity
# hash by `npm pack`), unpacked once into .tools/node. A machine with an older Node and npm needs nothing else.
NODE_VERSION="${SELFPLAY_NODE_VERSION:-22.23.3}"
NODE_DIR="${SELFPLAY_TOOLS_DIR:-$REPO_ROOT/.tools}/node"

node_is_supported() {
  command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]
}

ensure_node() {
  [ -x "$NODE_DIR/bin/node" ] && export PATH="$NODE_DIR/bin:$PATH"
  node_is_supported && return
  if ! command -v npm >/dev/null; then
    echo "Node.js 22 or newer is needed (and npm, to fetch it): install it from https://nodejs.org and rerun" >&2
    exit 1
  fi
  local os arch tmp
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os=unsupported ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=unsupported ;; esac
  echo "== Node.js $(node --version) is older than 22: fetching node-$os-$arch@$NODE_VERSION into $NODE_DIR"
  tmp="$(mktemp -d)"
  if ! (cd "$tmp" && npm pack --silent "node-$os-$arch@$NODE_VERSION" >/dev/null); then
    rm -rf "$tmp"
    echo "node-$os-$arch@$NODE_VERSION is not on the npm registry: install Node.js 22 or newer yourself and rerun" >&2
    exit 1
  fi
  rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
  tar -xzf "$tmp"/node-*.tgz -C "$NODE_DIR" --strip-components=1 package/bin package/LICENSE
  rm -rf "$tmp"
  export PATH="$NODE_DIR/bin:$PATH"
  node_is_supported
}

# ensure_node_modules: a clean install of the locked versions (`npm ci`) when node_modules is missing or older
# than the lockfile. The lockfile holds every platform's optional packages (@swc/core-darwin-arm64, ...), so
# `npm ci` accepts it on any machine.
ensure_node_modules() {
  # A link to another checkout's node_modules (a git worktree sharing one) is that checkout's to install: `npm ci`
  # here would empty it through the link. A fresh worktree's lockfile is always newer than that install.
  if [ -L "$REPO_ROOT/node_modules" ]; then return; fi
  if [ ! -f "$REPO_ROOT/node_modules/.package-lock.json" ] || [ "$REPO_ROOT/package-lock.json" -nt "$REPO_ROOT/node_modules/.package-lock.json" ]; then
    (cd "$REPO_ROOT" && npm ci --no-audit --no-fund)
  fi
}
