import { z } from 'zod';

/** The `mae` section of a run config (to be filled in with the recipe). */
export const maeParams = z.strictObject({});

export const MAE_DEFAULTS = {} as const;

/** Run-config defaults MAE sets for the shared fields. */
export const maePreset = {} as const;
