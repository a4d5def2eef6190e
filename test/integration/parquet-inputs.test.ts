import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeObjectAtUri } from '../../activities/clients/storage';
import { forgetCorpora, loadCorpus } from '../../activities/corpus/corpus';
import { loadBenchmark } from '../../activities/evaluation/benchmarks';
import { jsonlToParquet, useCheckoutKernel } from '../support/parquet';

/**
 * Parquet inputs on S3 (the test's MinIO), as a Hugging Face dataset mirrored to a bucket: read through the
 * one input reader, which copies the object to the temporary directory for pyarrow and removes the copy.
 */
const SMALL = path.join(__dirname, '../fixtures/corpus/small.jsonl');
const GSM8K = path.join(__dirname, '../fixtures/benchmarks/gsm8k-sample.jsonl');
const bucket = (): string => process.env.SELFPLAY_TEST_BUCKET as string;

let dir: string;
let undoKernel: () => void;
beforeAll(async () => {
  undoKernel = useCheckoutKernel();
  dir = await mkdtemp(path.join(os.tmpdir(), 'parquet-s3-'));
});
afterAll(async () => {
  undoKernel();
  forgetCorpora();
  await rm(dir, { recursive: true, force: true });
});

const copies = async (): Promise<string[]> =>
  (await readdir(os.tmpdir())).filter((name) => name.startsWith('selfplay-input-'));

test('a corpus and a benchmark read from s3:// Parquet as from local JSONL; the local copy is removed', async () => {
  const before = await copies();
  for (const [jsonl, name] of [
    [SMALL, 'corpus'],
    [GSM8K, 'gsm8k'],
  ] as const) {
    await jsonlToParquet(jsonl, path.join(dir, `${name}.parquet`), 8);
    await writeObjectAtUri(
      `s3://${bucket()}/hf/${name}/train-00000-of-00001.parquet`,
      await readFile(path.join(dir, `${name}.parquet`)),
    );
  }
  const corpus = await loadCorpus(`s3://${bucket()}/hf/corpus/train-00000-of-00001.parquet`);
  expect(corpus).toEqual(await loadCorpus(SMALL));
  expect(corpus.stats.documents).toBe(40);
  const benchmark = await loadBenchmark(
    `s3://${bucket()}/hf/gsm8k/train-00000-of-00001.parquet`,
    undefined,
    'gsm8k',
  );
  expect(benchmark).toEqual(await loadBenchmark(GSM8K, undefined, 'gsm8k'));
  expect(await copies()).toEqual(before);

  await expect(
    loadBenchmark(`s3://${bucket()}/hf/missing.parquet`, undefined, 'benchmark "m"'),
  ).rejects.toMatchObject({
    nonRetryable: true,
    message: expect.stringContaining(
      `benchmark "m": no object at s3://${bucket()}/hf/missing.parquet`,
    ) as unknown,
  });
});
