import type { CallBehaviour } from './behaviour';

/** What the scripted model writes for SPELL's calls (to be filled in with the recipe). */
export const SPELL_BEHAVIOURS: Readonly<Record<string, CallBehaviour>> = {};
