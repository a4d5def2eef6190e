import type { Passage } from './types';

/**
 * What the environment writes into a trajectory after a search turn. Every observation is one
 * `\n<information>\n…</information>\n\n` block (SSP's released code, Search-R1's document format), so the
 * model sees one kind of environment text and the trainer masks exactly these blocks.
 */

const block = (body: string): string => `\n<information>\n${body}</information>\n\n`;

/** `Doc 1 (Title: "X") text`, one line per passage in rank order. */
export function resultsObservation(passages: readonly Passage[]): string {
  if (passages.length === 0) return block('No results found.\n');
  const lines = passages.map((p, i) => {
    const title = p.title === undefined ? '' : ` (Title: "${p.title}")`;
    return `Doc ${i + 1}${title} ${p.text}\n`;
  });
  return block(lines.join(''));
}

/** The answer to an unreadable call: what was wrong and how a call looks, so the model can try again. */
export const errorObservation = (problem: string, example: string): string =>
  block(`Invalid search: ${problem}. Write a search as ${example}.\n`);

/** The environment's notice in place of results (SCOPE: "searches complete" after the allowed searches). */
export const noticeObservation = (notice: string): string => block(`${notice}\n`);
