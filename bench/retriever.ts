import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildIndex } from '../activities/retrieval/build';
import { DEFAULT_EMBEDDING_MODEL } from '../activities/retrieval/embeddings';
import type { IndexKind } from '../activities/retrieval/manifest';
import { loadRetriever } from '../activities/retrieval/retriever';
import { seededRng, type Rng } from '../activities/lib/rng';
import { startEmbeddingServer, type KernelProcess } from '../test/support/kernel-process';
import { writeJsonl } from '../test/support/search-corpus';

/**
 * Search index build and query figures on a generated corpus: documents of ~300 words drawn Zipf-like from a
 * 20,000-word vocabulary (so term statistics look like text), queries of 3–6 words from a random document.
 * `BENCH_DOCS` (default 5,000) and `BENCH_QUERIES` (default 500) size it; `BENCH_KIND=dense` embeds through
 * the kernel's `embed` process (all-MiniLM-L6-v2 on the CPU, so use a few hundred documents there). Prints
 * build documents/s and passages/s, index load time and query latency p50/p95; last line
 * `retriever_query_p95_ms <n>`.
 */
export async function main(): Promise<void> {
  const docs = Number(process.env.BENCH_DOCS ?? 5000);
  const queries = Number(process.env.BENCH_QUERIES ?? 500);
  const kind = (process.env.BENCH_KIND ?? 'bm25') as IndexKind;
  const rng = seededRng('bench-retriever');
  const vocabulary = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}`);
  const word = (): string => vocabulary[Math.floor(vocabulary.length * rng.next() ** 3)] as string;
  const texts = Array.from({ length: docs }, () => Array.from({ length: 300 }, word).join(' '));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-retriever-'));
  let server: KernelProcess | undefined;
  try {
    const corpus = await writeJsonl(
      path.join(dir, 'corpus.jsonl'),
      texts.map((text, i) => ({ id: `d${i}`, title: `Document ${i}`, text })),
    );
    server = kind === 'dense' ? await startEmbeddingServer() : undefined;
    const embedding = server && {
      baseUrl: `${server.url}/v1`,
      model: DEFAULT_EMBEDDING_MODEL,
      // The server takes the kernel token from this environment when one is set.
      apiKey: process.env.SELFPLAY_KERNEL_TOKEN || 'EMPTY',
    };
    const out = path.join(dir, 'index');
    let started = performance.now();
    const { manifest } = await buildIndex({ corpus, out, kind, ...(embedding ? { embedding } : {}) });
    const buildS = (performance.now() - started) / 1000;
    started = performance.now();
    const retriever = await loadRetriever(out, { apiKey: 'EMPTY' });
    const loadS = (performance.now() - started) / 1000;
    const latencies: number[] = [];
    for (let q = 0; q < queries; q++) {
      const query = queryFrom(rng, texts[rng.int(texts.length)] as string);
      const t = performance.now();
      await retriever.search(query, { topK: 3, maxTokens: 500 });
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    const pct = (p: number): number =>
      latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] as number;
    console.log(
      `${kind}: ${manifest.documents} documents, ${manifest.passages} passages, ${queries} queries`,
    );
    console.log(
      `build ${buildS.toFixed(2)} s: ${(manifest.documents / buildS).toFixed(0)} documents/s, ` +
        `${(manifest.passages / buildS).toFixed(0)} passages/s; load ${loadS.toFixed(2)} s`,
    );
    console.log(`query latency p50 ${pct(0.5).toFixed(2)} ms, p95 ${pct(0.95).toFixed(2)} ms`);
    console.log(`retriever_query_p95_ms ${pct(0.95).toFixed(2)}`);
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function queryFrom(rng: Rng, text: string): string {
  const words = text.split(' ');
  const length = 3 + rng.int(4);
  const start = rng.int(words.length - length);
  return words.slice(start, start + length).join(' ');
}
