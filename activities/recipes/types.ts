import type { RunConfig, RecipeName } from '../../config/schema';
import type { LlmCaller } from '../clients/inference';
import type { TrainingRow } from '../clients/trainer-contract';
import type { RecipeMetrics } from '../../workflows/contracts';

/**
 * A recipe is what differs between papers: prompts, parsing, checks, rewards, advantages. The stage
 * activities around it do the rest (storage, idempotency, heartbeats, sharding) the same for every recipe.
 * Records are per unit (one sampled document) and must be plain JSON.
 */

export interface PlanDocument {
  /** Position inside the shard. */
  unit: number;
  /** Position in the iteration's sample; seeds derive from it, so they do not depend on sharding. */
  docIndex: number;
  segmentId: string;
  docId: string;
  text: string;
}

export interface Unit {
  unit: number;
}

export interface RecipeContext {
  config: RunConfig;
  runId: string;
  iteration: number;
  shard: number;
  policyVersion: number;
  /** The inference endpoint serving a role. */
  llm(role: string): LlmCaller;
  signal: AbortSignal;
}

/** Every stage's records of one shard, aligned by unit. */
export interface ShardRecords<P, G, S, J> {
  shard: number;
  plan: PlanDocument[];
  propose: P[];
  gate: G[];
  solve: S[];
  judge: J[];
}

export interface FilterOutput {
  rows: TrainingRow[];
  metrics: RecipeMetrics;
}

export interface FilterContext {
  config: RunConfig;
  runId: string;
  iteration: number;
}

export interface Recipe<P extends Unit, G extends Unit, S extends Unit, J extends Unit> {
  name: RecipeName;
  /** Writes one document's tasks (may call the policy many times, e.g. until a valid task exists). */
  propose(ctx: RecipeContext, doc: PlanDocument): Promise<P>;
  /** Checks a shard's proposals together (duplicates across documents need the whole shard). */
  gate(ctx: RecipeContext, plan: PlanDocument[], proposals: P[]): Promise<G[]>;
  /** G rollouts per task that passed the gate. */
  solve(ctx: RecipeContext, gated: G): Promise<S>;
  judge(ctx: RecipeContext, gated: G, solved: S): Promise<J>;
  /** Rewards, advantages and the training batch over every shard; deterministic. */
  filter(ctx: FilterContext, shards: Array<ShardRecords<P, G, S, J>>): FilterOutput;
  /** A few numbers about a stage's shard output, for the workflow and the UI. */
  summarize(stage: 'propose' | 'gate' | 'solve' | 'judge', records: readonly Unit[]): Record<string, number>;
}

// The registry stores recipes with their record types erased; each recipe is type-checked where it is defined.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRecipe = Recipe<any, any, any, any>;
