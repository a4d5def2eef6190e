/**
 * Every environment variable the project reads, in one list: the worker processes and the CLI, the training
 * kernel, the local stack's scripts, the compose file and the kernel's test hooks. The configuration reference
 * (docs/configuration.md) prints it, and a unit test fails when a `SELFPLAY_*` name appears in the sources but
 * not here, or is listed here but read nowhere, so the list cannot drift from the code. The code that reads a
 * variable stays beside its use (config/env.ts, workers/metrics.ts, the kernel's access.py, …); what a
 * variable means is said here.
 */

export type EnvComponent = 'worker' | 'kernel' | 'local' | 'compose' | 'tests';

export interface EnvVar {
  /** The name, or a pattern of names (`SELFPLAY_<NAME>_API_KEY`). */
  name: string;
  component: EnvComponent;
  /** What it sets, its default, and where it matters. */
  meaning: string;
}

export const ENV_COMPONENTS: Record<EnvComponent, string> = {
  worker: 'Worker processes (`workers/main.ts`) and the `selfplay` CLI',
  kernel: 'The training and sampling kernel (`python -m selfplay_kernel serve`)',
  local: "The local stack's scripts (`npm run local`, `npm run test:all`, `infra/local/`)",
  compose: 'The compose file (`infra/deploy/compose.yaml`), from the environment or its `.env`',
  tests: "The kernel's test hooks (`infra/kernels/tests/`)",
};

export const ENV_VARS: readonly EnvVar[] = [
  // Workers and the CLI.
  {
    name: 'TEMPORAL_ADDRESS',
    component: 'worker',
    meaning:
      'Temporal frontend, host:port (default `localhost:7233`); with `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY` and the `TEMPORAL_TLS*` settings of config/temporal-connection.ts',
  },
  {
    name: 'SELFPLAY_STORAGE',
    component: 'worker',
    meaning:
      '`s3://bucket/prefix` or a directory (default `.selfplay/storage`): every run’s artifacts and checkpoints',
  },
  {
    name: 'S3_ENDPOINT',
    component: 'worker',
    meaning:
      'an S3-compatible server (path-style addressing when set), with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`',
  },
  {
    name: 'SELFPLAY_QUEUE_PREFIX',
    component: 'worker',
    meaning: 'task queues `{prefix}-orchestrator`, `-rollout`, `-trainer` (default `selfplay`)',
  },
  {
    name: 'SELFPLAY_POOLS',
    component: 'worker',
    meaning: 'the pools a worker serves, when not given as its argument',
  },
  {
    name: 'SELFPLAY_INFERENCE_URL',
    component: 'worker',
    meaning:
      'the default OpenAI-compatible base URL (e.g. `http://vllm:8000/v1`) of roles the run config gives none',
  },
  { name: 'SELFPLAY_INFERENCE_MODEL', component: 'worker', meaning: 'the default model name asked of it' },
  {
    name: 'SELFPLAY_INFERENCE_API_KEY',
    component: 'worker',
    meaning: 'the key of `SELFPLAY_INFERENCE_URL`’s server (falls back to `OPENAI_API_KEY`); none when unset',
  },
  {
    name: 'SELFPLAY_INFERENCE_CONCURRENCY',
    component: 'worker',
    meaning:
      'completions in flight per endpoint from one worker (default 64); with long tails the workers together need about 4 × the engine’s slots (docs/architecture.md, “Sizing the completions in flight”)',
  },
  {
    name: 'SELFPLAY_TRAINER_URL',
    component: 'worker',
    meaning: 'the training kernel of policies the run config gives no `trainerUrl`',
  },
  {
    name: 'SELFPLAY_KERNEL_TOKEN',
    component: 'worker',
    meaning:
      'the kernels’ bearer token, sent only to `SELFPLAY_TRAINER_URL` and the servers `SELFPLAY_CREDENTIAL_BINDINGS` binds it to; the kernel reads the same name',
  },
  {
    name: 'SELFPLAY_<NAME>_API_KEY',
    component: 'worker',
    meaning:
      'keys a run config names by `apiKeyEnv` (also `SELFPLAY_<NAME>_TOKEN`, e.g. `SELFPLAY_VLLM_API_KEY`), each sent only where it is bound',
  },
  {
    name: 'SELFPLAY_CREDENTIAL_BINDINGS',
    component: 'worker',
    meaning:
      '`NAME=PREFIX[,PREFIX…][;…]`: which credential may go to which URL prefix ([Security](security.md))',
  },
  {
    name: 'SELFPLAY_INPUT_ROOTS',
    component: 'worker',
    meaning:
      'comma-separated directories and `s3://` prefixes that config-named inputs may be read from (default `test/fixtures`; the run storage always)',
  },
  {
    name: 'SELFPLAY_CODEC_KEYS',
    component: 'worker',
    meaning:
      '`id:base64key[,…]`, 32-byte keys that encrypt Temporal payloads (the first encrypts); the CLI and the codec server need the same',
  },
  {
    name: 'SELFPLAY_PYTHON',
    component: 'worker',
    meaning:
      'the Python that runs the kernel package’s modules: Parquet inputs (pyarrow), W&B tracking (`selfplay_kernel[tracking]`), `selfplay export` (default `infra/kernels/.venv/bin/python`; the worker image’s `/app/python`)',
  },
  {
    name: 'SELFPLAY_SNAPSHOT_CACHE',
    component: 'worker',
    meaning:
      'where vLLM/SGLang syncs copy `s3://` snapshots for the engines to load (default `.selfplay/snapshots`)',
  },
  {
    name: 'SELFPLAY_SNAPSHOT_CACHE_MAX_GIB',
    component: 'worker',
    meaning: 'the copies’ size cap in GiB, least recently used deleted first (default 50)',
  },
  {
    name: 'SELFPLAY_ANSWER_CHECK_WORKERS',
    component: 'worker',
    meaning: 'threads of the math answer checker’s pool (default CPUs − 1, at least 1, at most 4)',
  },
  {
    name: 'SELFPLAY_ANSWER_CHECK_TIMEOUT_MS',
    component: 'worker',
    meaning: 'the answer checker’s limit per answer (default 2000)',
  },
  {
    name: 'SELFPLAY_METRICS_PORT',
    component: 'worker',
    meaning:
      'a port or HOST:PORT for the Temporal runtime’s Prometheus metrics (`temporal_*`; off when unset)',
  },
  {
    name: 'SELFPLAY_PROJECT_METRICS_PORT',
    component: 'worker',
    meaning:
      'a port or HOST:PORT for the project’s metrics (`selfplay_*`) and the probes `/healthz`, `/readyz`',
  },
  {
    name: 'SELFPLAY_METRICS_HOST',
    component: 'worker',
    meaning: 'the host a bare metrics port binds on (default `127.0.0.1`)',
  },
  {
    name: 'SELFPLAY_WORKFLOW_BUNDLE',
    component: 'worker',
    meaning: 'a workflow bundle built ahead (the worker image’s), loaded instead of bundling at start',
  },
  {
    name: 'WANDB_API_KEY',
    component: 'worker',
    meaning: 'Weights & Biases’ own key (and `WANDB_BASE_URL`), read by its SDK for `tracking.wandb`',
  },
  // The kernel.
  {
    name: 'SELFPLAY_KERNEL_TOKEN_FILE',
    component: 'kernel',
    meaning:
      'a file of accepted tokens, one per line, re-read when it changes (a token rotates without a restart)',
  },
  {
    name: 'SELFPLAY_KERNEL_ROOTS',
    component: 'kernel',
    meaning: 'comma-separated directories and `s3://` prefixes the kernel may read and write (as `--root`)',
  },
  // The local stack.
  {
    name: 'SELFPLAY_LOCAL_ENGINE',
    component: 'local',
    meaning:
      '`scripted`: `npm run local` samples from the scripted LLM server and records steps instead of the kernel',
  },
  {
    name: 'SELFPLAY_STATE_DIR',
    component: 'local',
    meaning: 'the stack’s state (Temporal’s database, storage, logs, pid files) elsewhere than `.selfplay`',
  },
  {
    name: 'SELFPLAY_TOOLS_DIR',
    component: 'local',
    meaning: 'where the Temporal CLI, MinIO, Helm, checkov and Node.js are installed (default `.tools`)',
  },
  {
    name: 'SELFPLAY_NODE_VERSION',
    component: 'local',
    meaning: 'the Node.js fetched when the one on PATH is older than 22',
  },
  { name: 'SELFPLAY_BUCKET', component: 'local', meaning: 'the local MinIO’s bucket (default `selfplay`)' },
  {
    name: 'SELFPLAY_KERNEL_TEST_DEVICE',
    component: 'local',
    meaning: '`cuda` runs the kernel’s tests on a GPU (`infra/kernels/cuda-check.sh`; default `cpu`)',
  },
  // Compose.
  {
    name: 'SELFPLAY_MODEL',
    component: 'compose',
    meaning: 'the model the kernel and vLLM serve (default Qwen/Qwen3-0.6B)',
  },
  {
    name: 'SELFPLAY_S3_KEY',
    component: 'compose',
    meaning:
      'MinIO’s root user, also the workers’ S3 key (default `selfplay`); `SELFPLAY_S3_SECRET` its password',
  },
  {
    name: 'SELFPLAY_S3_SECRET',
    component: 'compose',
    meaning: 'MinIO’s root password and the workers’ S3 secret (required, at least 8 characters)',
  },
  {
    name: 'SELFPLAY_KERNEL_ARGS',
    component: 'compose',
    meaning: 'extra arguments of `selfplay_kernel serve` (default `--dtype bfloat16`)',
  },
  { name: 'SELFPLAY_KERNEL_GPU', component: 'compose', meaning: 'the kernel’s GPU (default 0)' },
  { name: 'SELFPLAY_VLLM_GPU', component: 'compose', meaning: 'vLLM’s GPU (default 1)' },
  // Test hooks.
  {
    name: 'SELFPLAY_TEST_FAIL_RANK',
    component: 'tests',
    meaning:
      'with `SELFPLAY_TEST_FAIL_STEP`: the rank and optimizer step a test kernel fails once (test_distributed.py)',
  },
  { name: 'SELFPLAY_TEST_FAIL_STEP', component: 'tests', meaning: 'see `SELFPLAY_TEST_FAIL_RANK`' },
  {
    name: 'SELFPLAY_TEST_WEDGE_MARK',
    component: 'tests',
    meaning: 'the file a test kernel writes when its step hangs (test_watchdog.py)',
  },
  {
    name: 'SELFPLAY_TEST_RAISE_AT',
    component: 'tests',
    meaning:
      '`iteration:mini-batch` where the chaos test kernel raises once, an out-of-memory error after the update (kernel-chaos.test.ts)',
  },
  {
    name: 'SELFPLAY_TEST_HOLD_AT',
    component: 'tests',
    meaning: '`iteration:mini-batch` where the chaos test kernel holds its step, to be SIGKILLed there',
  },
  {
    name: 'SELFPLAY_TEST_ARM_FILE',
    component: 'tests',
    meaning:
      'a file `npm run chaos -- --trainer kernel` writes `raise` or `hold` into: the chaos test kernel takes that fault at its next mini-batch 2 or later',
  },
  {
    name: 'SELFPLAY_TEST_FAULT_LOG',
    component: 'tests',
    meaning: 'the file the chaos test kernel appends a JSON line to as each of its faults fires',
  },
];
