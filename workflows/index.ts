export { selfPlayRun } from './selfPlayRun';
export { selfPlayIteration } from './selfPlayIteration';
export { continualTraining } from './continualTraining';
export { evaluateCheckpoint } from './evaluateCheckpoint';
