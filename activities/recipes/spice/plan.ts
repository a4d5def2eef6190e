import type { PlanContext, PlanDocument } from '../types';
import { sampleSegments } from '../../corpus/sample';
import { seededRng } from '../../lib/rng';

/** Algorithm 1, step 1: B document segments sampled uniformly, seeded by (seed, iteration). */
export async function planSpice(ctx: PlanContext): Promise<Array<Omit<PlanDocument, 'unit' | 'docIndex'>>> {
  const { segments } = await ctx.corpus();
  return sampleSegments(
    segments,
    ctx.config.batchSize,
    seededRng(ctx.config.seed, ctx.iteration, 'plan'),
  ).map((s) => ({
    segmentId: s.id,
    docId: s.docId,
    text: s.text,
  }));
}
