#!/usr/bin/env bash
# Offline checks of the deployment (no cluster, no docker, no network): the Helm chart linted (values checked by
# its values.schema.json) and rendered with every values file under helm/selfplay/ci/, each rendering checked by
# check-manifests.ts, the install notes rendered, every rendering scanned by the hardening linter (checkov) with
# no finding that helm/selfplay/lint-exceptions.yaml does not excuse (check-hardening.ts), and compose.yaml
# checked by check-compose.ts. Needs helm and checkov from infra/local/tools.sh. CI: `bash infra/deploy/check.sh`
# (infra/local/test-all.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../local/lib.sh"
require_tool helm
require_tool checkov
helm="$TOOLS_BIN/helm"
chart="$REPO_ROOT/infra/deploy/helm/selfplay"
# The chart asks for >= 1.28 (the pod-index label gives each kernel rank its RANK); helm's offline default is older.
kube_version=1.31.0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$REPO_ROOT"

# The notes are not rendered by `helm template`: a copy of the chart renders them as a ConfigMap.
cp -R "$chart" "$work/chart"
mkdir "$work/rendered"
mv "$work/chart/templates/NOTES.txt" "$work/chart/notes.txt"
printf '%s\n' 'apiVersion: v1' 'kind: ConfigMap' 'metadata: {name: notes}' 'data:' \
  '  notes: {{ tpl (.Files.Get "notes.txt") . | quote }}' > "$work/chart/templates/zz-notes.yaml"

for values in "$chart"/ci/*-values.yaml; do
  name="$(basename "$values" -values.yaml)"
  echo "== helm lint / template: $name"
  "$helm" lint "$chart" --strict -f "$values" --kube-version "$kube_version" --quiet
  "$helm" template selfplay "$chart" -f "$values" --kube-version "$kube_version" > "$work/rendered/$name.yaml"
  "${NODE_TS[@]}" infra/deploy/check-manifests.ts "$work/rendered/$name.yaml"
  "$helm" template selfplay "$work/chart" -f "$values" --kube-version "$kube_version" \
    --show-only templates/zz-notes.yaml > /dev/null
done

echo "== hardening: checkov on every rendering, findings against the reviewed exceptions"
# --soft-fail: findings are judged by check-hardening.ts; a checkov crash still fails here (set -e).
"$TOOLS_BIN/checkov" --framework kubernetes --directory "$work/rendered" --output json --quiet --compact \
  --skip-download --soft-fail > "$work/checkov.json"
"${NODE_TS[@]}" infra/deploy/check-hardening.ts "$work/checkov.json" "$chart/lint-exceptions.yaml"

echo "== helm: bad values are refused"
refused() {
  if "$helm" template selfplay "$chart" -f "$chart/ci/external-values.yaml" --kube-version "$kube_version" "$@" \
    > /dev/null 2> "$work/refusal"; then
    echo "check.sh: helm template accepted $*" >&2
    exit 1
  fi
}
refused --set inference.engine=triton
refused --set storage.uri=/var/selfplay
refused --set workers.rollout.replica=3
refused --set inference.engine=vllm
refused --set temporal.address=
refused --set security.kernelToken.existingSecret=
refused --set 'networkPolicy.inferenceFromPools={gateway}'
refused --set metrics.host=0.0.0.0:9464
refused --set inference.apiKey.existingSecret=key
refused --set-json 'workers.extraCredentialBindings={"AWS_SECRET_ACCESS_KEY":["http://x:1"]}'
refused --set-json 'workers.inputRoots=["s3://selfplay,/etc"]'

echo "== compose"
"${NODE_TS[@]}" infra/deploy/check-compose.ts infra/deploy/compose.yaml
echo "check.sh: deployment checks passed"
