import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AnswerCheckerPool, type AnswerChecker } from '../activities/scoring/answer-checker-pool';
import { checkAnswer } from '../activities/scoring/verifiers';
import { parseAnswerPairs, verifyAnswerPairs, type AnswerPair } from '../cli/verify-answers';

const FIXTURES = path.join(__dirname, '../test/fixtures/answer-equivalence');
const SUITES = ['math-verify', 'nemo-skills', 'hendrycks-math', 'probes'];
/** Passes over every pair for the throughput figures. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

interface Suite {
  name: string;
  pairs: AnswerPair[];
  /** Line number → whether the pair is equivalent. */
  expected: Map<number, boolean>;
}

/**
 * The answer checker against the public answer-equivalence suites (test/fixtures/answer-equivalence: pairs
 * from Math-Verify's, NeMo-Skills' and Hendrycks MATH's tests) and issue 11's probes, through the judge
 * stages' pool exactly as `selfplay verify-answers` runs it (`expression` kind, 2 s limit, a timeout counts
 * as not equivalent). Prints per suite the agreement and the false positives/negatives, then checks/s through
 * the warm pool and on one thread (BENCH_ROUNDS passes, default 5); last lines `checker_false_positives <n>`
 * and `checker_agreement <fraction>`.
 */
export async function main(): Promise<void> {
  const suites = await Promise.all(SUITES.map(loadSuite));
  const pool = new AnswerCheckerPool();
  const viaPool: AnswerChecker = (r) => pool.check(r);
  const inline: AnswerChecker = (r) =>
    Promise.resolve({ verdict: checkAnswer(r.kind, r.predicted, r.gold), ms: 0 });
  let agree = 0;
  let total = 0;
  let falsePositives = 0;
  try {
    for (const { name, pairs, expected } of suites) {
      const verdicts = await verifyAnswerPairs(pairs, 'expression', viaPool);
      const said = (v: (typeof verdicts)[number]): boolean => v.verdict === 'equivalent';
      const fp = verdicts.filter((v) => said(v) && !expected.get(v.line)).length;
      const fn = verdicts.filter((v) => !said(v) && expected.get(v.line)).length;
      const timeouts = verdicts.filter((v) => v.verdict === 'timeout').length;
      const ok = verdicts.length - fp - fn;
      console.log(
        `${name.padEnd(15)} ${ok}/${verdicts.length} agree (${((100 * ok) / verdicts.length).toFixed(1)}%), ` +
          `false positives ${fp}, false negatives ${fn}, timeouts ${timeouts}`,
      );
      agree += ok;
      total += verdicts.length;
      falsePositives += fp;
    }
    console.log(
      `checks/s through the pool (${pool.size} threads): ${(await throughput(suites, viaPool)).toFixed(0)}`,
    );
    console.log(`checks/s on one thread, no pool: ${(await throughput(suites, inline)).toFixed(0)}`);
  } finally {
    await pool.close();
  }
  console.log(`checker_false_positives ${falsePositives}`);
  console.log(`checker_agreement ${(agree / total).toFixed(4)}`);
}

async function loadSuite(name: string): Promise<Suite> {
  const text = await readFile(path.join(FIXTURES, `${name}.jsonl`), 'utf8');
  const expected = new Map<number, boolean>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() !== '')
      expected.set(i + 1, (JSON.parse(line) as { expected: string }).expected === 'equivalent');
  });
  return { name, pairs: parseAnswerPairs(text), expected };
}

async function throughput(suites: readonly Suite[], check: AnswerChecker): Promise<number> {
  const pairs = suites.flatMap((s) => s.pairs);
  const started = performance.now();
  for (let round = 0; round < ROUNDS; round++) await verifyAnswerPairs(pairs, 'expression', check);
  return (ROUNDS * pairs.length) / ((performance.now() - started) / 1000);
}
