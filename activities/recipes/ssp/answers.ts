import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { readObjectAtUri } from '../../clients/storage';
import { inputReadFailure, NON_RETRYABLE, nonRetryable } from '../../lib/errors';
import type { SspAnswer } from './records';

/**
 * The answer set D (ssp.md §1.1): JSONL, one record per line. The answer is `answer` (or the released
 * data's `ground_truth`), a string or a number; `search_turns` is n; `examples` (or `sys_question_example`)
 * are example questions, a list or one string. Other fields are ignored; blank lines are skipped. A
 * malformed line is a configuration error that names the file and the line.
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

export function parseAnswers(body: string, uri: string, defaultSearchTurns: number): SspAnswer[] {
  const bad = (line: number, why: string) =>
    nonRetryable(NON_RETRYABLE.invalidConfig, `ssp.answers ${uri} line ${line}: ${why}`);
  return body.split('\n').flatMap((raw, i): SspAnswer[] => {
    if (raw.trim() === '') return [];
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw bad(i + 1, 'not JSON');
    }
    const parsed = record.safeParse(value);
    if (!parsed.success) throw bad(i + 1, parsed.error.issues[0]?.message ?? 'invalid record');
    const answer = (parsed.data.answer ?? parsed.data.ground_truth ?? '').trim();
    if (answer === '') throw bad(i + 1, 'expected {"answer": "<non-empty text>", ...}');
    return [
      {
        answer,
        searchTurns: parsed.data.search_turns ?? defaultSearchTurns,
        examples: examplesOf(parsed.data.examples ?? parsed.data.sys_question_example),
      },
    ];
  });
}

/** Reads and parses D from a local path or s3:// (gzip when the name ends in `.gz`). */
export async function loadAnswers(uri: string, defaultSearchTurns: number): Promise<SspAnswer[]> {
  let text: string;
  try {
    const body = await readObjectAtUri(uri);
    text = (uri.endsWith('.gz') ? gunzipSync(body) : body).toString('utf8');
  } catch (err) {
    throw inputReadFailure('ssp.answers', uri, err);
  }
  const answers = parseAnswers(text, uri, defaultSearchTurns);
  if (answers.length === 0) throw nonRetryable(NON_RETRYABLE.invalidConfig, `ssp.answers ${uri}: no answers`);
  return answers;
}
