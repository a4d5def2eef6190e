/**
 * A semaphore whose permits are completions, not requests: a request for n samples takes n permits, so the
 * client never has more completions in flight than the server was sized for. Waiters are served by priority
 * (lower first), then in arrival order; the head of the line waits for its permits rather than being
 * overtaken, so a large request is never starved by smaller ones. Streaming runs give each request its
 * iteration as priority, so a newer iteration's requests take only the permits an older one leaves free.
 */
export class WeightedSemaphore {
  private available: number;
  private readonly waiters: Array<{ weight: number; priority: number; wake: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0)
      throw new RangeError(`capacity must be a positive integer`);
    this.available = capacity;
  }

  /**
   * Waits for `weight` permits (clamped to the capacity) behind every waiter of a lower or equal `priority`,
   * and returns the function that gives them back.
   */
  async acquire(weight: number, priority = 0): Promise<() => void> {
    const w = Math.min(Math.max(1, Math.ceil(weight)), this.capacity);
    if (this.waiters.length === 0 && this.available >= w) {
      this.available -= w;
    } else {
      await new Promise<void>((wake) => {
        const behind = this.waiters.findIndex((x) => x.priority > priority);
        this.waiters.splice(behind < 0 ? this.waiters.length : behind, 0, { weight: w, priority, wake });
        this.drain();
      });
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
