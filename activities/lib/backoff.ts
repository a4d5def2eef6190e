/** Exponential backoff with full jitter, capped: attempt 0 waits up to `baseMs`. */
export function backoffMs(attempt: number, baseMs = 500, capMs = 30_000): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** attempt);
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
