import type { IterationStageInput, PlanResult, PlanRound } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { recipeFor } from './deps';
import { loadRecipeState } from './recipe-state';
import { getJsonl, putJsonl } from '../clients/storage/codec';
import { shardKey } from '../clients/storage/keys';
import { loadCorpus, type Corpus } from '../corpus/corpus';
import { loadExcludedDocIds, withoutDocuments } from '../corpus/exclude';
import { inputReadFailure, NON_RETRYABLE, nonRetryable } from '../lib/errors';
import type { PlanUnit } from '../recipes/types';

export type PlanInput = Omit<IterationStageInput, 'shards'> & {
  /** A further round of a recipe that gathers rounds; absent for the first. */
  round?: PlanRound;
};

const FIRST_ROUND: PlanRound = { index: 0, firstShard: 0, firstDocIndex: 0 };

/**
 * The recipe chooses the iteration's units (seeded by seed and iteration, so a retry chooses the same);
 * they are numbered and written as shards of `shardSize`. A further round's shards and units are numbered
 * after the earlier rounds', so every round's keys, seeds and plan order are the iteration's own.
 * Orchestrator pool.
 */
export function planActivities(deps: ActivityDeps) {
  return {
    async plan(input: PlanInput): Promise<PlanResult> {
      const t0 = Date.now();
      const { config, runId, iteration } = input;
      let loaded: Corpus | undefined;
      const corpus = async (): Promise<Corpus> => (loaded ??= await loadUsableCorpus(config.corpus));
      const state = await loadRecipeState(deps.store, input.recipeStateKey);
      const recipe = recipeFor(deps, config);
      const round = input.round ?? FIRST_ROUND;
      const units = await recipe.plan({ config, runId, iteration, corpus, state, round: round.index });
      const shards: PlanResult['shards'] = [];
      for (let j = 0; j * config.shardSize < Math.max(units.length, 1); j++) {
        const shard = round.firstShard + j;
        const rows: PlanUnit[] = units
          .slice(j * config.shardSize, (j + 1) * config.shardSize)
          .map((u, unit) => ({ ...u, unit, docIndex: round.firstDocIndex + j * config.shardSize + unit }));
        const key = shardKey(runId, iteration, 'plan', shard);
        if (!(await getJsonl(deps.store, key))) await putJsonl(deps.store, key, rows);
        shards.push({ shard, documents: rows.length });
      }
      const accumulation = recipe.accumulation?.(config);
      return {
        shards,
        ...(accumulation ? { accumulation } : {}),
        corpus: loaded
          ? { segments: loaded.segments.length, skipped: { ...loaded.stats.skipped } }
          : { segments: 0, skipped: {} },
        seconds: (Date.now() - t0) / 1000,
      };
    },
  };
}

/**
 * The corpus the config names, without its excluded documents. A corpus or exclusion list that is missing or
 * malformed, or a corpus without a usable document, is the config's fault (non-retryable); a read that fails
 * because storage is down is retried (activities/lib/errors.ts).
 */
async function loadUsableCorpus(spec: RunConfig['corpus']): Promise<Corpus> {
  const loaded = await loadCorpus(spec.uri, {
    maxSegmentChars: spec.maxSegmentChars,
    maxDocumentChars: spec.maxDocumentChars,
  }).catch((err: unknown) => {
    throw inputReadFailure('corpus.uri', spec.uri, err);
  });
  const excluded = spec.excludeDocIds
    ? await loadExcludedDocIds(spec.excludeDocIds).catch((err: unknown) => {
        throw inputReadFailure('corpus.excludeDocIds', spec.excludeDocIds as string, err);
      })
    : new Set<string>();
  const corpus = withoutDocuments(loaded, excluded);
  if (corpus.segments.length === 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `corpus.uri ${spec.uri} has no usable documents (skipped: ${JSON.stringify(corpus.stats.skipped)})`,
    );
  }
  return corpus;
}
