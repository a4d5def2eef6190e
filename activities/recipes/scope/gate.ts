import type { RunConfig } from '../../../config/schema';
import { scopeSolverSearch } from './search';
import type {
  Candidate,
  CandidateStatus,
  GatedCandidate,
  ScopeGated,
  ScopeProposal,
  ScopeUnit,
} from './records';

/**
 * The gate stage (scope.md §1 steps 3–5) as CPU work: the judge's calls ran in propose, next to the
 * Challenger's, so here each candidate only gets its verdict and, when valid, the Solver's prompt (the
 * question alone, never the document) and the rubrics it is graded against.
 */
export function gateScope(config: RunConfig, plan: ScopeUnit[], proposals: ScopeProposal[]): ScopeGated[] {
  const units = new Set(plan.map((u) => u.unit));
  return proposals.map((p): ScopeGated => {
    if (!units.has(p.unit)) throw new Error(`gate: proposal for unit ${p.unit} has no plan unit`);
    return {
      unit: p.unit,
      docIndex: p.docIndex,
      candidates: p.candidates.map((c): GatedCandidate => {
        const status = candidateStatus(c);
        if (status !== 'valid' || c.task === undefined) return { status };
        return {
          status,
          question: c.task,
          solverMessages: scopeSolverSearch(config, c.task).messages,
          rubrics: c.rubrics?.items ?? [],
        };
      }),
    };
  });
}

/** The first check a candidate fails, in the order the stages apply them; `valid` when none. */
function candidateStatus(c: Candidate): CandidateStatus {
  if (c.format.score === 0) return 'no_format';
  if (c.task === undefined) return 'no_task';
  if (!c.gates || c.gates.identifiability.value === 0) return 'gate_identifiability';
  if (c.gates.relevance.value === 0) return 'gate_relevance';
  if (!c.rubrics || c.rubrics.items.length === 0) return 'rubrics_invalid';
  return 'valid';
}
