import { ContextLengthExceeded } from '../clients/inference';
import type { PlanUnit, ShardRecords, Unit } from '../recipes/types';

/**
 * A unit the stages gave up on without failing its shard: one of its prompts does not fit the model's context
 * (a 400 that no retry changes, so failing the shard would fail the iteration for good and a retry would plan
 * the same document). The stage that met the refusal stores this record in the unit's place, every later stage
 * passes it on without calling the recipe, and the filter leaves the unit out of the recipe's records (no rows,
 * no reward) and counts it. Recipes never see one: every stage still writes one record per planned unit, which
 * is what `alignUnits` checks.
 */
export interface SkippedUnit extends Unit {
  skipped: 'context_length';
  /** The stage that met the refusal, and the refusal's text. */
  stage: string;
  reason: string;
}

export function isSkipped(record: Unit | undefined): record is SkippedUnit {
  return record !== undefined && (record as Partial<SkippedUnit>).skipped !== undefined;
}

/** Runs one unit's stage work; a prompt over the context makes the unit's skip record instead of a failure. */
export async function skipOverLongUnit(
  unit: number,
  stage: string,
  work: () => Promise<Unit>,
): Promise<Unit> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof ContextLengthExceeded)) throw err;
    const record: SkippedUnit = { unit, skipped: 'context_length', stage, reason: err.message };
    return record;
  }
}

/** The records a recipe summarizes (the skipped ones left out), and how many units were skipped. */
export function splitSkipped<T extends Unit>(records: readonly T[]): { kept: T[]; skipped: number } {
  const kept = records.filter((r) => !isSkipped(r));
  return { kept, skipped: records.length - kept.length };
}

/** A shard's records without the units any stage skipped, for the recipe's filter; and how many it dropped. */
export function withoutSkippedUnits<P extends Unit, G extends Unit, S extends Unit, J extends Unit>(
  shard: ShardRecords<P, G, S, J, PlanUnit>,
): { shard: ShardRecords<P, G, S, J, PlanUnit>; skipped: number } {
  const dropped = new Set(
    [shard.propose, shard.gate, shard.solve, shard.judge].flatMap((records) =>
      records.filter(isSkipped).map((r) => r.unit),
    ),
  );
  const keep = <T extends Unit>(records: T[]): T[] => records.filter((r) => !dropped.has(r.unit));
  return {
    shard: {
      shard: shard.shard,
      plan: keep(shard.plan),
      propose: keep(shard.propose),
      gate: keep(shard.gate),
      solve: keep(shard.solve),
      judge: keep(shard.judge),
    },
    skipped: dropped.size,
  };
}
