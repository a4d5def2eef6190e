/**
 * Headers the inference client adds to every chat completion. Real engines ignore them; they let logs,
 * proxies and the scripted test server tell which recipe role and which call a request serves.
 */
export const ROLE_HEADER = 'x-selfplay-role';
export const CALL_HEADER = 'x-selfplay-call';

/** The SPICE calls, by the value of CALL_HEADER. */
export const SPICE_CALLS = {
  typeSelection: 'spice.type_selection',
  mcq: 'spice.challenger_mcq',
  freeForm: 'spice.challenger_free_form',
  reason: 'spice.reasoner',
} as const;

/** The SPELL calls (shared/specs/spell.md): one policy as questioner, responder and verifier. */
export const SPELL_CALLS = {
  questioner: 'spell.questioner',
  /** The responder with the documents replaced by "Empty": the grounding filter. */
  grounding: 'spell.grounding',
  responder: 'spell.responder',
  verifier: 'spell.verifier',
} as const;

/** The MAE calls (shared/specs/mae.md): one policy as proposer, solver and judge. */
export const MAE_CALLS = {
  proposer: 'mae.proposer',
  judgeQuestion: 'mae.judge_question',
  solver: 'mae.solver',
  judgeAnswer: 'mae.judge_answer',
} as const;

/**
 * The SCOPE calls (shared/specs/scope.md): the Challenger's and the Solver's search trajectories (one request
 * per turn), and the frozen judge's two quality gates, rubric writing and per-rubric grading.
 */
export const SCOPE_CALLS = {
  challenger: 'scope.challenger',
  gateIdentifiability: 'scope.gate_identifiability',
  gateRelevance: 'scope.gate_relevance',
  rubrics: 'scope.rubrics',
  solver: 'scope.solver',
  grade: 'scope.grade',
} as const;
