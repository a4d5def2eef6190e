/**
 * The answer-checker pool's worker thread: checks one answer per message and posts the verdict with the
 * time it took. The pool kills this thread when a check runs past its limit, so nothing here needs to be
 * interruptible.
 */
import { parentPort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { checkAnswer } from './verifiers';
import type { CheckMessage, VerdictMessage } from './answer-checker-pool';

const port = parentPort;
if (!port) throw new Error('answer-checker-worker runs only as a worker thread');

port.on('message', ({ id, kind, predicted, gold }: CheckMessage) => {
  const started = performance.now();
  let verdict: VerdictMessage['verdict'];
  try {
    verdict = checkAnswer(kind, predicted, gold);
  } catch {
    // A checker bug on a model's output is that output's problem, never the stage's.
    verdict = 'unparsable';
  }
  port.postMessage({ id, verdict, ms: performance.now() - started } satisfies VerdictMessage);
});
port.postMessage('ready');
