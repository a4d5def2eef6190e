import type { Trajectory, TrajectoryCheckpoint } from '../tools/types';
import type { RecipeContext } from './types';

/** Where a unit's multi-turn trajectory `name` (e.g. `solver-3`) keeps its finished turns. */
export const trajectoryCheckpoint = (ctx: RecipeContext, unit: number, name: string): TrajectoryCheckpoint =>
  ctx.unitPart<Trajectory>(unit, `traj-${name}`);
