import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleHandle,
} from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { resolveRunConfig } from '../config/schema';
import { resolveStartConfig } from '../config/temporal-limits';
import { startRefusal } from '../config/run-access';
import { inputProblem } from '../config/input-roots';
import { loadWorkerEnv } from '../config/env';
import type { ObjectStore } from '../activities/clients/storage';
import { getJson } from '../activities/clients/storage/codec';
import { lineageLatestKey, promotedKey } from '../activities/continual/keys';
import {
  continualInputSchema,
  type CheckpointRef,
  type ContinualInput,
  type PromotedPointer,
} from '../contracts/continual';

/**
 * `selfplay schedule ...`: nightly continual training of a lineage as a Temporal Schedule whose action starts
 * `continualTraining`. One schedule per lineage, id `lineage-{name}`: jobs of one lineage never overlap
 * (SKIP, for scheduled and triggered actions alike), missed nights within the catch-up window run when the
 * server is back, and a failed job pauses the schedule until an operator unpauses it.
 */

export const scheduleIdFor = (lineage: string): string => `lineage-${lineage}`;

export interface CreateScheduleOptions extends ContinualInput {
  cron: string;
  /** e.g. `1h`, `1 day`: how late a missed action may still run. */
  catchupWindow: string;
}

/** The options as the CLI gives them, checked; every problem names the flag and the fix. */
export function scheduleOptions(input: {
  lineage?: string;
  cron?: string;
  iterations?: string;
  eval?: string;
  catchupWindow?: string;
  config: Record<string, unknown>;
}): CreateScheduleOptions {
  const problems: string[] = [];
  if (!input.cron) problems.push('--cron: required, e.g. --cron "0 2 * * *" (02:00 UTC every night)');
  const catchupWindow = input.catchupWindow ?? '1h';
  try {
    if (msToNumber(catchupWindow as Duration) <= 0) throw new Error('not positive');
  } catch {
    problems.push(
      `--catchup-window: expected a duration such as 1h or "1 day", got ${JSON.stringify(catchupWindow)}`,
    );
  }
  const parsed = continualInputSchema.safeParse({
    lineage: input.lineage,
    iterations: input.iterations === undefined ? undefined : Number(input.iterations),
    eval: input.eval,
    config: input.config,
  });
  if (!parsed.success) {
    const flag: Record<string, string> = {
      lineage: '--lineage NAME',
      iterations: '--iterations K',
      eval: '--eval FILE.jsonl',
    };
    for (const issue of parsed.error.issues) {
      const field = String(issue.path[0] ?? 'input');
      const missing = (input as Record<string, unknown>)[field] === undefined;
      problems.push(`${flag[field] ?? field}: ${missing ? 'required' : issue.message}`);
    }
  }
  const resolved = resolveStartConfig(input.config);
  if (!resolved.ok) problems.push(...resolved.problems.map((p) => `--config/--set ${p}`));
  const refusal = resolved.ok ? startRefusal(resolved.config) : undefined;
  if (refusal) problems.push(`--config/--set ${refusal}`);
  const evalOutside =
    typeof input.eval === 'string'
      ? inputProblem(loadWorkerEnv().inputRoots, input.eval, '--eval')
      : undefined;
  if (evalOutside) problems.push(evalOutside);
  if (problems.length > 0 || !parsed.success)
    throw new Error(`cannot create the schedule:\n  ${problems.join('\n  ')}`);
  return { ...parsed.data, cron: input.cron as string, catchupWindow };
}

/** Creates the lineage's schedule; its jobs run on the config's orchestrator task queue. */
export async function createSchedule(
  client: Client,
  options: CreateScheduleOptions,
): Promise<ScheduleHandle> {
  const { cron, catchupWindow, ...input } = options;
  const resolved = resolveRunConfig(input.config);
  if (!resolved.ok) throw new Error(`invalid run config:\n  ${resolved.problems.join('\n  ')}`);
  const scheduleId = scheduleIdFor(input.lineage);
  try {
    return await client.schedule.create({
      scheduleId,
      spec: { cronExpressions: [cron] },
      action: {
        type: 'startWorkflow',
        workflowType: 'continualTraining',
        workflowId: scheduleId,
        taskQueue: resolved.config.pools.orchestrator,
        args: [input],
      },
      policies: {
        overlap: ScheduleOverlapPolicy.SKIP,
        catchupWindow: catchupWindow as Duration,
        pauseOnFailure: true,
      },
      // Descriptions give the spec back as calendars: the memo keeps the cron as the operator wrote it.
      memo: { lineage: input.lineage, cron },
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) {
      throw new Error(
        `lineage "${input.lineage}" already has a schedule (${scheduleId}); change it after 'selfplay schedule delete ${input.lineage}', or choose another --lineage`,
      );
    }
    throw new Error(
      `cannot create schedule ${scheduleId}: ${err instanceof Error ? err.message : String(err)}`,
      {
        cause: err,
      },
    );
  }
}

export interface LineageSchedule {
  lineage: string;
  scheduleId: string;
  cron: string;
  paused: boolean;
  note?: string;
  nextActionTimes: string[];
  /** Workflow ids of the latest jobs, oldest first. */
  recentJobs: string[];
}

/** Every lineage schedule (those whose action starts continualTraining). */
export async function listSchedules(client: Client): Promise<LineageSchedule[]> {
  const out: LineageSchedule[] = [];
  for await (const s of client.schedule.list()) {
    if (s.action?.workflowType !== 'continualTraining') continue;
    out.push({
      lineage: memoText(s.memo, 'lineage') || s.scheduleId.replace(/^lineage-/, ''),
      scheduleId: s.scheduleId,
      cron: memoText(s.memo, 'cron'),
      paused: s.state.paused,
      ...(s.state.note ? { note: s.state.note } : {}),
      nextActionTimes: s.info.nextActionTimes.map((t) => t.toISOString()),
      recentJobs: s.info.recentActions.map((a) => a.action.workflow.workflowId),
    });
  }
  return out.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}

export type ScheduleControl = 'pause' | 'unpause' | 'trigger' | 'delete';

/** Pause (with a note), unpause, trigger one job now (skipped while one runs), or delete the schedule. */
export async function controlSchedule(
  client: Client,
  lineage: string,
  control: ScheduleControl,
): Promise<void> {
  const handle = client.schedule.getHandle(scheduleIdFor(lineage));
  await explainMissing(lineage, async () => {
    switch (control) {
      case 'pause':
        return handle.pause(`paused from the CLI by ${process.env.USER ?? 'an operator'}`);
      case 'unpause':
        return handle.unpause('unpaused from the CLI');
      case 'trigger':
        return handle.trigger(ScheduleOverlapPolicy.SKIP);
      case 'delete':
        return handle.delete();
    }
  });
}

export interface ScheduleReport extends LineageSchedule {
  /** Workflow ids of jobs running now. */
  runningJobs: string[];
  iterations: number;
  eval: string;
  promoted?: PromotedPointer;
  latest?: CheckpointRef;
}

/** The schedule as Temporal has it, plus the lineage's pointers from storage. */
export async function describeSchedule(
  client: Client,
  store: ObjectStore,
  lineage: string,
): Promise<ScheduleReport> {
  const scheduleId = scheduleIdFor(lineage);
  const d = await explainMissing(lineage, () => client.schedule.getHandle(scheduleId).describe());
  const [input] = d.action.type === 'startWorkflow' ? (d.action.args as [ContinualInput]) : [];
  const promoted = await getJson<PromotedPointer>(store, promotedKey(lineage));
  const latest = await getJson<CheckpointRef>(store, lineageLatestKey(lineage));
  return {
    lineage,
    scheduleId,
    cron: memoText(d.memo, 'cron'),
    paused: d.state.paused,
    ...(d.state.note ? { note: d.state.note } : {}),
    nextActionTimes: d.info.nextActionTimes.map((t) => t.toISOString()),
    recentJobs: d.info.recentActions.map((a) => a.action.workflow.workflowId),
    runningJobs: d.info.runningActions.map((a) => a.workflow.workflowId),
    iterations: input?.iterations ?? 0,
    eval: input?.eval ?? '',
    ...(promoted ? { promoted } : {}),
    ...(latest ? { latest } : {}),
  };
}

async function explainMissing<T>(lineage: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) {
      throw new Error(
        `lineage "${lineage}" has no schedule (${scheduleIdFor(lineage)}); 'selfplay schedule list' shows the existing ones, 'selfplay schedule create --lineage ${lineage} ...' makes one`,
      );
    }
    throw err;
  }
}

const memoText = (memo: Record<string, unknown> | undefined, key: string): string => {
  const value = memo?.[key];
  return typeof value === 'string' ? value : '';
};
