/**
 * The JSON values of a JSONL text with their 1-based line numbers, blank lines skipped, for parsers that
 * name every bad line: a line that is not JSON is added to `problems` (`line N: not JSON`) and left out.
 */
export function jsonlRows(
  text: string,
  problems: string[],
): Array<{ line: number; row: Record<string, unknown> }> {
  const rows: Array<{ line: number; row: Record<string, unknown> }> = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      rows.push({ line: i + 1, row: (JSON.parse(raw) ?? {}) as Record<string, unknown> });
    } catch {
      problems.push(`line ${i + 1}: not JSON`);
    }
  });
  return rows;
}
