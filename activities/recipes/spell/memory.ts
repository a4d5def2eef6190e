import type { Rng } from '../../lib/rng';
import type { ClusterDocument, HistoryEntry, SpellState, SpellTask } from './records';

/**
 * The history memory H (spell.md §1, §5): per (task, cluster) the L most recent solvable (docs, q, a). It
 * grows the questioner's context by m new documents per solved question (5 → 10 → 15 → 20 …, until the
 * cluster is exhausted) and shows the questioner what it has already asked.
 */

export const emptyState = (): SpellState => ({ v: 1, history: {} });

export const historyKey = (task: SpellTask, cluster: string): string => `${task}/${cluster}`;

/** The committed state, checked: it crossed a storage boundary, and a wrong shape must fail loudly. */
export function readState(state: unknown): SpellState {
  if (state === undefined) return emptyState();
  if (isSpellState(state)) return state;
  throw new Error(`SPELL recipe state has an unknown shape: ${JSON.stringify(state).slice(0, 200)}`);
}

function isSpellState(value: unknown): value is SpellState {
  if (typeof value !== 'object' || value === null) return false;
  const { v, history } = value as Record<string, unknown>;
  return v === 1 && typeof history === 'object' && history !== null && !Array.isArray(history);
}

/**
 * The questioner's documents (§1.2): without history, m random ones; with history, the union of H's
 * document sets plus m not in it (fewer when the cluster runs out). Ids of documents no longer in the
 * cluster are dropped. Returned in the cluster's index order, the order the context joins them in.
 */
export function questionerDocuments(
  documents: readonly ClusterDocument[],
  history: readonly HistoryEntry[],
  m: number,
  rng: Rng,
): string[] {
  const union = new Set(history.flatMap((h) => h.docs));
  const fresh = documents.filter((d) => !union.has(d.id));
  const chosen = new Set([...union, ...rng.sample(fresh, m).map((d) => d.id)]);
  return documents.filter((d) => chosen.has(d.id)).map((d) => d.id);
}

/** Which questions enter H (§1.9): the paper's 0 < r̄ < 1, or the code's 0.01 ≤ r̄ ≤ 1. */
export function entersHistory(rule: 'paper' | 'code', meanReward: number): boolean {
  return rule === 'paper' ? meanReward > 0 && meanReward < 1 : meanReward >= 0.01 && meanReward <= 1;
}

const questionKey = (q: string): string => q.toLowerCase().replace(/\s+/g, ' ').trim();

/**
 * The next state: each push appended to its FIFO in order, keeping the last `size` entries. A question
 * already in its FIFO is not pushed again (the code's dedup check is a no-op, spec §1.9). Pure: the
 * committed state is never modified.
 */
export function pushHistory(
  state: SpellState,
  pushes: ReadonlyArray<{ key: string; entry: HistoryEntry }>,
  size: number,
): SpellState {
  const history: Record<string, HistoryEntry[]> = { ...state.history };
  for (const { key, entry } of pushes) {
    const fifo = history[key] ?? [];
    if (fifo.some((e) => questionKey(e.question) === questionKey(entry.question))) continue;
    history[key] = [...fifo, entry].slice(Math.max(0, fifo.length + 1 - size));
  }
  return { v: 1, history: Object.fromEntries(Object.entries(history).filter(([, h]) => h.length > 0)) };
}
