import { readFile } from 'node:fs/promises';

/**
 * The peak resident memory of a process and its descendants (e.g. a plan and the Python reading its Parquet
 * corpus), from Linux's /proc: every `everyMs` the tree is walked and each process's own high-water mark
 * (VmHWM) kept. `stop()` returns the sum of the marks in MB, an upper bound of the tree's peak (the processes'
 * peaks need not coincide); a process born and gone between two walks is missed.
 */
export function watchTreeMemory(pid: number, everyMs = 100): { stop(): Promise<number> } {
  const marks = new Map<number, number>();
  let walking = Promise.resolve();
  const timer = setInterval(() => {
    walking = walking.then(() => walk(pid, marks));
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await walking;
      return [...marks.values()].reduce((a, b) => a + b, 0) / 1024;
    },
  };
}

async function walk(pid: number, marks: Map<number, number>): Promise<void> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  if (status === undefined) return;
  const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  marks.set(pid, Math.max(marks.get(pid) ?? 0, kb));
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  for (const child of children.split(/\s+/).filter(Boolean)) await walk(Number(child), marks);
}
