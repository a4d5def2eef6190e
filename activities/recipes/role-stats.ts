import type { TrainingRow } from '../clients/trainer-contract';

/** Per-role summaries of a training batch, for every recipe's metrics. */

export function meanRewardByRole(rows: readonly TrainingRow[]): Record<string, number> {
  const acc: Record<string, { total: number; n: number }> = {};
  for (const r of rows) {
    const a = (acc[r.role] ??= { total: 0, n: 0 });
    a.total += r.reward;
    a.n++;
  }
  return Object.fromEntries(Object.entries(acc).map(([role, a]) => [role, a.total / a.n]));
}

export function rowsByRole(rows: readonly TrainingRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) out[r.role] = (out[r.role] ?? 0) + 1;
  return out;
}

/** The arithmetic mean; 0 for no values. */
export const mean = (xs: readonly number[]): number =>
  xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;

/** The share of rows whose advantage is exactly 0 (they carry no gradient); 0 for no rows. */
export function zeroAdvantageFraction(rows: readonly TrainingRow[]): number {
  return rows.length ? rows.filter((r) => r.advantage === 0).length / rows.length : 0;
}
