import path from 'node:path';
import type { Client } from '@temporalio/client';
import { BENCHMARK_FORMATS, BENCHMARK_NAME, EVAL_TEMPLATES } from '../config/evaluation';
import { resolveRunConfig } from '../config/schema';
import { evaluateCheckpoint } from '../workflows';
import type { EvaluateCheckpointOutcome, EvaluateCheckpointRequest } from '../contracts/evaluation';
import { applySet } from './args';
import { startConfig } from './config-file';
import { renderTable } from './table';

/** The flags of `selfplay eval`, as parsed (each value a string, as typed). */
export interface EvalFlags {
  bench: readonly string[];
  iteration?: string | undefined;
  n?: string | undefined;
  temperature?: string | undefined;
  topP?: string | undefined;
  maxTokens?: string | undefined;
  limit?: string | undefined;
  subsetSeed?: string | undefined;
  template?: string | undefined;
  set: readonly string[];
}

/**
 * One `--bench`: `FILE_OR_URI`, `NAME=FILE_OR_URI` or `NAME:FORMAT=FILE_OR_URI`. Without a name, the file's
 * base name less `.gz`, `.jsonl` and a `-test` suffix (`gsm8k-test.jsonl` → `gsm8k`).
 */
export function parseBench(spec: string): { name: string; uri: string; format?: string } {
  const named = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?::([a-z0-9]+))?=(.+)$/.exec(spec);
  if (named) {
    const [, name, format, uri] = named as unknown as [string, string, string | undefined, string];
    if (format !== undefined && !(BENCHMARK_FORMATS as readonly string[]).includes(format))
      throw new Error(`--bench ${spec}: unknown format "${format}"; one of ${BENCHMARK_FORMATS.join(', ')}`);
    return { name, uri, ...(format ? { format } : {}) };
  }
  const name = path
    .basename(spec)
    .replace(/\.gz$/, '')
    .replace(/\.jsonl?$/, '')
    .replace(/[-_]test$/, '');
  if (!BENCHMARK_NAME.test(name))
    throw new Error(`--bench ${spec}: cannot name it after its file; write --bench NAME=${spec}`);
  return { name, uri: spec };
}

/**
 * The workflow's request: `base` (the run's config) with `--set` applied, then the `evaluation` section's
 * benchmarks and whichever sampling flags are given (the others keep the run's own evaluation settings).
 */
export function evalRequest(
  runId: string,
  flags: EvalFlags,
  base: Record<string, unknown>,
): EvaluateCheckpointRequest {
  if (flags.bench.length === 0)
    throw new Error('eval: give at least one --bench FILE_OR_URI (or NAME=FILE_OR_URI)');
  const config = structuredClone(base);
  for (const assignment of flags.set) applySet(config, assignment);
  const limit = optionalNumber('--limit', flags.limit);
  const subsetSeed = optionalNumber('--subset-seed', flags.subsetSeed);
  const benchmarks = flags.bench.map((spec) => ({
    ...parseBench(spec),
    ...(limit === undefined ? {} : { limit }),
    ...(subsetSeed === undefined ? {} : { subsetSeed }),
  }));
  if (flags.template !== undefined && !(EVAL_TEMPLATES as readonly string[]).includes(flags.template))
    throw new Error(
      `--template ${flags.template}: one of ${EVAL_TEMPLATES.join(', ')} (a template of your own goes in evaluation.template)`,
    );
  const own = (config.evaluation ?? {}) as Record<string, unknown>;
  const sampling = {
    n: optionalNumber('--n', flags.n),
    temperature: optionalNumber('--temperature', flags.temperature),
    topP: optionalNumber('--top-p', flags.topP),
    maxTokens: optionalNumber('--max-tokens', flags.maxTokens),
    template: flags.template,
  };
  config.evaluation = {
    ...own,
    ...Object.fromEntries(Object.entries(sampling).filter(([, v]) => v !== undefined)),
    benchmarks,
  };
  const resolved = resolveRunConfig(config);
  if (!resolved.ok) throw new Error(`invalid evaluation config:\n  ${resolved.problems.join('\n  ')}`);
  const iteration = optionalNumber('--iteration', flags.iteration);
  if (iteration !== undefined && !(Number.isInteger(iteration) && iteration >= 0))
    throw new Error(
      `--iteration: expected a committed iteration or 0 (the base weights), got ${flags.iteration}`,
    );
  return { runId, config, ...(iteration === undefined ? {} : { iteration }) };
}

function optionalNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`${flag}: expected a number, got ${value}`);
  return n;
}

/** The config `selfplay eval` starts from: `--recipe`/`--config` when given, else the run's own. */
export async function evalBaseConfig(
  sources: { file?: string | undefined; recipe?: string | undefined },
  runConfig: () => Promise<Record<string, unknown>>,
  runId: string,
): Promise<Record<string, unknown>> {
  if (sources.file !== undefined || sources.recipe !== undefined) return startConfig(sources);
  return runConfig().catch((err: unknown) => {
    throw new Error(
      `cannot read the config of run ${runId} from Temporal (${err instanceof Error ? err.message : String(err)}); ` +
        'give it with --recipe NAME [--config FILE]',
    );
  });
}

/**
 * Starts `evaluateCheckpoint` on the run's orchestrator queue and waits for its outcome; a failure is
 * reported with its root cause (the activity's own message, not "Activity task failed").
 */
export async function runEvaluation(
  client: Client,
  request: EvaluateCheckpointRequest,
  now = new Date(),
): Promise<EvaluateCheckpointOutcome> {
  const resolved = resolveRunConfig(request.config);
  if (!resolved.ok) throw new Error(`invalid evaluation config:\n  ${resolved.problems.join('\n  ')}`);
  const at = request.iteration === undefined ? 'latest' : `i${request.iteration}`;
  const workflowId = `eval-${request.runId}-${at}-${now.toISOString().replace(/[:.]/g, '-')}`;
  return client.workflow
    .execute(evaluateCheckpoint, {
      workflowId,
      taskQueue: resolved.config.pools.orchestrator,
      args: [request],
    })
    .catch((err: unknown) => {
      let root: unknown = err;
      while (root instanceof Error && root.cause instanceof Error) root = root.cause;
      throw new Error(
        `evaluation ${workflowId} failed: ${root instanceof Error ? root.message : String(root)}`,
      );
    });
}

/** The outcome as the CLI prints it: what was evaluated, one row per benchmark, where the verdicts are. */
export function renderEvalOutcome(outcome: EvaluateCheckpointOutcome): string {
  const benchmarks = Object.entries(outcome.result.benchmarks);
  const ks = [...new Set(benchmarks.flatMap(([, b]) => Object.keys(b.passAtK)))]
    .map(Number)
    .filter((k) => k > 1)
    .sort((a, b) => a - b);
  const pct = (v: number | undefined): string => (v === undefined ? '-' : `${(100 * v).toFixed(1)}%`);
  const header = [
    'BENCHMARK',
    'FORMAT',
    'ITEMS',
    'N',
    'ACCURACY',
    ...ks.map((k) => `PASS@${k}`),
    ...ks.map((k) => `MAJ@${k}`),
    'NO ANSWER',
    'REUSED',
  ];
  const rows = benchmarks.map(([name, b]) => [
    name,
    b.format,
    String(b.items),
    String(b.n),
    pct(b.accuracy),
    ...ks.map((k) => pct(b.passAtK[String(k)])),
    ...ks.map((k) => pct(b.majAtK[String(k)])),
    pct(b.noAnswer),
    String(b.reusedItems),
  ]);
  const numeric = header.map((_, i) => i).filter((i) => i >= 2);
  const head =
    `run ${outcome.runId}, iteration ${outcome.iteration}: policy ${outcome.policy} ` +
    `v${outcome.committed.version}`;
  const keys = benchmarks.map(([name, b]) => `  ${name}: ${b.resultsKey}`);
  return [
    head,
    renderTable(header, rows, numeric),
    'per-item verdicts (under SELFPLAY_STORAGE):',
    ...keys,
  ].join('\n');
}
