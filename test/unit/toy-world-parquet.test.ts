import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore, shardKey } from '../../activities/clients/storage';
import { getJsonl } from '../../activities/clients/storage/codec';
import { InferencePool } from '../../activities/clients/inference';
import { forgetCorpora } from '../../activities/corpus/corpus';
import { loadBenchmark } from '../../activities/evaluation/benchmarks';
import { RECIPES } from '../../activities/recipes';
import { planActivities, type PlanInput } from '../../activities/stages/plan';
import { loadWorkerEnv } from '../../config/env';
import { resolveRunConfig } from '../../config/schema';
import type { PlanResult } from '../../contracts/selfplay';
import { toyWorldRunConfig } from '../../infra/toy-world/run-config';
import { corpus, heldOut } from '../../infra/toy-world/world';
import { jsonlToParquet, useCheckoutKernel } from '../support/parquet';

/**
 * The toy world's corpus and held-out set as Parquet (as a Hugging Face dataset would hold them), through the
 * readers a run uses: the plan activity (which builds the corpus's segment index) plans the same tasks from
 * them as from the JSONL files, and the held-out set gives the same items.
 */
let dir: string;
let undoKernel: () => void;
const world = { jsonl: { corpus: '', heldOut: '' }, parquet: { corpus: '', heldOut: '' } };

beforeAll(async () => {
  undoKernel = useCheckoutKernel();
  dir = await mkdtemp(path.join(os.tmpdir(), 'toy-world-parquet-'));
  const write = async (name: string, rows: readonly unknown[]): Promise<[string, string]> => {
    const jsonl = path.join(dir, `${name}.jsonl`);
    await writeFile(jsonl, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const parquet = path.join(dir, `${name}.parquet`);
    await jsonlToParquet(jsonl, parquet, 100);
    return [jsonl, parquet];
  };
  [world.jsonl.corpus, world.parquet.corpus] = await write('corpus', corpus(0, 400));
  [world.jsonl.heldOut, world.parquet.heldOut] = await write('heldout', heldOut(0, 320));
});
afterAll(async () => {
  undoKernel();
  forgetCorpora();
  await rm(dir, { recursive: true, force: true });
});

async function plan(files: { corpus: string; heldOut: string }, storage: string) {
  const resolved = resolveRunConfig(toyWorldRunConfig(files));
  if (!resolved.ok) throw new Error(resolved.problems.join('; '));
  const store = new LocalStore(path.join(dir, storage));
  const activities = planActivities({
    store,
    env: loadWorkerEnv({ SELFPLAY_INPUT_ROOTS: dir }),
    inference: new InferencePool(),
    recipes: RECIPES,
  });
  const input: PlanInput = { runId: 'toy', iteration: 1, config: resolved.config, versions: { policy: 0 } };
  const result: PlanResult = await new MockActivityEnvironment().run(
    (i: PlanInput) => activities.plan(i),
    input,
  );
  const shards = await Promise.all(
    result.shards.map(({ shard }) => getJsonl(store, shardKey('toy', 1, 'plan', shard))),
  );
  return { corpus: result.corpus, shards };
}

test("the toy world's corpus plans the same tasks from Parquet as from JSONL", async () => {
  const fromJsonl = await plan(world.jsonl, 'jsonl');
  const fromParquet = await plan(world.parquet, 'parquet');
  expect(fromParquet).toEqual(fromJsonl);
  // One segment per distinct document: 297 of the 400 are distinct (the world's carry facts are few enough that
  // documents repeat), so an index that skipped a reader's rows would fall below it.
  expect(fromParquet.corpus.segments).toBe(new Set(corpus(0, 400).map((d) => d.text)).size);
  expect(fromParquet.shards.flat()).toHaveLength(16);
});

test("the toy world's held-out set reads the same from Parquet as from JSONL", async () => {
  const fromJsonl = await loadBenchmark(world.jsonl.heldOut, undefined, 'toy-heldout');
  const fromParquet = await loadBenchmark(world.parquet.heldOut, undefined, 'toy-heldout');
  expect(fromParquet).toEqual(fromJsonl);
  expect(fromParquet.format).toBe('gsm8k');
  expect(fromParquet.items).toHaveLength(320);
});
