export { selfPlayRun } from './selfPlayRun';
export { selfPlayIteration } from './selfPlayIteration';
