/**
 * The scheduler of a pretend inference engine: at most `capacity` completions run at once and the rest wait
 * in arrival order, as sequences do in vLLM's scheduler. Each completion holds one slot, so a request with
 * n=8 occupies 8 slots and a request larger than the capacity still finishes, part by part.
 */
export class Slots {
  private active = 0;
  private peak = 0;
  /** Closed spans [start, end] (epoch ms) during which some completion ran, and the open one's start. */
  private readonly busy: Array<[number, number]> = [];
  private busySince: number | undefined;
  /** Each completion's slot tenure [start, end] (epoch ms), and the starts of those still holding one. */
  private readonly held: Array<[number, number]> = [];
  private readonly holding = new Set<{ start: number }>();
  private readonly queue: Array<() => void> = [];

  constructor(private capacity: number) {}

  /** Completions running now. */
  get inUse(): number {
    return this.active;
  }

  /** Completions waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /** The most completions that ran at once since the last `resetPeak`. */
  get maxInUse(): number {
    return this.peak;
  }

  /** Milliseconds within [from, to] (epoch ms) during which at least one completion ran. */
  busyMsWithin(from: number, to: number): number {
    const open: Array<[number, number]> = this.busySince === undefined ? [] : [[this.busySince, Date.now()]];
    const spans = [...this.busy, ...open];
    return spans.reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0);
  }

  /**
   * Slot-milliseconds within [from, to] (epoch ms): the sum over completions of the time each held its slot
   * there. Divided by capacity × (to − from), how fully the engine was used, not only whether it worked.
   */
  slotMsWithin(from: number, to: number): number {
    const now = Date.now();
    const open = [...this.holding].map((h): [number, number] => [h.start, now]);
    return [...this.held, ...open].reduce(
      (sum, [a, b]) => sum + Math.max(0, Math.min(b, to) - Math.max(a, from)),
      0,
    );
  }

  resetPeak(): void {
    this.peak = this.active;
  }

  setCapacity(capacity: number): void {
    this.capacity = capacity;
    this.admit();
  }

  /** Waits for a slot (FIFO) and resolves with its release; an abort while waiting leaves the queue. */
  acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.queue.indexOf(grant);
        if (at >= 0) this.queue.splice(at, 1);
        reject(
          signal.reason instanceof Error ? signal.reason : new Error('aborted while waiting for a slot'),
        );
      };
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        if (this.active++ === 0) this.busySince = Date.now();
        this.peak = Math.max(this.peak, this.active);
        const tenure = { start: Date.now() };
        this.holding.add(tenure);
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.holding.delete(tenure);
          this.held.push([tenure.start, Date.now()]);
          this.active--;
          this.admit();
          if (this.active === 0 && this.busySince !== undefined) {
            this.busy.push([this.busySince, Date.now()]);
            this.busySince = undefined;
          }
        });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(grant);
      this.admit();
    });
  }

  private admit(): void {
    while (this.active < this.capacity) {
      const next = this.queue.shift();
      if (!next) return;
      next();
    }
  }
}
