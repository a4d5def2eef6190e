import { BENCHMARK_FORMATS, EVAL_TEMPLATES } from '../config/evaluation';
import { RECIPES } from '../config/schema';
import { ANSWER_KINDS } from '../activities/scoring/verifiers';
import type { CommandSpec, FlagSpec } from './command-line';
import { LIST_STATES } from './list';

/**
 * Every command of `selfplay`: its arguments, flags and what it does, in one place. The parser, `selfplay help`,
 * `selfplay COMMAND --help` and `selfplay completion` are made from these (cli/command-line.ts); main.ts maps
 * each name to the code that runs it.
 */

const recipe: FlagSpec = { value: 'NAME', choices: RECIPES, description: "the recipe's preset" };
const configFile: FlagSpec = {
  value: 'FILE',
  path: true,
  description: 'a run config, .json, .yaml or .yml, over the preset',
};
const set: FlagSpec = {
  value: 'key=value',
  multiple: true,
  description:
    'a dotted path and a JSON or plain value, applied last (--set training.optimizer.learningRate=1e-6)',
};
const iteration: FlagSpec = { value: 'N', description: 'a committed iteration (default: the latest)' };

export const FOOTER = `Environment: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), SELFPLAY_STORAGE (.selfplay/storage),
             TEMPORAL_API_KEY or TEMPORAL_TLS_CERT/_KEY/_CA/_SERVER_NAME for a TLS server,
             SELFPLAY_CODEC_KEYS for encrypted payloads (docs/deployment.md)`;

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'start',
    args: [],
    summary:
      "Start a run: the recipe's preset, then the file, then each --set; validated here first. With --wait, print each commit until the run ends.",
    flags: {
      recipe,
      config: configFile,
      set,
      id: { value: 'RUN_ID', description: 'the run id (default: the recipe and the time)' },
      wait: { description: 'print each commit until the run ends' },
    },
  },
  {
    name: 'list',
    args: [],
    summary: 'The newest runs (default 20) with recipe, state, last committed iteration and metrics.',
    flags: {
      recipe: { ...recipe, description: "only this recipe's runs" },
      state: { value: 'STATE', choices: LIST_STATES, description: 'only runs in this state' },
      limit: { value: 'N', description: 'at most N runs (default 20)' },
    },
  },
  {
    name: 'status',
    args: ['RUN_ID'],
    summary:
      'The run: iteration i/N, pause/stop, per-stage progress bars, recent rewards. With --watch, redrawn every second on a terminal until the run ends or Ctrl-C.',
    flags: { watch: { description: 'redraw every second until the run ends' } },
  },
  {
    name: 'follow',
    args: ['RUN_ID'],
    summary:
      'Print each commit from now on, as start --wait does, and a failure the run waits on, until the run ends.',
    flags: {},
  },
  {
    name: 'pause',
    args: ['RUN_ID'],
    summary: 'Pause the run at the next stage boundary (resume RUN_ID goes on).',
    flags: {},
  },
  { name: 'resume', args: ['RUN_ID'], summary: 'Resume a paused run.', flags: {} },
  {
    name: 'stop',
    args: ['RUN_ID'],
    summary: 'Finish the current iteration and complete the run.',
    flags: {},
  },
  {
    name: 'retry',
    args: ['RUN_ID'],
    summary:
      'Run again the iteration a needsOperator run waits on, once its cause is fixed (what its stages stored is reused).',
    flags: {},
  },
  {
    name: 'set',
    args: ['RUN_ID'],
    summary:
      'Change parameters from the next iteration: --set learningRate=5e-7 --set temperature=0.8 (groupSize, batchSize, ...); validated by the run, refused with the reason.',
    flags: { set: { ...set, required: true, description: 'a parameter and its new value' } },
  },
  {
    name: 'rollback',
    args: ['RUN_ID'],
    summary:
      "Cancel the iteration in flight, restore weights, optimizer and recipe state committed at iteration N and go on with N+1 in a new storage lineage (refused with the run's reason).",
    flags: { to: { value: 'N', required: true, description: 'the committed iteration to go back to' } },
  },
  {
    name: 'fork',
    args: ['RUN_ID'],
    summary:
      "Start a new run NEW_RUN_ID after RUN_ID's committed iteration N, with RUN_ID's config plus the overrides; RUN_ID is not touched.",
    flags: {
      from: { value: 'N', required: true, description: 'the committed iteration to fork after' },
      id: { value: 'NEW_RUN_ID', required: true, description: "the new run's id" },
      set,
    },
  },
  {
    name: 'state',
    args: ['RUN_ID'],
    summary:
      "The recipe state (task pool, history memory) committed at the latest (or given) iteration: each part's size and a sample, read from storage as the next iteration will read it.",
    flags: { iteration },
  },
  {
    name: 'report',
    args: ['RUN_ID'],
    summary: 'One self-contained HTML page (inline SVG plots, a table) from every committed manifest.',
    flags: {
      out: { value: 'FILE', path: true, description: 'where to write it (default {RUN_ID}-report.html)' },
    },
  },
  {
    name: 'export',
    args: ['RUN_ID'],
    summary:
      'The policy committed at the latest (or given) iteration as a Hugging Face model directory: config, safetensors, tokenizer, generation config; a LoRA policy as a PEFT adapter, or merged into the base weights with --merge-lora. Runs python -m selfplay_kernel export with SELFPLAY_PYTHON (default infra/kernels/.venv/bin/python).',
    flags: {
      out: { value: 'DIR|s3://…', required: true, path: true, description: 'the model directory to write' },
      iteration,
      policy: { value: 'NAME', description: 'the policy, when the run trains more than one' },
      'merge-lora': { description: 'merge a LoRA adapter into the base weights' },
      model: {
        value: 'BASE',
        description: "the base model, when not where the run's kernel loaded it",
      },
    },
  },
  {
    name: 'eval',
    args: ['RUN_ID'],
    summary:
      'Held-out accuracy of the run\'s committed policy (its latest iteration, iteration N, or 0: the base weights) on benchmark files (GSM8K, MATH-500, AIME, AMC, Minerva or {"question","answer"}; JSONL or Parquet, a path the rollout workers read or s3://), through the evaluateCheckpoint workflow; prints accuracy, and pass@k and maj@k when n > 1, per benchmark. The run\'s config comes from its workflow, or from --recipe/--config for a model with no run (e.g. a base model at --iteration 0).',
    flags: {
      bench: {
        value: '[NAME[:FORMAT]=]FILE_OR_URI',
        multiple: true,
        required: true,
        path: true,
        description: `a benchmark file; FORMAT one of ${BENCHMARK_FORMATS.join(', ')} (default: detected)`,
      },
      iteration: {
        value: 'N',
        description: 'the committed iteration (0: the base weights; default the latest)',
      },
      n: { value: 'N', description: 'samples per item (default 1)' },
      temperature: { value: 'T', description: 'sampling temperature' },
      'top-p': { value: 'P', description: 'nucleus sampling' },
      'max-tokens': { value: 'N', description: 'tokens per answer' },
      limit: { value: 'N', description: 'the first N items of each benchmark' },
      'subset-seed': { value: 'S', description: 'with --limit: a seeded random N instead' },
      template: { value: 'NAME', choices: EVAL_TEMPLATES, description: 'the prompt form' },
      recipe: { ...recipe, description: 'for a model with no run: the preset its config comes from' },
      config: { ...configFile, description: 'for a model with no run: its run config' },
      set,
    },
  },
  {
    name: 'index build',
    args: [],
    summary:
      "Build a search index from a corpus into a directory or s3://bucket/prefix (manifest last; a complete index there is kept as is); dense embeds through an OpenAI-compatible server, e.g. the kernel's 'embed' command (--embedding-url http://127.0.0.1:8100/v1), with the key in the variable --embedding-api-key-env names (the kernel's: SELFPLAY_KERNEL_TOKEN).",
    flags: {
      corpus: { value: 'URI', required: true, path: true, description: 'the corpus (JSONL or Parquet)' },
      out: { value: 'DIR_OR_S3', required: true, path: true, description: 'where the index goes' },
      kind: { value: 'KIND', choices: ['bm25', 'dense'], description: 'the index (default bm25)' },
      'embedding-url': { value: 'URL', description: "a dense index's embedding server" },
      'embedding-model': { value: 'NAME', description: 'the embedding model' },
      'embedding-api-key-env': {
        value: 'SELFPLAY_..._TOKEN',
        description: "the variable holding the embedding server's key",
      },
    },
  },
  {
    name: 'verify-answers',
    args: ['FILE'],
    summary:
      'Grade {"gold", "pred"} lines of a JSONL FILE with exactly the judge stage\'s answer checker (either side may be a whole solution: its last \\boxed{} is the answer); one {"line", "verdict", "ms"} per line (verdict equivalent, different, unparsable or timeout), counts at the end on stderr.',
    flags: {
      kind: { value: 'KIND', choices: ANSWER_KINDS, description: "the answers' kind (default expression)" },
      'timeout-ms': { value: 'N', description: 'time limit per answer' },
      out: { value: 'FILE', path: true, description: 'write the verdicts here instead of stdout' },
    },
  },
  {
    name: 'codec-server',
    args: [],
    summary:
      'Decrypt payloads for the Temporal Web UI: set its "codec endpoint" to http://HOST:PORT (keys from SELFPLAY_CODEC_KEYS).',
    flags: {
      port: { value: 'PORT', description: 'default 8081' },
      host: { value: 'HOST', description: 'default 127.0.0.1' },
      origin: {
        value: 'URL',
        multiple: true,
        description: 'an origin the UI is served from (default http://localhost:8233)',
      },
    },
  },
  {
    name: 'schedule create',
    args: [],
    summary:
      "Nightly continual training: each job resumes the lineage's promoted checkpoint, trains K iterations on unused documents, evaluates on the held-out FILE (path or s3://) and promotes if better.",
    flags: {
      lineage: { value: 'NAME', required: true, description: "the lineage's name" },
      cron: { value: '"0 2 * * *"', required: true, description: 'when jobs start' },
      iterations: { value: 'K', required: true, description: 'iterations a job' },
      eval: { value: 'FILE', required: true, path: true, description: 'the held-out set (JSONL or Parquet)' },
      recipe,
      config: configFile,
      set,
      'catchup-window': {
        value: 'DURATION',
        description: 'how late a missed job may still start (default 1h)',
      },
    },
  },
  { name: 'schedule list', args: [], summary: 'The lineage schedules.', flags: {} },
  {
    name: 'schedule describe',
    args: ['NAME'],
    summary: "A lineage's schedule, its jobs and its promoted checkpoint.",
    flags: {},
  },
  { name: 'schedule pause', args: ['NAME'], summary: "Pause a lineage's schedule.", flags: {} },
  { name: 'schedule unpause', args: ['NAME'], summary: "Unpause a lineage's schedule.", flags: {} },
  {
    name: 'schedule trigger',
    args: ['NAME'],
    summary: 'Start a job now (skipped while one runs).',
    flags: {},
  },
  { name: 'schedule delete', args: ['NAME'], summary: "Delete a lineage's schedule.", flags: {} },
  {
    name: 'help',
    args: ['COMMAND?', 'SUBCOMMAND?'],
    summary: "Every command, or one command's usage and flags.",
    flags: {},
  },
  {
    name: 'completion',
    args: ['SHELL'],
    summary:
      'Print a completion script for bash or zsh: eval "$(selfplay completion bash)" (or zsh), e.g. in ~/.bashrc.',
    flags: {},
  },
];
