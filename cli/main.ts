import { readFileSync, writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { resolveRunConfig } from '../config/schema';
import { selfPlayRun } from '../workflows';
import { progressQuery } from '../workflows/messages';
import { applySet, parseFlags } from './args';
import { paramsFromAssignments, sendControl, type Control } from './controls';
import { loadManifests, renderReport } from './report';
import { committedState, storeFromEnv } from './state';
import { INDEX_USAGE, indexCommand } from './index-command';

const USAGE = `selfplay <command>
  start --recipe NAME [--config FILE.json] [--set key=value]... [--id RUN_ID] [--wait]
        start a run (the config is validated here first); --wait prints each committed iteration
  status RUN_ID     the run's progress
  pause RUN_ID | resume RUN_ID | stop RUN_ID
                    pause at the next stage boundary, resume, or finish the current iteration and complete
  set RUN_ID --set learningRate=5e-7 [--set temperature=0.8 --set groupSize=8 --set batchSize=64]
                    change parameters from the next iteration (validated by the run; refused with the reason)
  state RUN_ID [--iteration N]
                    the recipe state (task pool, history memory) committed at the latest (or given) iteration:
                    each part's size and a sample, read from storage as the next iteration will read it
  report RUN_ID [--out FILE.html]
                    one self-contained HTML page (inline SVG plots, a table) from every committed manifest;
                    default FILE: {RUN_ID}-report.html
${INDEX_USAGE}
Environment: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), SELFPLAY_STORAGE (.selfplay/storage)`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { positionals, flags, switches } = parseFlags(rest);
  if (command === 'start') return start(flags, switches.has('--wait'));
  if (command === 'status' && positionals[0]) return status(positionals[0]);
  if (
    (command === 'pause' || command === 'resume' || command === 'stop' || command === 'set') &&
    positionals[0]
  ) {
    return control(command, positionals[0], flags.get('--set') ?? []);
  }
  if (command === 'state' && positionals[0]) return state(positionals[0], flags.get('--iteration')?.[0]);
  if (command === 'report' && positionals[0]) return report(positionals[0], flags.get('--out')?.[0]);
  if (command === 'index') {
    return indexCommand(positionals, flags).catch((err: unknown) => {
      throw new UsageError(err instanceof Error ? err.message : String(err));
    });
  }
  throw new UsageError(USAGE);
}

async function client(): Promise<Client> {
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const connection = await Connection.connect({ address }).catch((err: unknown) => {
    throw new UsageError(
      `cannot reach Temporal at ${address} (${String(err)}); start it with 'bash infra/local/temporal.sh start' or set TEMPORAL_ADDRESS`,
    );
  });
  return new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
}

async function start(flags: Map<string, string[]>, wait: boolean): Promise<void> {
  const file = flags.get('--config')?.[0];
  const config: Record<string, unknown> = file
    ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>)
    : {};
  const recipe = flags.get('--recipe')?.[0];
  if (recipe) config.recipe = recipe;
  for (const s of flags.get('--set') ?? []) applySet(config, s);
  const resolved = resolveRunConfig(config);
  if (!resolved.ok) throw new UsageError(`invalid run config:\n  ${resolved.problems.join('\n  ')}`);
  const runId =
    flags.get('--id')?.[0] ??
    resolved.config.runId ??
    `${resolved.config.recipe}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const c = await client();
  const handle = await c.workflow.start(selfPlayRun, {
    workflowId: runId,
    taskQueue: resolved.config.pools.orchestrator,
    args: [config],
  });
  console.log(
    `started run ${runId} (${resolved.config.recipe}, ${resolved.config.iterations} iterations) on task queue ${resolved.config.pools.orchestrator}`,
  );
  if (!wait) return;
  let shown = 0;
  const result = handle.result();
  let done = false;
  void result.finally(() => (done = true)).catch(() => undefined);
  while (!done) {
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    const progress = await c.workflow
      .getHandle(runId)
      .query(progressQuery)
      .catch(() => undefined);
    for (const it of progress?.recent ?? []) {
      if (it.iteration <= shown) continue;
      shown = it.iteration;
      const rewards = Object.entries(it.meanRewardByRole)
        .map(([role, r]) => `${role} ${r.toFixed(3)}`)
        .join(', ');
      console.log(
        `iteration ${it.iteration} committed: valid tasks ${(100 * it.validTaskRate).toFixed(1)}%, mean reward ${rewards}, ${it.rows} training rows, ${it.seconds.toFixed(1)} s`,
      );
    }
  }
  const outcome = await result;
  console.log(
    `run ${runId} completed: ${outcome.lastCommitted} iterations committed, policy version ${outcome.policyVersion}`,
  );
}

async function status(runId: string): Promise<void> {
  const c = await client();
  const handle = c.workflow.getHandle(runId);
  const description = await handle.describe();
  const progress = await handle.query(progressQuery).catch(() => undefined);
  console.log(JSON.stringify({ status: description.status.name, ...progress }, null, 2));
}

async function state(runId: string, iteration: string | undefined): Promise<void> {
  const at = iteration === undefined ? undefined : Number(iteration);
  if (at !== undefined && !(Number.isInteger(at) && at > 0))
    throw new UsageError(`--iteration: expected a positive integer, got ${iteration}`);
  const report = await committedState(storeFromEnv(), runId, at).catch((err: unknown) => {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  });
  console.log(
    `run ${report.runId} (${report.recipe}), state committed at iteration ${report.iteration}${report.stateKey ? ` (${report.stateKey})` : ''}`,
  );
  if (report.parts.length === 0) console.log('  the recipe keeps no state');
  for (const part of report.parts) {
    console.log(`  ${part.name}: ${part.size} entr${part.size === 1 ? 'y' : 'ies'}`);
    for (const entry of part.sample) console.log(`    ${JSON.stringify(entry).slice(0, 200)}`);
  }
}

async function report(runId: string, out: string | undefined): Promise<void> {
  const store = storeFromEnv();
  const manifests = await loadManifests(store, runId).catch((err: unknown) => {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  });
  if (manifests.length === 0)
    throw new UsageError(`run "${runId}" has no committed iteration in ${store.root}`);
  const file = out ?? `${runId.replace(/[^A-Za-z0-9._-]/g, '_')}-report.html`;
  writeFileSync(file, renderReport(runId, manifests));
  console.log(`wrote ${file}: ${manifests.length} committed iterations of run ${runId}`);
}

async function control(command: Control, runId: string, assignments: string[]): Promise<void> {
  const params = command === 'set' ? paramsFromAssignments(assignments) : {};
  const progress = await sendControl(await client(), runId, command, params).catch((err: unknown) => {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  });
  console.log(
    `${runId}: ${progress.state}, iteration ${progress.iteration}/${progress.iterations}, last committed ` +
      `${progress.lastCommitted}, params ${JSON.stringify(progress.params)}`,
  );
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof UsageError ? err.message : err);
    process.exit(1);
  },
);
