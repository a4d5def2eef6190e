import { seededRng } from '../../activities/lib/rng';

/**
 * What the chaos suite does to the local stack. A **kill** is a crash (SIGKILL) followed by a restart after a
 * short downtime; a **hold** is an outage held past the old retry budget (see `holdUntilPastBudget` in
 * suite.ts: before this release a run failed once an activity had spent its 10 attempts) or for a fixed wall
 * time (`hold-temporal` always: while Temporal is down no attempt can be counted; `hold-storage` when given
 * one); a **corrupt** fault corrupts a stored object the run will read (corruption.ts; a checkpoint, with the
 * restore that reads it made certain: checkpoint-corruption.ts), and `fill-disk` fills MinIO's size-capped drive
 * (disk.ts). No retry heals those: the run must wait for its operator, who repairs and retries.
 */
export const FAULT_KINDS = [
  'kill-orchestrator-worker',
  'kill-rollout-worker',
  'kill-trainer-worker',
  'kill-temporal',
  'kill-minio',
  'kill-trainer',
  'hold-storage',
  'hold-inference',
  'hold-trainer',
  'hold-temporal',
  'corrupt-shard',
  'corrupt-batch',
  'corrupt-checkpoint',
  'fill-disk',
] as const;

/**
 * The real kernel's faults inside a train step (`--trainer kernel`, kernel.ts): a mini-batch after the first
 * raises once after its update (the kernel rolls the step back, the update retries it), and a step held after
 * such a mini-batch is SIGKILLed there and the kernel restarted (the update restores the last committed
 * checkpoint and sends the step again).
 */
export const KERNEL_FAULT_KINDS = ['raise-mini-batch', 'kill-kernel-mid-step'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number] | (typeof KERNEL_FAULT_KINDS)[number];

/** What trains the chaos runs: the recording trainer (a test double) or the real PyTorch kernel. */
export type ChaosTrainer = 'recording' | 'kernel';

/**
 * The kinds a suite on `trainer` injects. On the kernel, which also samples, `hold-inference` (the scripted
 * LLM's) hits nothing, and `corrupt-checkpoint` needs the recording trainer's admin routes (it makes the
 * trainer forget its weights): both are left out, and the kernel's own two are added.
 */
export function faultKinds(trainer: ChaosTrainer): readonly FaultKind[] {
  if (trainer === 'recording') return FAULT_KINDS;
  return [
    ...FAULT_KINDS.filter((k) => k !== 'hold-inference' && k !== 'corrupt-checkpoint'),
    ...KERNEL_FAULT_KINDS,
  ];
}

export interface PlannedFault {
  kind: FaultKind;
  /** Time from the previous fault's end to this one. */
  gapMs: number;
  /** How long a killed part stays down before its restart (holds, corruptions and fill-disk ignore it). */
  downMs: number;
}

export interface FaultTiming {
  gapMs: readonly [number, number];
  downMs: readonly [number, number];
}

export const DEFAULT_TIMING: FaultTiming = { gapMs: [1_000, 6_000], downMs: [300, 3_000] };

/**
 * `count` faults drawn from `seed`: the kinds in rounds, each round a seeded shuffle of every kind (so every
 * kind is injected once `count` reaches the number of kinds, and evenly after), each after a seeded gap.
 * The same seed gives the same plan; when each fault lands in the run still depends on the run's timing.
 */
export function faultPlan(
  seed: number,
  count: number,
  timing: FaultTiming = DEFAULT_TIMING,
  kinds: readonly FaultKind[] = FAULT_KINDS,
): PlannedFault[] {
  const rng = seededRng('chaos', seed);
  const within = ([low, high]: readonly [number, number]): number =>
    Math.round(low + rng.next() * (high - low));
  const planned: FaultKind[] = [];
  while (planned.length < count) planned.push(...rng.shuffle(kinds));
  return planned
    .slice(0, count)
    .map((kind) => ({ kind, gapMs: within(timing.gapMs), downMs: within(timing.downMs) }));
}
