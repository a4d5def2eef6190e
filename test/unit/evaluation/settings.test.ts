import { evaluatesAfter, evaluationOn } from '../../../config/evaluation';
import { evaluatedPolicy } from '../../../config/policies';
import { resolveRunConfig, type RunConfig } from '../../../config/schema';
import { evalFolder, evalItemKey, evalResultsKey, selectionName } from '../../../activities/evaluation/keys';
import { evalMessages } from '../../../activities/evaluation/prompt';
import { reasonerMessages } from '../../../activities/recipes/spice/prompts';

const resolve = (input: Record<string, unknown>): RunConfig => {
  const r = resolveRunConfig(input);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};
const problems = (input: Record<string, unknown>): string[] => {
  const r = resolveRunConfig(input);
  return r.ok ? [] : r.problems;
};
const gsm8k = { name: 'gsm8k', uri: 's3://b/gsm8k.jsonl' };

describe('the evaluation config section', () => {
  test('defaults keep existing configs valid and evaluation off', () => {
    const { evaluation } = resolve({ recipe: 'spice' });
    expect(evaluation).toEqual({
      every: 0,
      atStart: false,
      benchmarks: [],
      n: 1,
      temperature: 0,
      topP: 1,
      seed: 0,
      rollout: 'answer',
      template: 'recipe',
    });
    expect(evaluationOn(evaluation)).toBe(false);
    expect(evaluationOn(undefined)).toBe(false); // a config of an older release
  });

  test('every K iterations and the last; never with every 0 or no section', () => {
    const e = { every: 2 };
    expect([1, 2, 3, 4, 5].filter((i) => evaluatesAfter(e, i, 5))).toEqual([2, 4, 5]);
    expect([1, 2, 3].filter((i) => evaluatesAfter({ every: 0 }, i, 3))).toEqual([]);
    expect(evaluatesAfter(undefined, 2, 2)).toBe(false);
  });

  test('bad settings name their field', () => {
    expect(problems({ recipe: 'spice', evaluation: { every: 2 } })).toEqual([
      'evaluation.benchmarks: evaluation is on (every > 0 or atStart) but no benchmark is given',
    ]);
    expect(problems({ recipe: 'spice', evaluation: { atStart: true, benchmarks: [gsm8k, gsm8k] } })).toEqual([
      'evaluation.benchmarks: benchmark names must be unique',
    ]);
    expect(problems({ recipe: 'spice', evaluation: { benchmarks: [gsm8k], n: 8 } })).toEqual([
      'evaluation.temperature: n > 1 samples per item need a temperature above 0 (greedy samples are all the same)',
    ]);
    expect(
      problems({
        recipe: 'spice',
        evaluation: {
          benchmarks: [{ name: 'a b', uri: 'x', format: 'csv', lmit: 3 }],
          template: { user: 'no placeholder' },
        },
      }),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^evaluation\.benchmarks\.0\.name: letters, digits/),
        expect.stringMatching(/^evaluation\.benchmarks\.0\.format: /),
        expect.stringMatching(/^evaluation\.benchmarks\.0: .*lmit/),
        expect.stringMatching(/^evaluation\.template/),
      ]),
    );
  });

  test('with several policies, the evaluated one plays role "eval"', () => {
    const two = (evalRole: boolean) => ({
      recipe: 'scope',
      training: {
        policies: {
          challenger: { roles: ['challenger'] },
          solver: { roles: ['solver', ...(evalRole ? ['eval'] : [])] },
        },
      },
      evaluation: { every: 1, benchmarks: [gsm8k] },
    });
    expect(problems(two(false))).toEqual([
      'evaluation: with several training.policies, add "eval" to the roles of the policy to evaluate (its endpoint and versions answer the benchmarks)',
    ]);
    expect(evaluatedPolicy(resolve(two(true)))).toBe('solver');
    expect(evaluatedPolicy(resolve({ recipe: 'spice', training: { policy: 'pi' } }))).toBe('pi');
    const off = resolve({ ...two(false), evaluation: {} });
    expect(() => evaluatedPolicy(off)).toThrow('no policy plays role "eval"');
  });
});

describe('the evaluation prompt', () => {
  const q = 'What is 2+2?';
  test("by default the recipe Reasoner's, in the template the run trains with", () => {
    const spice = resolve({ recipe: 'spice' });
    expect(evalMessages(q, 'recipe', spice)).toEqual(reasonerMessages(q, 'qwen'));
    expect(evalMessages(q, 'recipe', spice)[0]).toEqual({
      role: 'system',
      content: 'You are a helpful assistant.',
    });
    const octo = resolve({ recipe: 'spice', spice: { reasonerTemplate: 'octothinker' } });
    expect(evalMessages(q, 'recipe', octo)).toEqual(reasonerMessages(q, 'octothinker'));
    expect(evalMessages(q, 'recipe', resolve({ recipe: 'mae' }))).toEqual(reasonerMessages(q, 'qwen'));
    expect(evalMessages(q, 'octothinker', spice)).toEqual(reasonerMessages(q, 'octothinker'));
  });

  test('a template of its own fills in {question}', () => {
    const spice = resolve({ recipe: 'spice' });
    expect(evalMessages(q, { user: 'Q: {question}\nA:' }, spice)).toEqual([
      { role: 'user', content: `Q: ${q}\nA:` },
    ]);
    expect(evalMessages(q, { system: 'Be brief.', user: '{question} ({question})' }, spice)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: `${q} (${q})` },
    ]);
  });
});

describe('evaluation keys', () => {
  const at = { runId: 'r1.r1', policy: 'policy', version: 12, benchmark: 'gsm8k' };
  test('by run, policy, version, benchmark and a hash of the settings; items apart from selections', () => {
    const folder = evalFolder({ ...at, settings: { n: 4, temperature: 1 } });
    expect(folder).toMatch(/^runs\/r1\.r1\/eval\/policy\/v000012\/gsm8k-[0-9a-f]{12}$/);
    expect(evalFolder({ ...at, settings: { n: 4, temperature: 1 } })).toBe(folder);
    expect(evalFolder({ ...at, settings: { n: 4, temperature: 0.5 } })).not.toBe(folder);
    expect(evalItemKey(folder, 17)).toBe(`${folder}/items/item-000017.json.gz`);
    expect(evalResultsKey(folder, selectionName(undefined, undefined))).toBe(
      `${folder}/results-all.jsonl.gz`,
    );
    expect(selectionName(50, undefined)).toBe('first-50');
    expect(selectionName(50, 7)).toBe('subset-50-s7');
  });
});
