{{/* Names: every object is "<release>-selfplay-<component>", cut to the 63 characters a DNS label allows. */}}
{{- define "selfplay.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "selfplay.name" -}}
{{- printf "%s-%s" (include "selfplay.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "selfplay.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "selfplay.labels" -}}
{{ include "selfplay.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "selfplay.image" -}}
{{- printf "%s:%s" .repository (.tag | default .appVersion) -}}
{{- end -}}

{{- define "selfplay.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "selfplay.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the chart-made credentials (only when some are given as values). */}}
{{- define "selfplay.credentialsSecret" -}}
{{- printf "%s-credentials" (include "selfplay.fullname" .) -}}
{{- end -}}

{{/* Where S3 credentials come from: an existing Secret, the chart's own, or none (IRSA / instance roles). */}}
{{- define "selfplay.s3Secret" -}}
{{- $c := .Values.storage.s3.credentials -}}
{{- if $c.existingSecret -}}{{ $c.existingSecret }}
{{- else if $c.accessKeyId -}}{{ include "selfplay.credentialsSecret" . }}
{{- else if .Values.minio.enabled -}}{{ .Values.minio.auth.existingSecret | default (include "selfplay.credentialsSecret" .) }}
{{- end -}}
{{- end -}}

{{- define "selfplay.s3Endpoint" -}}
{{- if .Values.storage.s3.endpoint -}}{{ .Values.storage.s3.endpoint }}
{{- else if .Values.minio.enabled -}}{{ printf "http://%s:9000" (include "selfplay.name" (dict "root" . "component" "minio")) }}
{{- end -}}
{{- end -}}

{{- define "selfplay.temporalAddress" -}}
{{- if .Values.temporal.devServer.enabled -}}
{{- printf "%s:7233" (include "selfplay.name" (dict "root" . "component" "temporal")) -}}
{{- else -}}
{{- required "temporal.address is required (or temporal.devServer.enabled=true for a trial)" .Values.temporal.address -}}
{{- end -}}
{{- end -}}

{{/* The URL of the kernel of one policy: its rank 0. */}}
{{- define "selfplay.kernelUrl" -}}
{{- printf "http://%s:%d" (include "selfplay.name" (dict "root" .root "component" (printf "kernel-%s" .policy))) (int .root.Values.kernel.port) -}}
{{- end -}}

{{/* Each vLLM/SGLang replica's own address (its pod behind the headless Service), a JSON list: weightSync.servers. */}}
{{- define "selfplay.inferenceReplicaUrls" -}}
{{- $name := include "selfplay.name" (dict "root" . "component" "inference") }}
{{- $urls := list }}
{{- range $r := until (int .Values.inference.replicas) }}
{{- $urls = append $urls (printf "http://%s-%d.%s-replicas:%d" $name $r $name (int $.Values.inference.port)) }}
{{- end }}
{{- toJson $urls -}}
{{- end -}}

{{/*
SELFPLAY_CREDENTIAL_BINDINGS of every pool (config/endpoint-bindings.ts): which credential may go to which of the
release's servers. The kernel token to every kernel's Service (its trainer and, with inference.engine "kernel",
its sampler); the inference key to the vLLM/SGLang Service and to each replica, which the weight sync calls one by
one; then workers.extraCredentialBindings. Every pool gets them all: the orchestrator checks a run config's
trainer and weight-sync servers against them before the run starts.
*/}}
{{- define "selfplay.credentialBindings" -}}
{{- $kernels := list }}
{{- range .Values.kernels }}
{{- $kernels = append $kernels (include "selfplay.kernelUrl" (dict "root" $ "policy" .policy)) }}
{{- end }}
{{- $entries := list (printf "SELFPLAY_KERNEL_TOKEN=%s" (join "," $kernels)) }}
{{- if ne .Values.inference.engine "kernel" }}
{{- $service := printf "http://%s:%d" (include "selfplay.name" (dict "root" . "component" "inference")) (int .Values.inference.port) }}
{{- $servers := prepend (include "selfplay.inferenceReplicaUrls" . | fromJsonArray) $service }}
{{- $entries = append $entries (printf "SELFPLAY_INFERENCE_API_KEY=%s" (join "," $servers)) }}
{{- end }}
{{- range $credential, $prefixes := .Values.workers.extraCredentialBindings }}
{{- $entries = append $entries (printf "%s=%s" $credential (join "," $prefixes)) }}
{{- end }}
{{- join ";" $entries -}}
{{- end -}}

{{/* SELFPLAY_INPUT_ROOTS of every pool: workers.inputRoots, else the storage bucket (and MinIO's bucket). */}}
{{- define "selfplay.inputRoots" -}}
{{- if .Values.workers.inputRoots }}
{{- join "," .Values.workers.inputRoots -}}
{{- else }}
{{- $roots := list (regexReplaceAll "^(s3://[^/]+).*$" .Values.storage.uri "${1}") }}
{{- if .Values.minio.enabled }}
{{- $roots = append $roots (printf "s3://%s" .Values.minio.bucket) }}
{{- end }}
{{- join "," (uniq $roots) -}}
{{- end }}
{{- end -}}

{{/* The default inference endpoint: the rollout servers' Service, or the (first) kernel's sampler. */}}
{{- define "selfplay.inferenceUrl" -}}
{{- if .Values.inference.url -}}{{ .Values.inference.url }}
{{- else if eq .Values.inference.engine "kernel" -}}
{{- printf "%s/v1" (include "selfplay.kernelUrl" (dict "root" . "policy" (first .Values.kernels).policy)) -}}
{{- else -}}
{{- printf "http://%s:%d/v1" (include "selfplay.name" (dict "root" . "component" "inference")) (int .Values.inference.port) -}}
{{- end -}}
{{- end -}}

{{- define "selfplay.inferenceModel" -}}
{{- if .Values.inference.servedModel -}}{{ .Values.inference.servedModel }}
{{- else if eq .Values.inference.engine "kernel" -}}{{ (first .Values.kernels).policy }}
{{- else if eq .Values.inference.engine "vllm" -}}{run}/{policy}-v{version}
{{- else -}}{{ (first .Values.kernels).policy }}
{{- end -}}
{{- end -}}

{{/* Environment every worker and the storage-touching pods share: Temporal, storage, S3. */}}
{{- define "selfplay.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ include "selfplay.temporalAddress" . | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- with .Values.temporal.apiKey.existingSecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: {{ $.Values.temporal.apiKey.key | quote }} }
{{- end }}
{{- if .Values.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- with .Values.temporal.tls.existingSecret }}
- name: TEMPORAL_TLS_CERT
  value: /etc/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /etc/temporal-tls/tls.key
{{- end }}
{{- if .Values.temporal.tls.caKey }}
- name: TEMPORAL_TLS_CA
  value: /etc/temporal-tls/{{ .Values.temporal.tls.caKey }}
{{- end }}
{{- with .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "selfplay.storageEnv" -}}
- name: SELFPLAY_STORAGE
  value: {{ .Values.storage.uri | quote }}
{{- with (include "selfplay.s3Endpoint" .) }}
- name: S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: AWS_REGION
  value: {{ .Values.storage.s3.region | quote }}
{{- with (include "selfplay.s3Secret" .) }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: AWS_ACCESS_KEY_ID }
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: AWS_SECRET_ACCESS_KEY }
{{- end }}
{{- end -}}

{{- /* The servers' key; when the kernel samples, the kernel token is its key. */}}
{{- define "selfplay.inferenceApiKeyEnv" -}}
{{- if and .Values.inference.apiKey.existingSecret (eq .Values.inference.engine "kernel") }}
{{- fail "inference.apiKey.existingSecret is the vLLM/SGLang servers' key; with inference.engine \"kernel\" the kernel samples and takes the kernel token (security.kernelToken): leave it empty" }}
{{- else if .Values.inference.apiKey.existingSecret }}
- name: SELFPLAY_INFERENCE_API_KEY
  valueFrom:
    secretKeyRef: { name: {{ .Values.inference.apiKey.existingSecret | quote }}, key: {{ .Values.inference.apiKey.key | quote }} }
{{- else if eq .Values.inference.engine "kernel" }}
- name: SELFPLAY_INFERENCE_API_KEY
  valueFrom:
    secretKeyRef: { name: {{ include "selfplay.kernelTokenSecret" . | quote }}, key: {{ .Values.security.kernelToken.key | quote }} }
{{- end }}
{{- end -}}

{{- define "selfplay.kernelTokenSecret" -}}
{{- required "security.kernelToken.existingSecret: name a Secret holding the kernels' bearer token (SELFPLAY_KERNEL_TOKEN, at least 16 characters); kernels refuse to listen without one" .Values.security.kernelToken.existingSecret }}
{{- end -}}

{{- /* The kernel token the workers send, and the codec keys (workers). The kernels read theirs from a file. */}}
{{- define "selfplay.kernelTokenEnv" -}}
- name: SELFPLAY_KERNEL_TOKEN
  valueFrom:
    secretKeyRef: { name: {{ include "selfplay.kernelTokenSecret" . | quote }}, key: {{ .Values.security.kernelToken.key | quote }} }
{{- end -}}

{{/*
The kernels' accepted tokens: the Secret mounted as a volume (never through subPath, which the kubelet does not
update), so a rotated token reaches a running kernel, which re-reads SELFPLAY_KERNEL_TOKEN_FILE when it changes.
*/}}
{{- define "selfplay.kernelTokenFileEnv" -}}
- name: SELFPLAY_KERNEL_TOKEN_FILE
  value: /etc/selfplay/kernel-token/tokens
{{- end -}}

{{- define "selfplay.kernelTokenMount" -}}
- { name: kernel-token, mountPath: /etc/selfplay/kernel-token, readOnly: true }
{{- end -}}

{{- define "selfplay.kernelTokenVolume" -}}
- name: kernel-token
  secret:
    secretName: {{ include "selfplay.kernelTokenSecret" . | quote }}
    items:
      - { key: {{ .Values.security.kernelToken.acceptedKey | default .Values.security.kernelToken.key | quote }}, path: tokens }
{{- end -}}

{{- define "selfplay.codecKeysEnv" -}}
{{- with .Values.security.codecKeys.existingSecret }}
- name: SELFPLAY_CODEC_KEYS
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: {{ $.Values.security.codecKeys.key | quote }} }
{{- end }}
{{- end -}}

{{- define "selfplay.temporalTlsVolume" -}}
{{- if and .Values.temporal.tls.enabled (or .Values.temporal.tls.existingSecret .Values.temporal.tls.caKey) }}
- name: temporal-tls
  secret:
    secretName: {{ required "temporal.tls.existingSecret names the Secret with the client certificate or CA" .Values.temporal.tls.existingSecret | quote }}
{{- end }}
{{- end -}}

{{- define "selfplay.temporalTlsMount" -}}
{{- if and .Values.temporal.tls.enabled (or .Values.temporal.tls.existingSecret .Values.temporal.tls.caKey) }}
- name: temporal-tls
  mountPath: /etc/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volume vLLM/SGLang load snapshots from; the rollout workers copy them in (SELFPLAY_SNAPSHOT_CACHE). */}}
{{- define "selfplay.usesSnapshotCache" -}}
{{- if ne .Values.inference.engine "kernel" }}true{{ end -}}
{{- end -}}

{{- define "selfplay.snapshotVolume" -}}
- name: snapshots
  persistentVolumeClaim:
    claimName: {{ .Values.snapshotCache.existingClaim | default (include "selfplay.name" (dict "root" . "component" "snapshots")) | quote }}
{{- end -}}

{{- define "selfplay.modelCacheVolume" -}}
- name: model-cache
{{- if .Values.modelCache.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.modelCache.existingClaim | quote }}
{{- else }}
  emptyDir: {}
{{- end }}
{{- end -}}

{{/*
A component's securityContext: the release-wide one (.base: .Values.podSecurityContext or .securityContext) with
the keys the component's own (.override) names replaced. A shallow merge, so an override can set false.
*/}}
{{- define "selfplay.securityContext" -}}
{{- $merged := deepCopy .base -}}
{{- range $k, $v := (.override | default dict) }}
{{- $_ := set $merged $k $v }}
{{- end }}
{{- toYaml $merged -}}
{{- end -}}

{{/*
The Python images (kernel, vLLM, SGLang) run as a uid with no passwd entry: torch asks for the user's name
(getpass) when it sets up its compile cache, and caches that follow HOME (torch, Triton, FlashInfer) need a
writable home on a read-only root, so HOME is the pod's /tmp emptyDir.
*/}}
{{- define "selfplay.nonRootEnv" -}}
- name: HOME
  value: /tmp
- name: USER
  value: selfplay
{{- end -}}

{{/* A label selector of the release's pods of the named components (.components, e.g. "worker-rollout"). */}}
{{- define "selfplay.componentsSelector" -}}
matchLabels:
  app.kubernetes.io/name: {{ .root.Chart.Name }}
  app.kubernetes.io/instance: {{ .root.Release.Name }}
matchExpressions:
  - { key: app.kubernetes.io/component, operator: In, values: {{ toJson .components }} }
{{- end -}}

{{/* A NetworkPolicy peer: the release's pods of the named components. */}}
{{- define "selfplay.peer" -}}
- podSelector:
    {{- include "selfplay.componentsSelector" . | nindent 4 }}
{{- end -}}

{{/* The worker pools' components: of the pools named (.pools), or of all three. */}}
{{- define "selfplay.workerComponents" -}}
{{- $components := list }}
{{- range (.pools | default (list "orchestrator" "rollout" "trainer")) }}
{{- $components = append $components (printf "worker-%s" .) }}
{{- end }}
{{- toJson $components -}}
{{- end -}}
