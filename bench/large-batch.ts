import { mkdtemp, rm } from 'node:fs/promises';
import { constants } from 'node:buffer';
import os from 'node:os';
import path from 'node:path';
import { jsonlLines } from '../activities/clients/storage/codec';
import { iterationPrefix } from '../activities/clients/storage/keys';
import { seededRng } from '../activities/lib/rng';
import { writeJsonl } from '../test/support/search-corpus';
import { printStages, runOneIteration } from './iteration';

/**
 * One SPICE iteration at B = 1024, G = 16 on segments of BENCH_SEGMENT_CHARS (default 40,000) characters,
 * against the scripted server (capacity BENCH_CAPACITY, default 512, no latency) and the recording trainer,
 * which reads the batch back and checks every row. Every Challenger row carries its document, so the batch's
 * JSON is longer than the longest string V8 allows: it is written and read row by row. Prints the batch's
 * rows and sizes, the time and the process's peak RSS; last line `large_batch_json_mb <n>`.
 */
export async function main(): Promise<void> {
  const segmentChars = Number(process.env.BENCH_SEGMENT_CHARS ?? 40_000);
  const capacity = Number(process.env.BENCH_CAPACITY ?? 512);
  const [B, G] = [1024, 16];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-large-batch-'));
  try {
    const corpus = await writeJsonl(path.join(dir, 'long.jsonl'), longDocuments(B + 64, segmentChars));
    const { runId, wallSeconds, llm, trainer, manifest, store } = await runOneIteration({
      capacity,
      latencyMs: 0,
      config: {
        batchSize: B,
        groupSize: G,
        shardSize: 64,
        corpus: { uri: corpus, maxSegmentChars: segmentChars },
        timeouts: { rolloutShardMinutes: 60 },
      },
    });
    const [key] = await store.list(`${iterationPrefix(runId, 1)}/update/batch-`);
    const stream = key ? await store.getStream(key) : undefined;
    if (!key || !stream) throw new Error('the iteration wrote no batch');
    let [rows, jsonBytes, longest] = [0, 0, 0];
    for await (const line of jsonlLines(stream, 'gzip', key)) {
      rows++;
      jsonBytes += Buffer.byteLength(line) + 1;
      longest = Math.max(longest, line.length);
    }
    const stored = (await store.stat(key))?.size ?? 0;
    const step = trainer.steps.at(-1);
    const mb = (n: number): string => (n / 2 ** 20).toFixed(0);
    console.log(
      `B=${B}, G=${G}, segments of ${segmentChars} chars: ${llm.completions} completions in ${wallSeconds.toFixed(1)} s`,
    );
    printStages(manifest);
    console.log(
      `batch: ${rows} rows, ${mb(jsonBytes)} MiB of JSON (${mb(stored)} MiB gzipped), longest row ${longest} chars; ` +
        `V8's longest string: ${constants.MAX_STRING_LENGTH} chars`,
    );
    console.log(
      `trainer: read ${step?.rows ?? 0} rows (${JSON.stringify(step?.roles ?? {})}), ${trainer.appliedSteps} step applied`,
    );
    console.log(
      `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (workers, trainer and LLM server in one process)`,
    );
    if (step?.rows !== rows) throw new Error(`the trainer read ${step?.rows} rows of ${rows}`);
    console.log(`large_batch_json_mb ${mb(jsonBytes)}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Documents of just under `chars` characters of seeded prose, each one segment. */
function longDocuments(count: number, chars: number): Array<{ id: string; title: string; text: string }> {
  const rng = seededRng('bench-large-batch');
  const words = Array.from({ length: 3000 }, (_, i) => `w${(i * 104729).toString(36)}`);
  return Array.from({ length: count }, (_, d) => {
    const sentences: string[] = [`Document ${d} is about the number ${d * 7 + 3}.`];
    let length = sentences[0]!.length;
    while (length < chars - 200) {
      const n = 8 + rng.int(14);
      const s = `${Array.from({ length: n }, () => words[rng.int(words.length)]).join(' ')}.`;
      sentences.push(s);
      length += s.length + 1;
    }
    return { id: `long-${d}`, title: `Long document ${d}`, text: sentences.join(' ') };
  });
}
