import { policyNames } from '../../config/policies';
import { gunzipSync } from 'node:zlib';
import type { EvaluateInput, EvaluationScore } from '../../contracts/continual';
import type { ActivityDeps } from '../stages/deps';
import { ensureServersAt } from '../stages/sync';
import { endpointFor } from '../../config/env';
import { readObjectAtUri } from '../clients/storage';
import { getJsonl, putJsonl } from '../clients/storage/codec';
import { EVAL_CALLS } from '../clients/llm-protocol';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { heartbeatWhile } from '../lib/heartbeat';
import { seedOf } from '../lib/rng';
import {
  evalPrompt,
  judgeEvalAnswer,
  parseEvalSet,
  scoreOf,
  type EvalItem,
  type EvalVerdict,
} from './eval-scoring';
import { evalResultsKey } from './keys';
import { sharedAnswerChecker } from '../scoring/answer-checker-pool';

/**
 * The role whose endpoint answers held-out questions: `inference.roles.eval` when the config sets one,
 * otherwise the default endpoint, with `{version}` in its model name filled in.
 */
export const EVAL_ROLE = 'eval';

/**
 * Scores one checkpoint on the held-out set, on the rollout pool (next to the inference servers): brings the
 * servers to its snapshot when the run syncs weights, samples one greedy answer per question from the policy
 * at that version, judges each with the recipes' verifiers and stores every verdict. A retry finds the stored
 * verdicts and does not sample again.
 */
export function evaluationActivities(deps: ActivityDeps) {
  return {
    async evaluatePolicy(input: EvaluateInput): Promise<EvaluationScore> {
      const { config, checkpoint, label } = input;
      const resultsKey = evalResultsKey(input.lineage, input.jobId, label, checkpoint.policyVersion);
      const score = (verdicts: readonly EvalVerdict[]): EvaluationScore => ({
        label,
        policyVersion: checkpoint.policyVersion,
        ...scoreOf(verdicts),
        resultsKey,
      });
      const stored = await getJsonl<EvalVerdict>(deps.store, resultsKey);
      if (stored) return score(stored);

      const items = await loadEvalSet(input.evalUri);
      const verdicts = await heartbeatWhile(
        () => ({ label, version: checkpoint.policyVersion }),
        async (signal) => {
          if (config.weightSync.engine !== 'none') {
            if (!checkpoint.snapshot) {
              throw nonRetryable(
                NON_RETRYABLE.invalidInput,
                `version ${checkpoint.policyVersion} has no sampler snapshot to load with weightSync.engine "${config.weightSync.engine}"`,
              );
            }
            await ensureServersAt(deps, config, checkpoint.snapshot, signal);
          }
          const llm = deps.inference.endpoint(
            // A lineage trains one policy (see jobs.ts): the version is that policy's.
            endpointFor(EVAL_ROLE, config, deps.env, {
              [policyNames(config)[0] ?? '']: checkpoint.policyVersion,
            }),
          );
          return Promise.all(
            items.map(async (item: EvalItem) => {
              const [sample] = await llm.chat({
                role: EVAL_ROLE,
                call: EVAL_CALLS.answer,
                messages: [{ role: 'user', content: evalPrompt(item.question) }],
                n: 1,
                seed: seedOf('eval', item.id),
                temperature: 0,
                topP: 1,
                maxTokens: config.sampling.maxTokens,
                signal,
              });
              return judgeEvalAnswer(item, sample?.content ?? '', sharedAnswerChecker());
            }),
          );
        },
      );
      await putJsonl(deps.store, resultsKey, verdicts);
      return score(verdicts);
    },
  };
}

async function loadEvalSet(uri: string): Promise<EvalItem[]> {
  try {
    const bytes = await readObjectAtUri(uri);
    return parseEvalSet((uri.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8'));
  } catch (err) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `held-out set ${uri}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
