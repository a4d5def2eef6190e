import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reasonerMessages } from '../activities/recipes/spice/prompts';
import { prepareToyWorld, TOY_WORLD_DEFAULTS } from '../infra/toy-world/prepare';
import { sumTasks, type SumTask } from '../infra/toy-world/world';

const ROOT = path.resolve(__dirname, '..');

/**
 * `npm run bench -- reasoner-ceiling [--steps N] [--tasks-per-step T] [--lr X] [--flipped]`: how fast the toy
 * world's warm-started model learns by RL when every task is ideal (the three kinds in turn, no Challenger):
 * the ceiling of what SPICE can show in this world (infra/toy-world/reasoner_ceiling.py). Prints held-out
 * accuracy every 20 steps and last `reasoner_ceiling_gain <points>`; `--flipped` is the control.
 */
export async function main(args: string[]): Promise<void> {
  const option = (name: string, fallback: string): string => {
    const i = args.indexOf(name);
    return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
  };
  const steps = Number(option('--steps', '200'));
  const perStep = Number(option('--tasks-per-step', '32'));
  const world = await prepareToyWorld();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-ceiling-'));
  const asLines = (tasks: SumTask[]): string =>
    tasks
      .map((t) =>
        JSON.stringify({ messages: reasonerMessages(t.question, 'qwen'), answer: t.answer, kind: t.rung }),
      )
      .join('\n') + '\n';
  const tasksFile = path.join(scratch, 'tasks.jsonl');
  const heldOutFile = path.join(scratch, 'held-out.jsonl');
  writeFileSync(tasksFile, asLines(sumTasks(TOY_WORLD_DEFAULTS.seed, 'practice', steps * perStep)));
  // The world's held-out set, the same sums as its heldout.jsonl, with the Reasoner's prompt.
  writeFileSync(
    heldOutFile,
    asLines(sumTasks(TOY_WORLD_DEFAULTS.seed, 'held-out', TOY_WORLD_DEFAULTS.heldOutItems, true)),
  );
  execFileSync(
    path.join(ROOT, 'infra/kernels/.venv/bin/python'),
    [
      path.join(ROOT, 'infra/toy-world/reasoner_ceiling.py'),
      ...['--model', world.model, '--tasks', tasksFile, '--held-out', heldOutFile],
      ...['--steps', String(steps), '--tasks-per-step', String(perStep), '--lr', option('--lr', '3e-4')],
      ...(args.includes('--flipped') ? ['--flipped'] : []),
    ],
    { stdio: 'inherit', env: { ...process.env, PYTHONPATH: path.join(ROOT, 'infra/kernels') } },
  );
}
