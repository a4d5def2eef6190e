import { spawn } from 'node:child_process';
import { KERNEL_PYTHON } from '../test/support/kernel-process';

/**
 * The kernel's own benchmark (infra/kernels/selfplay_kernel/bench.py): train-step and sampler throughput for
 * a fixed tiny config on CPU, and a larger one on CUDA where a GPU is present. Its last line is
 * `kernel_train_tokens_per_s <n>`. Extra arguments go to the Python benchmark.
 */
export function main(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(KERNEL_PYTHON, ['-m', 'selfplay_kernel.bench', ...args], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`kernel benchmark exited with ${code}`)),
    );
  });
}
