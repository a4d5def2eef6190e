import type { RunConfig, RecipeName } from '../../config/schema';
import type { LlmCaller } from '../clients/inference';
import type { TrainingRow } from '../clients/trainer-contract';
import type { Accumulation, RecipeMetrics, ScheduleStep } from '../../contracts/selfplay';
import type { SegmentSource } from '../corpus/segment-source';
import type { Corpus } from '../corpus/corpus';
import type { Retriever, SolverSearch } from '../tools/types';
import type { StoredValue } from '../clients/storage/codec';

/**
 * A recipe is what differs between papers: prompts, parsing, checks, rewards, advantages. The stage
 * activities around it do the rest (storage, idempotency, heartbeats, sharding) the same for every recipe.
 * Records are per unit (one planned item: a document, a cluster task, a prompt) and must be plain JSON.
 * A recipe may keep state between iterations (a task pool, a history memory): it is read from the last
 * commit, handed to every stage, and the filter returns the next one, which the commit makes durable.
 */

export interface Unit {
  unit: number;
}

/** One unit of an iteration's plan: its place, plus whatever the recipe's plan put in it. */
export interface PlanUnit extends Unit {
  /** Position in the iteration's plan; seeds derive from it, so they do not depend on sharding. */
  docIndex: number;
}

/** SPICE's unit: one sampled document segment. */
export interface PlanDocument extends PlanUnit {
  segmentId: string;
  docId: string;
  text: string;
}

export interface PlanContext<State = unknown> {
  config: RunConfig;
  runId: string;
  iteration: number;
  /**
   * The configured corpus's segments by position, through its stored segment index (built on first use): a
   * plan that samples B segments reads only those. Recipes that need no documents never open it.
   */
  segments(): Promise<SegmentSource>;
  /** The whole configured corpus in memory, for a plan that needs every segment (SPELL's clusters). */
  corpus(): Promise<Corpus>;
  /** The recipe state as committed by the previous iteration; undefined on the first. */
  state: State | undefined;
  /** The round of a recipe that gathers rounds (`accumulation`), each planning new units; absent: 0. */
  round?: number;
}

export interface RecipeContext {
  config: RunConfig;
  runId: string;
  iteration: number;
  shard: number;
  /** The version of each trained policy this shard samples from. */
  versions: Record<string, number>;
  /** The inference endpoint serving a role. */
  llm(role: string): LlmCaller;
  /** The configured search index (`retrieval`), loaded on first use and shared by the worker's activities. */
  retriever(): Promise<Retriever>;
  /**
   * A finished part of an unfinished unit, kept under the unit's key in this stage and shard so a retried
   * shard does not ask for it again: a multi-turn trajectory's turns (`traj-solver-3`, `runSearchLoop`'s
   * `checkpoint`), a verification. `name` tells the unit's parts apart.
   */
  unitPart<T>(unit: number, name: string): StoredValue<T>;
  signal: AbortSignal;
  /** The recipe state as committed by the previous iteration; undefined on the first. */
  state: unknown;
}

/** Every stage's records of one shard, aligned by unit. */
export interface ShardRecords<P, G, S, J, U extends PlanUnit = PlanUnit> {
  shard: number;
  plan: U[];
  propose: P[];
  gate: G[];
  solve: S[];
  judge: J[];
}

export interface FilterOutput<State = unknown> {
  rows: TrainingRow[];
  metrics: RecipeMetrics;
  /** The state the next iteration starts from; omitted when the recipe keeps none. */
  state?: State;
}

export interface FilterContext<State = unknown> {
  config: RunConfig;
  runId: string;
  iteration: number;
  state: State | undefined;
}

export interface Recipe<
  P extends Unit,
  G extends Unit,
  S extends Unit,
  J extends Unit,
  U extends PlanUnit = PlanUnit,
  State = unknown,
> {
  name: RecipeName;
  /** The iteration's units, in order; the plan stage numbers them and cuts them into shards. */
  plan(ctx: PlanContext<State>): Promise<Array<Omit<U, 'unit' | 'docIndex'>>>;
  /** Writes one document's tasks (may call the policy many times, e.g. until a valid task exists). */
  propose(ctx: RecipeContext, unit: U): Promise<P>;
  /**
   * Checks a shard's proposals together (duplicates across documents need the whole shard). CPU work: its
   * stage runs on the orchestrator pool, syncs no servers and has no per-unit skip, so a recipe's model calls
   * go in propose, solve or judge (SCOPE's judge gates run in propose, SSP's RAG verification in solve),
   * where a prompt over the context skips its unit instead of failing the shard.
   */
  gate(ctx: RecipeContext, plan: U[], proposals: P[]): Promise<G[]>;
  /** G rollouts per task that passed the gate. */
  solve(ctx: RecipeContext, gated: G): Promise<S>;
  judge(ctx: RecipeContext, gated: G, solved: S): Promise<J>;
  /**
   * Rewards, advantages and the training batch over every shard; deterministic. May be async for a recipe
   * whose first state comes from outside (MAE reads its seed questions when no state is committed yet).
   */
  filter(
    ctx: FilterContext<State>,
    shards: Array<ShardRecords<P, G, S, J, U>>,
  ): FilterOutput<State> | Promise<FilterOutput<State>>;
  /** A few numbers about a stage's shard output, for the workflow and the UI. */
  summarize(stage: 'propose' | 'gate' | 'solve' | 'judge', records: readonly Unit[]): Record<string, number>;
  /** Whether the iteration gathers rounds of units until a judge metric reaches a target; none: one round. */
  accumulation?(config: RunConfig, iteration: number): Accumulation | undefined;
  /** The iteration's step of a staged schedule, which its manifest records; none: every iteration alike. */
  schedule?(config: RunConfig, iteration: number): ScheduleStep | undefined;
  /** A search agent's solver, as its solve stage runs it on one question (SSP, SCOPE); none: one answer. */
  solverSearch?(config: RunConfig, question: string): SolverSearch;
}

// The registry stores recipes with their record types erased; each recipe is type-checked where it is defined.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRecipe = Recipe<any, any, any, any, any, any>;
