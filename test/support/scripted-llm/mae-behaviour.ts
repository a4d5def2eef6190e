import type { CallBehaviour } from './behaviour';

/** What the scripted model writes for MAE's calls (to be filled in with the recipe). */
export const MAE_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {};
