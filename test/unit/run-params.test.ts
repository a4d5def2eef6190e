import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { paramProblems } from '../../workflows/run-params';

/** A SPELL run of 60 rounds: 15 shards per round fit (22,023 events), 64 do not. */
function spellRun(): RunConfig {
  const resolved = resolveRunConfig({ recipe: 'spell', runId: 'run-1', spell: { maxRounds: 60 } });
  if (!resolved.ok) throw new Error(resolved.problems.join('; '));
  return resolved.config;
}

describe('setParams', () => {
  test("a batchSize whose rounds would outgrow an iteration's Temporal history is refused with the arithmetic", () => {
    expect(paramProblems(spellRun(), { batchSize: 2048 })).toEqual([
      expect.stringMatching(/^spell\.maxRounds: 60 rounds × \(64 shards × 24 \+ 6\) .* at most 16,/),
    ]);
    expect(paramProblems(spellRun(), { batchSize: 512 })).toEqual([]);
  });

  test('other parameters are not held to it: a run started before the check keeps its controls', () => {
    const before = { ...spellRun(), spell: { ...spellRun().spell, maxRounds: 100 } };
    expect(paramProblems(before, { learningRate: 1e-6 })).toEqual([]);
  });
});
