/**
 * Stage-2 task selection (scope.md §1 stage 2, §2 Filter): a task trains the Solver iff it passed the gates
 * and min ≤ ḡ ≤ max ([0.2, 0.8] keeps μ(1−μ) ≥ 0.16, so the GRPO std does not vanish), at most one task per
 * document. Among a document's eligible tasks the one nearest ḡ = 0.5 is kept (the paper does not say which;
 * the most informative one), ties to the lower index, so the choice is deterministic.
 *
 * Under the paper's schedule a Solver step selects among fresh candidates by ḡ of N_filter rollouts and trains
 * on G others (schedule.ts); under `joint`, the G rollouts that estimate ḡ for the Challenger's reward also
 * select the task and train the Solver.
 */
/** ḡ is a mean of fractions: 0.8 may arrive as 0.7999…, and must still count as inside the band (and tie). */
const EPSILON = 1e-9;

export function selectTask(
  meanScores: ReadonlyArray<number | undefined>,
  band: { min: number; max: number },
): number | undefined {
  let best: number | undefined;
  meanScores.forEach((g, i) => {
    if (g === undefined || g < band.min - EPSILON || g > band.max + EPSILON) return;
    const current = best === undefined ? undefined : meanScores[best];
    if (current === undefined || Math.abs(g - 0.5) < Math.abs(current - 0.5) - EPSILON) best = i;
  });
  return best;
}
