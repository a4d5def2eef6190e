import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseCommandLine } from '../../../cli/command-line';
import { COMMANDS } from '../../../cli/commands';
import { indexCommand } from '../../../cli/index-command';
import { forgetCorpora } from '../../../activities/corpus/corpus';
import { SEARCH_DOCS, writeJsonl } from '../../support/search-corpus';

/** `selfplay index ARGV`, parsed by the CLI's command line. */
const run = async (...argv: string[]): Promise<void> =>
  indexCommand(parseCommandLine(COMMANDS, ['index', ...argv]).flags);

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
  await expect(run('build', '--corpus', 'c.jsonl')).rejects.toThrow(
    'index build needs --out DIR_OR_S3\n\nselfplay index build --corpus URI --out DIR_OR_S3',
  );
  await expect(run('rebuild', '--corpus', 'c.jsonl', '--out', dir)).rejects.toThrow(
    'index has no command "rebuild": one of build',
  );
  await expect(run('build', '--corpus', 'c.jsonl', '--out', dir, '--kind', 'faiss')).rejects.toThrow(
    '--kind: expected one of bm25, dense, got faiss',
  );
  await expect(run('build', '--corpus', 'c.jsonl', '--out', dir, '--kind', 'dense')).rejects.toThrow(
    '--kind dense needs --embedding-url',
  );
  expect(await readdir(dir)).toEqual([]);
});
