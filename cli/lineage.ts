import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { ObjectStore } from '../activities/clients/storage';
import { getJson } from '../activities/clients/storage/codec';
import { latestKey } from '../activities/clients/storage/keys';
import { keptManifest, lineagesOf } from '../activities/stages/lineage';
import { resolveStartConfig } from '../config/temporal-limits';
import { startRefusal } from '../config/run-access';
import { selfPlayRun } from '../workflows';
import type { Manifest } from '../contracts/selfplay';
import { forkIdProblem, lineagePath } from '../contracts/lineage';
import { rollbackUpdate, type RunProgress } from '../workflows/messages';
import { applySet } from './args';
import { refusalAsError } from './controls';

/**
 * The CLI's view of a run's lineages (contracts/lineage.ts): which storage id holds a kept iteration, the kept
 * manifests, and the two controls that make lineages: rollback (the run's Update) and fork (a new run).
 */

/** The run's kept manifests in order, along its lineage path (every commit when it never rolled back). */
export async function keptManifests(
  store: ObjectStore,
  runId: string,
  load: (lineage: string) => Promise<Manifest[]>,
): Promise<Manifest[]> {
  const segments = await Promise.all(
    lineagePath(await lineagesOf(store, runId)).map(async ({ id, after, upTo }) =>
      (await load(id)).filter((m) => m.iteration > after && (upTo === undefined || m.iteration <= upTo)),
    ),
  );
  return segments.flat();
}

/** `selfplay rollback RUN --to N`: the run's `rollback` Update; a refusal is an Error with the run's reason. */
export async function sendRollback(client: Client, runId: string, iteration: number): Promise<RunProgress> {
  const handle = client.workflow.getHandle(runId);
  return refusalAsError(handle, 'rollback', handle.executeUpdate(rollbackUpdate, { args: [{ iteration }] }));
}

export interface ForkRequest {
  /** The kept, committed iteration of the run to start from. */
  from: number;
  /** The new run's id. */
  id: string;
  /** `key=value` config overrides, as `selfplay start --set`. */
  set?: readonly string[];
}

export interface Forked {
  workflowId: string;
  resumeFrom: { runId: string; iteration: number };
}

/**
 * `selfplay fork RUN --from N --id NEW`: starts a new run `NEW` that goes on after the run's committed
 * iteration N (read from the lineage holding it) with the run's config plus `set`; the run itself is not
 * touched. The config is the input of the run's current execution (pinned at continue-as-new, with its
 * `setParams` changes). Everything is checked before anything starts, so a refused fork starts nothing.
 * A client-side command rather than an Update: it must work on a completed run too, which takes no Updates.
 */
export async function forkRun(
  client: Client,
  store: ObjectStore,
  runId: string,
  request: ForkRequest,
): Promise<Forked> {
  const { from, id } = request;
  const refuse: (reason: string) => never = (reason) => {
    throw new Error(`fork of ${runId} refused: ${reason}`);
  };
  if (!Number.isInteger(from) || from < 1) refuse(`--from: expected a committed iteration, got ${from}`);
  const idProblem = forkIdProblem(runId, id);
  if (idProblem) refuse(`--id: ${idProblem}`);
  const { lineage } = await keptManifest(store, runId, from).catch((err: unknown) =>
    refuse((err as Error).message),
  );
  if (await getJson(store, latestKey(id))) refuse(`--id: run "${id}" already has commits`);

  const config = await runInput(client, runId).catch((err: unknown) =>
    refuse(`cannot read the config of run ${runId}: ${(err as Error).message}`),
  );
  config.runId = id;
  for (const assignment of request.set ?? []) applySet(config, assignment);
  const resumeFrom = { runId: lineage, iteration: from };
  config.resumeFrom = resumeFrom;
  const resolved = resolveStartConfig(config);
  if (!resolved.ok) refuse(`invalid config:\n  ${resolved.problems.join('\n  ')}`);
  const refusal = startRefusal(resolved.config);
  if (refusal) refuse(`its config is ${refusal}`);

  await client.workflow
    .start(selfPlayRun, {
      workflowId: id,
      taskQueue: resolved.config.pools.orchestrator,
      args: [config],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    })
    .catch((err: unknown) =>
      refuse(
        err instanceof WorkflowExecutionAlreadyStartedError
          ? `--id: a workflow "${id}" exists already`
          : String(err),
      ),
    );
  return { workflowId: id, resumeFrom };
}

/**
 * The input config of the run's current execution, from its history's first event, decoded with the client's
 * own codecs (the stored payload is encrypted when the deployment sets SELFPLAY_CODEC_KEYS).
 */
export async function runInput(client: Client, runId: string): Promise<Record<string, unknown>> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) throw new Error('its history has no input');
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  let decoded = [payload];
  for (const codec of [...payloadCodecs].reverse()) decoded = await codec.decode(decoded);
  return payloadConverter.fromPayload<Record<string, unknown>>(decoded[0]!);
}
