import { resolveRunConfig, type ConfigResult, type RunConfig } from './schema';

/**
 * Whether one iteration child (workflows/selfPlayIteration.ts) of a config fits Temporal's limits. Its
 * history grows with the rounds a recipe gathers (SPELL's `spell.maxRounds`, a SCOPE Solver step's
 * `scope.schedule.maxRounds`) times the shards of a round, and the commit's input lists every shard's
 * output key; at 100 rounds of 64 shards both would outgrow Temporal long after the run had started, on
 * the one hard step that needs every round. An iteration without rounds (the other recipes, SCOPE's
 * Challenger steps and joint schedule) plans one round of at most `MAX_SHARDS` (64) shards, ≈ 1,600 events:
 * the schema's shard bound keeps it small.
 *
 * The history bound, per iteration (counted high, so the true count stays below it):
 * - every activity writes at most 6 events: scheduled, started and closed (a retry adds none: the server
 *   records the started event once, with the last attempt), and the workflow task its completion wakes
 *   (scheduled, started, completed);
 * - a shard of a round runs 4 activities (propose, gate, solve, judge): 24 events; a round's plan: 6;
 * - the rest is 4 activities per policy (prepare, weight sync, the prepare of an overlapping iteration, update),
 *   4 for the iteration (start evaluation, evaluation, filter, commit) and 15 other events (the start and its
 *   first workflow task, the completion, the signal to the parent, the base commit's signal, a patch marker).
 * An operator's pause and resume add 8 events each; they, and every estimate above, fit in the half of
 * Temporal's limit that `HISTORY_EVENT_ALLOWANCE` leaves out. Half, not more: Temporal already warns at
 * 10,240 events, and a history's bytes grow with it (each activity input repeats the iteration's config,
 * ≈ 2 KB for SPELL and SCOPE's presets), so 25,600 events stay near 10 MB, a fifth of the 50 MB history size
 * limit.
 *
 * The artifact list, the commit's largest input: 4 shard keys per shard, each at most 183 bytes in JSON (a
 * run id of 128 characters, a rollback lineage, iteration 1,000,000), and one batch key per policy. At the
 * event allowance (≈ 1,060 shards in all) it stays under 780 KB, below `PAYLOAD_ALLOWANCE_BYTES`, so the event
 * bound refuses first; the byte bound is checked too, so a change to either side cannot let it through.
 */

/** Temporal's default history count limit: a workflow with more events is terminated. */
export const TEMPORAL_HISTORY_EVENT_LIMIT = 51_200;
/** The events this project lets one iteration's history reach at worst (see above for why half). */
export const HISTORY_EVENT_ALLOWANCE = TEMPORAL_HISTORY_EVENT_LIMIT / 2;
/** Temporal's default blob size limit: a larger payload (an activity's input) fails the workflow task. */
export const TEMPORAL_PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;
/** The artifact list's share: the commit's input also carries the config and the iteration's metrics. */
export const PAYLOAD_ALLOWANCE_BYTES = TEMPORAL_PAYLOAD_LIMIT_BYTES / 2;

const EVENTS_PER_ACTIVITY = 6;
const SHARD_STAGES = 4;
const ACTIVITIES_PER_POLICY = 4;
const ITERATION_ACTIVITIES = 4;
const OTHER_EVENTS = 15;
/** The longest run id (config/schema.ts `RUN_ID`). */
const RUN_ID_CHARS = 128;
/** A stage's shard key in the commit's artifact list (activities/clients/storage/keys.ts), quoted, with its comma. */
const STAGE_KEY_BYTES =
  '"runs/'.length + RUN_ID_CHARS + '.r9999/iter-1000000/propose/shard-9999.jsonl.gz",'.length;
/** A policy's batch key, the policy id as long as a run id. */
const BATCH_KEY_BYTES =
  '"runs/'.length +
  RUN_ID_CHARS +
  '.r9999/iter-1000000/update/batch-'.length +
  RUN_ID_CHARS +
  '.jsonl.gz",'.length;

/** One quantity an iteration grows by rounds of shards, and how much of Temporal's limit it may take. */
interface Budget {
  what: string;
  perShard: number;
  perRound: number;
  fixed: number;
  allowance: number;
  limit: number;
  /** How the per-shard and per-round costs come about, for the refusal. */
  why: string;
}

/** The rounds an iteration may gather (`field` sets them) and the shards each holds. */
interface Rounds {
  field: string;
  rounds: number;
  shards: number;
  /** How the shards of a round come about, for the refusal. */
  shardsFrom: string;
}

/** A recipe's rounds at worst: SPELL's every step, SCOPE's Solver steps; undefined for a recipe without. */
function gatheredRounds(config: RunConfig): Rounds | undefined {
  const shardsOf = (items: number, name: string): Pick<Rounds, 'shards' | 'shardsFrom'> => ({
    shards: Math.ceil(items / config.shardSize),
    shardsFrom: `⌈${name} ${items} / shardSize ${config.shardSize}⌉`,
  });
  if (config.recipe === 'spell')
    return {
      field: 'spell.maxRounds',
      rounds: config.spell.maxRounds,
      ...shardsOf(config.batchSize, 'batchSize'),
    };
  if (config.recipe === 'scope' && config.scope.schedule.mode === 'stages')
    return {
      field: 'scope.schedule.maxRounds',
      rounds: config.scope.schedule.maxRounds,
      ...shardsOf(config.scope.schedule.candidatesPerRound, 'candidatesPerRound'),
    };
  return undefined;
}

function budgets(config: RunConfig): Budget[] {
  const policies = Object.keys(config.training.policies ?? { [config.training.policy]: {} }).length;
  return [
    {
      what: "events in one iteration's history",
      perShard: SHARD_STAGES * EVENTS_PER_ACTIVITY,
      perRound: EVENTS_PER_ACTIVITY,
      fixed: (policies * ACTIVITIES_PER_POLICY + ITERATION_ACTIVITIES) * EVENTS_PER_ACTIVITY + OTHER_EVENTS,
      allowance: HISTORY_EVENT_ALLOWANCE,
      limit: TEMPORAL_HISTORY_EVENT_LIMIT,
      why: `${SHARD_STAGES} activities of ${EVENTS_PER_ACTIVITY} events per shard, ${EVENTS_PER_ACTIVITY} for a round's plan`,
    },
    {
      what: "bytes of artifact keys in the commit's input",
      perShard: SHARD_STAGES * STAGE_KEY_BYTES,
      perRound: 0,
      fixed: policies * BATCH_KEY_BYTES,
      allowance: PAYLOAD_ALLOWANCE_BYTES,
      limit: TEMPORAL_PAYLOAD_LIMIT_BYTES,
      why: `${SHARD_STAGES} keys of up to ${STAGE_KEY_BYTES} bytes per shard`,
    },
  ];
}

const thousands = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * Why the config's iterations could outgrow Temporal's limits, with the arithmetic and the largest round
 * count that fits; undefined when they cannot. Pure arithmetic on the config, so workflows may call it.
 */
export function temporalLimitProblem(config: RunConfig): string | undefined {
  const gathered = gatheredRounds(config);
  if (!gathered) return undefined;
  const { field, rounds, shards, shardsFrom } = gathered;
  const all = budgets(config);
  const perRound = (b: Budget): number => shards * b.perShard + b.perRound;
  const over = all.find((b) => rounds * perRound(b) + b.fixed > b.allowance);
  if (!over) return undefined;
  const most = Math.min(...all.map((b) => Math.floor((b.allowance - b.fixed) / perRound(b))));
  const total = rounds * perRound(over) + over.fixed;
  return (
    `${field}: ${rounds} rounds × (${shards} shards × ${over.perShard} + ${over.perRound}) + ${over.fixed} = ` +
    `${thousands(total)} ${over.what} at worst (${over.why}, ${over.fixed} for the rest of the iteration), ` +
    `over the ${thousands(over.allowance)} this project allows (half of Temporal's limit of ` +
    `${thousands(over.limit)}); lower ${field} to at most ${most}, or raise shardSize for fewer than ` +
    `${shards} shards per round (${shardsFrom})`
  );
}

/**
 * The config of a run about to start: `resolveRunConfig`'s problems, then `temporalLimitProblem`'s. The
 * limits are checked where a run starts, not by the schema, which workflows replay: a run recorded before
 * the check must replay as it ran (selfPlayRun checks them behind a patch).
 */
export function resolveStartConfig(input: unknown): ConfigResult {
  const resolved = resolveRunConfig(input);
  if (!resolved.ok) return resolved;
  const problem = temporalLimitProblem(resolved.config);
  return problem ? { ok: false, problems: [problem] } : resolved;
}
