#!/usr/bin/env bash
# Builds the Go-built tools of the local stack and the integration tests into ${SELFPLAY_TOOLS_DIR:-.tools}/bin
# (git-ignored): the Temporal CLI (dev server + Web UI), MinIO (S3-compatible storage) and Helm (the chart's offline
# checks, infra/deploy/check.sh). Needs only Go and the
# module proxy; GOTOOLCHAIN=auto fetches a newer Go when a tool needs one. Skips tools already built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.5.1 is the newest Temporal CLI tag whose go.mod has no `replace` directive, which `go install` rejects.
TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
MINIO_VERSION="${MINIO_VERSION:-latest}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"

if ! command -v go >/dev/null; then
  echo "tools.sh: Go is not installed; install Go 1.21 or newer from https://go.dev/dl/ and rerun" >&2
  exit 1
fi
mkdir -p "$TOOLS_BIN"

build() {
  local name="$1" package="$2"
  if [ -x "$TOOLS_BIN/$name" ]; then
    echo "$name: already at $TOOLS_BIN/$name (skipped; delete it to rebuild)"
    return
  fi
  echo "$name: building $package (a few minutes on first run) ..."
  GOBIN="$TOOLS_BIN" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" go install "$package"
  echo "$name: built $TOOLS_BIN/$name"
}

build temporal "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
build minio "github.com/minio/minio@$MINIO_VERSION"
build helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
