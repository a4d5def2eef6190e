import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { seededRng } from '../activities/lib/rng';
import { jsonlToParquet } from '../test/support/parquet';
import { watchTreeMemory } from './tree-memory';

/**
 * Plan time and peak memory on a large corpus. Generates a JSONL corpus of BENCH_CORPUS_GB GiB (default 2) under
 * .selfplay/bench/ (kept, so a rerun skips the minute it takes; BENCH_CORPUS_GZIP=1 for .jsonl.gz;
 * BENCH_CORPUS_FORMAT=parquet converts it to Parquet, row groups of BENCH_CORPUS_ROW_GROUP rows, default
 * 10,000), then runs the real plan activity (SPICE, B = BENCH_CORPUS_B, default 1024) twice, each in a fresh
 * process: the first builds the corpus's segment index (a cold start: the one full read of the corpus), the second
 * finds it and reads only the B segments it samples. Prints both plans' time, peak RSS (the plan's process, and
 * with its children: the Python reading Parquet) and heartbeats; last line `corpus_plan_peak_rss_mb <n>`, the
 * second plan's peak RSS.
 */
export async function main(): Promise<void> {
  const gib = Number(process.env.BENCH_CORPUS_GB ?? 2);
  const gzip = process.env.BENCH_CORPUS_GZIP === '1';
  const parquet = process.env.BENCH_CORPUS_FORMAT === 'parquet';
  if (parquet && gzip)
    throw new Error('BENCH_CORPUS_FORMAT=parquet converts the plain JSONL: unset BENCH_CORPUS_GZIP');
  const dir = path.resolve('.selfplay/bench');
  const jsonl = path.join(dir, `corpus-${gib}g.jsonl${gzip ? '.gz' : ''}`);
  const corpus = parquet ? path.join(dir, `corpus-${gib}g.parquet`) : jsonl;
  const storage = path.join(dir, `storage-${gib}g${gzip ? '-gz' : ''}${parquet ? '-parquet' : ''}`);
  await mkdir(dir, { recursive: true });
  let size = await ensureCorpus(jsonl, gib * 2 ** 30, gzip);
  if (parquet)
    size = await ensureParquet(jsonl, corpus, Number(process.env.BENCH_CORPUS_ROW_GROUP ?? 10_000));
  // A fresh index every run, so the first plan always measures a build.
  await rm(storage, { recursive: true, force: true });

  const build = await planInChild(corpus, storage, 1);
  const plan = await planInChild(corpus, storage, 2);
  const mb = (n: number): string => n.toFixed(0);
  console.log(`corpus ${corpus}: ${(size / 2 ** 30).toFixed(2)} GiB, ${build.segments} segments`);
  console.log(
    `plan 1 (builds the index): ${build.seconds.toFixed(1)} s, peak RSS ${mb(build.peakRssMb)} MB ` +
      `(with children ${mb(build.treePeakRssMb)} MB), ${build.heartbeats} heartbeats, ${build.planned} units`,
  );
  console.log(
    `plan 2 (index stored):     ${plan.seconds.toFixed(2)} s, peak RSS ${mb(plan.peakRssMb)} MB ` +
      `(with children ${mb(plan.treePeakRssMb)} MB), ${plan.heartbeats} heartbeats, ${plan.planned} units`,
  );
  console.log(`corpus_plan_peak_rss_mb ${mb(plan.peakRssMb)}`);
}

interface PlanFigures {
  seconds: number;
  peakRssMb: number;
  /** The plan's process and its children's high-water marks, summed (tree-memory.ts). */
  treePeakRssMb: number;
  heartbeats: number;
  planned: number;
  segments: number;
}

async function planInChild(corpus: string, storage: string, iteration: number): Promise<PlanFigures> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'corpus-plan.ts'), corpus, storage, String(iteration)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const memory = watchTreeMemory(child.pid as number);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  const treePeakRssMb = await memory.stop();
  if (code !== 0) throw new Error(`plan ${iteration} exited with ${code}: ${out}`);
  const figures = JSON.parse(out.trim().split('\n').at(-1) as string) as Omit<PlanFigures, 'treePeakRssMb'>;
  return { ...figures, treePeakRssMb: Math.max(treePeakRssMb, figures.peakRssMb) };
}

/** The JSONL corpus as Parquet (kept beside it, like the corpus). */
async function ensureParquet(jsonl: string, parquet: string, rowGroupRows: number): Promise<number> {
  const existing = await stat(parquet).catch(() => undefined);
  if (existing) {
    console.log(`corpus: reusing ${parquet}`);
    return existing.size;
  }
  const t0 = performance.now();
  await jsonlToParquet(jsonl, `${parquet}.tmp`, rowGroupRows);
  await rename(`${parquet}.tmp`, parquet);
  console.log(`corpus: converted to ${parquet} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return (await stat(parquet)).size;
}

/**
 * Documents of 200 to 60,000 characters (a few over the 24,000-character segment limit, so they split) from
 * seeded sentences, each with a unique tag so none is a duplicate, written until `bytes` are reached.
 */
async function ensureCorpus(file: string, bytes: number, gzip: boolean): Promise<number> {
  const existing = await stat(file).catch(() => undefined);
  if (existing) {
    console.log(`corpus: reusing ${file}`);
    return existing.size;
  }
  const rng = seededRng('bench-corpus');
  const words = Array.from({ length: 5000 }, (_, i) => `w${(i * 7919).toString(36)}`);
  const sentences = Array.from({ length: 20_000 }, () => {
    const n = 6 + rng.int(18);
    const s = Array.from({ length: n }, () => words[Math.floor(words.length * rng.next() ** 2)]).join(' ');
    return `${s.charAt(0).toUpperCase()}${s.slice(1)}.`;
  });
  const t0 = performance.now();
  const temp = `${file}.tmp`;
  const sink = createWriteStream(temp);
  const zip = gzip ? (await import('node:zlib')).createGzip({ level: 1 }) : undefined;
  if (zip) zip.pipe(sink);
  const out = zip ?? sink;
  let written = 0;
  for (let d = 0; written < bytes; d++) {
    const target = rng.next() < 0.05 ? 24_000 + rng.int(36_000) : 200 + rng.int(12_000);
    const parts: string[] = [`Document ${d}.`];
    for (let len = 0; len < target;) {
      const sentence = sentences[rng.int(sentences.length)] as string;
      parts.push(sentence);
      len += sentence.length + 1;
      if (rng.next() < 0.1) parts.push('\n\n');
    }
    const line = `${JSON.stringify({ id: `doc-${d}`, title: `Document ${d}`, text: parts.join(' ') })}\n`;
    written += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(sink, 'close');
  await rename(temp, file);
  console.log(
    `corpus: generated ${file} (${(written / 2 ** 30).toFixed(2)} GiB of JSONL) in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  return (await stat(file)).size;
}
