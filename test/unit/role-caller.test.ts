import { WeightsMoved } from '../../activities/clients/inference';
import { configFor } from '../support/recipe-harness';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { askReasoner, shardLlm } from '../support/shard-llm';

/** A recipe's LLM, as its stage context gives it: checked against the weights the shard synced. */
describe("a synced role's caller", () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    // A sampler restarted with version 7 of the run's policy.
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 7 });
  });
  afterEach(() => llm.close());

  const ask = (weightSync: Record<string, unknown>) =>
    askReasoner(
      shardLlm(
        {
          config: configFor({
            recipe: 'spice',
            runId: 'r1',
            training: { policy: 'p' },
            inference: { default: { baseUrl: llm.url, model: 'scripted-policy' } },
            weightSync,
          }),
          runId: 'r1',
          iteration: 2,
          shard: 0,
          versions: { p: 1 },
        },
        'reasoner',
      ),
    );

  test('a sync server named by its root still checks the endpoint it serves at /v1', async () => {
    const root = llm.url.replace(/\/v1$/, '');
    expect(llm.url).toBe(`${root}/v1`);
    await expect(ask({ engine: 'kernel', servers: [root] })).rejects.toBeInstanceOf(WeightsMoved);
    await expect(ask({ engine: 'kernel', servers: [`${llm.url}/`] })).rejects.toBeInstanceOf(WeightsMoved);
  });

  test('without weight sync, or for a server the sync does not keep, answers are taken as they come', async () => {
    await expect(ask({ engine: 'none' })).resolves.toHaveLength(1);
    await expect(ask({ engine: 'kernel', servers: ['http://127.0.0.1:9'] })).resolves.toHaveLength(1);
  });
});
