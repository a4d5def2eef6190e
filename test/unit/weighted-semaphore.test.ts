import { WeightedSemaphore, type QueueRank } from '../../activities/lib/weighted-semaphore';

/** Acquires, and records the label once the permits are granted; returns the release function. */
function acquireInto(
  order: string[],
  sem: WeightedSemaphore,
  label: string,
  weight: number,
  rank?: QueueRank,
): Promise<() => void> {
  return sem.acquire(weight, rank).then((release) => {
    order.push(label);
    return release;
  });
}

/** Lets every granted waiter's continuation run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Grants the waiters one at a time (capacity 1), releasing each as it is granted; resolves when all are. */
async function serveOneByOne(waiting: Array<Promise<() => void>>, hold: () => void): Promise<void> {
  hold();
  await Promise.all(waiting.map((w) => w.then((release) => release())));
}

const run = (group: string, rank: number): QueueRank => ({ group, rank });

describe('WeightedSemaphore', () => {
  test("within a run, an older iteration's waiters go first, then in arrival order", async () => {
    const sem = new WeightedSemaphore(1);
    const order: string[] = [];
    const hold = await sem.acquire(1);
    const waiting = [
      acquireInto(order, sem, 'iteration 5, first', 1, run('a', 5)),
      acquireInto(order, sem, 'iteration 3, first', 1, run('a', 3)),
      acquireInto(order, sem, 'iteration 5, second', 1, run('a', 5)),
      acquireInto(order, sem, 'iteration 3, second', 1, run('a', 3)),
    ];
    await settle();
    expect(order).toEqual([]);
    await serveOneByOne(waiting, hold);
    expect(order).toEqual([
      'iteration 3, first',
      'iteration 3, second',
      'iteration 5, first',
      'iteration 5, second',
    ]);
  });

  test("another run's waiters keep their places: a run reorders only the places it holds", async () => {
    const sem = new WeightedSemaphore(1);
    const order: string[] = [];
    const hold = await sem.acquire(1);
    const waiting = [
      acquireInto(order, sem, 'a:9', 1, run('a', 9)),
      acquireInto(order, sem, 'b:50', 1, run('b', 50)),
      acquireInto(order, sem, 'evaluation', 1),
      acquireInto(order, sem, 'a:8', 1, run('a', 8)),
      acquireInto(order, sem, 'b:1', 1, run('b', 1)),
    ];
    await serveOneByOne(waiting, hold);
    // Run a's two places (1st and 4th) now serve iteration 8 first; b's (2nd and 5th) iteration 1 first; the
    // unranked evaluation keeps the 3rd. A run at iteration 50 is not starved by one at iteration 1.
    expect(order).toEqual(['a:8', 'b:1', 'evaluation', 'a:9', 'b:50']);
  });

  test('the head of the line is never overtaken by a smaller request behind it', async () => {
    const sem = new WeightedSemaphore(4);
    const order: string[] = [];
    const hold = await sem.acquire(3);
    const large = acquireInto(order, sem, 'large', 4, run('a', 1));
    const small = acquireInto(order, sem, 'small', 1, run('a', 2));
    await settle();
    // One permit is free, but the large request ahead needs four: the small one waits behind it.
    expect(order).toEqual([]);
    hold();
    (await large)();
    await small;
    expect(order).toEqual(['large', 'small']);
  });

  test('without ranks it is first in, first out, and never lends more than its capacity', async () => {
    const sem = new WeightedSemaphore(3);
    const order: string[] = [];
    const releases = await Promise.all([sem.acquire(2), sem.acquire(1)]);
    const waiting = ['a', 'b', 'c'].map((label) => acquireInto(order, sem, label, 2));
    await settle();
    expect(order).toEqual([]);
    releases.forEach((release) => release());
    await settle();
    // Three permits free: 'a' takes two, 'b' needs two more and waits, and so does 'c' behind it.
    expect(order).toEqual(['a']);
    (await waiting[0]!)();
    (await waiting[1]!)();
    await waiting[2];
    expect(order).toEqual(['a', 'b', 'c']);
  });
});
