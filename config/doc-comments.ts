import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The doc comments of the run-config schema's fields, by dotted path (`training.loss.clipLow`), read from the
 * TypeScript source so the configuration reference says what the code's comments say. Records' entries are
 * `{name}` and array items `[]` (`inference.roles.{name}.model`), as in the reference.
 */
export function schemaDocComments(files: string[], root: string): Map<string, string> {
  const declarations = new Map<string, ts.Expression>();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    source.forEachChild((statement) => {
      if (!ts.isVariableStatement(statement)) return;
      for (const d of statement.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.initializer) declarations.set(d.name.text, d.initializer);
      }
    });
  }
  const start = declarations.get(root);
  if (!start)
    throw new Error(
      `schemaDocComments: no declaration of ${root} in ${files.map((f) => path.basename(f)).join(', ')}`,
    );
  const comments = new Map<string, string>();
  visit(start, [], declarations, comments, new Set());
  return comments;
}

function visit(
  node: ts.Expression,
  at: string[],
  declarations: Map<string, ts.Expression>,
  comments: Map<string, string>,
  seen: Set<ts.Expression>,
): void {
  if (ts.isIdentifier(node)) {
    const declared = declarations.get(node.text);
    if (declared && !seen.has(declared))
      visit(declared, at, declarations, comments, new Set([...seen, declared]));
    return;
  }
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) return;
  const [first, second] = node.arguments;
  switch (node.expression.name.text) {
    case 'object':
    case 'strictObject':
      if (first && ts.isObjectLiteralExpression(first)) {
        for (const property of first.properties) {
          if (!ts.isPropertyAssignment(property) || !ts.isIdentifier(property.name)) continue;
          const field = [...at, property.name.text];
          const comment = docComment(property);
          if (comment) comments.set(field.join('.'), comment);
          visit(property.initializer, field, declarations, comments, seen);
        }
      }
      return;
    case 'record':
      if (second) visit(second, [...at, '{name}'], declarations, comments, seen);
      return;
    case 'array':
      if (first) visit(first, [...at, '[]'], declarations, comments, seen);
      return;
    case 'union':
      if (first && ts.isArrayLiteralExpression(first)) {
        for (const member of first.elements) visit(member, at, declarations, comments, seen);
      }
      return;
    default:
      // A refinement of a schema (.optional(), .max(…), .refine(…)): the schema is what it refines.
      visit(node.expression.expression, at, declarations, comments, seen);
  }
}

function docComment(node: ts.Node): string | undefined {
  const texts = ts
    .getJSDocCommentsAndTags(node)
    .filter(ts.isJSDoc)
    .map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '');
  const text = texts.join(' ').replace(/\s+/g, ' ').trim();
  return text || undefined;
}
