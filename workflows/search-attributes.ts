import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes the run keeps current, so the Web UI's list can filter and show them. */
export const RECIPE = defineSearchAttributeKey('SelfPlayRecipe', SearchAttributeType.KEYWORD);
export const ITERATION = defineSearchAttributeKey('SelfPlayIteration', SearchAttributeType.INT);
export const RUN_STATE = defineSearchAttributeKey('SelfPlayState', SearchAttributeType.KEYWORD);
export const MEAN_REWARD = defineSearchAttributeKey('SelfPlayMeanReward', SearchAttributeType.DOUBLE);
export const VALID_TASK_RATE = defineSearchAttributeKey('SelfPlayValidTaskRate', SearchAttributeType.DOUBLE);

export const ALL_SEARCH_ATTRIBUTES = [RECIPE, ITERATION, RUN_STATE, MEAN_REWARD, VALID_TASK_RATE];
