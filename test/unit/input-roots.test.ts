import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { planActivities } from '../../activities/stages/plan';
import { loadWorkerEnv } from '../../config/env';
import { configInputs, inputProblem, inputRootsFromEnv } from '../../config/input-roots';
import { startRefusal } from '../../config/run-access';
import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { iterationConfig } from '../../workflows/run-params';

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice', ...input });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

describe('input roots', () => {
  test('unset: the run storage and the shipped samples, nothing else on the machine', () => {
    const roots = inputRootsFromEnv({}, 's3://runs/selfplay');
    expect(inputProblem(roots, 'test/fixtures/corpus/small.jsonl', 'corpus.uri')).toBeUndefined();
    expect(
      inputProblem(roots, 's3://runs/selfplay/lineage/exclude.json', 'corpus.excludeDocIds'),
    ).toBeUndefined();
    expect(inputProblem(roots, '/proc/self/environ', 'corpus.uri')).toBe(
      `corpus.uri: /proc/self/environ is outside the input roots of this worker (s3://runs/selfplay, test/fixtures); ` +
        'put the file under one of them or add its directory or s3:// prefix to SELFPLAY_INPUT_ROOTS on the workers',
    );
    for (const uri of ['file:///etc/passwd', 'test/fixtures/../../etc/passwd', 'https://evil/x.jsonl']) {
      expect(inputProblem(roots, uri, 'f')).toMatch(/^f: /);
    }
  });

  test('S3 prefixes match by segment; directories through their symlinks', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'roots-'));
    mkdirSync(path.join(dir, 'data'));
    symlinkSync('/etc', path.join(dir, 'data', 'escape'));
    const roots = inputRootsFromEnv(
      { SELFPLAY_INPUT_ROOTS: `s3://b/data, ${dir}/data` },
      '.selfplay/storage',
    );
    expect(inputProblem(roots, 's3://b/data/corpus.jsonl', 'f')).toBeUndefined();
    expect(inputProblem(roots, `${dir}/data/corpus.jsonl`, 'f')).toBeUndefined();
    expect(inputProblem(roots, 's3://b/data2/corpus.jsonl', 'f')).toContain('outside the input roots');
    expect(inputProblem(roots, 's3://b/data/../secrets', 'f')).toBe(
      'f: s3://b/data/../secrets has a "." or ".." segment',
    );
    expect(inputProblem(roots, `${dir}/data/escape/passwd`, 'f')).toContain('outside the input roots');
    expect(inputProblem(roots, 'test/fixtures/corpus/small.jsonl', 'f')).toContain('outside the input roots');
  });

  test("every input of the run's recipe, and only those", () => {
    const fields = (input: object) => configInputs(resolved(input)).map((i) => i.field);
    expect(fields({ corpus: { excludeDocIds: 's3://b/x.json' } })).toEqual([
      'corpus.uri',
      'corpus.excludeDocIds',
    ]);
    expect(fields({ recipe: 'ssp', retrieval: { index: 's3://b/idx' } })).toEqual([
      'ssp.answers',
      'retrieval.index',
    ]);
    expect(fields({ recipe: 'mae', mae: { seedQuestions: 's3://b/seeds.jsonl' } })).toEqual([
      'mae.seedQuestions',
    ]);
    expect(
      fields({ evaluation: { atStart: true, benchmarks: [{ name: 'h', uri: '/data/h.jsonl' }] } }),
    ).toEqual(['corpus.uri', 'evaluation.benchmarks.0.uri']);
    // An iteration's config, which leaves out an evaluation without benchmarks.
    expect(configInputs(iterationConfig(resolved({}), 'run')).map((i) => i.field)).toEqual(['corpus.uri']);
  });

  test('a config reading /proc/self/environ is refused by the CLI, at the run start and by the plan', async () => {
    const config = resolved({ corpus: { uri: '/proc/self/environ' } });
    expect(startRefusal(config, {})).toContain('corpus.uri: /proc/self/environ is outside the input roots');
    const store = new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'roots-')));
    const plan = planActivities({
      store,
      env: loadWorkerEnv({}),
      inference: new InferencePool(),
      recipes: RECIPES,
    });
    const err = await plan.plan({ config, runId: 'r', iteration: 1, versions: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect((err as Error).message).toContain('corpus.uri: /proc/self/environ is outside the input roots');
  });
});
