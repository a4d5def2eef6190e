#!/usr/bin/env bash
# Installs the command-line tools into ${SELFPLAY_TOOLS_DIR:-.tools}/bin (git-ignored), each at an exact version:
#   bash infra/local/tools.sh [temporal] [minio] [helm] [checkov]     (no argument: all four)
# temporal: the Temporal CLI (dev server + Web UI), for the local stack and the tests; minio: S3-compatible
# storage, for the integration tests only (a local run stores to a directory); helm: the Helm CLI, for the
# chart's offline checks (infra/deploy/check.sh). These three are built with Go from the module proxy;
# GOTOOLCHAIN=auto fetches a newer Go when a tool needs one. checkov: the Kubernetes hardening linter that
# check.sh runs on the rendered chart, from PyPI into a virtual environment of its own (needs python3).
# Skips tools already installed at their version.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.5.1 is the newest Temporal CLI tag whose go.mod has no `replace` directive, which `go install` rejects.
TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
# MinIO publishes RELEASE.* tags, which are not semantic versions, so the module proxy serves no tagged release;
# this pseudo-version names one commit (2026-02-12), so every build of this repository builds the same server.
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
# kube-linter, the first choice, is not served by the module proxy (its module path is on a host of its own).
CHECKOV_VERSION="${CHECKOV_VERSION:-3.3.30}"

mkdir -p "$TOOLS_BIN"

build() {
  local name="$1" package="$2"
  if [ -x "$TOOLS_BIN/$name" ]; then
    echo "$name: already at $TOOLS_BIN/$name (skipped; delete it to rebuild)"
    return
  fi
  if ! command -v go >/dev/null; then
    echo "tools.sh: Go is not installed; install Go 1.21 or newer from https://go.dev/dl/ and rerun" >&2
    exit 1
  fi
  echo "$name: building $package (a few minutes on first run) ..."
  GOBIN="$TOOLS_BIN" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" go install "$package"
  echo "$name: built $TOOLS_BIN/$name"
}

# pip_tool NAME VERSION: the PyPI package NAME==VERSION in a virtual environment named by its version, its
# command linked into the bin directory; a version bump installs afresh beside the old one.
pip_tool() {
  local name="$1" version="$2"
  local venv
  venv="$(dirname "$TOOLS_BIN")/$name-$version"
  if [ -x "$venv/bin/$name" ] && [ "$(readlink "$TOOLS_BIN/$name")" = "$venv/bin/$name" ]; then
    echo "$name: already at $TOOLS_BIN/$name ($version)"
    return
  fi
  echo "$name: installing $name==$version from PyPI (about a minute on first run) ..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$name==$version"
  ln -sfn "$venv/bin/$name" "$TOOLS_BIN/$name"
  echo "$name: installed $TOOLS_BIN/$name"
}

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(temporal minio helm checkov)
for tool in "${tools[@]}"; do
  case "$tool" in
    temporal) build temporal "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" ;;
    minio) build minio "github.com/minio/minio@$MINIO_VERSION" ;;
    helm) build helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" ;;
    checkov) pip_tool checkov "$CHECKOV_VERSION" ;;
    *) echo "tools.sh: unknown tool '$tool' (temporal, minio, helm, checkov)" >&2 && exit 1 ;;
  esac
done
