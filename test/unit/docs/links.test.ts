import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The README and docs/ stand alone: every relative link resolves to a file of this repository (and a `#anchor`
 * to one of its headings), no link leaves the repository, and the README, the project's front door, repeats no
 * line (a merge that kept both sides of a conflict shows up as repeated lines).
 */

const ROOT = path.resolve(__dirname, '../../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

const DOCUMENTS = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];

const withoutFences = (text: string): string => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** The text outside fenced code blocks and inline code spans, where a link is a link. */
const prose = (text: string): string => withoutFences(text).replace(/`[^`\n]*`/g, '');

/** Inline links and images: `[text](target)` and `![alt](target "title")`. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = (match[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** What is wrong with one link of `file`, or undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return 'points outside the repository';
  const [pathPart = '', anchor] = target.split('#', 2);
  const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
  if (path.relative(ROOT, resolved).startsWith('..')) return 'points outside the repository';
  if (!existsSync(resolved)) return 'does not exist';
  if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) return undefined;
  return anchors(readFileSync(resolved, 'utf8')).has(anchor) ? undefined : `has no heading #${anchor}`;
}

/** Lines that may repeat: blank lines, code fences, table separators and short structural lines (`end`, `}`). */
const mayRepeat = (line: string): boolean =>
  line.trim().length < 10 || /^\s*(```|~~~)/.test(line) || /^\s*\|?[\s:|-]+\|?\s*$/.test(line);

function repeatedLines(text: string): string[] {
  const counted = new Map<string, number>();
  for (const line of text.split('\n').filter((l) => !mayRepeat(l)))
    counted.set(line, (counted.get(line) ?? 0) + 1);
  return [...counted].filter(([, n]) => n > 1).map(([line]) => line);
}

describe('README.md and docs/', () => {
  it('finds the documents', () => {
    expect(DOCUMENTS.length).toBeGreaterThan(10);
  });

  it.each(DOCUMENTS.map((f) => [path.relative(ROOT, f), f]))(
    '%s: every link resolves inside the repository',
    (_, file) => {
      const text = readFileSync(file, 'utf8');
      const broken = linkTargets(text).flatMap((target) => {
        const why = problem(file, target);
        return why ? [`${target} ${why}`] : [];
      });
      expect(broken).toEqual([]);
      expect(text).not.toMatch(/shared\/specs|\.\.\/shared/);
    },
  );

  it('README.md repeats no line', () => {
    expect(repeatedLines(readFileSync(path.join(ROOT, 'README.md'), 'utf8'))).toEqual([]);
  });

  it('the repeat check ignores fences, table rules and short lines, and nothing else', () => {
    const text = [
      'a line merged twice',
      '```',
      'end',
      '```',
      '| --- |',
      'a line merged twice',
      'end',
      '| --- |',
    ];
    expect(repeatedLines(text.join('\n'))).toEqual(['a line merged twice']);
  });

  it('the link checker catches dangling, outside and anchor-less links', () => {
    const readme = path.join(ROOT, 'README.md');
    expect(problem(readme, 'docs/nowhere.md')).toBe('does not exist');
    expect(problem(readme, '../docs/recipes/spice.md')).toBe('points outside the repository');
    expect(problem(readme, 'https://example.com')).toBe('points outside the repository');
    expect(problem(readme, 'docs/architecture.md#no-such-heading')).toBe('has no heading #no-such-heading');
    expect(problem(readme, 'docs/architecture.md#three-planes')).toBeUndefined();
    expect(linkTargets('see `[a](b.md)` and [c](d.md "t")\n```\n[e](f.md)\n```\n')).toEqual(['d.md']);
  });
});
