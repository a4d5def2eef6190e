import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  pauseUpdate,
  resumeUpdate,
  retryIterationUpdate,
  RUN_PARAM_KEYS,
  setParamsUpdate,
  stopAfterIterationUpdate,
  type RunParams,
  type RunProgress,
} from '../workflows/messages';

export type Control = 'pause' | 'resume' | 'stop' | 'set' | 'retry';

/**
 * Sends an operator control to a run as its validated Update. A rejection (already paused, a bad parameter)
 * comes back as an Error carrying the run's own reason, so the CLI can print it as it is.
 */
export async function sendControl(
  client: Client,
  runId: string,
  control: Control,
  params: RunParams = {},
): Promise<RunProgress> {
  const handle = client.workflow.getHandle(runId);
  switch (control) {
    case 'pause':
      return refusalAsError(handle, control, handle.executeUpdate(pauseUpdate));
    case 'resume':
      return refusalAsError(handle, control, handle.executeUpdate(resumeUpdate));
    case 'stop':
      return refusalAsError(handle, control, handle.executeUpdate(stopAfterIterationUpdate));
    case 'set':
      return refusalAsError(handle, control, handle.executeUpdate(setParamsUpdate, { args: [params] }));
    case 'retry':
      return refusalAsError(handle, control, handle.executeUpdate(retryIterationUpdate));
  }
}

/**
 * An Update's rejection as an Error carrying the run's own reason: `RUN refused CONTROL: reason`. A run that
 * has closed (completed, terminated) or was never started answers nothing itself, and Temporal's own words
 * ("workflow execution already completed") name neither the run nor what to do; those say both.
 */
export async function refusalAsError<T>(
  handle: WorkflowHandle,
  control: string,
  update: Promise<T>,
): Promise<T> {
  try {
    return await update;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      throw new Error(`${handle.workflowId} refused ${control}: ${err.cause?.message ?? err.message}`);
    if (err instanceof WorkflowNotFoundError)
      throw new Error(`${handle.workflowId} refused ${control}: ${await whyNoRun(handle)}`);
    throw err;
  }
}

/** Why a run takes no Update: the state it closed in, or that there is none by that id. */
async function whyNoRun(handle: WorkflowHandle): Promise<string> {
  const status = await handle.describe().then(
    (d) => d.status.name.toLowerCase(),
    (err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    },
  );
  return status === undefined
    ? 'no run has this id (`selfplay list` shows the runs)'
    : `the run is ${status} and takes no more controls; ` +
        `\`selfplay fork ${handle.workflowId} --from N --id NEW\` goes on from one of its commits`;
}

/** `--set learningRate=5e-7 --set temperature=0.8` as setParams input; values must be numbers. */
export function paramsFromAssignments(assignments: readonly string[]): RunParams {
  const params: Record<string, number> = {};
  for (const assignment of assignments) {
    const [key, raw] = assignment.split('=', 2);
    const value = Number(raw);
    if (!key || raw === undefined || raw === '' || !Number.isFinite(value)) {
      throw new Error(
        `--set ${assignment}: expected NAME=NUMBER with NAME one of ${RUN_PARAM_KEYS.join(', ')}`,
      );
    }
    params[key] = value;
  }
  return params;
}
