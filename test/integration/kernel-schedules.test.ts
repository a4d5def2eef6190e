import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Manifest } from '../../contracts/selfplay';
import {
  agentModel,
  scopeKernelConfig,
  scopeModels,
  scopePolicies,
  searchIndexes,
} from '../support/kernel-search';
import { servedVersion, trainedVersion, withKernelRun } from '../support/kernel-run';

/**
 * The papers' training schedules on real training kernels, seen in what the kernels report:
 * - SSP (its preset's `training.update`): one train step per iteration whose optimizer steps update the
 *   proposer first, then the solver, each in its own mini-batches (the kernel's `stepsByRole` and
 *   `firstStepByRole`, kept in the manifest as `steps.{role}` and `firstStep.{role}`);
 * - SCOPE's stages: a Challenger step against the frozen Solver, then a Solver step against the frozen
 *   Challenger, each kernel's policy version moving only in its own stage.
 */
describe("the papers' schedules on the training kernel", () => {
  const indexes = searchIndexes();
  let answersDir: string;
  beforeAll(async () => {
    answersDir = await mkdtemp(path.join(tmpdir(), 'kernel-schedules-'));
  });
  afterAll(() => Promise.all([indexes.remove(), rm(answersDir, { recursive: true, force: true })]));

  /**
   * An agent for both SSP roles: a turn searches (`<search> river</search>`), asks `<question> which</question>`
   * or answers `<answer> history</answer>`, the gold answer. A proposer that searched before asking wrote a
   * valid question; a solver that answered within its turns was right, one that asked a question instead was
   * not, so the rollouts of a question earn different rewards, and so do the proposers.
   */
  const sspAgent = () =>
    agentModel(
      4,
      { question: { words: ['which'], weight: 2 }, answer: { words: ['history'], weight: 2 } },
      0,
    );

  test(
    'SSP: the proposer, then the solver, in mini-batches of their own within one train step',
    () =>
      withKernelRun(
        { model: sspAgent(), name: 'kernel-ssp-order', policies: (runId) => [runId] },
        async (run) => {
          const answers = path.join(answersDir, 'answers.jsonl');
          await writeFile(answers, JSON.stringify({ answer: 'history', search_turns: 2 }));
          const outcome = await run.execute({
            ...run.baseConfig,
            recipe: 'ssp',
            batchSize: 8,
            shardSize: 4,
            groupSize: 4,
            retrieval: await indexes.retrieval('test/fixtures/ssp/corpus.jsonl', 'ssp'),
            sampling: { maxTokens: 64 },
            ssp: {
              answers,
              maxTurns: 3,
              // One search and a one-word question pass; the tiny model cannot answer a RAG verifier.
              rules: { minChars: 1, minWords: 1, minSearches: 1 },
              ragVerification: false,
              judge: { temperature: 0.1, maxTokens: 8 },
            },
            // The preset's update (SSP: mini-batches of 128 prompts, the proposer's steps before the solver's).
            training: { policy: run.runId },
          });
          expect(outcome).toMatchObject({ lastCommitted: 1, versions: { [run.runId]: 1 } });
          const rows = await run.rows(1, run.runId);
          const byRole = (role: string) => rows.filter((r) => r.role === role);
          // Both roles have rows that carry a learning signal: a valid question some solver missed, and a group
          // whose answers earned different rewards.
          expect(byRole('proposer')).toHaveLength(8);
          expect(byRole('proposer').some((r) => r.advantage > 0)).toBe(true);
          expect(byRole('solver').length).toBeGreaterThan(0);
          expect(byRole('solver').some((r) => r.advantage !== 0)).toBe(true);

          const manifest = (await run.manifest(1)) as Manifest;
          // One train step (version 1) of two optimizer steps: step 1 held the proposer's rows only, step 2 the
          // solver's only.
          expect(manifest.policies[run.runId]?.version).toBe(1);
          expect(manifest.metrics.train[run.runId]).toMatchObject({
            optimizerSteps: 2,
            skippedSteps: 0,
            'steps.proposer': 1,
            'steps.solver': 1,
            'firstStep.proposer': 1,
            'firstStep.solver': 2,
          });
          expect(await trainedVersion(run.kernels[run.runId]!, run.runId)).toBe(1);
          expect(await servedVersion(run.kernels[run.runId]!, run.runId)).toBe(1);
        },
      ),
    600_000,
  );

  test(
    "SCOPE's stages: the Challenger's step, then the Solver's, each while the other is frozen",
    () =>
      withKernelRun(
        {
          model: scopeModels(),
          name: 'kernel-scope-stages',
          policies: (runId) => Object.values(scopePolicies(runId)),
        },
        async (run) => {
          const { challenger, solver, judge } = scopePolicies(run.runId);
          const corpus = 'test/fixtures/corpus/wiki.jsonl';
          const outcome = await run.execute({
            ...scopeKernelConfig(run, {
              corpus,
              retrieval: await indexes.retrieval(corpus, 'wiki'),
              scope: {
                schedule: {
                  mode: 'stages',
                  stageSteps: 1,
                  solverTasks: 1,
                  filterRollouts: 2,
                  candidatesPerRound: 2,
                  maxRounds: 2,
                },
              },
            }),
            iterations: 2,
          });
          expect(outcome).toMatchObject({ lastCommitted: 2, versions: { [challenger]: 1, [solver]: 1 } });
          const [first, second] = (await Promise.all([run.manifest(1), run.manifest(2)])) as Manifest[];
          expect([first?.schedule, second?.schedule]).toEqual([
            { stage: 'challenger', round: 1, stageIteration: 1 },
            { stage: 'solver', round: 1, stageIteration: 1 },
          ]);

          // Iteration 1: the Challenger trains on its G rollouts per document; the Solver only measures ḡ.
          expect(Object.keys(first!.metrics.train)).toEqual([challenger]);
          expect(await run.rows(1, challenger)).toHaveLength(2 * 2);
          expect(await run.rows(1, solver)).toHaveLength(0);
          expect(first!.policies[challenger]?.version).toBe(1);
          expect(first!.policies[solver]?.version).toBe(0);

          // Iteration 2: the Solver trains on the tasks it selected; the Challenger that wrote them stays at
          // version 1, its committed weights those of iteration 1.
          expect(Object.keys(second!.metrics.train)).toEqual([solver]);
          expect(await run.rows(2, challenger)).toHaveLength(0);
          const solverRows = await run.rows(2, solver);
          expect(solverRows.length).toBeGreaterThan(0);
          expect(solverRows.every((r) => r.role === 'solver')).toBe(true);
          expect(second!.metrics.train[solver]?.gradNorm).toBeGreaterThan(0);
          expect(second!.policies[solver]?.version).toBe(1);
          expect(second!.policies[challenger]).toEqual(first!.policies[challenger]);

          // Each kernel took exactly one train step over the two iterations, and serves it; the judge none.
          for (const policy of [challenger, solver]) {
            expect(await trainedVersion(run.kernels[policy]!, policy)).toBe(1);
            expect(await servedVersion(run.kernels[policy]!, policy)).toBe(1);
          }
          expect(await trainedVersion(run.kernels[judge]!, judge)).toBe(0);
        },
      ),
    600_000,
  );
});
