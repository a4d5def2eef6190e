import type { AnyRecipe } from './types';
import type { RecipeName } from '../../config/schema';
import { spiceRecipe } from './spice';
import { maeRecipe } from './mae';
import { spellRecipe } from './spell';
import { sspRecipe } from './ssp';
import { scopeRecipe } from './scope';

/** Every recipe a worker can run. A new recipe is one folder here plus its preset in config/presets. */
export const RECIPES: Partial<Record<RecipeName, AnyRecipe>> = {
  spice: spiceRecipe,
  mae: maeRecipe,
  spell: spellRecipe,
  ssp: sspRecipe,
  scope: scopeRecipe,
};
