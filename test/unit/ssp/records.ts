import type {
  SspGated,
  SspJudged,
  SspProposal,
  SspSolved,
  SspUnit,
  StoredTrajectory,
} from '../../../activities/recipes/ssp/records';

/** Small builders of SSP stage records for the unit tests. */

export const GOOD_QUESTION =
  'Which river town was founded by the cartographer who was born in Tessing in 1598?';

export function trajectory(searches: string[], information: string[], tail = ''): StoredTrajectory {
  let completion = '';
  const lossMaskSpans: Array<[number, number]> = [];
  searches.forEach((q, i) => {
    completion += `<think>step</think><search> ${q} </search>`;
    const obs = `\n<information>\n${information[i] ?? ''}</information>\n\n`;
    const start = [...completion].length;
    completion += obs;
    lossMaskSpans.push([start, start + [...obs].length]);
  });
  completion += tail;
  return {
    completion,
    lossMaskSpans,
    searches,
    information: information.slice(0, searches.length),
    stop: 'final',
  };
}

export const unit = (i: number, answer = `Answer${i}`): SspUnit => ({
  unit: i,
  docIndex: i,
  answer,
  searchTurns: 2,
  examples: [],
});

export function proposal(i: number, question: string | null, searches = ['q one', 'q two']): SspProposal {
  return {
    unit: i,
    docIndex: i,
    messages: [{ role: 'user', content: `answer ${i}` }],
    trajectory: trajectory(
      searches,
      searches.map((s) => `Doc 1 (Title: "${s}") info for unit ${i}\n`),
      question === null ? '' : `<question>${question}</question>`,
    ),
    question,
  };
}

export interface ItemSpec {
  i: number;
  /** undefined: the rule filter rejects; else whether RAG verification passed. */
  verified?: boolean;
  /** Solver rewards; [] for no solver group. */
  rewards: number[];
  source: SspSolved['source'];
}

/** One unit's records through every stage, as the filter reads them. */
export function item(spec: ItemSpec): {
  plan: SspUnit;
  propose: SspProposal;
  gate: SspGated;
  solve: SspSolved;
  judge: SspJudged;
} {
  const { i } = spec;
  const plan = unit(i);
  const ruleOk = spec.verified !== undefined;
  const propose = proposal(i, ruleOk ? `${GOOD_QUESTION} (${i})` : null);
  const gate: SspGated = {
    unit: i,
    docIndex: i,
    answer: plan.answer,
    ...(ruleOk
      ? { question: propose.question ?? '', rule: { passed: true } }
      : { rule: { passed: false, reason: 'no_question' } }),
  };
  const problem =
    spec.source === 'own'
      ? { question: propose.question ?? '', answer: plan.answer }
      : spec.source === 'replay'
        ? { question: 'a replayed question', answer: 'replayed' }
        : undefined;
  const solve: SspSolved = {
    unit: i,
    docIndex: i,
    ...(ruleOk
      ? {
          verification: {
            completion: 'Answer: x',
            answer: 'x',
            exactMatch: spec.verified === true,
            passed: spec.verified === true,
            ...(spec.verified ? {} : { failure: 'wrong_answer' as const }),
          },
        }
      : {}),
    source: spec.source,
    ...(problem ? { problem, messages: [{ role: 'user' as const, content: problem.question }] } : {}),
    trajectories: spec.rewards.map((_, j) => trajectory(['s1', 's2'], ['i1', 'i2'], `<answer>${j}</answer>`)),
  };
  const judge: SspJudged = {
    unit: i,
    docIndex: i,
    answers: spec.rewards.map((reward, j) => ({
      answer: `${j}`,
      exactMatch: reward > 0,
      answerTags: 1,
      reward,
    })),
  };
  return { plan, propose, gate, solve, judge };
}
