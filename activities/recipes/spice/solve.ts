import type { RecipeContext } from '../types';
import { SPICE_CALLS } from '../../clients/llm-protocol';
import { seedOf } from '../../lib/rng';
import { sampledList } from '../../clients/sampled-tokens';
import { reasonerMessages } from './prompts';
import { REASONER, type SpiceGated, type SpiceSolved } from './records';

/** Step 2d: G Reasoner answers for every valid task, from the question alone (information asymmetry). */
export async function solveSpice(ctx: RecipeContext, gated: SpiceGated): Promise<SpiceSolved> {
  const { config, iteration } = ctx;
  const llm = ctx.llm(REASONER);
  const answers = await Promise.all(
    gated.verdicts.flatMap((verdict, trajectory) => {
      if (!verdict.valid) return [];
      const messages = reasonerMessages(verdict.task.question, config.spice.reasonerTemplate);
      return [
        llm
          .chat({
            role: REASONER,
            call: SPICE_CALLS.reason,
            messages,
            n: config.groupSize,
            seed: seedOf(config.seed, iteration, 'solve', gated.docIndex, trajectory),
            temperature: config.sampling.temperature,
            topP: config.sampling.topP,
            maxTokens: config.sampling.maxTokens,
            signal: ctx.signal,
          })
          .then((samples) => ({
            trajectory,
            messages,
            completions: samples.map((s) => s.content),
            ...sampledList(samples),
          })),
      ];
    }),
  );
  return { unit: gated.unit, docIndex: gated.docIndex, answers };
}
