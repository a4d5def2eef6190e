import { BENCHMARK_FORMATS, type BenchmarkFormat, type BenchmarkSpec } from '../../config/evaluation';
import { extractLastBoxed } from '../scoring/boxed';
import type { AnswerKind } from '../scoring/verifiers';
import { isPermanentReadFailure, NON_RETRYABLE, nonRetryable } from '../lib/errors';
import { jsonlRecords, readInputRecords, type InputRecord, type Row } from '../lib/input-records';
import { seededRng } from '../lib/rng';
import { answerKindOf } from './scoring';

/**
 * Benchmark files, one JSON object per line or one Parquet row per item, in the formats of the public math benchmarks and the project's
 * own simple one (docs/evaluation.md):
 *
 *   gsm8k    question, answer                           gold: after the last `#### ` of answer
 *   math500  question, answer                           gold: the last \boxed{} of answer, else after `The answer is: `
 *   aime     id, problem (or question), solution, answer gold: answer
 *   amc      id, problem (or question), answer, url     gold: answer (a number)
 *   minerva  problem, solution, idx, type               gold: the last \boxed{} of solution
 *   simple   question, answer[, id, kind]               gold: answer
 *
 * A file's format is the one named, else the one its first record's fields show; every record must then fit it.
 */

export interface BenchmarkItem {
  /** The item's place among the file's items, from 0: the storage key of its verdicts. */
  index: number;
  /** The record's id (`id`, `idx`), else its line (or row) number. */
  id: string;
  question: string;
  /** The gold answer as extracted. */
  answer: string;
  /** The simple format's `kind` when given, else inferred from the gold answer. */
  kind: AnswerKind;
}

export interface Benchmark {
  format: BenchmarkFormat;
  items: BenchmarkItem[];
}

const KINDS: readonly AnswerKind[] = ['mcq', 'integer', 'expression', 'string'];
/** Problems named in one error, at most; a broken multi-megabyte file must not make a multi-megabyte message. */
const MAX_PROBLEMS = 10;

type Parsed = { id?: string; question: string; answer: string; kind?: AnswerKind } | { problem: string };

/** The format a line's fields show, or undefined when they fit none. */
export function detectFormat(row: Row): BenchmarkFormat | undefined {
  const has = (field: string): boolean => row[field] !== undefined;
  if (has('problem') && has('solution') && !has('answer')) return 'minerva';
  if (has('answer') && (has('problem') || has('url'))) return has('solution') ? 'aime' : 'amc';
  if (!has('question') || !has('answer')) return undefined;
  if (typeof row.answer === 'string' && /####/.test(row.answer)) return 'gsm8k';
  if (typeof row.answer === 'string' && /\\boxed|The answer is: /.test(row.answer)) return 'math500';
  return 'simple';
}

/** Reads a benchmark held as JSONL text; see `benchmarkOf`. */
export const parseBenchmark = (text: string, format?: BenchmarkFormat): Benchmark =>
  benchmarkOf(jsonlRecords(text), format);

/** A benchmark from its file's records; every bad record is named (the first MAX_PROBLEMS of them). */
export function benchmarkOf(records: Iterable<InputRecord>, format?: BenchmarkFormat): Benchmark {
  let chosen = format;
  const items: BenchmarkItem[] = [];
  const problems: string[] = [];
  for (const record of records) {
    const { at } = record;
    if (!('row' in record)) {
      problems.push(`${at}: ${record.problem}`);
      continue;
    }
    const { row } = record;
    chosen ??= detectFormat(row);
    if (chosen === undefined) {
      problems.push(
        `${at}: the fields ${Object.keys(row).join(', ') || '(none)'} fit no benchmark format; ` +
          `name the format (${BENCHMARK_FORMATS.join(', ')}), map the columns, or see docs/evaluation.md`,
      );
      continue;
    }
    const parsed = PARSERS[chosen](row);
    if ('problem' in parsed) problems.push(`${at}: ${parsed.problem} (format ${chosen})`);
    else
      items.push({
        index: items.length,
        id: parsed.id ?? String(record.n),
        question: parsed.question,
        answer: parsed.answer,
        kind: parsed.kind ?? answerKindOf(parsed.answer),
      });
  }
  if (problems.length > 0) {
    const more = problems.length - MAX_PROBLEMS;
    throw new Error(problems.slice(0, MAX_PROBLEMS).join('; ') + (more > 0 ? `; and ${more} more` : ''));
  }
  if (items.length === 0 || chosen === undefined) throw new Error('no evaluation items');
  return { format: chosen, items };
}

/** The items a spec asks for: all, the first `limit`, or with `subsetSeed` a seeded random `limit` (in file order). */
export function selectItems(
  items: readonly BenchmarkItem[],
  spec: Pick<BenchmarkSpec, 'limit' | 'subsetSeed'>,
): BenchmarkItem[] {
  if (spec.limit === undefined) return [...items];
  if (spec.subsetSeed === undefined) return items.slice(0, spec.limit);
  return seededRng('benchmark-subset', spec.subsetSeed)
    .sample(items, spec.limit)
    .sort((a, b) => a.index - b.index);
}

/**
 * A benchmark file (JSONL, `.gz`, `.zst` or Parquet; `columns` maps its fields to the file's column names) from
 * a path, file:// or s3://, parsed. A missing or unreadable file (not gzip, not Parquet, a mapped column
 * missing) or a bad record is a non-retryable error starting with `label` (e.g. `benchmark "gsm8k"
 * (s3://b/gsm8k.jsonl)`) and naming the records; other read failures are retried.
 */
export async function loadBenchmark(
  uri: string,
  format: BenchmarkFormat | undefined,
  label: string,
  columns: BenchmarkSpec['columns'] = {},
): Promise<Benchmark> {
  const records: InputRecord[] = [];
  try {
    for await (const record of readInputRecords(uri, { columns, columnsAt: 'columns' })) records.push(record);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (isPermanentReadFailure(err)) throw nonRetryable(NON_RETRYABLE.invalidInput, `${label}: ${message}`);
    throw new Error(`${label}: ${message}`, { cause: err });
  }
  try {
    return benchmarkOf(records, format);
  } catch (err) {
    throw nonRetryable(
      NON_RETRYABLE.invalidInput,
      `${label}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

const PARSERS: Record<BenchmarkFormat, (row: Row) => Parsed> = {
  gsm8k(row) {
    const question = text(row, 'question');
    if (typeof question !== 'string') return question;
    if (typeof row.answer !== 'string') return { problem: '"answer" must be a string' };
    const match = /####\s*(.+?)\s*$/.exec(row.answer);
    if (!match?.[1]) return { problem: '"answer" has no "#### " final answer' };
    return { question, answer: withoutThousandsSeparators(match[1]) };
  },
  math500(row) {
    const question = text(row, 'question');
    if (typeof question !== 'string') return question;
    if (typeof row.answer !== 'string') return { problem: '"answer" must be a string' };
    const answer = extractLastBoxed(row.answer) ?? /The answer is: (.+?)\s*$/.exec(row.answer)?.[1];
    if (!answer) return { problem: '"answer" has neither a \\boxed{} answer nor "The answer is: "' };
    return { question, answer };
  },
  aime: problemAndAnswer,
  amc: problemAndAnswer,
  minerva(row) {
    const question = text(row, 'problem');
    if (typeof question !== 'string') return question;
    if (typeof row.solution !== 'string') return { problem: '"solution" must be a string' };
    const answer = extractLastBoxed(row.solution);
    if (!answer) return { problem: '"solution" has no \\boxed{} answer' };
    return { ...idOf(row.idx), question, answer };
  },
  simple(row) {
    const question = text(row, 'question');
    if (typeof question !== 'string') return question;
    const { answer, kind } = row;
    if (typeof answer !== 'string' && typeof answer !== 'number')
      return { problem: '"answer" must be a string or a number' };
    if (kind !== undefined && !KINDS.includes(kind as AnswerKind))
      return { problem: `"kind" must be one of ${KINDS.join(', ')}` };
    return {
      ...idOf(row.id),
      question,
      answer: String(answer),
      ...(kind === undefined ? {} : { kind: kind as AnswerKind }),
    };
  },
};

/** AIME and AMC (the Qwen2.5-Math evaluation suite): the statement in `problem` (or `question`), the gold in `answer`. */
function problemAndAnswer(row: Row): Parsed {
  const question = text(row, row.problem !== undefined ? 'problem' : 'question');
  if (typeof question !== 'string') return question;
  const { answer } = row;
  if (!((typeof answer === 'string' && answer.trim() !== '') || typeof answer === 'number'))
    return { problem: '"answer" must be a non-empty string or a number' };
  return { ...idOf(row.id), question, answer: String(answer).trim() };
}

function text(row: Row, field: string): string | { problem: string } {
  const value = row[field];
  return typeof value === 'string' && value.trim() !== ''
    ? value
    : { problem: `"${field}" must be a non-empty string` };
}

const idOf = (value: unknown): { id?: string } =>
  typeof value === 'string' || typeof value === 'number' ? { id: String(value) } : {};

/** GSM8K writes large answers as `1,450,000`. */
const withoutThousandsSeparators = (answer: string): string =>
  /^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(answer) ? answer.replace(/,/g, '') : answer;
