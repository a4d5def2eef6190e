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

/** The SPELL calls (docs/recipes/spell.md): one policy as questioner, responder and verifier. */
export const SPELL_CALLS = {
  questioner: 'spell.questioner',
  /** The responder with the documents replaced by "Empty": the grounding filter. */
  grounding: 'spell.grounding',
  responder: 'spell.responder',
  verifier: 'spell.verifier',
} as const;

/** The MAE calls (docs/recipes/mae.md): one policy as proposer, solver and judge. */
export const MAE_CALLS = {
  proposer: 'mae.proposer',
  judgeQuestion: 'mae.judge_question',
  solver: 'mae.solver',
  judgeAnswer: 'mae.judge_answer',
} as const;

/** The SSP calls (docs/recipes/ssp.md): one policy as proposer and solver; the verifier and judge are helpers. */
export const SSP_CALLS = {
  /** One assistant turn of the proposer's search trajectory. */
  proposer: 'ssp.proposer',
  /** RAG verification: one answer from the materials, without search. */
  ragVerifier: 'ssp.rag_verifier',
  /** The judge, when the RAG answer misses exact match. */
  verificationJudge: 'ssp.verification_judge',
  /** One assistant turn of a solver's search trajectory. */
  solver: 'ssp.solver',
  /** The judge, when a solver's answer misses exact match. */
  judge: 'ssp.judge',
} as const;

/** Held-out evaluation (benchmarks, in a run or by `selfplay eval`; a lineage's checkpoints): n answers per question. */
export const EVAL_CALLS = {
  answer: 'eval.answer',
  /** A turn of a search agent's trajectory (`evaluation.rollout: "search"`). */
  search: 'eval.search',
} as const;

/**
 * The SCOPE calls (docs/recipes/scope.md): the Challenger's and the Solver's search trajectories (one request
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
