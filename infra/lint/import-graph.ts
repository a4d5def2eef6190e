/**
 * The project's import graph, read from the TypeScript sources without compiling them: for each file, what it
 * imports (project files resolved to paths, packages by name) and whether the import is erased at compile time
 * (`import type`, or named imports that are all types), which matters to the layering check: a workflow may
 * import an activity's types for proxyActivities, never its code.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

export interface Import {
  /** The project file imported, or undefined for a package. */
  file?: string;
  /** The specifier as written (`../activities/lib/errors`, `node:fs`, `@aws-sdk/client-s3`). */
  specifier: string;
  /** Erased at compile time: nothing of the imported module runs. */
  typeOnly: boolean;
}

export type ImportGraph = Map<string, Import[]>;

const SKIPPED = new Set(['node_modules', '.tools', '.selfplay', '.venv', '.git', 'coverage']);

export function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The project file a relative specifier names; package imports resolve to none. */
function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  return [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => existsSync(candidate));
}

/** Whether every name an import or export clause binds is a type (TypeScript then elides the statement). */
function bindsTypesOnly(bindings: ts.NamedImports | ts.NamedExports | undefined): boolean {
  return !!bindings && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function importsOf(file: string, source: ts.SourceFile): Import[] {
  const found: Import[] = [];
  const add = (specifier: ts.Expression | undefined, typeOnly: boolean): void => {
    if (specifier && ts.isStringLiteral(specifier))
      found.push({ file: resolveImport(file, specifier.text), specifier: specifier.text, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const typeOnly =
        !!clause &&
        (clause.isTypeOnly ||
          (!clause.name && !!clause.namedBindings && ts.isNamedImports(clause.namedBindings)
            ? bindsTypesOnly(clause.namedBindings)
            : false));
      add(node.moduleSpecifier, typeOnly);
    } else if (ts.isExportDeclaration(node)) {
      const bindings =
        node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause : undefined;
      add(node.moduleSpecifier, node.isTypeOnly || bindsTypesOnly(bindings));
    } else if (ts.isImportTypeNode(node)) {
      if (ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, true);
    } else if (ts.isCallExpression(node)) {
      const dynamic = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const required = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (dynamic || required) add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function importGraph(files: string[]): ImportGraph {
  return new Map(
    files.map((file) => {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      return [file, importsOf(file, source)];
    }),
  );
}

const NODE_BUILTINS = new Set(builtinModules);

/** Whether a package specifier names one of Node's own modules (`fs`, `node:fs`, `fs/promises`). */
export function isNodeBuiltin(specifier: string): boolean {
  const name = specifier.replace(/^node:/, '');
  return specifier.startsWith('node:') || NODE_BUILTINS.has(name) || NODE_BUILTINS.has(name.split('/')[0]!);
}
