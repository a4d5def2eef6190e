/**
 * A FIFO semaphore whose permits are completions, not requests: a request for n samples takes n permits,
 * so the client never has more completions in flight than the server was sized for.
 */
export class WeightedSemaphore {
  private available: number;
  private readonly waiters: Array<{ weight: number; wake: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0)
      throw new RangeError(`capacity must be a positive integer`);
    this.available = capacity;
  }

  /** Waits for `weight` permits (clamped to the capacity) and returns the function that gives them back. */
  async acquire(weight: number): Promise<() => void> {
    const w = Math.min(Math.max(1, Math.ceil(weight)), this.capacity);
    if (this.waiters.length === 0 && this.available >= w) {
      this.available -= w;
    } else {
      await new Promise<void>((wake) => this.waiters.push({ weight: w, wake }));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.available += w;
      this.drain();
    };
  }

  private drain(): void {
    while (this.waiters.length > 0 && (this.waiters[0] as { weight: number }).weight <= this.available) {
      const next = this.waiters.shift() as { weight: number; wake: () => void };
      this.available -= next.weight;
      next.wake();
    }
  }
}
