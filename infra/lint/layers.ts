/**
 * The layering rules, checked through every chain of imports rather than one file's own (ESLint's
 * no-restricted-imports sees only direct imports, so a workflow could reach activity code through config):
 * from workflows/ and contracts/ no runtime import may lead to activity, CLI, worker, test or benchmark code,
 * to Node's modules or to an I/O client; config/ depends on no activity code either. Type-only imports are
 * erased at compile time, so they do not count (workflows import activities' types for proxyActivities).
 *
 *   node --import tsx infra/lint/layers.ts     (exits 1 and prints each chain when a rule is broken)
 */
import path from 'node:path';
import { importGraph, isNodeBuiltin, typeScriptFiles, type ImportGraph } from './import-graph';

export interface LayerRule {
  /** The folder (relative to the root) whose files the rule holds for. */
  layer: string;
  /** Folders its files must not reach. */
  folders: string[];
  /** Packages its files must not reach. */
  packages: (specifier: string) => boolean;
  why: string;
}

const APP_FOLDERS = ['activities', 'cli', 'workers', 'test', 'bench'];
const ioClient = (s: string): boolean => s === 'openai' || s.startsWith('@aws-sdk/');
const nothing = (): boolean => false;

export const LAYER_RULES: LayerRule[] = [
  {
    layer: 'workflows',
    folders: APP_FOLDERS,
    packages: (s) => isNodeBuiltin(s) || ioClient(s),
    why: 'workflows replay deterministically: no activity code, Node APIs or I/O clients',
  },
  {
    layer: 'contracts',
    folders: [...APP_FOLDERS, 'workflows'],
    packages: (s) => isNodeBuiltin(s) || ioClient(s),
    why: 'contracts are shared by workflows, activities and the CLI, so they depend on none of them',
  },
  {
    layer: 'config',
    folders: APP_FOLDERS,
    packages: nothing,
    why: 'config is read by workflows, activities and the CLI alike, so it depends on none of them',
  },
];

export interface LayerViolation {
  rule: LayerRule;
  /** Root-relative files from a file of the layer to the first forbidden file, then the forbidden package. */
  chain: string[];
}

const within = (file: string, folder: string): boolean => file === folder || file.startsWith(`${folder}/`);

/**
 * Each forbidden file or package reachable by runtime imports from a rule's layer, once, with the shortest
 * chain that reaches it (breadth first from all the layer's files at once). `graph` has root-relative paths.
 */
export function layerViolations(graph: ImportGraph, rules: LayerRule[] = LAYER_RULES): LayerViolation[] {
  return rules.flatMap((rule) => {
    const starts = [...graph.keys()].filter((f) => within(f, rule.layer));
    const parent = new Map<string, string | undefined>(starts.map((f) => [f, undefined]));
    const chainTo = (file: string): string[] => {
      const chain: string[] = [];
      for (let at: string | undefined = file; at !== undefined; at = parent.get(at)) chain.unshift(at);
      return chain;
    };
    const violations: LayerViolation[] = [];
    const reported = new Set<string>();
    const queue = [...starts];
    for (let i = 0; i < queue.length; i++) {
      const file = queue[i]!;
      for (const edge of graph.get(file) ?? []) {
        if (edge.typeOnly) continue;
        if (edge.file === undefined) {
          if (rule.packages(edge.specifier) && !reported.has(edge.specifier)) {
            reported.add(edge.specifier);
            violations.push({ rule, chain: [...chainTo(file), edge.specifier] });
          }
        } else if (rule.folders.some((folder) => within(edge.file!, folder))) {
          if (!reported.has(edge.file)) {
            reported.add(edge.file);
            violations.push({ rule, chain: [...chainTo(file), edge.file] });
          }
        } else if (!parent.has(edge.file)) {
          parent.set(edge.file, file);
          queue.push(edge.file);
        }
      }
    }
    return violations;
  });
}

/** The project's graph with root-relative paths. */
export function projectImportGraph(root: string): ImportGraph {
  const relative = (f: string): string => path.relative(root, f).split(path.sep).join('/');
  const graph = importGraph(typeScriptFiles(root));
  return new Map(
    [...graph].map(([file, edges]) => [
      relative(file),
      edges.map((e) => ({ ...e, file: e.file === undefined ? undefined : relative(e.file) })),
    ]),
  );
}

if (require.main === module) {
  const violations = layerViolations(projectImportGraph(path.resolve(__dirname, '../..')));
  for (const { rule, chain } of violations)
    console.error(`${rule.layer}: ${chain.join(' → ')}\n  (${rule.why})`);
  if (violations.length > 0) process.exit(1);
  console.log('layers: every import chain from workflows/, contracts/ and config/ keeps its layer');
}
