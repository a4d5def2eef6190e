/**
 * Answer checks under a hard time limit: a pool of worker threads runs checkAnswer (verifiers.ts), one
 * answer at a time per thread. A check that runs past the limit gets the verdict `timeout` and its thread
 * is killed (`worker.terminate()`) and replaced, so a model output built to be slow (issue 11's 400
 * characters of `\binom`s) costs one limit and never blocks the activity's event loop. Inputs longer than
 * maxInputChars are `unparsable` without a check. Every verdict is counted in
 * `selfplay_answer_checks_total{verdict}`.
 *
 *   SELFPLAY_ANSWER_CHECK_TIMEOUT_MS   the per-answer limit (default 2000)
 *   SELFPLAY_ANSWER_CHECK_WORKERS      threads in the shared pool (default: CPUs − 1, at least 1, at most 4)
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { metrics } from '../lib/metrics';
import type { EquivalenceVerdict } from './math-equivalence';
import type { AnswerKind } from './verifiers';

export type AnswerVerdict = EquivalenceVerdict | 'timeout';

export interface CheckRequest {
  kind: AnswerKind;
  predicted: string;
  gold: string;
}

export interface CheckResult {
  verdict: AnswerVerdict;
  /** Wall time of the check in its thread (the limit for a timeout), in milliseconds. */
  ms: number;
}

/** Something that checks answers; the judge stages take one so tests can pass a pool of their own. */
export type AnswerChecker = (request: CheckRequest) => Promise<CheckResult>;

export interface CheckMessage extends CheckRequest {
  id: number;
}

export interface VerdictMessage {
  id: number;
  verdict: EquivalenceVerdict;
  ms: number;
}

interface PoolOptions {
  workers?: number;
  timeoutMs?: number;
  maxInputChars?: number;
}

export const DEFAULT_TIMEOUT_MS = 2000;
/** A whole solution text may be checked (the CLI takes its last `\boxed{}`); more than this is not one. */
const DEFAULT_MAX_INPUT_CHARS = 100_000;

const checksTotal = metrics.counter(
  'selfplay_answer_checks_total',
  'Answer checks by verdict (equivalent, different, unparsable, timeout); timeout and unparsable count as incorrect.',
);

interface Job {
  message: CheckMessage;
  resolve: (result: CheckResult) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

export class AnswerCheckerPool {
  readonly timeoutMs: number;
  readonly maxInputChars: number;
  readonly size: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 0;
  private closed = false;

  constructor(options: PoolOptions = {}) {
    this.size = positive(options.workers ?? defaultWorkers(), 'workers');
    this.timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs');
    this.maxInputChars = positive(options.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS, 'maxInputChars');
  }

  /** The verdict for one answer; never rejects except after close(). */
  check(request: CheckRequest): Promise<CheckResult> {
    if (this.closed) return Promise.reject(new Error('the answer-checker pool is closed'));
    if (request.predicted.length + request.gold.length > this.maxInputChars) {
      checksTotal.inc({ verdict: 'unparsable' });
      return Promise.resolve({ verdict: 'unparsable', ms: 0 });
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ message: { id: this.nextId++, ...request }, resolve, reject });
      this.pump();
    });
  }

  /** Stops every thread; checks still queued or running are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const error = new Error('the answer-checker pool was closed');
    for (const job of this.queue.splice(0)) job.reject(error);
    await Promise.all(
      this.slots.splice(0).map((slot) => {
        clearTimeout(slot.timer);
        slot.job?.reject(error);
        slot.job = undefined;
        slot.worker.removeAllListeners();
        return slot.worker.terminate();
      }),
    );
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const slot = this.slots.find((s) => s.ready && !s.job);
      if (!slot) {
        if (this.slots.length < this.size) this.slots.push(this.spawn());
        break;
      }
      this.dispatch(slot, this.queue.shift() as Job);
    }
    this.holdProcessWhileBusy();
  }

  /** Threads keep the process alive only while checks are queued or running, so an idle pool needs no close. */
  private holdProcessWhileBusy(): void {
    const busy = this.queue.length > 0 || this.slots.some((s) => s.job);
    for (const slot of this.slots) {
      if (busy) slot.worker.ref();
      else slot.worker.unref();
    }
  }

  private dispatch(slot: Slot, job: Job): void {
    slot.job = job;
    slot.timer = setTimeout(() => this.expire(slot), this.timeoutMs);
    slot.worker.postMessage(job.message);
  }

  private finish(slot: Slot, result: CheckResult): void {
    clearTimeout(slot.timer);
    const job = slot.job;
    slot.job = undefined;
    checksTotal.inc({ verdict: result.verdict });
    job?.resolve(result);
  }

  /** The check ran past its limit: its thread is killed and replaced. */
  private expire(slot: Slot): void {
    this.replace(slot);
    this.finish(slot, { verdict: 'timeout', ms: this.timeoutMs });
    this.pump();
  }

  private replace(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    slot.worker.removeAllListeners();
    void slot.worker.terminate();
  }

  private spawn(): Slot {
    const worker = startWorker();
    const slot: Slot = { worker, ready: false };
    worker.on('message', (message: VerdictMessage | 'ready') => {
      if (message === 'ready') slot.ready = true;
      else if (slot.job?.message.id === message.id)
        this.finish(slot, { verdict: message.verdict, ms: message.ms });
      this.pump();
    });
    // A thread that dies (out of memory, a crash) fails its answer as unparsable and is replaced.
    const died = (): void => {
      this.replace(slot);
      if (slot.job) this.finish(slot, { verdict: 'unparsable', ms: 0 });
      if (!this.closed) this.pump();
    };
    worker.on('error', died);
    worker.on('exit', died);
    return slot;
  }
}

/** The worker entry: TypeScript through tsx's require hook when this module itself runs as TypeScript. */
function startWorker(): Worker {
  const entry = join(__dirname, 'answer-checker-worker');
  if (!__filename.endsWith('.ts')) return new Worker(`${entry}.js`);
  const code = `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(`${entry}.ts`)});`;
  return new Worker(code, { eval: true });
}

function defaultWorkers(): number {
  return Math.min(4, Math.max(1, availableParallelism() - 1));
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`answer-checker pool: ${name} must be a positive integer, got ${value}`);
  return value;
}

let shared: AnswerCheckerPool | undefined;

/** The process-wide pool the judge stages use, configured from the environment on first use. */
export function sharedAnswerChecker(env: NodeJS.ProcessEnv = process.env): AnswerChecker {
  shared ??= new AnswerCheckerPool({
    ...(env.SELFPLAY_ANSWER_CHECK_TIMEOUT_MS
      ? { timeoutMs: Number(env.SELFPLAY_ANSWER_CHECK_TIMEOUT_MS) }
      : {}),
    ...(env.SELFPLAY_ANSWER_CHECK_WORKERS ? { workers: Number(env.SELFPLAY_ANSWER_CHECK_WORKERS) } : {}),
  });
  const pool = shared;
  return (request) => pool.check(request);
}
