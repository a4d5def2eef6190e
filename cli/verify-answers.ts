import { readFile, writeFile } from 'node:fs/promises';
import { extractLastBoxed } from '../activities/scoring/boxed';
import {
  AnswerCheckerPool,
  DEFAULT_TIMEOUT_MS,
  type AnswerVerdict,
  type CheckResult,
} from '../activities/scoring/answer-checker-pool';
import type { AnswerKind } from '../activities/scoring/verifiers';
import { jsonlRecords } from '../activities/lib/input-records';

export interface AnswerPair {
  line: number;
  gold: string;
  pred: string;
}

export interface PairVerdict {
  line: number;
  verdict: AnswerVerdict;
  ms: number;
}

/**
 * `selfplay verify-answers`: checks every pair in the answer-checker pool, the judge stages' own, with the
 * same per-answer time limit, and prints the verdicts in input order. Throws an Error with a message for the
 * user on bad flags or a bad line (every bad line is named, and nothing is checked then).
 */
export async function verifyAnswersCommand(file: string, flags: Map<string, string[]>): Promise<void> {
  const one = (flag: string): string | undefined => flags.get(flag)?.[0];
  const kind = (one('--kind') ?? 'expression') as AnswerKind;
  const timeoutMs = Number(one('--timeout-ms') ?? DEFAULT_TIMEOUT_MS);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new Error(`--timeout-ms: expected a positive integer, got ${one('--timeout-ms')}`);
  const pairs = parseAnswerPairs(
    await readFile(file, 'utf8').catch(() => Promise.reject(new Error(`cannot read ${file}`))),
  );
  const pool = new AnswerCheckerPool({ timeoutMs });
  const verdicts = await verifyAnswerPairs(pairs, kind, (r) => pool.check(r)).finally(() => pool.close());
  const lines = verdicts.map((v) =>
    JSON.stringify({ line: v.line, verdict: v.verdict, ms: Number(v.ms.toFixed(2)) }),
  );
  const out = one('--out');
  if (out) await writeFile(out, `${lines.join('\n')}\n`);
  else for (const line of lines) console.log(line);
  console.error(summary(verdicts));
}

/** `{"gold", "pred"}` per line (strings or numbers); blank lines skipped; every bad line is named. */
export function parseAnswerPairs(text: string): AnswerPair[] {
  const pairs: AnswerPair[] = [];
  const problems: string[] = [];
  const isText = (v: unknown): v is string | number => typeof v === 'string' || typeof v === 'number';
  for (const record of jsonlRecords(text)) {
    const { gold, pred } = 'row' in record ? record.row : {};
    if ('problem' in record) problems.push(`${record.at}: ${record.problem}`);
    else if (!isText(gold) || !isText(pred))
      problems.push(`${record.at}: expected {"gold": "...", "pred": "..."}`);
    else pairs.push({ line: record.n, gold: String(gold), pred: String(pred) });
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  if (pairs.length === 0) throw new Error('no {"gold", "pred"} lines');
  return pairs;
}

/** The answer the judge stage would read: the last `\boxed{}` when the text has one, else the whole text. */
export function answerIn(text: string): string | undefined {
  return text.includes('\\boxed') ? extractLastBoxed(text) : text;
}

export async function verifyAnswerPairs(
  pairs: readonly AnswerPair[],
  kind: AnswerKind,
  check: (request: { kind: AnswerKind; predicted: string; gold: string }) => Promise<CheckResult>,
): Promise<PairVerdict[]> {
  return Promise.all(
    pairs.map(async ({ line, gold, pred }) => {
      const [g, p] = [answerIn(gold), answerIn(pred)];
      if (g === undefined || p === undefined) return { line, verdict: 'unparsable' as const, ms: 0 };
      return { line, ...(await check({ kind, predicted: p, gold: g })) };
    }),
  );
}

function summary(verdicts: readonly PairVerdict[]): string {
  const count = (v: AnswerVerdict): number => verdicts.filter((x) => x.verdict === v).length;
  return `${verdicts.length} pairs: ${count('equivalent')} equivalent, ${count('different')} different, ${count('unparsable')} unparsable, ${count('timeout')} timeout`;
}
