import path from 'node:path';
import { importGraph, typeScriptFiles, type ImportGraph } from '../../infra/lint/import-graph';

/**
 * No two files of the project import each other, directly or around a longer loop: a cycle means neither
 * file can be understood (or moved) without the other, and it hides which of them is the lower layer.
 * Type-only imports count too. The folders' layering itself is kept by infra/lint/layers.ts.
 */

const ROOT = path.resolve(__dirname, '../..');

/** Each file's imports of project files, type-only ones included. */
const fileGraph = (graph: ImportGraph): Map<string, string[]> =>
  new Map([...graph].map(([file, edges]) => [file, edges.flatMap((e) => e.file ?? [])]));

/** The graph's strongly connected components of more than one file (Tarjan), plus files importing themselves. */
function importCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

describe('import graph', () => {
  it('finds a cycle where there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(importCycles(graph)).toEqual([['a', 'b', 'c']]);
  });

  it('has no cycle among the project files', () => {
    const files = typeScriptFiles(ROOT);
    expect(files.length).toBeGreaterThan(100);
    const cycles = importCycles(fileGraph(importGraph(files))).map((c) =>
      c.map((f) => path.relative(ROOT, f)),
    );
    expect(cycles).toEqual([]);
  });
});
