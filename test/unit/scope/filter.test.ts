import type { Trajectory, TrajectoryTurn } from '../../../activities/tools/types';
import type { BinaryScore } from '../../../activities/judges/binary';
import { groupAdvantages } from '../../../activities/scoring/advantages';
import { filterScope } from '../../../activities/recipes/scope/filter';
import { gateScope } from '../../../activities/recipes/scope/gate';
import { challengerReward, lengthPenalty, solverReward } from '../../../activities/recipes/scope/rewards';
import type {
  Candidate,
  GateVerdicts,
  ScopeJudged,
  ScopeProposal,
  ScopeSolved,
  ScopeUnit,
} from '../../../activities/recipes/scope/records';
import { configFor } from '../../support/recipe-harness';

const G = 4;
const config = configFor({ recipe: 'scope', groupSize: G, batchSize: 1 });
/** Both roles every iteration, from the same rollouts. */
const joint = configFor({
  recipe: 'scope',
  groupSize: G,
  batchSize: 1,
  scope: { schedule: { mode: 'joint' } },
});
/** The paper's stages with K = 2: iterations 1–2 the Challenger's, 3–4 the Solver's. */
const staged = configFor({
  recipe: 'scope',
  groupSize: G,
  batchSize: 1,
  scope: { schedule: { stageSteps: 2, filterRollouts: 3, solverTasks: 1 } },
});

const trajectory = (turns: TrajectoryTurn[]): Trajectory => {
  const completion = turns.map((t) => t.text + (t.observation ?? '')).join('');
  return {
    completion,
    lossMaskSpans: [[3, 7]],
    turns,
    searches: turns.flatMap((t) => (t.search?.valid ? [t.search.query] : [])),
    passages: [],
    stop: 'final',
  };
};
const search = (q: string): TrajectoryTurn => ({
  text: `<think>find ${q}</think><search>${q}</search>`,
  search: { query: q, valid: true },
  observation: '<information>…</information>',
  finishReason: 'stop',
});
const final = (text: string): TrajectoryTurn => ({ text, finishReason: 'stop' });

const pass: BinaryScore = { value: 1 };
const fail: BinaryScore = { value: 0, fallback: 'no_score_tag' };
const gates = (identifiability: BinaryScore, relevance: BinaryScore): GateVerdicts => ({
  identifiability,
  relevance,
});
const RUBRICS = ['Identifies A.', 'Explains B.', 'Compares C.', 'Provides D.'];

/** A Challenger rollout with a task (budget 1: one search, then the task). */
const challenger = (over: Partial<Candidate> = {}): Candidate => ({
  trajectory: trajectory([
    search('Hoover Dam'),
    final('<think>ok</think><task><question>Q?</question></task>'),
  ]),
  format: { think: 1, tool: 1, structure: 1, score: 1 },
  task: 'Q?',
  gates: gates(pass, pass),
  rubrics: { completion: '…', items: RUBRICS },
  ...over,
});

const unit: ScopeUnit = {
  unit: 0,
  docIndex: 0,
  segmentId: 'd#0',
  docId: 'd',
  text: 'Source',
  taskType: 'long_form_qa',
  searchBudget: 1,
};

/** Rubric bits per rollout for a task whose G rollouts meet `met[j]` of the 4 rubrics. */
const graded = (met: number[]) =>
  met.map((m) => ({
    answer: 'A'.repeat(4 * 1536),
    grades: RUBRICS.map((_, r): BinaryScore => (r < m ? pass : { value: 0 })),
  }));

describe('SCOPE filter: rewards, selection, rows', () => {
  test('Challenger group of G, the Solver group of the task nearest ḡ = 0.5 inside [0.2, 0.8]', () => {
    const candidates = [
      challenger(), // ḡ = 0.5
      challenger(), // ḡ = 0.875: outside the band
      challenger({ gates: gates(pass, fail) }), // relevance gate failed
      challenger({
        format: { think: 0, tool: 0, structure: 0, score: 0 },
        task: undefined,
        gates: undefined,
      }),
    ];
    const proposal: ScopeProposal = {
      unit: 0,
      docIndex: 0,
      messages: [{ role: 'user', content: 'P' }],
      candidates,
    };
    const [gate] = gateScope(config, [unit], [proposal]);
    expect(gate!.candidates.map((c) => c.status)).toEqual(['valid', 'valid', 'gate_relevance', 'no_format']);
    expect(gate!.candidates[0]!.solverMessages![0]!.content).toContain('Question: Q?');
    expect(gate!.candidates[0]!.solverMessages![0]!.content).not.toContain('Source');

    const solverTurns = [search('x'), final('<think>t</think><answer>A</answer>')];
    const solved: ScopeSolved = {
      unit: 0,
      docIndex: 0,
      candidates: candidates.map((_, k) => ({
        trajectories: k < 2 ? Array.from({ length: G }, () => trajectory(solverTurns)) : [],
      })),
    };
    const judged: ScopeJudged = {
      unit: 0,
      docIndex: 0,
      candidates: [
        { rollouts: graded([0, 2, 4, 2]) },
        { rollouts: graded([4, 4, 3, 3]) },
        { rollouts: [] },
        { rollouts: [] },
      ],
    };
    const shard = {
      shard: 0,
      plan: [unit],
      propose: [proposal],
      gate: [gate!],
      solve: [solved],
      judge: [judged],
    };
    const out = filterScope({ config: joint, runId: 'u', iteration: 1, state: undefined }, [shard]);

    const challengerRows = out.rows.filter((r) => r.role === 'challenger');
    const rc = [
      challengerReward(1, true, 0.5, 'eq4'),
      challengerReward(1, true, 0.875, 'eq4'),
      challengerReward(1, false, 0, 'eq4'),
      0,
    ];
    expect(rc).toEqual([1.5, 0.75, 0.5, 0]);
    expect(challengerRows.map((r) => r.reward)).toEqual(rc);
    const expectedAdvantages = groupAdvantages('grpo', rc);
    challengerRows.forEach((r, k) => expect(r.advantage).toBeCloseTo(expectedAdvantages[k]!, 12));
    expect(new Set(challengerRows.map((r) => r.group))).toEqual(new Set(['challenger/doc-0']));

    const solverRows = out.rows.filter((r) => r.role === 'solver');
    expect(solverRows).toHaveLength(G);
    expect(new Set(solverRows.map((r) => r.group))).toEqual(new Set(['solver/doc-0/task-0']));
    // 1536-token answers: L = 0.525; F = 1 (think everywhere, searched before the answer, an answer); S = 1/3.
    const rs = [0, 0.5, 1, 0.5].map((g) =>
      solverReward({
        lengthPenalty: lengthPenalty(1536, config.scope.lengthPenalty),
        score: g,
        format: 1,
        search: 1 / 3,
      }),
    );
    solverRows.forEach((r, j) => expect(r.reward).toBeCloseTo(rs[j]!, 12));
    for (const r of out.rows) expect(r.lossMaskSpans).toEqual([[3, 7]]);
    expect(solverRows[0]!.messages).toEqual(gate!.candidates[0]!.solverMessages);

    expect(out.metrics).toMatchObject({
      documents: 1,
      validTaskRate: 0.5,
      invalidReasons: { gate_relevance: 1, no_format: 1 },
      rowsByRole: { challenger: G, solver: G },
    });
    expect(out.metrics.extra).toMatchObject({
      solverTasks: 1,
      keepRate: 0.5,
      gatePassRate: 2 / 3,
      gradings: 32,
    });
    expect(out.metrics.extra.meanScore).toBeCloseTo((0.5 + 0.875) / 2, 12);

    // A Challenger step of the paper's schedule: the same rewards, but the frozen Solver's rollouts only
    // measure ḡ; nothing trains the Solver.
    const challengerStep = filterScope({ config: staged, runId: 'u', iteration: 2, state: undefined }, [
      shard,
    ]);
    expect(challengerStep.rows).toEqual(challengerRows);
    expect(challengerStep.metrics.extra).toMatchObject({ solverTasks: 0, keptTasks: 0 });
  });

  test('a Solver step trains on the fresh rollouts of the tasks its N_filter rollouts kept, up to solverTasks', () => {
    const solverTurns = [search('x'), final('<think>t</think><answer>A</answer>')];
    // Three documents, one candidate each; the first two land in the band, the third does not.
    const docs = [0, 1, 2].map((d) => {
      const u = { ...unit, unit: d, docIndex: d, segmentId: `d#${d}` };
      const proposal: ScopeProposal = { unit: d, docIndex: d, messages: [], candidates: [challenger()] };
      const [gated] = gateScope(staged, [u], [proposal]);
      const filterRollouts = Array.from({ length: 3 }, () => trajectory(solverTurns));
      const solved: ScopeSolved = { unit: d, docIndex: d, candidates: [{ trajectories: filterRollouts }] };
      const fresh = Array.from({ length: G }, () => trajectory([final('<answer>A</answer>')]));
      const training = { trajectories: fresh, rollouts: graded([4, 4, 0, 0]) };
      const judged: ScopeJudged = {
        unit: d,
        docIndex: d,
        candidates: [d < 2 ? { rollouts: graded([2, 2, 2]), training } : { rollouts: graded([4, 4, 4]) }],
      };
      return { u, proposal, gated: gated!, solved, judged };
    });
    const shard = {
      shard: 0,
      plan: docs.map((d) => d.u),
      propose: docs.map((d) => d.proposal),
      gate: docs.map((d) => d.gated),
      solve: docs.map((d) => d.solved),
      judge: docs.map((d) => d.judged),
    };
    const out = filterScope({ config: staged, runId: 'u', iteration: 3, state: undefined }, [shard]);
    // No Challenger rows; one kept task (solverTasks = 1, the first in document order) with its G fresh rows.
    expect(out.rows.map((r) => [r.role, r.group])).toEqual(
      Array.from({ length: G }, () => ['solver', 'solver/doc-0/task-0']),
    );
    expect(out.rows.map((r) => r.completion)).toEqual(
      docs[0]!.judged.candidates[0]!.training!.trajectories.map((t) => t.completion),
    );
    expect(out.metrics.extra).toMatchObject({
      keptTasks: 2,
      solverTasks: 1,
      gradings: 3 * 3 * 4 + 2 * G * 4,
    });
    expect(out.metrics.extra.meanScore).toBeCloseTo((0.5 + 0.5 + 1) / 3, 12);

    // A kept task must come with its training rollouts: a judge record without them is an error.
    const broken = {
      ...shard,
      judge: [{ ...docs[0]!.judged, candidates: [{ rollouts: graded([2, 2, 2]) }] }],
    };
    const one = { ...broken, plan: [docs[0]!.u], propose: [docs[0]!.proposal], gate: [docs[0]!.gated] };
    expect(() =>
      filterScope({ config: staged, runId: 'u', iteration: 4, state: undefined }, [
        { ...one, solve: [docs[0]!.solved] },
      ]),
    ).toThrow('document 0: task 0 was kept without training rollouts');
  });

  test('algorithm1 reading pays r_fmt for a gate failure; no task in the band trains no Solver', () => {
    const cfg = configFor({
      recipe: 'scope',
      groupSize: G,
      batchSize: 1,
      scope: { gateFailReward: 'algorithm1', schedule: { mode: 'joint' } },
    });
    const candidates = [challenger({ gates: gates(fail, pass) }), challenger(), challenger(), challenger()];
    const proposal: ScopeProposal = { unit: 0, docIndex: 0, messages: [], candidates };
    const [gate] = gateScope(cfg, [unit], [proposal]);
    const solved: ScopeSolved = {
      unit: 0,
      docIndex: 0,
      candidates: candidates.map((_, k) => ({
        trajectories: k === 0 ? [] : Array.from({ length: G }, () => trajectory([])),
      })),
    };
    const all = { rollouts: graded([4, 4, 4, 4]) };
    const judged: ScopeJudged = { unit: 0, docIndex: 0, candidates: [{ rollouts: [] }, all, all, all] };
    const out = filterScope({ config: cfg, runId: 'u', iteration: 1, state: undefined }, [
      { shard: 0, plan: [unit], propose: [proposal], gate: [gate!], solve: [solved], judge: [judged] },
    ]);
    expect(out.rows.map((r) => r.reward)).toEqual([1, 0.5, 0.5, 0.5]);
    expect(out.rows.every((r) => r.role === 'challenger')).toBe(true);
    expect(out.metrics.passRateHistogram[G]).toBe(3);
  });

  test('a valid task with fewer graded rollouts than G is an error, not a silent reward', () => {
    const proposal: ScopeProposal = {
      unit: 0,
      docIndex: 0,
      messages: [],
      candidates: [challenger(), challenger()],
    };
    const [gate] = gateScope(config, [unit], [proposal]);
    const solved: ScopeSolved = {
      unit: 0,
      docIndex: 0,
      candidates: [{ trajectories: [] }, { trajectories: [] }],
    };
    const judged: ScopeJudged = {
      unit: 0,
      docIndex: 0,
      candidates: [{ rollouts: graded([1]) }, { rollouts: [] }],
    };
    expect(() =>
      filterScope({ config, runId: 'u', iteration: 1, state: undefined }, [
        { shard: 0, plan: [unit], propose: [proposal], gate: [gate!], solve: [solved], judge: [judged] },
      ]),
    ).toThrow(/graded rollouts, expected 4/);
  });
});
