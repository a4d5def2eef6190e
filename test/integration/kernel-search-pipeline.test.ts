import {
  sspAgentModel,
  sspKernelConfig,
  scopeKernelConfig,
  scopeModels,
  scopePolicies,
  searchIndexes,
} from '../support/kernel-search';
import { withKernelRun } from '../support/kernel-run';
import {
  committedInOrder,
  expectKernelAt,
  expectPipeline,
  expectTrainedExactly,
  versionsOf,
} from '../support/kernel-manifests';

const ITERATIONS = 2;

/**
 * The search-agent recipes one-step-off (`pipeline.maxStaleness` 1) on real training kernels: iteration 2 runs
 * its multi-turn search rollouts on a pinned snapshot of version 0 while the kernel trains iteration 1, then
 * trains from version 1 and commits after it. The models are the scripted bigram chains of
 * kernel-search-run.test.ts (test/support/kernel-search.ts), which runs the same recipes synchronously.
 */
describe('search-agent recipes one-step-off on the training kernel', () => {
  const indexes = searchIndexes();
  afterAll(() => indexes.remove());

  test(
    'SSP: iteration 2 samples version 0 while version 1 trains, then trains from version 1',
    () =>
      withKernelRun(
        { model: sspAgentModel(), name: 'kernel-ssp-k1', policies: (runId) => [runId] },
        async (run) => {
          const outcome = await run.execute({
            ...sspKernelConfig(run, await indexes.retrieval('test/fixtures/ssp/corpus.jsonl', 'ssp')),
            iterations: ITERATIONS,
            pipeline: { maxStaleness: 1 },
          });
          const manifests = await committedInOrder(run, outcome.lastCommitted, ITERATIONS);
          // Every iteration has proposer rows (one per answer slot), so every iteration steps the one policy.
          expect(versionsOf(manifests, run.runId)).toEqual([1, 2]);
          expectPipeline(manifests, run.runId, 1);
          for (const m of manifests) expectTrainedExactly(m, run.runId);
          await expectKernelAt(run, run.runId, manifests, 1);
        },
      ),
    600_000,
  );

  test(
    'SCOPE (joint): both policies one version behind in iteration 2, the frozen judge never synced',
    () =>
      withKernelRun(
        {
          model: scopeModels(),
          name: 'kernel-scope-k1',
          policies: (runId) => Object.values(scopePolicies(runId)),
        },
        async (run) => {
          const { challenger, solver } = scopePolicies(run.runId);
          const corpus = 'test/fixtures/corpus/wiki.jsonl';
          const outcome = await run.execute({
            ...scopeKernelConfig(run, {
              corpus,
              retrieval: await indexes.retrieval(corpus, 'wiki'),
              scope: { schedule: { mode: 'joint' } },
            }),
            iterations: ITERATIONS,
            pipeline: { maxStaleness: 1 },
          });
          const manifests = await committedInOrder(run, outcome.lastCommitted, ITERATIONS);
          // Every Challenger rollout is a row, so the Challenger steps every iteration.
          expect(versionsOf(manifests, challenger)).toEqual([1, 2]);
          for (const policy of [challenger, solver]) {
            expectPipeline(manifests, policy, 1);
            await expectKernelAt(run, policy, manifests, 1);
          }
          for (const m of manifests) expectTrainedExactly(m, challenger);
          const judge = scopePolicies(run.runId).judge;
          expect(outcome.versions[judge]).toBeUndefined();
        },
      ),
    600_000,
  );
});
