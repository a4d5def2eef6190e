import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { faultKinds, type ChaosTrainer } from './faults';
import { reportLines, runChaos } from './suite';

/**
 * `npm run chaos -- [--seed N] [--faults N] [--iterations N] [--hold-cap-s S] [--storage-down-s S]
 * [--temporal-down-s S] [--deadline-min M] [--trainer recording|kernel]`: the chaos suite (suite.ts) on a local
 * stack of its own. `--trainer kernel` trains on the real PyTorch kernel (its tiny model, with faults inside a
 * step: faults.ts) instead of the recording trainer, and checks every run's weights against a clean replay. The
 * defaults are the short version CI runs (every fault kind once, Temporal held 10 s); the long one is
 * `--faults 70 --iterations 10 --storage-down-s 900 --temporal-down-s 300 --deadline-min 240`. Exits 1 unless
 * every run completed with no step applied twice and no iteration lost, every corruption left its run waiting
 * for its operator with the corruption as its cause, and every full disk with `StorageFull`.
 *
 * MinIO's data lives on a size-capped tmpfs (disk.ts), which needs root: not root, it runs itself again under
 * `unshare --user --map-root-user --mount` (root in a user and mount namespace of its own, where a tmpfs can be
 * mounted), and where that is refused it fails saying so.
 */
async function main(): Promise<void> {
  if (process.getuid?.() !== 0) return asRootOfOwnNamespace();
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '1' },
      faults: { type: 'string' },
      trainer: { type: 'string', default: 'recording' },
      iterations: { type: 'string', default: '4' },
      'hold-cap-s': { type: 'string', default: '60' },
      'storage-down-s': { type: 'string' },
      'temporal-down-s': { type: 'string', default: '10' },
      'deadline-min': { type: 'string', default: '60' },
    },
  });
  const trainer = values.trainer as ChaosTrainer;
  if (trainer !== 'recording' && trainer !== 'kernel')
    throw new Error(`--trainer: expected recording or kernel, got ${values.trainer}`);
  values.faults ??= String(faultKinds(trainer).length);
  const number = (name: Exclude<keyof typeof values, 'trainer'>): number => {
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
    ...(values['storage-down-s'] === undefined ? {} : { storageDownMs: number('storage-down-s') * 1000 }),
    temporalDownMs: number('temporal-down-s') * 1000,
    deadlineMs: number('deadline-min') * 60_000,
    trainer,
    log: (line) => console.log(`  ${new Date().toISOString().slice(11, 19)} ${line}`),
  });
  for (const line of reportLines(report)) console.log(line);
  const healthy =
    report.runsCompleted === report.runsStarted &&
    report.stepsAppliedTwice === 0 &&
    (report.weightChecks ?? []).every((c) => c.equal === c.versions) &&
    report.iterationsLost === 0 &&
    report.corruptions.every((c) => c.cause?.type === 'CorruptData') &&
    report.diskFills.every((f) => f.cause?.type === 'StorageFull');
  process.exit(healthy ? 0 : 1);
}

/** This command again, as root of a user and mount namespace of its own; exits with its status. */
function asRootOfOwnNamespace(): never {
  const unshare = ['--user', '--map-root-user', '--mount'];
  const probe = spawnSync('unshare', [...unshare, 'true'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    console.error(
      `npm run chaos: not root, and \`unshare ${unshare.join(' ')}\` is refused here ` +
        `(${String(probe.error ?? probe.stderr).trim()}); the fill-disk fault needs a size-capped filesystem ` +
        "for MinIO's data (a tmpfs it mounts): run as root, or where user namespaces are allowed",
    );
    process.exit(1);
  }
  const again = spawnSync(
    'unshare',
    [...unshare, process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    { stdio: 'inherit' },
  );
  process.exit(again.status ?? 1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
