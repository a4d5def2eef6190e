import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readConfigFile, startConfig, startRunId } from '../../../cli/config-file';
import { resolveRunConfig, type RunConfig } from '../../../config/schema';
import { resolveStartConfig } from '../../../config/temporal-limits';

describe('selfplay start config', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'config-file-'));
  const file = (name: string, text: string): string => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };

  test('YAML and JSON files read to the same config', () => {
    const yaml = file(
      'run.yaml',
      'recipe: spell\niterations: 4\ncorpus:\n  uri: s3://b/c.jsonl\nspell:\n  useVerifier: no\n',
    );
    const json = file(
      'run.json',
      '{"recipe":"spell","iterations":4,"corpus":{"uri":"s3://b/c.jsonl"},"spell":{"useVerifier":"no"}}',
    );
    // YAML 1.2: `no` is the string "no", not false.
    expect(readConfigFile(yaml)).toEqual(readConfigFile(json));
    expect(readConfigFile(file('run.yml', 'recipe: mae\n'))).toEqual({ recipe: 'mae' });
  });

  test('the file, then --recipe, then each --set', () => {
    const yaml = file(
      'base.yaml',
      'recipe: spell\nbatchSize: 16\ntraining:\n  optimizer:\n    learningRate: 1.0e-6\n',
    );
    expect(
      startConfig({
        file: yaml,
        recipe: 'spice',
        sets: ['batchSize=32', 'training.optimizer.learningRate=2e-6'],
      }),
    ).toEqual({ recipe: 'spice', batchSize: 32, training: { optimizer: { learningRate: 2e-6 } } });
    expect(startConfig({ recipe: 'mae' })).toEqual({ recipe: 'mae' });
  });

  test("rounds that could outgrow an iteration's Temporal history are refused before the run starts", () => {
    // What `selfplay start --recipe spell --set ...` checks before it starts the workflow.
    const config = startConfig({ recipe: 'spell', sets: ['batchSize=2048', 'spell.maxRounds=100'] });
    expect(resolveStartConfig(config)).toMatchObject({
      ok: false,
      problems: [
        expect.stringMatching(
          /^spell\.maxRounds: 100 rounds × \(64 shards × 24 \+ 6\) \+ 63 = 154,263 events .* at most 16,/,
        ),
      ],
    });
  });

  test('bad files say what is wrong and what to do', () => {
    expect(() => readConfigFile(path.join(dir, 'missing.yaml'))).toThrow(
      'cannot read it (ENOENT); check the path',
    );
    expect(() => readConfigFile(file('run.toml', 'recipe = "spice"'))).toThrow(
      'unknown format ".toml"; use a .json, .yaml, .yml file',
    );
    expect(() => readConfigFile(file('bad.json', '{"recipe": spice}'))).toThrow(
      /invalid JSON: .*write the config as YAML/,
    );
    expect(() => readConfigFile(file('bad.yaml', 'recipe: spice\nrecipe: mae\n'))).toThrow(
      /invalid YAML: .*unique.*line 2/s,
    );
    expect(() => readConfigFile(file('list.yaml', '- recipe: spice\n'))).toThrow(
      'expected a mapping at the top level, such as "recipe: spice"; got a list',
    );
    expect(() => readConfigFile(file('empty.yaml', ''))).toThrow('got null');
  });
});

describe('selfplay start run id', () => {
  const config = (extra: Record<string, unknown> = {}): RunConfig => {
    const r = resolveRunConfig({ recipe: 'spice', ...extra });
    if (!r.ok) throw new Error(r.problems.join('; '));
    return r.config;
  };
  const now = new Date('2025-01-02T03:04:05.678Z');

  test('--id, else the config runId, else the recipe and the time', () => {
    expect(startRunId(config(), 'spice-1', now)).toBe('spice-1');
    expect(startRunId(config({ runId: 'from-config' }), undefined, now)).toBe('from-config');
    expect(startRunId(config(), undefined, now)).toBe('spice-2025-01-02T03-04-05-678Z');
  });

  test('an --id that no run can have is refused before anything starts, with the rule', () => {
    // Before: "a b" started a run that retried its first activity forever, and "a/b" nested under run "a".
    for (const id of ['a b', 'a/b']) {
      expect(() => startRunId(config(), id, now)).toThrow(
        `--id: run id ${JSON.stringify(id)} is not valid: a run id takes letters, digits, ".", "_" or "-", ` +
          "starting with a letter or digit (max 128), as it names the run's storage prefix runs/{runId}/",
      );
    }
    expect(() => startRunId(config({ runId: 'other' }), 'mine', now)).toThrow(
      '--id: runId: "other" is not this run\'s workflow id "mine"',
    );
  });
});
