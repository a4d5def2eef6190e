import { readFileSync } from 'node:fs';
import { scopeGrader, type ScopeGraderMode, type ScopeGraderWorld } from '../../infra/toy-world/scope-grader';
import { userText, type CallBehaviour } from './scripted-llm/completion';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm/server';

/**
 * SCOPE's frozen judge for a toy-world run (`inference.roles.judge`, model `scripted-policy`): an
 * OpenAI-compatible server whose judge calls are answered by the world's rule-based grader (scope-grader.ts),
 * through the scripted server, so requests, seeds and the call header are handled as for every scripted model.
 */
export function startScopeGrader(world: ScopeGraderWorld, mode: ScopeGraderMode): Promise<ScriptedLlm> {
  const grader = scopeGrader(world, mode);
  const behaviours: Record<string, CallBehaviour> = Object.fromEntries(
    grader.calls.map((call) => [call, { answer: (ctx) => grader.answer(call, userText(ctx), ctx.seed) }]),
  );
  return startScriptedLlm({ behaviours });
}

/** The grader of a world whose documents are the JSONL corpus `corpus` (`{"text"}` per line). */
export function startScopeGraderOf(corpus: string, mode: ScopeGraderMode): Promise<ScriptedLlm> {
  const documents = readFileSync(corpus, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { text: string });
  return startScopeGrader({ documents }, mode);
}
