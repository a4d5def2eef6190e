import { z } from 'zod';
import type { SspParams } from '../../../config/presets/ssp';
import { inputReadFailure, NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import { readInputRecords, type InputRecord } from '../../lib/input-records';
import type { SspAnswer } from './records';

/**
 * The answer set D (ssp.md §1.1): one record per JSONL line or Parquet row. The answer is `answer` (or the
 * released data's `ground_truth`), a string or a number; `search_turns` is n; `examples` (or
 * `sys_question_example`) are example questions, a list or one string. Other fields are ignored; blank lines
 * are skipped. A malformed record is a configuration error that names the file and the line (or row).
 */

const text = z.union([z.string(), z.number()]).transform(String);
const record = z.looseObject({
  answer: text.optional(),
  ground_truth: text.optional(),
  search_turns: z.number().int().min(1).max(100).optional(),
  examples: z.union([z.array(z.string()), z.string()]).optional(),
  sys_question_example: z.union([z.array(z.string()), z.string()]).optional(),
});

const examplesOf = (v: string[] | string | undefined): string[] =>
  (v === undefined ? [] : typeof v === 'string' ? [v] : v).map((e) => e.trim()).filter((e) => e !== '');

export function parseAnswers(
  records: Iterable<InputRecord>,
  uri: string,
  defaultSearchTurns: number,
): SspAnswer[] {
  const bad = (at: string, why: string) =>
    nonRetryable(NON_RETRYABLE.invalidConfig, `ssp.answers ${uri} ${at}: ${why}`);
  return [...records].flatMap((one): SspAnswer[] => {
    if (!('row' in one)) throw bad(one.at, one.problem);
    const parsed = record.safeParse(one.row);
    if (!parsed.success) throw bad(one.at, parsed.error.issues[0]?.message ?? 'invalid record');
    const answer = (parsed.data.answer ?? parsed.data.ground_truth ?? '').trim();
    if (answer === '') throw bad(one.at, 'expected {"answer": "<non-empty text>", ...}');
    return [
      {
        answer,
        searchTurns: parsed.data.search_turns ?? defaultSearchTurns,
        examples: examplesOf(parsed.data.examples ?? parsed.data.sys_question_example),
      },
    ];
  });
}

/** Reads and parses D (`ssp.answers`, its columns `ssp.answerColumns`) from a local path or s3://. */
export async function loadAnswers(
  params: Pick<SspParams, 'answers' | 'answerColumns' | 'defaultSearchTurns'>,
): Promise<SspAnswer[]> {
  const uri = params.answers;
  const records: InputRecord[] = [];
  try {
    const reading = readInputRecords(uri, { columns: params.answerColumns, columnsAt: 'ssp.answerColumns' });
    for await (const one of reading) records.push(one);
  } catch (err) {
    throw inputReadFailure('ssp.answers', uri, err);
  }
  const answers = parseAnswers(records, uri, params.defaultSearchTurns);
  if (answers.length === 0) throw nonRetryable(NON_RETRYABLE.invalidConfig, `ssp.answers ${uri}: no answers`);
  return answers;
}
