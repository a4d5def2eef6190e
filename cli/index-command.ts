import { configuredApiKey, loadWorkerEnv } from '../config/env';
import { buildIndex } from '../activities/retrieval/build';
import { DEFAULT_EMBEDDING_MODEL } from '../activities/retrieval/embeddings';

export const INDEX_USAGE = `  index build --corpus URI --out DIR_OR_S3 [--kind bm25|dense] [--embedding-url URL] [--embedding-model NAME]
                    [--embedding-api-key-env SELFPLAY_..._TOKEN]
                    build a search index from a JSONL corpus into a directory or s3://bucket/prefix (manifest
                    last; a complete index there is kept as is); dense embeds through an OpenAI-compatible server,
                    e.g. the kernel's 'embed' command (--embedding-url http://127.0.0.1:8100/v1), with the key in the
                    variable --embedding-api-key-env names (the kernel's: SELFPLAY_KERNEL_TOKEN)`;

/**
 * `selfplay index build`: builds in this process (no Temporal needed) with the same code as the `buildIndex`
 * activity, and prints what it did. Throws an Error with a message for the user on bad flags or a failed build.
 */
export async function indexCommand(positionals: string[], flags: Map<string, string[]>): Promise<void> {
  const one = (flag: string): string | undefined => flags.get(flag)?.[0];
  const corpus = one('--corpus');
  const out = one('--out');
  const kind = one('--kind') ?? 'bm25';
  if (positionals[0] !== 'build' || !corpus || !out) {
    throw new Error(`expected:\n${INDEX_USAGE}`);
  }
  if (kind !== 'bm25' && kind !== 'dense') throw new Error(`--kind: expected bm25 or dense, got ${kind}`);
  const embeddingUrl = one('--embedding-url');
  if (kind === 'dense' && !embeddingUrl) throw new Error('--kind dense needs --embedding-url');
  const started = Date.now();
  let lastShown = 0;
  const { uri, built, manifest } = await buildIndex({
    corpus,
    out,
    kind,
    ...(embeddingUrl
      ? {
          embedding: {
            baseUrl: embeddingUrl,
            model: one('--embedding-model') ?? DEFAULT_EMBEDDING_MODEL,
            apiKey: configuredApiKey(
              loadWorkerEnv(),
              { baseUrl: embeddingUrl, apiKeyEnv: one('--embedding-api-key-env') },
              `embedding server ${embeddingUrl}`,
            ),
          },
        }
      : {}),
    onProgress: (done, total) => {
      if (Date.now() - lastShown < 5_000) return;
      lastShown = Date.now();
      console.log(`embedded ${done}/${total} passages`);
    },
  });
  const skipped = Object.entries(manifest.skipped)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${n} ${reason}`);
  console.log(
    built
      ? `built ${manifest.kind} index ${uri}: ${manifest.documents} documents, ${manifest.passages} passages` +
          `${skipped.length > 0 ? `, skipped ${skipped.join(', ')}` : ''} (${((Date.now() - started) / 1000).toFixed(1)} s)`
      : `${uri} already holds a complete ${manifest.kind} index of ${manifest.corpus} (${manifest.passages} passages); nothing to do`,
  );
}
