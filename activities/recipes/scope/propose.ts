import type { RecipeContext } from '../types';
import type { ChatMessage } from '../../clients/trainer-contract';
import { SCOPE_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { askBinaryJudge } from '../../judges/binary';
import type { Trajectory } from '../../tools/types';
import { parseRubrics, parseTask } from './parse';
import {
  challengerMessages,
  identifiabilityMessages,
  relevanceMessages,
  rubricMessages,
  SEARCHES_COMPLETE,
} from './prompts';
import { challengerFormat } from './rewards';
import { searchTrajectory } from './search';
import { isSolverStep } from './schedule';
import {
  CHALLENGER,
  JUDGE,
  type Candidate,
  type GateVerdicts,
  type ScopeProposal,
  type ScopeUnit,
} from './records';

/**
 * Stage 1, steps 2–5a (scope.md §1) for one document: G Challenger trajectories (one candidate task in a
 * Solver step, stage 2, where the Challenger only writes the tasks to select from), each searching exactly
 * its budget (a further search is answered "searches complete") before writing `<task>`; then, for every
 * task (having one makes r_fmt > 0, §1 step 3), the frozen judge's two quality gates and, when both pass,
 * its rubrics (T = 0). The judge's calls run here, on the rollout pool with the Challenger's, so the gate
 * stage stays CPU work.
 */
export async function proposeScope(ctx: RecipeContext, unit: ScopeUnit): Promise<ScopeProposal> {
  const { config } = ctx;
  const messages = challengerMessages(unit.text, unit.taskType, unit.searchBudget, config.scope.searchSyntax);
  const candidates = await Promise.all(
    Array.from({ length: candidatesPerDocument(ctx) }, async (_, k): Promise<Candidate> => {
      const trajectory = await searchTrajectory(ctx, {
        role: CHALLENGER,
        call: SCOPE_CALLS.challenger,
        messages,
        finalTags: ['task'],
        // The budgeted searches, one over the budget (answered with the notice), and the task.
        maxTurns: unit.searchBudget + 2,
        searchLimit: { after: unit.searchBudget, notice: SEARCHES_COMPLETE },
        checkpoint: { unit: unit.unit, name: `challenger-${k}` },
        seedParts: ['scope-challenger', unit.docIndex, k],
      });
      return judgeCandidate(ctx, unit, trajectory, k);
    }),
  );
  return { unit: unit.unit, docIndex: unit.docIndex, messages, candidates };
}

const candidatesPerDocument = (ctx: RecipeContext): number =>
  isSolverStep(ctx.config, ctx.iteration) ? 1 : ctx.config.groupSize;

async function judgeCandidate(
  ctx: RecipeContext,
  unit: ScopeUnit,
  trajectory: Trajectory,
  k: number,
): Promise<Candidate> {
  const task = parseTask(trajectory.turns.at(-1)?.text ?? '');
  const format = challengerFormat(trajectory.turns, unit.searchBudget, task !== undefined);
  const head = { trajectory, format, ...(task === undefined ? {} : { task }) };
  if (task === undefined) return head;
  const gates = await qualityGates(ctx, unit, task, k);
  if (!gates.identifiability.value || !gates.relevance.value) return { ...head, gates };
  const documents =
    ctx.config.scope.rubricContext === 'source'
      ? [unit.text]
      : [unit.text, ...new Set(trajectory.passages.map((p) => p.text))];
  const completion = await writeRubrics(ctx, unit, task, documents, k);
  return {
    ...head,
    gates,
    rubrics: { completion, items: parseRubrics(completion, ctx.config.scope.rubrics) },
  };
}

/** QG(q, d) (§1 step 4): entity identifiability (from q alone) and source relevance (q against d). */
async function qualityGates(
  ctx: RecipeContext,
  unit: ScopeUnit,
  task: string,
  k: number,
): Promise<GateVerdicts> {
  const { config, iteration, signal } = ctx;
  const { temperature, maxTokens } = config.scope.judgeSampling.gate;
  const ask = (call: string, messages: ChatMessage[], what: string) =>
    askBinaryJudge(ctx.llm(JUDGE), {
      role: JUDGE,
      call,
      messages,
      seed: seedOf(config.seed, iteration, what, unit.docIndex, k),
      temperature,
      topP: 1,
      maxTokens,
      signal,
    });
  const [identifiability, relevance] = await Promise.all([
    ask(SCOPE_CALLS.gateIdentifiability, identifiabilityMessages(task), 'scope-gate-identifiability'),
    ask(SCOPE_CALLS.gateRelevance, relevanceMessages(unit.text, task), 'scope-gate-relevance'),
  ]);
  return { identifiability, relevance };
}

/** The judge's rubrics for a task that passed both gates (§4), greedy by default (§2 Judge settings). */
async function writeRubrics(
  ctx: RecipeContext,
  unit: ScopeUnit,
  task: string,
  documents: string[],
  k: number,
): Promise<string> {
  const { config, iteration, signal } = ctx;
  const { temperature, maxTokens } = config.scope.judgeSampling.rubrics;
  const [sample] = await ctx.llm(JUDGE).chat({
    role: JUDGE,
    call: SCOPE_CALLS.rubrics,
    messages: rubricMessages(unit.taskType, task, documents),
    n: 1,
    seed: seedOf(config.seed, iteration, 'scope-rubrics', unit.docIndex, k),
    temperature,
    topP: 1,
    maxTokens,
    signal,
  });
  return sample?.content ?? '';
}
