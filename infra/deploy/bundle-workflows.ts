/**
 * Builds the workflow bundle ahead of time: `tsx infra/deploy/bundle-workflows.ts OUT.js`. A worker started
 * with SELFPLAY_WORKFLOW_BUNDLE=OUT.js loads it instead of running webpack at start (seconds per pod, and
 * a writable file system it would otherwise need).
 */
import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error('usage: tsx infra/deploy/bundle-workflows.ts OUT.js');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  writeFileSync(out, code);
  console.log(`workflow bundle: ${out} (${(code.length / 1024).toFixed(0)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
