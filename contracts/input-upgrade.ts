import {
  LOSS_OPTION_DEFAULTS,
  RETENTION_DEFAULTS,
  TIMEOUT_DEFAULTS,
  UPDATE_DEFAULTS,
  type RunConfig,
} from '../config/schema';
import { SCOPE_JOINT_SCHEDULE } from '../config/presets/scope';
import { NON_RETRYABLE, nonRetryable } from './errors';
import { ITERATION_INPUT_VERSION, RUN_CARRY_VERSION, type IterationInput, type RunCarry } from './selfplay';

/**
 * The run's carry (its second argument, after continue-as-new) as any version recorded it: version 1 with or
 * without `v`. The run's first argument, its config, needs none: the run resolves it with the schema on entry,
 * which fills every field an older one lacks.
 */
export type RecordedRunCarry = Omit<RunCarry, 'v'> & { v?: number };

/**
 * The current carry for `carry` of any version, once at the run's entry. Version 1 is the current one; a carry
 * of a later version (written by newer workers, replayed on older ones) is refused rather than misread.
 */
export function upgradeRunCarry(carry: RecordedRunCarry): RunCarry {
  const v = carry.v ?? 1;
  if (v !== RUN_CARRY_VERSION) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `selfPlayRun carry v: ${v} is newer than this worker's (${RUN_CARRY_VERSION}); run the run on the ` +
        'workers that continued it as new',
    );
  }
  return { ...carry, v };
}

/**
 * An iteration's input as any version recorded it. A workflow replays its recorded input for as long as it
 * runs (days), so the input a new worker gets may be older than its code:
 * - version 1 (no `v`, or `v: 1`): one policy's version at the top level. Runs made before several policies
 *   replay differently, so this version cannot be run on; it is refused.
 * - version 2: a `PolicySet`, and the config as the run resolved it then: the fields added to the schema since
 *   are absent.
 * - version 3 (`ITERATION_INPUT_VERSION`): the config has every field the iteration and its activities read.
 * `upgradeIterationInput` brings any of them to the current version once, at the workflow's entry, so nothing
 * after it needs a fallback for a field an older input lacks.
 */
export type RecordedIterationInput = Omit<IterationInput, 'v' | 'config'> & {
  v?: number;
  config: RecordedConfig;
};

type Lacking<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
type Training = RunConfig['training'];
type Loss = Training['loss'];

/** A run config as a version-2 input recorded it: each field added since may be absent. */
export type RecordedConfig = Omit<
  RunConfig,
  'training' | 'timeouts' | 'pipeline' | 'spice' | 'spell' | 'scope'
> & {
  training: Lacking<Omit<Training, 'loss'>, 'update' | 'retention' | 'negateAdvantages' | 'ablateRoles'> & {
    loss: Lacking<Loss, 'entropyCoef' | keyof typeof LOSS_OPTION_DEFAULTS>;
  };
  timeouts: Partial<RunConfig['timeouts']>;
  pipeline?: Partial<RunConfig['pipeline']>;
  spice?: Lacking<RunConfig['spice'], 'refuteArithmeticAnswers' | 'requireAnswerInDocument'>;
  spell?: Lacking<RunConfig['spell'], 'maxRounds'>;
  scope?: Lacking<RunConfig['scope'], 'schedule'>;
};

/**
 * The current input for `input` of any version, one step at a time: a field an older input lacks gets the
 * value that gives the behaviour the input had when it was recorded (an option off, one round, one step,
 * synchronous, the joint schedule), not today's default, so an iteration upgraded mid-run goes on as it
 * began. Deterministic and pure: it changes no command of a replayed history. Refuses (non-retryably, naming
 * `v`) a version it cannot bring forward.
 */
export function upgradeIterationInput(input: RecordedIterationInput): IterationInput {
  let upgraded = input;
  for (let v = input.v ?? 1; v !== ITERATION_INPUT_VERSION; v = upgraded.v ?? 1) {
    const step = ITERATION_INPUT_STEPS[v];
    if (!step) {
      throw nonRetryable(
        NON_RETRYABLE.invalidInput,
        `selfPlayIteration input v: ${v} is not one this worker runs (versions 2 to ${ITERATION_INPUT_VERSION}); ` +
          'version 1 predates several policies per run: resume the run from its last commit on this version',
      );
    }
    upgraded = step(upgraded);
  }
  return upgraded as IterationInput;
}

/**
 * Each step brings an input of the version it is listed under to the next. A change to the input (a config
 * field the iteration reads, say) adds a step from the current version and raises ITERATION_INPUT_VERSION.
 */
const ITERATION_INPUT_STEPS: Record<number, (input: RecordedIterationInput) => RecordedIterationInput> = {
  2: (input) => ({ ...input, v: 3, config: upgradeConfig(input.config) }),
};

/** A version-2 input's config with every field added since, as it behaved before the field existed. */
function upgradeConfig(config: RecordedConfig): RunConfig {
  const { training, spice, spell, scope } = config;
  return {
    ...config,
    training: {
      ...training,
      loss: { entropyCoef: 0, ...LOSS_OPTION_DEFAULTS, ...training.loss },
      update: training.update ?? UPDATE_DEFAULTS,
      retention: training.retention ?? RETENTION_DEFAULTS,
      negateAdvantages: training.negateAdvantages ?? false,
      ablateRoles: training.ablateRoles ?? [],
    },
    timeouts: { ...TIMEOUT_DEFAULTS, ...config.timeouts },
    pipeline: { maxStaleness: 0, streaming: false, ...config.pipeline },
    // Only the run's own recipe's section travels (workflows/run-params.ts `iterationConfig`).
    ...(spice ? { spice: { refuteArithmeticAnswers: false, requireAnswerInDocument: false, ...spice } } : {}),
    ...(spell ? { spell: { maxRounds: 1, ...spell } } : {}),
    ...(scope ? { scope: { schedule: SCOPE_JOINT_SCHEDULE, ...scope } } : {}),
  } as RunConfig;
}
