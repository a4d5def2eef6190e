import { condition } from '@temporalio/workflow';
import type { StageName, StageTiming } from '../contracts/selfplay';
import type { IterationProgress, StageCount } from './messages';

/**
 * Wall span and busy time per stage, in workflow time (deterministic on replay), and the calls started and
 * finished per stage for the `iterationProgress` query. Every stage starts at a boundary where a pause holds
 * it (the time held is not counted in the stage's span, nor the call as started).
 */
export class StageTimer {
  private readonly spans = new Map<StageName, { first: number; last: number; busy: number }>();
  private readonly counts: Partial<Record<StageName, StageCount>> = {};
  paused = false;
  /** The plan's shard count, once planned. */
  shards: number | undefined;
  private inFlight = 0;
  private waiting = 0;
  private latest: StageName | undefined;

  async time<T>(stage: StageName, run: () => Promise<T>): Promise<T> {
    if (this.paused) {
      this.waiting++;
      await condition(() => !this.paused);
      this.waiting--;
    }
    this.latest = stage;
    this.inFlight++;
    const count = (this.counts[stage] ??= { started: 0, finished: 0 });
    count.started++;
    const start = Date.now();
    const value = await run().finally(() => this.inFlight--);
    count.finished++;
    const end = Date.now();
    const span = this.spans.get(stage);
    if (span) {
      span.first = Math.min(span.first, start);
      span.last = Math.max(span.last, end);
      span.busy += end - start;
    } else {
      this.spans.set(stage, { first: start, last: end, busy: end - start });
    }
    return value;
  }

  progress(iteration: number): IterationProgress {
    return {
      iteration,
      paused: this.paused,
      held: this.paused && this.inFlight === 0 && this.waiting > 0,
      ...(this.latest ? { stage: this.latest } : {}),
      stagesInFlight: this.inFlight,
      stages: this.counts,
      ...(this.shards === undefined ? {} : { shards: this.shards }),
    };
  }

  timings(): Partial<Record<StageName, StageTiming>> {
    const out: Partial<Record<StageName, StageTiming>> = {};
    for (const [stage, s] of this.spans)
      out[stage] = { wallSeconds: (s.last - s.first) / 1000, busySeconds: s.busy / 1000 };
    return out;
  }
}
