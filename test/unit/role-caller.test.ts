import { WeightsMoved } from '../../activities/clients/inference';
import type { WeightSnapshot } from '../../contracts/selfplay';
import { configFor } from '../support/recipe-harness';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm/server';
import { askReasoner, shardLlm } from '../support/shard-llm';
import { DIGEST } from './weight-sync/fixtures';

/** One reasoner request of run r1's shard that samples version 1 of policy `p` from `llm`. */
const askShard = (llm: ScriptedLlm, weightSync: Record<string, unknown>, snapshots?: WeightSnapshot[]) =>
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
        ...(snapshots ? { snapshots } : {}),
      },
      'reasoner',
    ),
  );

/** A recipe's LLM, as its stage context gives it: checked against the weights the shard synced. */
describe("a synced role's caller", () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    // A sampler restarted with version 7 of the run's policy.
    llm = await startScriptedLlm({ samplerPolicy: 'p', weightVersion: 7 });
  });
  afterEach(() => llm.close());

  const ask = (weightSync: Record<string, unknown>) => askShard(llm, weightSync);

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

describe("a synced role's caller, with the weights' digest", () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    // A sampler serving the run's version 1, a copy of the weights first published at that version.
    llm = await startScriptedLlm({
      samplerPolicy: 'p',
      weightVersion: 1,
      weightLineage: 'r1',
      weightDigest: DIGEST.first,
    });
  });
  afterEach(() => llm.close());

  const askSyncedTo = (sha256: string) =>
    askShard(llm, { engine: 'kernel', servers: [llm.url] }, [
      { policy: 'p', version: 1, uri: 's3://b/r1/p/v1', format: 'full', sha256 },
    ]);

  test('an answer from other weights of the synced version (published again since) is refused', async () => {
    await expect(askSyncedTo(DIGEST.first)).resolves.toHaveLength(1);
    await expect(askSyncedTo(DIGEST.again)).rejects.toThrow(
      new WeightsMoved(
        `inference ${llm.url} (scripted-policy): answered from run "r1"'s weight version 1 (weights ${'a'.repeat(12)}), ` +
          `but the shard synced it to run "r1"'s weight version 1 (weights ${'b'.repeat(12)}) ` +
          '(the server restarted or loaded other weights); the shard syncs it again and resamples',
      ),
    );
  });
});
