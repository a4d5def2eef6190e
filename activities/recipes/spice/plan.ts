import type { PlanContext, PlanDocument } from '../types';
import { sampleIndices } from '../../corpus/sample';
import { seededRng } from '../../lib/rng';

/** Algorithm 1, step 1: B document segments sampled uniformly, seeded by (seed, iteration). */
export async function planSpice(ctx: PlanContext): Promise<Array<Omit<PlanDocument, 'unit' | 'docIndex'>>> {
  const source = await ctx.segments();
  const positions = sampleIndices(
    source.count,
    ctx.config.batchSize,
    seededRng(ctx.config.seed, ctx.iteration, 'plan'),
  );
  return (await source.read(positions)).map((s) => ({
    segmentId: s.id,
    docId: s.docId,
    text: s.text,
  }));
}
