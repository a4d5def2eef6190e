/**
 * Which run `npm run local` runs (local-runs.ts), for run-local.sh:
 *   tsx infra/local/pick-run.ts NEW_RUN_ID [--new | --resume RUN]
 * Prints five lines for the shell: the run id, its lineage (for the kernel's --run), whether to resume it and
 * whether to retry its failed iteration (true or false), and what it does. Before it names a run to resume, it releases the activities the run's gone
 * worker had started, so they run again as soon as the new worker is up.
 */
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { dataConverterFromEnv } from '../../config/payload-codec';
import { temporalConnectionFromEnv } from '../../config/temporal-connection';
import { chooseLocalRun, namedOpenRun, openLocalRuns, releaseActivitiesOfGoneWorkers } from './local-runs';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { new: { type: 'boolean' }, resume: { type: 'string' } },
    allowPositionals: true,
  });
  const [newRunId] = positionals;
  if (!newRunId || (values.new && values.resume))
    throw new Error(
      'usage: pick-run.ts NEW_RUN_ID [--new | --resume RUN] (--new and --resume exclude each other)',
    );
  const { namespace, ...options } = temporalConnectionFromEnv();
  const connection = await Connection.connect(options).catch((err: unknown) => {
    throw new Error(`cannot reach Temporal at ${options.address} (${String(err)})`);
  });
  try {
    const client = new Client({ connection, namespace, dataConverter: dataConverterFromEnv() });
    const named = values.resume === undefined ? undefined : await namedOpenRun(client, values.resume);
    const picked = chooseLocalRun({ fresh: values.new, named }, await openLocalRuns(client), newRunId);
    if (picked.resume) await releaseActivitiesOfGoneWorkers(client, picked.runId);
    console.log([picked.runId, picked.lineage, picked.resume, picked.retry, picked.message].join('\n'));
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
