import { z } from 'zod';

/** The `spell` section of a run config (to be filled in with the recipe). */
export const spellParams = z.strictObject({});

export const SPELL_DEFAULTS = {} as const;

/** Run-config defaults SPELL sets for the shared fields. */
export const spellPreset = {} as const;
