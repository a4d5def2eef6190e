import { resolveRunConfig } from '../config/schema';
import { poolActivities } from './activity-options';
import { evaluateCheckpointRequestSchema, type EvaluateCheckpointOutcome } from '../contracts/evaluation';
import { invalidInput } from './invalid-input';
import { iterationConfig } from './run-params';
import { runOfLineage } from '../contracts/lineage';

/**
 * Held-out evaluation of one committed version, outside a run's iterations: what `selfplay eval` starts (and
 * the Web UI can, with `{"runId":"spice-001","iteration":12,"config":{...}}`). The run's config, whose
 * `evaluation` section names the benchmarks and the sampling, says how to reach the policy; the version is
 * the run's kept iteration (its latest when none is given, the base weights at iteration 0). The evaluation
 * activity stores every item as it finishes, under keys shared with the run's own evaluations of that
 * version, so a crashed or repeated evaluation samples only what is missing.
 */
export async function evaluateCheckpoint(request: unknown): Promise<EvaluateCheckpointOutcome> {
  const invalid = (problems: string[]) => invalidInput('evaluateCheckpoint', problems);
  const parsed = evaluateCheckpointRequestSchema.safeParse(request);
  if (!parsed.success)
    throw invalid(parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`));
  const resolved = resolveRunConfig(parsed.data.config);
  if (!resolved.ok) throw invalid(resolved.problems.map((p) => `config.${p}`));
  const config = iterationConfig(resolved.config, runOfLineage(parsed.data.runId));
  if (config.evaluation.benchmarks.length === 0)
    throw invalid(['config.evaluation.benchmarks: name at least one benchmark to evaluate on']);

  const { orchestrator, rollout } = poolActivities(config);
  const { iteration } = parsed.data;
  const at = await orchestrator.checkpointToEvaluate({
    runId: parsed.data.runId,
    config,
    ...(iteration === undefined ? {} : { iteration }),
  });
  const result = await rollout.evaluateBenchmarks({
    runId: at.runId,
    config,
    policy: at.policy,
    committed: at.committed,
  });
  return { ...at, result };
}
