import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { LocalStore, type ObjectStore } from '../../../activities/clients/storage';
import {
  adapterFor,
  SnapshotCache,
  type HttpPolicy,
  type SnapshotRef,
  type WeightSyncAdapter,
} from '../../../activities/clients/weight-sync';

/** For the weight-sync tests: snapshot directories as the kernel publishes them, and a fast HTTP policy. */

export const LORA_FILES: Record<string, string> = {
  'adapter_config.json': JSON.stringify({
    peft_type: 'LORA',
    r: 16,
    base_model_name_or_path: 'Qwen/Qwen3-4B',
  }),
  'adapter_model.safetensors': 'lora-weights',
};

export const FULL_FILES: Record<string, string> = {
  'config.json': JSON.stringify({ architectures: ['Qwen3ForCausalLM'] }),
  'model-00001-of-00002.safetensors': 'shard-1',
  'model-00002-of-00002.safetensors': 'shard-2',
  'tokenizer/tokenizer.json': '{"version":"1.0"}',
};

/**
 * Writes a snapshot directory; `complete: false` leaves out the COMPLETE marker, like a crashed publish.
 * With `sha256`, the marker names the weights' digest as the kernel's does; without, it names none (a
 * snapshot from before digests).
 */
export async function writeSnapshot(
  dir: string,
  files: Record<string, string>,
  { complete = true, sha256 }: { complete?: boolean; sha256?: string } = {},
): Promise<string> {
  const marker = sha256 === undefined ? 'v1' : JSON.stringify({ policyVersion: 7, sha256 });
  const all = complete ? { ...files, COMPLETE: marker } : files;
  for (const [name, body] of Object.entries(all)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), body);
  }
  return dir;
}

export const tempDir = (prefix: string): Promise<string> => mkdtemp(path.join(os.tmpdir(), prefix));

/** "S3" for the tests: `s3://bucket/prefix` is the directory `{root}/bucket/prefix`. */
export const s3InDirectory =
  (root: string) =>
  (uri: string): ObjectStore =>
    new LocalStore(path.join(root, uri.slice('s3://'.length)));

/** Retries quickly, so the retry tests take milliseconds. */
export const FAST_HTTP: HttpPolicy = {
  readTimeoutMs: 5_000,
  loadTimeoutMs: 5_000,
  retries: 3,
  backoffBaseMs: 1,
};

export const POLICY = 'solver';

/** Two digests of one version's weights: as first published, and published again after a step re-applied. */
export const DIGEST = { first: 'a'.repeat(64), again: 'b'.repeat(64) };

/**
 * What every engine suite sets up per test: a temp dir, the engine's adapter with its own snapshot cache and
 * "S3" root, the fake servers to close afterwards, and snapshots published to a local directory.
 */
export function engineSuite<S extends { close(): Promise<void> }>(
  engine: 'vllm' | 'sglang',
  format: 'lora' | 'full',
) {
  const suite = { dir: '', cacheDir: '', s3Root: '', adapter: undefined as unknown as WeightSyncAdapter };
  let servers: S[] = [];
  beforeEach(async () => {
    suite.dir = await tempDir(`weight-sync-${engine}-`);
    suite.cacheDir = path.join(suite.dir, 'cache');
    suite.s3Root = path.join(suite.dir, 's3');
    const cache = new SnapshotCache({ dir: suite.cacheDir, openStore: s3InDirectory(suite.s3Root) });
    suite.adapter = adapterFor(engine, { http: FAST_HTTP, cache });
  });
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
    jest.restoreAllMocks();
    await rm(suite.dir, { recursive: true, force: true });
  });
  return {
    suite,
    /** Keeps a started server for the cleanup. */
    track: async (started: Promise<S>): Promise<S> => {
      const server = await started;
      servers.push(server);
      return server;
    },
    /** A snapshot of the suite's format published to a local directory. */
    fileSnapshot: async (version: number): Promise<SnapshotRef & { dir: string }> => {
      const files = format === 'lora' ? LORA_FILES : FULL_FILES;
      const snapshotDir = await writeSnapshot(path.join(suite.dir, 'published', `v${version}`), files);
      return { policy: POLICY, version, uri: pathToFileURL(snapshotDir).href, format, dir: snapshotDir };
    },
  };
}
