import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAE_WORLD_DEFAULTS } from '../infra/toy-world/mae-prepare';
import { judgeProbeRows, maeWarmStartExamples } from '../infra/toy-world/mae-world';
import { jsonl } from '../infra/toy-world/prepare';

const ROOT = path.resolve(__dirname, '..');

/**
 * `npm run bench -- mae-judge [--steps N] [--eval-every N] [--full-mix] [--role-weight ROLE=W ...] [--hidden H]
 * [--lr X] [--model DIR]`: whether a form of MAE's Judge's working teaches the verdict, in minutes rather than a full warm
 * start (infra/toy-world/mae_judge_probe.py): the warm start on the world's Judge examples alone (with
 * `--full-mix`, on all of them at the world's role weights unless given), scored every `--eval-every` steps on
 * 200 gradings of training facts. Prints the Judge's verdict after its right working (forced) and its
 * greedy and sampled agreement with the true verdicts, last `judge_verdict_accuracy <percent>`. `--model`
 * scores a warm-started model (a world's `model/`) on the same gradings instead of training one.
 */
export function main(args: string[]): void {
  const option = (name: string, fallback: string): string => {
    const i = args.indexOf(name);
    return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
  };
  const fullMix = args.includes('--full-mix');
  const { seed, warmStartItems } = MAE_WORLD_DEFAULTS;
  const examples = maeWarmStartExamples(seed, warmStartItems).filter(
    (e) => fullMix || e.role === 'judge_answer',
  );
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-mae-judge-'));
  writeFileSync(path.join(scratch, 'examples.jsonl'), jsonl(examples));
  writeFileSync(path.join(scratch, 'probe.jsonl'), jsonl(judgeProbeRows(seed, 200)));
  const weights = args.flatMap((arg, i) => (args[i - 1] === '--role-weight' ? ['--role-weight', arg] : []));
  execFileSync(
    path.join(ROOT, 'infra/kernels/.venv/bin/python'),
    [
      path.join(ROOT, 'infra/toy-world/mae_judge_probe.py'),
      ...(args.includes('--model')
        ? ['--model', option('--model', '')]
        : ['--examples', path.join(scratch, 'examples.jsonl')]),
      ...['--probe', path.join(scratch, 'probe.jsonl')],
      ...['--steps', option('--steps', '3000'), '--eval-every', option('--eval-every', '500')],
      ...['--hidden', option('--hidden', '64'), '--lr', option('--lr', '2e-3')],
      ...weights,
    ],
    { stdio: 'inherit', env: { ...process.env, PYTHONPATH: path.join(ROOT, 'infra/kernels') } },
  );
}
