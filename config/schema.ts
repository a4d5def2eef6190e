import { z } from 'zod';
import { SPICE_DEFAULTS, spiceParams, spicePreset } from './presets/spice';
import { SPELL_DEFAULTS, spellParams, spellPreset } from './presets/spell';
import { MAE_DEFAULTS, maeParams, maePreset } from './presets/mae';
import { SSP_DEFAULTS, sspParams, sspPreset } from './presets/ssp';
import { SCOPE_DEFAULTS, defaultCandidatesPerRound, scopeParams, scopePreset } from './presets/scope';
import { EVALUATION_DEFAULTS, evaluationOn, evaluationParams, SEARCH_AGENT_RECIPES } from './evaluation';
import { CREDENTIAL_NEEDS_URL, apiKeyEnv } from './credentials';
import { inputColumns } from './input-columns';

/**
 * The run configuration: ONE plain-JSON object, the only argument of `selfPlayRun`, so a run can be started
 * from the Temporal Web UI. Every field but `recipe` is optional; defaults come from the recipe's preset.
 * Unknown fields are errors (a typo must not silently fall back to a default). Secrets never live here:
 * API keys and S3 credentials come from the worker's environment, and an endpoint names the variable holding
 * its own key (config/credentials.ts).
 */

/** A run or policy id: a storage prefix segment and a workflow id. */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** RUN_ID in words, for every message that refuses an id. */
export const RUN_ID_RULE = 'letters, digits, ".", "_" or "-", starting with a letter or digit (max 128)';
const id = z.string().regex(RUN_ID, RUN_ID_RULE);

/**
 * Why `runId` cannot name a run, or undefined when it can. A run id is the run's workflow id and its storage
 * prefix `runs/{runId}/`: a space is no usable key, and a `/` would nest the run under another run's prefix.
 */
export function runIdRuleProblem(runId: string): string | undefined {
  if (RUN_ID.test(runId)) return undefined;
  return `run id ${JSON.stringify(runId)} is not valid: a run id takes ${RUN_ID_RULE}, as it names the run's storage prefix runs/{runId}/`;
}
const positiveInt = z.number().int().positive();
/**
 * Each shard adds 4 activities to an iteration's history; one round of this many stays far below Temporal's
 * limits. Recipes that gather rounds are held to them at a run's start (config/temporal-limits.ts).
 */
export const MAX_SHARDS = 64;
const probability = z.number().min(0).max(1);

/** `apiKeyEnv` only beside the `baseUrl` it is meant for. */
const credentialWithItsUrl = (entry: { baseUrl?: string; apiKeyEnv?: string }): boolean =>
  entry.apiKeyEnv === undefined || entry.baseUrl !== undefined;

const endpoint = z
  .strictObject({
    /**
     * An OpenAI-compatible server's base URL (e.g. http://vllm:8000/v1); default: SELFPLAY_INFERENCE_URL (which
     * gets SELFPLAY_INFERENCE_API_KEY).
     */
    baseUrl: z.url().optional(),
    /**
     * The worker environment variable holding this server's API key (`SELFPLAY_…_API_KEY` or `SELFPLAY_…_TOKEN`,
     * e.g. SELFPLAY_KERNEL_TOKEN for the kernel's sampler), sent to this `baseUrl` only, and only when the
     * workers bind it to that URL (SELFPLAY_CREDENTIAL_BINDINGS, docs/security.md). Absent: no key.
     */
    apiKeyEnv: apiKeyEnv.optional(),
    /** The model name to ask for; `{run}`, `{policy}` and `{version}` are filled in per request (`{version}` with a synced snapshot's weights' digest prefix after the version, `4-9f86d081884c`). Default: SELFPLAY_INFERENCE_MODEL. */
    model: z.string().min(1).optional(),
    /** Whether the server honours `n` (vLLM and SGLang do); otherwise n requests are sent. */
    supportsN: z.boolean().optional(),
    /** A frozen model (e.g. a judge on its own server): never brought to the policy's versions. */
    frozen: z.boolean().optional(),
  })
  .refine(credentialWithItsUrl, { message: CREDENTIAL_NEEDS_URL, path: ['apiKeyEnv'] });

export const runConfig = z
  .strictObject({
    /** The recipe: which preset fills the defaults and which roles, prompts and rewards run. */
    recipe: z.enum(['spice', 'spell', 'mae', 'ssp', 'scope']),
    /** Storage prefix and child-workflow ids; defaults to the workflow id. */
    runId: id.optional(),
    /** Every random choice derives from (seed, iteration, stage, unit), so a retried activity repeats itself. */
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    /** Iterations (training steps of every policy) the run makes before it completes. */
    iterations: positiveInt.max(1_000_000),
    /** B: documents per iteration. */
    batchSize: positiveInt.max(100_000),
    /** G: group size for every role. */
    groupSize: z.number().int().min(2).max(256),
    /** Documents per shard; shards flow through propose → gate → solve → judge independently. */
    shardSize: positiveInt.max(10_000),
    corpus: z.strictObject({
      /**
       * Documents `{"id","text",...}`, a local path or s3://bucket/key: JSONL (`.gz` gzip, `.zst` zstd) or
       * Parquet (`.parquet`, as Hugging Face datasets are stored).
       */
      uri: z.string().min(1),
      /** The file's columns for `id` and `text` when they have other names, e.g. `{"text": "content"}`. */
      columns: inputColumns(['id', 'text']).optional(),
      /** Documents are cut into segments of at most this many characters (at paragraphs, sentences, then words). */
      maxSegmentChars: positiveInt,
      /** Documents longer than this are skipped as oversized (and counted). */
      maxDocumentChars: positiveInt,
      /**
       * A stored JSON array of document ids the plan must not use (path or s3://), e.g. the documents a
       * continual-training lineage has already trained on. Applied to every recipe where the corpus loads.
       */
      excludeDocIds: z.string().min(1).optional(),
    }),
    /** Decoding of every role unless a recipe section sets its own. */
    sampling: z.strictObject({
      temperature: z.number().min(0).max(5),
      topP: z.number().gt(0).max(1),
      /** Most tokens a completion may generate. */
      maxTokens: positiveInt.max(1_000_000),
    }),
    inference: z.strictObject({
      /** Endpoint for every role unless a role overrides it; unset fields come from the worker environment. */
      default: endpoint,
      /** Per-role endpoints by role name (e.g. `judge`), each field falling back to `default`. */
      roles: z.record(z.string(), endpoint),
      /** Deadline of one completion request. */
      requestTimeoutSeconds: z.number().positive(),
      /** Retries of a request after a timeout, a 5xx, a 429 or a connection reset, with backoff. */
      maxRetries: z.number().int().min(0).max(20),
    }),
    training: z.strictObject({
      /** The one trained policy's name, when `policies` is not given: it trains every role. */
      policy: id,
      /** The training kernel of `policy`; default: SELFPLAY_TRAINER_URL on the trainer workers. */
      trainerUrl: z.url().optional(),
      /**
       * Several independently trained policies (SCOPE's Challenger and Solver): each trains the rows of its
       * roles on its own kernel, with its own versions, checkpoints and snapshots. Replaces `policy`.
       */
      policies: z
        .record(
          id,
          z.strictObject({
            roles: z.array(z.string().min(1)).min(1),
            trainerUrl: z.url().optional(),
          }),
        )
        .optional(),
      /** How a group's rewards become advantages (`activities/scoring/advantages.ts`). */
      estimator: z.enum(['dr_grpo', 'grpo', 'rloo', 'reinforce', 'reinforce_pp']),
      /** The policy loss the kernel computes per token; sent with every step. */
      loss: z
        .strictObject({
          /** PPO's clipped ratio objective, or plain REINFORCE (advantage × log-probability). */
          type: z.enum(['ppo_clip', 'reinforce']),
          /** How token losses are summed: over a constant (Dr.GRPO), per token of the batch, or per sequence. */
          normalization: z.enum(['dr_grpo', 'token_mean', 'sequence_mean']),
          /** Dr.GRPO's constant divisor, the generation budget in tokens. */
          normalizerConstant: z.number().positive(),
          /** ε below 1 of the PPO ratio clip. */
          clipLow: probability,
          /** ε above 1 of the PPO ratio clip (larger than clipLow: "clip-higher"). */
          clipHigh: z.number().min(0),
          /** β of the k3 KL penalty to the frozen reference model; 0 keeps no reference. */
          klCoef: z.number().min(0),
          /** Entropy bonus per loss token; the entropy is measured and reported either way. */
          entropyCoef: z.number().min(0),
          /**
           * Dual-clip PPO (verl's `clip_ratio_c`, ppo_clip only): for a negative advantage A, a token's loss is
           * capped at −c·A (c > 1, typically 3), so a stale row whose ratio grew huge cannot dominate the batch.
           */
          dualClip: z.union([z.number().gt(1), z.literal('off')], {
            error: 'expected a number above 1, or "off"',
          }),
          /**
           * Upper bound on each token's k3 KL value, with no gradient beyond it (verl clamps k3 to [−10, 10];
           * k3 is never negative, so only the upper bound acts). Matters only when klCoef > 0.
           */
          k3Clamp: z.union([z.number().positive(), z.literal('off')], {
            error: 'expected a positive number, or "off"',
          }),
          /**
           * The off-policy correction. `ppo_ratio`: the PPO ratio to the behaviour log-probs μ the sampler
           * reported. `tis`: the ratio to the kernel's own log-probs at the step's start π_old (decoupled PPO),
           * each token weighted by the truncated importance weight min(π_old/μ, importanceCap).
           * Default: `ppo_ratio` when synchronous (`pipeline.maxStaleness` 0), `tis` with maxStaleness ≥ 1, where
           * μ is the log-prob under a policy up to k versions old: centred on μ, the PPO clip would bound the
           * distance to that stale policy instead of this step's move. A value the run sets wins either way.
           * Whenever the loss reads μ (`tis`, or `ppo_clip` with maxStaleness ≥ 1), every row must carry it: the
           * filter refuses rows without (activities/stages/behaviour-logprobs.ts).
           */
          offPolicy: z.enum(['ppo_ratio', 'tis']),
          /** C of the `tis` correction: importance weights above it are truncated to it. */
          importanceCap: z.number().min(1),
        })
        .refine((loss) => loss.dualClip === 'off' || loss.type === 'ppo_clip', {
          path: ['dualClip'],
          message: 'dual-clip caps the PPO surrogate: it needs type ppo_clip',
        }),
      /**
       * How a policy's batch becomes optimizer steps, all in one iteration and one policy version (the
       * kernel's `update`, infra/kernels/selfplay_kernel/minibatch.py). Later steps are off-policy: their PPO
       * ratio is taken against the behaviour log-probs, so the clip bounds how far the earlier steps moved.
       */
      update: z.strictObject({
        /**
         * Prompts per optimizer step (verl's `ppo_mini_batch_size`): each prompt comes with all its rows (a
         * GRPO group's G rollouts). `all`: the whole batch (or, with `roleOrder`, each role's rows) in one step.
         */
        miniBatchPrompts: z.union([positiveInt.max(1_000_000), z.literal('all')], {
          error: 'expected a positive integer of prompts, or "all"',
        }),
        /** Passes over the batch (PPO epochs); each pass takes every mini-batch once. */
        epochs: positiveInt.max(100),
        /**
         * Roles updated in turn: every step of the first role's rows, then the next role's, then the rows of
         * roles not listed, together (SSP: proposer, then solver). Empty: all roles in the same steps.
         */
        roleOrder: z
          .array(z.string().min(1))
          .refine((roles) => new Set(roles).size === roles.length, { message: 'list each role once' }),
      }),
      /** Save the kernel's full state (weights, optimizer, RNG, applied keys) with every iteration's commit. */
      checkpoint: z.boolean(),
      /**
       * Which checkpoints and sampler snapshots stay in storage once newer commits exist, applied after every
       * commit (activities/stages/retention.ts). Kept: those of the last `keepLast` commits (at least
       * `pipeline.maxStaleness` + 1 of them, the snapshots iterations in flight sample), of every `keepEvery`-th
       * iteration, and of every commit something else names: an iteration the run rolled back to, a commit
       * another run was forked or resumed from, continual training's promoted and latest commits. The rest is
       * deleted, versions of abandoned lineages included; manifests, metrics and stage outputs stay. The
       * defaults keep the last 5 commits and no milestones: a rollback can still go 4 commits back, and a run's
       * weights take 5 versions of storage however long it runs (the chart's 0.6 B model, fully fine-tuned,
       * writes about 5 Gi per version and filled its 100 Gi MinIO in about 20 iterations when nothing was
       * deleted); each milestone keeps a whole version for good.
       */
      retention: z.strictObject({
        /** The newest commits whose checkpoints and snapshots are kept; `all` deletes nothing. */
        keepLast: z.union([positiveInt.max(1_000_000), z.literal('all')], {
          error: 'expected a positive integer of commits, or "all"',
        }),
        /** Also keep the commits of iterations divisible by this (milestones to roll back to or evaluate); 0: none. */
        keepEvery: z.number().int().min(0).max(1_000_000),
      }),
      /**
       * A negative control, never a training setting: every batch row is trained on the opposite of its
       * advantage. A loop whose held-out accuracy still rises with it on is not learning from its rewards.
       */
      negateAdvantages: z.boolean(),
      /**
       * An ablation, never a training setting: the rows of these roles are left out of every batch (their
       * rewards and the recipe's metrics are kept), so a run measures what the other roles' training alone
       * contributes; e.g. SPICE with `["challenger"]` trains the Reasoner only.
       */
      ablateRoles: z.array(z.string().min(1)),
      /** AdamW on the kernel. */
      optimizer: z.strictObject({
        /** 0 is allowed as a negative control: a run that learns at learning rate 0 measures noise. */
        learningRate: z.number().min(0).max(1),
        /** `warmup_constant` rises linearly to the rate over `warmupSteps` steps, then stays. */
        schedule: z.enum(['constant', 'warmup_constant']),
        warmupSteps: z.number().int().min(0),
        /** Gradients are clipped to this global norm. */
        maxGradNorm: z.number().positive(),
        weightDecay: z.number().min(0),
      }),
    }),
    /** Each recipe's own parameters; every section is present (with its defaults), only the run's is used. */
    spice: spiceParams,
    spell: spellParams,
    mae: maeParams,
    ssp: sspParams,
    scope: scopeParams,
    /**
     * The search tool of the search-agent recipes (SSP, SCOPE): a built index (`selfplay index build`), top-k
     * and the passage budget.
     */
    retrieval: z.strictObject({
      /** Where the built index lives: a local directory or s3://bucket/prefix. */
      index: z.string().min(1).optional(),
      /** The index's kind; must match the built index. */
      kind: z.enum(['bm25', 'dense']),
      /** Passages returned per search. */
      topK: positiveInt.max(100),
      /** Each passage is cut to this many tokens. */
      passageTokens: positiveInt.max(100_000),
      /**
       * The passages of one search are cut to this many tokens in all, in rank order (each passage to what
       * the earlier ones left, the rest dropped). Absent: only `passageTokens` limits them.
       */
      responseTokens: positiveInt.max(1_000_000).optional(),
      /**
       * Dense indexes: the OpenAI-compatible embedding server queries go to (e.g. the kernel's `embed`
       * command at http://127.0.0.1:8100/v1) and its model; each defaults to what the index was built with.
       */
      embedding: z
        .strictObject({
          baseUrl: z.url().optional(),
          model: z.string().min(1).optional(),
          /**
           * The variable holding the embedding server's key (the kernel's `embed`: SELFPLAY_KERNEL_TOKEN), sent to
           * `baseUrl`, or without one to the server the index was built with (its manifest, in the run's storage),
           * when the workers bind it to that server (docs/security.md).
           */
          apiKeyEnv: apiKeyEnv.optional(),
        })
        .optional(),
    }),
    /**
     * How inference servers get each committed version before the next iteration samples: `none` (they are
     * not ours to update, e.g. the scripted test server), the kernel's sampler, vLLM runtime LoRA, or SGLang
     * load-from-disk. `servers` are the servers' base URLs; by default the role endpoints' base URLs.
     */
    weightSync: z.strictObject({
      engine: z.enum(['none', 'kernel', 'vllm', 'sglang']),
      /** Every server to bring to the version (each replica behind a load balancer); empty: the roles' base URLs. */
      servers: z.array(z.url()),
      /** Loads sent to one server before it counts as failed. */
      attempts: z.number().int().min(1).max(100),
      /** Deadline of one server's whole sync (version reads, snapshot copy, loads). */
      timeoutSeconds: z.number().positive(),
    }),
    /** Where the judge stage runs: rule verifiers on the orchestrator pool, LLM judges on the rollout pool. */
    judgePool: z.enum(['orchestrator', 'rollout']),
    /** Task queues of the three worker pools. */
    pools: z.strictObject({
      orchestrator: z.string().min(1),
      rollout: z.string().min(1),
      trainer: z.string().min(1),
    }),
    /**
     * Activity timeouts and retries (workflows/activity-options.ts). A transient failure (storage, network,
     * 5xx, a kernel restarting) is retried with backoff from `retryInitialSeconds`, doubling up to
     * `retryMaxSeconds`, and without an attempt limit unless `activityMaxAttempts` sets one; a deterministic
     * one (bad config, bad batch, unknown model) fails at once (activities/lib/errors.ts).
     */
    timeouts: z
      .strictObject({
        /** Per attempt of a rollout shard (propose, solve, LLM judges). */
        rolloutShardMinutes: z.number().positive(),
        trainStepMinutes: z.number().positive(),
        /** Per attempt of an orchestrator activity (plan, gate, rule judges, filter, commit, run bookkeeping). */
        orchestratorMinutes: z.number().positive(),
        /** A worker of any pool silent this long is presumed dead and its activity is retried elsewhere. */
        heartbeatSeconds: z.number().positive(),
        /** An attempt cap; unset (the default), a transient failure is retried until it clears. */
        activityMaxAttempts: z.number().int().min(1).max(1000).optional(),
        retryInitialSeconds: z.number().positive(),
        /** The backoff cap: the longest wait between two attempts, so a healed outage is noticed this soon. */
        retryMaxSeconds: z.number().positive(),
        /**
         * An activity failing this long without progress (each attempt failing where the one before it did) stops
         * retrying: its iteration waits for the operator with the last failure as its cause (activities/lib/stuck.ts).
         */
        stuckAfterMinutes: z.number().positive(),
      })
      .refine((t) => t.retryMaxSeconds >= t.retryInitialSeconds, {
        path: ['retryMaxSeconds'],
        message: 'must be at least timeouts.retryInitialSeconds',
      }),
    /** Held-out accuracy on benchmark files, every K iterations and at the start (config/evaluation.ts). */
    evaluation: evaluationParams,
    /**
     * Experiment trackers each committed iteration is logged to (step = iteration), after its commit: rewards
     * per role, valid-task rate, pass-rate histogram, held-out accuracy, the kernel's step metrics, stage times;
     * the resolved config as parameters. One tracker run per lineage (a rollback or fork names its parent and
     * branch point). A tracker that is down never holds the run: the next commit catches up. Credentials come
     * from the worker's environment (docs/tracking.md).
     */
    tracking: z
      .strictObject({
        /** Weights & Biases, through its Python SDK on the orchestrator workers (SELFPLAY_PYTHON, WANDB_API_KEY). */
        wandb: z
          .strictObject({
            project: z.string().min(1),
            entity: z.string().min(1).optional(),
            /** `offline` writes W&B's run files under `dir` on the worker, for `wandb sync`. Default: online. */
            mode: z.enum(['online', 'offline']).optional(),
            /** The directory W&B writes under on the orchestrator workers. Default: .selfplay/wandb. */
            dir: z.string().min(1).optional(),
          })
          .optional(),
        /** An MLflow tracking server, through its REST API: one MLflow run per lineage in `experiment`. */
        mlflow: z
          .strictObject({
            trackingUri: z.url(),
            experiment: z.string().min(1),
            /** The worker variable holding the server's bearer token (SELFPLAY_…_TOKEN), sent to trackingUri only. */
            apiKeyEnv: apiKeyEnv.optional(),
          })
          .optional(),
        /** TensorBoard event files: `{logDir}/{lineage}/`, logDir a directory or s3://. */
        tensorboard: z.strictObject({ logDir: z.string().min(1) }).optional(),
      })
      .optional(),
    /** The parent continues-as-new after this many iterations (or sooner when Temporal suggests it). */
    continueAsNewEvery: positiveInt.max(1000),
    /**
     * Overlap of iterations (docs/architecture.md, "Bounded staleness"). `maxStaleness` 0: each iteration
     * samples with the version the previous one committed (synchronous). k ≥ 1: iteration n+1 plans, proposes,
     * solves and judges with the newest committed version while iteration n trains; its update waits until
     * n has committed and trains on rows sampled at most k versions back. Commits stay atomic and in order.
     * With k ≥ 1 the loss corrects for the staleness (`training.loss.offPolicy` defaults to `tis`), so every
     * trained role must be sampled by an engine that returns log-probs.
     */
    pipeline: z.strictObject({
      maxStaleness: z.number().int().min(0).max(8),
      /**
       * With maxStaleness ≥ 1, iteration n+1 starts once n has planned its first round, not once n's rollouts
       * are answered: up to k + 1 iterations sample at once, each request waiting for the worker's completions
       * behind every older iteration's, so n+1 takes the slots n's long tail frees (docs/architecture.md,
       * "Streaming"). Only while the engine serves the versions sampled at once side by side: `kernel` and
       * `sglang` hold one, so there n+1 starts early only when it samples n's versions.
       */
      streaming: z.boolean(),
    }),
    /** Continue a run from its last (or a given) committed iteration: `"runId"` or `{runId, iteration}`. */
    resumeFrom: z
      .union([id, z.strictObject({ runId: id, iteration: z.number().int().min(0).optional() })])
      .transform((v) => (typeof v === 'string' ? { runId: v } : v))
      .optional(),
  })
  .refine((c) => policyRolesAreDisjoint(c.training.policies), {
    path: ['training', 'policies'],
    message: 'a role is trained by one policy only; list each role under one policy',
  })
  .refine((c) => !evaluationOn(c.evaluation) || evaluatedPolicyKnown(c.training.policies), {
    path: ['evaluation'],
    message:
      'with several training.policies, add "eval" to the roles of the policy to evaluate (its endpoint and versions answer the benchmarks)',
  })
  .refine((c) => !c.pipeline.streaming || c.pipeline.maxStaleness >= 1, {
    path: ['pipeline', 'streaming'],
    message:
      'streaming starts the next iteration while this one samples, so it needs pipeline.maxStaleness ≥ 1; set both or neither',
  })
  .refine(
    (c) => c.pipeline.maxStaleness === 0 || c.evaluation.every === 0 || c.weightSync.engine === 'none',
    {
      path: ['pipeline', 'maxStaleness'],
      message:
        'evaluation.every loads each evaluated commit onto the inference servers, which would change the weights under the next ' +
        'iteration\'s rollouts; with pipeline.maxStaleness ≥ 1 evaluate from a server of its own (weightSync.engine "none") or set maxStaleness 0',
    },
  )
  .refine(
    (c) =>
      c.evaluation.rollout !== 'search' || (SEARCH_AGENT_RECIPES as readonly string[]).includes(c.recipe),
    {
      path: ['evaluation', 'rollout'],
      message: `"search" runs the recipe's search-agent solver: ${SEARCH_AGENT_RECIPES.join(' or ')} only`,
    },
  )
  .refine((c) => Math.ceil(c.batchSize / c.shardSize) <= MAX_SHARDS, {
    path: ['shardSize'],
    message: `batchSize / shardSize must give at most ${MAX_SHARDS} shards, so an iteration's history stays small; raise shardSize`,
  });

export type RunConfig = z.output<typeof runConfig>;

function policyRolesAreDisjoint(policies: Record<string, { roles: string[] }> | undefined): boolean {
  const roles = Object.values(policies ?? {}).flatMap((p) => p.roles);
  return new Set(roles).size === roles.length;
}
/** Whether some policy plays role "eval", the one held-out evaluation scores (config/policies.ts `evaluatedPolicy`). */
function evaluatedPolicyKnown(policies: Record<string, { roles: string[] }> | undefined): boolean {
  return policies === undefined || Object.values(policies).some((p) => p.roles.includes('eval'));
}
export type RecipeName = RunConfig['recipe'];
export const RECIPES = ['spice', 'spell', 'mae', 'ssp', 'scope'] as const satisfies readonly RecipeName[];

/**
 * Timeouts and retries unless the config sets them. Also what an iteration input recorded before a field
 * existed gets (contracts/input-upgrade.ts): a child's config is resolved by the parent, not re-resolved.
 */
export const TIMEOUT_DEFAULTS = {
  rolloutShardMinutes: 240,
  trainStepMinutes: 120,
  orchestratorMinutes: 120,
  heartbeatSeconds: 120,
  retryInitialSeconds: 1,
  retryMaxSeconds: 60,
  stuckAfterMinutes: 30,
} as const satisfies RunConfig['timeouts'];

/**
 * One optimizer step over the whole batch, every role together: the update of iteration inputs recorded
 * before `training.update` existed (contracts/input-upgrade.ts fills it in), and of recipes whose paper
 * takes one step.
 */
export const UPDATE_DEFAULTS: Readonly<RunConfig['training']['update']> = {
  miniBatchPrompts: 'all',
  epochs: 1,
  roleOrder: [],
};

/**
 * The off-policy loss options, all off: the PPO ratio to the behaviour log-probs (a one-step-off run gets
 * `tis` instead, `deriveOffPolicyDefault`). Also what an iteration input recorded before the options existed
 * gets (contracts/input-upgrade.ts).
 */
export const LOSS_OPTION_DEFAULTS = {
  dualClip: 'off',
  k3Clamp: 'off',
  offPolicy: 'ppo_ratio',
  importanceCap: 2,
} as const satisfies Partial<RunConfig['training']['loss']>;

/**
 * What `training.retention` keeps unless the config says: the last 5 commits' weights. Also what an iteration
 * input recorded before retention existed gets (contracts/input-upgrade.ts): the iteration does not read it.
 */
export const RETENTION_DEFAULTS: Readonly<RunConfig['training']['retention']> = { keepLast: 5, keepEvery: 0 };

/** Defaults shared by every recipe; a preset overrides them. */
const commonDefaults = {
  seed: 0,
  shardSize: 32,
  corpus: { uri: 'test/fixtures/corpus/small.jsonl', maxSegmentChars: 24_000, maxDocumentChars: 2_000_000 },
  inference: { default: {}, roles: {}, requestTimeoutSeconds: 600, maxRetries: 5 },
  training: {
    policy: 'policy',
    loss: LOSS_OPTION_DEFAULTS,
    checkpoint: true,
    retention: RETENTION_DEFAULTS,
    negateAdvantages: false,
    ablateRoles: [],
    update: UPDATE_DEFAULTS,
  },
  weightSync: { engine: 'none', servers: [], attempts: 3, timeoutSeconds: 600 },
  pools: { orchestrator: 'selfplay-orchestrator', rollout: 'selfplay-rollout', trainer: 'selfplay-trainer' },
  timeouts: TIMEOUT_DEFAULTS,
  continueAsNewEvery: 10,
  pipeline: { maxStaleness: 0, streaming: false },
  judgePool: 'rollout',
  spice: SPICE_DEFAULTS,
  spell: SPELL_DEFAULTS,
  mae: MAE_DEFAULTS,
  ssp: SSP_DEFAULTS,
  scope: SCOPE_DEFAULTS,
  retrieval: { kind: 'bm25', topK: 3, passageTokens: 500 },
  evaluation: EVALUATION_DEFAULTS,
};

const presets: Record<RecipeName, object> = {
  spice: spicePreset,
  spell: spellPreset,
  mae: maePreset,
  ssp: sspPreset,
  scope: scopePreset,
};

export type ConfigResult = { ok: true; config: RunConfig } | { ok: false; problems: string[] };

/** Merges the user's object over the recipe preset and validates it; every problem names its field path. */
export function resolveRunConfig(input: unknown): ConfigResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, problems: ['config: expected a JSON object such as {"recipe":"spice"}'] };
  }
  const recipe = (input as { recipe?: unknown }).recipe;
  if (typeof recipe !== 'string' || !(RECIPES as readonly string[]).includes(recipe)) {
    return {
      ok: false,
      problems: [
        `recipe: expected one of ${RECIPES.map((r) => JSON.stringify(r)).join(', ')}, got ${JSON.stringify(recipe)}`,
      ],
    };
  }
  const foreign = RECIPES.filter((r) => r !== recipe && (input as Record<string, unknown>)[r] !== undefined);
  if (foreign.length > 0) {
    return {
      ok: false,
      problems: foreign.map(
        (r) => `${r}: this run's recipe is "${recipe}"; remove the "${r}" section or set recipe to "${r}"`,
      ),
    };
  }
  const merged = deepMerge(deepMerge(commonDefaults, presets[recipe as RecipeName]), input);
  // A run's policies replace the preset's whole: merged by name, a renamed policy would add a second one.
  const ownPolicies = (input as { training?: { policies?: unknown } }).training?.policies;
  if (ownPolicies !== undefined)
    (merged as { training: { policies?: unknown } }).training.policies = ownPolicies;
  if (recipe === 'scope') deriveScopeDefaults(merged as ScopeMerged, input);
  deriveOffPolicyDefault(merged as Record<string, unknown>, input);
  const parsed = runConfig.safeParse(merged);
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map(
      (issue) => `${issue.path.map(String).join('.') || 'config'}: ${issue.message}`,
    ),
  };
}

type ScopeMerged = { shardSize: unknown; scope: { schedule: object } };
type ScopeInput = { scope?: { schedule?: { candidatesPerRound?: unknown } } };

/**
 * SCOPE's candidates per round follow the run's shard size unless the run sets them (presets/scope.ts
 * `defaultCandidatesPerRound`); a shard size the schema refuses is left for it to name. The merged sections
 * may be the defaults' own objects, so they are copied, not changed.
 */
function deriveScopeDefaults(merged: ScopeMerged, input: ScopeInput): void {
  const { shardSize } = merged;
  if (input.scope?.schedule?.candidatesPerRound !== undefined) return;
  if (typeof shardSize !== 'number' || !Number.isInteger(shardSize) || shardSize < 1) return;
  const candidatesPerRound = defaultCandidatesPerRound(shardSize, MAX_SHARDS);
  merged.scope = { ...merged.scope, schedule: { ...merged.scope.schedule, candidatesPerRound } };
}

type OffPolicyInput = { training?: { loss?: { offPolicy?: unknown } } };

/**
 * `training.loss.offPolicy` is `tis` for a run that samples ahead of its training (`pipeline.maxStaleness`
 * ≥ 1) unless the run sets it (see the field's doc comment). Sections the schema refuses are left for it to
 * name. The merged sections may be the defaults' own objects, so they are copied, not changed.
 */
function deriveOffPolicyDefault(merged: Record<string, unknown>, input: OffPolicyInput): void {
  const { pipeline, training } = merged;
  if (input.training?.loss?.offPolicy !== undefined) return;
  if (!isPlainObject(pipeline) || !isPlainObject(training) || !isPlainObject(training.loss)) return;
  if (typeof pipeline.maxStaleness !== 'number' || pipeline.maxStaleness < 1) return;
  merged.training = { ...training, loss: { ...training.loss, offPolicy: 'tis' } };
}

/** Plain-object deep merge: `over` wins; arrays and scalars are replaced, not merged. */
function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = deepMerge(base[key], value);
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
