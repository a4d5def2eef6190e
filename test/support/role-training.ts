import type { RunPoint } from '../../infra/toy-world/learning';

/**
 * Every role `roles(point)` names trained in that iteration: optimizer steps, loss tokens and a gradient norm
 * above 0, from the kernel's per-role metrics in the manifest. A failure names the iteration and the role.
 */
export function expectRolesTrained<P extends RunPoint>(
  points: readonly P[],
  roles: (point: P) => readonly string[],
): void {
  for (const point of points) {
    const { iteration, trained } = point;
    for (const role of roles(point)) {
      const { steps = 0, tokens = 0, gradNorm = 0 } = trained[role] ?? {};
      expect({ iteration, role, trained: Math.min(steps, tokens, gradNorm) > 0 }).toEqual({
        iteration,
        role,
        trained: true,
      });
    }
  }
}
