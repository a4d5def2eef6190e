import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { RECIPES } from '../config/schema';
import { ITERATION, MEAN_REWARD, RECIPE, RUN_STATE, VALID_TASK_RATE } from '../workflows/search-attributes';
import { renderTable } from './table';

/** `--state` values: the run's own states (the `SelfPlayState` search attribute) and Temporal's closed ones. */
export const LIST_STATES = [
  'running',
  'paused',
  'stopping',
  'needsOperator',
  'completed',
  'failed',
  'terminated',
  'canceled',
  'timed_out',
] as const;
export type ListState = (typeof LIST_STATES)[number];

export interface ListOptions {
  recipe?: string;
  state?: string;
  limit?: number;
}

/** `selfplay list` flags as options; the recipe and state are checked when the query is built. */
export function listOptions(flags: ReadonlyMap<string, string[]>): ListOptions {
  const raw = flags.get('--limit')?.[0];
  const limit = raw === undefined ? 20 : Number(raw);
  if (!Number.isInteger(limit) || limit <= 0)
    throw new Error(`--limit ${raw}: expected a positive integer, e.g. --limit 50`);
  const recipe = flags.get('--recipe')?.[0];
  const state = flags.get('--state')?.[0];
  return { limit, ...(recipe ? { recipe } : {}), ...(state ? { state } : {}) };
}

/** One run as `selfplay list` shows it. */
export interface RunRow {
  runId: string;
  recipe?: string;
  state: string;
  /** The last committed iteration. */
  iteration?: number;
  meanReward?: number;
  validTaskRate?: number;
  /** When the run began: its first execution's start, not its latest continuation's (`runStart`). */
  startedAt: Date;
}

/** Temporal's `ExecutionStatus` for the states the run cannot record itself. */
const CLOSED_STATUS: Partial<Record<ListState, string>> = {
  completed: 'Completed',
  failed: 'Failed',
  terminated: 'Terminated',
  canceled: 'Canceled',
  timed_out: 'TimedOut',
};

/**
 * The visibility query for `selfplay list`. Each continue-as-new leaves a closed execution under the same id,
 * so those are left out; `SelfPlayState` is trusted only while the execution runs (a terminated run never got
 * to record its end), the closed states come from Temporal's own status.
 */
export function visibilityQuery({ recipe, state }: Pick<ListOptions, 'recipe' | 'state'>): string {
  const clauses = [`WorkflowType = 'selfPlayRun'`, `ExecutionStatus != 'ContinuedAsNew'`];
  if (recipe !== undefined) {
    if (!(RECIPES as readonly string[]).includes(recipe))
      throw new Error(`--recipe ${recipe}: unknown recipe; use one of ${RECIPES.join(', ')}`);
    clauses.push(`${RECIPE.name} = '${recipe}'`);
  }
  if (state !== undefined) {
    if (!(LIST_STATES as readonly string[]).includes(state))
      throw new Error(`--state ${state}: unknown state; use one of ${LIST_STATES.join(', ')}`);
    const closed = CLOSED_STATUS[state as ListState];
    clauses.push(
      closed
        ? `ExecutionStatus = '${closed}'`
        : `ExecutionStatus = 'Running' AND ${RUN_STATE.name} = '${state}'`,
    );
  }
  return clauses.join(' AND ');
}

/** The newest `limit` runs matching the options, read from Temporal's visibility store. */
export async function listRuns(client: Client, options: ListOptions = {}): Promise<RunRow[]> {
  const limit = options.limit ?? 20;
  const rows: RunRow[] = [];
  for await (const info of client.workflow.list({ query: visibilityQuery(options), pageSize: limit })) {
    rows.push(runRow(info, await runStart(client, info)));
    if (rows.length >= limit) break;
  }
  return rows;
}

/**
 * When the run began: the start of the first execution of its chain. The visibility row is the run's latest
 * execution, which a run that continued-as-new started only at its last continuation. The first execution's
 * id comes from describing the latest (the dev server's visibility rows leave it empty). Falls back to the
 * latest execution's start when Temporal no longer holds the first (closed executions are kept only for the
 * namespace's retention period).
 */
async function runStart(client: Client, info: WorkflowExecutionInfo): Promise<Date> {
  try {
    const first =
      info.raw.firstRunId ||
      (await client.workflow.getHandle(info.workflowId, info.runId).describe()).raw.workflowExecutionInfo
        ?.firstRunId;
    if (!first || first === info.runId) return info.startTime;
    return (await client.workflow.getHandle(info.workflowId, first).describe()).startTime;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return info.startTime;
    throw err;
  }
}

function runRow(info: WorkflowExecutionInfo, startedAt: Date): RunRow {
  const attributes = info.typedSearchAttributes;
  const status = info.status.name;
  const recipe = attributes.get(RECIPE);
  const iteration = attributes.get(ITERATION);
  const meanReward = attributes.get(MEAN_REWARD);
  const validTaskRate = attributes.get(VALID_TASK_RATE);
  return {
    runId: info.workflowId,
    state: status === 'RUNNING' ? (attributes.get(RUN_STATE) ?? 'running') : closedState(status),
    startedAt,
    ...(recipe === undefined ? {} : { recipe }),
    ...(iteration === undefined ? {} : { iteration }),
    ...(meanReward === undefined ? {} : { meanReward }),
    ...(validTaskRate === undefined ? {} : { validTaskRate }),
  };
}

/** Temporal's status name as a `--state` value (Temporal spells it CANCELLED but queries 'Canceled'). */
const closedState = (status: string): string => (status === 'CANCELLED' ? 'canceled' : status.toLowerCase());

/** The runs as an aligned table; `-` where a run has not recorded a value yet (nothing committed). */
export function renderRunTable(rows: readonly RunRow[]): string {
  return renderTable(
    ['RUN', 'RECIPE', 'STATE', 'ITERATION', 'MEAN REWARD', 'VALID TASKS', 'STARTED (UTC)'],
    rows.map((r) => [
      r.runId,
      r.recipe ?? '-',
      r.state,
      r.iteration === undefined ? '-' : String(r.iteration),
      r.meanReward === undefined ? '-' : r.meanReward.toFixed(3),
      r.validTaskRate === undefined ? '-' : `${(100 * r.validTaskRate).toFixed(1)}%`,
      r.startedAt.toISOString().slice(0, 16).replace('T', ' '),
    ]),
    [3, 4, 5],
  );
}
