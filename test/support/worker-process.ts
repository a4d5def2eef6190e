import path from 'node:path';
import { ServerProcess } from './process';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A real worker process, as operators run it; SIGKILL it to simulate a crash. It is ONE process
 * (`node --import tsx`): the `tsx` launcher would fork a child that survives a SIGKILL sent to the launcher.
 */
export function spawnWorker(
  env: Record<string, string>,
  pools = 'orchestrator,rollout,trainer',
): ServerProcess {
  return new ServerProcess(
    `worker (${pools})`,
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'workers/main.ts'), pools],
    {
      ...process.env,
      ...env,
    },
  );
}
