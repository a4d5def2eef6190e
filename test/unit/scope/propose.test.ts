import type { ChatRequest, LlmCaller } from '../../../activities/clients/inference';
import { SCOPE_CALLS } from '../../../activities/clients/llm-protocol';
import { gateScope } from '../../../activities/recipes/scope/gate';
import { proposeScope } from '../../../activities/recipes/scope/propose';
import type { ScopeUnit } from '../../../activities/recipes/scope/records';
import { configFor, recipeTestContext, scriptedCaller } from '../../support/recipe-harness';
import { fakeRetriever } from '../../support/search-fakes';

const unit: ScopeUnit = {
  unit: 0,
  docIndex: 0,
  segmentId: 'hoover#0',
  docId: 'hoover',
  text: 'Hoover Dam was built between 1931 and 1936.',
  taskType: 'long_form_qa',
  searchBudget: 1,
};

/** A Challenger that searches once, then (continuing its message) writes `task`. */
const challenger = (task: string): LlmCaller => ({
  chat: (req: ChatRequest) =>
    Promise.resolve([
      {
        content: req.continueFinalMessage
          ? `<think>done</think><task><question>${task}</question>`
          : '<think>look up</think><search>Lake Mead',
        finishReason: 'stop',
      },
    ]),
});

const RUBRICS =
  '<rubrics><rubric>Identifies A.</rubric><rubric>Explains B.</rubric><rubric>Gives C.</rubric></rubrics>';

function setUp(overrides: Record<string, unknown>, verdicts: { relevance?: 0 | 1; rubrics?: string } = {}) {
  const config = configFor({ recipe: 'scope', groupSize: 2, ...overrides });
  const judge = scriptedCaller((req) =>
    req.call === SCOPE_CALLS.rubrics
      ? (verdicts.rubrics ?? RUBRICS)
      : `<think>ok</think><score>${req.call === SCOPE_CALLS.gateRelevance ? (verdicts.relevance ?? 1) : 1}</score>`,
  );
  const retriever = fakeRetriever();
  const ctx = recipeTestContext(
    config,
    (role) => (role === 'judge' ? judge.llm : challenger('How did Lake Mead change the region?')),
    { retriever },
  );
  return { config, ctx, judge, retriever };
}

describe('SCOPE propose: the Challenger, then the judge', () => {
  test.each([
    ['source', false],
    ['source_and_retrieved', true],
  ] as const)(
    'rubricContext %s: retrieved passages in the rubric prompt: %s',
    async (rubricContext, retrieved) => {
      const { config, ctx, judge, retriever } = setUp({ scope: { rubricContext } });
      const proposal = await proposeScope(ctx, unit);
      expect(retriever.queries).toEqual(['Lake Mead', 'Lake Mead']);
      for (const c of proposal.candidates) {
        expect(c.task).toBe('How did Lake Mead change the region?');
        expect(c.format).toEqual({ think: 1, tool: 1, structure: 1, score: 1 });
        expect(c.rubrics?.items).toEqual(['Identifies A.', 'Explains B.', 'Gives C.']);
      }
      const rubricPrompts = judge.calls.filter((c) => c.call === SCOPE_CALLS.rubrics);
      expect(rubricPrompts).toHaveLength(2);
      for (const r of rubricPrompts) {
        expect(r.temperature).toBe(0);
        expect(r.messages[0]!.content).toContain(unit.text);
        expect(r.messages[0]!.content.includes('About Lake Mead.')).toBe(retrieved);
      }
      expect(gateScope(config, [unit], [proposal])[0]!.candidates.map((c) => c.status)).toEqual([
        'valid',
        'valid',
      ]);
    },
  );

  test('a failed gate asks for no rubrics; too few rubrics make the task invalid', async () => {
    const failed = setUp({}, { relevance: 0 });
    const p1 = await proposeScope(failed.ctx, unit);
    expect(failed.judge.calls.filter((c) => c.call === SCOPE_CALLS.rubrics)).toHaveLength(0);
    expect(gateScope(failed.config, [unit], [p1])[0]!.candidates.map((c) => c.status)).toEqual([
      'gate_relevance',
      'gate_relevance',
    ]);

    const few = setUp({}, { rubrics: '<rubrics><rubric>Only one.</rubric></rubrics>' });
    const p2 = await proposeScope(few.ctx, unit);
    expect(gateScope(few.config, [unit], [p2])[0]!.candidates.map((c) => c.status)).toEqual([
      'rubrics_invalid',
      'rubrics_invalid',
    ]);
  });
});
