/**
 * Runs the learning tests first, then jest's own order (slowest first from its timing cache, else the largest
 * files). On a fresh machine jest has no timings and the learning tests are small files that take the longest
 * (minutes of training each), so by size they start last and the whole run waits for them on one worker.
 */
import Sequencer from '@jest/test-sequencer';

const isLearningTest = (test) => /learning\.test\.ts$/.test(test.path);

class LearningFirstSequencer extends Sequencer {
  sort(tests) {
    const ordered = super.sort(tests);
    return [...ordered.filter(isLearningTest), ...ordered.filter((t) => !isLearningTest(t))];
  }
}

export default LearningFirstSequencer;
