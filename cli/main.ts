import { writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { resolveStartConfig } from '../config/temporal-limits';
import { startRefusal } from '../config/run-access';
import { temporalConnectionFromEnv } from '../config/temporal-connection';
import { AesGcmCodec, CODEC_KEYS_ENV, codecKeysFromEnv, dataConverterFromEnv } from '../config/payload-codec';
import { DEFAULT_UI_ORIGIN, startCodecServer } from './codec-server';
import { selfPlayRun } from '../workflows';
import { ITERATION } from '../workflows/search-attributes';
import { versionsText } from '../contracts/selfplay';
import { COMMANDS, FOOTER } from './commands';
import {
  commandHelp,
  completionScript,
  overallHelp,
  parseCommandLine,
  UsageError,
  type ParsedCommand,
} from './command-line';
import { followRun } from './follow';
import { startConfig, startRunId } from './config-file';
import { listOptions, listRuns, renderRunTable } from './list';
import { runStatus, terminal, watchStatus } from './status';
import { paramsFromAssignments, sendControl, type Control } from './controls';
import { loadManifests, renderReport } from './report';
import { committedState, storeFromEnv } from './state';
import { exportPolicy } from './export-command';
import { kernelPython } from '../activities/lib/python';
import { indexCommand } from './index-command';
import { verifyAnswersCommand } from './verify-answers';
import { forkRun, runInput, sendRollback } from './lineage';
import { evalBaseConfig, evalRequest, renderEvalOutcome, runEvaluation } from './eval-command';
import {
  controlSchedule,
  createSchedule,
  describeSchedule,
  listSchedules,
  scheduleIdFor,
  scheduleOptions,
} from './schedule';

/** The code each command runs (its arguments and flags are defined in commands.ts). */
const HANDLERS: Readonly<Record<string, (c: ParsedCommand) => Promise<void> | void>> = {
  start: (c) => start(c.flags, c.switches.has('--wait')),
  list: (c) => list(c.flags),
  status: (c) => status(runIdOf(c), c.switches.has('--watch')),
  follow: (c) => follow(runIdOf(c)),
  pause: (c) => control('pause', runIdOf(c), []),
  resume: (c) => control('resume', runIdOf(c), []),
  stop: (c) => control('stop', runIdOf(c), []),
  retry: (c) => control('retry', runIdOf(c), []),
  set: (c) => control('set', runIdOf(c), c.flags.get('--set') ?? []),
  rollback: (c) => rollback(runIdOf(c), c.flags.get('--to')?.[0]),
  fork: (c) => fork(runIdOf(c), c.flags),
  state: (c) => state(runIdOf(c), c.flags.get('--iteration')?.[0]),
  report: (c) => report(runIdOf(c), c.flags.get('--out')?.[0]),
  export: (c) => exportCommand(runIdOf(c), c.flags, c.switches.has('--merge-lora')),
  eval: (c) => evaluate(runIdOf(c), c.flags),
  'index build': (c) => indexCommand(c.flags).catch((err: unknown) => asUsageError(err)),
  'verify-answers': (c) =>
    verifyAnswersCommand(c.args[0] as string, c.flags).catch((err: unknown) => asUsageError(err)),
  'codec-server': (c) => codecServer(c.flags),
  'schedule create': (c) => scheduleCreate(c.flags),
  'schedule list': () => scheduleList(),
  'schedule describe': (c) => scheduleDescribe(c.args[0] as string),
  'schedule pause': (c) => scheduleControl(c.args[0] as string, 'pause'),
  'schedule unpause': (c) => scheduleControl(c.args[0] as string, 'unpause'),
  'schedule trigger': (c) => scheduleControl(c.args[0] as string, 'trigger'),
  'schedule delete': (c) => scheduleControl(c.args[0] as string, 'delete'),
  help: (c) => help(c.args),
  completion: (c) => completion(c.args[0] as string),
};

/** The RUN_ID argument, which the command line has checked is there. */
const runIdOf = (c: ParsedCommand): string => c.args[0] as string;

async function main(argv: string[]): Promise<void> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') return help([]);
  const command = parseCommandLine(COMMANDS, argv);
  if (command.switches.has('--help')) return console.log(commandHelp(command.spec));
  const handler = HANDLERS[command.spec.name];
  if (!handler) throw new Error(`no code for the command "${command.spec.name}" (cli/main.ts)`);
  await handler(command);
}

/** `selfplay help [COMMAND [SUBCOMMAND]]`. */
function help(words: readonly string[]): void {
  if (words.length === 0) return console.log(overallHelp(COMMANDS, FOOTER));
  const spec = parseCommandLine(COMMANDS, [...words, '--help']).spec;
  console.log(commandHelp(spec));
}

/** `selfplay completion bash|zsh`. */
function completion(shell: string): void {
  if (shell !== 'bash' && shell !== 'zsh')
    throw new UsageError(
      `completion: expected bash or zsh, got ${shell}; e.g. eval "$(selfplay completion bash)"`,
    );
  process.stdout.write(completionScript(COMMANDS, shell));
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
  const keys = asUsage(() => codecKeysFromEnv());
  if (!keys)
    throw new UsageError(`codec-server needs ${CODEC_KEYS_ENV}, the payload keys (docs/deployment.md)`);
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
  const refusal = asUsage(() => startRefusal(resolved.config));
  if (refusal) throw new UsageError(`run config ${refusal}`);
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
  const out = flag('--out') as string;
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
  const id = flags.get('--id')?.[0] as string;
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

async function scheduleCreate(flags: Map<string, string[]>): Promise<void> {
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
}

async function scheduleList(): Promise<void> {
  const schedules = await listSchedules(await client());
  if (schedules.length === 0) console.log('no lineage schedules');
  for (const s of schedules) {
    console.log(
      `${s.lineage}\t${s.paused ? 'paused' : 'active'}\t"${s.cron}"\tnext ${s.nextActionTimes[0] ?? '-'}\tlast job ${s.recentJobs.at(-1) ?? '-'}`,
    );
  }
}

async function scheduleDescribe(lineage: string): Promise<void> {
  const report = await describeSchedule(await client(), storeFromEnv(), lineage).catch(asUsageError);
  console.log(JSON.stringify(report, null, 2));
}

async function scheduleControl(
  lineage: string,
  action: 'pause' | 'unpause' | 'trigger' | 'delete',
): Promise<void> {
  await controlSchedule(await client(), lineage, action).catch(asUsageError);
  console.log(`${scheduleIdFor(lineage)}: ${action === 'trigger' ? 'triggered' : `${action}d`}`);
}

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

/**
 * An operator's mistake (a `UsageError`) prints its message; anything else its message and a hint, and its
 * stack only with --debug, wherever --debug stands.
 */
main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    const debug = process.argv.includes('--debug');
    if (debug || !(err instanceof Error)) console.error(err);
    else if (err instanceof UsageError) console.error(err.message);
    else console.error(`${err.message}\n(selfplay … --debug prints the stack trace)`);
    process.exit(1);
  },
);
