import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AnswerCheckerPool } from '../activities/scoring/answer-checker-pool';
import { checkAnswer } from '../activities/scoring/verifiers';
import { parseAnswerPairs, verifyAnswerPairs, type PairVerdict } from '../cli/verify-answers';

const FIXTURES = path.join(__dirname, '../test/fixtures/answer-equivalence');
const SUITES = ['math-verify', 'nemo-skills', 'hendrycks-math', 'probes'];

/**
 * The answer checker against the public answer-equivalence suites (test/fixtures/answer-equivalence: pairs
 * from Math-Verify's, NeMo-Skills' and Hendrycks MATH's tests) and issue 11's probes, through the judge
 * stages' pool exactly as `selfplay verify-answers` runs it (`expression` kind, 2 s limit, timeout counts as
 * not equivalent). Prints per suite the agreement and the false positives/negatives, then checks/s through
 * the pool and on one thread; last lines `checker_false_positives <n>` and `checker_agreement <fraction>`.
 */
export async function main(): Promise<void> {
  const pool = new AnswerCheckerPool();
  let agree = 0;
  let total = 0;
  let falsePositives = 0;
  let pairsChecked = 0;
  let poolSeconds = 0;
  let inlineSeconds = 0;
  try {
    for (const suite of SUITES) {
      const text = await readFile(path.join(FIXTURES, `${suite}.jsonl`), 'utf8');
      const pairs = parseAnswerPairs(text);
      const expected = new Map(
        text
          .split('\n')
          .map((line, i) => [i + 1, line] as const)
          .filter(([, line]) => line.trim() !== '')
          .map(([n, line]) => [n, (JSON.parse(line) as { expected: string }).expected === 'equivalent']),
      );
      let started = performance.now();
      const verdicts: PairVerdict[] = await verifyAnswerPairs(pairs, 'expression', (r) => pool.check(r));
      poolSeconds += (performance.now() - started) / 1000;
      started = performance.now();
      await verifyAnswerPairs(pairs, 'expression', (r) =>
        Promise.resolve({ verdict: checkAnswer(r.kind, r.predicted, r.gold), ms: 0 }),
      );
      inlineSeconds += (performance.now() - started) / 1000;
      let fp = 0;
      let fn = 0;
      let timeouts = 0;
      for (const v of verdicts) {
        const said = v.verdict === 'equivalent';
        const truth = expected.get(v.line) as boolean;
        if (said && !truth) fp++;
        if (!said && truth) fn++;
        if (v.verdict === 'timeout') timeouts++;
      }
      const ok = verdicts.length - fp - fn;
      console.log(
        `${suite.padEnd(15)} ${ok}/${verdicts.length} agree (${((100 * ok) / verdicts.length).toFixed(1)}%), ` +
          `false positives ${fp}, false negatives ${fn}, timeouts ${timeouts}`,
      );
      agree += ok;
      total += verdicts.length;
      falsePositives += fp;
      pairsChecked += pairs.length;
    }
  } finally {
    await pool.close();
  }
  console.log(`checks/s through the pool (${pool.size} threads): ${(pairsChecked / poolSeconds).toFixed(0)}`);
  console.log(`checks/s on one thread: ${(pairsChecked / inlineSeconds).toFixed(0)}`);
  console.log(`checker_false_positives ${falsePositives}`);
  console.log(`checker_agreement ${(agree / total).toFixed(4)}`);
}
