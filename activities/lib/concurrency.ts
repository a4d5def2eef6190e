/** Runs `work` on every item, `limit` at a time; after a failure starts no more and settles, then throws. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      await work(items[next++] as T).catch((err: unknown) => {
        failed = true;
        throw err;
      });
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: limit }, worker));
  const rejected = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (rejected) throw rejected.reason;
}
