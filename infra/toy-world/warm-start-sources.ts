import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The kernel's modules a warm start runs: `warm_start.py` and every module of the package it imports, directly
 * or through another (`from .encoding import Trajectory`), in a stable order. A world's cache hash covers all
 * of them, so a change to the training code a warm start uses (its loss, its encoding, the model it builds)
 * trains the model anew, while a change elsewhere in the kernel (its HTTP routes) keeps the cached one.
 */
export function warmStartSources(packageDir: string, entry = 'warm_start'): string[] {
  const seen = new Set<string>();
  const visit = (module: string): void => {
    const file = path.join(packageDir, `${module}.py`);
    if (seen.has(file) || !existsSync(file)) return;
    seen.add(file);
    for (const imported of relativeImports(readFileSync(file, 'utf8'))) visit(imported);
  };
  visit(entry);
  return [...seen].sort();
}

/** The package modules a Python source imports relatively: `from .x import …` and `from . import x, y`. */
export function relativeImports(source: string): string[] {
  const modules = [...source.matchAll(/^\s*from \.(\w+)(?:\.\w+)* import /gm)].map((m) => m[1]!);
  for (const m of source.matchAll(/^\s*from \. import \(?([\w\s,]+)\)?/gm))
    modules.push(
      ...m[1]!
        .split(',')
        .map((name) => name.trim().split(/\s+/)[0]!)
        .filter(Boolean),
    );
  return modules;
}
