import { writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { resolveStartConfig } from '../config/temporal-limits';
import { temporalConnectionFromEnv } from '../config/temporal-connection';
import { AesGcmCodec, CODEC_KEYS_ENV, codecKeysFromEnv, dataConverterFromEnv } from '../config/payload-codec';
import { CODEC_SERVER_USAGE, DEFAULT_UI_ORIGIN, startCodecServer } from './codec-server';
import { selfPlayRun } from '../workflows';
import { ITERATION } from '../workflows/search-attributes';
import { versionsText } from '../contracts/selfplay';
import { parseFlags } from './args';
import { foreignFlagProblem, usageEntry } from './command-flags';
import { followRun } from './follow';
import { startConfig, startRunId } from './config-file';
import { listOptions, listRuns, renderRunTable } from './list';
import { runStatus, terminal, watchStatus } from './status';
import { paramsFromAssignments, sendControl, type Control } from './controls';
import { loadManifests, renderReport } from './report';
import { committedState, storeFromEnv } from './state';
import { EXPORT_USAGE, exportPolicy } from './export-command';
import { kernelPython } from '../activities/lib/python';
import { INDEX_USAGE, indexCommand } from './index-command';
import { VERIFY_USAGE, verifyAnswersCommand } from './verify-answers';
import { forkRun, runInput, sendRollback } from './lineage';
import { EVAL_USAGE, evalBaseConfig, evalRequest, renderEvalOutcome, runEvaluation } from './eval-command';
import {
  controlSchedule,
  createSchedule,
  describeSchedule,
  listSchedules,
  scheduleIdFor,
  scheduleOptions,
} from './schedule';

const USAGE = `selfplay <command>
  start --recipe NAME [--config FILE.json|.yaml|.yml] [--set key=value]... [--id RUN_ID] [--wait]
        start a run: the recipe's preset, then the file, then each --set (a dotted path, a JSON or plain
        value: --set training.optimizer.learningRate=1e-6); validated here first; --wait prints each commit
  list [--recipe NAME] [--state running|paused|stopping|needsOperator|completed|failed|...] [--limit N]
                    the newest runs (default 20) with recipe, state, last committed iteration and metrics
  status RUN_ID [--watch]
                    the run: iteration i/N, pause/stop, per-stage progress bars, recent rewards;
                    --watch redraws it every second on a terminal until the run ends or Ctrl-C
  follow RUN_ID     print each commit from now on, as start --wait does, and a failure the run waits on,
                    until the run ends
  pause RUN_ID | resume RUN_ID | stop RUN_ID
                    pause at the next stage boundary, resume, or finish the current iteration and complete
  retry RUN_ID      run again the iteration a needsOperator run waits on, once its cause is fixed
                    (what its stages stored is reused)
  set RUN_ID --set learningRate=5e-7 [--set temperature=0.8 --set groupSize=8 --set batchSize=64]
                    change parameters from the next iteration (validated by the run; refused with the reason)
  rollback RUN_ID --to N
                    cancel the iteration in flight, restore weights, optimizer and recipe state committed at
                    iteration N and go on with N+1 in a new storage lineage (refused with the run's reason)
  fork RUN_ID --from N --id NEW_RUN_ID [--set key=value]...
                    start a new run NEW_RUN_ID after RUN_ID's committed iteration N, with RUN_ID's config plus
                    the overrides; RUN_ID is not touched
  state RUN_ID [--iteration N]
                    the recipe state (task pool, history memory) committed at the latest (or given) iteration:
                    each part's size and a sample, read from storage as the next iteration will read it
  report RUN_ID [--out FILE.html]
                    one self-contained HTML page (inline SVG plots, a table) from every committed manifest;
                    default FILE: {RUN_ID}-report.html
${EXPORT_USAGE}
${EVAL_USAGE}
${INDEX_USAGE}
${VERIFY_USAGE}
${CODEC_SERVER_USAGE}
  schedule create --lineage NAME --cron "0 2 * * *" --iterations K --eval FILE.jsonl
                  [--recipe NAME] [--config FILE.json|.yaml] [--set key=value]... [--catchup-window 1h]
                    nightly continual training: each job resumes the lineage's promoted checkpoint, trains K
                    iterations on unused documents, evaluates on FILE (path or s3://) and promotes if better
  schedule list | describe NAME | pause NAME | unpause NAME | trigger NAME | delete NAME
                    the lineage schedules; trigger starts a job now (skipped while one runs)
Environment: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), SELFPLAY_STORAGE (.selfplay/storage),
             TEMPORAL_API_KEY or TEMPORAL_TLS_CERT/_KEY/_CA/_SERVER_NAME for a TLS server,
             SELFPLAY_CODEC_KEYS for encrypted payloads (docs/deployment.md)`;

/** The commands whose usage text is their own: the flags it names are the ones they take. */
const COMMAND_USAGES: Record<string, string> = {
  export: EXPORT_USAGE,
  eval: EVAL_USAGE,
  index: INDEX_USAGE,
  'verify-answers': VERIFY_USAGE,
  'codec-server': CODEC_SERVER_USAGE,
  schedule: usageEntry(USAGE, 'schedule') ?? '',
};

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { positionals, flags, switches } = asUsage(() => parseFlags(rest), USAGE);
  if (command === undefined || command === '--help') return console.log(USAGE);
  const commandUsage = COMMAND_USAGES[command] ?? usageEntry(USAGE, command) ?? USAGE;
  if (switches.has('--help')) return console.log(commandUsage);
  const foreign = foreignFlagProblem(command, [...flags.keys(), ...switches], COMMAND_USAGES);
  if (foreign) throw new UsageError(`${foreign}\n\n${commandUsage}`);
  if (command === 'start') return start(flags, switches.has('--wait'));
  if (command === 'list') return list(flags);
  if (command === 'status' && positionals[0]) return status(positionals[0], switches.has('--watch'));
  if (command === 'follow' && positionals[0]) return follow(positionals[0]);
  if (
    (command === 'pause' ||
      command === 'resume' ||
      command === 'stop' ||
      command === 'set' ||
      command === 'retry') &&
    positionals[0]
  ) {
    return control(command, positionals[0], flags.get('--set') ?? []);
  }
  if (command === 'rollback' && positionals[0]) return rollback(positionals[0], flags.get('--to')?.[0]);
  if (command === 'fork' && positionals[0]) return fork(positionals[0], flags);
  if (command === 'state' && positionals[0]) return state(positionals[0], flags.get('--iteration')?.[0]);
  if (command === 'report' && positionals[0]) return report(positionals[0], flags.get('--out')?.[0]);
  if (command === 'export' && positionals[0])
    return exportCommand(positionals[0], flags, switches.has('--merge-lora'));
  if (command === 'eval' && positionals[0]) return evaluate(positionals[0], flags);
  if (command === 'index') {
    return indexCommand(positionals, flags).catch((err: unknown) => asUsageError(err));
  }
  if (command === 'verify-answers') {
    return verifyAnswersCommand(positionals, flags).catch((err: unknown) => asUsageError(err));
  }
  if (command === 'schedule' && positionals[0]) return schedule(positionals[0], positionals[1], flags);
  if (command === 'codec-server') return codecServer(flags);
  throw new UsageError(USAGE);
}

async function client(): Promise<Client> {
  const { namespace, ...options } = temporalConnectionFromEnv();
  const { address } = options;
  const connection = await Connection.connect(options).catch((err: unknown) => {
    throw new UsageError(
      `cannot reach Temporal at ${address} (${String(err)}); start it with 'bash infra/local/temporal.sh start' or set TEMPORAL_ADDRESS`,
    );
  });
  return new Client({ connection, namespace, dataConverter: asUsage(() => dataConverterFromEnv()) });
}

/** Serves /encode and /decode for the Web UI until SIGINT/SIGTERM. */
async function codecServer(flags: Map<string, string[]>): Promise<void> {
  const keys = asUsage(() => codecKeysFromEnv(), CODEC_SERVER_USAGE);
  if (!keys) throw new UsageError(`codec-server needs ${CODEC_KEYS_ENV}:\n${CODEC_SERVER_USAGE}`);
  const port = Number(flags.get('--port')?.[0] ?? 8081);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port: expected a port number, got ${flags.get('--port')?.[0]}`);
  }
  const server = await startCodecServer({
    codec: new AesGcmCodec(keys),
    host: flags.get('--host')?.[0] ?? '127.0.0.1',
    port,
    origins: flags.get('--origin') ?? [DEFAULT_UI_ORIGIN],
  });
  console.log(`codec server on ${server.url} (keys ${keys.map((k) => k.id).join(', ')}; first encrypts)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
}

async function start(flags: Map<string, string[]>, wait: boolean): Promise<void> {
  const config = asUsage(() =>
    startConfig({
      file: flags.get('--config')?.[0],
      recipe: flags.get('--recipe')?.[0],
      sets: flags.get('--set') ?? [],
    }),
  );
  const resolved = resolveStartConfig(config);
  if (!resolved.ok) throw new UsageError(`invalid run config:\n  ${resolved.problems.join('\n  ')}`);
  const runId = asUsage(() => startRunId(resolved.config, flags.get('--id')?.[0], new Date()));
  const c = await client();
  await c.workflow.start(selfPlayRun, {
    workflowId: runId,
    taskQueue: resolved.config.pools.orchestrator,
    args: [config],
  });
  console.log(
    `started run ${runId} (${resolved.config.recipe}, ${resolved.config.iterations} iterations) on task queue ${resolved.config.pools.orchestrator}`,
  );
  if (wait) await followRun(c, runId);
}

/** `selfplay follow RUN`: the commits after the run's last one so far, as `start --wait` prints them. */
async function follow(runId: string): Promise<void> {
  const c = await client();
  const description = await c.workflow
    .getHandle(runId)
    .describe()
    .catch((err: unknown) => asUsageError(err, 'list runs with selfplay list'));
  await followRun(c, runId, { after: description.typedSearchAttributes.get(ITERATION) ?? 0 });
}

async function list(flags: Map<string, string[]>): Promise<void> {
  const options = asUsage(() => listOptions(flags));
  const rows = await listRuns(await client(), options).catch(asUsageError);
  console.log(
    rows.length ? renderRunTable(rows) : 'no runs match; start one with selfplay start --recipe NAME',
  );
}

async function status(runId: string, watch: boolean): Promise<void> {
  const c = await client();
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  await watchStatus(() => runStatus(c, runId).catch(asUsageError), terminal(watch), stop.signal);
}

async function state(runId: string, iteration: string | undefined): Promise<void> {
  const at = iteration === undefined ? undefined : Number(iteration);
  if (at !== undefined && !(Number.isInteger(at) && at > 0))
    throw new UsageError(`--iteration: expected a positive integer, got ${iteration}`);
  const report = await committedState(storeFromEnv(), runId, at).catch(asUsageError);
  console.log(
    `run ${report.runId} (${report.recipe}), state committed at iteration ${report.iteration}${report.stateKey ? ` (${report.stateKey})` : ''}`,
  );
  if (report.parts.length === 0) console.log('  the recipe keeps no state');
  for (const part of report.parts) {
    console.log(`  ${part.name}: ${part.size} entr${part.size === 1 ? 'y' : 'ies'}`);
    for (const entry of part.sample) console.log(`    ${JSON.stringify(entry).slice(0, 200)}`);
  }
}

async function exportCommand(runId: string, flags: Map<string, string[]>, mergeLora: boolean): Promise<void> {
  const flag = (name: string): string | undefined => flags.get(name)?.[0];
  const out = flag('--out');
  if (!out)
    throw new UsageError(`export: --out DIR or --out s3://bucket/prefix is required\n\n${EXPORT_USAGE}`);
  const iteration = flag('--iteration');
  const at = iteration === undefined ? undefined : Number(iteration);
  if (at !== undefined && !(Number.isInteger(at) && at >= 0))
    throw new UsageError(`--iteration: expected an integer ≥ 0, got ${iteration}`);
  const policy = flag('--policy');
  const model = flag('--model');
  const done = await exportPolicy(storeFromEnv(), {
    runId,
    out,
    mergeLora,
    python: kernelPython(),
    ...(at === undefined ? {} : { iteration: at }),
    ...(policy ? { policy } : {}),
    ...(model ? { model } : {}),
  }).catch(asUsageError);
  console.log(
    `exported ${done.policy} v${done.policyVersion} of run ${runId} to ${done.out} (${done.format}): ${done.files.join(', ')}`,
  );
}

async function report(runId: string, out: string | undefined): Promise<void> {
  const store = storeFromEnv();
  const manifests = await loadManifests(store, runId).catch(asUsageError);
  if (manifests.length === 0)
    throw new UsageError(`run "${runId}" has no committed iteration in ${store.root}`);
  const file = out ?? `${runId.replace(/[^A-Za-z0-9._-]/g, '_')}-report.html`;
  writeFileSync(file, renderReport(runId, manifests));
  console.log(`wrote ${file}: ${manifests.length} committed iterations of run ${runId}`);
}

async function evaluate(runId: string, flags: Map<string, string[]>): Promise<void> {
  const flag = (name: string): string | undefined => flags.get(name)?.[0];
  const c = await client();
  const base = await evalBaseConfig(
    { file: flag('--config'), recipe: flag('--recipe') },
    () => runInput(c, runId),
    runId,
  ).catch(asUsageError);
  const request = asUsage(() =>
    evalRequest(
      runId,
      {
        bench: flags.get('--bench') ?? [],
        iteration: flag('--iteration'),
        n: flag('--n'),
        temperature: flag('--temperature'),
        topP: flag('--top-p'),
        maxTokens: flag('--max-tokens'),
        limit: flag('--limit'),
        subsetSeed: flag('--subset-seed'),
        template: flag('--template'),
        set: flags.get('--set') ?? [],
      },
      base,
    ),
  );
  const outcome = await runEvaluation(c, request).catch(asUsageError);
  console.log(renderEvalOutcome(outcome));
}

async function control(command: Control, runId: string, assignments: string[]): Promise<void> {
  const params = command === 'set' ? paramsFromAssignments(assignments) : {};
  const progress = await sendControl(await client(), runId, command, params).catch(asUsageError);
  console.log(
    `${runId}: ${progress.state}, iteration ${progress.iteration}/${progress.iterations}, last committed ` +
      `${progress.lastCommitted}, params ${JSON.stringify(progress.params)}`,
  );
}

async function rollback(runId: string, to: string | undefined): Promise<void> {
  const iteration = positiveInteger('--to', to);
  const progress = await sendRollback(await client(), runId, iteration).catch(asUsageError);
  console.log(
    `${runId}: rolled back to iteration ${progress.lastCommitted} (${versionsText(progress.versions)}); ` +
      `going on with iteration ${progress.lastCommitted + 1} in lineage ${progress.lineage}, ${progress.state}`,
  );
}

async function fork(runId: string, flags: Map<string, string[]>): Promise<void> {
  const from = positiveInteger('--from', flags.get('--from')?.[0]);
  const id = flags.get('--id')?.[0];
  if (!id) throw new UsageError('fork: --id NEW_RUN_ID is required');
  const forked = await forkRun(await client(), storeFromEnv(), runId, {
    from,
    id,
    set: flags.get('--set') ?? [],
  }).catch(asUsageError);
  console.log(
    `forked ${runId} at iteration ${from} (${forked.resumeFrom.runId}): started run ${forked.workflowId}, ` +
      `going on with iteration ${from + 1}`,
  );
}

function positiveInteger(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < 1)
    throw new UsageError(
      `${flag}: expected a committed iteration (a positive integer), got ${value ?? 'nothing'}`,
    );
  return n;
}

async function schedule(
  action: string,
  lineage: string | undefined,
  flags: Map<string, string[]>,
): Promise<void> {
  if (action === 'create') {
    const flag = (name: string): string | undefined => flags.get(name)?.[0];
    const options = asUsage(() =>
      scheduleOptions({
        lineage: flag('--lineage'),
        cron: flag('--cron'),
        iterations: flag('--iterations'),
        eval: flag('--eval'),
        catchupWindow: flag('--catchup-window'),
        config: startConfig({
          file: flags.get('--config')?.[0],
          recipe: flags.get('--recipe')?.[0],
          sets: flags.get('--set') ?? [],
        }),
      }),
    );
    await createSchedule(await client(), options).catch(asUsageError);
    console.log(
      `created schedule ${scheduleIdFor(options.lineage)}: "${options.cron}", ${options.iterations} iterations a job, evaluated on ${options.eval}`,
    );
    return;
  }
  if (action === 'list') {
    const schedules = await listSchedules(await client());
    if (schedules.length === 0) console.log('no lineage schedules');
    for (const s of schedules) {
      console.log(
        `${s.lineage}\t${s.paused ? 'paused' : 'active'}\t"${s.cron}"\tnext ${s.nextActionTimes[0] ?? '-'}\tlast job ${s.recentJobs.at(-1) ?? '-'}`,
      );
    }
    return;
  }
  if (!lineage) throw new UsageError(USAGE);
  if (action === 'describe') {
    const report = await describeSchedule(await client(), storeFromEnv(), lineage).catch(asUsageError);
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  if (action === 'pause' || action === 'unpause' || action === 'trigger' || action === 'delete') {
    await controlSchedule(await client(), lineage, action).catch(asUsageError);
    console.log(`${scheduleIdFor(lineage)}: ${action === 'trigger' ? 'triggered' : `${action}d`}`);
    return;
  }
  throw new UsageError(USAGE);
}

class UsageError extends Error {}

/** An error the operator can act on: printed as its message (then `hint`, if any), without a stack. */
const asUsageError = (err: unknown, hint?: string): never => {
  throw new UsageError(`${err instanceof Error ? err.message : String(err)}${hint ? `\n\n${hint}` : ''}`);
};
const asUsage = <T>(fn: () => T, hint?: string): T => {
  try {
    return fn();
  } catch (err) {
    return asUsageError(err, hint);
  }
};

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof UsageError ? err.message : err);
    process.exit(1);
  },
);
