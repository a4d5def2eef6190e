import { configuredApiKey, loadWorkerEnv } from '../config/env';
import { buildIndex } from '../activities/retrieval/build';
import { DEFAULT_EMBEDDING_MODEL } from '../activities/retrieval/embeddings';

/**
 * `selfplay index build` (flags checked by the command line: cli/commands.ts): builds in this process (no
 * Temporal needed) with the same code as the `buildIndex` activity, and prints what it did. Throws an Error with
 * a message for the user on a failed build.
 */
export async function indexCommand(flags: Map<string, string[]>): Promise<void> {
  const one = (flag: string): string | undefined => flags.get(flag)?.[0];
  const corpus = one('--corpus') as string;
  const out = one('--out') as string;
  const kind = one('--kind') === 'dense' ? 'dense' : 'bm25';
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
