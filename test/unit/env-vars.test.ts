import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CREDENTIAL_ENV } from '../../config/credentials';
import { ENV_VARS } from '../../config/env-vars';

/**
 * config/env-vars.ts lists every variable the product reads: each `SELFPLAY_*` name in its sources (the
 * TypeScript, the kernel's Python, the scripts, the chart and the compose file; not the tests or the docs) is
 * listed, or is a credential of the pattern the list gives, and each listed name is read somewhere.
 */

const ROOT = path.resolve(__dirname, '../..');
const SKIPPED = new Set([
  'node_modules',
  '.tools',
  '.selfplay',
  '.venv',
  '.git',
  'coverage',
  'docs',
  '__pycache__',
]);
const SOURCE = /\.(ts|py|sh|ya?ml|tpl|toml|json)$/;
const LIST = path.join(ROOT, 'config/env-vars.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (SKIPPED.has(entry.name) || full === path.join(ROOT, 'test')) return [];
    if (entry.isDirectory()) return sourceFiles(full);
    return SOURCE.test(entry.name) && entry.name !== 'package-lock.json' ? [full] : [];
  });
}

const namesIn = (text: string, pattern: RegExp): Set<string> => new Set(text.match(pattern) ?? []);

describe('the list of environment variables', () => {
  const files = sourceFiles(ROOT).filter((f) => f !== LIST);
  const text = files.map((f) => readFileSync(f, 'utf8')).join('\n');
  const listed = new Set(ENV_VARS.map((v) => v.name));

  it('lists every SELFPLAY_* variable the sources name', () => {
    expect(files.length).toBeGreaterThan(100);
    const unlisted = [...namesIn(text, /\bSELFPLAY_[A-Z0-9_]+\b/g)].filter(
      (name) => !listed.has(name) && !CREDENTIAL_ENV.test(name),
    );
    expect(unlisted).toEqual([]);
  });

  it('lists nothing that no source reads', () => {
    const read = namesIn(text, /\b[A-Z][A-Z0-9_]+\b/g);
    const stale = [...listed].filter((name) => !name.includes('<') && !read.has(name));
    expect(stale).toEqual([]);
  });

  it('says what each means, once', () => {
    expect(listed.size).toBe(ENV_VARS.length);
    for (const v of ENV_VARS) expect(v.meaning.length).toBeGreaterThan(10);
  });
});
