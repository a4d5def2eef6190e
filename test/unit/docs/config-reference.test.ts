import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REFERENCE_FILE, renderConfigReference } from '../../../config/reference';

const ROOT = path.resolve(__dirname, '../../..');

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` generates from the schema and presets (run it after changing them)', () => {
    const generated = renderConfigReference(ROOT);
    expect(readFileSync(path.join(ROOT, REFERENCE_FILE), 'utf8')).toBe(generated);
  });

  it('has a row for every field of the schema, with its type and default', () => {
    const generated = renderConfigReference(ROOT);
    expect(generated).toMatch(
      /\| `groupSize` +\| integer ≥ 2, ≤ 256 +\| spice, spell, scope: `8`; mae, ssp: `5` +\|/,
    );
    expect(generated).toMatch(/\| `loss\.clipHigh` +\|/);
    expect(generated).toMatch(/\| `roles\.\{name\}\.model` +\|/);
    expect(generated).toMatch(/## `scope`/);
  });
});
