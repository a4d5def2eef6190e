import { askedSum, refutesArithmetic } from '../../../activities/recipes/spice/arithmetic';
import { gateSpice } from '../../../activities/recipes/spice/gate';
import type { SpiceProposal } from '../../../activities/recipes/spice/records';

describe('refuting a stated answer by arithmetic', () => {
  test('plain integer sums and differences are computed exactly', () => {
    expect(askedSum('What is 37 + 48?')).toBe(85n);
    expect(askedSum('Compute 12 - 5 + 3.')).toBe(10n);
    expect(askedSum('what is -4 + 10')).toBe(6n);
    expect(askedSum('What is 99999999999999999999 + 1?')).toBe(100000000000000000000n);
  });

  test('other questions are never refuted', () => {
    expect(askedSum('What is 3 * 4?')).toBeUndefined();
    expect(askedSum('How many crates do North and South hold?')).toBeUndefined();
    expect(askedSum('What is 37?')).toBeUndefined();
    expect(refutesArithmetic('Which river is longest?', '9')).toBe(false);
  });

  test('a wrong or non-integer answer to a sum is refuted, the right one is not', () => {
    expect(refutesArithmetic('What is 9 + 8?', '9')).toBe(true);
    expect(refutesArithmetic('What is 9 + 8?', 'seventeen')).toBe(true);
    expect(refutesArithmetic('What is 9 + 8?', '17')).toBe(false);
    expect(refutesArithmetic('What is 9 + 8?', ' +17 ')).toBe(false);
  });

  test('the gate marks such tasks invalid only when the option is on', () => {
    const proposal: SpiceProposal = {
      unit: 0,
      docIndex: 0,
      docId: 'depot-000000',
      format: 'free_form',
      answerType: 'Integer',
      trajectories: [
        {
          completion: '{"question":"What is 9 + 8?","answer":9,"answer_type":"Integer"}',
          finishReason: 'stop',
        },
        {
          completion: '{"question":"What is 9 + 8?","answer":17,"answer_type":"Integer"}',
          finishReason: 'stop',
        },
      ],
    } as unknown as SpiceProposal;
    const [on] = gateSpice([], [proposal], { refuteArithmetic: true, requireAnswerInDocument: false });
    expect(on?.verdicts.map((v) => (v.valid ? 'valid' : v.reason))).toEqual(['wrong_arithmetic', 'valid']);
    const [off] = gateSpice([], [proposal], { refuteArithmetic: false, requireAnswerInDocument: false });
    expect(off?.verdicts.map((v) => v.valid)).toEqual([true, true]);
  });

  test('with requireAnswerInDocument, an answer the document does not state is invalid', () => {
    const proposal = {
      unit: 0,
      docIndex: 3,
      docId: 'depot-000003',
      format: 'free_form',
      answerType: 'Integer',
      trajectories: [
        {
          completion: '{"question":"What is 3 + 5?","answer":8,"answer_type":"Integer"}',
          finishReason: 'stop',
        },
        {
          completion: '{"question":"What is 30 + 51?","answer":81,"answer_type":"Integer"}',
          finishReason: 'stop',
        },
      ],
    } as unknown as SpiceProposal;
    const plan = [
      {
        unit: 0,
        docIndex: 3,
        segmentId: 'depot-000003#0',
        docId: 'depot-000003',
        text: 'North and east hold 81 crates; 18 in all.',
      },
    ] as unknown as Parameters<typeof gateSpice>[0];
    const [gated] = gateSpice(plan, [proposal], { refuteArithmetic: true, requireAnswerInDocument: true });
    expect(gated?.verdicts.map((v) => (v.valid ? 'valid' : v.reason))).toEqual([
      'answer_not_in_document',
      'valid',
    ]);
  });
});
