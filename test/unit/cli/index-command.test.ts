import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseFlags } from '../../../cli/args';
import { indexCommand } from '../../../cli/index-command';
import { forgetCorpora } from '../../../activities/corpus/corpus';
import { SEARCH_DOCS, writeJsonl } from '../../support/search-corpus';

const run = (...argv: string[]): Promise<void> => {
  const { positionals, flags } = parseFlags(argv);
  return indexCommand(positionals, flags);
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'index-cli-'));
});
afterEach(async () => {
  forgetCorpora();
  jest.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

test('index build writes a local index and says what it built', async () => {
  const corpus = await writeJsonl(path.join(dir, 'c.jsonl'), SEARCH_DOCS);
  const out = path.join(dir, 'idx');
  const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
  await run('build', '--corpus', corpus, '--out', out, '--kind', 'bm25');
  expect(log).toHaveBeenCalledWith(
    expect.stringMatching(/^built bm25 index file:\/\/.*idx: 10 documents, 10 passages \(/),
  );
  expect((await readdir(out)).sort()).toEqual(['bm25.json.gz', 'manifest.json', 'passages.jsonl.gz']);
});

test('refuses missing or bad flags before reading anything', async () => {
  await expect(run('build', '--corpus', 'c.jsonl')).rejects.toThrow('index build --corpus URI --out');
  await expect(run('rebuild', '--corpus', 'c.jsonl', '--out', dir)).rejects.toThrow('expected:');
  await expect(run('build', '--corpus', 'c.jsonl', '--out', dir, '--kind', 'faiss')).rejects.toThrow(
    '--kind: expected bm25 or dense, got faiss',
  );
  await expect(run('build', '--corpus', 'c.jsonl', '--out', dir, '--kind', 'dense')).rejects.toThrow(
    '--kind dense needs --embedding-url',
  );
  expect(await readdir(dir)).toEqual([]);
});
