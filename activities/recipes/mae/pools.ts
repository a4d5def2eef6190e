import { parseRecipeState } from '../state';
import { z } from 'zod';
import { inputReadFailure, NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { readInputRecords, type InputRecord } from '../../lib/input-records';
import type { MaeParams } from '../../../config/presets/mae';
import { ZERO_SETTING_SEEDS } from './zero-seeds';
import type { MaeState, QaPair } from './records';

/**
 * The pools D and P (spec mae.md §1, §8) as the recipe state: created from the seed questions on the first
 * iteration, read back from the commit on every later one, and grown by the filter. D never shrinks and
 * holds each question once; P keeps its most recent pairs.
 */

const stateSchema = z.strictObject({
  v: z.literal(1),
  seedCount: z.number().int().min(0),
  questions: z.array(z.string()),
  pairs: z.array(z.strictObject({ question: z.string(), answer: z.string() })),
});

const EMPTY: MaeState = { v: 1, seedCount: 0, questions: [], pairs: [] };

/** The pools an iteration starts from: the committed state, or D0 and an empty P on the first iteration. */
export async function currentPools(params: MaeParams, state: unknown): Promise<MaeState> {
  if (state !== undefined) return parseRecipeState(stateSchema, state, "MAE's pools");
  const seeds = params.seedQuestions
    ? await readQuestionFile('mae.seedQuestions', params.seedQuestions, params.seedColumns)
    : ZERO_SETTING_SEEDS;
  if (seeds.length === 0)
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `mae.seedQuestions ${params.seedQuestions}: no questions`,
    );
  const { state: d0, overCap } = growPools(EMPTY, seeds, [], params);
  if (overCap > 0) {
    throw nonRetryable(
      NON_RETRYABLE.invalidConfig,
      `mae.seedQuestions holds more distinct questions than mae.poolCap (${params.poolCap})`,
    );
  }
  return { ...d0, seedCount: d0.questions.length };
}

/**
 * The questions that never enter D (`mae.excludeQuestions`, e.g. a benchmark's: decontamination), as D
 * compares them; empty without the option.
 */
export async function excludedQuestionKeys(
  params: Pick<MaeParams, 'excludeQuestions'>,
): Promise<Set<string>> {
  if (params.excludeQuestions === undefined) return new Set();
  const questions = await readQuestionFile('mae.excludeQuestions', params.excludeQuestions);
  return new Set(questions.map(questionKey));
}

/** The questions of the file at `uri` (`field` names the option it came from). */
async function readQuestionFile(
  field: string,
  uri: string,
  columns?: MaeParams['seedColumns'],
): Promise<string[]> {
  const records: InputRecord[] = [];
  try {
    const reading = readInputRecords(uri, { columns, required: ['question'], columnsAt: 'mae.seedColumns' });
    for await (const record of reading) records.push(record);
  } catch (err) {
    throw inputReadFailure(field, uri, err);
  }
  return parseSeedQuestions(records, uri, field);
}

/** A question file's records (`field` names the option it came from): one `{"question": "..."}` each (other fields are ignored). */
export function parseSeedQuestions(
  records: Iterable<InputRecord>,
  uri: string,
  field = 'mae.seedQuestions',
): string[] {
  const seed = z.looseObject({ question: z.string().trim().min(1) });
  return [...records].map((record) => {
    const bad = (why: string) =>
      nonRetryable(NON_RETRYABLE.invalidConfig, `${field} ${uri} ${record.at}: ${why}`);
    if (!('row' in record)) throw bad(record.problem);
    const parsed = seed.safeParse(record.row);
    if (!parsed.success) throw bad('expected {"question": "<non-empty text>"}');
    return parsed.data.question;
  });
}

/** D is a set: questions are compared with their whitespace collapsed, and kept as they were written. */
export const questionKey = (q: string): string => q.replace(/\s+/g, ' ').trim();

export interface PoolGrowth {
  state: MaeState;
  /** Questions added to D, already there (or twice in this batch), and turned away because D is full. */
  added: number;
  duplicates: number;
  overCap: number;
  /** Oldest pairs that left P to keep it within its cap. */
  pairsDropped: number;
}

/** D ∪ the batch's accepted questions (in order, once each, up to the cap) and P + the batch's pairs. */
export function growPools(
  pools: MaeState,
  accepted: readonly string[],
  pairs: readonly QaPair[],
  caps: Pick<MaeParams, 'poolCap' | 'pairPoolCap'>,
): PoolGrowth {
  const questions = [...pools.questions];
  const seen = new Set(questions.map(questionKey));
  let duplicates = 0;
  let overCap = 0;
  for (const q of accepted) {
    const key = questionKey(q);
    if (seen.has(key)) duplicates++;
    else if (questions.length >= caps.poolCap) overCap++;
    else {
      seen.add(key);
      questions.push(q);
    }
  }
  const allPairs = [...pools.pairs, ...pairs];
  const pairsDropped = Math.max(0, allPairs.length - caps.pairPoolCap);
  return {
    state: { v: 1, seedCount: pools.seedCount, questions, pairs: allPairs.slice(pairsDropped) },
    added: questions.length - pools.questions.length,
    duplicates,
    overCap,
    pairsDropped,
  };
}
