import { applySet } from '../../../cli/args';

describe('selfplay flags', () => {
  test('--set writes nested keys with JSON values, plain strings kept as strings', () => {
    const config: Record<string, unknown> = { training: { optimizer: { learningRate: 1 } } };
    for (const s of [
      'iterations=3',
      'training.optimizer.learningRate=5e-7',
      'spice.useTypes=false',
      'corpus.uri=s3://bucket/c.jsonl',
      'mae.trainRoles={"judge":false}',
      'runId="0123"',
      'tags=[1,"a"]',
    ])
      applySet(config, s);
    expect(config).toEqual({
      iterations: 3,
      training: { optimizer: { learningRate: 5e-7 } },
      spice: { useTypes: false },
      corpus: { uri: 's3://bucket/c.jsonl' },
      mae: { trainRoles: { judge: false } },
      runId: '0123',
      tags: [1, 'a'],
    });
  });

  test('--set errors name the problem and the fix', () => {
    const config: Record<string, unknown> = { corpus: { uri: 'x' } };
    expect(() => applySet(config, 'iterations')).toThrow('expected key=value, e.g. --set iterations=3');
    expect(() => applySet(config, 'training..lr=1')).toThrow('empty key in "training..lr"');
    expect(() => applySet(config, 'corpus.uri.path=1')).toThrow(
      `corpus.uri is "x", not an object; set corpus.uri itself, or replace it with --set 'corpus.uri={...}'`,
    );
    expect(() => applySet(config, 'iterations=')).toThrow('empty value');
    expect(() => applySet(config, 'corpus={"uri": s3}')).toThrow('looks like JSON but does not parse');
    expect(config).toEqual({ corpus: { uri: 'x' } });
  });
});
