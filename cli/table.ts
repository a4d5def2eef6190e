/**
 * A plain-text table with aligned columns: a header row, then one line per row, columns two spaces apart;
 * numeric columns (`right`) align right so digits line up. No trailing spaces, so output diffs cleanly.
 */
export function renderTable(
  header: readonly string[],
  rows: readonly string[][],
  right: readonly number[] = [],
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) =>
        right.includes(c) ? cell.padStart(widths[c] as number) : cell.padEnd(widths[c] as number),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
