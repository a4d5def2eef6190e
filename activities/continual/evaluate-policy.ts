import { policyNames } from '../../config/policies';
import type { EvaluateInput, EvaluationScore } from '../../contracts/continual';
import type { ActivityDeps } from '../stages/deps';
import { runStoredUnits } from '../stages/shard-units';
import { endpointFor } from '../../config/env';
import { digestsOf } from '../../contracts/selfplay';
import { EVAL_CALLS } from '../clients/llm-protocol';
import { reasonerMessages } from '../recipes/spice/prompts';
import type { AnswerKind } from '../scoring/verifiers';
import { heartbeatWhile } from '../lib/heartbeat';
import { seedOf } from '../lib/rng';
import { loadBenchmark } from '../evaluation/benchmarks';
import { ensureServing, EVAL_ROLE } from '../evaluation/evaluate';
import { sharedAnswerChecker } from '../scoring/answer-checker-pool';
import { judgeSample, type SampleVerdict } from '../evaluation/scoring';
import { evalItemKey, evalItemsPrefix } from '../evaluation/keys';
import { getJsonl } from '../clients/storage/codec';
import { evalResultsKey } from './keys';
import { requireInput } from '../../config/run-access';

/** One held-out item's verdict, a line of `eval-{label}-v{N}.jsonl.gz`. */
export interface EvalVerdict extends SampleVerdict {
  /** The item's place in the set (its key while the evaluation runs). */
  unit: number;
  id: string;
  kind: AnswerKind;
  gold: string;
  completion: string;
}

/**
 * Scores one checkpoint on the held-out set, on the rollout pool (next to the inference servers): brings the
 * servers to its snapshot when the run syncs weights, samples one greedy answer per question from the policy
 * at that version, judges each with the recipes' verifiers and stores every verdict as it comes (a benchmark
 * file of any format in activities/evaluation/benchmarks.ts). A retry finds the stored verdicts and samples
 * only the missing ones.
 */
export function evaluationActivities(deps: ActivityDeps) {
  return {
    async evaluatePolicy(input: EvaluateInput): Promise<EvaluationScore> {
      const { config, checkpoint, label } = input;
      const resultsKey = evalResultsKey(input.lineage, input.jobId, label, checkpoint.policyVersion);
      const score = (verdicts: readonly EvalVerdict[]): EvaluationScore => {
        const correct = verdicts.filter((v) => v.correct).length;
        const total = verdicts.length;
        return {
          label,
          policyVersion: checkpoint.policyVersion,
          correct,
          total,
          score: total ? correct / total : 0,
          resultsKey,
        };
      };
      // A finished evaluation needs neither the set nor the servers.
      const stored = await getJsonl<EvalVerdict>(deps.store, resultsKey);
      if (stored) return score(stored);

      requireInput(deps.env, input.evalUri, 'eval');
      const { items } = await loadBenchmark(input.evalUri, undefined, `held-out set ${input.evalUri}`);
      const folder = resultsKey.replace(/\.jsonl\.gz$/, '');
      const { records } = await heartbeatWhile(
        () => ({ label, version: checkpoint.policyVersion }),
        async (signal) => {
          await ensureServing(deps, config, checkpoint.policyVersion, checkpoint.snapshot, signal);
          const llm = deps.inference.endpoint(
            // A lineage trains one policy (see jobs.ts): the version is that policy's.
            endpointFor(
              EVAL_ROLE,
              config,
              deps.env,
              { [policyNames(config)[0] ?? '']: checkpoint.policyVersion },
              digestsOf([checkpoint.snapshot]),
            ),
          );
          return runStoredUnits({
            store: deps.store,
            key: resultsKey,
            partsPrefix: evalItemsPrefix(folder),
            partKey: (unit) => evalItemKey(folder, unit),
            inputs: items.map((item) => ({ ...item, unit: item.index })),
            work: async (item): Promise<EvalVerdict> => {
              const [sample] = await llm.chat({
                role: EVAL_ROLE,
                call: EVAL_CALLS.answer,
                // The user turn of the Qwen Reasoner prompt, as lineages have always been scored.
                messages: reasonerMessages(item.question, 'qwen').filter((m) => m.role === 'user'),
                n: 1,
                seed: seedOf('eval', item.id),
                temperature: 0,
                topP: 1,
                maxTokens: config.sampling.maxTokens,
                signal,
              });
              const completion = sample?.content ?? '';
              return {
                unit: item.unit,
                id: item.id,
                kind: item.kind,
                gold: item.answer,
                ...(await judgeSample(item, completion, sharedAnswerChecker())),
                completion,
              };
            },
            details: (done, total) => ({ label, version: checkpoint.policyVersion, done, total }),
          });
        },
      );
      return score(records);
    },
  };
}
