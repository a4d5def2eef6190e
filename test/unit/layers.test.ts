import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { importGraph, type ImportGraph } from '../../infra/lint/import-graph';
import { layerViolations, projectImportGraph } from '../../infra/lint/layers';

const ROOT = path.resolve(__dirname, '../..');

const edge = (file: string, typeOnly = false) => ({ file, specifier: file, typeOnly });
const pkg = (specifier: string) => ({ specifier, typeOnly: false });

describe('layering through chains of imports', () => {
  const graph: ImportGraph = new Map([
    ['workflows/run.ts', [edge('config/policies.ts'), edge('activities/index.ts', true)]],
    ['config/policies.ts', [edge('activities/lib/errors.ts')]],
    ['activities/lib/errors.ts', [pkg('node:fs')]],
    ['activities/index.ts', []],
    ['contracts/messages.ts', [edge('config/schema.ts')]],
    ['config/schema.ts', [pkg('node:path'), pkg('zod')]],
  ]);

  it('finds activity code a workflow reaches through config, with the chain that reaches it', () => {
    const found = layerViolations(graph).map((v) => `${v.rule.layer}: ${v.chain.join(' > ')}`);
    expect(found).toEqual([
      'workflows: workflows/run.ts > config/policies.ts > activities/lib/errors.ts',
      'contracts: contracts/messages.ts > config/schema.ts > node:path',
      'config: config/policies.ts > activities/lib/errors.ts',
    ]);
  });

  it('lets a workflow import activity types (erased at compile time)', () => {
    const typesOnly: ImportGraph = new Map([['workflows/run.ts', [edge('activities/index.ts', true)]]]);
    expect(layerViolations(typesOnly)).toEqual([]);
  });

  it('holds for the project', () => {
    const project = projectImportGraph(ROOT);
    expect(project.get('workflows/selfPlayRun.ts')?.length).toBeGreaterThan(3);
    expect(layerViolations(project).map((v) => v.chain.join(' → '))).toEqual([]);
  });
});

describe('the import graph', () => {
  it('tells imports erased at compile time from those that run', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'import-graph-'));
    for (const name of ['a', 'b', 'c', 'd', 'e']) writeFileSync(path.join(dir, `${name}.ts`), '');
    const file = path.join(dir, 'main.ts');
    writeFileSync(
      file,
      [
        "import type { A } from './a';",
        "import { type B } from './b';",
        "import { type C, c } from './c';",
        "export { d } from './d';",
        "const e = () => import('./e');",
        "import fs from 'node:fs';",
      ].join('\n'),
    );
    const edges = importGraph([file]).get(file)!;
    expect(edges.map((e) => [e.specifier, e.typeOnly, e.file && path.basename(e.file)])).toEqual([
      ['./a', true, 'a.ts'],
      ['./b', true, 'b.ts'],
      ['./c', false, 'c.ts'],
      ['./d', false, 'd.ts'],
      ['./e', false, 'e.ts'],
      ['node:fs', false, undefined],
    ]);
  });
});
