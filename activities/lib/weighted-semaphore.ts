/**
 * Where a waiter stands among those of its group: lower `rank` first. Waiters of different groups keep their
 * arrival order, so one group never starves another.
 */
export interface QueueRank {
  group: string;
  rank: number;
}

interface Waiter {
  weight: number;
  rank?: QueueRank;
  wake: () => void;
}

/**
 * A semaphore whose permits are completions, not requests: a request for n samples takes n permits, so the
 * client never has more completions in flight than the server was sized for. Waiters are served in arrival
 * order, except that within a group (a run) a lower rank (an older iteration) takes the earliest place its
 * group holds in the line: a streaming run's newer iteration gets only the permits its older one leaves free,
 * while other runs keep their places. The head of the line waits for its permits rather than being
 * overtaken, so a large request is never starved by smaller ones.
 */
export class WeightedSemaphore {
  private available: number;
  private readonly waiters: Waiter[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0)
      throw new RangeError(`capacity must be a positive integer`);
    this.available = capacity;
  }

  /** Permits taken and not yet given back. */
  get held(): number {
    return this.capacity - this.available;
  }

  /** Waits for `weight` permits (clamped to the capacity) and returns the function that gives them back. */
  async acquire(weight: number, rank?: QueueRank): Promise<() => void> {
    const w = Math.min(Math.max(1, Math.ceil(weight)), this.capacity);
    if (this.waiters.length === 0 && this.available >= w) {
      this.available -= w;
    } else {
      await new Promise<void>((wake) => {
        this.waiters.push({ weight: w, ...(rank ? { rank } : {}), wake });
        if (rank) this.rankWithinGroup(rank.group);
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

  /** Reorders the group's waiters by rank (stably) over the places the group holds in the line. */
  private rankWithinGroup(group: string): void {
    const places = this.waiters.flatMap((waiter, i) => (waiter.rank?.group === group ? [i] : []));
    const ranked = places
      .map((i) => this.waiters[i] as Waiter)
      .sort((a, b) => (a.rank as QueueRank).rank - (b.rank as QueueRank).rank);
    places.forEach((place, i) => (this.waiters[place] = ranked[i] as Waiter));
  }

  private drain(): void {
    while (this.waiters.length > 0 && (this.waiters[0] as Waiter).weight <= this.available) {
      const next = this.waiters.shift() as Waiter;
      this.available -= next.weight;
      next.wake();
    }
  }
}
