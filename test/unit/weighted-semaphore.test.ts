import { WeightedSemaphore } from '../../activities/lib/weighted-semaphore';

/** Acquires, and records the label once the permits are granted; returns the release function. */
function acquireInto(
  order: string[],
  sem: WeightedSemaphore,
  label: string,
  weight: number,
  priority?: number,
): Promise<() => void> {
  return sem.acquire(weight, priority).then((release) => {
    order.push(label);
    return release;
  });
}

/** Lets every granted waiter's continuation run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('WeightedSemaphore', () => {
  test('waiters are served by priority, lower first, then in arrival order', async () => {
    const sem = new WeightedSemaphore(2);
    const order: string[] = [];
    const hold = await sem.acquire(2);
    const waiting = [
      acquireInto(order, sem, 'iteration 5, first', 1, 5),
      acquireInto(order, sem, 'iteration 3, first', 1, 3),
      acquireInto(order, sem, 'iteration 5, second', 1, 5),
      acquireInto(order, sem, 'iteration 3, second', 1, 3),
    ];
    await settle();
    expect(order).toEqual([]);
    hold();
    await settle();
    expect(order).toEqual(['iteration 3, first', 'iteration 3, second']);
    const granted = await Promise.all([waiting[1]!, waiting[3]!]);
    granted.forEach((release) => release());
    await Promise.all(waiting);
    expect(order).toEqual([
      'iteration 3, first',
      'iteration 3, second',
      'iteration 5, first',
      'iteration 5, second',
    ]);
  });

  test('the head of the line is never overtaken by a smaller request behind it', async () => {
    const sem = new WeightedSemaphore(4);
    const order: string[] = [];
    const hold = await sem.acquire(3);
    const large = acquireInto(order, sem, 'large', 4, 1);
    const small = acquireInto(order, sem, 'small', 1, 2);
    await settle();
    // One permit is free, but the large request ahead needs four: the small one waits behind it.
    expect(order).toEqual([]);
    hold();
    (await large)();
    await small;
    expect(order).toEqual(['large', 'small']);
  });

  test('a request of an older iteration arriving later goes ahead of those already waiting', async () => {
    const sem = new WeightedSemaphore(1);
    const order: string[] = [];
    const hold = await sem.acquire(1);
    const newer = acquireInto(order, sem, 'newer', 1, 7);
    const older = acquireInto(order, sem, 'older', 1, 6);
    hold();
    (await older)();
    await newer;
    expect(order).toEqual(['older', 'newer']);
  });

  test('without priorities it is first in, first out, and never lends more than its capacity', async () => {
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
