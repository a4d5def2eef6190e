import {
  evalBaseConfig,
  evalRequest,
  parseBench,
  renderEvalOutcome,
  type EvalFlags,
} from '../../../cli/eval-command';
import type { EvaluateCheckpointOutcome } from '../../../contracts/evaluation';

const flags = (over: Partial<EvalFlags> = {}): EvalFlags => ({
  bench: ['gsm8k-test.jsonl'],
  set: [],
  ...over,
});

describe('selfplay eval', () => {
  test('--bench: a file named after itself, NAME=, NAME:FORMAT=, URIs with = and :', () => {
    expect(parseBench('/data/gsm8k-test.jsonl')).toEqual({ name: 'gsm8k', uri: '/data/gsm8k-test.jsonl' });
    expect(parseBench('s3://b/minerva_math-test.jsonl.gz')).toEqual({
      name: 'minerva_math',
      uri: 's3://b/minerva_math-test.jsonl.gz',
    });
    expect(parseBench('held=s3://b/k=v.jsonl')).toEqual({ name: 'held', uri: 's3://b/k=v.jsonl' });
    expect(parseBench('aime:aime=file:///x/aime.jsonl')).toEqual({
      name: 'aime',
      format: 'aime',
      uri: 'file:///x/aime.jsonl',
    });
    expect(() => parseBench('s3://b/p/k=v.jsonl')).toThrow('write --bench NAME=s3://b/p/k=v.jsonl');
    expect(() => parseBench('x:essay=a.jsonl')).toThrow('unknown format "essay"');
    expect(() => parseBench('/data/héllo.jsonl')).toThrow('write --bench NAME=/data/héllo.jsonl');
  });

  test('the request: the run config, --set, the benchmarks with --limit, and only the sampling flags given', () => {
    const base = {
      recipe: 'spice',
      runId: 'r1',
      evaluation: { every: 2, n: 4, temperature: 0.6, benchmarks: [{ name: 'old', uri: 'old.jsonl' }] },
    };
    const request = evalRequest(
      'r1',
      flags({
        bench: ['a.jsonl', 'b=s3://x/b.jsonl'],
        limit: '50',
        subsetSeed: '7',
        iteration: '0',
        maxTokens: '512',
        set: ['inference.roles.eval.model=base-model'],
      }),
      base,
    );
    expect(request).toEqual({
      runId: 'r1',
      iteration: 0,
      config: {
        recipe: 'spice',
        runId: 'r1',
        inference: { roles: { eval: { model: 'base-model' } } },
        evaluation: {
          every: 2,
          n: 4,
          temperature: 0.6,
          maxTokens: 512,
          benchmarks: [
            { name: 'a', uri: 'a.jsonl', limit: 50, subsetSeed: 7 },
            { name: 'b', uri: 's3://x/b.jsonl', limit: 50, subsetSeed: 7 },
          ],
        },
      },
    });
    expect(base.evaluation.benchmarks).toEqual([{ name: 'old', uri: 'old.jsonl' }]); // not mutated
    expect(evalRequest('r1', flags(), { recipe: 'spice' })).toEqual({
      runId: 'r1',
      config: { recipe: 'spice', evaluation: { benchmarks: [{ name: 'gsm8k', uri: 'gsm8k-test.jsonl' }] } },
    });
  });

  test('bad flags and configs are refused with the reason', () => {
    const spice = { recipe: 'spice' };
    expect(() => evalRequest('r', flags({ bench: [] }), spice)).toThrow('give at least one --bench');
    expect(() => evalRequest('r', flags({ n: 'four' }), spice)).toThrow('--n: expected a number, got four');
    expect(() => evalRequest('r', flags({ n: '4' }), spice)).toThrow(
      'evaluation.temperature: n > 1 samples per item need a temperature above 0',
    );
    expect(() => evalRequest('r', flags({ iteration: '-1' }), spice)).toThrow('--iteration: expected');
    expect(() => evalRequest('r', flags({ template: 'llama' }), spice)).toThrow(
      '--template llama: one of recipe, qwen, octothinker',
    );
    expect(() => evalRequest('r', flags({ bench: ['a.jsonl', 'a=b.jsonl'] }), spice)).toThrow(
      'evaluation.benchmarks: benchmark names must be unique',
    );
    expect(() => evalRequest('r', flags({ subsetSeed: '3' }), spice)).toThrow(
      'evaluation.benchmarks.0.subsetSeed: a subset needs its size: set limit too',
    );
    expect(() => evalRequest('r', flags({ rollout: 'search' }), spice)).toThrow(
      `evaluation.rollout: "search" runs the recipe's search-agent solver: ssp or scope only`,
    );
    expect(() => evalRequest('r', flags({ rollout: 'tools' }), { recipe: 'ssp' })).toThrow(
      'evaluation.rollout',
    );
    const search = evalRequest('r', flags({ rollout: 'search' }), { recipe: 'ssp' });
    expect((search.config.evaluation as { rollout: string }).rollout).toBe('search');
  });

  test('the config comes from --recipe/--config, else from the run, whose absence says what to do', async () => {
    const fromRun = jest.fn(() => Promise.resolve({ recipe: 'mae' }));
    expect(await evalBaseConfig({ recipe: 'spice' }, fromRun, 'r')).toEqual({ recipe: 'spice' });
    expect(fromRun).not.toHaveBeenCalled();
    expect(await evalBaseConfig({}, fromRun, 'r')).toEqual({ recipe: 'mae' });
    await expect(
      evalBaseConfig({}, () => Promise.reject(new Error('workflow not found')), 'gone'),
    ).rejects.toThrow(
      'cannot read the config of run gone from Temporal (workflow not found); give it with --recipe NAME',
    );
  });

  test('prints one row per benchmark, pass@k and maj@k columns for the k sampled, and where the verdicts are', () => {
    const outcome: EvaluateCheckpointOutcome = {
      runId: 'r1',
      iteration: 3,
      policy: 'policy',
      committed: { version: 3 },
      result: {
        policy: 'policy',
        version: 3,
        benchmarks: {
          gsm8k: {
            format: 'gsm8k',
            items: 50,
            n: 4,
            accuracy: 0.52,
            passAtK: { '1': 0.52, '2': 0.6, '4': 0.7 },
            majAtK: { '1': 0.52, '2': 0.55, '4': 0.6 },
            noAnswer: 0.015,
            reusedItems: 10,
            resultsKey: 'runs/r1/eval/policy/v000003/gsm8k-abc/results-first-50.jsonl.gz',
          },
          amc: {
            format: 'amc',
            items: 8,
            n: 1,
            accuracy: 0.125,
            passAtK: {},
            majAtK: {},
            noAnswer: 0,
            reusedItems: 0,
            resultsKey: 'runs/r1/eval/policy/v000003/amc-def/results-all.jsonl.gz',
          },
        },
      },
    };
    expect(renderEvalOutcome(outcome)).toBe(
      [
        'run r1, iteration 3: policy policy v3',
        'BENCHMARK  FORMAT  ITEMS  N  ACCURACY  PASS@2  PASS@4  MAJ@2  MAJ@4  NO ANSWER  REUSED',
        'gsm8k      gsm8k      50  4     52.0%   60.0%   70.0%  55.0%  60.0%       1.5%      10',
        'amc        amc         8  1     12.5%       -       -      -      -       0.0%       0',
        'per-item verdicts (under SELFPLAY_STORAGE):',
        '  gsm8k: runs/r1/eval/policy/v000003/gsm8k-abc/results-first-50.jsonl.gz',
        '  amc: runs/r1/eval/policy/v000003/amc-def/results-all.jsonl.gz',
      ].join('\n'),
    );
  });
});
