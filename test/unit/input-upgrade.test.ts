import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { temporal } from '@temporalio/proto';
import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { SCOPE_JOINT_SCHEDULE } from '../../config/presets/scope';
import {
  upgradeIterationInput,
  upgradeRunCarry,
  type RecordedIterationInput,
} from '../../contracts/input-upgrade';
import { ITERATION_INPUT_VERSION } from '../../contracts/selfplay';
import { iterationConfig } from '../../workflows/run-params';
import { lossSpec, updateSpec } from '../../activities/stages/update';

const FIXTURES = path.join(__dirname, '../fixtures/histories');

/** The input a recorded iteration history started with (its first event), as the workflow received it. */
function recordedInput(file: string): RecordedIterationInput {
  const history = temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(FIXTURES, file))));
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload?.data) throw new Error(`${file}: no input payload`);
  return JSON.parse(Buffer.from(payload.data).toString('utf8')) as RecordedIterationInput;
}

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig(input);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

/** Every field path of a plain-JSON object ("training.loss.clipLow"). */
const fieldPaths = (value: unknown, prefix = ''): string[] =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.entries(value).flatMap(([k, v]) => [`${prefix}${k}`, ...fieldPaths(v, `${prefix}${k}.`)])
    : [];

/**
 * What a current run gives its iterations (`iterationConfig`): the shape an upgraded config must have. But for
 * `runId`, optional in every version: an input from before run-scoped model names keeps its names without one.
 */
const currentShape = (recipe: RunConfig['recipe']): string[] =>
  fieldPaths(iterationConfig(resolved({ recipe }), 'run')).filter((p) => p !== 'runId');

describe('iteration inputs of older versions are upgraded once, at the entry', () => {
  // Recorded by a version-2 worker before the loss options, `training.update`, `pipeline` and more existed.
  const spice = recordedInput('replay-spice-1142a2d2%2Fiter-000001~8.pb.gz');
  // SPELL before `spell.maxRounds`; a pipelined run before `pipeline.streaming`.
  const spell = recordedInput('replay-spell-3ead2092%2Fiter-000001~10.pb.gz');
  const pipelined = recordedInput('replay-pipelined-326c3081%2Fiter-000002~5.pb.gz');

  test('the fixtures are older inputs: version 2, lacking fields of the current config', () => {
    for (const input of [spice, spell, pipelined]) {
      expect(input.v).toBe(2);
      const have = new Set(fieldPaths(input.config));
      expect(currentShape(input.config.recipe).filter((p) => !have.has(p)).length).toBeGreaterThan(0);
    }
  });

  test('an upgraded input has the current version and every field of the current shape, and keeps its own', () => {
    for (const input of [spice, spell, pipelined]) {
      const upgraded = upgradeIterationInput(input);
      expect(upgraded.v).toBe(ITERATION_INPUT_VERSION);
      const have = new Set(fieldPaths(upgraded.config));
      expect(currentShape(input.config.recipe).filter((p) => !have.has(p))).toEqual([]);
      // Nothing recorded changes: only absent fields are added.
      expect(upgraded).toMatchObject({ ...input, v: ITERATION_INPUT_VERSION });
    }
  });

  test('an absent field gets the behaviour the input had when recorded, not the current default', () => {
    const { config } = upgradeIterationInput(spice);
    // The loss options off, one optimizer step over the whole batch: what the kernel was sent then.
    expect(lossSpec(config.training.loss)).toEqual(spice.config.training.loss);
    expect(updateSpec(config.training.update)).toEqual({});
    expect(config.pipeline).toEqual({ maxStaleness: 0, streaming: false });
    expect(config.training).toMatchObject({ negateAdvantages: false, ablateRoles: [] });
    expect(config.spice).toMatchObject({ refuteArithmeticAnswers: false, requireAnswerInDocument: false });
    expect(config.timeouts).toMatchObject({ ...spice.config.timeouts, stuckAfterMinutes: 30 });
    // SPELL gathered one round before maxRounds (today's preset gathers up to 10).
    expect(upgradeIterationInput(spell).config.spell.maxRounds).toBe(1);
    expect(resolved({ recipe: 'spell' }).spell.maxRounds).toBeGreaterThan(1);
    // A pipelined input keeps its staleness and did not stream.
    expect(upgradeIterationInput(pipelined).config.pipeline).toEqual({ maxStaleness: 1, streaming: false });
  });

  test('SCOPE before its schedule trained both roles every iteration: the joint schedule', () => {
    const { schedule: _schedule, ...scope } = resolved({ recipe: 'scope' }).scope;
    const config = { ...iterationConfig(resolved({ recipe: 'scope' }), 'run'), scope };
    const input = { ...spice, config } as RecordedIterationInput;
    expect(upgradeIterationInput(input).config.scope.schedule).toEqual(SCOPE_JOINT_SCHEDULE);
  });

  test('a current input is returned as it is; a version-1 one (or none) is refused, naming v', () => {
    const current = upgradeIterationInput(spice);
    expect(upgradeIterationInput(current)).toBe(current);
    const { v: _v, ...unversioned } = spice;
    expect(() => upgradeIterationInput(unversioned)).toThrow(
      /selfPlayIteration input v: 1 .*version 1 predates/,
    );
    expect(() => upgradeIterationInput({ ...spice, v: 7 })).toThrow(/v: 7 is not one this worker runs/);
  });
});

describe("the run's carry is versioned too", () => {
  const carry = { nextIteration: 3, policies: { policy: { version: 2 } }, recent: [] };

  test('a carry recorded without a version is version 1, the current one; a newer one is refused', () => {
    expect(upgradeRunCarry(carry)).toEqual({ ...carry, v: 1 });
    expect(upgradeRunCarry({ ...carry, v: 1 })).toEqual({ ...carry, v: 1 });
    expect(() => upgradeRunCarry({ ...carry, v: 2 })).toThrow(
      /selfPlayRun carry v: 2 is newer than this worker's/,
    );
  });
});
