import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore, type ObjectStore } from '../../../activities/clients/storage';
import type { HttpPolicy } from '../../../activities/clients/weight-sync';

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

/** Writes a snapshot directory; `complete: false` leaves out the COMPLETE marker, like a crashed publish. */
export async function writeSnapshot(
  dir: string,
  files: Record<string, string>,
  { complete = true }: { complete?: boolean } = {},
): Promise<string> {
  const all = complete ? { ...files, COMPLETE: 'v1' } : files;
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
