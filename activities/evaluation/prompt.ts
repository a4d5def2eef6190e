import type { EvalTemplate } from '../../config/evaluation';
import type { RunConfig } from '../../config/schema';
import type { ChatMessage } from '../clients/trainer-contract';
import { reasonerMessages, type PromptTemplate } from '../recipes/spice/prompts';

/**
 * The prompt a benchmark question is asked with. By default (`recipe`) it is the recipe Reasoner's: the
 * question followed by SPICE's Reasoner instruction, with the system message or conversation wrapper of the
 * template the run trains with (`spice.reasonerTemplate`; Qwen's for the other recipes, whose solvers answer
 * with a `\boxed{}` too), so a policy is evaluated in the format it was trained in. `qwen` / `octothinker`
 * pick a Reasoner template outright; `{system?, user}` is a template of one's own, `{question}` filled in.
 */
export function evalMessages(question: string, template: EvalTemplate, config: RunConfig): ChatMessage[] {
  if (typeof template === 'object') {
    const user = template.user.replaceAll('{question}', question);
    return [
      ...(template.system ? [{ role: 'system' as const, content: template.system }] : []),
      { role: 'user', content: user },
    ];
  }
  return reasonerMessages(question, template === 'recipe' ? recipeTemplate(config) : template);
}

/** The Reasoner template the run's recipe trains with. */
function recipeTemplate(config: RunConfig): PromptTemplate {
  // An iteration's config carries only its own recipe's section (workflows/run-params.ts).
  return config.recipe === 'spice' ? (config.spice?.reasonerTemplate ?? 'qwen') : 'qwen';
}
