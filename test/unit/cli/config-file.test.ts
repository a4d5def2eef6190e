import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readConfigFile, startConfig } from '../../../cli/config-file';

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
