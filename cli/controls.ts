import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
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
      return refusalAsError(runId, control, handle.executeUpdate(pauseUpdate));
    case 'resume':
      return refusalAsError(runId, control, handle.executeUpdate(resumeUpdate));
    case 'stop':
      return refusalAsError(runId, control, handle.executeUpdate(stopAfterIterationUpdate));
    case 'set':
      return refusalAsError(runId, control, handle.executeUpdate(setParamsUpdate, { args: [params] }));
    case 'retry':
      return refusalAsError(runId, control, handle.executeUpdate(retryIterationUpdate));
  }
}

/** An Update's rejection as an Error carrying the run's own reason: `RUN refused CONTROL: reason`. */
export async function refusalAsError<T>(runId: string, control: string, update: Promise<T>): Promise<T> {
  try {
    return await update;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      throw new Error(`${runId} refused ${control}: ${err.cause?.message ?? err.message}`);
    throw err;
  }
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
