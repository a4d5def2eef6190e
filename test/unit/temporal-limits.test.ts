import { RECIPES, resolveRunConfig } from '../../config/schema';
import { resolveStartConfig } from '../../config/temporal-limits';

/** 64 shards per round: SPELL's items per round in shards of 32, SCOPE's candidates per round in shards of 8. */
const spell = (maxRounds: number) => ({
  recipe: 'spell',
  batchSize: 2048,
  shardSize: 32,
  spell: { maxRounds },
});
const scope = (maxRounds: number) => ({
  recipe: 'scope',
  shardSize: 8,
  scope: { schedule: { candidatesPerRound: 512, maxRounds } },
});

describe("an iteration's rounds within Temporal's limits", () => {
  test.each(RECIPES)('the %s preset starts', (recipe) => {
    expect(resolveStartConfig({ recipe })).toMatchObject({ ok: true });
  });

  test('SPELL: 100 rounds of 64 shards are refused with the arithmetic and the most rounds that fit', () => {
    expect(resolveStartConfig(spell(100))).toEqual({
      ok: false,
      problems: [
        "spell.maxRounds: 100 rounds × (64 shards × 24 + 6) + 63 = 154,263 events in one iteration's history " +
          "at worst (4 activities of 6 events per shard, 6 for a round's plan, 63 for the rest of the iteration), " +
          "over the 25,600 this project allows (half of Temporal's limit of 51,200); lower spell.maxRounds to at " +
          'most 16, or raise shardSize for fewer than 64 shards per round (⌈batchSize 2048 / shardSize 32⌉)',
      ],
    });
  });

  test('SPELL: the most rounds that fit start, one more is refused', () => {
    expect(resolveStartConfig(spell(16))).toMatchObject({ ok: true });
    expect(resolveStartConfig(spell(17))).toMatchObject({
      ok: false,
      problems: [expect.stringContaining('17 rounds × (64 shards × 24 + 6) + 63 = 26,277 events')],
    });
  });

  test("SPELL: the preset's 15 shards per round fit 69 rounds, not the schema's 100", () => {
    expect(resolveStartConfig({ recipe: 'spell', spell: { maxRounds: 69 } })).toMatchObject({ ok: true });
    expect(resolveStartConfig({ recipe: 'spell', spell: { maxRounds: 100 } })).toMatchObject({
      ok: false,
      problems: [expect.stringContaining('lower spell.maxRounds to at most 69')],
    });
  });

  test("SCOPE: a Solver step's 100 rounds of 64 shards are refused; its two policies count in the rest", () => {
    const refused = resolveStartConfig(scope(100));
    expect(refused).toMatchObject({ ok: false, problems: [expect.any(String)] });
    const [problem] = (refused as { problems: string[] }).problems;
    expect(problem).toMatch(
      /^scope\.schedule\.maxRounds: 100 rounds × \(64 shards × 24 \+ 6\) \+ 87 = 154,287 events/,
    );
    expect(problem).toContain('lower scope.schedule.maxRounds to at most 16');
    expect(problem).toContain('fewer than 64 shards per round (⌈candidatesPerRound 512 / shardSize 8⌉)');
    expect(resolveStartConfig(scope(16))).toMatchObject({ ok: true });
    expect(resolveStartConfig(scope(17))).toMatchObject({ ok: false });
  });

  test("SCOPE: the preset's 32 shards per round fit 32 rounds", () => {
    const rounds = (maxRounds: number) => ({ recipe: 'scope', scope: { schedule: { maxRounds } } });
    expect(resolveStartConfig(rounds(32))).toMatchObject({ ok: true });
    expect(resolveStartConfig(rounds(33))).toMatchObject({
      ok: false,
      problems: [expect.stringContaining('lower scope.schedule.maxRounds to at most 32')],
    });
  });

  test('SCOPE: the joint schedule gathers no rounds, so its maxRounds is never reached', () => {
    const joint = { recipe: 'scope', scope: { schedule: { mode: 'joint', maxRounds: 100 } } };
    expect(resolveStartConfig(joint)).toMatchObject({ ok: true });
  });

  test('the schema, which workflows replay, still takes what the start refuses: recorded runs replay as they ran', () => {
    expect(resolveRunConfig(spell(100))).toMatchObject({ ok: true });
  });

  test("the schema's problems come first, as they are", () => {
    expect(resolveStartConfig({ recipe: 'spell', shardSize: 0, spell: { maxRounds: 100 } })).toEqual(
      resolveRunConfig({ recipe: 'spell', shardSize: 0, spell: { maxRounds: 100 } }),
    );
  });
});
