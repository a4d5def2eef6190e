import type { TrainerClient } from '../clients/trainer';

/** How far the kernel has got with the step in flight, as the update activity heartbeats it. */
export interface StepCounts {
  rowsTrained: number;
  rows: number;
  miniBatchesDone: number;
  miniBatches: number;
}

export interface StepWatch {
  /** The counts of the last poll that found the step; undefined before one has. */
  counts(): StepCounts | undefined;
  stop(): void;
}

/**
 * Polls the kernel's progress (`GET /v1/train/progress`) of the step `key` every `everyMs`, so the update
 * activity's beats say how far a step of minutes or hours has got, not only that it waits. A failed poll (a
 * kernel from before the route answers 404; a slow answer) keeps the last counts: the step's own request
 * decides the attempt, never its progress. One poll at a time.
 */
export function watchStep(
  trainer: TrainerClient,
  key: string,
  everyMs: number,
  signal: AbortSignal,
): StepWatch {
  let counts: StepCounts | undefined;
  let polling = false;
  const stopped = new AbortController();
  const poll = async (): Promise<void> => {
    if (polling) return;
    polling = true;
    try {
      const { step } = await trainer.trainProgress(AbortSignal.any([signal, stopped.signal]));
      if (step?.idempotencyKey === key) {
        const { rowsTrained, rows, miniBatchesDone, miniBatches } = step;
        counts = { rowsTrained, rows, miniBatchesDone, miniBatches };
      }
    } catch {
      // the counts stay as the last poll left them
    } finally {
      polling = false;
    }
  };
  const timer = setInterval(() => void poll(), everyMs);
  return {
    counts: () => counts,
    stop: () => {
      clearInterval(timer);
      stopped.abort();
    },
  };
}
