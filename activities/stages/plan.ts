import type { IterationStageInput, PlanResult } from '../../workflows/contracts';
import type { ActivityDeps } from './deps';
import { getJsonl, putJsonl } from '../clients/storage/codec';
import { shardKey } from '../clients/storage/keys';
import { loadCorpus } from '../corpus/corpus';
import { sampleSegments } from '../corpus/sample';
import { seededRng } from '../lib/rng';
import { NON_RETRYABLE, nonRetryable } from '../lib/errors';
import type { PlanDocument } from '../recipes/types';

export type PlanInput = Omit<IterationStageInput, 'shards'>;

/** The number of shards an iteration of this config has; the workflow and the plan must agree on it. */
export function shardCount(batchSize: number, shardSize: number): number {
  return Math.ceil(batchSize / shardSize);
}

/**
 * Samples the iteration's B documents (seeded by seed and iteration, so a retry picks the same ones) and
 * writes them as shards of `shardSize`. Orchestrator pool.
 */
export function planActivities(deps: ActivityDeps) {
  return {
    async plan(input: PlanInput): Promise<PlanResult> {
      const t0 = Date.now();
      const { config, runId, iteration } = input;
      const count = shardCount(config.batchSize, config.shardSize);
      const corpus = await loadCorpus(config.corpus.uri, {
        maxSegmentChars: config.corpus.maxSegmentChars,
        maxDocumentChars: config.corpus.maxDocumentChars,
      }).catch((err: unknown) => {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          `corpus.uri ${config.corpus.uri}: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
      if (corpus.segments.length === 0) {
        throw nonRetryable(
          NON_RETRYABLE.invalidConfig,
          `corpus.uri ${config.corpus.uri} has no usable documents (skipped: ${JSON.stringify(corpus.stats.skipped)})`,
        );
      }
      const sampled = sampleSegments(
        corpus.segments,
        config.batchSize,
        seededRng(config.seed, iteration, 'plan'),
      );
      const shards: PlanResult['shards'] = [];
      for (let shard = 0; shard < count; shard++) {
        const docs: PlanDocument[] = sampled
          .slice(shard * config.shardSize, (shard + 1) * config.shardSize)
          .map((segment, unit) => ({
            unit,
            docIndex: shard * config.shardSize + unit,
            segmentId: segment.id,
            docId: segment.docId,
            text: segment.text,
          }));
        const key = shardKey(runId, iteration, 'plan', shard);
        if (!(await getJsonl(deps.store, key))) await putJsonl(deps.store, key, docs);
        shards.push({ shard, documents: docs.length });
      }
      return {
        shards,
        corpus: { segments: corpus.segments.length, skipped: { ...corpus.stats.skipped } },
        seconds: (Date.now() - t0) / 1000,
      };
    },
  };
}
