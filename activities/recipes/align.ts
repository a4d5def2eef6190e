import type { PlanUnit, ShardRecords, Unit } from './types';

/** One planned unit with its record from every stage. */
export interface UnitRecords<P, G, S, J, U extends PlanUnit> {
  plan: U;
  propose: P;
  gate: G;
  solve: S;
  judge: J;
}

/**
 * The shards' records unit by unit, in plan order, for a recipe's filter. Every stage writes one record per
 * planned unit in plan order, so a missing or misaligned record is a bug, not data: it fails loudly.
 */
export function alignUnits<
  P extends Unit,
  G extends Unit,
  S extends Unit,
  J extends Unit,
  U extends PlanUnit,
>(shards: ReadonlyArray<ShardRecords<P, G, S, J, U>>): Array<UnitRecords<P, G, S, J, U>> {
  return shards
    .flatMap((s) =>
      s.plan.map((plan, i) => {
        const [propose, gate, solve, judge] = [s.propose[i], s.gate[i], s.solve[i], s.judge[i]];
        if (!propose || !gate || !solve || !judge)
          throw new Error(`shard ${s.shard} unit ${plan.unit}: stage records are missing`);
        if ([propose, gate, solve, judge].some((r) => r.unit !== plan.unit))
          throw new Error(`shard ${s.shard} unit ${plan.unit}: stage records are misaligned`);
        return { plan, propose, gate, solve, judge };
      }),
    )
    .sort((a, b) => a.plan.docIndex - b.plan.docIndex);
}
