/**
 * SSP preset (shared/specs/ssp.md). Placeholder section: the recipe's parameters are added with the recipe.
 */
import { z } from 'zod';

/** The `ssp` section of a run config. */
export const sspParams = z.strictObject({});

export const SSP_DEFAULTS = {} satisfies z.input<typeof sspParams>;

export const sspPreset = {} as const;
