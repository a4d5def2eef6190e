import { resolveRunConfig } from '../../config/schema';
import {
  endpointFor,
  loadWorkerEnv,
  servedModelTemplate,
  syncServersFor,
  trainerUrlFor,
} from '../../config/env';
import { policyNames, trainedPolicyOf } from '../../config/policies';

describe('run config', () => {
  test('{"recipe":"spice"} alone is valid and takes the SPICE preset', () => {
    const r = resolveRunConfig({ recipe: 'spice' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config).toMatchObject({
      batchSize: 128,
      groupSize: 8,
      iterations: 640,
      sampling: { temperature: 1 },
      training: {
        estimator: 'dr_grpo',
        loss: { klCoef: 0, clipLow: 0.2 },
        optimizer: { learningRate: 1e-6, schedule: 'constant' },
      },
      spice: {
        maxAttempts: 1024,
        invalidPenalty: -0.1,
        challengerReward: 'gaussian',
        tau: 0.01,
        targetVariance: 0.25,
      },
      judgePool: 'orchestrator',
    });
  });

  test('user values override the preset, deeply', () => {
    const r = resolveRunConfig({
      recipe: 'spice',
      spice: { challengerReward: 'r_zero' },
      training: { optimizer: { learningRate: 2e-6 } },
    });
    expect(r.ok && r.config.spice).toMatchObject({ challengerReward: 'r_zero', maxAttempts: 1024 });
    expect(r.ok && r.config.training.optimizer).toMatchObject({ learningRate: 2e-6, schedule: 'constant' });
  });

  test('every bad field is named by its path', () => {
    const r = resolveRunConfig({
      recipe: 'spice',
      groupSize: 1,
      corpus: { uri: 3 },
      sampling: { temprature: 0.5 },
      inference: { default: { baseUrl: 'not a url' } },
      resumeFrom: { runId: 'a b' },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const text = r.problems.join('\n');
    for (const path of ['groupSize', 'corpus.uri', 'temprature', 'inference.default.baseUrl', 'resumeFrom'])
      expect(text).toContain(path);
  });

  test('unknown recipes, non-objects and too many shards are refused', () => {
    expect(resolveRunConfig({ recipe: 'alphago' })).toEqual({
      ok: false,
      problems: [expect.stringContaining('recipe: expected one of "spice"')],
    });
    expect(resolveRunConfig('spice')).toMatchObject({ ok: false });
    expect(resolveRunConfig({ recipe: 'spice', batchSize: 1000, shardSize: 10 })).toMatchObject({
      ok: false,
      problems: [expect.stringContaining('shardSize')],
    });
  });

  test('pipeline.maxStaleness: 0 by default; with k ≥ 1, evaluating each commit on the synced servers is refused', () => {
    const spice = resolveRunConfig({ recipe: 'spice' });
    expect(spice.ok && spice.config.pipeline).toEqual({ maxStaleness: 0 });
    expect(resolveRunConfig({ recipe: 'spice', pipeline: { maxStaleness: -1 } })).toMatchObject({
      ok: false,
      problems: [expect.stringContaining('pipeline.maxStaleness')],
    });
    const evaluating = {
      recipe: 'spice',
      evaluation: { every: 2, benchmarks: [{ name: 'h', uri: 'test/fixtures/eval/heldout.jsonl' }] },
      pipeline: { maxStaleness: 1 },
    };
    expect(resolveRunConfig({ ...evaluating, weightSync: { engine: 'vllm' } })).toEqual({
      ok: false,
      problems: [
        expect.stringMatching(/^pipeline\.maxStaleness: evaluation\.every loads each evaluated commit/),
      ],
    });
    // An evaluation server of its own (no weight sync) is fine.
    expect(resolveRunConfig(evaluating)).toMatchObject({ ok: true });
  });

  test('training.retention: the last 5 commits by default; "all" keeps everything; bad values say what is expected', () => {
    const spice = resolveRunConfig({ recipe: 'spice' });
    expect(spice.ok && spice.config.training.retention).toEqual({ keepLast: 5, keepEvery: 0 });
    const own = resolveRunConfig({ recipe: 'spice', training: { retention: { keepLast: 'all' } } });
    expect(own.ok && own.config.training.retention).toEqual({ keepLast: 'all', keepEvery: 0 });
    expect(resolveRunConfig({ recipe: 'spice', training: { retention: { keepLast: 'none' } } })).toEqual({
      ok: false,
      problems: ['training.retention.keepLast: expected a positive integer of commits, or "all"'],
    });
    expect(resolveRunConfig({ recipe: 'spice', training: { retention: { keepLast: 0 } } })).toEqual({
      ok: false,
      problems: ['training.retention.keepLast: Too small: expected number to be >0'],
    });
    expect(
      resolveRunConfig({ recipe: 'spice', training: { retention: { keepEvery: 2.5, keepAll: true } } }),
    ).toMatchObject({
      ok: false,
      problems: [
        expect.stringContaining('training.retention.keepEvery'),
        expect.stringMatching(/^training\.retention: .*keepAll/),
      ],
    });
  });

  test('resumeFrom takes a run id or a {runId, iteration} object', () => {
    expect(resolveRunConfig({ recipe: 'spice', resumeFrom: 'run-1' })).toMatchObject({
      ok: true,
      config: { resumeFrom: { runId: 'run-1' } },
    });
    expect(resolveRunConfig({ recipe: 'spice', resumeFrom: { runId: 'run-1', iteration: 4 } })).toMatchObject(
      {
        ok: true,
        config: { resumeFrom: { runId: 'run-1', iteration: 4 } },
      },
    );
  });

  test('endpoints: role over default over environment; {policy} and {version} name a versioned adapter', () => {
    const r = resolveRunConfig({
      recipe: 'spice',
      training: { policy: 'pi' },
      inference: {
        default: { model: '{policy}-v{version}' },
        roles: { reasoner: { baseUrl: 'http://r:8000/v1' } },
      },
    });
    if (!r.ok) throw new Error(r.problems.join('; '));
    const env = loadWorkerEnv({
      SELFPLAY_INFERENCE_URL: 'http://default:8000/v1',
      SELFPLAY_INFERENCE_MODEL: 'base',
    });
    expect(endpointFor('challenger', r.config, env, { pi: 3 })).toMatchObject({
      baseUrl: 'http://default:8000/v1',
      model: 'pi-v3',
    });
    expect(endpointFor('reasoner', r.config, env, { pi: 0 })).toMatchObject({
      baseUrl: 'http://r:8000/v1',
      model: 'pi-v0',
    });
    expect(syncServersFor(r.config, env, 'pi')).toEqual(['http://default:8000/v1', 'http://r:8000/v1']);
    const judged = resolveRunConfig({
      recipe: 'spice',
      inference: { roles: { judge: { baseUrl: 'http://judge:9000/v1', model: 'base', frozen: true } } },
    });
    if (!judged.ok) throw new Error(judged.problems.join('; '));
    // A frozen judge keeps its weights: only the policy's servers are synced.
    expect(syncServersFor(judged.config, env, 'policy')).toEqual(['http://default:8000/v1']);
    const bare = resolveRunConfig({ recipe: 'spice' });
    if (!bare.ok) throw new Error('default config');
    expect(() => endpointFor('challenger', bare.config, loadWorkerEnv({}))).toThrow(/SELFPLAY_INFERENCE_URL/);
  });

  test('several policies: each plays its roles, with its own versions, kernel and servers; a frozen judge none', () => {
    const r = resolveRunConfig({
      recipe: 'spice',
      training: {
        policies: {
          challenger: { roles: ['challenger'], trainerUrl: 'http://kc:8080' },
          solver: { roles: ['reasoner'], trainerUrl: 'http://ks:8080' },
        },
      },
      inference: {
        default: { model: '{policy}-v{version}' },
        roles: {
          challenger: { baseUrl: 'http://c:8000/v1' },
          reasoner: { baseUrl: 'http://s:8000/v1' },
          judge: { baseUrl: 'http://j:8000/v1', model: 'base', frozen: true },
        },
      },
    });
    if (!r.ok) throw new Error(r.problems.join('; '));
    const env = loadWorkerEnv({
      SELFPLAY_TRAINER_URL: 'http://shared:8080',
      SELFPLAY_CREDENTIAL_BINDINGS: 'SELFPLAY_KERNEL_TOKEN=http://kc:8080,http://ks:8080',
    });
    const versions = { challenger: 4, solver: 7 };
    expect(endpointFor('challenger', r.config, env, versions).model).toBe('challenger-v4');
    expect(endpointFor('reasoner', r.config, env, versions).model).toBe('solver-v7');
    expect(endpointFor('judge', r.config, env, versions).model).toBe('base');
    expect(trainerUrlFor(r.config, env, 'challenger')).toBe('http://kc:8080');
    expect(trainerUrlFor(r.config, env, 'solver')).toBe('http://ks:8080');
    expect(syncServersFor(r.config, env, 'challenger')).toEqual(['http://c:8000/v1']);
    expect(syncServersFor(r.config, env, 'solver')).toEqual(['http://s:8000/v1']);
    expect(policyNames(r.config)).toEqual(['challenger', 'solver']);
    expect(trainedPolicyOf(r.config, 'reasoner')).toBe('solver');
    expect(() => trainedPolicyOf(r.config, 'judge')).toThrow(/no policy trains/);
    expect(() => trainerUrlFor(r.config, env, 'ghost')).toThrow(/no policy "ghost"/);
    // A kernel the worker's environment does not name is no trainer of its.
    expect(() => trainerUrlFor(r.config, loadWorkerEnv({}), 'solver')).toThrow(
      'the training kernel of policy "solver", http://ks:8080 is not among this worker\'s servers',
    );
  });

  test('{run} names the run: a fork and its parent, one policy name, request different adapters', () => {
    const config = (runId?: string) => {
      const r = resolveRunConfig({
        recipe: 'spice',
        ...(runId ? { runId } : {}),
        inference: {
          default: { baseUrl: 'http://vllm:8000/v1', model: '{run}/{policy}-v{version}' },
          roles: { judge: { baseUrl: 'http://j:8000/v1', model: 'base', frozen: true } },
        },
      });
      if (!r.ok) throw new Error(r.problems.join('; '));
      return r.config;
    };
    const env = loadWorkerEnv({});
    expect(endpointFor('challenger', config('parent'), env, { policy: 3 }).model).toBe('parent/policy-v3');
    expect(endpointFor('reasoner', config('fork'), env, { policy: 3 }).model).toBe('fork/policy-v3');
    expect(servedModelTemplate(config('fork'), env, 'policy')).toBe('{run}/{policy}-v{version}');
    expect(() => endpointFor('challenger', config(), env, { policy: 3 })).toThrow(
      /names \{run\}, but the run config carries no runId/,
    );
    const split = resolveRunConfig({
      recipe: 'spice',
      inference: {
        default: { model: '{policy}-v{version}' },
        roles: { reasoner: { model: 'other-{version}' } },
      },
    });
    if (!split.ok) throw new Error(split.problems.join('; '));
    expect(() => servedModelTemplate(split.config, env, 'policy')).toThrow(/request different model names/);
  });

  test('a role trained by two policies, or a frozen role with a versioned model, is refused', () => {
    const twice = resolveRunConfig({
      recipe: 'spice',
      training: { policies: { a: { roles: ['challenger'] }, b: { roles: ['challenger', 'reasoner'] } } },
    });
    expect(twice).toEqual({ ok: false, problems: [expect.stringContaining('training.policies')] });
    const r = resolveRunConfig({
      recipe: 'spice',
      training: { policies: { a: { roles: ['challenger'] } } },
      inference: { default: { baseUrl: 'http://x/v1', model: '{policy}-v{version}' } },
    });
    if (!r.ok) throw new Error(r.problems.join('; '));
    expect(() => endpointFor('judge', r.config, loadWorkerEnv({}), { a: 1 })).toThrow(
      /no policy trains "judge"/,
    );
  });
});
