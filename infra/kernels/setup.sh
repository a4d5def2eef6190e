#!/usr/bin/env bash
# Creates infra/kernels/.venv when missing and (re)installs the kernel package with its test extra, pinned by
# constraints.txt (the versions the tests last passed with), when either file changed since the last install.
# Idempotent: a second run with nothing changed does nothing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.installed.sha256"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup.sh: creating virtual environment $venv"
  "$python" -m venv "$venv"
else
  echo "setup.sh: virtual environment $venv exists"
fi

want="$(cat "$here/pyproject.toml" "$here/constraints.txt" | sha256sum | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [[ "$want" == "$have" ]]; then
  echo "setup.sh: pyproject.toml and constraints.txt unchanged since last install; nothing to do"
  exit 0
fi

# shellcheck source=torch-index.sh
source "$here/torch-index.sh"

echo "setup.sh: installing $here[test] (first install, or pyproject.toml / constraints.txt changed)"
"$venv/bin/python" -m pip install --upgrade --quiet pip
extra="$(torch_index "$venv/bin/python")"
if [[ -n "$extra" ]]; then echo "setup.sh: torch from $extra"; fi
"$venv/bin/python" -m pip install -c "$here/constraints.txt" ${extra:+--extra-index-url "$extra"} -e "$here[test]"
echo "$want" > "$stamp"
echo "setup.sh: installed; stamp $stamp"
