import { spawn } from 'node:child_process';
import { sendControl } from '../../cli/controls';
import { listRuns, renderRunTable } from '../../cli/list';
import { bar, renderStatus } from '../../cli/progress-bars';
import { runStatus } from '../../cli/status';
import { selfPlayRun } from '../../workflows';
import type { StageName } from '../../contracts/selfplay';
import { CLI, selfplay } from '../support/cli';
import { startStack, uniqueId, type TestStack } from '../support/stack';
import { waitFor } from '../support/wait';

const SHARD_STAGES: StageName[] = ['propose', 'gate', 'solve', 'judge'];
const ESC = '\x1b';
/** What `--watch` writes before each redraw: back to the drawing's first line, clear below. */
const REDRAW = new RegExp(`${ESC}\\[\\d+F${ESC}\\[0J`);

/** `selfplay status` and `selfplay list` on the real server, against a run paused in the middle of an iteration. */
describe('selfplay status and list', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ llm: { latencyMs: 100 } });
  });
  afterAll(() => stack.close());

  /** The CLI as an operator runs it (no terminal: one snapshot). */
  const cli = (...args: string[]) => selfplay(args, stack.cliEnv);

  /**
   * `status RUN --watch` on a real terminal (a pty from util-linux `script`): it redraws in place until Ctrl-C,
   * typed into the terminal so the line discipline turns it into SIGINT. Resolves with what the terminal got.
   * `exec`: `script` runs the command through `$SHELL -c`, and a shell that stays as the parent (dash does) is
   * in the same foreground group, so it would die of the SIGINT and report 130 whatever the CLI did.
   */
  const watchInTerminal = async (runId: string): Promise<{ screen: string; code: number | null }> => {
    const command = `exec '${process.execPath}' '${CLI}' status '${runId}' --watch`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await waitFor('a redraw in place', () => REDRAW.test(screen));
    child.stdin.write('\x03');
    return { code: await exited, screen };
  };

  test('a paused iteration shows its per-stage shard counts and bars; list shows the run; then it completes', async () => {
    const runId = uniqueId('status');
    await stack.withWorkers(async () => {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [stack.runConfig({ iterations: 3, batchSize: 8, shardSize: 4, training: { policy: runId } })],
      });
      await waitFor(
        'a propose shard to start',
        async () => ((await runStatus(stack.client, runId)).iteration?.stages.propose?.started ?? 0) > 0,
      );
      await sendControl(stack.client, runId, 'pause');
      await waitFor(
        'the iteration to hold at a stage boundary',
        async () => (await runStatus(stack.client, runId)).iteration?.held === true,
      );

      const snapshot = await runStatus(stack.client, runId);
      const { progress, iteration } = snapshot;
      expect(snapshot.status).toBe('RUNNING');
      expect(progress).toMatchObject({
        state: 'paused',
        paused: true,
        iterations: 3,
        iterationInFlight: true,
      });
      expect(iteration).toMatchObject({
        iteration: progress!.iteration,
        paused: true,
        held: true,
        stagesInFlight: 0,
        shards: 2,
      });
      const stages = iteration!.stages;
      expect(stages.sync?.finished).toBeGreaterThan(0);
      expect(stages.plan).toEqual({ started: 1, finished: 1 });
      expect(stages.propose!.finished).toBeGreaterThan(0);
      // Held mid-iteration: nothing in flight, and the stages after the shards have not begun.
      expect(stages.filter).toBeUndefined();
      expect(stages.commit).toBeUndefined();
      const text = renderStatus(snapshot, 100);
      expect(text).toContain(`iteration ${progress!.iteration}/3, paused;`);
      expect(text).toContain(`paused: held at a stage boundary; resume with: selfplay resume ${runId}`);
      expect(text).toContain('  plan     done, 2 shards');
      for (const stage of SHARD_STAGES) {
        const { started, finished } = stages[stage] ?? { started: 0, finished: 0 };
        expect(started).toBe(finished);
        expect(finished).toBeLessThanOrEqual(2);
        const line = text.split('\n').find((l) => l.startsWith(`  ${stage} `));
        expect(line).toContain(`${bar(finished, 0, 2, 40)} ${finished}/2`);
        if (finished < 2) expect(line).toMatch(/ paused$/);
      }

      // The same snapshot through the CLI itself: no terminal, so one plain snapshot.
      const printed = await cli('status', runId, '--watch');
      expect(printed.stdout).toContain(
        `paused: held at a stage boundary; resume with: selfplay resume ${runId}`,
      );
      expect(printed.stdout).toContain(
        `${bar(stages.propose!.finished, 0, 2, 40)} ${stages.propose!.finished}/2`,
      );
      expect(printed.stdout).not.toContain(ESC);
      const watched = await watchInTerminal(runId);
      expect(watched.code).toBe(0);
      const drawings = watched.screen.split(REDRAW);
      expect(drawings.length).toBeGreaterThan(1);
      for (const drawing of drawings) expect(drawing).toContain('paused: held at a stage boundary');

      const paused = async () =>
        (await listRuns(stack.client, { recipe: 'spice', state: 'paused', limit: 100 })).find(
          (r) => r.runId === runId,
        );
      await waitFor('the paused run in the visibility list', async () => (await paused()) !== undefined);
      const row = (await paused())!;
      expect(row).toMatchObject({ recipe: 'spice', state: 'paused', iteration: progress!.lastCommitted });
      expect(renderRunTable([row])).toMatch(
        new RegExp(`\\n${runId}\\s+spice\\s+paused\\s+${progress!.lastCommitted}\\s`),
      );

      await sendControl(stack.client, runId, 'resume');
      await sendControl(stack.client, runId, 'stop');
      const outcome = await handle.result();
      const done = await runStatus(stack.client, runId);
      expect(done).toMatchObject({ status: 'COMPLETED', outcome: { lastCommitted: outcome.lastCommitted } });
      expect(renderStatus(done, 100)).toContain(`run ${runId}: completed`);

      const completed = async () =>
        (await listRuns(stack.client, { state: 'completed', limit: 100 })).find((r) => r.runId === runId);
      await waitFor(
        'the completed run in the visibility list',
        async () => (await completed())?.state === 'completed',
      );
      const last = outcome.recent.at(-1)!.summary;
      expect(await completed()).toMatchObject({
        recipe: 'spice',
        iteration: outcome.lastCommitted,
        meanReward: last.meanReward,
        validTaskRate: last.validTaskRate,
      });
    });
  });

  test('list shows when a run that continued-as-new began, not when its latest continuation did', async () => {
    const runId = uniqueId('continued');
    const first = await stack.withWorkers(async () => {
      const handle = await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [
          stack.runConfig({
            iterations: 3,
            batchSize: 4,
            shardSize: 4,
            continueAsNewEvery: 1,
            training: { policy: runId },
          }),
        ],
      });
      await handle.result();
      return (await stack.client.workflow.getHandle(runId, handle.firstExecutionRunId).describe()).startTime;
    });
    const latest = (await stack.client.workflow.getHandle(runId).describe()).startTime;
    expect(latest.getTime()).toBeGreaterThan(first.getTime());
    const row = async () =>
      (await listRuns(stack.client, { state: 'completed', limit: 100 })).find((r) => r.runId === runId);
    await waitFor('the completed run in the visibility list', async () => (await row()) !== undefined);
    expect((await row())!.startedAt).toEqual(first);
  });

  test('a run no worker serves: status says so after its deadline, with what the run last recorded', async () => {
    const runId = uniqueId('orphan');
    await stack.withWorkers(async () => {
      await stack.client.workflow.start(selfPlayRun, {
        workflowId: runId,
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        args: [stack.runConfig({ iterations: 3, batchSize: 4, shardSize: 4, training: { policy: runId } })],
      });
      await waitFor(
        'iteration 1 committed',
        async () => ((await runStatus(stack.client, runId)).progress?.lastCommitted ?? 0) >= 1,
      );
      await sendControl(stack.client, runId, 'pause');
      await waitFor('the paused state in visibility', async () =>
        (await listRuns(stack.client, { state: 'paused', limit: 100 })).some((r) => r.runId === runId),
      );
    });
    // The workers are gone; the run is still running as far as the server knows.
    const snapshot = await runStatus(stack.client, runId, 1500);
    expect(snapshot).toMatchObject({
      status: 'RUNNING',
      unanswered: {
        taskQueue: `${stack.queuePrefix}-orchestrator`,
        waitedMs: 1500,
        recipe: 'spice',
        state: 'paused',
      },
    });
    expect(snapshot.unanswered!.iteration).toBeGreaterThanOrEqual(1);
    const text = renderStatus(snapshot, 200);
    expect(text).toContain(`run ${runId} (spice): running (last recorded: last committed `);
    expect(text).toContain(
      `no worker answered its progress query in 1.5 s: task queue ${stack.queuePrefix}-orchestrator has no worker`,
    );
    await stack.client.workflow.getHandle(runId).terminate('test over');
  });

  test('an unknown run names the namespace and how to find runs; bad flags print the usage', async () => {
    await expect(runStatus(stack.client, 'no-such-run')).rejects.toThrow(
      'no workflow no-such-run in namespace default; list runs with selfplay list',
    );
    const failed = await cli('list', '--limt', '5');
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('list does not take --limt; it takes --recipe, --state, --limit');
    expect(failed.stderr).toContain('selfplay list [--recipe ');
  });
});
