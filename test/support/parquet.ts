import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { KERNEL_PYTHON } from './kernel-process';

/** The kernel package of this checkout, for the Python the input reader starts (the venv's may be another's). */
export const KERNELS = path.resolve(__dirname, '../../infra/kernels');

/** Points the Parquet reader's Python at this checkout's kernel package; returns the undo. */
export function useCheckoutKernel(): () => void {
  const saved = process.env.PYTHONPATH;
  process.env.PYTHONPATH = KERNELS;
  return () => {
    if (saved === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = saved;
  };
}

/** Converts a JSONL file to Parquet with the kernel's writer, `rowGroupRows` rows a row group. */
export async function jsonlToParquet(jsonl: string, parquet: string, rowGroupRows = 10_000): Promise<void> {
  const child = spawn(
    KERNEL_PYTHON,
    ['-m', 'selfplay_kernel.parquet_rows', 'write', parquet, '--row-group-rows', String(rowGroupRows)],
    { stdio: ['pipe', 'inherit', 'inherit'], env: { ...process.env, PYTHONPATH: KERNELS } },
  );
  const exited = once(child, 'close') as Promise<[number | null]>;
  await pipeline(createReadStream(jsonl), child.stdin);
  const [code] = await exited;
  if (code !== 0) throw new Error(`converting ${jsonl} to Parquet exited with ${code}`);
}
