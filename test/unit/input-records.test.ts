import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { LocalStore } from '../../activities/clients/storage';
import { forgetCorpora, loadCorpus } from '../../activities/corpus/corpus';
import { segmentIndexFor } from '../../activities/corpus/segment-index';
import { loadBenchmark } from '../../activities/evaluation/benchmarks';
import { readInputRecords, type InputRecord } from '../../activities/lib/input-records';
import { loadAnswers } from '../../activities/recipes/ssp/answers';
import { currentPools } from '../../activities/recipes/mae/pools';
import { MAE_DEFAULTS } from '../../config/presets/mae';
import { jsonlToParquet, useCheckoutKernel } from '../support/parquet';

/**
 * The one reader of config-named inputs (activities/lib/input-records.ts): JSONL plain, gzip and zstd and
 * Parquet give the same records, columns of other names are mapped, and a file that cannot give a reader its
 * fields is refused naming the file's column.
 */
const SMALL = path.join(__dirname, '../fixtures/corpus/small.jsonl');
const ROWS = [
  { id: 'a', content: 'The first text.', n: 1 },
  { id: 'b', content: 'The second text.', n: 2 },
  { id: 'c', content: 'The third text.', n: 3 },
];
const JSONL = ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n';

let dir: string;
let undoKernel: () => void;
const file = (name: string): string => path.join(dir, name);

beforeAll(async () => {
  undoKernel = useCheckoutKernel();
  dir = await mkdtemp(path.join(os.tmpdir(), 'input-records-'));
  await writeFile(file('rows.jsonl'), JSONL);
  await writeFile(file('rows.jsonl.gz'), gzipSync(JSONL));
  await writeFile(file('rows.jsonl.zst'), zstdCompressSync(Buffer.from(JSONL)));
  await jsonlToParquet(file('rows.jsonl'), file('rows.parquet'), 2);
});
afterAll(async () => {
  undoKernel();
  forgetCorpora();
  await rm(dir, { recursive: true, force: true });
});

async function all(records: AsyncIterable<InputRecord>): Promise<InputRecord[]> {
  const out: InputRecord[] = [];
  for await (const record of records) out.push(record);
  return out;
}

describe('readInputRecords', () => {
  test.each([
    ['rows.jsonl', 'line'],
    ['rows.jsonl.gz', 'line'],
    ['rows.jsonl.zst', 'line'],
    ['rows.parquet', 'row'],
  ])('%s gives every row in order, the mapped column under its field', async (name, unit) => {
    const records = await all(
      readInputRecords(file(name), { columns: { text: 'content' }, required: ['id'], columnsAt: 'c' }),
    );
    expect(records).toEqual(
      ROWS.map(({ content, ...rest }, i) => ({
        n: i + 1,
        at: `${unit} ${i + 1}`,
        row: { ...rest, text: content },
      })),
    );
  });

  test('a Parquet file without a column a reader needs is refused before its first row, naming it', async () => {
    await expect(
      all(readInputRecords(file('rows.parquet'), { required: ['id', 'text'], columnsAt: 'corpus.columns' })),
    ).rejects.toThrow(
      'no column "text"; its columns are "id", "content", "n": set corpus.columns.text to the one that holds text',
    );
    await expect(loadCorpus(file('rows.parquet'), { columns: { text: 'body' } })).rejects.toMatchObject({
      message: expect.stringContaining(
        `cannot load corpus ${file('rows.parquet')}: no column "body" (for "text"); its columns are`,
      ) as unknown,
    });
  });

  test('a JSONL line without a mapped column is a bad record naming the column', async () => {
    await writeFile(file('mixed.jsonl'), '{"id":"a","content":"x"}\n{"id":"b","text":"y"}\n');
    const records = await all(
      readInputRecords(file('mixed.jsonl'), { columns: { text: 'content' }, columnsAt: 'c' }),
    );
    expect(records[1]).toEqual({ n: 2, at: 'line 2', problem: 'no column "content" (for "text")' });
  });

  test('a file that is not Parquet, or not zstd, is refused for good, naming the benchmark', async () => {
    await writeFile(file('misnamed.parquet'), JSONL);
    await expect(loadBenchmark(file('misnamed.parquet'), undefined, 'benchmark "m"')).rejects.toMatchObject({
      nonRetryable: true,
      message: expect.stringMatching(/^benchmark "m": not a Parquet file \(/) as unknown,
    });
    await writeFile(file('plain.jsonl.zst'), JSONL);
    await expect(loadBenchmark(file('plain.jsonl.zst'), undefined, 'benchmark "z"')).rejects.toMatchObject({
      nonRetryable: true,
      message: expect.stringContaining(
        `benchmark "z": ${file('plain.jsonl.zst')} is not valid zstd`,
      ) as unknown,
    });
  });

  test('without a Python to read Parquet, the error says what to set', async () => {
    const saved = process.env.SELFPLAY_PYTHON;
    process.env.SELFPLAY_PYTHON = file('no-such-python');
    try {
      await expect(all(readInputRecords(file('rows.parquet'), { columnsAt: 'c' }))).rejects.toMatchObject({
        name: 'PermanentReadError',
        message: expect.stringContaining('set SELFPLAY_PYTHON to a Python with pyarrow') as unknown,
      });
    } finally {
      if (saved === undefined) delete process.env.SELFPLAY_PYTHON;
      else process.env.SELFPLAY_PYTHON = saved;
    }
  });
});

describe('inputs from Parquet', () => {
  test('a corpus reads the same from Parquet (row group by row group) as from JSONL, and so does its index', async () => {
    await jsonlToParquet(SMALL, file('small.parquet'), 7);
    const options = { maxSegmentChars: 600, maxDocumentChars: 2_000_000 };
    const fromJsonl = await loadCorpus(SMALL, options);
    const fromParquet = await loadCorpus(file('small.parquet'), options);
    expect(fromParquet).toEqual(fromJsonl);
    expect(fromParquet.stats.documents).toBe(40);
    const index = await segmentIndexFor(new LocalStore(file('storage')), file('small.parquet'), options);
    expect(index.manifest.stats).toEqual(fromJsonl.stats);
    expect(await index.read([0, 5])).toEqual([fromJsonl.segments[0], fromJsonl.segments[5]]);
  });

  test('seed questions and answer sets read from Parquet, with their columns mapped', async () => {
    await writeFile(
      file('qa.jsonl'),
      '{"prompt":"What is 2+2?","target":"4"}\n{"prompt":"Why?","target":"so"}\n',
    );
    await jsonlToParquet(file('qa.jsonl'), file('qa.parquet'));
    const pools = await currentPools(
      { ...MAE_DEFAULTS, seedQuestions: file('qa.parquet'), seedColumns: { question: 'prompt' } },
      undefined,
    );
    expect(pools.questions).toEqual(['What is 2+2?', 'Why?']);
    const answers = await loadAnswers({
      answers: file('qa.parquet'),
      answerColumns: { answer: 'target' },
      defaultSearchTurns: 2,
    });
    expect(answers.map((a) => a.answer)).toEqual(['4', 'so']);
    await expect(
      loadAnswers({ answers: file('qa.parquet'), answerColumns: { answer: 'gold' }, defaultSearchTurns: 2 }),
    ).rejects.toMatchObject({
      nonRetryable: true,
      message: expect.stringContaining(
        'no column "gold" (for "answer"); its columns are "prompt", "target": set ssp.answerColumns.answer',
      ) as unknown,
    });
  });
});
