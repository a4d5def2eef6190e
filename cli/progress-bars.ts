import { versionsText, type StageName } from '../contracts/selfplay';
import type { IterationProgress, RunProgress, StageCount } from '../workflows/messages';
import type { PendingActivity, StatusSnapshot, UnansweredQuery } from './status-snapshot';
import { renderTable } from './table';

/** The stages that run once per shard: shown as bars out of the plan's shard count. */
const SHARD_STAGES: readonly StageName[] = ['propose', 'gate', 'solve', 'judge'];
/** Every stage in pipeline order. */
const STAGES: readonly StageName[] = ['sync', 'plan', ...SHARD_STAGES, 'filter', 'update', 'commit'];

const DONE = '█';
const RUNNING = '▒';
const TODO = '░';
const MIN_BAR = 10;
const MAX_BAR = 40;
/** Room for the stage name, the counts and a note such as "12 running" beside the bar. */
const NOTE_WIDTH = 12;

/**
 * A bar of `width` cells: finished shards, then those in flight, then those not started. It is full only
 * when every shard has finished, so a nearly done stage never looks done.
 */
export function bar(finished: number, running: number, total: number, width: number): string {
  if (total <= 0) return TODO.repeat(width);
  const done = Math.floor((width * Math.min(finished, total)) / total);
  const busy = Math.floor((width * Math.min(finished + running, total)) / total) - done;
  return DONE.repeat(done) + RUNNING.repeat(busy) + TODO.repeat(width - done - busy);
}

/** `selfplay status`: the run, the running iteration's stages, recent iterations; no line wider than `width`. */
export function renderStatus(snapshot: StatusSnapshot, width: number): string {
  const lines = snapshot.progress
    ? runningLines(snapshot.progress, snapshot.iteration, width)
    : snapshot.unanswered
      ? unansweredLines(snapshot.runId, snapshot.unanswered)
      : closedLines(snapshot);
  if (snapshot.pending?.length) lines.push(...pendingLines(snapshot.pending, width));
  const recent =
    snapshot.progress?.recent ??
    snapshot.outcome?.recent.map((r) => ({ iteration: r.iteration, ...r.summary }));
  if (recent?.length)
    lines.push(
      '',
      'recent iterations',
      ...recentTable(recent)
        .split('\n')
        .map((l) => `  ${l}`),
    );
  return lines.map((line) => line.slice(0, Math.max(width, 1))).join('\n');
}

function runningLines(run: RunProgress, iteration: IterationProgress | undefined, width: number): string[] {
  const lines = [
    `run ${run.runId} (${run.recipe}): iteration ${run.iteration}/${run.iterations}, ${run.state}; last committed ${run.lastCommitted}, ${versionsText(run.versions)}`,
  ];
  if (run.paused)
    lines.push(`paused: ${pauseNote(run, iteration)}; resume with: selfplay resume ${run.runId}`);
  if (run.failure)
    lines.push(
      ...wrapped(
        `needs operator: iteration ${run.failure.iteration} failed (${run.failure.type}): ${run.failure.message}`,
        width,
      ),
      `  fix the cause, then: selfplay retry ${run.runId}  (or rollback, or stop)`,
    );
  else if (run.stopRequested)
    lines.push(`stopping: the run completes once iteration ${run.iteration} has committed`);
  if (iteration) lines.push(`iteration ${iteration.iteration}`, ...stageLines(iteration, width));
  else if (!run.iterationInFlight && !run.paused && !run.failure) lines.push('between iterations');
  return lines;
}

/**
 * The activities waiting on a retry, each with its attempt and last failure (wrapped whole: the cause is what
 * the operator needs), then how many more are on their first attempt.
 */
function pendingLines(pending: PendingActivity[], width: number): string[] {
  const retried = pending.filter((a) => a.attempt > 1 || a.lastFailure);
  const first = pending.length - retried.length;
  return [
    'pending activities',
    ...retried.flatMap((a) =>
      wrapped(
        `  ${a.activity} (${a.workflowId}): attempt ${a.attempt}${a.lastFailure ? `; last failure: ${a.lastFailure}` : ''}`,
        width,
      ),
    ),
    ...(first ? [`  ${first} on their first attempt`] : []),
  ];
}

/**
 * `text` in lines of at most `width` characters, broken at spaces where it can be, the later lines indented by
 * two: the cause of a failure is what the operator needs whole, where any other line may lose its tail.
 */
function wrapped(text: string, width: number): string[] {
  const room = Math.max(width, 3); // more than the indent, so every line takes some of the text
  const lines: string[] = [];
  let rest = text;
  while (rest.length > room) {
    const space = rest.lastIndexOf(' ', room);
    const cut = space > room / 2 ? space : room;
    lines.push(rest.slice(0, cut));
    rest = `  ${rest.slice(cut).trimStart()}`;
  }
  return [...lines, rest];
}

function pauseNote(run: RunProgress, iteration: IterationProgress | undefined): string {
  if (!run.iterationInFlight) return 'no iteration starts';
  if (!iteration || iteration.held) return 'held at a stage boundary';
  return `${iteration.stagesInFlight} running stage call(s) finish first, then it holds`;
}

/** The plan's shards so far, and its rounds when the recipe gathers more than one (SPELL's accumulator). */
function planNote(shards: number | undefined, rounds: number): string {
  if (shards === undefined) return '';
  return `, ${shards} shard${shards === 1 ? '' : 's'}${rounds > 1 ? ` in ${rounds} rounds` : ''}`;
}

function stageLines(it: IterationProgress, width: number): string[] {
  const total = it.shards ?? 0;
  const countWidth = 2 * String(total).length + 1;
  const barWidth = Math.min(
    MAX_BAR,
    Math.max(MIN_BAR, width - (2 + 8 + 1 + 1 + countWidth + 2 + NOTE_WIDTH)),
  );
  return STAGES.map((stage) => {
    const count: StageCount = it.stages[stage] ?? { started: 0, finished: 0 };
    const running = count.started - count.finished;
    const name = `  ${stage.padEnd(8)} `;
    if (!SHARD_STAGES.includes(stage)) {
      const state = count.started === 0 ? 'pending' : running > 0 ? 'running' : 'done';
      return `${name}${state}${stage === 'plan' ? planNote(it.shards, count.started) : ''}`;
    }
    const counts = `${count.finished}/${it.shards ?? '?'}`.padStart(countWidth);
    const note = running > 0 ? `${running} running` : it.paused && count.finished < total ? 'paused' : '';
    return `${name}${bar(count.finished, running, total, barWidth)} ${counts}  ${note}`.trimEnd();
  });
}

/** A running run whose query nobody answered: what visibility last recorded, and where the worker is missing. */
function unansweredLines(runId: string, u: UnansweredQuery): string[] {
  const last = [
    u.iteration !== undefined ? `last committed ${u.iteration}` : undefined,
    u.state !== undefined ? `state ${u.state}` : undefined,
  ].filter(Boolean);
  return [
    `run ${runId}${u.recipe ? ` (${u.recipe})` : ''}: running${last.length ? ` (last recorded: ${last.join(', ')})` : ''}`,
    `no worker answered its progress query in ${u.waitedMs / 1000} s: task queue ${u.taskQueue} has no worker`,
    `running (or only stuck ones: see their logs); start one with: npx tsx workers/main.ts orchestrator`,
    `(same TEMPORAL_ADDRESS, namespace and queue prefix)`,
  ];
}

function closedLines(snapshot: StatusSnapshot): string[] {
  const { runId, status, outcome, failure } = snapshot;
  if (outcome)
    return [
      `run ${runId}: ${status.toLowerCase()}${outcome.stopped ? ' (stopped early)' : ''}; ${outcome.lastCommitted} iteration(s) committed, ${versionsText(outcome.versions)}`,
    ];
  return [`run ${runId}: ${status.toLowerCase()}${failure ? `: ${failure}` : ''}`];
}

function recentTable(recent: NonNullable<RunProgress['recent']>): string {
  return renderTable(
    ['ITERATION', 'VALID TASKS', 'MEAN REWARD', 'BY ROLE', 'ROWS', 'SECONDS'],
    recent.map((r) => [
      String(r.iteration),
      `${(100 * r.validTaskRate).toFixed(1)}%`,
      r.meanReward.toFixed(3),
      Object.entries(r.meanRewardByRole)
        .map(([role, reward]) => `${role} ${reward.toFixed(3)}`)
        .join(', '),
      String(r.rows),
      r.seconds.toFixed(1),
    ]),
    [0, 1, 2, 4, 5],
  );
}
