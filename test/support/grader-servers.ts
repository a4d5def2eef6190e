import { readFileSync } from 'node:fs';
import { scopeGrader, type ScopeGraderMode, type ScopeGraderWorld } from '../../infra/toy-world/scope-grader';
import { sspGrader } from '../../infra/toy-world/ssp-grader';
import { BodyError } from './http-json';
import { userText, type CompletionContext } from './scripted-llm/completion';
import { startScriptedLlm, type ScriptedLlm } from './scripted-llm/server';

/**
 * The search worlds' frozen graders as OpenAI-compatible servers (model `scripted-policy`): the scripted
 * server with the grader's calls answered by its rules, so requests, seeds and the call header are handled as
 * for every scripted model. A call the grader answers whose prompt it cannot read is refused with a 400.
 */
function startGrader(
  calls: readonly string[],
  reply: (call: string, ctx: CompletionContext) => string | undefined,
): Promise<ScriptedLlm> {
  const answer = (call: string) => (ctx: CompletionContext) => {
    const text = reply(call, ctx);
    if (text === undefined)
      throw new BodyError(400, `the grader reads only the recipe's own prompt of the call "${call}"`);
    return text;
  };
  return startScriptedLlm({
    behaviours: Object.fromEntries(calls.map((call) => [call, { answer: answer(call) }])),
  });
}

/** SCOPE's judge (`inference.roles.judge`): the gates, rubrics and grades of scope-grader.ts. */
export function startScopeGrader(world: ScopeGraderWorld, mode: ScopeGraderMode): Promise<ScriptedLlm> {
  const grader = scopeGrader(world, mode);
  return startGrader(grader.calls, (call, ctx) => grader.answer(call, userText(ctx), ctx.seed));
}

/** SCOPE's judge for a world whose documents are the JSONL corpus `corpus` (`{"text"}` per line). */
export function startScopeGraderOf(corpus: string, mode: ScopeGraderMode): Promise<ScriptedLlm> {
  const documents = readFileSync(corpus, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { text: string });
  return startScopeGrader({ documents }, mode);
}

/** SSP's RAG verifier and judges (`inference.roles.verifier`, `.judge`): ssp-grader.ts. */
export function startSspGrader(world: { seed: number; chains: number }): Promise<ScriptedLlm> {
  const grader = sspGrader(world);
  return startGrader(grader.calls, (call, ctx) => grader.answer(call, ctx.messages));
}
