import { parseArgs } from 'node:util';
import { reportLines, runChaos } from './suite';

/**
 * `npm run chaos -- [--seed N] [--faults N] [--iterations N] [--hold-cap-s S] [--deadline-min M]`: the chaos
 * suite (suite.ts) on a local stack of its own. The defaults are the short version CI runs (every fault kind
 * once); `--faults 54 --iterations 10` is the long one. Exits 1 unless every run completed with no step
 * applied twice and no iteration lost.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '1' },
      faults: { type: 'string', default: '9' },
      iterations: { type: 'string', default: '4' },
      'hold-cap-s': { type: 'string', default: '60' },
      'deadline-min': { type: 'string', default: '60' },
    },
  });
  const number = (name: keyof typeof values): number => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`--${name}: expected a positive number, got ${values[name]}`);
    return n;
  };
  const report = await runChaos({
    seed: number('seed'),
    faults: number('faults'),
    iterations: number('iterations'),
    holdCapMs: number('hold-cap-s') * 1000,
    deadlineMs: number('deadline-min') * 60_000,
    log: (line) => console.log(`  ${new Date().toISOString().slice(11, 19)} ${line}`),
  });
  for (const line of reportLines(report)) console.log(line);
  const healthy =
    report.runsCompleted === report.runsStarted &&
    report.stepsAppliedTwice === 0 &&
    report.iterationsLost === 0;
  process.exit(healthy ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
