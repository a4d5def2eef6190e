import { z } from 'zod';

/**
 * `{field: column}`: the column of an input file (corpus, benchmark, seed questions, answer set) that holds a
 * field the reader expects, where the file names it otherwise, e.g. a Hugging Face dataset's `content` for a
 * corpus's `text`. Only the fields the input reads may be named (activities/lib/input-records.ts).
 */
export const inputColumns = <const F extends readonly [string, ...string[]]>(fields: F) =>
  z.partialRecord(z.enum(fields), z.string().min(1));
