import { composeBatch, type ScoredItem, type VerifierGroup } from '../../../activities/recipes/spell/compose';
import { SPELL_TASKS, type SpellTask } from '../../../activities/recipes/spell/records';
import { seededRng } from '../../../activities/lib/rng';

const G = 8;
let next = 0;
const item = (
  task: SpellTask,
  status: ScoredItem['status'],
  solved = 0,
  verifierGroups: VerifierGroup[] = [],
): ScoredItem => ({
  docIndex: next++,
  task,
  status,
  questionerReward: status === 'bad_format' ? -1 : status === 'bad_ground' ? -0.5 : 0,
  responderRewards: status === 'valid' ? Array.from({ length: G }, (_, i) => (i < solved ? 1 : 0)) : [],
  verifierGroups,
});
const group = (response: number, agreement: number, consistent = true): VerifierGroup => ({
  response,
  rewards: [],
  agreement,
  consistent,
});
const options = {
  responderGroups: 128,
  verifierRatio: 0.125,
  agreement: { min: 0.51, max: 0.99 },
  consistency: true,
};
const rng = () => seededRng('compose-test');

describe('role-specific sampling (§4)', () => {
  beforeEach(() => {
    next = 0;
  });

  test('responder: groups with std > 0 only, truncated to N in plan order', () => {
    const items = [
      item('general_qa', 'valid', 3),
      item('general_qa', 'valid', 8), // all correct: zero variance
      item('general_qa', 'valid', 0), // all wrong: zero variance
      item('financial_math', 'valid', 1),
      item('multiple_choice', 'valid', 7),
      item('multiple_choice', 'bad_format'),
    ];
    const all = composeBatch(items, options, rng());
    expect(all.responder.map((q) => q.docIndex)).toEqual([0, 3, 4]);
    expect(all.solvable).toBe(3);
    const truncated = composeBatch([...items].reverse(), { ...options, responderGroups: 2 }, rng());
    expect(truncated.responder.map((q) => q.docIndex)).toEqual([0, 3]);
  });

  test('questioner: negatives paired 1:1 per task with the positives, from bad format, ungrounded and zero variance', () => {
    const items = [
      // general QA: 2 positives, 5 possible negatives
      item('general_qa', 'valid', 2),
      item('general_qa', 'valid', 5),
      item('general_qa', 'bad_format'),
      item('general_qa', 'bad_ground'),
      item('general_qa', 'valid', 0),
      item('general_qa', 'valid', 8),
      item('general_qa', 'bad_format'),
      // financial math: 3 positives, 1 possible negative
      item('financial_math', 'valid', 1),
      item('financial_math', 'valid', 4),
      item('financial_math', 'valid', 6),
      item('financial_math', 'bad_ground'),
      // MC: no positive, so none of its negatives
      item('multiple_choice', 'bad_format'),
      item('multiple_choice', 'valid', 8),
    ];
    const c = composeBatch(items, options, rng());
    const count = (task: SpellTask, positive: boolean) =>
      c.questioner.filter((q) => q.task === task && c.responder.includes(q) === positive).length;
    expect(count('general_qa', true)).toBe(2);
    expect(count('general_qa', false)).toBe(2);
    expect(count('financial_math', true)).toBe(3);
    expect(count('financial_math', false)).toBe(1);
    expect(c.questioner.filter((q) => q.task === 'multiple_choice')).toEqual([]);
    for (const q of c.questioner.filter((x) => !c.responder.includes(x)))
      expect(q.status !== 'valid' || new Set(q.responderRewards).size === 1).toBe(true);
    // Deterministic in the rng.
    expect(composeBatch(items, options, rng()).questioner).toEqual(c.questioner);
  });

  test('verifier: consistent, non-unanimous groups, ⌊N·G·0.125/G⌋ of them', () => {
    const groups = [
      group(0, 0.75),
      group(1, 1), // unanimous
      group(2, 0.5), // below 0.51
      group(3, 0.875, false), // majority disagrees with the rule
      group(4, 0.625),
      group(5, 0.99),
      group(6, 0.51),
    ];
    // 16 responder groups → 16 × 8 × 0.125 / 8 = 2 verifier groups.
    const items = [
      item('general_qa', 'valid', 4, groups),
      ...Array.from({ length: 15 }, () => item('financial_math', 'valid', 4)),
    ];
    const c = composeBatch(items, options, rng());
    expect(c.verifierTarget).toBe(2);
    expect(c.verifierCandidates).toBe(4);
    expect(c.verifier).toHaveLength(2);
    for (const v of c.verifier) expect([0, 4, 5, 6]).toContain(v.group.response);
    // Without the consistency filter the inconsistent group is a candidate too.
    expect(composeBatch(items, { ...options, consistency: false }, rng()).verifierCandidates).toBe(5);
  });

  test('verifier: skipped when there are fewer candidates than the target', () => {
    const items = Array.from({ length: 16 }, (_, i) =>
      item('general_qa', 'valid', 4, i === 0 ? [group(0, 0.75)] : []),
    );
    const c = composeBatch(items, options, rng());
    expect(c.verifierTarget).toBe(2);
    expect(c.verifierCandidates).toBe(1);
    expect(c.verifier).toEqual([]);
  });

  test('the spec’s full-size counts: 128 groups → 1024 responder, 128 + 128 questioner, 16 verifier groups', () => {
    const items = [
      ...Array.from({ length: 150 }, (_, i) =>
        item(SPELL_TASKS[i % 3] as SpellTask, 'valid', 1 + (i % 7), [group(0, 0.75), group(1, 0.625)]),
      ),
      ...Array.from({ length: 300 }, (_, i) =>
        item(SPELL_TASKS[i % 3] as SpellTask, i % 2 ? 'bad_format' : 'bad_ground'),
      ),
    ];
    const c = composeBatch(items, options, rng());
    expect(c.responder).toHaveLength(128);
    expect(c.responder.flatMap((q) => q.responderRewards)).toHaveLength(1024);
    expect(c.questioner).toHaveLength(256);
    expect(c.verifier).toHaveLength(16);
  });
});
