import type { IterationStageInput, PlanResult, PlanRound } from '../../contracts/selfplay';
import type { RunConfig } from '../../config/schema';
import type { ActivityDeps } from './deps';
import { recipeFor } from './deps';
import { loadRecipeState } from './recipe-state';
import type { WorkerEnv } from '../../config/env';
import { requireInput, requireInputs } from '../../config/run-access';
import { putJsonl } from '../clients/storage/codec';
import { shardKey } from '../clients/storage/keys';
import {
  corpusError,
  loadCorpus,
  type Corpus,
  type CorpusStats,
  type IndexedCorpusOptions,
} from '../corpus/corpus';
import { loadExcludedDocIds, withoutDocuments } from '../corpus/exclude';
import { segmentIndexFor, type BuildProgress } from '../corpus/segment-index';
import { indexedSegments, type SegmentSource } from '../corpus/segment-source';
import { heartbeatWhile } from '../lib/heartbeat';
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
      requireInputs(config, deps.env);
      let used: CorpusStats | undefined;
      const progress: BuildProgress = { documents: 0, segments: 0, chunks: 0 };
      const corpus = async (): Promise<Corpus> => {
        const loaded = await loadUsableCorpus(config.corpus, deps.env);
        used = loaded.stats;
        return loaded;
      };
      const segments = async (): Promise<SegmentSource> => {
        const source = await openUsableSegments(deps, config.corpus, progress);
        used = source.stats;
        return source;
      };
      const state = await loadRecipeState(deps.store, input.recipeStateKey);
      const recipe = recipeFor(deps, config);
      const round = input.round ?? FIRST_ROUND;
      // Heartbeats, with the index build's progress: a first plan over a large corpus builds its index.
      const units = await heartbeatWhile(
        () => ({ indexBuild: progress }),
        () => recipe.plan({ config, runId, iteration, corpus, segments, state, round: round.index }),
      );
      const shards: PlanResult['shards'] = [];
      for (let j = 0; j * config.shardSize < Math.max(units.length, 1); j++) {
        const shard = round.firstShard + j;
        const rows: PlanUnit[] = units
          .slice(j * config.shardSize, (j + 1) * config.shardSize)
          .map((u, unit) => ({ ...u, unit, docIndex: round.firstDocIndex + j * config.shardSize + unit }));
        const key = shardKey(runId, iteration, 'plan', shard);
        if (!(await deps.store.exists(key))) await putJsonl(deps.store, key, rows);
        shards.push({ shard, documents: rows.length });
      }
      const accumulation = recipe.accumulation?.(config, iteration);
      return {
        shards,
        ...(accumulation ? { accumulation } : {}),
        corpus: used
          ? { segments: used.segments, skipped: { ...used.skipped } }
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
async function loadUsableCorpus(spec: RunConfig['corpus'], env: WorkerEnv): Promise<Corpus> {
  requireCorpusInputs(spec, env);
  const loaded = await loadCorpus(spec.uri, corpusOptions(spec)).catch((err: unknown) => {
    throw inputReadFailure('corpus.uri', spec.uri, err);
  });
  const corpus = withoutDocuments(loaded, await excludedDocIds(spec));
  assertUsable(spec, corpus.stats);
  return corpus;
}

/** The corpus's segments through its stored index (built now if missing), less the excluded documents. */
async function openUsableSegments(
  deps: ActivityDeps,
  spec: RunConfig['corpus'],
  progress: BuildProgress,
): Promise<SegmentSource> {
  requireCorpusInputs(spec, deps.env);
  const index = await segmentIndexFor(deps.store, spec.uri, corpusOptions(spec), { progress }).catch(
    (err: unknown) => {
      throw inputReadFailure('corpus.uri', spec.uri, corpusError(spec.uri, err));
    },
  );
  const source = await indexedSegments(index, await excludedDocIds(spec));
  assertUsable(spec, source.stats);
  return source;
}

/** Where the corpus is read, whichever recipe reads it (the plan's first check lists the known readers). */
function requireCorpusInputs(spec: RunConfig['corpus'], env: WorkerEnv): void {
  requireInput(env, spec.uri, 'corpus.uri');
  if (spec.excludeDocIds) requireInput(env, spec.excludeDocIds, 'corpus.excludeDocIds');
}

const corpusOptions = (spec: RunConfig['corpus']): IndexedCorpusOptions => ({
  maxSegmentChars: spec.maxSegmentChars,
  maxDocumentChars: spec.maxDocumentChars,
  ...(spec.columns ? { columns: spec.columns } : {}),
});

async function excludedDocIds(spec: RunConfig['corpus']): Promise<ReadonlySet<string>> {
  return spec.excludeDocIds
    ? await loadExcludedDocIds(spec.excludeDocIds).catch((err: unknown) => {
        throw inputReadFailure('corpus.excludeDocIds', spec.excludeDocIds as string, err);
      })
    : new Set<string>();
}

/** Throws when nothing is left to plan from. */
function assertUsable(spec: RunConfig['corpus'], stats: CorpusStats): void {
  if (stats.segments === 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `corpus.uri ${spec.uri} has no usable documents (skipped: ${JSON.stringify(stats.skipped)})`,
    );
  }
}
