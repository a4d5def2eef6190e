/**
 * SCOPE preset (shared/specs/scope.md). Placeholder section: the recipe's parameters are added with the recipe.
 */
import { z } from 'zod';

/** The `scope` section of a run config. */
export const scopeParams = z.strictObject({});

export const SCOPE_DEFAULTS = {} satisfies z.input<typeof scopeParams>;

export const scopePreset = {} as const;
