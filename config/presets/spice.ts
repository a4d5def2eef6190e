/**
 * SPICE preset (shared/specs/spice.md): B=128 documents, G=8 for both roles, N≤1024 Challenger attempts,
 * ρ=−0.1, temperature 1.0, Dr.GRPO with PPO-clip, lr 1e-6 constant, β=0.
 * Values the paper leaves open follow Oat's Dr.GRPO defaults (ε=0.2, top_p=1, 3000-token generations).
 */
export const spicePreset = {
  iterations: 640,
  batchSize: 128,
  groupSize: 8,
  /** SPICE's verifiers are rules (Math-Verify-style), so judging is CPU work for the orchestrator pool. */
  judgePool: 'orchestrator',
  sampling: { temperature: 1.0, topP: 1.0, maxTokens: 3000 },
  training: {
    estimator: 'dr_grpo',
    loss: {
      type: 'ppo_clip',
      normalization: 'dr_grpo',
      normalizerConstant: 3000,
      clipLow: 0.2,
      clipHigh: 0.2,
      klCoef: 0,
    },
    optimizer: { learningRate: 1e-6, schedule: 'constant', warmupSteps: 0, maxGradNorm: 1.0, weightDecay: 0 },
  },
  spice: {
    maxAttempts: 1024,
    invalidPenalty: -0.1,
    challengerReward: 'gaussian',
    tau: 0.01,
    targetVariance: 0.25,
    taskFormats: 'mixed',
    reasonerTemplate: 'qwen',
    typeSelectionAttempts: 3,
    dropZeroAdvantage: false,
  },
} as const;
