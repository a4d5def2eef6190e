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
